"""The upstream tasks' MCP server: ordinary pydantic tools over issues and repos, customers
and orders, forecasts, currency rates and e-mail, built with the Python MCP SDK (`MCPServer`,
SDK 2's FastMCP) as tests/mcp_py/shop.py is. Its schemas are what the SDK generates: nested
models as `$ref`s into `$defs`, `Optional` as `anyOf` with `null`, `Enum`/`Literal` as
`enum`, `Field(ge=…, le=…)` as bounds, and a list or a number returned wrapped as
`{"result": …}`. The data is fixed (no randomness), so both ways see the same answers.

    python shop.py [--log FILE]     # serve on stdio; every call appended to FILE as JSON

bench-plans puts it behind tdsl's plan server (`--upstream shop=…`, the plan way) and talks
to it directly through the SDK's client (`client.py`, the direct way).
"""

from __future__ import annotations

import enum
import json
import sys
from typing import Literal, Optional

from pydantic import BaseModel, Field

from mcp.server.mcpserver import MCPServer

server = MCPServer("shop", version="1", log_level="WARNING")

LOG: Optional[str] = None
if "--log" in sys.argv[1:]:
    LOG = sys.argv[sys.argv.index("--log") + 1]


def logged(name: str, **arguments: object) -> None:
    if LOG:
        with open(LOG, "a", encoding="utf-8") as f:
            f.write(json.dumps({"name": name, "arguments": arguments}, default=str) + "\n")


class State(str, enum.Enum):
    """Whether an issue is still open."""

    open = "open"
    closed = "closed"


class User(BaseModel):
    login: str
    name: str


class Label(BaseModel):
    name: str
    color: str


class Repo(BaseModel):
    """A repository of the organisation."""

    name: str = Field(description="The repository's name, as `list_issues` takes it.")
    description: str
    stars: int = Field(ge=0)
    language: str
    archived: bool = False


class Issue(BaseModel):
    number: int
    title: str
    body: str
    state: State
    author: User
    labels: list[Label]
    comments: int = Field(ge=0)
    created_at: str = Field(description="When it was opened, ISO 8601.")
    url: str


class Status(str, enum.Enum):
    """Where an order is."""

    open = "open"
    shipped = "shipped"
    cancelled = "cancelled"


class Customer(BaseModel):
    customer_id: str
    name: str
    email: str
    country: str


class Line(BaseModel):
    sku: str
    quantity: int = Field(ge=1)
    unit_price: float


class Address(BaseModel):
    street: str
    city: str
    postcode: str
    country: str


class Order(BaseModel):
    """An order; its amounts are in its currency."""

    order_id: str = Field(description="The order's id.")
    placed: str = Field(description="The day it was placed, YYYY-MM-DD.")
    ship_to: Address
    lines: list[Line]
    total: float
    currency: Literal["USD", "EUR", "GBP"]
    status: Status
    note: Optional[str] = None


class Forecast(BaseModel):
    day: int = Field(description="0 is today.")
    max_c: float
    min_c: float
    rain_mm: float
    humidity: int = Field(ge=0, le=100)
    wind_kph: float
    summary: str


class Receipt(BaseModel):
    message_id: str
    to: str
    accepted: bool


def mix(*parts: object) -> int:
    """A stable hash (Python's `hash` of a string changes from run to run)."""
    h = 2166136261
    for ch in "|".join(str(p) for p in parts):
        h = ((h ^ ord(ch)) * 16777619) % (1 << 32)
    return h


PEOPLE = [User(login=l, name=n) for l, n in [("ada", "Ada Lovelace"), ("bob", "Bob Kahn"), ("cy", "Cy Young"),
                                           ("dee", "Dee Hock"), ("eve", "Eve Online")]]
LABELS = [Label(name=n, color=c) for n, c in [("bug", "d73a4a"), ("docs", "0075ca"), ("perf", "fbca04"),
                                            ("security", "b60205"), ("good first issue", "7057ff")]]
WORDS = ["parser", "cache", "timeout", "schema", "retry", "plan", "listing", "upstream", "token", "report",
         "crash", "docs", "panic", "leak", "unicode"]
REPOS = {
    "tdsl-org": [
        Repo(name="engine", description="The runtime that runs composite tools.", stars=412, language="Rust"),
        Repo(name="checker", description="Static checks and diagnostics.", stars=158, language="Rust"),
        Repo(name="py-client", description="The Python package.", stars=97, language="Python"),
        Repo(name="editor", description="Editor support: the language server and grammars.", stars=61,
             language="TypeScript"),
        Repo(name="site", description="The documentation site.", stars=23, language="HTML", archived=True),
    ],
}


def issues_of(repo: str) -> list[Issue]:
    out = []
    for n in range(1, 7 + mix(repo) % 7):
        h = mix(repo, n)
        a, b = WORDS[h % len(WORDS)], WORDS[(h >> 5) % len(WORDS)]
        out.append(Issue(
            number=n,
            title=f"{a} {b} in {repo}",
            body=f"When the {a} meets a {b}, {repo} stops with an error. Steps: run the example, then {WORDS[(h >> 7) % len(WORDS)]} it again.",
            created_at=f"2026-{1 + (h >> 3) % 11:02d}-{1 + (h >> 6) % 27:02d}T{(h >> 10) % 24:02d}:{(h >> 14) % 60:02d}:00Z",
            url=f"https://git.example.com/tdsl-org/{repo}/issues/{n}",
            state=State.open if h % 3 else State.closed,
            author=PEOPLE[(h >> 9) % len(PEOPLE)],
            labels=[LABELS[(h >> k) % len(LABELS)] for k in range(11, 11 + (h >> 20) % 3)],
            comments=(h >> 13) % 17,
        ))
    return out


CUSTOMERS = [
    Customer(customer_id=f"c-{i}", name=n, email=f"{n.split()[0].lower()}@example.{tld}", country=c)
    for i, (n, c, tld) in enumerate([("Ana Souza", "BR", "br"), ("Ben Okafor", "NG", "ng"),
                                     ("Chloé Martin", "FR", "fr"), ("Dieter Braun", "DE", "de"),
                                     ("Emma Stone", "GB", "uk"), ("Farah Haddad", "DE", "de"),
                                     ("Goro Tanaka", "JP", "jp"), ("Hana Novak", "DE", "de")], start=1)
]
SKUS = {"pen": 1.5, "ink": 7.0, "pad": 2.0, "lamp": 24.0, "desk": 180.0, "chair": 95.0}
CURRENCY = {"GB": "GBP", "DE": "EUR", "FR": "EUR"}


def orders_of(customer: Customer) -> list[Order]:
    out = []
    for n in range(1, 3 + mix(customer.customer_id) % 4):
        h = mix(customer.customer_id, n)
        lines = []
        for k in range(1 + h % 3):
            sku = list(SKUS)[(h >> (3 * k + 2)) % len(SKUS)]
            lines.append(Line(sku=sku, quantity=1 + (h >> (k + 7)) % 4, unit_price=SKUS[sku]))
        out.append(Order(
            order_id=f"o-{customer.customer_id[2:]}{n:02d}",
            placed=f"2026-{1 + (h >> 12) % 11:02d}-{1 + (h >> 16) % 27:02d}",
            ship_to=Address(street=f"{1 + h % 200} {['Main', 'Station', 'Market', 'Lake'][(h >> 4) % 4]} Street",
                            city=customer.name.split()[1] + "ville", postcode=f"{h % 90000 + 10000}",
                            country=customer.country),
            lines=lines,
            total=round(sum(l.quantity * l.unit_price for l in lines), 2),
            currency=CURRENCY.get(customer.country, "USD"),
            status=[Status.open, Status.shipped, Status.shipped, Status.cancelled][mix(customer.customer_id, n, "status") % 4],
            note="gift" if h % 7 == 0 else None,
        ))
    return out


RATES = {("USD", "EUR"): 0.92, ("USD", "GBP"): 0.79, ("USD", "JPY"): 151.2, ("EUR", "USD"): 1.087,
         ("EUR", "GBP"): 0.858, ("EUR", "JPY"): 164.3, ("GBP", "USD"): 1.266, ("GBP", "EUR"): 1.165,
         ("GBP", "JPY"): 191.4}


@server.tool()
def list_repos(org: str) -> list[Repo]:
    """The repositories of an organisation, most stars first."""
    logged("list_repos", org=org)
    return REPOS.get(org, [])


@server.tool()
def list_issues(
    repo: str,
    state: Optional[State] = None,
    limit: int = Field(30, ge=1, le=100, description="The most issues to return."),
) -> list[Issue]:
    """The issues of a repository, oldest first.

    Give `state` to keep only open or closed ones."""
    logged("list_issues", repo=repo, state=state.value if state else None, limit=limit)
    found = [i for i in issues_of(repo) if state is None or i.state == state]
    return found[:limit]


@server.tool()
def list_customers(country: Optional[str] = Field(None, description="An ISO country code, such as `DE`.")) -> list[Customer]:
    """The shop's customers, by id."""
    logged("list_customers", country=country)
    return [c for c in CUSTOMERS if country is None or c.country == country]


@server.tool()
def list_orders(customer_id: str, status: Optional[Status] = None) -> list[Order]:
    """A customer's orders, oldest first. Give `status` to keep only the orders in that state."""
    logged("list_orders", customer_id=customer_id, status=status.value if status else None)
    for c in CUSTOMERS:
        if c.customer_id == customer_id:
            return [o for o in orders_of(c) if status is None or o.status == status]
    raise ValueError(f"no customer {customer_id}")


@server.tool()
def daily_forecast(city: str, days: int = Field(3, ge=1, le=7)) -> list[Forecast]:
    """The weather forecast of a city, one entry a day from today."""
    logged("daily_forecast", city=city, days=days)
    out = []
    for d in range(days):
        h = mix(city, d)
        low = -2 + h % 15
        out.append(Forecast(day=d, max_c=float(low + 4 + (h >> 4) % 12), min_c=float(low),
                            rain_mm=float((h >> 8) % 9), humidity=30 + (h >> 16) % 60, wind_kph=float((h >> 20) % 40),
                            summary=["sunny", "cloudy", "rain", "wind"][(h >> 12) % 4]))
    return out


@server.tool()
def rate(base: Literal["USD", "EUR", "GBP"], quote: str) -> float:
    """How many units of `quote` one unit of `base` buys."""
    logged("rate", base=base, quote=quote)
    if base == quote:
        return 1.0
    if (base, quote) not in RATES:
        raise ValueError(f"no rate {base}/{quote}")
    return RATES[(base, quote)]


@server.tool()
def send_email(to: str, subject: str, body: str) -> Receipt:
    """Sends an e-mail; the receipt's message id is stable for the same message."""
    logged("send_email", to=to, subject=subject, body=body)
    return Receipt(message_id=f"m-{mix(to, subject, body) % 100000:05d}", to=to, accepted="@" in to)


if __name__ == "__main__":
    server.run()
