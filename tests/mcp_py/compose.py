"""The tool `compose` of `tdsl serve --mcp --plans --compose` (SPEC §17) driven by the official
Python SDK's client, whose `sampling_callback` plays the model: each phase's request is
answered from the data files of tests/data/compose (what tests/compose.rs's scripted HTTP
server answers). tests/compose_sampling.rs runs one scenario per test:

    python compose.py good       TDSL REPO WORK   # SUCCESS, one request per phase, progress
    python compose.py repair     TDSL REPO WORK   # a bare plan after prose, then a fenced one
    python compose.py refusal    TDSL REPO WORK   # the client answers phase 2 with an error
    python compose.py cancel     TDSL REPO WORK   # notifications/cancelled mid-phase
    python compose.py timeout    TDSL REPO WORK   # phase 1 unanswered past --decompose-timeout
    python compose.py no-sampling TDSL REPO WORK  # a client without sampling
    python compose.py transcript TDSL REPO WORK   # the good run, written to WORK/transcript.md
    python compose.py --http SCENARIO ...         # the same over `serve --listen`

The server serves REPO/examples/document-analysis with `--history WORK/history.db`; each
scenario writes the `CompositionResult` it got to WORK/result.json for the Rust side, which
reads the history. A scenario asserts what it observes: it exits 0, or prints what went
wrong and exits 1.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, types

sys.path.insert(0, str(Path(__file__).resolve().parent))
import client  # noqa: E402  (the shared helpers)
from client import Failed, expect, text_of  # noqa: E402

QUERY = "Which of our two documents can be read, and how long is the first one?"
HINTS = ["claude-sonnet", "gpt-4o"]
MODEL = "scripted-model"


def server(tdsl: str, repo: Path, work: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=tdsl,
        args=[
            "serve", "--mcp", "--plans", "--compose",
            "--root", str(repo / "examples/document-analysis"),
            "--history", str(work / "history.db"),
            "--sampling-max-tokens", "2048",
            "--sampling-hint", HINTS[0], "--sampling-hint", HINTS[1],
            *extra,
        ],
    )


def answer_file(repo: Path, name: str) -> str:
    docs = repo / "examples/document-analysis/documents"
    return (repo / "tests/data/compose" / name).read_text().replace("@DOCS@", str(docs))


def phase_of(params: types.CreateMessageRequestParams) -> str:
    system = params.system_prompt or ""
    for phase, marker in (("decompose", "Phase 1, DECOMPOSE"), ("plan", "Phase 2, PLAN"),
                          ("synthesize", "Phase 4, SYNTHESIZE")):
        if marker in system:
            return phase
    raise Failed(f"a sampling request of no phase: {system[:200]!r}")


class Model:
    """The sampling callback: answers each phase from its queue (a text, an ErrorData, or
    "hang" to wait until cancelled), recording every request."""

    def __init__(self, script: dict[str, list[Any]]) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.cancelled: list[str] = []
        self.hanging = anyio.Event()

    async def __call__(self, context: Any, params: types.CreateMessageRequestParams) -> Any:
        phase = phase_of(params)
        self.requests.append({
            "phase": phase,
            "system": params.system_prompt,
            "messages": [(m.role, getattr(m.content, "text", None)) for m in params.messages],
            "max_tokens": params.max_tokens,
            "hints": [h.name for h in (params.model_preferences.hints or [])] if params.model_preferences else [],
        })
        queue = self.script.get(phase) or []
        expect(queue, f"an unexpected {phase} request (#{len(self.requests)})")
        answer = queue.pop(0)
        if isinstance(answer, types.ErrorData):
            return answer
        if answer == "hang":
            self.hanging.set()
            try:
                await anyio.sleep(60)
            except anyio.get_cancelled_exc_class():
                self.cancelled.append(phase)
                raise
            raise Failed(f"the {phase} request was never cancelled")
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=answer), model=MODEL, stop_reason="endTurn"
        )


def structured(result: Any) -> dict[str, Any]:
    expect(isinstance(result.structured_content, dict), f"no structuredContent: {result}")
    return result.structured_content


def save(work: Path, result: dict[str, Any]) -> None:
    (work / "result.json").write_text(json.dumps(result, indent=2))


async def session_with(params: StdioServerParameters, model: Model | None, body: Any) -> None:
    options: dict[str, Any] = {"client_info": types.Implementation(name="scripted-client", version="1.0")}
    if model is not None:
        options["sampling_callback"] = model
    await client.with_session(params, body, **options)


async def listed(session: ClientSession) -> set[str]:
    return {t.name for t in (await session.list_tools()).tools}


# --- scenarios -------------------------------------------------------------------------------


def good_model(repo: Path) -> Model:
    return Model({
        "decompose": [answer_file(repo, "decompose_ok.json")],
        "plan": [answer_file(repo, "plan_ok.json")],
        "synthesize": [answer_file(repo, "synthesize_ok.json")],
    })


async def good(session: ClientSession, model: Model, work: Path) -> None:
    expect("compose" in await listed(session), "compose is not listed to a client with sampling")
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    result = await session.call_tool("compose", {"query": QUERY}, progress_callback=on_progress)
    r = structured(result)
    save(work, r)
    expect(not result.is_error and r["status"] == "SUCCESS", f"the composition: {text_of(result)[:3000]}")
    # One sampling request per model phase, each with its phase's system prompt.
    expect([q["phase"] for q in model.requests] == ["decompose", "plan", "synthesize"],
           f"requests: {[q['phase'] for q in model.requests]}")
    for q in model.requests:
        expect(q["system"].startswith("You are the Tool Composer"), f"{q['phase']}'s system prompt: {q['system'][:200]!r}")
        expect(q["max_tokens"] == 2048, f"{q['phase']}: maxTokens {q['max_tokens']}")
        expect(q["hints"] == HINTS, f"{q['phase']}: hints {q['hints']}")
        expect(len(q["messages"]) == 1 and q["messages"][0][0] == "user", f"{q['phase']}: {q['messages']}")
    plan = model.requests[1]
    expect("`tool_mappings`" in plan["system"] and '"tool_mappings": [' in plan["system"],
           f"phase 2's prompt does not state tool_mappings with an example: {plan['system']!r}")
    expect("Writing a tdsl plan" in plan["messages"][0][1] and "document_validator(" in plan["messages"][0][1],
           "phase 2's message lacks the guide or the tools")
    # A notification as each phase starts, all before the result.
    expect([(v, t) for v, t, _ in progress] == [(1, 4), (2, 4), (3, 4), (4, 4)], f"progress: {progress}")
    expect(progress[1][2].startswith("phase 2/4: planning"), f"progress: {progress}")
    # The tools really ran; the model is the client's.
    expect(r["execution"]["overall_status"] == "SUCCESS" and r["execution"]["tools_succeeded"] == 2, f"{r['execution']}")
    expect(r["response"]["citations"] == ["check", "info"], f"{r['response']}")
    expect(r["model_used"] == "sampling:scripted-client", f"model_used: {r['model_used']}")
    expect(r["decomposition"]["model_used"] == f"sampling:{MODEL}", f"{r['decomposition']['model_used']}")
    expect({k: v["requests"] for k, v in r["usage"].items()} == {"decompose": 1, "plan": 1, "synthesize": 1},
           f"usage: {r['usage']}")


async def repair(session: ClientSession, model: Model, work: Path) -> None:
    result = await session.call_tool("compose", {"query": QUERY})
    r = structured(result)
    save(work, r)
    expect(not result.is_error and r["status"] == "SUCCESS", f"the composition: {text_of(result)[:3000]}")
    expect([q["phase"] for q in model.requests] == ["decompose", "plan", "plan", "synthesize"],
           f"requests: {[q['phase'] for q in model.requests]}")
    expect(r["plan"]["repair_rounds"] == 1, f"repair_rounds: {r['plan']['repair_rounds']}")
    second = model.requests[2]["messages"]
    expect([m[0] for m in second] == ["user", "assistant", "user"], f"the repair request: {second}")
    expect(second[1][1].startswith("Here is the plan"), f"the refused reply handed back: {second[1][1][:200]!r}")
    expect("it has no `tool_mappings`, `plan`, `planning_reasoning`" in second[2][1], f"the repair message: {second[2][1]!r}")
    expect(r["errors"][0].startswith("plan: round 1: the answer is not a valid execution_plan: it has no `tool_mappings`"),
           f"errors: {r['errors']}")


async def refusal(session: ClientSession, model: Model, work: Path) -> None:
    result = await session.call_tool("compose", {"query": QUERY})
    r = structured(result)
    save(work, r)
    expect(result.is_error and r["status"] == "FAILED", f"the composition: {text_of(result)[:3000]}")
    expect(r["error"] == "plan: the MCP client answered the sampling request with an error: "
           "The user declined the request (code -1)", f"error: {r['error']!r}")
    expect(r["decomposition"] is not None and r["plan"] is None and r["execution"] is None, f"kept: {r}")
    expect(len(model.requests) == 2, f"requests: {[q['phase'] for q in model.requests]}")


async def cancel(session: ClientSession, model: Model, work: Path) -> None:
    outcome: dict[str, Any] = {}

    async def call() -> None:
        outcome["result"] = await session.call_tool("compose", {"query": QUERY})

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        with anyio.fail_after(20):
            await model.hanging.wait()
        # Leaving the cancelled scope makes the SDK send `notifications/cancelled`.
        group.cancel_scope.cancel()
    expect("result" not in outcome, f"the call ended before it was cancelled: {outcome}")
    cancelled_at = time.monotonic()
    # The server withdraws the sampling request in flight: the callback is cancelled.
    with anyio.move_on_after(5):
        while not model.cancelled:
            await anyio.sleep(0.02)
    expect(model.cancelled == ["plan"], f"the sampling request was not cancelled: {model.cancelled}")
    print(f"cancel: the sampling request withdrawn {time.monotonic() - cancelled_at:.2f} s after the call's cancel")
    # No other request follows, and the server goes on.
    await anyio.sleep(0.5)
    expect(len(model.requests) == 2, f"requests after the cancel: {[q['phase'] for q in model.requests]}")
    expect("compose" in await listed(session), "the server does not answer after the cancel")


async def timeout(session: ClientSession, model: Model, work: Path) -> None:
    started = time.monotonic()
    result = await session.call_tool("compose", {"query": QUERY})
    r = structured(result)
    save(work, r)
    expect(result.is_error and r["status"] == "TIMEOUT", f"the composition: {text_of(result)[:3000]}")
    expect(r["error"] == "decompose: the model endpoint sampling/createMessage did not answer within 0.5 s (the phase's "
           "timeout)", f"error: {r['error']!r}")
    expect(time.monotonic() - started < 5, f"the answer took {time.monotonic() - started:.1f} s")
    # The request is withdrawn.
    with anyio.move_on_after(5):
        while not model.cancelled:
            await anyio.sleep(0.02)
    expect(model.cancelled == ["decompose"], f"the sampling request was not cancelled: {model.cancelled}")


async def no_sampling(session: ClientSession, work: Path) -> None:
    tools = await listed(session)
    expect("compose" not in tools and {"check_plan", "run_plan"} <= tools, f"tools without sampling: {sorted(tools)}")
    result = await session.call_tool("compose", {"query": QUERY})
    expect(result.is_error, f"compose without sampling: {result}")
    expect("did not declare the `sampling` capability" in text_of(result), f"the error: {text_of(result)!r}")


def transcript(model: Model, work: Path) -> None:
    """The good run as docs/compose.md shows it: each request (long texts cut) and answer."""

    def cut(text: str, n: int) -> str:
        return text if len(text) <= n else text[:n] + f"… ({len(text)} characters)"

    out = []
    for i, q in enumerate(model.requests, 1):
        request = {
            "method": "sampling/createMessage",
            "params": {
                "systemPrompt": cut(q["system"], 400),
                "messages": [{"role": role, "content": {"type": "text", "text": cut(text, 300)}}
                             for role, text in q["messages"]],
                "maxTokens": q["max_tokens"],
                "modelPreferences": {"hints": [{"name": h} for h in q["hints"]]},
            },
        }
        out.append(f"**Request {i} ({q['phase']})**, server → client:\n\n```json\n{json.dumps(request, indent=2)}\n```\n")
    (work / "transcript.md").write_text("\n".join(out))


def main(argv: list[str]) -> int:
    if argv[:1] == ["--http"]:
        client.HTTP = True
        argv = argv[1:]
    scenario, *rest = argv or ["?"]
    if len(rest) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    tdsl, repo, work = rest[0], Path(rest[1]), Path(rest[2])
    params = server(tdsl, repo, work)
    if scenario in ("good", "transcript"):
        model = good_model(repo)
        run = lambda: session_with(params, model, lambda s: good(s, model, work))  # noqa: E731
    elif scenario == "repair":
        bare = json.loads(answer_file(repo, "plan_ok.json"))["plan"]
        model = Model({
            "decompose": [answer_file(repo, "decompose_ok.json")],
            "plan": [f"Here is the plan:\n{json.dumps(bare)}",
                     f"Sorry, here is the whole execution_plan:\n\n```json\n{answer_file(repo, 'plan_ok.json')}\n```\n"],
            "synthesize": [answer_file(repo, "synthesize_ok.json")],
        })
        run = lambda: session_with(params, model, lambda s: repair(s, model, work))  # noqa: E731
    elif scenario == "refusal":
        model = Model({
            "decompose": [answer_file(repo, "decompose_ok.json")],
            "plan": [types.ErrorData(code=-1, message="The user declined the request")],
        })
        run = lambda: session_with(params, model, lambda s: refusal(s, model, work))  # noqa: E731
    elif scenario == "cancel":
        model = Model({"decompose": [answer_file(repo, "decompose_ok.json")], "plan": ["hang"]})
        run = lambda: session_with(params, model, lambda s: cancel(s, model, work))  # noqa: E731
    elif scenario == "timeout":
        model = Model({"decompose": ["hang"]})
        params = server(tdsl, repo, work, "--decompose-timeout", "0.5")
        run = lambda: session_with(params, model, lambda s: timeout(s, model, work))  # noqa: E731
    elif scenario == "no-sampling":
        run = lambda: session_with(params, None, lambda s: no_sampling(s, work))  # noqa: E731
    else:
        print(__doc__, file=sys.stderr)
        return 2
    if client.run_scenario(scenario, run) != 0:
        return 1
    if scenario == "transcript":
        transcript(model, work)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
