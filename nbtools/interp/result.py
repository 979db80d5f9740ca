"""What a run gives back: the `ExecResult` record, and `TimeoutInterrupt`, the time-out raised in code.

Two private subclasses tell nbtools' own interruptions from the same classes raised by the code:
`Deadline` is the time-out as the timers raise it, `RealInterrupt` a person's interrupt (SIGINT on
the main thread during a run). Only these two end a run by propagating (to the run whose deadline
it is, or out of `run_code`); a `TimeoutInterrupt` or `KeyboardInterrupt` the code raises itself is
an ordinary error, returned as text.

Imports only `errors` from the rest of the package: every other module may use these two names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import Interrupted


class TimeoutInterrupt(BaseException):
    """Raised inside submitted code whose time is up.

    A `BaseException` (like `KeyboardInterrupt`) so that `except Exception:` in the submitted code
    cannot swallow it; bare `except:` handlers are rewritten to let it through.
    """


class Deadline(TimeoutInterrupt):
    """The time-out as nbtools raises it when a run's deadline has passed."""


class RealInterrupt(Interrupted):
    """A person's interrupt (SIGINT) delivered while a run's code ran on the main thread.

    Named `KeyboardInterrupt` in tracebacks and in a kernel's error reply: for the person it is one.
    An `errors.Interrupted`, so a cell shows one line ("the code was interrupted and did not
    finish"), not the frames of the interpreter it went through."""


RealInterrupt.__name__ = RealInterrupt.__qualname__ = "KeyboardInterrupt"
RealInterrupt.__module__ = "builtins"


@dataclass(slots=True)
class ExecResult:
    """What one run of submitted code produced.

    Fields:
        value: the last expression's value (None when the code ends with a statement, with a `;`,
            or did not finish).
        stdout: text printed to `sys.stdout` (plus the text form of rich `display()` output).
        stderr: text printed to `sys.stderr` (warnings included).
        output: everything printed or displayed, interleaved in the order it happened.
            Each of these three keeps the first `OUTPUT_HEAD` and the last `OUTPUT_TAIL`
            characters of a run's output, with a line counting what was left out between them,
            so code printing in a loop until its time-out cannot exhaust the kernel's memory.
        error: a short traceback showing the submitted code's lines when the code raised, could
            not be compiled, or timed out; None on success.
        timed_out: whether the run was stopped at its deadline.
        duration: wall-clock seconds the run took (compilation and clean-up included).
        displays: the raw mime bundles of rich `display()` calls (inside IPython only).
        exception: the exception the code raised (None on success; not kept in isolated mode).
    """

    value: Any = None
    stdout: str = ""
    stderr: str = ""
    output: str = ""
    error: str | None = None
    timed_out: bool = False
    duration: float = 0.0
    displays: tuple[dict, ...] = ()
    exception: BaseException | None = field(default=None, repr=False, compare=False)

    def for_model(self) -> Any:
        """The printed text, then the value's repr (if any, at most `shown.VALUE_CHARS` characters)
        on a last line; the value itself when nothing was printed; the printed text and the error
        text when the code failed or timed out. (`python()` makes its answer the same way, but
        under the run's deadline, and bounds the value too: see `shown.py`.)"""
        if self.error is not None:
            return Answer(join_lines(self.output, self.error))
        if not self.output:
            return self.value
        if self.value is None:
            return Answer(self.output)
        from .shown import bounded_repr

        return Answer(join_lines(self.output, bounded_repr(self.value)))


class Answer(str):
    """The text `python()` returns when the code printed something or failed: a `str` (equal to
    the plain text, JSON-serialisable, what the model reads) that a notebook cell shows as the text
    itself, line by line, instead of a quoted repr full of `\\n` escapes."""

    __slots__ = ()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        if len(getattr(printer, "stack", ())) > 1:  # inside a tuple or list: quoted, as any string there
            printer.text(str.__repr__(self))
            return
        for index, line in enumerate(self.split("\n")):
            if index:
                printer.break_()
            printer.text(line)


def join_lines(first: str, second: str) -> str:
    if not first:
        return second
    return first + ("" if first.endswith("\n") else "\n") + second


def quiet_result(value: Any, error: str | None, timed_out: bool, duration: float,
                 exception: BaseException | None) -> ExecResult:
    """The `ExecResult` of a run that printed and displayed nothing (the common case)."""
    return ExecResult(value=value, error=error, timed_out=timed_out, duration=duration, exception=exception)
