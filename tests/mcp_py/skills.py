"""Skills over MCP (`tdsl serve --mcp --plans --skills DIR`, SPEC §16) driven by the official
Python SDK's client. tests/mcp_skills.rs runs it:

    python skills.py session TDSL ROOT HISTORY   # save, list_changed, call, call from a plan,
                                                 # restart and call again, refusals, delete,
                                                 # a skill broken at start

ROOT is a tool root holding `tools/pause.tool` (a copy of tests/data/mcp); the skills go in
ROOT/skills. A scenario asserts what it observes: it exits 0, or prints what went wrong and
exits 1.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.types import CallToolResult

sys.path.insert(0, str(Path(__file__).resolve().parent))
import client  # noqa: E402
from client import Failed, expect, text_of  # noqa: E402

LIST_CHANGED = "notifications/tools/list_changed"

PLAN = {
    "arguments": [{"name": "start", "type_name": "integer", "required": True}],
    "instructions": [
        {"execution_id": "first", "tool_definition_path": "pause", "arguments": {"n": "REF:arguments.start"}},
        {"execution_id": "second", "tool_definition_path": "pause", "arguments": {"n": "REF:first.n"}},
    ],
    "responses": [{"name": "n", "type_name": "integer", "required": True}],
    "response_reference_map": {"n": "REF:second.n"},
}

# A later plan that calls the skill by name.
CALLER = {
    "instructions": [
        {"execution_id": "twice", "tool_definition_path": "pause_twice", "arguments": {"start": 7}},
        {"execution_id": "more", "tool_definition_path": "pause", "arguments": {"n": "REF:twice.n"}},
    ],
    "response_reference_map": {"n": "REF:more.n"},
}


def server(tdsl: str, root: Path, history: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=tdsl,
        args=["serve", "--mcp", "--plans", "--history", str(history), "--root", str(root), "--skills", str(root / "skills")],
    )


class Notes:
    """The notifications a session received."""

    def __init__(self) -> None:
        self.methods: list[str] = []

    async def __call__(self, message: Any) -> None:
        method = getattr(message, "method", None) or getattr(getattr(message, "root", None), "method", None)
        if isinstance(method, str):
            self.methods.append(method)

    async def wait_for(self, method: str, count: int) -> None:
        with anyio.fail_after(5):
            while self.methods.count(method) < count:
                await anyio.sleep(0.02)


def structured(result: CallToolResult) -> dict[str, Any]:
    expect(isinstance(result.structured_content, dict), f"no structuredContent: {result}")
    return result.structured_content  # type: ignore[return-value]


async def names(session: ClientSession) -> set[str]:
    return {t.name for t in (await session.list_tools()).tools}


async def skills_resource(session: ClientSession) -> dict[str, Any]:
    result = await session.read_resource("tdsl://skills")
    return json.loads(result.contents[0].text)  # type: ignore[union-attr]


async def first_session(session: ClientSession, notes: Notes) -> None:
    init = session.initialize_result
    expect(init is not None and init.capabilities.tools is not None, "no tools capability")
    expect(init.capabilities.tools.list_changed is True, f"listChanged: {init.capabilities.tools}")  # type: ignore[union-attr]
    tools = await names(session)
    expect({"save_skill", "delete_skill", "run_plan", "pause"} <= tools, f"tools: {sorted(tools)}")
    resources = {str(r.uri) for r in (await session.list_resources()).resources}
    expect("tdsl://skills" in resources, f"resources: {resources}")

    # Refusals: nothing is written, the answer says why.
    for name, code in (("../x", "E1402"), ("Pause_Twice", "E1402"), ("wеekly", "E1402"), ("pause", "E1403"), ("run_plan", "E1403")):
        result = await session.call_tool("save_skill", {"name": name, "description": "x", "plan": PLAN})
        expect(result.is_error and code in text_of(result), f"save_skill {name!r}: {text_of(result)}")
    bad = {"instructions": [{"execution_id": "a", "tool_definition_path": "pasue", "arguments": {"n": 1}}]}
    result = await session.call_tool("save_skill", {"name": "broken", "description": "x", "plan": bad})
    content = structured(result)
    expect(result.is_error and content["saved"] is False, f"a plan with an error: {result}")
    expect(content["diagnostics"][0]["code"] == "E1306" and "pause" in (content["diagnostics"][0]["help"] or ""), f"{content}")
    expect(notes.methods.count(LIST_CHANGED) == 0, f"notifications after refusals: {notes.methods}")

    # Saved: the tool appears in the same session, with a notification first.
    result = await session.call_tool(
        "save_skill", {"name": "pause_twice", "description": "Adds two to n, pausing twice", "plan": PLAN}
    )
    expect(not result.is_error, f"save_skill: {text_of(result)}")
    saved = structured(result)
    expect(saved["version"] == 1 and saved["tool_path"] == "/skills/pause_twice.tool", f"saved: {saved}")
    await notes.wait_for(LIST_CHANGED, 1)
    listed = {t.name: t for t in (await session.list_tools()).tools}
    expect("pause_twice" in listed, f"tools after the save: {sorted(listed)}")
    expect(listed["pause_twice"].description == "Adds two to n, pausing twice", f"{listed['pause_twice']}")
    result = await session.call_tool("pause_twice", {"start": 3})
    expect(not result.is_error and structured(result) == {"n": 5}, f"the skill's call: {result}")
    result = await session.call_tool("pause_twice", {})
    expect(result.is_error and "start" in text_of(result), f"a call without its argument: {text_of(result)}")

    # A second plan calls it by name.
    result = await session.call_tool("run_plan", {"plan": CALLER})
    expect(not result.is_error and structured(result)["result"] == {"n": 10}, f"a plan calling the skill: {result}")
    listing = (await session.read_resource("tdsl://tools")).contents[0].text  # type: ignore[union-attr]
    expect("`pause_twice(start: integer!)` → `{n: integer}`" in listing, f"tdsl://tools:\n{listing}")
    prompt = await session.get_prompt("plan", {"task": "add two to 7"})
    text = prompt.messages[0].content.text  # type: ignore[union-attr]
    expect("## Skills" in text and "pause_twice(start: integer!)" in text, f"the plan prompt lacks the skill: {text[-600:]!r}")

    # The same name again needs `replace`; a skill that would call itself is refused.
    result = await session.call_tool("save_skill", {"name": "pause_twice", "description": "again", "plan": PLAN})
    expect(result.is_error and "E1404" in text_of(result), f"a second save: {text_of(result)}")
    loop = {"arguments": [{"name": "start", "type_name": "integer", "required": True}],
            "instructions": [{"execution_id": "a", "tool_definition_path": "pause_twice", "arguments": {"start": "REF:arguments.start"}}]}
    result = await session.call_tool("save_skill", {"name": "pause_twice", "description": "loops", "plan": loop, "replace": True})
    expect(result.is_error and "call itself" in text_of(result), f"a skill calling itself: {text_of(result)}")
    result = await session.call_tool(
        "save_skill", {"name": "pause_twice", "description": "Pauses twice (v2)", "plan": PLAN, "replace": True}
    )
    expect(not result.is_error and structured(result)["version"] == 2, f"a replacing save: {text_of(result)}")
    await notes.wait_for(LIST_CHANGED, 2)
    skills = (await skills_resource(session))["skills"]
    expect([s["name"] for s in skills] == ["pause_twice"], f"tdsl://skills: {skills}")
    s = skills[0]
    expect(s["version"] == 2 and [v["version"] for v in s["versions"]] == [1, 2] and s["callable"], f"{s}")
    expect(s["arguments"] == [{"name": "start", "type": "integer", "required": True}] and s["saved_at"].endswith("Z"), f"{s}")

    # A second skill that calls the first.
    outer = {"arguments": [{"name": "x", "type_name": "integer", "required": True}],
             "instructions": [{"execution_id": "a", "tool_definition_path": "pause_twice", "arguments": {"start": "REF:arguments.x"}}],
             "response_reference_map": {"n": "REF:a.n"}}
    result = await session.call_tool("save_skill", {"name": "outer", "description": "Calls pause_twice", "plan": outer})
    expect(not result.is_error, f"a skill calling a skill: {text_of(result)}")


async def second_session(session: ClientSession, notes: Notes, root: Path) -> None:
    # After a restart: still there, still callable, from a plan too.
    tools = await names(session)
    expect({"pause_twice", "outer"} <= tools, f"tools after a restart: {sorted(tools)}")
    result = await session.call_tool("pause_twice", {"start": 5})
    expect(not result.is_error and structured(result) == {"n": 7}, f"after a restart: {result}")
    result = await session.call_tool("run_plan", {"plan": CALLER})
    expect(not result.is_error and structured(result)["result"] == {"n": 10}, f"a plan after a restart: {result}")
    result = await session.call_tool("outer", {"x": 2})
    expect(not result.is_error and structured(result) == {"n": 4}, f"outer: {result}")
    # Replaced while a call of it runs: that call finishes as it started (two pauses), the
    # next call runs the new version (one pause).
    once = {**PLAN, "instructions": PLAN["instructions"][:1], "response_reference_map": {"n": "REF:first.n"}}
    got: dict[str, Any] = {}

    async def slow_call() -> None:
        got["old"] = await session.call_tool("pause_twice", {"start": 1})

    async with anyio.create_task_group() as tg:
        tg.start_soon(slow_call)
        await anyio.sleep(0.2)
        result = await session.call_tool(
            "save_skill", {"name": "pause_twice", "description": "Adds one to n", "plan": once, "replace": True}
        )
        expect(not result.is_error and structured(result)["version"] == 3, f"a save during a call: {text_of(result)}")
    expect(structured(got["old"]) == {"n": 3}, f"the call in flight: {got['old']}")
    result = await session.call_tool("pause_twice", {"start": 1})
    expect(not result.is_error and structured(result) == {"n": 2}, f"the new version: {result}")
    # A skill whose tool is gone is listed with its error and is not callable.
    skills = {s["name"]: s for s in (await skills_resource(session))["skills"]}
    expect(skills["gone"]["callable"] is False and "E13" in skills["gone"]["error"], f"gone: {skills.get('gone')}")
    expect("gone" not in tools, f"a broken skill is listed as a tool: {sorted(tools)}")
    for name in ("loop_a", "loop_b"):
        expect(skills[name]["callable"] is False and name not in tools, f"a cycle: {skills[name]}")
    # Deleted: gone from the tools (a notification first); its versions stay.
    result = await session.call_tool("delete_skill", {"name": "outer"})
    expect(not result.is_error, f"delete_skill: {text_of(result)}")
    await notes.wait_for(LIST_CHANGED, 1)
    expect("outer" not in await names(session), "outer is still listed")
    expect(not (root / "skills/outer.tool").exists() and any((root / "skills/.versions/outer").iterdir()), "files")
    result = await session.call_tool("delete_skill", {"name": "outer"})
    expect(result.is_error and "E1406" in text_of(result), f"deleting twice: {text_of(result)}")
    # A skill whose callee is deleted is judged again at once: listed with its error.
    outer = {"arguments": [{"name": "x", "type_name": "integer", "required": True}],
             "instructions": [{"execution_id": "a", "tool_definition_path": "pause_twice", "arguments": {"start": "REF:arguments.x"}}]}
    result = await session.call_tool("save_skill", {"name": "outer", "description": "Calls pause_twice", "plan": outer})
    expect(not result.is_error and structured(result)["version"] == 2, f"outer again: {text_of(result)}")
    result = await session.call_tool("delete_skill", {"name": "pause_twice"})
    expect(not result.is_error, f"delete_skill pause_twice: {text_of(result)}")
    skills = {s["name"]: s for s in (await skills_resource(session))["skills"]}
    expect("pause_twice" not in skills and skills["outer"]["callable"] is False, f"outer after its callee went: {skills['outer']}")
    expect("outer" not in await names(session), "outer is listed without its callee")


async def session_scenario(tdsl: str, root: Path, history: Path) -> None:
    params = server(tdsl, root, history)
    notes = Notes()
    await client.with_session(params, lambda s: first_session(s, notes), message_handler=notes)
    # A skill whose tool is gone, written by hand while the server was down.
    gone = {"description": "calls a tool that is gone", "instructions": [
        {"execution_id": "a", "tool_definition_path": "/tools/removed.tool", "arguments": {}}]}
    (root / "skills/gone.tool").write_text(json.dumps(gone))
    # Two skills that call each other, written by hand.
    for me, other in (("loop_a", "loop_b"), ("loop_b", "loop_a")):
        loop = {"description": "a cycle", "instructions": [
            {"execution_id": "a", "tool_definition_path": f"/skills/{other}.tool", "arguments": {}}]}
        (root / f"skills/{me}.tool").write_text(json.dumps(loop))
    notes = Notes()
    await client.with_session(params, lambda s: second_session(s, notes, root), message_handler=notes)


def main(argv: list[str]) -> int:
    scenario, *rest = argv or ["?"]
    if scenario == "session" and len(rest) == 3:
        run = lambda: session_scenario(rest[0], Path(rest[1]), Path(rest[2]))  # noqa: E731
    else:
        print(__doc__, file=sys.stderr)
        return 2
    if client.run_scenario(scenario, run) != 0:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
