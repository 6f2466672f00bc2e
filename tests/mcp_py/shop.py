"""An upstream MCP server of ordinary pydantic tools, built with the Python MCP SDK
(`MCPServer`, the SDK 2 name of FastMCP), whose schemas are what the SDK generates: nested
models as `$ref`s into `$defs`, `Optional` as `anyOf` with `null`, `Enum` and `Literal` as
`enum`/`const`, `Field(ge=…, le=…)` as `minimum`/`maximum`, a recursive model, a model as an
argument (`find_orders`: its `$defs` hold an Enum and a list of models), and a list
or a number returned wrapped as `{"result": …}`.

    target/py-venv/bin/python tests/mcp_py/shop.py          # serve on stdio
    target/py-venv/bin/python tests/mcp_py/shop.py --list   # print tools/list's tools as JSON

tests/mcp_plans.rs puts it behind `tdsl serve --mcp --plans --upstream shop=…`; the schemas it
prints are kept in tests/data/plans/upstream/ (`pydantic_tools.json`), where the data-driven
tests of tests/plans.rs read them.
"""

from __future__ import annotations

import enum
import json
import sys
from typing import Literal, Optional

import anyio
from pydantic import BaseModel, Field

from mcp.server.mcpserver import MCPServer

server = MCPServer("shop", version="1", log_level="WARNING")


class Status(str, enum.Enum):
    """Where an order is."""

    open = "open"
    shipped = "shipped"
    cancelled = "cancelled"


class Customer(BaseModel):
    customer_id: str
    name: str
    email: Optional[str] = None


class Line(BaseModel):
    sku: str
    quantity: int = Field(ge=1)
    price: float


class Order(BaseModel):
    """An order of the shop.

    Orders are never deleted: a cancelled order keeps its lines."""

    order_id: str = Field(description="The order's id, as `get_order` takes it.")
    customer: Customer
    lines: list[Line]
    status: Status
    note: Optional[str] = None


class LineFilter(BaseModel):
    sku: str
    min_quantity: int = Field(1, ge=1)


class OrderQuery(BaseModel):
    """Which orders: all of `lines` must be in an order, and its status, when given."""

    status: Optional[Status] = None
    lines: list[LineFilter]


class Forecast(BaseModel):
    city: str
    day: int
    max_c: float
    min_c: float


class Comment(BaseModel):
    author: str
    text: str
    replies: list[Comment] = []


ORDERS = [
    Order(
        order_id="o-1",
        customer=Customer(customer_id="c-1", name="Ada"),
        lines=[Line(sku="pen", quantity=2, price=1.5)],
        status=Status.open,
    ),
    Order(
        order_id="o-2",
        customer=Customer(customer_id="c-1", name="Ada", email="ada@example.com"),
        lines=[Line(sku="ink", quantity=1, price=7.0), Line(sku="pad", quantity=3, price=2.0)],
        status=Status.shipped,
        note="gift",
    ),
]

CALLS: list[str] = []


@server.tool()
def list_orders(
    customer_id: str,
    status: Optional[Status] = None,
    limit: int = Field(10, ge=1, le=100, description="The most orders to return."),
) -> list[Order]:
    """Lists a customer's orders, newest first.

    Give `status` to keep only the orders in that state."""
    CALLS.append("list_orders")
    found = [o for o in ORDERS if o.customer.customer_id == customer_id and (status is None or o.status == status)]
    return found[:limit]


@server.tool()
def get_order(order_id: str) -> Order:
    """One order by its id."""
    CALLS.append("get_order")
    for o in ORDERS:
        if o.order_id == order_id:
            return o
    raise ValueError(f"no order {order_id}")


@server.tool()
def find_orders(query: OrderQuery) -> list[Order]:
    """The orders a query matches (a model as the argument: `$defs` with an Enum inside)."""
    CALLS.append("find_orders")

    def matches(o: Order) -> bool:
        has = all(any(l.sku == f.sku and l.quantity >= f.min_quantity for l in o.lines) for f in query.lines)
        return has and (query.status is None or o.status == query.status)

    return [o for o in ORDERS if matches(o)]


@server.tool()
def daily_forecast(city: str, days: int = Field(3, ge=1, le=7)) -> list[Forecast]:
    """The forecast of a city, one entry a day."""
    CALLS.append("daily_forecast")
    return [Forecast(city=city, day=d, max_c=20.0 + d, min_c=10.0 + d) for d in range(days)]


@server.tool()
def rate(base: Literal["USD", "EUR", "GBP"], quote: str) -> float:
    """The exchange rate from `base` to `quote`."""
    CALLS.append("rate")
    return 1.25


@server.tool()
def thread(issue: int) -> Comment:
    """The comment thread of an issue (replies nest)."""
    CALLS.append("thread")
    return Comment(author="a", text="first", replies=[Comment(author="b", text="reply")])


@server.tool()
def calls() -> list[str]:
    """The tools called so far, in order (for tests)."""
    return list(CALLS)


async def list_tools() -> None:
    tools = await server.list_tools()
    out = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    if "--list" in sys.argv[1:]:
        anyio.run(list_tools)
    else:
        server.run()
