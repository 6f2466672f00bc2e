# The frame of the scripted upstream MCP servers of the tests (Python's standard library
# only): `tests/common/upstream.rs` writes it at the head of each script, whose own lines
# follow and end by calling `serve`. It is not run by itself.
import json
import os
import sys
import threading
import time

_out = threading.Lock()


def out(m):
    """Writes one message, a line, whole even when threads write too."""
    with _out:
        sys.stdout.write(json.dumps(m) + "\n")
        sys.stdout.flush()


def answer(i, result):
    """Answers request `i` with `result`."""
    out({"jsonrpc": "2.0", "id": i, "result": result})


def serve(tools, call=None, name="up", list_changed=False):
    """Answers MCP over stdio until the input ends: `initialize` (tools, `listChanged` with
    `list_changed`, the server named `name`); `tools/list` with `tools`, a list, or a function
    of the request's params giving the whole result; `tools/call` with `call(id, tool,
    arguments)`, which answers itself (without `call`, as any other request); any other
    request with `{}`. A line that is not JSON is passed over."""
    for line in sys.stdin:
        try:
            m = json.loads(line)
        except ValueError:
            continue
        method, i, params = m.get("method"), m.get("id"), m.get("params") or {}
        if method == "initialize":
            answer(i, {"protocolVersion": params["protocolVersion"],
                       "capabilities": {"tools": {"listChanged": True} if list_changed else {}},
                       "serverInfo": {"name": name, "version": "1"}})
        elif method == "tools/list":
            answer(i, tools(params) if callable(tools) else {"tools": tools})
        elif method == "tools/call" and call is not None:
            call(i, params["name"], params.get("arguments") or {})
        elif i is not None:
            answer(i, {})
