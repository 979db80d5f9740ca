"""A person's interrupt of the kernel ends a tool call served by `%tools --serve`.

Between cells ipykernel ignores SIGINT (`SIG_IGN`), and calls served from the kernel's event loop
run between cells: the notebook's Interrupt button would do nothing while a runaway call holds the
kernel. `interruptible()` installs a SIGINT handler for the duration of the served call(s), then
puts the ignored disposition back:

* while a synchronous tool runs (it holds the loop), the handler raises KeyboardInterrupt in it;
* while the call awaits (the loop is idle or runs other tasks), raising would unwind the kernel's
  loop instead, so the handler cancels the calls' tasks; `interruptible` turns that cancellation
  into KeyboardInterrupt, which `server.call_result` answers with an error result.

Elsewhere (not the main thread, or SIGINT already handled: a cell is running, `nbtools serve`)
it changes nothing.
"""

from __future__ import annotations

import _signal  # the C module under `signal`: its getsignal returns the raw handler
import asyncio
import contextlib
import signal
import threading
from typing import Any, AsyncIterator

_active: dict["asyncio.Task[Any]", list[bool]] = {}  # served call task -> [interrupted by us]
_previous: list[Any] = []  # the disposition to restore once the last call ends


def _on_sigint(signum: int, frame: Any) -> None:
    try:
        current = asyncio.current_task()
    except RuntimeError:
        current = None
    if current is not None and current in _active:  # a synchronous tool holds the loop: stop it here
        _active[current][0] = True
        interrupt = KeyboardInterrupt("interrupted")
        interrupt.by_signal = True  # type: ignore[attr-defined]  # a person's, not the tool's (call.invoke)
        raise interrupt
    for task, flag in list(_active.items()):  # the calls await: cancel them from the loop
        flag[0] = True
        task.get_loop().call_soon_threadsafe(task.cancel)


@contextlib.asynccontextmanager
async def interruptible() -> AsyncIterator[None]:
    """Make the served call running in this task end on SIGINT (see the module docs)."""
    task = asyncio.current_task()
    # `_signal.getsignal`, not `signal.getsignal`: for a Python handler (the usual SIGINT handler
    # outside a kernel) the latter formats a ValueError on every call (~5 us) to map it to an enum
    if task is None or threading.current_thread() is not threading.main_thread() or \
            (not _active and _signal.getsignal(signal.SIGINT) != signal.SIG_IGN):
        yield
        return
    flag = [False]
    if not _active:
        _previous[:] = [signal.getsignal(signal.SIGINT)]
        signal.signal(signal.SIGINT, _on_sigint)
    _active[task] = flag
    try:
        yield
    except asyncio.CancelledError:
        if not flag[0]:
            raise
        task.uncancel()  # our cancellation, not the client's nor the server's shutdown
        raise KeyboardInterrupt from None
    finally:
        del _active[task]
        if not _active and _previous:
            signal.signal(signal.SIGINT, _previous.pop())


__all__ = ["interruptible"]
