"""The streamable HTTP transport: the `mcp` server's HTTP app at `/mcp`, under uvicorn, on a socket we bind.

Both ways of serving over HTTP use this: `blocking.serve(transport="http")` and `background.start`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import socket
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

MCP_PATH = "/mcp"
"""Where the streamable HTTP transport is served."""

# A neighbour without the token must not be able to starve the server (issue 25): connections that
# never finish their request headers (another local user can open a thousand) would otherwise take
# every file descriptor of the process, a kernel's with `%tools --serve`, and the token holder would
# get no answer. uvicorn bounds header size (h11's limit) and idle keep-alive time, but has no
# header time-out and no bound on open connections: `_guarded_protocol` adds both.
# A connection answered before its request body has arrived (a 401 without the token: the SDK's
# check answers at the headers) would stay open while the body trickles in, a byte every few seconds,
# counted as a request in progress (issue 37): 200 of them took every place and the token holder was
# turned away. So a refusal (401, 403, 421) closes its connection once sent, a connection answered while
# its body still arrives is closed, and a body must arrive whole within `BODY_TIMEOUT`.
MOST_CONNECTIONS = 200
"""Open connections at most; a new one past that closes the oldest connection that has no request in
progress (still sending its headers, or idle between requests), else it is closed itself."""
HEADER_TIMEOUT = 10.0
"""Seconds a new connection may take to send its first request's headers before it is closed."""
KEEP_ALIVE = 5
"""Seconds an idle connection is kept open between requests (uvicorn's `timeout_keep_alive`)."""
BODY_TIMEOUT = 30.0
"""Seconds a request's body may take to arrive, from the end of its headers; then the connection is closed."""
MOST_HEADER_BYTES = 64 * 1024
"""Largest request head (request line and headers) read before the request is refused with 400."""


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (port 0: a free one), with an error that says which address failed."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"cannot serve MCP on port {port!r}: a TCP port is an integer from 0 to 65535 "
                         "(0 picks a free one)")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, not 0: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and the
    # accepted ones inherit it; with Nagle on, an event stream's body waited ~40 ms for the client's
    # delayed ACK of its headers on a kept-alive connection
    listener = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(128)
    except OSError as error:
        listener.close()
        raise OSError(error.errno, f"cannot serve MCP on {host}:{port}: {error.strerror or error}") from None
    listener.setblocking(False)
    return listener


def listener_url(host: str, listener: socket.socket) -> str:
    """`http://HOST:PORT/mcp` for a bound socket (the real port; a loopback address for a wildcard bind)."""
    return f"http://{_url_host(host)}:{listener.getsockname()[1]}{MCP_PATH}"


def _url_host(host: str) -> str:
    if host in ("0.0.0.0", "::", ""):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


def uvicorn_server(server: "Server", host: str, *, log_level: str, embedded: bool, token: str | None,
                   url: str, allow_hosts: Iterable[str] = (), proxy_token: str | None = None) -> Any:
    """A uvicorn server for the streamable HTTP app at `/mcp`, behind the checks of `access`.

    `token`: the bearer token every request must carry (None: none, see `access.resolve_token`);
    Host/Origin must name `host` (or a loopback alias when it is loopback, or one of `allow_hosts`).
    `embedded`: it runs inside a process that owns SIGINT (a kernel), so uvicorn must not take it.
    `proxy_token`: the private token of the Jupyter Server extension (see `access`), accepted too.
    """
    import uvicorn

    from .access import auth_hooks, transport_security

    app = _closing_refusals(server.streamable_http_app(streamable_http_path=MCP_PATH, host=host,
                                                       transport_security=transport_security(host, allow_hosts),
                                                       **auth_hooks(token, url, proxy_token)))
    config = uvicorn.Config(app, log_config=None, log_level=log_level, access_log=False,
                            lifespan="on", timeout_graceful_shutdown=2, http=_guarded_protocol(),
                            timeout_keep_alive=KEEP_ALIVE, h11_max_incomplete_event_size=MOST_HEADER_BYTES,
                            # requests in progress at once (event streams included); connections
                            # are bounded below that by the protocol
                            limit_concurrency=2 * MOST_CONNECTIONS)
    served = _uvicorn_class(embedded)(config)
    served.session_manager = server.session_manager
    return served


@functools.cache
def _uvicorn_class(embedded: bool) -> type:
    import uvicorn

    class McpUvicorn(uvicorn.Server):
        """uvicorn that ends the MCP sessions before it shuts down (and, embedded, leaves SIGINT alone)."""

        session_manager: Any = None

        async def shutdown(self, sockets: Any = None) -> None:
            # A connected client keeps an event stream open (GET /mcp): uvicorn would wait out its
            # graceful time-out for it, then cancel it and log a traceback. Ending the sessions
            # first closes those streams, so stopping is quick and quiet.
            await _end_sessions(self.session_manager)
            await super().shutdown(sockets=sockets)

        if embedded:
            @contextlib.contextmanager
            def capture_signals(self) -> Any:  # in a kernel, SIGINT belongs to the kernel
                yield

    return McpUvicorn


REFUSED = (401, 403, 421)
"""Statuses after which the connection is closed: who was refused gets no connection to keep."""


def _closing_refusals(app: Any) -> Any:
    """The ASGI `app`, its refusals (`REFUSED`) sent with `Connection: close` (uvicorn then closes the
    connection once the answer is out, whatever of the request is still to come)."""

    async def guarded(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return

        async def sending(message: dict) -> None:
            if message["type"] == "http.response.start" and message.get("status") in REFUSED:
                message = {**message, "headers": [*message.get("headers", ()), (b"connection", b"close")]}
            await send(message)

        await app(scope, receive, sending)

    return guarded


@functools.cache
def _guarded_protocol() -> type:
    """uvicorn's h11 protocol with a header time-out, a body time-out, and a bound on open connections."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedH11Protocol(H11Protocol):
        opened_at = 0.0
        header_timer: Any = None
        body_timer: Any = None

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            self.opened_at = self.loop.time()
            full = len(self.connections) >= MOST_CONNECTIONS
            victim = self._oldest_without_request() if full else None
            super().connection_made(transport)
            if full:
                if victim is None:  # every connection is serving a request: refuse this one
                    transport.close()
                    return
                victim.transport.close()
            self.header_timer = self.loop.call_later(HEADER_TIMEOUT, self._header_timeout)

        def _oldest_without_request(self) -> Any:
            waiting = [other for other in self.connections
                       if isinstance(other, GuardedH11Protocol) and other.without_request()]
            return min(waiting, key=lambda other: other.opened_at) if waiting else None

        def without_request(self) -> bool:
            """No request in progress: still sending the first one's headers, or idle between requests."""
            return (self.conn.their_state is h11.IDLE and not self.transport.is_closing()
                    and (self.cycle is None or self.cycle.response_complete))

        def handle_events(self) -> None:
            super().handle_events()
            if self.cycle is not None and self.header_timer is not None:
                self.header_timer.cancel()  # its first request's headers have arrived
                self.header_timer = None
            receiving = self.conn.their_state is h11.SEND_BODY
            if receiving and self.body_timer is None:
                self.body_timer = self.loop.call_later(BODY_TIMEOUT, self._body_timeout)
            elif not receiving and self.body_timer is not None:
                self.body_timer.cancel()  # its body has arrived
                self.body_timer = None

        def _body_timeout(self) -> None:
            self.body_timer = None
            if self.conn.their_state is h11.SEND_BODY and not self.transport.is_closing():
                self.transport.close()  # the app reading the body sees the client leave

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self.conn.their_state is h11.SEND_BODY and not self.transport.is_closing():
                self.transport.close()  # answered before its body arrived: the rest is of no use

        def _header_timeout(self) -> None:
            self.header_timer = None
            if self.cycle is None and not self.transport.is_closing():
                self.transport.close()

        def connection_lost(self, exc: Exception | None) -> None:
            for timer in (self.header_timer, self.body_timer):
                if timer is not None:
                    timer.cancel()
            self.header_timer = self.body_timer = None
            super().connection_lost(exc)

    return GuardedH11Protocol


async def _end_sessions(session_manager: Any) -> None:
    # The mcp package has no public way to list live sessions: read its table defensively, so a
    # later version without it only brings back the slower shutdown.
    end_streams = getattr(getattr(session_manager, "app", None), "end_listen_streams", None)
    if end_streams is not None:  # 2026-07-28 `subscriptions/listen` streams: closed gracefully first
        end_streams()
        await asyncio.sleep(0.05)  # each stream sends its closing result from its own task
    sessions = getattr(session_manager, "_server_instances", None)
    for transport in list(sessions.values()) if isinstance(sessions, dict) else []:
        with contextlib.suppress(Exception):
            await transport.terminate()
