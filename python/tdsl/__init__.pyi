"""Type stubs of the tdsl package (docs/python.md)."""

import os
from typing import Any, Callable, Dict, Iterable, List, Literal, Mapping, Optional, Tuple, Union, overload

from ._tdsl import Data as Data
from ._tdsl import Program as Program
from ._errors import OptionError as OptionError
from ._errors import RunError as RunError
from ._errors import TdslError as TdslError
from ._errors import TransientError as TransientError

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

__version__: str

PathLike = Union[str, "os.PathLike[str]"]
JSONValue = Union[None, bool, int, float, str, List[Any], Dict[str, Any]]
Tool = Callable[[Dict[str, Any]], Any]

class Diagnostic:
    code: str
    severity: str
    message: str
    file: Optional[str]
    line: int
    column: int
    end_line: int
    end_column: int
    help: Optional[str]
    pointer: Optional[str]
    range: Optional[List[int]]
    rendered: str
    def __init__(self, d: Mapping[str, Any]) -> None: ...
    def to_dict(self) -> Dict[str, Any]: ...
    def __str__(self) -> str: ...
    def __repr__(self) -> str: ...

def eval(expr: str, vars: Optional[Union[Dict[str, Any], Data]] = None) -> JSONValue: ...
def compile(expr: str) -> Program: ...
def check(path_or_paths: Union[PathLike, Iterable[PathLike]], root: Optional[PathLike] = None) -> List[Diagnostic]: ...
@overload
def check_plan(
    plan: Union[Dict[str, Any], str], root: PathLike, allow: Optional[List[str]] = None, *, as_dict: Literal[False] = False
) -> List[Diagnostic]: ...
@overload
def check_plan(
    plan: Union[Dict[str, Any], str], root: PathLike, allow: Optional[List[str]] = None, *, as_dict: Literal[True]
) -> Dict[str, Any]: ...
@overload
def run(
    tool: PathLike,
    root: Optional[PathLike] = None,
    args: Optional[Union[Dict[str, Any], Data]] = None,
    tools: Optional[Mapping[str, Tool]] = None,
    trace: Literal[False] = False,
    *,
    concurrency: int = ...,
    deadline: float = ...,
    timeout: float = ...,
    retries: int = ...,
    retry_delay: float = ...,
    retry_max_delay: float = ...,
    max_depth: int = ...,
    cancel_grace: float = ...,
) -> Dict[str, Any]: ...
@overload
def run(
    tool: PathLike,
    root: Optional[PathLike] = None,
    args: Optional[Union[Dict[str, Any], Data]] = None,
    tools: Optional[Mapping[str, Tool]] = None,
    *,
    trace: Literal[True],
    concurrency: int = ...,
    deadline: float = ...,
    timeout: float = ...,
    retries: int = ...,
    retry_delay: float = ...,
    retry_max_delay: float = ...,
    max_depth: int = ...,
    cancel_grace: float = ...,
) -> Tuple[Dict[str, Any], Dict[str, Any]]: ...
def run_plan(
    plan: Union[Dict[str, Any], str],
    root: PathLike,
    args: Optional[Union[Dict[str, Any], Data]] = None,
    tools: Optional[Mapping[str, Tool]] = None,
    allow: Optional[List[str]] = None,
    concurrency: Optional[int] = None,
) -> Dict[str, Any]: ...
