"""The MCP endpoints `nbtools/mcp/kernels/<id>` and `nbtools/mcp/notebooks/<path>`: each request
streamed to the kernel's loopback server and its answer streamed back, byte for byte.

Not jupyter-server-proxy (it buffers an event stream unless `Accept` is exactly
`text/event-stream`, and MCP clients send `application/json, text/event-stream`) and no JSON-RPC of
our own: Tornado's HTTP/1.1 client connection (`HTTP1Connection`) on a loopback socket, whose
response delegate writes and flushes every piece as it arrives. So progress and log notifications
reach the client while a call runs, and `subscriptions/listen` / GET streams stay open. A connection
whose answer was read to its end is kept a moment for the next request to the same kernel (a new
loopback connection per request cost the server and the kernel more than the relay itself).

Both ways the proxy changes a request: it drops the client's `Authorization` (a Jupyter token the
kernel has no business seeing), cookies, `Origin` (Jupyter checked it) and any user header the
client sent, and adds the kernel's private token and the Jupyter user's name (`USER_HEADER`), which
the kernel's server believes only with that token. A client that disconnects (how a 2026-07-28 client
cancels a call) closes the upstream connection at once, which the kernel's server takes as the
cancellation of that call.
"""

from __future__ import annotations

import functools
import getpass
import json
import os
import socket
import time
from typing import Any
from urllib.parse import quote

from tornado import httputil, iostream, web
from tornado.http1connection import HTTP1Connection, HTTP1ConnectionParameters

from jupyter_server.auth.decorator import authorized
from jupyter_server.auth.identity import IdentityProvider

from .serving import NbtoolsHandler
from .registration import USER_HEADER, Registration

# Request headers not passed on: hop-by-hop ones, the client's credentials, what the proxy sets itself.
_DROPPED_REQUEST = frozenset(h.lower() for h in (
    "Authorization", "Cookie", "Origin", "Referer", "Host", "Content-Length", "Transfer-Encoding", "Connection",
    "Keep-Alive", "Proxy-Authorization", "Proxy-Connection", "TE", "Trailer", "Upgrade", "Expect",
    "Accept-Encoding", "X-XSRFToken", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", USER_HEADER))
# Response headers not passed back: framing (Tornado frames the response itself) and server identity.
_DROPPED_RESPONSE = frozenset(h.lower() for h in (
    "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Server", "Date", "Trailer", "Upgrade",
    "WWW-Authenticate", "Set-Cookie"))
_UNBOUNDED = 1 << 62  # an event stream may carry any amount over its life
KEPT_FOR = 2.0  # seconds an idle connection to a kernel is kept for the next request (uvicorn closes at 5)
KEPT_AT_MOST = 8  # idle connections kept per kernel port
_KEPT: dict[int, list[tuple[float, iostream.IOStream]]] = {}


@functools.cache
def server_owner() -> str:
    """The name of the user running this server: who its token stands for."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container without a passwd entry)
        return f"uid {os.getuid()}"


def _kept_connection(port: int) -> iostream.IOStream | None:
    """An idle connection to `port` left by an earlier request, if one is fresh enough."""
    kept = _KEPT.get(port)
    now = time.monotonic()
    while kept:
        since, stream = kept.pop()
        if now - since < KEPT_FOR and not stream.closed():
            return stream
        stream.close()
    return None


def _keep(port: int, stream: iostream.IOStream) -> None:
    kept = _KEPT.setdefault(port, [])
    kept.append((time.monotonic(), stream))
    while len(kept) > KEPT_AT_MOST:
        kept.pop(0)[1].close()


class McpProxy(NbtoolsHandler):
    """POST, GET and DELETE of the MCP endpoint of one kernel, streamed (see the module docs)."""

    _upstream: iostream.IOStream | None = None
    _closed = False

    @web.authenticated
    @authorized
    async def post(self, kind: str, target: str) -> None:
        await self._relay(kind, target)

    @web.authenticated
    @authorized
    async def get(self, kind: str, target: str) -> None:
        await self._relay(kind, target)

    @web.authenticated
    @authorized
    async def delete(self, kind: str, target: str) -> None:
        await self._relay(kind, target)

    async def _relay(self, kind: str, target: str) -> None:
        found = await self._registration(kind, target)
        if not isinstance(found, Registration):
            self.json_rpc_error(404, found, self._request_id())
            return
        stopped = f"kernel {found.kernel_id} stopped serving MCP: run `%tools --serve` in its notebook again"
        kept = _kept_connection(found.port)
        for upstream in ([kept] if kept is not None else []) + [None]:
            if upstream is None:
                upstream = iostream.IOStream(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
                try:  # an address, not a name: no resolver (a thread-pool hop per request for TCPClient)
                    await upstream.connect(("127.0.0.1", found.port))
                except (OSError, iostream.StreamClosedError):
                    upstream.close()
                    self.json_rpc_error(404, stopped, self._request_id())
                    return
            self._upstream = upstream
            if self._closed:  # the client left meanwhile
                upstream.close()
                return
            relay = _Relay(self)
            try:
                await self._exchange(upstream, found, relay)
            except (iostream.StreamClosedError, httputil.HTTPInputError, OSError):
                upstream.close()
                if self._closed or self._headers_written:
                    return  # the client left (so did the call), or the kernel stopped mid-answer
                if upstream is kept:
                    continue  # a kept connection the kernel's server had closed: once more, on a new one
                self.json_rpc_error(404, stopped, self._request_id())
                return
            if relay.reusable and not self._closed and not upstream.closed():
                _keep(found.port, upstream)
            else:
                upstream.close()
            break
        if not self._closed:
            self.finish(set_content_type=self._headers.get("Content-Type", "application/json"))

    async def _exchange(self, upstream: iostream.IOStream, found: Registration, relay: "_Relay") -> None:
        """Send this request on `upstream` and relay the answer; leaves `upstream` open when it can be
        used again (the HTTP/1.1 default, unless the kernel's server said `Connection: close`)."""
        upstream.set_nodelay(True)  # a kept stream has Nagle back on: headers and body would wait for an ACK
        connection = HTTP1Connection(upstream, True, HTTP1ConnectionParameters(
            decompress=False, max_body_size=_UNBOUNDED))
        # headers and body in one write: two small writes on a kept connection met delayed ACKs (40 ms)
        connection.write_headers(httputil.RequestStartLine(self.request.method, "/mcp", "HTTP/1.1"),
                                 self._upstream_headers(found), self.request.body or None)
        connection.finish()
        if await connection.read_response(relay):
            connection.detach()  # ours again: the connection forgets the stream, which stays open
        else:
            relay.reusable = False

    async def _registration(self, kind: str, target: str) -> Registration | str:
        if kind == "kernels":
            return self.registration_of(target)
        path = target.strip("/")
        kernels = [session["kernel"]["id"] for session in await self.sessions()
                   if session.get("path") == path and session.get("kernel")]
        if not kernels:
            return (f"no running kernel has notebook {path!r} open on this Jupyter server: open it, run "
                    "`%load_ext nbtools` and `%tools --serve` in it")
        found: Registration | str = ""
        for kernel_id in kernels:  # the notebook's serving kernel, if one of its kernels serves
            found = self.registration_of(kernel_id)
            if isinstance(found, Registration):
                break
        return found

    def _upstream_headers(self, found: Registration) -> httputil.HTTPHeaders:
        headers = httputil.HTTPHeaders()
        for name, value in self.request.headers.get_all():
            if name.lower() not in _DROPPED_REQUEST:
                headers.add(name, value)
        headers["Host"] = f"127.0.0.1:{found.port}"
        headers["Authorization"] = f"Bearer {found.token}"
        headers[USER_HEADER] = quote(self._user_name(), safe="")
        if self.request.body:
            headers["Content-Length"] = str(len(self.request.body))
        return headers

    def _user_name(self) -> str:
        if self._names_nobody():
            return server_owner()
        user = self.current_user
        return str(getattr(user, "username", None) or getattr(user, "name", None) or user)

    def _names_nobody(self) -> bool:
        """Whether Jupyter's own identity provider let this request in on the server's token (or with
        authentication turned off) and no login cookie naming a user. It then makes up a new
        anonymous user for the request (the token names nobody), so a client that keeps no cookie,
        or reconnects, would be a stranger each time and never find its task again. One token (or
        none), one person: the server's owner."""
        provider = self.identity_provider
        if type(provider).get_user is not IdentityProvider.get_user:
            return False  # a provider of its own (JupyterHub's) names real users
        if not (self.token_authenticated or not provider.auth_enabled):
            return False
        return provider.get_user_cookie(self) is None

    def set_secure_cookie(self, name: str, value: Any, *args: Any, **kwargs: Any) -> None:
        """Jupyter's login cookie is not handed out here: it would name the user made up for the
        token (see `_names_nobody`), and a client that kept it would be that stranger from then on."""
        if name != self.identity_provider.get_cookie_name(self):
            super().set_secure_cookie(name, value, *args, **kwargs)

    set_signed_cookie = set_secure_cookie  # Tornado's newer name of the same method

    def _request_id(self) -> Any:
        """The JSON-RPC id of the request, so a client matches the error to it (None when unreadable)."""
        try:
            message = json.loads(self.request.body or b"null")
        except ValueError:
            return None
        return message.get("id") if isinstance(message, dict) else None

    def on_connection_close(self) -> None:
        self._closed = True
        if self._upstream is not None:
            self._upstream.close()  # the kernel's server sees its client leave: the call is cancelled
        super().on_connection_close()


class _Relay(httputil.HTTPMessageDelegate):
    """Writes the kernel's answer to the client as it arrives: headers at once, then each piece."""

    def __init__(self, handler: McpProxy) -> None:
        self.handler = handler
        self.reusable = False  # the connection may carry another request once this answer is read

    async def headers_received(self, start_line: Any, headers: httputil.HTTPHeaders) -> None:
        handler = self.handler
        self.reusable = start_line.version == "HTTP/1.1" and (headers.get("Connection") or "").lower() != "close"
        handler.clear_header("Content-Type")
        handler.set_status(start_line.code, start_line.reason)
        for name, value in headers.get_all():
            if name.lower() not in _DROPPED_RESPONSE:
                handler.add_header(name, value)
        if not handler._closed:
            await handler.flush()  # the client waits for these before an event stream's first event

    async def data_received(self, chunk: bytes) -> None:
        if self.handler._closed:
            return
        self.handler.write(chunk)
        await self.handler.flush()

    def finish(self) -> None:
        pass

    def on_connection_close(self) -> None:
        pass
