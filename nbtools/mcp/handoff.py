"""Served calls handed from the HTTP transport's thread to a kernel's main thread, and stopped there
when their client cancels them.

In a kernel (`%tools --serve`) the transport (uvicorn and the mcp SDK's sessions) runs on a thread
and loop of its own, so it keeps reading requests, and cancellations, while a tool holds the main
thread. Each call still runs on the kernel's main thread, between cells, where its variables and
widgets live: `MainThreadCalls.run` makes it a task on the kernel's loop and waits for it. When the
SDK cancels the request (`notifications/cancelled`, a 2026-07-28 client closing its request, the
server stopping) the wait is cancelled, and the call is stopped the way a kernel interrupt stops it
(`stopping.cancel_served`).
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from typing import Any, Awaitable, Callable, TypeVar

from .stopping import cancel_served

T = TypeVar("T")


class CallEndedInKernel(RuntimeError):
    """The call's task was cancelled on the kernel's side (not by its client): the kernel is ending."""


class _Handoff:
    __slots__ = ("task", "abandoned", "finished", "lock")

    def __init__(self) -> None:
        self.task: asyncio.Task[Any] | None = None
        self.abandoned = False  # the transport stopped waiting (the request was cancelled)
        self.finished = False  # `ended` was called
        self.lock = threading.Lock()


class MainThreadCalls:
    """Runs served calls as tasks on `loop` (a kernel's, on its main thread) for handlers running on
    another loop (the transport's). `context`: the context the calls run in (a copy of the serving
    cell's, as when the server ran on the kernel's loop: what a call displays goes where it went)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, context: contextvars.Context | None = None) -> None:
        self.loop = loop
        self.context = context if context is not None else contextvars.copy_context()

    async def run(self, make: Callable[[], Awaitable[T]], *, stopping: Callable[[], Any] | None = None,
                  ended: Callable[[], Any] | None = None) -> T:
        """Run `make()` on the kernel's loop and return its value (or raise its error). If this wait is
        cancelled, `stopping()` is called first (here), then the call is stopped there; `ended()` is then called once the call has really ended,
        or when it would have started (on either thread: it must be thread-safe)."""
        here = asyncio.get_running_loop()
        answer: asyncio.Future[T] = here.create_future()
        handoff = _Handoff()

        def finish() -> None:  # an abandoned call has ended: say so once, from whichever side saw it last
            with handoff.lock:
                if handoff.finished:
                    return
                handoff.finished = True
            if ended is not None:
                ended()

        def copy_outcome(task: "asyncio.Task[T]") -> None:  # on the transport's loop
            if answer.done():
                return
            if task.cancelled():
                answer.set_exception(CallEndedInKernel("the call was cancelled in the kernel before it ended"))
            elif task.exception() is not None:
                answer.set_exception(task.exception())  # type: ignore[arg-type]
            else:
                answer.set_result(task.result())

        def settle(task: "asyncio.Task[T]") -> None:  # on the kernel's loop, when the call ended
            if handoff.abandoned:
                finish()
                if not task.cancelled():
                    task.exception()  # retrieved: a stopped call's error is expected, not "never retrieved"
                return
            try:
                here.call_soon_threadsafe(copy_outcome, task)
            except RuntimeError:  # the transport's loop is closed: nobody waits any more
                pass

        async def call() -> T:
            return await make()

        def begin() -> None:  # on the kernel's loop
            with handoff.lock:
                abandoned = handoff.abandoned
                if not abandoned:
                    handoff.task = self.loop.create_task(call())
                    handoff.task.add_done_callback(settle)
            if abandoned:
                finish()

        self.loop.call_soon_threadsafe(begin, context=self.context.copy())
        try:
            return await answer
        except asyncio.CancelledError:
            if stopping is not None:
                stopping()  # e.g. `ctx.cancelled` turns true before the call is interrupted
            with handoff.lock:
                handoff.abandoned = True
                task = handoff.task
            if task is not None and not task.done():
                cancel_served(task, self.loop)
            elif task is not None:  # it ended as the wait was cancelled
                finish()
            raise


__all__ = ["MainThreadCalls", "CallEndedInKernel"]
