"""The hostile round on the Python package: what a careless or hostile caller does.

Each test here failed before its fix (docs/python.md, "Hostile round")."""

import os
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
