"""A real MCP client, the Python SDK's (`mcp.client.stdio.stdio_client` and `ClientSession`),
driving an MCP server over stdio, or with `--http` first, over Streamable HTTP
(`mcp.client.streamable_http.streamable_http_client` against `TDSL serve --mcp --listen
127.0.0.1:0 --root ROOT`). tests/mcp_python.rs runs one scenario per test:

    python client.py tools    TDSL ROOT        # list, call, bad arguments (tests/data/mcp)
    python client.py primitive-error TDSL ROOT # a failing primitive's message
    python client.py cancel   TDSL ROOT DIR    # cancel sleeping calls; DIR holds pid files
    python client.py progress TDSL ROOT        # progress notifications of a composite
    python client.py progress-before-result TDSL ROOT   # … all of them before the result
    python client.py logging  TDSL ROOT        # logging/setLevel and step log messages
    python client.py python-server             # the SDK server of tests/mcp_py/server.py
    python client.py --http SCENARIO TDSL ROOT [DIR]   # a tdsl scenario over HTTP

TDSL is the `tdsl` binary, served as `TDSL serve --mcp --root ROOT`. A scenario asserts
what it observes: it exits 0, or prints what went wrong and exits 1.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

HERE = Path(__file__).resolve().parent


class Failed(Exception):
    """A scenario saw something it did not expect."""


def expect(condition: object, what: str) -> None:
    if not condition:
        raise Failed(what)


def text_of(result: CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, TextContent))


# Set by `--http`: scenarios on tdsl talk to `tdsl serve --mcp --listen` instead of stdio.
HTTP = False


async def with_session(
    params: StdioServerParameters, body: Callable[[ClientSession], Awaitable[None]], **options: Any
) -> None:
    if HTTP and params.command != sys.executable:
        async with http_server(params) as url, streamable_http_client(url) as (read, write):
            async with ClientSession(read, write, **options) as session:
                await session.initialize()
                await body(session)
        return
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, **options) as session:
            await session.initialize()
            await body(session)


@contextlib.asynccontextmanager
async def http_server(params: StdioServerParameters) -> AsyncIterator[str]:
    """Starts the stdio command with `--listen 127.0.0.1:0`; the URL it prints. Ends it with
    SIGTERM afterwards and checks that it exits cleanly."""
    process = subprocess.Popen(
        [params.command, *params.args, "--listen", "127.0.0.1:0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = None
        seen = []
        assert process.stderr is not None
        while url is None:
            line = await anyio.to_thread.run_sync(process.stderr.readline)
            if not line:
                raise Failed(f"tdsl serve --listen exited before listening: {''.join(seen)}")
            seen.append(line)
            if "over MCP at " in line:
                url = line.split("over MCP at ", 1)[1].split()[0]
        yield url
    finally:
        process.terminate()
        try:
            code = await anyio.to_thread.run_sync(lambda: process.wait(10))
        except subprocess.TimeoutExpired:
            process.kill()
            raise Failed("tdsl serve --listen did not exit within 10 s of SIGTERM")
    expect(code == 0, f"tdsl serve --listen exited with {code} after SIGTERM")


def tdsl_server(tdsl: str, root: str) -> StdioServerParameters:
    return StdioServerParameters(command=tdsl, args=["serve", "--mcp", "--root", root])


# --- tdsl serve --mcp ----------------------------------------------------------------------


async def tools(session: ClientSession) -> None:
    """Lists the tools of tests/data/mcp, calls one, then calls with bad arguments."""
    init = session.initialize_result
    expect(init is not None and init.server_info.name == "tdsl", f"server info: {init}")
    expect(init.capabilities.tools is not None, f"no tools capability: {init.capabilities}")

    listed = await session.list_tools()
    by_name = {t.name: t for t in listed.tools}
    expect(
        sorted(by_name) == ["chain", "echo", "echoes", "fail", "nap", "pause", "sleep"],
        f"tool names: {sorted(by_name)}",
    )
    chain = by_name["chain"]
    expect(chain.description.startswith("Three steps in a row"), f"description: {chain.description!r}")
    expect(
        chain.input_schema
        == {"type": "object", "properties": {"start": {"type": "integer"}}, "required": ["start"]},
        f"chain inputSchema: {chain.input_schema}",
    )
    expect(
        chain.output_schema
        == {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        f"chain outputSchema: {chain.output_schema}",
    )
    sleep = by_name["sleep"]
    expect(sleep.input_schema["required"] == ["pid_file", "seconds"], f"sleep inputSchema: {sleep.input_schema}")
    expect(
        sleep.input_schema["properties"]["seconds"] == {"description": "How long to sleep", "type": "number"},
        f"sleep inputSchema: {sleep.input_schema}",
    )

    # Success: the structured result, and the same JSON as text. (The SDK also checks the
    # structured content against the outputSchema it listed, raising if it does not fit.)
    result = await session.call_tool("chain", {"start": 1})
    expect(not result.is_error, f"chain failed: {result}")
    expect(result.structured_content == {"n": 4}, f"structuredContent: {result.structured_content}")
    expect(json.loads(text_of(result)) == {"n": 4}, f"text: {text_of(result)!r}")

    # Bad arguments: a tool error with a message naming the argument, not a protocol error.
    result = await session.call_tool("chain", {"start": "one"})
    expect(result.is_error, f"a string for an integer was accepted: {result}")
    expect(result.structured_content is None, f"an error with structuredContent: {result}")
    message = text_of(result)
    expect("`start`" in message and "integer" in message, f"the error does not name the argument: {message!r}")
    result = await session.call_tool("nap", {"seconds": 1})
    expect(result.is_error, f"a missing argument was accepted: {result}")
    expect("`pid_file` is missing" in text_of(result), f"the error does not name the argument: {text_of(result)!r}")

    # A failing primitive is a tool error naming the program; its standard error is on the
    # server's log, not in the answer.
    result = await session.call_tool("fail", {})
    expect(result.is_error, f"a failing primitive: {result}")
    message = text_of(result)
    expect(message.startswith("FAILED: ") and message.endswith("is on the server's log)")
           and "the disk is on fire" not in message, f"the error: {message!r}")

    # The session goes on.
    result = await session.call_tool("echo", {"x": [1, "two"]})
    expect(not result.is_error and result.structured_content == {"x": [1, "two"]}, f"echo after errors: {result}")
    await session.send_ping()


async def primitive_error(session: ClientSession) -> None:
    """A failing primitive's error names its tool path once (`FAILED: `/tools/fail.tool`: …`)."""
    result = await session.call_tool("fail", {})
    message = text_of(result)
    expect(result.is_error and message.count("/tools/fail.tool") == 1, f"the tool path twice: {message!r}")


def read_pids(pid_file: Path) -> list[int]:
    return [int(p) for p in pid_file.read_text().split()]


def state_of(pid: int) -> str | None:
    """The process's state letter from /proc (`Z` for a zombie), or None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:
        # No /proc: fall back on a signal 0 probe, which cannot see zombies.
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        return "?"
    return stat.rsplit(")", 1)[1].split()[0]


async def wait_gone(pids: list[int], seconds: float) -> list[str]:
    """Waits for the processes to end; returns what is left when `seconds` have passed.

    `pids[0]` is the program tdsl started, which tdsl must reap: a zombie there counts as
    left. `pids[1]` is that program's child, the sleep, which is reparented when its parent
    dies, and whose reaping is up to that new parent: as a zombie it counts as gone.
    """
    deadline = time.monotonic() + seconds
    while True:
        left = []
        for i, pid in enumerate(pids):
            state = state_of(pid)
            if state is not None and not (i > 0 and state == "Z"):
                left.append(f"pid {pid} (state {state})")
        if not left or time.monotonic() > deadline:
            return left
        await anyio.sleep(0.05)


async def cancel_one(session: ClientSession, tool: str, pid_file: Path) -> None:
    """Starts a 30-second call, cancels it once the program runs, checks the program ends."""
    outcome: dict[str, Any] = {}

    async def call() -> None:
        outcome["result"] = await session.call_tool(tool, {"pid_file": str(pid_file), "seconds": 30})

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        with anyio.move_on_after(10) as waiting:
            while not pid_file.exists():
                await anyio.sleep(0.02)
        if waiting.cancelled_caught:
            group.cancel_scope.cancel()
            raise Failed(f"{tool}: the sleeping program never wrote {pid_file} (outcome: {outcome})")
        # Leaving the task group's cancelled scope makes the SDK send
        # `notifications/cancelled` for the request before `call_tool` unwinds.
        group.cancel_scope.cancel()
    expect("result" not in outcome, f"{tool}: the call ended before it was cancelled: {outcome}")
    pids = read_pids(pid_file)
    cancelled_at = time.monotonic()
    left = await wait_gone(pids, 5)
    expect(not left, f"{tool}: still running 5 s after the cancellation: {', '.join(left)}")
    print(f"{tool}: processes {pids} gone {time.monotonic() - cancelled_at:.2f} s after the cancellation")


async def cancel(session: ClientSession, work: Path) -> None:
    """Cancels a composite's sleeping step, then a sleeping primitive; the server lives on."""
    await cancel_one(session, "nap", work / "nap.pid")
    await cancel_one(session, "sleep", work / "sleep.pid")
    # The server still answers, and runs tools.
    result = await session.call_tool("chain", {"start": 10})
    expect(not result.is_error and result.structured_content == {"n": 13}, f"a call after cancelling: {result}")
    # A call that is not cancelled still completes.
    result = await session.call_tool("sleep", {"pid_file": str(work / "short.pid"), "seconds": 0.1})
    expect(not result.is_error and result.structured_content == {"slept": 0.1}, f"a short sleep: {result}")


async def progress(session: ClientSession, before_the_result: bool) -> None:
    """Composites of three steps report one notification per step that ends (docs/mcp.md).

    `chain`'s steps take 0.3 s each: the notifications of the first two must arrive while
    the run goes on. With `before_the_result`, every notification must arrive before the
    result, for `chain` and for `echoes` (20 calls), whose steps take no time: the SDK
    drops a notification that comes after its request's result (the request is no longer
    in progress, and the protocol allows progress only for requests in progress).
    """
    expected = [
        (1, 3, "step `first` COMPLETED"),
        (2, 3, "step `second` COMPLETED"),
        (3, 3, "step `third` COMPLETED"),
    ]
    # The race with the result is lost only now and then: `echoes` runs 20 times.
    for tool in ["chain"] + ["echoes"] * 20 if before_the_result else ["chain"]:
        seen: list[tuple[float, float | None, str | None]] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            seen.append((value, total, message))

        result = await session.call_tool(tool, {"start": 1}, progress_callback=on_progress)
        expect(not result.is_error and result.structured_content == {"n": 4}, f"{tool}: {result}")
        if before_the_result:
            expect(seen == expected, f"{tool}: progress notifications before the result: {seen}")
        else:
            expect(seen in (expected[:2], expected), f"{tool}: progress notifications before the result: {seen}")


# The log messages the `logging` scenario's session received.
LOGS: list[Any] = []


async def on_log(params: Any) -> None:
    LOGS.append(params)

async def logging(session: ClientSession) -> None:
    """`logging/setLevel` turns on `notifications/message` for a composite's steps.

    Over HTTP the messages come on the session's standalone SSE stream, not the call's, so
    they may arrive just after the result: the scenario waits for them (at most 5 s).
    """
    init = session.initialize_result
    expect(init is not None and init.capabilities.logging is not None, f"no logging capability: {init}")
    result = await session.call_tool("chain", {"start": 1})
    expect(not result.is_error, f"chain: {result}")
    await session.set_logging_level("info")
    result = await session.call_tool("chain", {"start": 1})
    expect(not result.is_error, f"chain: {result}")
    with anyio.move_on_after(5):
        while len(LOGS) < 3:
            await anyio.sleep(0.02)
    # None from the call before setLevel: they would have come first.
    events = [(m.level, m.logger, m.data["event"], m.data["step"]) for m in LOGS]
    expect(
        events == [("info", "tdsl", "started", s) for s in ("first", "second", "third")],
        f"log messages of chain: {events}",
    )
    await session.set_logging_level("warning")
    result = await session.call_tool("chain", {"start": 1})
    expect(not result.is_error, f"chain: {result}")
    await session.send_ping()
    await anyio.sleep(0.3)
    expect(len(LOGS) == 3, f"info messages at level warning: {LOGS[3:]}")


# --- the SDK server of tests/mcp_py/server.py ---------------------------------------------


async def python_server(session: ClientSession) -> None:
    listed = await session.list_tools()
    by_name = {t.name: t for t in listed.tools}
    expect(sorted(by_name) == ["add", "fail", "flaky", "shout", "slow"], f"tool names: {sorted(by_name)}")
    expect(by_name["add"].input_schema["required"] == ["a", "b"], f"add: {by_name['add'].input_schema}")
    expect(by_name["add"].output_schema["properties"] == {"sum": {"title": "Sum", "type": "integer"}},
           f"add outputSchema: {by_name['add'].output_schema}")
    expect(by_name["shout"].output_schema is None, f"shout outputSchema: {by_name['shout'].output_schema}")

    result = await session.call_tool("add", {"a": 2, "b": 3})
    expect(not result.is_error and result.structured_content == {"sum": 5}, f"add: {result}")

    result = await session.call_tool("shout", {"text": "hello"})
    expect(not result.is_error and text_of(result) == "HELLO", f"shout: {result}")
    expect(result.structured_content is None, f"shout structuredContent: {result.structured_content}")

    result = await session.call_tool("fail", {"message": "the disk is on fire"})
    expect(
        result.is_error and text_of(result) == "Error executing tool fail: the disk is on fire", f"fail: {result}"
    )

    result = await session.call_tool("add", {"a": "two", "b": 3})
    message = text_of(result)
    expect(result.is_error and "for addArguments\na\n" in message and "valid integer" in message, f"add: {message!r}")

    seen: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        seen.append(value)

    result = await session.call_tool("slow", {"seconds": 0.3}, progress_callback=on_progress)
    expect(not result.is_error and result.structured_content == {"slept": 0.3}, f"slow: {result}")
    expect(len(seen) >= 2 and seen == sorted(seen), f"slow's progress: {seen}")

    for call in (1, 2):
        result = await session.call_tool("flaky", {"key": "k", "failures": 2})
        message = text_of(result)
        expect(result.is_error and message.endswith(f"flaky: call {call} of 'k' fails (2 will)"), f"flaky: {message!r}")
    result = await session.call_tool("flaky", {"key": "k", "failures": 2})
    expect(not result.is_error and result.structured_content == {"key": "k", "calls": 3}, f"flaky call 3: {result}")


def main(argv: list[str]) -> int:
    global HTTP
    if argv[:1] == ["--http"]:
        HTTP = True
        argv = argv[1:]
    scenario, *rest = argv or ["?"]
    scenarios: dict[str, Callable[[], Awaitable[None]]] = {}
    if scenario == "logging" and len(rest) == 2:
        scenarios[scenario] = lambda: with_session(tdsl_server(*rest), logging, logging_callback=on_log)
    elif scenario in ("tools", "primitive-error") and len(rest) == 2:
        body = tools if scenario == "tools" else primitive_error
        scenarios[scenario] = lambda: with_session(tdsl_server(*rest), body)
    elif scenario in ("progress", "progress-before-result") and len(rest) == 2:
        strict = scenario == "progress-before-result"
        scenarios[scenario] = lambda: with_session(tdsl_server(*rest), lambda s: progress(s, strict))
    elif scenario == "cancel" and len(rest) == 3:
        work = Path(rest[2])
        scenarios[scenario] = lambda: with_session(tdsl_server(rest[0], rest[1]), lambda s: cancel(s, work))
    elif scenario == "python-server" and not rest:
        server = StdioServerParameters(command=sys.executable, args=[str(HERE / "server.py")])
        scenarios[scenario] = lambda: with_session(server, python_server)
    if scenario not in scenarios:
        print(__doc__, file=sys.stderr)
        return 2
    if run_scenario(scenario, scenarios[scenario]) != 0:
        return 1
    return 0


def run_scenario(scenario: str, run: Callable[[], Awaitable[None]]) -> int:
    """Runs one scenario of a script: 0 when it passed, 1 (each failed check printed) when a
    check failed; any other exception propagates."""
    try:
        anyio.run(run)
    except BaseException as e:
        # The SDK's task groups wrap what a scenario raises in exception groups.
        failed = [f for f in leaves(e) if isinstance(f, Failed)]
        if not failed:
            raise
        for f in failed:
            print(f"{scenario}: {f}", file=sys.stderr)
        return 1
    return 0


def leaves(e: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, or `[e]`."""
    inner = getattr(e, "exceptions", None)
    if inner is None:
        return [e]
    return [leaf for x in inner for leaf in leaves(x)]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
