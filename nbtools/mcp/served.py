"""`ServedContext`: the `ToolContext` of a `tools/call` served over MCP.

Progress goes out as `notifications/progress` on the request's `progressToken` (nothing when the
client sent none), log lines as `notifications/message` at or above the level the client chose with
`logging/setLevel` (default "info"), `sample` is `sampling/createMessage` and `elicit` is
`elicitation/create`, each only when the client declared that capability.

At protocol 2026-07-28 (stateless: no server-to-client requests) `sample`, `elicit` and `roots` work
by input-required results (SEP-2322): a question the client has not answered yet is recorded under
its `key` and the call ends; the server answers `InputRequiredResult` with every recorded question,
the client answers them and calls again, and the tool runs again from its start, now getting the
answers (those of earlier rounds ride in the `requestState`, sealed by the SDK's
`RequestStateBoundary`, so a client cannot forge them). Work a tool does before its first question
is therefore repeated each round: ask first. Questions asked together (`asyncio.gather`) go out in
one round. A question for a capability the client did not declare raises `MissingCapability` (a
`ContextUnavailable`): a tool may catch it and do without; if it does not, the client gets the
JSON-RPC error -32021 naming the capability.

`progress` and `log` are plain calls that tools make from any thread: on the server's event loop they
queue the notification (sent in order as soon as the tool yields, and always before the result:
`flush` is awaited before the response goes out); from another thread (a plain function in a worker
thread under `nbtools serve`, or any call on a kernel's main thread while the transport has its own
thread) they wait until it is sent. `sample`, `elicit` and `roots` await the transport's loop from
wherever the call runs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import inspect
from typing import Any, Awaitable, Callable

import json

from ..context import LOG_LEVELS, ContextUnavailable, Elicitation, ToolContext, check_level

LEVEL_KEY = "nbtools/log_level"
"""Where a connection's `logging/setLevel` choice is kept (in its `state`)."""
DEFAULT_LEVEL = "info"
_SEND_TIMEOUT = 10.0  # a worker thread waits at most this long for one notification to go out
_LOOP_CHECK = 0.25  # seconds between looks at whether the transport's loop still runs (a question waits)


def _session_ended() -> "ContextUnavailable":
    return ContextUnavailable("the MCP session of this call has ended (the client left or the server "
                              "stopped): nobody can answer; finish without asking")


def connection_of(request_ctx: Any) -> Any:
    """The SDK's per-client `Connection` behind a request context (None if this SDK version hides it).

    mcp 2.3's low-level handlers get a `ServerRequestContext` whose session wraps the connection
    without exposing it (the SDK plans a Context rework); its `state` dict and `exit_stack` are the
    documented place for per-connection data, so it is read here, defensively, in one place.
    """
    return getattr(getattr(request_ctx, "session", None), "_connection", None)


def client_name(request_ctx: Any) -> str:
    """The name the client gave (`clientInfo.name`), else "an MCP client"."""
    params = getattr(getattr(request_ctx, "session", None), "client_params", None)
    info = getattr(params, "client_info", None)
    return str(getattr(info, "name", None) or "an MCP client")


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


class MissingCapability(ContextUnavailable):
    """A served call asked the client for something it did not declare (2026-07-28: -32021)."""

    def __init__(self, message: str, capability: str) -> None:
        super().__init__(message)
        self.capability = capability


class _InputNeeded(BaseException):
    """Ends a tool run at a question the client has not answered yet (2026-07-28); never seen by users:
    a BaseException so `except Exception` in a tool does not swallow it."""


class ServedContext(ToolContext):
    """The context of one `tools/call` (or `prompts/get`, `resources/read`) request (see the module docs)."""

    where = "on an MCP server"

    def __init__(self, request_ctx: Any, loop: asyncio.AbstractEventLoop, params: Any = None) -> None:
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        self._request = request_ctx
        self._session = request_ctx.session
        self._loop = loop
        self._threshold = connection_level(request_ctx)
        self._pending: list[asyncio.Future] = []
        self._order: asyncio.Lock | None = None
        self._cancelled = False
        # 2026-07-28: questions go out in an InputRequiredResult, answers come back with the retry
        self._input_required = getattr(request_ctx, "protocol_version", None) in MODERN_PROTOCOL_VERSIONS
        self._answers: dict[str, dict] = _state_answers(getattr(params, "request_state", None))
        for key, answer in (getattr(params, "input_responses", None) or {}).items():
            self._answers[key] = answer.model_dump(by_alias=True, mode="json", exclude_none=True) \
                if hasattr(answer, "model_dump") else answer
        self.questions: dict[str, Any] = {}  # key -> InputRequest not answered yet
        from .tasks import in_task

        # the task this call runs as (read here, on the transport's loop: the tool may run on another thread)
        self._task_run = in_task.get()
        self.missing: MissingCapability | None = None
        self._asked = 0
        self.notes: list[str] = []  # what the call's own machinery says it cost (the activity log shows it)

    # -- notifications (progress, log) ---------------------------------------------------------------
    def progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
        meta = self._request.meta or {}
        token = meta.get("progress_token", meta.get("progressToken"))
        if token is None:
            return  # the client did not ask for progress
        if self._task_run is not None:  # 2025-11-25: the token lives as long as the task (its request is answered)
            self._send(lambda: self._task_run.progress(self._session, token, float(done), total, message))
            return
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
        sending = self._in_order(make)
        try:
            future = asyncio.run_coroutine_threadsafe(sending, self._loop)
        except RuntimeError:  # the transport's loop has closed (the server stopped): nobody to tell
            sending.close()
            return
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
    async def _on_transport(self, make: Callable[[], Awaitable[Any]]) -> Any:
        """Await `make()` on the transport's loop (the session lives there), also from a call running
        on a kernel's main thread (`handoff`); cancelling this wait cancels the request."""
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if here is self._loop:
            return await make()

        async def run() -> Any:
            return await make()

        waiting = run()
        try:
            future = asyncio.run_coroutine_threadsafe(waiting, self._loop)
        except RuntimeError:  # the transport's loop has closed: this call's client and server are gone
            waiting.close()
            raise _session_ended() from None
        answer = asyncio.wrap_future(future)
        # The loop may stop after the question was scheduled (the server stopping): nothing would
        # ever settle `future`, so the tool's await would hang. Look at the loop now and then.
        while True:
            done, _ = await asyncio.wait({answer}, timeout=_LOOP_CHECK)
            if done:
                return answer.result()
            if not self._loop.is_running():
                break
        if not self._loop.is_closed():  # cancelling posts to that loop: the question goes if it ever runs again
            with contextlib.suppress(RuntimeError):
                answer.cancel()
        if inspect.getcoroutinestate(waiting) == inspect.CORO_CREATED:
            waiting.close()  # never started: no "coroutine was never awaited" warning later
        raise _session_ended()

    def _offers(self, capability: str) -> bool:
        capabilities = self._session.client_capabilities
        return capabilities is not None and getattr(capabilities, capability, None) is not None

    def _require(self, capability: str, what: str, instead: str) -> None:
        if self._offers(capability):
            return
        self.missing = MissingCapability(f"{what}: this MCP client does not offer {capability} (it declared no "
                                         f"`{capability}` capability); {instead}", capability)
        raise self.missing

    async def _ask_client(self, request: Any, result_type: Any,
                          plain: Callable[[], Awaitable[Any]] | None = None) -> Any:
        """Send `request` to the client (2025-11-25) and return its typed answer: related to this call's
        request (`plain()` when given), or, in a task (whose request has been answered), through the
        task (`tasks.TaskRun`)."""
        run = self._task_run
        if run is not None:
            return await self._on_transport(lambda: run.ask(self._session, request, result_type))
        return await self._on_transport(plain or (lambda: self._session.send_request(request, result_type,
                                                                                    metadata=self._related())))

    def _related(self) -> Any:
        from mcp.shared.message import ServerMessageMetadata

        return ServerMessageMetadata(related_request_id=self._request.request_id)

    def _ask(self, kind: str, key: str | None, request: Any) -> dict:
        """2026-07-28: the client's answer to `request` (a dict), or record the question and end this run."""
        self._asked += 1
        key = key or f"{kind}-{self._asked}"
        if key in self._answers:
            return self._answers[key]
        self.questions[key] = request
        raise _InputNeeded(key)

    def input_required(self) -> Any:
        """After the run: the `InputRequiredResult` asking the questions recorded, else None."""
        if not self.questions:
            return None
        import mcp_types as types

        state = json.dumps({"answers": self._answers}, separators=(",", ":"))
        return types.InputRequiredResult(input_requests=dict(self.questions), request_state=state)

    async def sample(self, messages: Any, *, max_tokens: int = 1000, system: str | None = None,
                     temperature: float | None = None, key: str | None = None) -> Any:
        self._require("sampling", "ctx.sample()", "ask for what you need as a tool argument instead")
        import mcp_types as types

        params = types.CreateMessageRequestParams(messages=_sampling_messages(messages), max_tokens=int(max_tokens),
                                                  system_prompt=system, temperature=temperature)
        if self._input_required:
            answer = self._ask("sample", key, types.CreateMessageRequest(params=params))
            try:
                result: Any = types.CreateMessageResult.model_validate(answer)
            except ValueError as error:
                raise ContextUnavailable(f"ctx.sample(): the client's answer is not a sampling result ({error})") from None
        else:
            result = await self._ask_client(types.CreateMessageRequest(params=params), types.CreateMessageResult)
        return _reply_value(result.content)

    async def elicit(self, message: str, schema: dict, *, key: str | None = None) -> Elicitation:
        self._require("elicitation", "ctx.elicit()", "take the values as tool arguments instead")
        if self._input_required:
            import mcp_types as types

            request = types.ElicitRequest(params=types.ElicitRequestFormParams(message=str(message),
                                                                               requested_schema=dict(schema)))
            answer = self._ask("elicit", key, request)
            if not isinstance(answer, dict) or answer.get("action") not in ("accept", "decline", "cancel"):
                raise ContextUnavailable(f"ctx.elicit(): the client's answer is not an elicitation result: {answer!r}")
            content = answer.get("content")
            return Elicitation(answer["action"], dict(content) if isinstance(content, dict) else None)
        import mcp_types as types

        result = await self._ask_client(
            types.ElicitRequest(params=types.ElicitRequestFormParams(message=str(message),
                                                                     requested_schema=dict(schema))),
            types.ElicitResult, lambda: self._session.elicit_form(str(message), dict(schema), self._request.request_id))
        return Elicitation(result.action, dict(result.content) if result.content is not None else None)

    async def roots(self, *, key: str | None = None) -> list[dict]:
        """The client's roots: `[{"uri", "name"}]` (`roots/list`)."""
        self._require("roots", "ctx.roots()", "take the folders as a tool argument instead")
        import mcp_types as types

        if self._input_required:
            answer = self._ask("roots", key, types.ListRootsRequest())
            result = types.ListRootsResult.model_validate(answer)
        else:
            result = await self._ask_client(types.ListRootsRequest(), types.ListRootsResult)
        return [{"uri": str(root.uri), "name": root.name} for root in result.roots]

    def note(self, text: str) -> None:
        """Record a line for this request's activity record (a shared variable's preview: its cost)."""
        if len(self.notes) < 10:
            self.notes.append(str(text)[:200])

    # -- cancellation -----------------------------------------------------------------------------------
    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        """Mark the call cancelled (the client sent `notifications/cancelled`, or the server is stopping)."""
        self._cancelled = True


def round_outcome(served: ServedContext, result: Any) -> Any:
    """What a request answers after its run: the questions it still has (2026-07-28), the -32021 error
    for a capability the client lacks (2026-07-28: the tool did not do without it), else `result`."""
    questions = served.input_required()
    if questions is not None:
        return questions
    if served.missing is not None and served._input_required and getattr(result, "is_error", True):
        import mcp_types as types
        from mcp.shared.exceptions import MCPError

        required = types.ClientCapabilities.model_validate({served.missing.capability: {}})
        data = types.MissingRequiredClientCapabilityErrorData(required_capabilities=required)
        raise MCPError(types.MISSING_REQUIRED_CLIENT_CAPABILITY, str(served.missing),
                       data=data.model_dump(by_alias=True, mode="json", exclude_none=True))
    return result


def _state_answers(state: Any) -> dict[str, dict]:
    """The answers of earlier rounds from a `requestState` this server minted (verified by the SDK's
    `RequestStateBoundary` before a handler sees it)."""
    if not isinstance(state, str):
        return {}
    try:
        answers = json.loads(state).get("answers", {})
    except (ValueError, AttributeError):
        return {}
    return dict(answers) if isinstance(answers, dict) else {}


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
