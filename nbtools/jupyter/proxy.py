"""The MCP endpoints `nbtools/mcp/kernels/<id>` and `nbtools/mcp/notebooks/<path>`: each request
streamed to the kernel's loopback server and its answer streamed back, byte for byte.

Not jupyter-server-proxy (it buffers an event stream unless `Accept` is exactly
`text/event-stream`, and MCP clients send `application/json, text/event-stream`) and no JSON-RPC of
our own: Tornado's HTTP/1.1 client connection (`HTTP1Connection`) on a loopback socket, whose
response delegate writes and flushes every piece as it arrives. So progress and log notifications
reach the client while a call runs, and `subscriptions/listen` / GET streams stay open.

Both ways the proxy changes a request: it drops the client's `Authorization` (a Jupyter token the
kernel has no business seeing), cookies, `Origin` (Jupyter checked it) and any user header the
client sent, and adds the kernel's private token and the Jupyter user's name (`USER_HEADER`), which
the kernel's server believes only with that token. A client that disconnects (how a 2026-07-28 client
cancels a call) closes the upstream connection at once, which the kernel's server takes as the
cancellation of that call.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from tornado import httputil, iostream, web
from tornado.http1connection import HTTP1Connection, HTTP1ConnectionParameters
from tornado.tcpclient import TCPClient

from jupyter_server.auth.decorator import authorized

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
        try:
            upstream = await TCPClient().connect("127.0.0.1", found.port)
        except OSError:
            self.json_rpc_error(404, f"kernel {found.kernel_id} stopped serving MCP: run `%tools --serve` "
                                     "in its notebook again", self._request_id())
            return
        self._upstream = upstream
        if self._closed:  # the client left while we connected
            upstream.close()
            return
        connection = HTTP1Connection(upstream, True, HTTP1ConnectionParameters(
            no_keep_alive=True, decompress=False, max_body_size=_UNBOUNDED))
        try:
            connection.write_headers(httputil.RequestStartLine(self.request.method, "/mcp", "HTTP/1.1"),
                                     self._upstream_headers(found))
            if self.request.body:
                connection.write(self.request.body)
            connection.finish()
            await connection.read_response(_Relay(self))
        except (iostream.StreamClosedError, httputil.HTTPInputError, OSError):
            if self._closed or self._headers_written:
                return  # the client left (so did the call), or the kernel stopped mid-answer
            self.json_rpc_error(404, f"kernel {found.kernel_id} stopped serving MCP while answering: run "
                                     "`%tools --serve` in its notebook again", self._request_id())
            return
        finally:
            upstream.close()
        if not self._closed:
            self.finish(set_content_type=self._headers.get("Content-Type", "application/json"))

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
        user = self.current_user
        return str(getattr(user, "username", None) or getattr(user, "name", None) or user)

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

    async def headers_received(self, start_line: Any, headers: httputil.HTTPHeaders) -> None:
        handler = self.handler
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
