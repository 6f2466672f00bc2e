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

The hostile round (docs/compose.md, "Hostile round (sampling)"): the client and its model
as an attacker.

    python compose.py huge-reply TDSL REPO WORK   # a 20 MB reply (over the 8 MiB message limit)
    python compose.py long-reply TDSL REPO WORK   # a 3 MB reply of prose, refused, handed back cut
    python compose.py deep-reply TDSL REPO WORK   # a reply of `[` nested 100,000 deep
    python compose.py image-reply TDSL REPO WORK  # an image where the text should be
    python compose.py blocks-reply TDSL REPO WORK # an array of blocks: prose, an image, the JSON
    python compose.py cut-reply TDSL REPO WORK    # stopReason maxTokens, the JSON cut short
    python compose.py model-name TDSL REPO WORK   # `model`: terminal escapes and 1 MB
    python compose.py recursion TDSL REPO WORK    # a plan that calls `compose` (and `run_plan`)
    python compose.py fan-out TDSL REPO WORK      # a plan fanning one step out 5,000 times
    python compose.py stray-answers TDSL REPO WORK  # answers with unknown ids, twice, late
    python compose.py busy TDSL REPO WORK         # a second compose over --max-calls 1
    python compose.py big-query TDSL REPO WORK    # a 10 MB query
    python compose.py secret TDSL REPO WORK       # a server secret, --clean-env: never sent
    python compose.py disconnect TDSL REPO WORK   # the client goes away mid-execute

The server serves REPO/examples/document-analysis with `--history WORK/history.db`; each
scenario writes the `CompositionResult` it got to WORK/result.json for the Rust side, which
reads the history. A scenario asserts what it observes: it exits 0, or prints what went
wrong and exits 1.
"""

from __future__ import annotations

import json
import os
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
        self.write: Any = None

    async def __call__(self, context: Any, params: types.CreateMessageRequestParams) -> Any:
        phase = phase_of(params)
        self.requests.append({
            "phase": phase,
            "id": context.request_id,
            "system": params.system_prompt,
            "messages": [(m.role, getattr(m.content, "text", None)) for m in params.messages],
            "max_tokens": params.max_tokens,
            "hints": [h.name for h in (params.model_preferences.hints or [])] if params.model_preferences else [],
        })
        queue = self.script.get(phase) or []
        expect(queue, f"an unexpected {phase} request (#{len(self.requests)})")
        answer = queue.pop(0)
        if callable(answer):
            answer = await answer(context, params)
        if isinstance(answer, (types.ErrorData, types.CreateMessageResult, types.CreateMessageResultWithTools)):
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


async def session_with(params: StdioServerParameters, model: Model | None, body: Any,
                       name: str = "scripted-client") -> None:
    options: dict[str, Any] = {"client_info": types.Implementation(name=name, version="1.0")}
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


# --- the hostile round ---------------------------------------------------------------------


def reply(text: str, model: str = MODEL, stop: str = "endTurn") -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text=text), model=model, stop_reason=stop
    )


async def composed(session: ClientSession, query: str = QUERY) -> tuple[Any, dict[str, Any], float]:
    """One `compose` call: the result, its CompositionResult (saved) and how long it took."""
    started = time.monotonic()
    result = await session.call_tool("compose", {"query": query})
    r = structured(result)
    return result, r, time.monotonic() - started


def hostile_root(work: Path) -> Path:
    """A tool root of WORK/root: `echo` (builtin), `slow` (writes its pid to WORK/slow.pid,
    then sleeps a minute), `env` (answers the variable TDSL_HOSTILE_SECRET, or `unset`)."""
    root = work / "root"
    (root / "tools").mkdir(parents=True, exist_ok=True)
    (root / "slow.sh").write_text(f"echo $$ > {work / 'slow.pid'}\nexec sleep 60\n")
    (root / "env.sh").write_text('printf \'{"secret": "%s"}\\n\' "${TDSL_HOSTILE_SECRET:-unset}"\n')
    tools = {
        "echo": {"description": "Answers its arguments", "arguments": [{"name": "text", "type_name": "any", "required": True}],
                 "responses": [{"name": "text", "type_name": "any", "required": True}],
                 "system_event_endpoint": "builtin:echo"},
        "slow": {"description": "Takes a minute", "arguments": [],
                 "responses": [{"name": "done", "type_name": "boolean", "required": True}],
                 "system_event_endpoint": f"exec:/bin/sh {root / 'slow.sh'}"},
        "env": {"description": "Tells a variable of its environment", "arguments": [],
                "responses": [{"name": "secret", "type_name": "string", "required": True}],
                "system_event_endpoint": f"exec:/bin/sh {root / 'env.sh'}"},
    }
    for name, tool in tools.items():
        (root / "tools" / f"{name}.tool").write_text(json.dumps(tool))
    return root


UPSTREAM_TOKEN = "tok-ECHOCHECK-7d3e41b09a"


def echoing_upstream(work: Path) -> tuple[str, Path]:
    """A fake Streamable HTTP MCP server on a loopback port whose tool `leak` answers the
    `Authorization` header it got, and whose listing echoes it too (tests/secrets.rs's
    `Echoing`); its URL and a token file for `--upstream-token`."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def answer(self, status: int, body: dict[str, Any] | None) -> None:
            data = json.dumps(body).encode() if body is not None else b""
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Mcp-Session-Id", "s-1")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_DELETE(self) -> None:  # noqa: N802 (http.server's name)
            self.answer(200, None)

        def do_GET(self) -> None:  # noqa: N802
            self.answer(405, None)

        def do_POST(self) -> None:  # noqa: N802
            auth = self.headers.get("Authorization", "")
            request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"null")
            if "id" not in request:
                return self.answer(202, None)
            method = request.get("method")
            if method == "initialize":
                result: dict[str, Any] = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                                          "serverInfo": {"name": "echoing", "version": "1"}}
            elif method == "tools/list":
                result = {"tools": [{"name": "leak", "description": f"Checks {auth}", "inputSchema": {"type": "object"},
                                     "outputSchema": {"type": "object", "properties": {"seen": {"type": "string"}},
                                                      "required": ["seen"]}}]}
            elif method == "tools/call":
                result = {"content": [{"type": "text", "text": json.dumps({"seen": auth})}],
                          "structuredContent": {"seen": auth}}
            else:
                result = {}
            self.answer(200, {"jsonrpc": "2.0", "id": request["id"], "result": result})

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    token = work / "upstream.token"
    token.write_text(UPSTREAM_TOKEN + "\n")
    token.chmod(0o600)
    return f"http://127.0.0.1:{httpd.server_address[1]}/mcp", token


def plan_of(check: dict[str, Any], info: dict[str, Any]) -> str:
    """An execution_plan of two steps, `check` then `info` (what synthesize_ok.json cites)."""
    mapping = [
        {"sub_question_id": "sq_1", "tool_name": check["tool_definition_path"], "tool_category": "DESCRIPTIVE",
         "agent_name": "tdsl", "confidence": 0.9, "execution_ids": ["check"]},
        {"sub_question_id": "sq_2", "tool_name": info["tool_definition_path"], "tool_category": "DESCRIPTIVE",
         "agent_name": "tdsl", "confidence": 0.9, "execution_ids": ["info"]},
    ]
    plan = {"instructions": [{"execution_id": "check", **check}, {"execution_id": "info", **info}]}
    return json.dumps({"tool_mappings": mapping, "plan": plan, "planning_reasoning": "check, then info."})


def hostile_server(tdsl: str, repo: Path, work: Path, *extra: str, root: Path | None = None) -> StdioServerParameters:
    params = server(tdsl, repo, work, *extra)
    if root is not None:
        at = params.args.index("--root")
        params.args[at + 1] = str(root)
    return params


async def huge_reply(session: ClientSession, model: Model, work: Path) -> None:
    # 20 MB of text: over the server's message limit (8 MiB). The request fails at once,
    # naming the limit; it does not wait for the phase's timeout (30 s here).
    result, r, took = await composed(session)
    save(work, r)
    expect(result.is_error and r["status"] == "FAILED", f"the composition: {text_of(result)[:2000]}")
    expect(r["error"].startswith("decompose: the model endpoint sampling/createMessage: the client's answer could not "
                                 "be read: the message is longer than the server's limit of 8388608 bytes"),
           f"error: {r['error']!r}")
    expect(took < 15, f"the failure took {took:.1f} s (the phase's timeout is 30 s)")
    expect(len(model.requests) == 1, f"requests: {[q['phase'] for q in model.requests]}")
    # The server goes on.
    expect("compose" in await listed(session), "the server does not answer after the huge reply")


async def deep_reply(session: ClientSession, model: Model, work: Path) -> None:
    result, r, _ = await composed(session)
    save(work, r)
    expect(result.is_error and r["status"] == "FAILED", f"the composition: {text_of(result)[:2000]}")
    expect([q["phase"] for q in model.requests] == ["decompose", "decompose"], f"requests: {model.requests}")
    expect("recursion limit exceeded" in r["errors"][0], f"errors: {r['errors']}")


async def long_reply(session: ClientSession, model: Model, work: Path) -> None:
    # A 3 MB reply of prose, refused: the repair round hands it back cut (at twice the plan
    # limit, 512 KiB), not whole; the second reply is read.
    result, r, _ = await composed(session)
    save(work, r)
    expect(not result.is_error and r["status"] == "SUCCESS", f"the composition: {text_of(result)[:2000]}")
    echoed = model.requests[1]["messages"][1][1]
    expect(len(echoed) < 600_000 and echoed.endswith("(cut here: the reply was 3000013 bytes, more than any valid "
                                                      "answer)"), f"the echo: {len(echoed)} characters, {echoed[-200:]!r}")


async def image_reply(session: ClientSession, model: Model, work: Path) -> None:
    result, r, _ = await composed(session)
    save(work, r)
    expect(result.is_error and r["status"] == "FAILED", f"the composition: {text_of(result)[:2000]}")
    expect(r["error"] == "decompose: the model endpoint sampling/createMessage: the reply holds no text (its content: "
           "`image`): the composer reads the model's text", f"error: {r['error']!r}")
    expect(len(model.requests) == 1, f"requests: {[q['phase'] for q in model.requests]}")


async def blocks_reply(session: ClientSession, model: Model, work: Path) -> None:
    result, r, _ = await composed(session)
    save(work, r)
    expect(not result.is_error and r["status"] == "SUCCESS", f"the composition: {text_of(result)[:2000]}")
    expect([q["phase"] for q in model.requests] == ["decompose", "plan", "synthesize"], f"{model.requests}")


async def cut_reply(session: ClientSession, model: Model, work: Path) -> None:
    result, r, _ = await composed(session)
    save(work, r)
    expect(result.is_error and r["status"] == "FAILED", f"the composition: {text_of(result)[:2000]}")
    expect(r["error"] == "decompose: the model endpoint sampling/createMessage: the reply was cut at maxTokens (2048 "
           "tokens, stopReason `maxTokens`) before it held a whole decomposition_result: raise --sampling-max-tokens",
           f"error: {r['error']!r}")
    expect(len(model.requests) == 1, f"requests: {[q['phase'] for q in model.requests]}")


async def model_name(session: ClientSession, model: Model, work: Path) -> None:
    result, r, _ = await composed(session)
    save(work, r)
    expect(not result.is_error and r["status"] == "SUCCESS", f"the composition: {text_of(result)[:2000]}")
    for used in (r["decomposition"]["model_used"], r["model_used"]):
        expect(used.startswith("sampling:\\u001b]0;owned\\u0007") and len(used) <= 220 and used.endswith("…"),
               f"model_used: {used[:300]!r} ({len(used)} characters)")
    expect(len(text_of(result)) < 100_000, f"the result is {len(text_of(result))} characters")


async def recursion(session: ClientSession, model: Model, work: Path) -> None:
    result, r, _ = await composed(session)
    save(work, r)
    expect(result.is_error and r["status"] == "FAILED", f"the composition: {text_of(result)[:2000]}")
    expect(r["plan"] is None and r["execution"] is None, f"something ran: {text_of(result)[:2000]}")
    problems = " ".join(r["errors"])
    for name in ("compose", "run_plan"):
        expect(f"`{name}`" in problems, f"the refusal does not name {name}: {r['errors']}")
    expect(len(model.requests) == 2, f"requests: {[q['phase'] for q in model.requests]}")
    # What the model was shown to plan with does not offer them.
    listing = model.requests[1]["messages"][0][1]
    expect("compose(" not in listing and "run_plan(" not in listing, "the listing offers compose or run_plan")


async def fan_out(session: ClientSession, model: Model, work: Path) -> None:
    result, r, took = await composed(session)
    save(work, r)
    execution = r["execution"] or {}
    expect(execution.get("overall_status") == "FAILED", f"the plan's run: {text_of(result)[:3000]}")
    expect("1000" in json.dumps(execution) or "1,000" in json.dumps(execution), f"no limit named: {execution}")
    expect(took < 30, f"the composition took {took:.1f} s")
    synthesis = " ".join(m[1] for m in model.requests[-1]["messages"]) if model.requests[-1]["phase"] == "synthesize" else ""
    expect(len(synthesis) < 200_000, f"phase 4's request is {len(synthesis)} characters")


async def session_raw(params: StdioServerParameters, model: Model, body: Any) -> None:
    """A session over stdio whose model can also write raw messages (`model.write`)."""
    from mcp.client.stdio import stdio_client

    async with stdio_client(params) as (read, write):
        model.write = write
        options: dict[str, Any] = {"client_info": types.Implementation(name="scripted-client", version="1.0")}
        async with ClientSession(read, write, sampling_callback=model, **options) as session:
            await session.initialize()
            await body(session)


async def raw_answer(model: Model, request_id: Any, text: str) -> None:
    from mcp.shared.message import SessionMessage
    from mcp.types.jsonrpc import JSONRPCResponse

    result = {"role": "assistant", "content": {"type": "text", "text": text}, "model": "stray"}
    await model.write.send(SessionMessage(JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result)))


def stray_model(repo: Path) -> Model:
    """Phase 1 unanswered past its timeout; then a composition whose client also sends
    answers nobody asked for: before phase 1's answer, one for an id never used and phase
    1's own answer (so the real one comes twice); before phase 4's, a bad plan with phase
    2's id (answered already) and the late answer to the withdrawn request."""
    good = {k: answer_file(repo, f"{k}_ok.json") for k in ("decompose", "plan", "synthesize")}
    bad_plan = json.dumps({"tool_mappings": [], "plan": {"instructions": []}, "planning_reasoning": "stray"})

    async def decompose(context: Any, params: Any) -> Any:
        await raw_answer(model, 999_999, bad_plan)
        await raw_answer(model, "never-asked", bad_plan)
        await raw_answer(model, context.request_id, good["decompose"])
        return reply(good["decompose"])

    async def synthesize(context: Any, params: Any) -> Any:
        plan_id = model.requests[-2]["id"]
        await raw_answer(model, plan_id, bad_plan)
        await raw_answer(model, model.requests[0]["id"], good["decompose"])
        return reply(good["synthesize"])

    model = Model({"decompose": ["hang", decompose], "plan": [good["plan"]], "synthesize": [synthesize]})
    return model


async def stray_answers(session: ClientSession, model: Model, work: Path) -> None:
    result, r, _ = await composed(session)
    expect(r["status"] == "TIMEOUT", f"the first composition: {text_of(result)[:2000]}")
    with anyio.move_on_after(5):
        while not model.cancelled:
            await anyio.sleep(0.02)
    expect(model.cancelled == ["decompose"], f"phase 1's request was not withdrawn: {model.cancelled}")
    result, r, _ = await composed(session)
    save(work, r)
    expect(not result.is_error and r["status"] == "SUCCESS", f"the composition: {text_of(result)[:2000]}")
    expect(r["plan"]["repair_rounds"] == 0 and r["errors"] == [], f"a stray answer was taken: {r['errors']}")
    expect(r["response"]["citations"] == ["check", "info"], f"{r['response']}")
    expect([q["phase"] for q in model.requests] == ["decompose", "decompose", "plan", "synthesize"],
           f"requests: {[q['phase'] for q in model.requests]}")
    expect("compose" in await listed(session), "the server does not answer after the stray answers")


async def busy(session: ClientSession, model: Model, work: Path) -> None:
    # `--max-calls 1`: one composition waits in phase 1; a second `compose` is refused at
    # once over HTTP (-32001), queued over stdio.
    outcome: dict[str, Any] = {}

    async def first() -> None:
        outcome["first"] = await session.call_tool("compose", {"query": QUERY})

    async with anyio.create_task_group() as group:
        group.start_soon(first)
        with anyio.fail_after(20):
            await model.hanging.wait()
        try:
            with anyio.fail_after(10):
                second = await session.call_tool("compose", {"query": QUERY})
            outcome["second"] = second
        except Exception as e:  # noqa: BLE001 (the SDK raises the JSON-RPC error)
            outcome["refused"] = e
        group.cancel_scope.cancel()
    refused = outcome.get("refused")
    expect(refused is not None and "-32001" in repr(getattr(refused, "error", refused)) or
           "as many tool calls as it allows" in str(refused), f"the second compose: {outcome}")
    expect(len(model.requests) == 1, f"the second compose asked the model: {model.requests}")


async def big_query(session: ClientSession, model: Model, work: Path) -> None:
    try:
        await session.call_tool("compose", {"query": "q" * 10_000_000})
        raise Failed("a 10 MB query was taken")
    except Failed:
        raise
    except Exception as e:  # noqa: BLE001 (the SDK raises the JSON-RPC error)
        expect("longer than the server's limit" in str(e) or "413" in str(e), f"the refusal: {e!r}")
    expect(model.requests == [], f"the model was asked: {len(model.requests)}")
    expect("compose" in await listed(session), "the server does not answer after the big query")


async def secret(session: ClientSession, model: Model, work: Path) -> None:
    result, r, _ = await composed(session)
    save(work, r)
    expect(not result.is_error and r["status"] == "SUCCESS", f"the composition: {text_of(result)[:3000]}")
    expect(r["execution"]["tools_succeeded"] == 2, f"{r['execution']}")
    sent = json.dumps(model.requests) + text_of(result)
    expect(SECRET not in sent, "the server's secret reached the client")
    expect("ECHOCHECK" not in sent, "the upstream's token reached the client")
    # The tool ran, without the variable (--clean-env), and the upstream said the header it
    # got: phase 2 was shown the listing, phase 4 both answers, each with nothing to hide.
    expect("Checks Bearer [redacted]" in model.requests[1]["messages"][0][1], "phase 2's listing lacks web/leak")
    phase4 = model.requests[-1]["messages"][0][1]
    expect("unset" in phase4 and "Bearer [redacted]" in phase4, f"phase 4 was not shown the answers: {phase4[-3000:]}")


class RawHttp:
    """A client of `serve --listen` without the SDK (which sends `notifications/cancelled`
    when a call is dropped, and gives up on a 413): `tdsl` started with `--listen
    127.0.0.1:0`, one session, raw JSON-RPC over POST and the SSE streams of the answers."""

    def __init__(self, params: StdioServerParameters) -> None:
        import subprocess

        import httpx2 as httpx

        self.process = subprocess.Popen([params.command, *params.args, "--listen", "127.0.0.1:0"],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                        text=True)
        assert self.process.stderr is not None
        line = self.process.stderr.readline()
        expect("over MCP at " in line, f"no address: {line!r}")
        self.url = line.split("over MCP at ", 1)[1].split()[0]
        self.http = httpx.Client(timeout=60)
        self.headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        with self.stream({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {"sampling": {}},
                "clientInfo": {"name": "raw-client", "version": "1"}}}) as r:
            session_id = r.headers["mcp-session-id"]
            expect(any(m.get("id") == "init" for m in self.messages(r)), "no initialize answer")
        self.headers |= {"mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"}
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def stream(self, message: dict[str, Any]) -> Any:
        return self.http.stream("POST", self.url, headers=self.headers, json=message)

    def post(self, message: Any) -> Any:
        body = message if isinstance(message, bytes) else json.dumps(message).encode()
        return self.http.post(self.url, headers=self.headers, content=body)

    @staticmethod
    def messages(response: Any) -> Any:
        for text in response.iter_lines():
            if text.startswith("data:") and text[5:].strip():
                yield json.loads(text[5:])

    def compose(self) -> Any:
        return self.stream({"jsonrpc": "2.0", "id": "call", "method": "tools/call",
                            "params": {"name": "compose", "arguments": {"query": QUERY}}})

    def close(self) -> None:
        import subprocess

        self.http.close()
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def answer_body(request_id: Any, text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": {
        "role": "assistant", "content": {"type": "text", "text": text}, "model": MODEL}}


def huge_reply_http(params: StdioServerParameters, work: Path) -> None:
    """Over HTTP: a reply of 5 MB (over the 4 MiB body limit) is answered 413, and the
    sampling request it answers fails at once rather than at its phase's timeout."""
    raw = RawHttp(params)
    try:
        with raw.compose() as call:
            started = time.monotonic()
            for message in raw.messages(call):
                if message.get("method") == "sampling/createMessage":
                    refused = raw.post(answer_body(message["id"], "x" * 5_000_000))
                    expect(refused.status_code == 413, f"a 5 MB answer: {refused.status_code}")
                elif message.get("id") == "call":
                    r = message["result"]["structuredContent"]
                    save(work, r)
                    expect(r["status"] == "FAILED" and "its body is larger than the server's limit of 4194304 bytes"
                           in r["error"], f"error: {r['error']!r}")
                    took = time.monotonic() - started
                    expect(took < 15, f"the failure took {took:.1f} s (the phase's timeout is 30 s)")
                    return
        raise Failed("the call's stream ended without its result")
    finally:
        raw.close()


def disconnect_http(params: StdioServerParameters, work: Path, repo: Path) -> None:
    """Over HTTP, without the SDK (which would send `notifications/cancelled` first): a raw
    client answers the sampling requests on the `compose` call's stream, then, while the
    plan's program runs, drops the stream and ends its session (`DELETE`). The server stays
    up; the program is killed."""
    raw = RawHttp(params)
    try:
        answers = {"Phase 1, DECOMPOSE": answer_file(repo, "decompose_ok.json"),
                   "Phase 2, PLAN": plan_of({"tool_definition_path": "slow", "arguments": {}},
                                            {"tool_definition_path": "echo", "arguments": {"text": "REF:check.done"}})}
        with raw.compose() as call:
            asked = 0
            for message in raw.messages(call):
                if message.get("method") != "sampling/createMessage":
                    continue
                text = next(v for k, v in answers.items() if k in message["params"]["systemPrompt"])
                raw.post(answer_body(message["id"], text))
                asked += 1
                if asked == 2:
                    break
            started = time.monotonic()
            while not (work / "slow.pid").exists() or not (work / "slow.pid").read_text().strip():
                expect(time.monotonic() - started < 30, "the plan's program never started")
                time.sleep(0.05)
        # The call's stream is dropped (the MCP spec: not a cancellation); the session ends.
        gone = raw.http.delete(raw.url, headers=raw.headers)
        expect(gone.status_code < 300, f"DELETE: {gone.status_code} {gone.text}")
        expect_killed_now(work)
        # The server answers on: a new session opens.
        again = raw.http.post(raw.url, headers={k: v for k, v in raw.headers.items() if k != "mcp-session-id"},
                              json={"jsonrpc": "2.0", "id": "again", "method": "initialize", "params": {
                                  "protocolVersion": "2025-11-25", "capabilities": {},
                                  "clientInfo": {"name": "x", "version": "1"}}})
        expect(again.status_code == 200, f"the server after the DELETE: {again.status_code}")
    finally:
        raw.close()


def expect_killed_now(work: Path) -> None:
    pid = int((work / "slow.pid").read_text())
    started = time.monotonic()
    while time.monotonic() - started < 10:
        if not alive(pid):
            print(f"disconnect: the plan's program ended {time.monotonic() - started:.2f} s after the client left")
            return
        time.sleep(0.05)
    raise Failed(f"the plan's program (pid {pid}) still runs 10 s after the client left")


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def disconnect_stdio(params: StdioServerParameters, work: Path, repo: Path) -> None:
    """Over stdio, without the SDK: a raw client closes its end of the pipes (no
    `notifications/cancelled`), first while phase 1's request waits for it, then, in a second
    server on the same history, while the plan's program runs."""
    answers = {"Phase 1, DECOMPOSE": answer_file(repo, "decompose_ok.json"),
               "Phase 2, PLAN": plan_of({"tool_definition_path": "slow", "arguments": {}},
                                        {"tool_definition_path": "echo", "arguments": {"text": "REF:check.done"}})}
    leave_stdio(params, answers, 0, lambda: None)

    def program_started() -> None:
        started = time.monotonic()
        while not (work / "slow.pid").exists() or not (work / "slow.pid").read_text().strip():
            expect(time.monotonic() - started < 30, "the plan's program never started")
            time.sleep(0.05)

    leave_stdio(params, answers, 2, program_started)
    expect_killed_now(work)


def leave_stdio(params: StdioServerParameters, answers: dict[str, str], asked: int, then: Any) -> None:
    """Starts the server, calls `compose`, answers `asked` sampling requests from `answers`,
    waits for the next (or for `then`), and closes the pipes: the server must exit 0."""
    import subprocess

    process = subprocess.Popen([params.command, *params.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None

    def send(message: dict[str, Any]) -> None:
        process.stdin.write((json.dumps(message) + "\n").encode())
        process.stdin.flush()

    send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"sampling": {}},
        "clientInfo": {"name": "raw-client", "version": "1"}}})
    expect(json.loads(process.stdout.readline())["id"] == "init", "no initialize answer")
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": "call", "method": "tools/call",
          "params": {"name": "compose", "arguments": {"query": QUERY}}})
    seen = 0
    while seen <= asked:
        line = process.stdout.readline()
        expect(line, "the server closed its output")
        message = json.loads(line)
        if message.get("method") != "sampling/createMessage":
            continue
        seen += 1
        if seen <= asked:
            text = next(v for k, v in answers.items() if k in message["params"]["systemPrompt"])
            send({"jsonrpc": "2.0", "id": message["id"], "result": {
                "role": "assistant", "content": {"type": "text", "text": text}, "model": MODEL}})
        if seen == asked:
            then()
            break
    process.stdin.close()
    process.stdout.close()
    code = process.wait(15)
    expect(code == 0, f"the server exited with {code}: {process.stderr.read().decode()[-2000:]}")


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


SECRET = "tdsl-hostile-s3cr3t-7f2a9c"
HOSTILE = ("huge-reply", "long-reply", "deep-reply", "image-reply", "blocks-reply", "cut-reply", "model-name", "recursion",
           "fan-out", "stray-answers", "busy", "big-query", "secret", "disconnect")


def hostile(scenario: str, tdsl: str, repo: Path, work: Path) -> tuple[Any, Model]:
    """The run of a scenario of the hostile round, and its model."""
    good = {k: answer_file(repo, f"{k}_ok.json") for k in ("decompose", "plan", "synthesize")}
    image = types.ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png")
    root = hostile_root(work)
    params = server(tdsl, repo, work)
    body: Any
    if scenario == "huge-reply":
        model = Model({"decompose": ["x" * 20_000_000]})
        params = server(tdsl, repo, work, "--decompose-timeout", "30")
        if client.HTTP:
            return (lambda: anyio.to_thread.run_sync(huge_reply_http, params, work)), model
        body = huge_reply
    elif scenario == "deep-reply":
        model = Model({"decompose": ["[" * 100_000, "[" * 100_000]})
        body = deep_reply
    elif scenario == "long-reply":
        model = Model({"decompose": ["Here you go: " + "x" * 3_000_000, good["decompose"]], "plan": [good["plan"]],
                       "synthesize": [good["synthesize"]]})
        body = long_reply
    elif scenario == "image-reply":
        model = Model({"decompose": [types.CreateMessageResult(role="assistant", content=image, model=MODEL)]})
        body = image_reply
    elif scenario == "blocks-reply":
        blocks = [types.TextContent(type="text", text="Here it is:"), image,
                  types.TextContent(type="text", text=good["decompose"])]
        model = Model({"decompose": [types.CreateMessageResultWithTools(role="assistant", content=blocks, model=MODEL)],
                       "plan": [good["plan"]], "synthesize": [good["synthesize"]]})
        body = blocks_reply
    elif scenario == "cut-reply":
        model = Model({"decompose": [reply(good["decompose"][:200], stop="maxTokens")]})
        body = cut_reply
    elif scenario == "model-name":
        evil = "\x1b]0;owned\x07" + "m" * 1_000_000
        model = Model({"decompose": [reply(good["decompose"], model=evil)], "plan": [good["plan"]],
                       "synthesize": [good["synthesize"]]})
        return (lambda: session_with(params, model, lambda s: model_name(s, model, work), name=evil)), model
    elif scenario == "recursion":
        plan = plan_of({"tool_definition_path": "compose", "arguments": {"query": "again, and again"}},
                       {"tool_definition_path": "run_plan", "arguments": {"plan": {"instructions": []}}})
        model = Model({"decompose": [good["decompose"]], "plan": [plan]})
        params = server(tdsl, repo, work, "--repair-rounds", "0")
        body = recursion
    elif scenario == "fan-out":
        plan = plan_of({"tool_definition_path": "echo", "arguments": {"text": [f"s{i}" for i in range(5000)]}},
                       {"tool_definition_path": "echo", "arguments": {},
                        "parallel_execution": {"iterate_over": "REF:check.text", "child_argument_name": "text"}})
        model = Model({"decompose": [good["decompose"]], "plan": [plan], "synthesize": [good["synthesize"]]})
        params = hostile_server(tdsl, repo, work, root=root)
        body = fan_out
    elif scenario == "stray-answers":
        model = stray_model(repo)
        params = server(tdsl, repo, work, "--decompose-timeout", "3")
        return (lambda: session_raw(params, model, lambda s: stray_answers(s, model, work))), model
    elif scenario == "busy":
        model = Model({"decompose": ["hang"]})
        params = server(tdsl, repo, work, "--max-calls", "1")
        body = busy
    elif scenario == "big-query":
        model = good_model(repo)
        body = big_query
    elif scenario == "secret":
        os.environ["TDSL_HOSTILE_SECRET"] = SECRET
        url, token = echoing_upstream(work)
        plan = plan_of({"tool_definition_path": "env", "arguments": {}},
                       {"tool_definition_path": "web/leak", "arguments": {}})
        model = Model({"decompose": [good["decompose"]], "plan": [plan], "synthesize": [good["synthesize"]]})
        params = hostile_server(tdsl, repo, work, "--clean-env", "--upstream", f"web={url}",
                                "--upstream-token", f"web={token}", root=root)
        params.env = dict(os.environ)
        body = secret
    else:  # disconnect
        plan = plan_of({"tool_definition_path": "slow", "arguments": {}},
                       {"tool_definition_path": "echo", "arguments": {"text": "REF:check.done"}})
        model = Model({"decompose": [good["decompose"]], "plan": [plan]})
        params = hostile_server(tdsl, repo, work, root=root)
        if client.HTTP:
            return (lambda: anyio.to_thread.run_sync(disconnect_http, params, work, repo)), model
        return (lambda: anyio.to_thread.run_sync(disconnect_stdio, params, work, repo)), model
    return (lambda: session_with(params, model, lambda s: body(s, model, work))), model


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
    elif scenario in HOSTILE:
        run, model = hostile(scenario, tdsl, repo, work)
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
