"""`ServedContext`: the `ToolContext` of a `tools/call` served over MCP.

Progress goes out as `notifications/progress` on the request's `progressToken` (nothing when the
client sent none), log lines as `notifications/message` at or above the level the client chose with
`logging/setLevel` (default "info"), `sample` is `sampling/createMessage` and `elicit` is
`elicitation/create`, each only when the client declared that capability.

`progress` and `log` are plain calls that tools make from any thread: on the server's event loop they
queue the notification (sent in order as soon as the tool yields, and always before the result:
`flush` is awaited before the response goes out); from a worker thread (a plain function under
`nbtools serve`) they wait until it is sent.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any, Awaitable, Callable

from ..context import LOG_LEVELS, ContextUnavailable, Elicitation, ToolContext, check_level

LEVEL_KEY = "nbtools/log_level"
"""Where a connection's `logging/setLevel` choice is kept (in its `state`)."""
DEFAULT_LEVEL = "info"
_SEND_TIMEOUT = 10.0  # a worker thread waits at most this long for one notification to go out


def connection_of(request_ctx: Any) -> Any:
    """The SDK's per-client `Connection` behind a request context (None if this SDK version hides it).

    mcp 2.3's low-level handlers get a `ServerRequestContext` whose session wraps the connection
    without exposing it (the SDK plans a Context rework); its `state` dict and `exit_stack` are the
    documented place for per-connection data, so it is read here, defensively, in one place.
    """
    return getattr(getattr(request_ctx, "session", None), "_connection", None)


def connection_level(request_ctx: Any) -> str:
    """The least severe level this request's client wants log lines at."""
    from mcp_types import LOG_LEVEL_META_KEY
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    # 2026-07-28+: each request opts in to logs in its own `_meta`; earlier: `logging/setLevel`.
    if getattr(request_ctx, "protocol_version", None) in MODERN_PROTOCOL_VERSIONS:
        requested = (request_ctx.meta or {}).get(LOG_LEVEL_META_KEY)
        return requested if requested in LOG_LEVELS else "off"
    connection = connection_of(request_ctx)
    state = getattr(connection, "state", None)
    return state.get(LEVEL_KEY, DEFAULT_LEVEL) if isinstance(state, dict) else DEFAULT_LEVEL


class ServedContext(ToolContext):
    """The context of one `tools/call` request (see the module docs)."""

    where = "on an MCP server"

    def __init__(self, request_ctx: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._request = request_ctx
        self._session = request_ctx.session
        self._loop = loop
        self._threshold = connection_level(request_ctx)
        self._pending: list[asyncio.Future] = []
        self._order: asyncio.Lock | None = None
        self._cancelled = False

    # -- notifications (progress, log) ---------------------------------------------------------------
    def progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
        meta = self._request.meta or {}
        if meta.get("progress_token", meta.get("progressToken")) is None:
            return  # the client did not ask for progress
        self._send(lambda: self._session.report_progress(float(done), None if total is None else float(total),
                                                         None if message is None else str(message)))

    def log(self, message: Any, level: str = "info") -> None:
        level = check_level(level)
        if self._threshold == "off" or LOG_LEVELS.index(level) < LOG_LEVELS.index(self._threshold):
            return
        import mcp_types as types

        data = message if isinstance(message, (str, int, float, bool, dict, list)) or message is None else str(message)
        note = types.LoggingMessageNotification(params=types.LoggingMessageNotificationParams(level=level, data=data))
        self._send(lambda: self._session.send_notification(note, self._request.request_id))

    def _send(self, make: Callable[[], Awaitable[Any]]) -> None:
        """Send one notification after the ones before it (queued on the loop, or waited for from a thread)."""
        try:
            on_loop = asyncio.get_running_loop() is self._loop
        except RuntimeError:
            on_loop = False
        if on_loop:
            self._pending.append(self._loop.create_task(self._in_order(make)))
            return
        future = asyncio.run_coroutine_threadsafe(self._in_order(make), self._loop)
        try:
            future.result(_SEND_TIMEOUT)
        except (concurrent.futures.TimeoutError, concurrent.futures.CancelledError):
            pass  # notifications are advisory: a slow or gone client must not stop the tool

    async def _in_order(self, make: Callable[[], Awaitable[Any]]) -> None:
        if self._order is None:
            self._order = asyncio.Lock()
        async with self._order:  # asyncio locks are fair: tasks send in the order they were queued
            try:
                await make()
            except Exception:  # a gone client: notifications are best-effort
                pass

    async def flush(self) -> None:
        """Wait until every queued notification went out (before the result is sent)."""
        while self._pending:
            pending, self._pending = self._pending, []
            await asyncio.gather(*pending, return_exceptions=True)

    # -- requests to the client (sampling, elicitation) ------------------------------------------------
    def _offers(self, capability: str) -> bool:
        capabilities = self._session.client_capabilities
        return capabilities is not None and getattr(capabilities, capability, None) is not None

    def _related(self) -> Any:
        from mcp.shared.message import ServerMessageMetadata

        return ServerMessageMetadata(related_request_id=self._request.request_id)

    async def sample(self, messages: Any, *, max_tokens: int = 1000, system: str | None = None,
                     temperature: float | None = None) -> Any:
        if not self._offers("sampling"):
            raise ContextUnavailable("ctx.sample(): this MCP client does not offer sampling (it declared no "
                                     "`sampling` capability); ask for what you need as a tool argument instead")
        import mcp_types as types

        params = types.CreateMessageRequestParams(messages=_sampling_messages(messages), max_tokens=int(max_tokens),
                                                  system_prompt=system, temperature=temperature)
        result = await self._session.send_request(types.CreateMessageRequest(params=params),
                                                  types.CreateMessageResult, metadata=self._related())
        return _reply_value(result.content)

    async def elicit(self, message: str, schema: dict) -> Elicitation:
        if not self._offers("elicitation"):
            raise ContextUnavailable("ctx.elicit(): this MCP client does not offer elicitation (it declared no "
                                     "`elicitation` capability); take the values as tool arguments instead")
        result = await self._session.elicit_form(str(message), dict(schema), self._request.request_id)
        return Elicitation(result.action, dict(result.content) if result.content is not None else None)

    # -- cancellation -----------------------------------------------------------------------------------
    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        """Mark the call cancelled (the client sent `notifications/cancelled`, or the server is stopping)."""
        self._cancelled = True


def _sampling_messages(messages: Any) -> list:
    """Text, or `{"role", "content"}` dicts with text content (or already SDK messages) -> SamplingMessages."""
    import mcp_types as types

    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    out = []
    for item in messages:
        if isinstance(item, types.SamplingMessage):
            out.append(item)
            continue
        if not isinstance(item, dict) or "content" not in item:
            raise TypeError(f"ctx.sample(): each message is a dict with 'role' and 'content', got {item!r}")
        content = item["content"]
        if isinstance(content, str):
            content = types.TextContent(type="text", text=content)
        out.append(types.SamplingMessage(role=item.get("role", "user"), content=content))
    return out


def _reply_value(content: Any) -> Any:
    """A sampling reply's content: its text, or an Image/Audio record (read as a tool result's blocks are)."""
    from .toolresults import content_part

    return content_part(content) if getattr(content, "type", None) in ("text", "image", "audio") else content
