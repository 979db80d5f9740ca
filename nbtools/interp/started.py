"""Threads a run's code started: recorded while the run is active, stopped when it times out.

A run that times out must not leave its work going on: a thread the code started (directly, or
through a thread of its own, or a `ThreadPoolExecutor`) would keep computing, printing into the
kernel's output, or call `_thread.interrupt_main()` long after `python()` returned. So
`process.py`'s `Thread.start` records every thread started from an active run's context in that
run's capture (`Started`), and when the run ends timed out, `stop` has the watchdog raise the
time-out in each one still running (`PyThreadState_SetAsyncExc`, again every `STOP_REPEAT` seconds,
escalated as in the run itself if the thread swallows it: `timeouts.py`). A thread blocked in one C
call (`time.sleep(60)`) stops when that call returns. A thread of a timed-out run cannot start
another (`TimeoutInterrupt` in the thread that tries).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from . import timeouts
from .result import Deadline

STOP_REPEAT = 0.1  # a stopped thread that swallows the time-out, or sits in C, is hit again this often


class Started:
    """One thread started from a run's context: its id once running, and its stopping."""

    __slots__ = ("ident", "stopped", "done", "stop", "timeout")

    def __init__(self) -> None:
        self.ident = 0
        self.stopped = False          # its run timed out: stop it (or never let it begin)
        self.done = False             # it has ended
        self.stop: timeouts.Run | None = None  # the watchdog's record while it is being stopped
        self.timeout = 0.0


_lock = threading.Lock()  # orders a thread's beginning and ending against its stopping


def begins(started: Started) -> bool:
    """In the new thread, before the code's target runs: False when its run has already timed out."""
    with _lock:
        started.ident = threading.get_ident()
        return not started.stopped


def ends(started: Started) -> None:
    """In the thread, when its target returned or raised (from a `finally`)."""
    with _lock:
        started.done = True
        run = started.stop
    if run is not None:
        timeouts.deactivate(run)  # waits for a raise in progress; restores the thread's tracing


def stop(threads: list[Started], timeout: float) -> None:
    """The run that started `threads` timed out: stop every one still running."""
    now = time.monotonic()
    for started in threads:
        with _lock:
            if started.stopped or started.done:
                continue
            started.stopped = True
            if not started.ident:
                continue  # not begun yet: `begins` tells it not to
            run = timeouts.Run(timeout)
            run.deadline = run.watch_at = now
            run.repeat = STOP_REPEAT
            run.thread_id = started.ident
            run.active = True
            started.stop = run
        timeouts.watch(run)


def refuse_start(capture: Any) -> None:
    """A thread of a run that timed out tries to start another thread: it is being stopped."""
    if capture is not None and capture.stopped:
        raise Deadline(f"the code ran for more than {capture.stopped:g} s; its threads are being stopped")
