"""Ending a tool call served by `%tools --serve`: a person's interrupt of the kernel, or the client's
cancellation (`cancel_served`).

Between cells ipykernel ignores SIGINT (`SIG_IGN`), and calls served from the kernel run on its main
thread between cells: the notebook's Interrupt button would do nothing while a runaway call holds the
kernel. `interruptible()` installs a SIGINT handler for the duration of the served call(s), then
puts the ignored disposition back:

* while a synchronous tool runs (it holds the loop), the handler raises KeyboardInterrupt in it;
* while the call awaits (the loop is idle or runs other tasks), raising would unwind the kernel's
  loop instead, so the handler cancels the calls' tasks; `interruptible` turns that cancellation
  into KeyboardInterrupt, which `server.call_result` answers with an error result.

A client's cancellation arrives on the transport's own thread (`handoff`); `cancel_served` stops the
one call it names the same way: SIGINT sent to the main thread (`signal.pthread_kill`: a signal
raised from another thread does not wake the main thread from a blocking read or sleep) when that
call's synchronous code holds the main thread, else a plain cancellation of its task. A served
`python()` run wraps our handler in its own for the run (`interp.interrupts`, which makes our
KeyboardInterrupt its person's interrupt, one the model's code cannot catch): SIGINT still reaches
ours through it (`__wrapped__`). While a cell
awaits, SIGINT is that cell's (ipykernel's handler): no signal is sent, the task is only cancelled.

Elsewhere (not the main thread, or SIGINT already handled: a cell is running, `nbtools serve`)
`interruptible` changes nothing.
"""

from __future__ import annotations

import _signal  # the C module under `signal`: its getsignal returns the raw handler
import asyncio
import contextlib
import signal
import threading
from typing import Any, AsyncIterator


class _Call:
    """One served call inside `interruptible` (on the main thread)."""

    __slots__ = ("interrupted", "inside")

    def __init__(self) -> None:
        self.interrupted = False  # a person's interrupt cancelled its task (turned into KeyboardInterrupt)
        self.inside = True  # still inside `interruptible`: a SIGINT may stop it


_active: dict["asyncio.Task[Any]", _Call] = {}  # served call task -> its state
_lock = threading.Lock()  # `cancel_served` checks and signals while a call cannot leave `interruptible`
# The calls `cancel_served` sent SIGINT for, until the handler runs. Kept apart from `_active`: the
# call may leave it before the signal is handled, and the signal must then stop no other call.
_aimed: set["asyncio.Task[Any]"] = set()


def _stop_here() -> KeyboardInterrupt:
    interrupt = KeyboardInterrupt("interrupted")
    interrupt.by_signal = True  # type: ignore[attr-defined]  # a person's or a client's, not the tool's (call.invoke)
    return interrupt


def _on_sigint(signum: int, frame: Any) -> None:
    try:
        current = asyncio.current_task()
    except RuntimeError:
        current = None
    if _aimed:  # sent by `cancel_served`: stop that call only
        call = _active.get(current) if current in _aimed else None  # type: ignore[arg-type]
        _aimed.clear()
        if call is not None and call.inside:
            raise _stop_here()
        return  # it left its synchronous code meanwhile: its task is cancelled through the loop instead
    if current is not None and current in _active and _active[current].inside:  # a synchronous tool holds the loop
        _active[current].interrupted = True
        raise _stop_here()
    for task, call in list(_active.items()):  # the calls await: cancel them from the loop
        if call.inside:
            call.interrupted = True
            task.get_loop().call_soon_threadsafe(task.cancel)


@contextlib.asynccontextmanager
async def interruptible() -> AsyncIterator[None]:
    """Make the served call running in this task end on SIGINT (see the module docs)."""
    task = asyncio.current_task()
    # `_signal.getsignal`, not `signal.getsignal`: for a Python handler (the usual SIGINT handler
    # outside a kernel) the latter formats a ValueError on every call (~5 us) to map it to an enum
    # `_on_sigint` with no call active ignores SIGINT: ipykernel puts it back after a cell during
    # which the last call ended (it saved it before the cell), and it stands for SIG_IGN then
    if task is None or threading.current_thread() is not threading.main_thread() or \
            (not _active and _signal.getsignal(signal.SIGINT) not in (signal.SIG_IGN, _on_sigint)):
        yield
        return
    call = _Call()
    if not _active:
        signal.signal(signal.SIGINT, _on_sigint)
    _active[task] = call
    try:
        yield
    except asyncio.CancelledError:
        if not call.interrupted:
            raise
        task.uncancel()  # our cancellation, not the client's nor the server's shutdown
        raise KeyboardInterrupt from None
    finally:
        call.inside = False  # from here on a SIGINT no longer stops this call
        with _lock:  # a `cancel_served` between its check and its signal finishes first
            del _active[task]
            # Back to ignoring SIGINT between cells, unless a cell that began meanwhile (an awaiting
            # cell during which this call ended) holds the kernel's handler: it keeps it.
            if not _active and _signal.getsignal(signal.SIGINT) is _on_sigint:
                signal.signal(signal.SIGINT, signal.SIG_IGN)  # runs a pending `_on_sigint` first
            if not _active:
                _aimed.clear()


def _reaches_ours(handler: Any) -> bool:
    """Whether SIGINT, handled by `handler`, reaches `_on_sigint`: it is ours, or a handler that
    calls the one it names `__wrapped__` (a served `python()` run wraps ours so: interp.interrupts)."""
    for _ in range(8):  # a few wrappers deep at most; a cycle must not hang the transport's thread
        if handler is _on_sigint:
            return True
        handler = getattr(handler, "__wrapped__", None)
        if handler is None:
            return False
    return False


def cancel_served(task: "asyncio.Task[Any]", loop: asyncio.AbstractEventLoop) -> None:
    """From another thread: stop the served call running as `task` on `loop` (the main thread's),
    because its client cancelled it. Synchronous code of the call holding the main thread gets
    KeyboardInterrupt (as from a person's interrupt); an awaiting call is cancelled at its await."""
    with _lock:
        call = _active.get(task)
        if call is not None and call.inside and _reaches_ours(_signal.getsignal(signal.SIGINT)) \
                and asyncio.current_task(loop) is task:  # its synchronous code runs on the main thread now
            _aimed.add(task)
            main = threading.main_thread().ident
            if main is not None:
                signal.pthread_kill(main, signal.SIGINT)
    with contextlib.suppress(RuntimeError):  # the loop closed meanwhile (the kernel is ending)
        loop.call_soon_threadsafe(task.cancel)  # also if it swallows the interrupt: at its next await


__all__ = ["interruptible", "cancel_served"]
