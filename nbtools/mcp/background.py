"""`start()`/`stop()`: MCP servers over streamable HTTP running inside this process (`%tools --serve`;
what that magic prints is `nbtools.magics.serve_magic`'s).

With an asyncio loop running on the calling thread (a Jupyter kernel) a server is a task on that
loop, so tool calls run on that thread between cells; without one it gets a thread and loop of its
own. Every server started here is stopped at interpreter exit.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import socket
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..registry import Registry
from .access import resolve_token
from .server import as_registry, build_server
from .web import bind_socket, listener_url, uvicorn_server


@dataclass(eq=False)
class RunningServer:
    """An MCP server over streamable HTTP running inside this process (see `start`).

    Fields:
        url: where clients connect (`http://HOST:PORT/mcp`).
        host, port: the address it listens on.
        registry: the registry it serves (read live on every request).
        token: the bearer token clients must send (`Authorization: Bearer <token>`); None when
            started with `token=False` (no authentication).
        in_thread: False when it runs as a task on the event loop of the thread that started it
            (a kernel's main thread), True when it has a thread of its own.
    """

    url: str
    host: str
    port: int
    registry: Registry
    in_thread: bool
    token: str | None = field(repr=False)
    _uvicorn: Any = field(repr=False)
    _listener: socket.socket = field(repr=False)
    _loop: asyncio.AbstractEventLoop | None = field(repr=False)
    _task: Any = field(default=None, repr=False)  # the asyncio.Task running uvicorn (on `_loop`)
    _thread: threading.Thread | None = field(default=None, repr=False)
    _began: bool = field(default=False, repr=False)  # the serving coroutine has started running
    activity: Any = field(default=None, repr=False)  # `activity.Activity`: the recent tool calls
    view: Any = field(default=None, repr=False)  # the `activity.ActivityView` shown last (in a kernel)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop listening at once and end the server (in loop mode, it finishes when the loop next runs)."""
        _RUNNING.pop(self.port, None)
        if self._task is None or self._task.done():
            self._listener.close()
            return
        if self.in_thread and self._loop is not None:
            self._loop.call_soon_threadsafe(self._request_exit)
            if self._thread is not None:
                self._thread.join(timeout)
        else:
            self._request_exit()

    def _request_exit(self) -> None:
        # Close the listening sockets now, so the port is free again as soon as this returns.
        for listening in getattr(self._uvicorn, "servers", []):
            listening.close()
        self._uvicorn.should_exit = True
        if self._uvicorn.started:
            self._listener.close()
        elif not self._began:
            # The task never ran: cancelling it is clean, and nothing else will close the socket.
            self._listener.close()
            self._task.cancel()
        # Else uvicorn is starting up (its lifespan): cancelling now would log a traceback, and
        # closing the socket would make it fail to listen (EBADF). It sees `should_exit` once
        # started, shuts down at once and closes the socket itself.

    async def wait_closed(self) -> None:
        """Await the end of a loop-mode server after `stop()` (from code on the same loop)."""
        if self._task is not None and not self.in_thread:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def __repr__(self) -> str:
        where = "own thread" if self.in_thread else "this thread's event loop"
        state = "running" if self.running else "stopped"
        return f"RunningServer({self.url}, {len(self.registry.enabled())} tools, {where}, {state})"


_RUNNING: dict[int, RunningServer] = {}


def start(registry: Any = None, host: str = "127.0.0.1", port: int = 0, *, name: str = "nbtools",
          log_level: str = "warning", token: str | bool | None = None,
          allow_hosts: Iterable[str] = ()) -> RunningServer:
    """Serve the registry's tools over streamable HTTP from this process, and return at once.

    `port=0` picks a free port (see `.port`/`.url` on the result). With an asyncio loop running on
    this thread (a Jupyter kernel) the server is a task on that loop and tool calls run on this
    thread between cells; otherwise it gets a thread and loop of its own (see the module docs).
    Stop it with `.stop()` or `nbtools.mcp.stop()`.

    Every request must carry `Authorization: Bearer <token>` (401 otherwise): `token` as given,
    else `$NBTOOLS_MCP_TOKEN`, else a fresh random one; read it from `.token`. `token=False` turns
    authentication off (with a warning). `Host:`/`Origin:` must name `host` (its loopback aliases
    when it is loopback) or one of `allow_hosts`.
    """
    # 1. The server, its socket (bound now, so the port is taken and known before this returns), uvicorn.
    from .activity import Activity

    tools = as_registry(registry)
    activity = Activity()
    server = build_server(tools, name=name, activity=activity)
    secret = resolve_token(token)
    listener = bind_socket(host, port)
    try:
        url = listener_url(host, listener)
        served = uvicorn_server(server, host, log_level=log_level, embedded=True, token=secret, url=url,
                                allow_hosts=allow_hosts)
        running = RunningServer(url, host, listener.getsockname()[1], tools, False, secret, served,
                                listener, None, activity=activity)
        # 2. On this thread's running loop (a kernel's: calls run between cells), else on a thread of its own.
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is not None:
            _serve_on_loop(running, loop)
        else:
            _serve_in_thread(running)
    except BaseException:
        listener.close()
        raise
    # 3. Known by port, for `stop(port)` and `%tools --serve` run again.
    previous = _RUNNING.get(running.port)
    if previous is not None:  # a port reused after the old server was stopped by hand
        previous.stop()
    _RUNNING[running.port] = running
    return running


def _serve_on_loop(running: RunningServer, loop: asyncio.AbstractEventLoop) -> None:
    """Serve as a task on `loop` (the caller's running loop); it starts when the loop next runs."""
    running._loop = loop

    async def serve_on_this_loop() -> None:
        running._began = True
        await running._uvicorn.serve(sockets=[running._listener])

    running._task = loop.create_task(serve_on_this_loop(), name=f"nbtools MCP server on port {running.port}")
    running._task.add_done_callback(functools.partial(_report_end, running))


def _serve_in_thread(running: RunningServer) -> None:
    """Serve on a new daemon thread with its own loop; returns once that loop runs the server."""
    running.in_thread = True
    ready = threading.Event()

    async def serve_here() -> None:
        running._loop = asyncio.get_running_loop()
        running._task = asyncio.current_task()
        running._began = True
        ready.set()
        await running._uvicorn.serve(sockets=[running._listener])

    def run_loop() -> None:
        # asyncio.Runner cancels what the server leaves behind (e.g. SSE watchers) and closes the loop.
        try:
            with asyncio.Runner() as runner:
                runner.run(serve_here())
        except Exception as error:  # nobody awaits this thread: say why it ended
            _RUNNING.pop(running.port, None)
            print(f"nbtools: the MCP server at {running.url} stopped: {type(error).__name__}: {error}",
                  file=sys.stderr)
        finally:
            ready.set()  # also when it failed before serving

    running._thread = threading.Thread(target=run_loop, name=f"nbtools MCP server on port {running.port}",
                                       daemon=True)
    running._thread.start()
    ready.wait()


def _report_end(server: RunningServer, task: "asyncio.Task[Any]") -> None:
    """A loop-mode server that ended by itself says why (nobody awaits its task)."""
    if task.cancelled():
        return
    error = task.exception()
    if error is not None:
        _RUNNING.pop(server.port, None)
        print(f"nbtools: the MCP server at {server.url} stopped: {type(error).__name__}: {error}",
              file=sys.stderr)


def serves_on_loop(port: int, loop: asyncio.AbstractEventLoop) -> RunningServer | None:
    """The running server `start` put on `loop` (as a task) listening on `port`, if any."""
    server = _RUNNING.get(port)
    if server is not None and server.running and not server.in_thread and server._loop is loop:
        return server
    return None


def running_servers() -> list[RunningServer]:
    """The servers `start` started in this process that are still serving."""
    return [server for server in _RUNNING.values() if server.running]


def served_at(port: int) -> RunningServer:
    """The server `start` (or `%tools --serve`) runs on `port`: its `.token`, `.url`, `.stop()`."""
    server = _RUNNING.get(port)
    if server is None or not server.running:
        ports = ", ".join(str(each.port) for each in running_servers()) or "none"
        raise LookupError(f"no nbtools MCP server runs on port {port} (ports serving: {ports})")
    return server


def stop(port: int | None = None) -> list[RunningServer]:
    """Stop the server on `port` (default: every server `start` started); returns the ones stopped."""
    if port is not None and port not in _RUNNING:
        raise KeyError(f"no MCP server started by this process on port {port}; running: "
                       f"{', '.join(str(known) for known in _RUNNING) or 'none'}")
    chosen = [_RUNNING[port]] if port is not None else list(_RUNNING.values())
    for server in chosen:
        server.stop()
    return chosen


def show_activity(server: RunningServer) -> None:
    """In a kernel: show the server's activity log (its recent tool calls) in this cell's output."""
    import sys

    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None or getattr(shell, "kernel", None) is None or server.activity is None:
        return
    try:
        from .activity import ActivityView
    except ImportError:
        return
    from IPython.display import display

    try:
        server.view = ActivityView(server.activity, server._loop)
        display(server.view)
    except ImportError:  # no ipywidgets: the log stays available as `served_at(port).activity.records`
        return


def token_hint(server: RunningServer) -> str:
    """The line under `%tools --serve` saying how clients authenticate. Never the token itself: this line is a cell's
    output, saved with the notebook (the token is `.token` of the server object, read when needed)."""
    if server.token is None:
        return "\nNo authentication (--no-token): anyone who can reach the port can call these tools."
    return ("\nClients send the header `Authorization: Bearer <token>`; the token is "
            f"`nbtools.mcp.served_at({server.port}).token` (not shown here: outputs are saved with the "
            "notebook). To choose it, set $NBTOOLS_MCP_TOKEN before serving, or pass --token.")


@atexit.register
def _stop_all_at_exit() -> None:
    for server in list(_RUNNING.values()):
        with contextlib.suppress(Exception):
            server.stop(timeout=1.0)
