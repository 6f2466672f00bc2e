"""Plans over MCP (`tdsl serve --mcp --plans`, SPEC §13) driven by the official Python SDK's
client, over stdio or, with `--http` first, over Streamable HTTP (`--listen`).
tests/mcp_plans.rs runs one scenario per test:

    python plans.py session TDSL REPO WORK   # tools, resources, prompt, check/run, upstream,
                                             # progress, cancel, an upstream that hangs or dies
    python plans.py guide   TDSL REPO        # the guide's four worked plans, checked and run
    python plans.py corpus  TDSL REPO        # tests/data/plans/cases through check_plan/run_plan
    python plans.py transcript TDSL REPO OUT # the worked session of examples/plans (written to OUT)
    python plans.py plans-only TDSL REPO     # `--plans-only`: only check_plan and run_plan listed
    python plans.py --http SCENARIO ...      # the same over `serve --listen`

The plans server serves REPO/examples/document-analysis (the corpus: its own roots) with an
upstream server `up` (or `weather` for the corpus) that is a second `TDSL serve --mcp`. A
scenario asserts what it observes: it exits 0, or prints what went wrong and exits 1.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent

sys.path.insert(0, str(Path(__file__).resolve().parent))
import client  # noqa: E402  (the shared helpers: sessions over stdio or HTTP, checks)
from client import Failed, expect, read_pids, text_of, wait_gone  # noqa: E402

GUIDE_LIMIT = 16_000
DESCRIPTION_LIMIT = 2_500


def plans_server(tdsl: str, root: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=tdsl, args=["serve", "--mcp", "--plans", "--no-history", "--root", str(root), *extra]
    )


def upstream(tdsl: str, name: str, root: Path) -> list[str]:
    return ["--upstream", f"{name}='{tdsl}' serve --mcp --no-history --root '{root}'"]


def docs(repo: Path) -> list[str]:
    d = repo / "examples/document-analysis/documents"
    return [str(d / n) for n in ("quarterly-report.txt", "incident-review.txt", "meeting-notes.txt", "missing.txt")]


def structured(result: CallToolResult) -> dict[str, Any]:
    expect(isinstance(result.structured_content, dict), f"no structuredContent: {result}")
    return result.structured_content  # type: ignore[return-value]


async def read(session: ClientSession, uri: str) -> str:
    result = await session.read_resource(uri)
    expect(len(result.contents) == 1, f"{uri}: {result}")
    text = getattr(result.contents[0], "text", None)
    expect(isinstance(text, str), f"{uri}: no text: {result}")
    return text  # type: ignore[return-value]


# --- session ---------------------------------------------------------------------------------


async def session_scenario(session: ClientSession, repo: Path, work: Path) -> None:
    init = session.initialize_result
    expect(init is not None, "no initialize result")
    caps = init.capabilities
    expect(caps.tools is not None and caps.resources is not None and caps.prompts is not None, f"capabilities: {caps}")
    expect("tdsl://guide" in (init.instructions or ""), f"instructions: {init.instructions!r}")

    tools = {t.name: t for t in (await session.list_tools()).tools}
    expect({"check_plan", "run_plan", "basic_extractor"} <= set(tools), f"tools: {sorted(tools)}")
    description = tools["run_plan"].description or ""
    expect(0 < len(description) <= DESCRIPTION_LIMIT, f"run_plan's description has {len(description)} characters")
    expect("REF:" in description and "tdsl://guide" in description, f"run_plan's description: {description!r}")

    # Resources and the prompt.
    listed = {str(r.uri) for r in (await session.list_resources()).resources}
    expect(listed == {"tdsl://guide", "tdsl://tools"}, f"resources: {listed}")
    guide = await read(session, "tdsl://guide")
    expect(len(guide) <= GUIDE_LIMIT and "## Worked plans" in guide, f"the guide ({len(guide)} characters)")
    listing = await read(session, "tdsl://tools")
    for line in ("`basic_extractor(document_path: string!)`", "`up/pause(n: integer!)` → `{n: integer}`"):
        expect(line in listing, f"tdsl://tools lacks {line}:\n{listing}")
    try:
        await session.read_resource("tdsl://nothing")
        raise Failed("reading tdsl://nothing did not fail")
    except MCPError as e:
        expect("tdsl://guide" in str(e), f"unknown resource: {e}")
    prompts = (await session.list_prompts()).prompts
    expect([p.name for p in prompts] == ["plan"], f"prompts: {prompts}")
    expect([a.name for a in prompts[0].arguments or []] == ["task"], f"the prompt's arguments: {prompts[0]}")
    got = await session.get_prompt("plan", {"task": "rank the documents by length"})
    text = got.messages[0].content.text  # type: ignore[union-attr]
    expect("rank the documents by length" in text and "up/pause" in text, f"the prompt: {text[:300]!r}")
    try:
        await session.get_prompt("plan", {})
        raise Failed("the prompt without a task did not fail")
    except MCPError as e:
        expect("task" in str(e), f"prompt without task: {e}")

    # A model's mistake, reported at its place; nothing runs.
    paths = docs(repo)
    bad = {
        "instructions": [
            {"execution_id": "check", "tool_definition_path": "document_validator",
             "arguments": {"file_paths": paths}},
            {"execution_id": "info", "tool_definition_path": "basic_extractor",
             "arguments": {"document_path": "{{check.valid_documents[0]}}"}},
        ]
    }
    result = await session.call_tool("check_plan", {"plan": bad})
    content = structured(result)
    expect(result.is_error and content["ok"] is False, f"check_plan of a bad plan: {result}")
    first = content["diagnostics"][0]
    expect(
        first["code"] == "E1311" and first["pointer"] == "/instructions/1/arguments/document_path"
        and "REF:check.valid_documents.0" in first["help"] and "plan.json" in text_of(result),
        f"the diagnostic: {first}",
    )
    expect("E1311" in text_of(result), f"the text: {text_of(result)!r}")
    result = await session.call_tool("run_plan", {"plan": bad})
    expect(result.is_error and structured(result)["diagnostics"][0]["code"] == "E1311", f"run_plan of a bad plan: {result}")
    # Not an object, and a plan sent as JSON text.
    result = await session.call_tool("check_plan", {"plan": [1, 2]})
    expect(result.is_error and structured(result)["diagnostics"][0]["code"] == "E1303", f"a list: {result}")
    result = await session.call_tool("check_plan", {"plan": json.dumps(bad)})
    expect(result.is_error and structured(result)["diagnostics"][0]["code"] == "E1311", f"text: {result}")

    # Hostile plans: too large, too deep; the server answers each and goes on.
    result = await session.call_tool("check_plan", {"plan": {"description": "x" * 300_000, "instructions": []}})
    expect(result.is_error and structured(result)["diagnostics"][0]["code"] == "E1301", f"a 300 KB plan: {text_of(result)[:300]}")
    deep: Any = 1
    for _ in range(100):
        deep = [deep]
    result = await session.call_tool("run_plan", {"plan": {"instructions": [], "description": deep}})
    expect(result.is_error and structured(result)["ok"] is False, f"a plan nested 100 deep: {text_of(result)[:300]}")
    result = await session.call_tool("run_plan", {"plan": bad, "arguments": [1]})
    expect(result.is_error and "must be an object" in text_of(result), f"arguments that are a list: {result}")
    outside = {"instructions": [{"execution_id": "x", "tool_definition_path": "/../../tests/data/mcp/tools/echo.tool"}]}
    result = await session.call_tool("run_plan", {"plan": outside})
    expect(result.is_error and structured(result)["ok"] is False, f"a `..` tool path: {text_of(result)[:300]}")

    # Repaired: it checks (levels, result type) and runs with a served and an upstream tool.
    good = json.loads(json.dumps(bad).replace("{{check.valid_documents[0]}}", "REF:check.valid_documents.0"))
    good["instructions"].append(
        {"execution_id": "bump", "tool_definition_path": "up/pause", "arguments": {"n": "REF:info.word_count"}}
    )
    good["response_reference_map"] = {"title": "REF:info.summary", "words_plus_one": "REF:bump.n"}
    result = await session.call_tool("check_plan", {"plan": good})
    content = structured(result)
    expect(not result.is_error and content["ok"] and content["levels"] == [["check"], ["info"], ["bump"]],
           f"check_plan of the repaired plan: {result}")
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(p: float, total: float | None, message: str | None) -> None:
        progress.append((p, total, message))

    result = await session.call_tool("run_plan", {"plan": good}, progress_callback=on_progress)
    content = structured(result)
    expect(not result.is_error and content["status"] == "SUCCESS", f"run_plan: {result}")
    expect(content["result"] == {"title": "Quarterly operations report", "words_plus_one": 57}, f"result: {content}")
    expect([s["execution_id"] for s in content["steps"]] == ["check", "info", "bump"], f"steps: {content}")
    expect([(p, t) for p, t, _ in progress] == [(1, 3), (2, 3), (3, 3)], f"progress: {progress}")

    # A failing upstream step: a tool error with the same structured content.
    result = await session.call_tool("run_plan", {"plan": {"instructions": [
        {"execution_id": "boom", "tool_definition_path": "up/fail", "arguments": {}}]}})
    content = structured(result)
    expect(result.is_error and content["status"] == "FAILED" and "fail.sh exited with status 3" in content["failure_summary"]
           # Its standard error is on the upstream server's log, not told to clients (docs/security.md).
           and "disk is on fire" not in json.dumps(content),
           f"a failing plan: {result}")
    expect(json.loads(text_of(result)) == content, f"the text is not the content: {text_of(result)!r}")

    # Cancelling run_plan cancels the upstream's call, whose program ends.
    pid_file = work / "plan-cancel.pid"
    sleepy = {"instructions": [{"execution_id": "nap", "tool_definition_path": "up/sleep",
                                "arguments": {"pid_file": str(pid_file), "seconds": 30}}]}
    outcome: dict[str, Any] = {}

    async def call() -> None:
        outcome["result"] = await session.call_tool("run_plan", {"plan": sleepy})

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        with anyio.move_on_after(15):
            while not pid_file.exists():
                await anyio.sleep(0.02)
        group.cancel_scope.cancel()
    expect(pid_file.exists() and "result" not in outcome, f"the plan's sleep never started or ended: {outcome}")
    left = await wait_gone(read_pids(pid_file), 8)
    expect(not left, f"still running 8 s after cancelling run_plan: {left}")

    # An upstream that hangs: the step's timeout ends it, and the server goes on.
    pid_file = work / "plan-hang.pid"
    hung = {"instructions": [{"execution_id": "hang", "tool_definition_path": "up/sleep", "timeout_seconds": 1,
                              "retry": {"max_retries": 0},
                              "arguments": {"pid_file": str(pid_file), "seconds": 30}}]}
    started = time.monotonic()
    result = await session.call_tool("run_plan", {"plan": hung})
    content = structured(result)
    expect(result.is_error and content["status"] in ("FAILED", "TIMEOUT") and content["steps"][0]["status"] == "TIMEOUT",
           f"a hanging upstream: {result}")
    expect(time.monotonic() - started < 10, f"the hang took {time.monotonic() - started:.1f} s")

    # An upstream that dies mid-call: a clear error; the next plan starts it again.
    pid_file = work / "plan-die.pid"
    dying = {"instructions": [{"execution_id": "die", "tool_definition_path": "up/sleep", "retry": {"max_retries": 0},
                               "arguments": {"pid_file": str(pid_file), "seconds": 30}}]}

    async def kill_upstream() -> None:
        while not pid_file.exists():
            await anyio.sleep(0.02)
        program = read_pids(pid_file)[0]
        stat = Path(f"/proc/{program}/stat").read_text()
        upstream_pid = int(stat.rsplit(")", 1)[1].split()[1])
        os.kill(upstream_pid, signal.SIGKILL)

    async with anyio.create_task_group() as group:
        group.start_soon(kill_upstream)
        with anyio.fail_after(20):
            result = await session.call_tool("run_plan", {"plan": dying})
    content = structured(result)
    expect(result.is_error and content["status"] == "FAILED" and "up/sleep" in content["failure_summary"],
           f"an upstream that died: {result}")
    for pid in read_pids(pid_file):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    result = await session.call_tool("run_plan", {"plan": {"instructions": [
        {"execution_id": "again", "tool_definition_path": "up/pause", "arguments": {"n": 1}}]}})
    expect(not result.is_error and structured(result)["result"] == {"again": {"n": 2}}, f"after the death: {result}")
    print("session: every check passed")


# --- guide -----------------------------------------------------------------------------------


def worked_plans(guide: str) -> list[dict[str, Any]]:
    section = guide.split("## Worked plans", 1)[1]
    blocks = [b.split("```", 1)[0] for b in section.split("```json\n")[1:]]
    return [json.loads(b) for b in blocks]


async def guide_scenario(session: ClientSession, repo: Path) -> None:
    """The guide's worked plans, as a model reads them: each checks and runs."""
    plans = worked_plans(await read(session, "tdsl://guide"))
    expect(len(plans) == 4, f"the guide has {len(plans)} worked plans, not 4")
    results = []
    for i, plan in enumerate(plans, 1):
        result = await session.call_tool("check_plan", {"plan": plan})
        expect(not result.is_error and structured(result)["ok"], f"worked plan {i} does not check: {text_of(result)}")
        expect(not structured(result)["diagnostics"], f"worked plan {i} has warnings: {text_of(result)}")
        # Plan 4 calls the upstream `shop` (tests/mcp_py/shop.py); the others the examples' tools.
        arguments = {"customers": ["c-1"], "cities": ["Oslo", "Rome"]} if i == 4 else {"paths": docs(repo)}
        result = await session.call_tool("run_plan", {"plan": plan, "arguments": arguments})
        content = structured(result)
        expect(not result.is_error and content["status"] == "SUCCESS", f"worked plan {i}: {text_of(result)}")
        results.append(content["result"])
    longest = [d["filename"] for d in results[0]["longest"]]
    expect(longest == ["incident-review.txt", "quarterly-report.txt", "meeting-notes.txt"], f"plan 1: {results[0]}")
    expect(results[0]["total_words"] == 161, f"plan 1: {results[0]}")
    expect(results[1]["checked"] == 4 and isinstance(results[1]["insights"], str), f"plan 2: {results[1]}")
    expect(results[2]["unreadable_count"] == 1 and results[2]["first_title"] == "Quarterly operations report",
           f"plan 3: {results[2]}")
    expect(results[3] == {"open_orders": [{"customer": "c-1", "order": "o-1"}],
                          "warmest": [{"city": "Oslo", "max_c": 22.0}, {"city": "Rome", "max_c": 22.0}]},
           f"plan 4: {results[3]}")
    # Plan 4's join is a transform step: both fan-outs are in the first level, it in the second.
    checked = structured(await session.call_tool("check_plan", {"plan": plans[3]}))
    expect(checked["levels"] == [["orders", "weather"], ["summary"]], f"plan 4's levels: {checked}")
    # With no readable document, plan 2's step is skipped and its insight is null.
    result = await session.call_tool("run_plan", {"plan": plans[1], "arguments": {"paths": [docs(repo)[3]]}})
    content = structured(result)
    expect(content["status"] == "SUCCESS" and content["result"] == {"checked": 1, "insights": None}, f"{content}")
    expect(content["steps"][1]["status"] == "SKIPPED", f"{content}")
    print("guide: the four worked plans check and run")


# --- corpus ----------------------------------------------------------------------------------


def matches(expected: dict[str, Any], d: dict[str, Any]) -> bool:
    return (
        d["code"] == expected["code"]
        and ("pointer" not in expected or d["pointer"] == expected["pointer"])
        and ("help" not in expected or expected["help"] in (d.get("help") or ""))
        and ("range" not in expected or d.get("range") == expected["range"])
    )


def compare(name: str, content: dict[str, Any], expected: list[dict[str, Any]]) -> list[str]:
    problems = []
    diagnostics = content["diagnostics"]
    used = [False] * len(diagnostics)
    for e in expected:
        hit = next((i for i, d in enumerate(diagnostics) if not used[i] and matches(e, d)), None)
        if hit is None:
            problems.append(f"{name}: expected {e}")
        else:
            used[hit] = True
    for d, u in zip(diagnostics, used):
        if not u and d["severity"] == "error":
            problems.append(f"{name}: unexpected {d['code']} at {d['pointer']}: {d['message']}")
    return problems


def case_plan(case: dict[str, Any], key: str) -> Any:
    return case[f"{key}_text"] if f"{key}_text" in case else case[key]


async def corpus_scenario(tdsl: str, repo: Path) -> None:
    cases_dir = repo / "tests/data/plans/cases"
    cases = sorted(cases_dir.glob("*.json"))
    expect(len(cases) >= 30, f"the corpus has {len(cases)} plans")
    groups: dict[tuple[str, ...], list[tuple[str, dict[str, Any]]]] = {}
    for path in cases:
        case = json.loads(path.read_text())
        # The TypeScript SDK's schemas are data without a server (tests/plans.rs runs those
        # cases through the library); `shop/…` is tests/mcp_py/shop.py, run here.
        if '"ts/' in json.dumps(case):
            continue
        root_name = case.get("root", "root")
        root = repo / "examples/document-analysis" if root_name == "document-analysis" else repo / "tests/data/plans" / root_name
        allow = case.get("allow", ["/tools/*.tool"])
        extra = [*(a for g in allow for a in ("--allow", g))]
        if "max_steps" in case:
            extra += ["--max-plan-steps", str(case["max_steps"])]
        for key, flag in (("max_fan_out", "--max-fan-out"), ("max_bytes", "--max-plan-bytes"),
                          ("max_nesting", "--max-plan-nesting")):
            if key in case:
                extra += [flag, str(case[key])]
        key = (str(root), *extra)
        groups.setdefault(key, []).append((path.stem, case))
    problems: list[str] = []
    ran = 0
    for (root, *extra), group in groups.items():
        shop = ["--upstream", f"shop='{sys.executable}' '{repo / 'tests/mcp_py/shop.py'}'"]
        params = plans_server(
            tdsl, Path(root), *extra, *upstream(tdsl, "weather", repo / "tests/data/plans-weather"), *shop
        )

        async def body(session: ClientSession, group: list[tuple[str, dict[str, Any]]] = group) -> None:
            nonlocal ran
            for name, case in group:
                result = await session.call_tool("check_plan", {"plan": case_plan(case, "plan")})
                content = structured(result)
                problems.extend(compare(name, content, case["expect"]))
                has_errors = any(e["code"].startswith("E") for e in case["expect"])
                expect(result.is_error == has_errors, f"{name}: isError {result.is_error}")
                if has_errors:
                    result = await session.call_tool("run_plan", {"plan": case_plan(case, "plan")})
                    if not result.is_error or structured(result).get("ok") is not False:
                        problems.append(f"{name}: run_plan of the plan with errors was not refused: {text_of(result)}")
                result = await session.call_tool(
                    "run_plan", {"plan": case_plan(case, "repaired"), "arguments": case.get("arguments", {})}
                )
                content = structured(result)
                if result.is_error or content.get("status") != "SUCCESS":
                    problems.append(f"{name}: the repaired plan: {text_of(result)[:2000]}")
                elif "result" in case and content["result"] != case["result"]:
                    problems.append(f"{name}: the repaired plan's result is {content['result']}, not {case['result']}")
                ran += 1

        await client.with_session(params, body)
    expect(not problems, f"{len(problems)} problems:\n" + "\n".join(problems))
    print(f"corpus: {ran} plans checked and their repairs run through the Python SDK client")


# --- transcript ------------------------------------------------------------------------------


async def transcript_scenario(session: ClientSession, repo: Path, out: Path) -> None:
    """A worked session as a model would have it, written as Markdown to `out`."""
    lines: list[str] = []

    def show(title: str, request: Any, result: CallToolResult) -> None:
        lines.append(f"### {title}\n")
        lines.append("The model sends:\n")
        lines.append("```json\n" + json.dumps(request, indent=2, ensure_ascii=False) + "\n```\n")
        content = json.loads(json.dumps(result.structured_content))
        lines.append(f"tdsl answers (`isError: {str(bool(result.is_error)).lower()}`), `structuredContent`:\n")
        lines.append("```json\n" + json.dumps(content, indent=2, ensure_ascii=False).replace(str(repo) + "/", "") + "\n```\n")
        if content.get("diagnostics"):
            text = "\n".join(line.rstrip() for line in text_of(result).replace(str(repo) + "/", "").splitlines())
            lines.append("and its text block, each diagnostic rendered:\n")
            lines.append("```\n" + text + "\n```\n")

    paths = [p.replace(str(repo) + "/", "") for p in docs(repo)]
    first = {
        "arguments": [{"name": "paths", "type_name": "list<string>", "required": True}],
        "instructions": [
            {"execution_id": "check", "tool_definition_path": "document_validator",
             "arguments": {"file_paths": "$arguments.paths"}},
            {"execution_id": "facts", "tool_definition_path": "basic_extractor",
             "parallel_execution": {"iterate_over": "REF:check.valid_documents", "child_argument_name": "path"},
             "arguments": {}},
        ],
        "response_reference_map": {"densest": "REF:facts.response.0.filename", "ok": True},
    }
    request = {"plan": first}
    result = await session.call_tool("check_plan", request)
    show("1. The model's first plan: `check_plan`", request, result)
    fixed = json.loads(json.dumps(first))
    fixed["instructions"][0]["arguments"]["file_paths"] = "REF:arguments.paths"
    fixed["instructions"][1]["parallel_execution"]["child_argument_name"] = "document_path"
    fixed["instructions"][1]["transform_responses"] = {
        "variables": {"docs": "REF:response"},
        "transforms": {"densest": "slice(sort(array=docs, key_path=\"word_count\", direction=\"desc\"), 0, 2)"},
    }
    fixed["response_reference_map"] = {"densest": "REF:facts.densest", "validation": "REF:check.validation_results"}
    request = {"plan": fixed}
    result = await session.call_tool("check_plan", request)
    show("2. Repaired: `check_plan`", request, result)
    request = {"plan": fixed, "arguments": {"paths": paths}}
    result = await session.call_tool("run_plan", request)
    show("3. `run_plan`", request, result)
    out.write_text("\n".join(lines))


# --- plans only -----------------------------------------------------------------------------


async def plans_only_scenario(session: ClientSession, repo: Path) -> None:
    """`serve --plans --plans-only`: the model sees check_plan and run_plan (and the resources
    and the prompt); the served and upstream tools are callable from plans, listed in
    tdsl://tools, and not directly."""
    tools = sorted(t.name for t in (await session.list_tools()).tools)
    expect(tools == ["check_plan", "run_plan"], f"tools: {tools}")
    listed = {str(r.uri) for r in (await session.list_resources()).resources}
    expect(listed == {"tdsl://guide", "tdsl://tools"}, f"resources: {listed}")
    prompts = [p.name for p in (await session.list_prompts()).prompts]
    expect(prompts == ["plan"], f"prompts: {prompts}")
    listing = await read(session, "tdsl://tools")
    for line in ("`basic_extractor(document_path: string!)`", "`up/pause(n: integer!)` → `{n: integer}`"):
        expect(line in listing, f"tdsl://tools lacks {line}:\n{listing}")
    plan = {
        "instructions": [
            {"execution_id": "facts", "tool_definition_path": "basic_extractor",
             "arguments": {"document_path": "REF:arguments.path"}},
            {"execution_id": "p", "tool_definition_path": "up/pause", "arguments": {"n": 1}},
        ],
        "arguments": [{"name": "path", "type_name": "string", "required": True}],
        "response_reference_map": {"words": "REF:facts.word_count", "n": "REF:p.n"},
    }
    checked = await session.call_tool("check_plan", {"plan": plan})
    expect(not checked.is_error and structured(checked)["ok"] is True, f"check_plan: {checked}")
    ran = await session.call_tool("run_plan", {"plan": plan, "arguments": {"path": docs(repo)[2]}})
    expect(not ran.is_error, f"run_plan: {ran}")
    expect(structured(ran)["result"] == {"words": 24, "n": 2}, f"run_plan: {structured(ran)}")
    try:
        direct = await session.call_tool("basic_extractor", {"document_path": docs(repo)[2]})
        raise Failed(f"a served tool was called directly: {direct}")
    except MCPError as e:
        expect("plans-only" in str(e) and "from a plan" in str(e), f"a direct call: {e}")


# --- main ------------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    if argv[:1] == ["--http"]:
        client.HTTP = True
        argv = argv[1:]
    scenario, *rest = argv or ["?"]
    if len(rest) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    tdsl, repo = rest[0], Path(rest[1])
    root = repo / "examples/document-analysis"
    server = plans_server(tdsl, root, *upstream(tdsl, "up", repo / "tests/data/mcp"))
    if scenario == "session" and len(rest) == 3:
        run = lambda: client.with_session(server, lambda s: session_scenario(s, repo, Path(rest[2])))  # noqa: E731
    elif scenario == "guide" and len(rest) == 2:
        shop = ["--upstream", f"shop='{sys.executable}' '{repo / 'tests/mcp_py/shop.py'}'"]
        with_shop = plans_server(tdsl, root, *upstream(tdsl, "up", repo / "tests/data/mcp"), *shop)
        run = lambda: client.with_session(with_shop, lambda s: guide_scenario(s, repo))  # noqa: E731
    elif scenario == "corpus" and len(rest) == 2:
        run = lambda: corpus_scenario(tdsl, repo)  # noqa: E731
    elif scenario == "plans-only" and len(rest) == 2:
        only = plans_server(tdsl, root, "--plans-only", *upstream(tdsl, "up", repo / "tests/data/mcp"))
        run = lambda: client.with_session(only, lambda s: plans_only_scenario(s, repo))  # noqa: E731
    elif scenario == "transcript" and len(rest) == 3:
        run = lambda: client.with_session(server, lambda s: transcript_scenario(s, repo, Path(rest[2])))  # noqa: E731
    else:
        print(__doc__, file=sys.stderr)
        return 2
    if client.run_scenario(scenario, run) != 0:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
