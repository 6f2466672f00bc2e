"""The direct way's MCP client for the upstream tasks: the Python SDK's own client
(`stdio_client` and `ClientSession`) connected to `shop.py`, driven by bench-plans one
request a line on stdin, one answer a line on stdout:

    {"method": "tools/list"}                               -> the ListToolsResult
    {"method": "tools/call", "name": N, "arguments": {…}}  -> the CallToolResult

each as the SDK dumps it (`by_alias`, `exclude_none`, JSON mode): what a client hands its model.

    python client.py shop.py [server options…]
"""

from __future__ import annotations

import json
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def dump(model: object) -> str:
    return json.dumps(model.model_dump(by_alias=True, exclude_none=True, mode="json"))  # type: ignore[attr-defined]


async def main() -> None:
    params = StdioServerParameters(command=sys.executable, args=sys.argv[1:])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            while True:
                line = await anyio.to_thread.run_sync(sys.stdin.readline)
                if not line:
                    return
                try:
                    request = json.loads(line)
                    if request["method"] == "tools/list":
                        out = dump(await session.list_tools())
                    else:
                        out = dump(await session.call_tool(request["name"], request.get("arguments") or {}))
                except Exception as e:  # noqa: BLE001 - reported to the bench, which fails the task
                    out = json.dumps({"bridge_error": f"{type(e).__name__}: {e}"})
                sys.stdout.write(out + "\n")
                sys.stdout.flush()


if __name__ == "__main__":
    anyio.run(main)
