"""A small MCP server on stdio, built with the Python MCP SDK (`MCPServer`, the SDK 2 name of
FastMCP), for testing tdsl as an MCP *client* (`mcp:<command line>#<tool>` endpoints).

Run it with the test venv's python (`scripts/python-env` prints its path):

    target/py-venv/bin/python tests/mcp_py/server.py

Its tools:

- `add(a: int, b: int)` -> structured `{"sum": a + b}` (an `outputSchema` is listed).
- `shout(text: str)` -> the text in upper case, as a text block only: no
  `structuredContent`, no `outputSchema`.
- `fail(message: str)` -> always a tool error: `isError: true`, the text is
  `Error executing tool fail: <message>` (the SDK adds the prefix).
- `slow(seconds: float)` -> sleeps, reporting progress (`progress` = seconds slept so far,
  `total` = `seconds`) about every 0.1 s when the caller sent a progress token, then
  `{"slept": seconds}`. Cancelling the request interrupts the sleep.
- `flaky(key: str, failures: int)` -> a tool error (`… flaky: call N of 'key' fails (F will)`)
  for the first `failures` calls with this `key`, then `{"key": key, "calls": N}`: N counts
  every call with this key since the server started, so a caller's retries can be checked.

Bad arguments (a missing one, a string for `a`) are tool errors from the SDK's own
validation, with a message naming the argument.
"""

from __future__ import annotations

from typing import TypedDict

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

# INFO would log every tool error on standard error.
server = MCPServer("tdsl-test-server", version="1", log_level="WARNING")


class Sum(TypedDict):
    sum: int


class Slept(TypedDict):
    slept: float


class Flaky(TypedDict):
    key: str
    calls: int


@server.tool()
def add(a: int, b: int) -> Sum:
    """Adds two integers."""
    return {"sum": a + b}


@server.tool(structured_output=False)
def shout(text: str) -> str:
    """Returns the text in upper case."""
    return text.upper()


@server.tool()
def fail(message: str) -> Sum:
    """Always fails, with this message."""
    raise ToolError(message)


@server.tool()
async def slow(seconds: float, ctx: Context) -> Slept:
    """Sleeps this long, reporting progress, then answers."""
    step = 0.1
    slept = 0.0
    while slept < seconds:
        pause = min(step, seconds - slept)
        await anyio.sleep(pause)
        slept += pause
        await ctx.report_progress(slept, seconds, f"slept {slept:.1f} of {seconds} s")
    return {"slept": seconds}


_flaky_calls: dict[str, int] = {}


@server.tool()
def flaky(key: str, failures: int) -> Flaky:
    """Fails the first `failures` calls with this key, then succeeds."""
    calls = _flaky_calls.get(key, 0) + 1
    _flaky_calls[key] = calls
    if calls <= failures:
        raise ToolError(f"flaky: call {calls} of {key!r} fails ({failures} will)")
    return {"key": key, "calls": calls}


if __name__ == "__main__":
    server.run("stdio")
