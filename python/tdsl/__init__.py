"""tdsl from Python: evaluate expressions, check ``.tool`` files and plans, and run
composites whose primitive tools are Python functions.

Values cross as Python objects (dict, list, tuple, str, int, float, bool, None; dict key
order kept; integers within 64 bits), or as a ``tdsl.Data`` converted once and passed many
times. Evaluation and runs release the GIL; tool functions
are called with it held, from the engine's worker threads. See ``docs/python.md``.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Union

from . import _tdsl
from ._errors import OptionError, RunError, TdslError, TransientError
from ._tdsl import Data, Program

__all__ = [
    "Data",
    "Diagnostic",
    "OptionError",
    "Program",
    "RunError",
    "TdslError",
    "TransientError",
    "check",
    "check_plan",
    "compile",
    "eval",
    "run",
    "run_plan",
]

__version__ = "0.1.0"

PathLike = Union[str, "os.PathLike[str]"]
# The type aliases the stubs name (a JSON-like value; a tool function).
JSONValue = Union[None, bool, int, float, str, List[Any], Dict[str, Any]]
Tool = Callable[[Dict[str, Any]], Any]


class Diagnostic:
    """One finding of a check: ``code`` (``E0203``), ``severity`` (``"error"`` or
    ``"warning"``), ``message``, the 1-based ``line``/``column`` to
    ``end_line``/``end_column``, ``help`` (or None), ``file``; for plans also ``pointer`` (a
    JSON pointer to the value) and ``range`` (characters inside a string). ``str()`` is the
    rendered text, as ``tdsl check`` prints it."""

    __slots__ = (
        "code",
        "severity",
        "message",
        "file",
        "line",
        "column",
        "end_line",
        "end_column",
        "help",
        "pointer",
        "range",
        "rendered",
    )

    def __init__(self, d: Mapping[str, Any]) -> None:
        self.code: str = d["code"]
        self.severity: str = d["severity"]
        self.message: str = d["message"]
        self.file: Optional[str] = d.get("file")
        self.line: int = d["line"]
        self.column: int = d["column"]
        self.end_line: int = d["end_line"]
        self.end_column: int = d["end_column"]
        self.help: Optional[str] = d.get("help")
        self.pointer: Optional[str] = d.get("pointer")
        self.range: Optional[List[int]] = d.get("range")
        self.rendered: str = d.get("rendered") or f"{self.severity}[{self.code}]: {self.message}"

    def to_dict(self) -> Dict[str, Any]:
        """The diagnostic as a dict (the objects of ``tdsl check --format json``)."""
        return {k: getattr(self, k) for k in self.__slots__}

    def __str__(self) -> str:
        return self.rendered

    def __repr__(self) -> str:
        return f"<Diagnostic {self.code} {self.severity} {self.line}:{self.column} {self.message!r}>"


def eval(expr: str, vars: Optional[Union[Dict[str, Any], Data]] = None) -> Any:  # noqa: A001
    """Compiles and evaluates ``expr`` with ``vars``; with ``vars`` given, names the
    expression reads must be among them (a misspelt name is ``E0101``). Raises
    ``TdslError`` on a compile or evaluation error."""
    return _tdsl.eval(expr, vars)


def compile(expr: str) -> Program:  # noqa: A001
    """Compiles ``expr`` once; ``Program.eval(vars)`` evaluates it, from any thread."""
    return _tdsl.compile(expr)


def check(path_or_paths: Union[PathLike, Iterable[PathLike]], root: Optional[PathLike] = None) -> List[Diagnostic]:
    """Checks ``.tool`` files (one path or several; a folder: every ``.tool`` file under
    it) and returns every diagnostic, warnings included. With ``root``, callees resolve
    under it and a missing one is an error; without, under the current directory and a
    missing callee is not reported (as ``tdsl check``)."""
    if isinstance(path_or_paths, (str, bytes, os.PathLike)):
        items: List[Any] = [path_or_paths]
    else:
        try:
            items = list(path_or_paths)
        except TypeError:
            raise TypeError(
                f"check() takes a path or an iterable of paths, not {type(path_or_paths).__name__}"
            ) from None
    # Bytes paths (a file name that is not UTF-8) become str with surrogate escapes.
    paths = [os.fsdecode(p) for p in items]
    files: List[str] = []
    for p in paths:
        if os.path.isdir(p):
            for dirpath, _dirs, names in sorted(os.walk(p)):
                files.extend(os.path.join(dirpath, n) for n in sorted(names) if n.endswith(".tool"))
        else:
            files.append(p)
    found = _tdsl.check_files(files, None if root is None else os.fspath(root))
    return [Diagnostic(d) for d in found]


def check_plan(
    plan: Union[Dict[str, Any], str],
    root: PathLike,
    allow: Optional[List[str]] = None,
    *,
    as_dict: bool = False,
) -> Any:
    """Checks a plan (a composite written inline, ``docs/plans.md``) against the tools
    under ``root`` (those the ``allow`` globs match, every ``.tool`` file by default).
    Returns its diagnostics as ``Diagnostic`` objects; with ``as_dict=True`` the answer of
    ``check_plan`` over MCP: ``{ok, errors, warnings, diagnostics, levels?, result_type?}``
    (what to hand a model)."""
    answer = _tdsl.check_plan(plan, os.fspath(root), allow)
    if as_dict:
        return answer
    return [Diagnostic(d) for d in answer["diagnostics"]]


def run(
    tool: PathLike,
    root: Optional[PathLike] = None,
    args: Optional[Union[Dict[str, Any], Data]] = None,
    tools: Optional[Mapping[str, Callable[[Dict[str, Any]], Any]]] = None,
    trace: bool = False,
    **options: Any,
) -> Any:
    """Runs the composite ``tool`` (a tool path under ``root``, ``"/main.tool"``, or a
    file) with ``args`` and returns its result (a dict); with ``trace=True`` the pair
    ``(result, trace)``.

    ``tools`` maps tool paths (``"/tools/up.tool"``) to Python callables taking the
    arguments dict and returning the response dict (``async def`` functions too: each call
    runs on its own event loop, ``asyncio.run``). Tools not in it run as their
    ``system_event_endpoint`` says (``exec:`` programs).

    Options: ``concurrency`` (calls in flight), ``deadline`` (seconds, the whole run),
    ``timeout`` (seconds, one attempt of a step without ``timeout_seconds``), ``retries``,
    ``retry_delay``, ``retry_max_delay``, ``max_depth``, ``cancel_grace``.

    Raises ``RunError`` (with ``.trace``) when the run fails or times out, ``TdslError``
    when the tool does not load or an option is out of range."""
    return _tdsl.run(
        os.fspath(tool),
        None if root is None else os.fspath(root),
        args,
        None if tools is None else dict(tools),
        trace,
        **options,
    )


def run_plan(
    plan: Union[Dict[str, Any], str],
    root: PathLike,
    args: Optional[Union[Dict[str, Any], Data]] = None,
    tools: Optional[Mapping[str, Callable[[Dict[str, Any]], Any]]] = None,
    allow: Optional[List[str]] = None,
    concurrency: Optional[int] = None,
) -> Dict[str, Any]:
    """Checks a plan and, with no error, runs it under the plan limits. Returns the answer
    of ``run_plan`` over MCP: ``{status, result, steps, failure_summary?}``, or the check's
    answer (``ok: false`` and the diagnostics) when the plan was refused. Never raises for a
    failed plan: the answer is meant for the model that wrote it."""
    return _tdsl.run_plan(plan, os.fspath(root), args, None if tools is None else dict(tools), allow, concurrency)
