import _thread
import asyncio
import datetime
import signal
import threading
import time

import pytest

import tdsl

WORDS = ["alpha", "beta", "gamma", "delta"]


def test_run_with_python_tools(root, tools):
    out = tdsl.run("/shout.tool", root=root, args={"words": ["a", "bc"]}, tools=tools)
    assert out == {"words": ["A", "BC"], "letters": 3}


def test_tools_keyed_by_name_or_path(root):
    tools = {"up": lambda a: {"word": a["word"] * 2}, "tools/count.tool": lambda a: {"letters": 0}}
    assert tdsl.run("shout.tool", root=root, args={"words": ["x"]}, tools=tools) == {"words": ["xx"], "letters": 0}


def test_run_with_trace(root, tools):
    out, trace = tdsl.run("/shout.tool", root=root, args={"words": WORDS}, tools=tools, trace=True)
    assert out["letters"] == sum(map(len, WORDS))
    assert trace["overall_status"] == "SUCCESS"
    assert [s["step_id"] for s in trace["step_results"]] == ["up", "count"]


def test_builtin_tools_run_without_python(root):
    value = {"b": [1, 2.5, None], "a": {"x": True}}
    out = tdsl.run("/passthrough.tool", root=root, args={"value": value})
    assert out == {"value": value} and list(out["value"]) == ["b", "a"]


def test_fan_out_tools_run_side_by_side(root, tools):
    # Each child waits for all four: this only passes when the tools run concurrently,
    # i.e. the run does not hold the GIL while a tool waits.
    barrier = threading.Barrier(len(WORDS), timeout=10)

    def up(a):
        barrier.wait()
        return {"word": a["word"].upper()}

    out = tdsl.run("/shout.tool", root=root, args={"words": WORDS}, tools={**tools, "up": up}, concurrency=4)
    assert out["words"] == [w.upper() for w in WORDS]


def test_async_tools(root, tools):
    async def up(a):
        await asyncio.sleep(0.01)
        return {"word": a["word"].upper()}

    out = tdsl.run("/shout.tool", root=root, args={"words": WORDS}, tools={**tools, "up": up})
    assert out["words"] == [w.upper() for w in WORDS]


def test_tool_that_raises_fails_the_step(root, tools):
    def count(a):
        raise ValueError("no letters today")

    with pytest.raises(tdsl.RunError) as info:
        tdsl.run("/shout.tool", root=root, args={"words": ["a"]}, tools={**tools, "count": count})
    e = info.value
    assert isinstance(e, tdsl.TdslError)
    assert "step `count` failed" in str(e) and "ValueError: no letters today" in str(e)
    assert e.code == "E0803"
    assert e.trace["overall_status"] == "FAILED"
    assert e.trace["step_results"][1]["status"] == "FAILED"


def test_transient_error_is_retried(root, tools):
    calls = []

    def count(a):
        calls.append(1)
        if len(calls) == 1:
            raise tdsl.TransientError("busy")
        return {"letters": 7}

    out, trace = tdsl.run(
        "/shout.tool", root=root, args={"words": ["a"]}, tools={**tools, "count": count},
        trace=True, retries=2, retry_delay=0.1,
    )
    assert out["letters"] == 7 and len(calls) == 2
    assert trace["total_retries"] == 1


def test_permanent_error_is_not_retried(root, tools):
    calls = []

    def count(a):
        calls.append(1)
        raise RuntimeError("broken")

    with pytest.raises(tdsl.RunError, match="RuntimeError: broken"):
        tdsl.run("/shout.tool", root=root, args={"words": ["a"]}, tools={**tools, "count": count}, retries=3)
    assert len(calls) == 1


@pytest.mark.parametrize(
    "response,text",
    [
        ([1, 2], "returned a list, not a dict"),
        ("text", "returned a str, not a dict"),
        (None, "returned a NoneType, not a dict"),
        ({"letters": {1, 2}}, "$.letters is a set, which is not JSON-like"),
        ({"letters": datetime.date(2026, 1, 1)}, "$.letters is a date, which is not JSON-like"),
        ({"letters": 2**70}, "$.letters does not fit in 64 bits"),
    ],
)
def test_bad_responses(root, tools, response, text):
    with pytest.raises(tdsl.RunError) as info:
        tdsl.run("/shout.tool", root=root, args={"words": ["a"]}, tools={**tools, "count": lambda a: response})
    assert text in str(info.value)
    assert "step `count` failed" in str(info.value)


def test_cyclic_response(root, tools):
    cyclic = {"letters": 1}
    cyclic["me"] = cyclic
    with pytest.raises(tdsl.RunError, match=r"\$\.me contains itself"):
        tdsl.run("/shout.tool", root=root, args={"words": ["a"]}, tools={**tools, "count": lambda a: cyclic})


def test_step_timeout_ends_a_tool_that_never_returns(root, tools):
    release = threading.Event()

    def count(a):
        release.wait(60)  # "forever": longer than the test
        return {"letters": 0}

    started = time.monotonic()
    try:
        with pytest.raises(tdsl.RunError) as info:
            tdsl.run("/shout.tool", root=root, args={"words": ["a"]}, tools={**tools, "count": count},
                     timeout=1, retries=0, cancel_grace=0.2)
    finally:
        release.set()
    assert time.monotonic() - started < 30
    assert info.value.trace["step_results"][1]["status"] == "TIMEOUT"


def test_deadline_ends_the_run(root, tools):
    release = threading.Event()

    def up(a):
        release.wait(60)
        return {"word": "x"}

    try:
        with pytest.raises(tdsl.RunError) as info:
            tdsl.run("/shout.tool", root=root, args={"words": WORDS}, tools={**tools, "up": up},
                     deadline=0.5, cancel_grace=0.2)
    finally:
        release.set()
    assert info.value.trace["overall_status"] == "TIMEOUT"
    assert info.value.code == "E0805"


def test_keyboard_interrupt_cancels_the_run(root, tools):
    # Python's own Ctrl-C handler, whatever this process inherited: started in the background
    # by a shell (`scripts/test &`), it ignores SIGINT, and `interrupt_main` then does nothing.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        keyboard_interrupt_cancels_the_run(root, tools)
    finally:
        signal.signal(signal.SIGINT, previous)


def keyboard_interrupt_cancels_the_run(root, tools):
    release = threading.Event()

    def up(a):
        _thread.interrupt_main()  # Ctrl-C while the run is in flight
        release.wait(30)
        return {"word": "x"}

    counted = []

    def count(a):
        counted.append(a)
        return {"letters": 0}

    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            tdsl.run("/shout.tool", root=root, args={"words": ["a"]}, tools={"up": up, "count": count},
                     cancel_grace=0.2)
    finally:
        release.set()
    assert time.monotonic() - started < 20
    time.sleep(0.3)  # the abandoned `up` returns now: the cancelled run starts nothing after it
    assert counted == []


def test_keyboard_interrupt_raised_by_a_tool_propagates(root, tools):
    def up(a):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        tdsl.run("/shout.tool", root=root, args={"words": WORDS}, tools={**tools, "up": up})


def test_threads_calling_run_concurrently(root, tools):
    results = {}

    def work(i):
        words = [f"w{i}x{j}" for j in range(5)]
        results[i] = tdsl.run("/shout.tool", root=root, args={"words": words}, tools=tools)["words"]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {i: [f"W{i}X{j}" for j in range(5)] for i in range(8)}


def test_huge_and_deep_arguments(root):
    value = [{"id": i, "tags": ["a", "b"]} for i in range(100_000)]
    assert tdsl.run("/passthrough.tool", root=root, args={"value": value})["value"] == value
    deep = []
    for _ in range(50_000):
        deep = [deep]
    with pytest.raises(ValueError, match="nests deeper than 128 levels"):
        tdsl.run("/passthrough.tool", root=root, args={"value": deep})


def test_bad_options_and_arguments(root, tools):
    with pytest.raises(TypeError, match="unknown option `concurency`"):
        tdsl.run("/shout.tool", root=root, args={"words": []}, tools=tools, concurency=2)
    with pytest.raises(tdsl.TdslError) as info:
        tdsl.run("/shout.tool", root=root, args={"words": []}, tools=tools, concurrency=0)
    assert info.value.code == "E0814"
    with pytest.raises(TypeError, match="not a callable"):
        tdsl.run("/shout.tool", root=root, args={"words": []}, tools={"up": 3})
    with pytest.raises(ValueError, match="64 bits"):
        tdsl.run("/passthrough.tool", root=root, args={"value": 2**80})


def test_missing_or_invalid_tool(root, tmp_path):
    with pytest.raises(tdsl.TdslError):
        tdsl.run("/nope.tool", root=root)
    bad = tmp_path / "bad.tool"
    bad.write_text('{"instructions": [], "response_reference_map": {"x": "REF:nothing.y"}}')
    with pytest.raises(tdsl.TdslError) as info:
        tdsl.run(str(bad), root=str(tmp_path))
    assert info.value.code.startswith("E")
    assert info.value.diagnostics


def test_wrong_arguments_fail_the_run(root, tools):
    with pytest.raises(tdsl.RunError):
        tdsl.run("/shout.tool", root=root, args={"words": "not a list"}, tools=tools)


def test_run_plan(root, tools):
    plan = {
        "instructions": [
            {"execution_id": "u", "tool_definition_path": "up", "arguments": {"word": "hi"}},
            {"execution_id": "c", "tool_definition_path": "count", "arguments": {"text": "REF:u.word"}},
        ],
        "response_reference_map": {"letters": "REF:c.letters", "word": "REF:u.word"},
    }
    answer = tdsl.run_plan(plan, root=root, tools=tools)
    assert answer["status"] == "SUCCESS"
    assert answer["result"] == {"letters": 2, "word": "HI"}
    plan["instructions"][1]["arguments"]["text"] = "{{u.word}}"
    refused = tdsl.run_plan(plan, root=root, tools=tools)
    assert refused["ok"] is False and refused["diagnostics"][0]["code"] == "E1311"


def test_async_tools_while_the_caller_runs_a_loop(root, tools):
    # run() called from a coroutine (a loop is running on this thread): the async tools
    # still run, each on its own loop on the worker thread that calls it.
    async def up(a):
        await asyncio.sleep(0)
        return {"word": a["word"] + "!"}

    async def main():
        return tdsl.run("/shout.tool", root=root, args={"words": ["a", "b"]}, tools={**tools, "up": up})

    assert asyncio.run(main())["words"] == ["a!", "b!"]


def test_async_tool_that_raises(root, tools):
    async def count(a):
        raise tdsl.TransientError("try later")

    with pytest.raises(tdsl.RunError, match="TransientError: try later"):
        tdsl.run("/shout.tool", root=root, args={"words": ["a"]}, tools={**tools, "count": count},
                 retries=1, retry_delay=0.1)
