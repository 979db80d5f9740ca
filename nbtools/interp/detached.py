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
"""

from __future__ import annotations

import contextvars
import threading
from typing import Any, Callable, Mapping

DETACH_GRACE = 0.5
MOST_DETACHED = 32
_detached: set[threading.Thread] = set()
_detached_lock = threading.Lock()


def python_off_main(run: Callable[..., Any], code: str, glb: dict, loc: Mapping | None, limit: float) -> Any:
    """`python()` off the main thread: `run(code, glb, loc, limit, True)` (`execute._run`) in a thread of
    its own; its answer, or a time-out text when it is still running at the deadline plus `DETACH_GRACE`."""
    with _detached_lock:
        for thread in [thread for thread in _detached if not thread.is_alive()]:
            _detached.discard(thread)
        if len(_detached) >= MOST_DETACHED:
            return (f"Error: {len(_detached)} earlier python() runs timed out and are still blocked in "
                    "calls Python cannot interrupt (such as time.sleep); try again when they have ended")
    box: list[Any] = []
    context = contextvars.copy_context()

    def target() -> None:
        try:
            box.append(context.run(run, code, glb, loc, limit, True))
        except BaseException as exc:  # pragma: no cover - run_code returns the code's exceptions
            box.append(exc)

    thread = threading.Thread(target=target, name="nbtools-python-run", daemon=True)
    thread.start()
    thread.join(limit + DETACH_GRACE)
    if thread.is_alive():
        with _detached_lock:
            _detached.add(thread)
        return (f"TimeoutError: the code did not finish within {limit:g} s and was stopped; it was "
                "blocked in a call Python cannot interrupt (such as time.sleep), which goes on in "
                "the background until it returns")
    outcome = box[0]
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome.answer()
