"""The exceptions of tdsl (the native module raises these classes)."""

from typing import Any, Dict, List, Optional, Tuple


class TdslError(Exception):
    """An error tdsl reports: a stable ``code`` (``E0101``), the ``message``, and the
    ``span`` — ``(start, end)`` byte offsets in the expression or file — where there is one.
    ``diagnostics`` lists every diagnostic (dicts) when the error comes from a check."""

    def __init__(
        self,
        message: str,
        code: str = "E0000",
        span: Optional[Tuple[int, int]] = None,
        diagnostics: Optional[List[Dict[str, Any]]] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.span = span
        self.diagnostics = diagnostics or []

    def __str__(self) -> str:
        rendered = "".join(d.get("rendered", "") for d in self.diagnostics)
        if rendered:
            return f"{self.message} [{self.code}]\n{rendered.rstrip()}"
        return f"{self.message} [{self.code}]"


class OptionError(TdslError, ValueError):
    """An option of ``run`` or ``run_plan`` out of its range (``E0814``): a ``TdslError``
    with the code, and a ``ValueError`` as Python's own functions raise for a value of the
    right type that is not accepted (a type that is not accepted is a ``TypeError``)."""

    def __init__(
        self,
        message: str,
        code: str = "E0814",
        span: Optional[Tuple[int, int]] = None,
        diagnostics: Optional[List[Dict[str, Any]]] = None,
    ) -> None:
        super().__init__(message, code, span, diagnostics)


class RunError(TdslError):
    """A run that failed or timed out. ``trace`` is the run's trace (a dict: every step,
    attempt and error); the message names the failed step and why it failed."""

    def __init__(
        self,
        message: str,
        code: str = "E0803",
        span: Optional[Tuple[int, int]] = None,
        diagnostics: Optional[List[Dict[str, Any]]] = None,
        trace: Optional[Dict[str, Any]] = None,
    ) -> None:
        super().__init__(message, code, span, diagnostics)
        self.trace = trace if trace is not None else {}

    def __str__(self) -> str:
        return self.message


class TransientError(Exception):
    """Raise it from a tool function for a failure worth retrying (a busy service): the
    step is retried per its ``retry`` policy and the run's ``retries`` option. Any other
    exception fails the step at once."""
