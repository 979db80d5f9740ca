"""`start()`/`stop()`: MCP servers over streamable HTTP running inside this process (`%tools --serve`;
what that magic prints is `nbtools.magics.serve_magic`'s).

The transport (uvicorn and the mcp SDK's sessions) always runs on a thread and loop of its own. With
an asyncio loop running on the calling thread (a Jupyter kernel) each call (tools, resource and
prompt functions) is handed to that loop (`handoff`), so it runs on that thread between cells, and
the transport keeps reading meanwhile: a client's cancellation stops even a plain function that
holds the kernel (as the kernel's Interrupt does). Without a running loop the calls run on the
transport's loop. Every server started here is stopped at interpreter exit.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import socket
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..registry import Registry
from . import ownservers
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
        in_thread: False when its calls run on the event loop of the thread that started it (a
            kernel's main thread), True when they run on the transport's own thread. The transport
            has a thread of its own either way.
    """

    url: str
    host: str
    port: int
    registry: Registry
    in_thread: bool
    token: str | None = field(repr=False)
    _uvicorn: Any = field(repr=False)
    _listener: socket.socket = field(repr=False)
    _loop: asyncio.AbstractEventLoop | None = field(repr=False)  # the transport's (on `_thread`)
    _task: Any = field(default=None, repr=False)  # the asyncio.Task running uvicorn (on `_loop`)
    _calls_loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)  # where calls run, if not `_loop`
    _thread: threading.Thread | None = field(default=None, repr=False)
    activity: Any = field(default=None, repr=False)  # `activity.Activity`: the recent tool calls
    view: Any = field(default=None, repr=False)  # the `activity.ActivityView` shown last (in a kernel)
    _record: Any = field(default=None, repr=False)  # `ownservers.Record`: this user's nbtools serves here
    jupyter: str = field(default="", repr=False)  # how to reach it through Jupyter (`nbtools.jupyter.reach`)
    on_stop: list = field(default_factory=list, repr=False)  # called once when stopped (`nbtools.jupyter.reach`)
    cells: Any = field(default=None, repr=False)  # `nbtools.jupyter.cells.CellWriter` under `--cells`

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop listening at once and end the server (waits up to `timeout` seconds for its thread)."""
        if _RUNNING.get(self.port) is self:
            _RUNNING.pop(self.port, None)
        ownservers.forget(self._record)
        self._ended()
        if self._task is None or self._task.done() or self._loop is None:
            self._listener.close()
            return
        with contextlib.suppress(RuntimeError):  # its loop has closed meanwhile
            self._loop.call_soon_threadsafe(self._request_exit)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _request_exit(self) -> None:
        # Close the listening sockets now, so the port is free again as soon as this returns.
        for listening in getattr(self._uvicorn, "servers", []):
            listening.close()
        self._uvicorn.should_exit = True
        if self._uvicorn.started:
            self._listener.close()
        # Else uvicorn is starting up (its lifespan): cancelling now would log a traceback, and
        # closing the socket would make it fail to listen (EBADF). It sees `should_exit` once
        # started, shuts down at once and closes the socket itself.

    def _ended(self) -> None:
        """Run the `on_stop` hooks, once (stopped by hand, or its thread ended on an error)."""
        while self.on_stop:
            with contextlib.suppress(Exception):  # stopping must not fail on a hook
                self.on_stop.pop()()

    async def wait_closed(self) -> None:
        """Await the end of the server's thread after `stop()` (without blocking this loop)."""
        while self._thread is not None and self._thread.is_alive():
            await asyncio.sleep(0.02)

    def __repr__(self) -> str:
        where = "calls on its own thread" if self.in_thread else "calls on this thread's event loop"
        state = "running" if self.running else "stopped"
        return f"RunningServer({self.url}, {len(self.registry.enabled())} tools, {where}, {state})"


_RUNNING: dict[int, RunningServer] = {}


def start(registry: Any = None, host: str = "127.0.0.1", port: int = 0, *, name: str = "nbtools",
          log_level: str = "warning", token: str | bool | None = None,
          allow_hosts: Iterable[str] = (), proxy_token: str | None = None, cells: bool = False) -> RunningServer:
    """Serve the registry's tools over streamable HTTP from this process, and return at once.

    `port=0` picks a free port (see `.port`/`.url` on the result). The transport runs on a thread of
    its own; with an asyncio loop running on this thread (a Jupyter kernel) calls run on this thread
    between cells, and a client's cancellation stops them as the kernel's Interrupt does; otherwise
    they run on the transport's thread (see the module docs).
    Stop it with `.stop()` or `nbtools.mcp.stop()`.

    Every request must carry `Authorization: Bearer <token>` (401 otherwise): `token` as given,
    else `$NBTOOLS_MCP_TOKEN`, else a fresh random one; read it from `.token`. `token=False` turns
    authentication off (with a warning). `Host:`/`Origin:` must name `host` (its loopback aliases
    when it is loopback) or one of `allow_hosts`. `proxy_token`: a second token, private to the
    Jupyter Server extension, whose requests may name the Jupyter user (`access.proxied_user`).
    `cells=True` (`%tools --serve --cells`), in a kernel of a Jupyter server with nbtools' extension
    and real-time collaboration: register with the extension and write each call as a cell at the end
    of this kernel's notebook (`nbtools.jupyter.cells`); elsewhere `.jupyter` says in one line why not.
    """
    # 1. The server, its socket (bound now, so the port is taken and known before this returns), uvicorn.
    from .activity import Activity

    try:  # a kernel's main thread: calls are handed to its loop (see the module docs)
        calls_loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        calls_loop = None
    tools = as_registry(registry)
    activity = Activity()
    calls = None
    if calls_loop is not None:
        from .handoff import MainThreadCalls

        # the serving cell's context, as when the server was a task on the kernel's loop: what a call
        # displays (an approval prompt) goes where it went before
        calls = MainThreadCalls(calls_loop, contextvars.copy_context())
    server = build_server(tools, name=name, activity=activity, calls=calls)
    secret = resolve_token(token)
    if cells and proxy_token is None and secret is not None:  # the extension reaches it with a token of its own
        from ..jupyter import reach

        proxy_token = reach.proxy_token()
    listener = bind_socket(host, port)
    # recorded as soon as it listens, so connect() may send it $NBTOOLS_MCP_TOKEN (`ownservers`)
    entry = ownservers.record(host, listener.getsockname()[1])
    try:
        url = listener_url(host, listener)
        served = uvicorn_server(server, host, log_level=log_level, embedded=True, token=secret, url=url,
                                allow_hosts=allow_hosts, proxy_token=proxy_token if secret is not None else None)
        running = RunningServer(url, host, listener.getsockname()[1], tools, calls_loop is None, secret, served,
                                listener, None, activity=activity, _calls_loop=calls_loop, _record=entry)
        _serve_in_thread(running)  # 2. The transport on a thread and loop of its own.
    except BaseException:
        ownservers.forget(entry)
        listener.close()
        raise
    # 3. Known by port, for `stop(port)` and `%tools --serve` run again.
    previous = _RUNNING.get(running.port)
    if previous is not None:  # a port reused after the old server was stopped by hand
        previous.stop()
    _RUNNING[running.port] = running
    if cells:
        from ..jupyter import reach
        from ..jupyter.cells import NO_EXTENSION

        running.jupyter = reach.register(running, proxy_token, cells=True) if proxy_token else "\n" + NO_EXTENSION
    return running


def _serve_in_thread(running: RunningServer) -> None:
    """Serve on a new daemon thread with its own loop; returns once that loop runs the server."""
    ready = threading.Event()

    async def serve_here() -> None:
        running._loop = asyncio.get_running_loop()
        running._task = asyncio.current_task()
        ready.set()
        await running._uvicorn.serve(sockets=[running._listener])

    def run_loop() -> None:
        # asyncio.Runner cancels what the server leaves behind (e.g. SSE watchers) and closes the loop.
        try:
            with asyncio.Runner() as runner:
                runner.run(serve_here())
        except Exception as error:  # nobody awaits this thread: say why it ended
            if _RUNNING.get(running.port) is running:
                _RUNNING.pop(running.port, None)
            running._ended()
            print(f"nbtools: the MCP server at {running.url} stopped: {type(error).__name__}: {error}",
                  file=sys.stderr)
        finally:
            ownservers.forget(running._record)
            ready.set()  # also when it failed before serving

    running._thread = threading.Thread(target=run_loop, name=f"nbtools MCP server on port {running.port}",
                                       daemon=True)
    running._thread.start()
    ready.wait()


def serves_on_loop(port: int, loop: asyncio.AbstractEventLoop) -> RunningServer | None:
    """The running server `start` started listening on `port` whose calls run on `loop`, if any."""
    server = _RUNNING.get(port)
    if server is not None and server.running and server._calls_loop is loop:
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
        server.view = ActivityView(server.activity, server._calls_loop)
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
