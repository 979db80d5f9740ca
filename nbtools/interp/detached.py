"""`python()` off the main thread: a run that cannot be stopped does not hold the caller's thread.

Off the main thread a run blocked in one C call (`time.sleep(30)`) cannot be stopped before that
call returns (the watchdog's asynchronous exception waits for it). A served call runs in a worker
thread of a small pool (anyio's, 40 threads): held for the whole call, forty such calls would leave
no thread for any tool. So off the main thread `python()` runs the code in a thread of its own and
waits until the deadline plus `DETACH_GRACE`: a run still going then is left detached (its thread
is hit by the time-out again until it stops, and its threads are stopped too), and the caller's
thread is free. At most `MOST_DETACHED` runs are detached at once (each holds a thread); past that
`python()` answers with an error until some have ended. Not used for a `python()` call inside a
run: the enclosing run's deadline reaches the nested one only in the same thread.

The threads are reused (`_Runner`; starting one per call costs ~200 us): a runner whose run ended
waits for the next one, up to `MOST_IDLE` of them; a detached runner joins them once its run ends.
"""

from __future__ import annotations

import contextvars
import queue
import threading
from typing import Any, Callable, Mapping

from .result import Answer

DETACH_GRACE = 0.5
MOST_DETACHED = 32
MOST_IDLE = 4

_lock = threading.Lock()
_idle: list[_Runner] = []
_detached = 0  # runs detached and still going


class _Job:
    __slots__ = ("call", "done", "finished", "detached", "outcome")

    def __init__(self, call: Callable[[], Any]) -> None:
        self.call = call
        self.done = threading.Event()
        self.finished = self.detached = False
        self.outcome: Any = None


class _Runner:
    """A thread that runs python() calls one after another (`_Job`s from its queue)."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._loop, name="nbtools-python-run", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        global _detached
        while True:
            job = self.jobs.get()
            try:
                job.outcome = job.call()
            except BaseException as exc:  # pragma: no cover - a run returns the code's exceptions
                job.outcome = exc
            with _lock:
                job.finished = True
                if job.detached:
                    _detached -= 1
                job.done.set()
                if len(_idle) >= MOST_IDLE:
                    return
                _idle.append(self)


def python_off_main(run: Callable[..., Any], code: str, glb: dict, loc: Mapping | None, limit: float) -> Any:
    """`python()` off the main thread: `run(code, glb, loc, limit, True)` (`execute._run`) in a runner
    thread; its answer, or a time-out text when it is still running at the deadline plus `DETACH_GRACE`."""
    global _detached
    with _lock:
        if _detached >= MOST_DETACHED:
            return Answer(f"Error: {_detached} earlier python() runs timed out and are still blocked in "
                          "calls Python cannot interrupt (such as time.sleep); try again when they have ended")
        runner = None
        while _idle and runner is None:
            runner = _idle.pop()
            if not runner.thread.is_alive():  # e.g. in the child of a fork: only the forking thread runs
                runner = None
    context = contextvars.copy_context()
    job = _Job(lambda: context.run(run, code, glb, loc, limit, True))
    (runner or _Runner()).jobs.put(job)
    if not job.done.wait(limit + DETACH_GRACE):
        with _lock:
            if not job.finished:
                job.detached = True
                _detached += 1
                return Answer(f"TimeoutError: the code did not finish within {limit:g} s and was stopped; "
                              "it was blocked in a call Python cannot interrupt (such as time.sleep), "
                              "which goes on in the background until it returns")
    outcome = job.outcome
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome.answer()
