"""The `python(code, timeout)` code-interpreter tool: run a model's code, return what it computed.

How a run goes (one file per step):

1. `compiling.py`: parse once; the last expression (unless silenced by `;`, IPython's rule) is
   compiled apart so its value comes back; catch-all handlers are guarded so they cannot swallow
   the time-out.
2. `capture.py`: the run's output, bounded (first `OUTPUT_HEAD` and last `OUTPUT_TAIL`
   characters), and the routers that send a run's prints, `display()` calls and the output of
   threads it starts there while everyone else's go where they went before; stdin reads
   end-of-file for the code.
3. `timeouts.py`: a `SIGALRM` interval timer on the main thread (with the watchdog as its
   backstop when SIGALRM cannot arrive), a watchdog thread off it, a task wake-up in an `await`;
   nested runs keep the outer deadline; a time-out the code keeps swallowing is escalated (raised
   again at every bytecode). The time-out is `TimeoutInterrupt`, a `BaseException`.
   `interrupts.py`: a person's SIGINT told apart from the code's own `KeyboardInterrupt`, and the
   signal mask put back after a main-thread run.
4. `isolated.py`: `isolated=True` runs the code in a forked child, killed if it overruns (the only
   way to stop a loop inside C); the child sends JSON data back, never a pickle.
5. `execute.py`: `run_code`/`run_code_async` tie these together and return an `ExecResult`
   (`result.py`; errors as a short traceback by `tracebacks.py`, made under the run's deadline);
   `python`/`python_async` (`pytool.py`, which imports `execute.py` at the first call) are the
   model-facing tools that format it: the value as the model gets it is made under the deadline
   too, and bounded (`shown.py`). Off the main thread `python()` runs
   the code in a thread of its own and returns at the deadline even when the code is stuck in C
   (that run goes on detached). `started.py`: threads the code started are stopped when its run
   times out.
6. `process.py`: every process-wide patch (`threading.Thread.start`, the signal module's SIGALRM
   functions and `_signal.pthread_sigmask`, the standard streams, IPython's display publisher and
   `ask_exit`, the at-fork hook), installed at
   the first run and removed by `process.uninstall()` (at exit and on `%unload_ext nbtools`). Its
   docstring is the manual.

`OUTPUT_HEAD`, `OUTPUT_TAIL` and `DISPLAYS_KEPT` can be read and set here; setting them here sets
them where the capture reads them. Importing this package imports only `pytool.py`: the other
names are served from their modules when first asked for.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

from ..lazy import lazy_names

from .pytool import python, python_async

__all__ = [
    "ExecResult",
    "TimeoutInterrupt",
    "run_code",
    "run_code_async",
    "python",
    "python_async",
]

# Names served lazily from their modules: `from nbtools import python` needs none of them.
_LAZY = {"ExecResult": "result", "TimeoutInterrupt": "result", "run_code": "execute", "run_code_async": "execute"}

# Limits that live in `capture.py` (read there on the hot path) but were always set here.
_FORWARDED = ("OUTPUT_HEAD", "OUTPUT_TAIL", "DISPLAYS_KEPT")


__getattr__ = lazy_names(__name__, _LAZY)


def _forward(name: str) -> property:
    def get(module: ModuleType) -> Any:
        from . import capture

        return getattr(capture, name)

    def set_(module: ModuleType, value: Any) -> None:
        from . import capture

        setattr(capture, name, value)

    return property(get, set_, doc=f"`capture.{name}`, readable and settable here")


class _Package(ModuleType):
    """This package's module type: `nbtools.interp.OUTPUT_HEAD = n` sets the capture's limit."""

    OUTPUT_HEAD = _forward("OUTPUT_HEAD")
    OUTPUT_TAIL = _forward("OUTPUT_TAIL")
    DISPLAYS_KEPT = _forward("DISPLAYS_KEPT")


def __dir__() -> list[str]:
    return sorted({*globals(), *_FORWARDED, *_LAZY})


sys.modules[__name__].__class__ = _Package
