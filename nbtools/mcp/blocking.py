"""`serve()`: serve over stdio or streamable HTTP until the client leaves or the process is stopped.

What `nbtools serve` runs. It owns the thread's event loop while it serves; inside a running loop (a
notebook) `background.start` is the way to serve.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import sys
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from . import ownservers
from .access import resolve_token
from .server import build_server
from .web import bind_socket, listener_url, uvicorn_server

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

DEFAULT_PORT = 8000


def serve(registry: Any = None, transport: str = "stdio", host: str = "127.0.0.1",
          port: int = DEFAULT_PORT, *, name: str = "nbtools", log_level: str = "warning",
          on_listening: Callable[..., Any] | None = None, token: str | bool | None = None,
          allow_hosts: Iterable[str] = ()) -> None:
    """Serve the registry's enabled tools over MCP until the client leaves or the process is stopped.

    Args:
        registry: a Registry (default: `nbtools.registry`), or Tools/callables.
        transport: "stdio" (the process's stdin/stdout carry the protocol; anything the tools print
            goes to stderr) or "http" (streamable HTTP at `http://HOST:PORT/mcp`).
        host, port: where the HTTP transport listens (default 127.0.0.1: this machine only; port 0
            picks a free port).
        name: the server name clients see.
        log_level: uvicorn's log level for the HTTP transport.
        on_listening: HTTP only: called as `on_listening(url, token)` (the real port; the token
            clients must send, None without one) once the socket listens, before the first request.
        token: HTTP only: the bearer token every request must carry (`Authorization: Bearer ...`);
            None: `$NBTOOLS_MCP_TOKEN`, else a fresh random one (given to `on_listening`); False:
            no authentication (warns). Stdio has no token: whoever started the process owns it.
        allow_hosts: HTTP only: more names clients may use in `Host:`/`Origin:` besides the bound
            host (and its loopback aliases), e.g. the machine's LAN name when binding 0.0.0.0.

    Blocks, running its own event loop; in a notebook use `start` (or `%tools --serve`) instead.
    Plain (non-async) tools run in a pool of worker threads, so calls from several sessions (or
    concurrent calls of one) run side by side; `async def` tools run on the event loop. See
    `nbtools.mcp.server` for what a cancelled call does.
    """
    if transport not in ("stdio", "http"):
        raise ValueError(f"serve: transport must be 'stdio' or 'http', not {transport!r}")
    _refuse_running_loop("serve")
    # Plain functions run in worker threads: one slow call must not hold up every other session.
    server = build_server(registry, name=name, threads=True)
    import anyio

    if transport == "stdio":
        try:
            with _start_up_left_to_refcounting():
                anyio.run(_serve_stdio, server)
        except* (BrokenPipeError, ConnectionResetError):
            pass  # the client closed its end of the pipe before reading every reply: it has left
    else:
        secret = resolve_token(token)
        listener = bind_socket(host, port)
        # recorded as soon as it listens, so connect() may send it $NBTOOLS_MCP_TOKEN (`ownservers`)
        entry = ownservers.record(host, listener.getsockname()[1])
        try:
            with listener:
                url = listener_url(host, listener)
                served = uvicorn_server(server, host, log_level=log_level, embedded=False, token=secret, url=url,
                                        allow_hosts=allow_hosts)
                if on_listening is not None:
                    on_listening(url, secret)
                with _start_up_left_to_refcounting():
                    anyio.run(functools.partial(served.serve, sockets=[listener]))
        finally:
            ownservers.forget(entry)


@contextlib.contextmanager
def _start_up_left_to_refcounting() -> Iterator[None]:
    """While serving, the objects made before (imports, the registry, the SDK's app: some 100,000)
    are left out of the cyclic collector's passes (`gc.freeze`): they live as long as the server, and
    the full pass over them that the first calls' leftovers trigger cost those calls 3-8 % of the
    server's CPU (bench/bench_serve.py, bench/instructions.py serve). Objects made while serving are
    collected as usual; a start-up object dropped meanwhile is still freed by its reference count
    (one in a reference cycle, once serving ends). Undone when serving ends; left alone when the
    process froze objects itself."""
    if gc.get_freeze_count():
        yield
        return
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


async def _serve_stdio(server: "Server") -> None:
    from mcp.server.stdio import stdio_server

    # stdout is the protocol: a tool's print() must not reach it. The transport takes the stdout
    # pipe for itself and points fd 1 at stderr while serving; sys.stdout is redirected as well (after
    # the transport has taken the real one), or text left in its buffer would reach the pipe at exit.
    sys.stdout.flush()
    async with stdio_server() as (read_stream, write_stream):
        with contextlib.redirect_stdout(sys.stderr):
            await server.run(read_stream, write_stream, server.create_initialization_options())


def _refuse_running_loop(what: str) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(f"{what}() blocks and runs its own event loop, but one is already running in this "
                       "thread (a notebook?). Use nbtools.mcp.start(...) or `%tools --serve` to serve from "
                       "a kernel, or `nbtools serve` in a terminal.")
