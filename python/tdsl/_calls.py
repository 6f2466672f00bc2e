"""How the native module calls a Python tool function (internal).

Each call runs on its own daemon ``threading`` thread, which hands the outcome to ``done``
(a native callable). The engine's threads never run Python code themselves: a function
that never returns (a busy loop, a blocked call) is left on a thread that CPython knows,
and ends with the interpreter as any daemon thread does, instead of stranding a native
thread inside Python when the interpreter exits (which aborted the process).
"""

import asyncio
import collections.abc
import threading
from typing import Any, Callable, Dict, Optional


def start_call(function: Callable[[Dict[str, Any]], Any], args: Dict[str, Any],
               done: Callable[[Any, Optional[BaseException]], None]) -> None:
    def call() -> None:
        try:
            result = function(args)
            # Only a coroutine is run: `asyncio.iscoroutine` is true of a generator too on
            # Python 3.11 and older, and `asyncio.run` of a generator never ends. A generator
            # goes back as it is, and the step fails saying the function returned one.
            if isinstance(result, collections.abc.Coroutine):
                result = asyncio.run(result)
        except BaseException as e:  # noqa: B036 - every outcome goes back to the engine
            done(None, e)
        else:
            done(result, None)

    threading.Thread(target=call, name="tdsl-tool", daemon=True).start()
