"""The hostile round on the Python package: what a careless or hostile caller does.

Each test here failed before its fix (docs/python.md, "Hostile round")."""

import copy
import os
import pickle
import subprocess
import sys
import textwrap

import pytest

import tdsl


def up(a):
    return {"word": a["word"].upper()}


def count(a):
    return {"letters": 1}


TOOLS = {"up": up, "count": count}


def shout(root, **kw):
    return tdsl.run("/shout.tool", root=root, args={"words": ["a"]}, tools=TOOLS, **kw)


def run_script(code, timeout=60):
    """Runs `code` in a fresh interpreter; returns (returncode, stdout+stderr)."""
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def test_exit_after_abandoning_a_busy_tool_does_not_crash(root):
    # A tool in a pure-Python busy loop holds the GIL by turns and never returns. The
    # deadline ends the run; the function is left running. Exiting the interpreter then
    # aborted the process (SIGSEGV/SIGABRT: CPython ended the engine's native thread with
    # pthread_exit, which unwinds through Rust frames).
    rc, out = run_script(f"""
        import tdsl
        def up(a):
            while True:
                pass
        try:
            tdsl.run("/shout.tool", root={root!r}, args={{"words": ["a"]}},
                     tools={{"up": up, "count": lambda a: {{"letters": 0}}}}, deadline=0.5, cancel_grace=0.1)
        except tdsl.RunError as e:
            print("ended", e.code)
        """)
    assert rc == 0, out
    assert "ended E0805" in out


def test_busy_tool_does_not_keep_the_engine_waiting(root):
    # The run returns after the deadline and its grace, though the function never returns.
    import time

    stop = []

    def busy(a):
        while not stop:
            pass
        return {"word": "x"}

    started = time.monotonic()
    try:
        with pytest.raises(tdsl.RunError) as info:
            tdsl.run("/shout.tool", root=root, args={"words": ["a", "b"]}, tools={**TOOLS, "up": busy},
                     deadline=0.5, cancel_grace=0.1)
    finally:
        stop.append(1)
    assert info.value.code == "E0805"
    assert time.monotonic() - started < 10


def test_tools_run_on_python_threads(root):
    import threading

    seen = []

    def up(a):
        seen.append(threading.current_thread().name)
        return {"word": a["word"]}

    tdsl.run("/shout.tool", root=root, args={"words": ["a"]}, tools={**TOOLS, "up": up})
    assert seen == ["tdsl-tool"]


@pytest.mark.parametrize("name", ["bogus", "concurency", "Deadline"])
def test_unknown_option_is_refused_even_when_none(root, name):
    # `bogus=None` was skipped before the name was looked at.
    with pytest.raises(TypeError, match=f"unknown option `{name}`"):
        shout(root, **{name: None})


@pytest.mark.parametrize(
    "option,value,kind",
    [
        ("concurrency", True, "bool"),
        ("concurrency", "4", "str"),
        ("concurrency", 1.5, "float"),
        ("deadline", "1", "str"),
        ("deadline", False, "bool"),
        ("retries", [1], "list"),
        ("cancel_grace", b"1", "bytes"),
    ],
)
def test_option_of_the_wrong_type_names_the_option(root, option, value, kind):
    with pytest.raises(TypeError, match=rf"option `{option}` must be .*, not {kind}"):
        shout(root, **{option: value})


@pytest.mark.parametrize(
    "option,value",
    [
        ("concurrency", -1),
        ("concurrency", 2**70),
        ("deadline", -1),
        ("deadline", float("nan")),
        ("deadline", float("inf")),
        ("deadline", 1e300),
        ("timeout", float("-inf")),
        ("retries", -1),
        ("retries", 10**20),
        ("retry_delay", float("nan")),
        ("max_depth", 10**30),
        ("cancel_grace", -1),
        ("cancel_grace", float("inf")),
        ("cancel_grace", float("nan")),
    ],
)
def test_option_out_of_range_is_e0814(root, option, value):
    # Negative or huge ints were OverflowErrors, and NaN, infinite or negative seconds
    # ValueErrors from Duration, none of them naming the option.
    with pytest.raises(tdsl.TdslError) as info:
        shout(root, **{option: value})
    assert info.value.code == "E0814"
    assert f"option `{option}`" in info.value.message


def test_check_takes_a_bytes_path_that_is_not_utf8(tmp_path):
    # A bytes path was iterated as a list of ints ("expected str, bytes or os.PathLike
    # object, not int").
    bad = os.path.join(os.fsencode(tmp_path), b"\xff\xfe.tool")
    with open(bad, "w") as f:
        f.write("{}")
    [d] = tdsl.check(bad)
    assert d.code == "E0507"
    with pytest.raises(TypeError, match="takes a path or an iterable of paths, not int"):
        tdsl.check(3)


def test_check_refuses_a_fifo_without_blocking(tmp_path):
    fifo = tmp_path / "f.tool"
    os.mkfifo(fifo)
    with pytest.raises(tdsl.TdslError, match="FIFO"):
        tdsl.check(fifo)


STUB_USER = '''
from typing import Any, Dict, List, Tuple
import tdsl

def up(a: Dict[str, Any]) -> Dict[str, Any]:
    return {"word": a["word"]}

v: tdsl.JSONValue = tdsl.eval("1 + 2", {"x": 1})
p: tdsl.Program = tdsl.compile("x")
r = p.eval({"x": 1})
s: str = p.source + p.result_type
ds: List[tdsl.Diagnostic] = tdsl.check(["a.tool"], root="r")
dd: Dict[str, Any] = tdsl.check_plan({}, root="r", as_dict=True)
res: Dict[str, Any] = tdsl.run("/x.tool", root="r", args={}, tools={"up": up}, concurrency=4, deadline=1.5)
pair: Tuple[Dict[str, Any], Dict[str, Any]] = tdsl.run("/x.tool", root="r", trace=True)
rp: Dict[str, Any] = tdsl.run_plan({}, root="r")
e = tdsl.RunError("m")
tr: Dict[str, Any] = e.trace
'''


def test_stubs_match_the_package(tmp_path):
    # stubtest (mypy) compares the .pyi files with the installed package: the stubs named
    # aliases the package lacked, and left out __all__ and the native _Done class.
    try:
        import mypy  # noqa: F401
    except ImportError as e:
        raise RuntimeError(f"mypy is not installed in {sys.executable}: run scripts/python-package ({e})") from e
    p = subprocess.run([sys.executable, "-m", "mypy.stubtest", "tdsl", "--ignore-disjoint-bases"],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    user = tmp_path / "user.py"
    user.write_text(STUB_USER)
    p = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(user)],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr


@pytest.mark.parametrize("work", ["run", "eval"])
def test_exit_while_a_daemon_thread_is_inside_tdsl(root, work):
    # A daemon thread inside run() or Program.eval() (the GIL released) when the main
    # thread exits: taking the GIL back aborted the process ("FATAL: exception not
    # rethrown", about one exit in two). It now waits for the process to end instead.
    code = f"""
        import threading, time, tdsl
        def up(a):
            time.sleep(0.3)
            return {{"word": "x"}}
        if {work!r} == "run":
            work = lambda: tdsl.run("/shout.tool", root={root!r}, args={{"words": ["a"] * 4}},
                                    tools={{"up": up, "count": lambda a: {{"letters": 1}}}}, concurrency=1)
        else:
            p, big = tdsl.compile("sum(array=x)"), {{"x": list(range(2_000_000))}}
            work = lambda: [p.eval(big) for _ in range(100)]
        threading.Thread(target=work, daemon=True).start()
        time.sleep(0.1)
        print("main exits")
        """
    for _ in range(4):
        rc, out = run_script(code)
        assert rc == 0 and "main exits" in out, out


def test_data_converts_a_container_held_many_times_once():
    # A list holding the same list twice, 40 levels down, is 2^40 values as a tree: its
    # conversion ran for ever (no Ctrl-C either: it checks no signals). Each container held
    # in several places is now converted once, its value shared.
    # The conversion holds the GIL: it runs in a child interpreter, under a timeout.
    try:
        rc, out = run_script("""
            import tdsl
            dag = [1]
            for _ in range(40):
                dag = [dag, dag]
            print(tdsl.eval("length(x[0][1][0])", {"x": tdsl.Data(dag)}))
            """, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("tdsl.Data of a list holding one list twice at each of 40 levels did not end in 30 s")
    assert rc == 0 and out.strip() == "2", out
    # The same dict under two keys, in a tuple and a dict: the same value each time.
    row = {"a": [1, 2], "b": {"c": None}}
    assert tdsl.Data({"x": row, "y": (row, [row])}).to_python() == {"x": row, "y": [row, [row]]}
    # The depth limit counts the levels above each place a shared container is: 100
    # levels are taken at the top, refused under 30 more.
    deep = [1]
    for _ in range(99):
        deep = [deep]
    under = deep
    for _ in range(30):
        under = [under]
    tdsl.Data([deep])
    with pytest.raises(ValueError, match="nests deeper than 128 levels"):
        tdsl.Data([deep, under])
    # A cycle is still one, shared or not.
    loop = [1]
    loop.append([loop, loop])
    with pytest.raises(ValueError, match="contains itself"):
        tdsl.Data(loop)


def test_data_pickles_and_copies():
    # `pickle`, `copy.copy` and `copy.deepcopy` raised "cannot pickle 'tdsl.Data' object"
    # (a Data passed to a multiprocessing worker, or held in a deep-copied structure).
    d = tdsl.Data({"a": [1, 2.5, None, True, "s"], "b": {}})
    again = pickle.loads(pickle.dumps(d))
    assert isinstance(again, tdsl.Data) and again.to_python() == d.to_python()
    assert tdsl.eval("x.a[1]", {"x": again}) == 2.5
    assert copy.copy(d) is d and copy.deepcopy(d) is d
    assert copy.deepcopy({"k": [d]})["k"][0] is d


# Issue 38, item 8.


def test_a_tool_returning_a_generator_fails_its_step_saying_so(root):
    # On Python 3.11 and older `asyncio.iscoroutine` is true of a generator, and it was run
    # with `asyncio.run`, which never ended (the deadline bounds the test before the fix).
    def gen(a):
        yield {"word": a["word"]}

    with pytest.raises(tdsl.RunError, match="returned a generator, not a dict"):
        tdsl.run("/shout.tool", root=root, args={"words": ["a"]}, tools={**TOOLS, "up": gen}, deadline=10,
                 retries=0)


PLAN = {
    "instructions": [{"execution_id": "u", "tool_definition_path": "up", "arguments": {"word": "hi"}}],
    "response_reference_map": {"word": "REF:u.word"},
}


@pytest.mark.parametrize("value,kind", [(True, "bool"), ("4", "str"), (1.5, "float")])
def test_run_plan_concurrency_of_the_wrong_type_is_a_type_error(root, value, kind):
    # `True` ran with 1.
    with pytest.raises(TypeError, match=rf"run_plan\(\) option `concurrency` must be an int, not {kind}"):
        tdsl.run_plan(PLAN, root=root, tools=TOOLS, concurrency=value)


@pytest.mark.parametrize("value", [-1, 0, 2**70])
def test_run_plan_concurrency_out_of_range_is_e0814(root, value):
    # -1 and 2**70 were OverflowErrors not naming the option.
    with pytest.raises(tdsl.TdslError) as info:
        tdsl.run_plan(PLAN, root=root, tools=TOOLS, concurrency=value)
    assert info.value.code == "E0814"
    assert "run_plan() option `concurrency`" in info.value.message


def test_run_plan_takes_a_concurrency_in_range(root):
    assert tdsl.run_plan(PLAN, root=root, tools=TOOLS, concurrency=2)["result"] == {"word": "HI"}


def test_a_huge_exception_text_is_cut(root):
    # A 50 MB message made a 52 MB RunError (its message and its trace).
    def boom(a):
        raise ValueError("x" * (50 * 1024 * 1024))

    with pytest.raises(tdsl.RunError) as info:
        tdsl.run("/shout.tool", root=root, args={"words": ["a"]}, tools={**TOOLS, "up": boom}, retries=0)
    message = info.value.message
    assert "ValueError: xxx" in message and "more bytes left out" in message, message[:300]
    assert len(message) < 200_000
    assert len(repr(info.value.trace)) < 1_000_000


def _concurrency(function, root, value):
    if function == "run":
        return shout(root, concurrency=value)
    return tdsl.run_plan(PLAN, root=root, tools=TOOLS, concurrency=value)


@pytest.mark.parametrize("function", ["run", "run_plan"])
@pytest.mark.parametrize("value", [-1, 0, 2**70, 1025])
def test_concurrency_out_of_range_is_a_value_error_in_run_and_run_plan(root, function, value):
    # Issue 38 item 8: out of range was a `TdslError` only, which `except ValueError` missed.
    with pytest.raises(ValueError) as info:
        _concurrency(function, root, value)
    assert isinstance(info.value, tdsl.OptionError) and isinstance(info.value, tdsl.TdslError)
    assert info.value.code == "E0814"
    assert info.value.message.startswith(f"{function}() option `concurrency`: `concurrency` must be an integer from 1 to 1024")


@pytest.mark.parametrize("function", ["run", "run_plan"])
@pytest.mark.parametrize("value,kind", [(True, "bool"), (False, "bool"), ("4", "str"), (1.0, "float")])
def test_concurrency_of_the_wrong_type_is_a_type_error_in_run_and_run_plan(root, function, value, kind):
    with pytest.raises(TypeError, match=rf"^{function}\(\) option `concurrency` must be an int, not {kind}$"):
        _concurrency(function, root, value)


def test_other_options_out_of_range_are_value_errors_too(root):
    for option, value in [("deadline", float("nan")), ("retries", 10**20), ("cancel_grace", -1)]:
        with pytest.raises(ValueError, match=f"run\\(\\) option `{option}`"):
            shout(root, **{option: value})
