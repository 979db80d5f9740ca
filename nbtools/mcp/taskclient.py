"""The client side of MCP tasks: `Connection.call(name, arguments, task=True)` starts a task, polls it
as the server asks (`pollInterval`/`pollIntervalMs`), answers its questions, and gives its result.

* 2026-07-28 (the tasks extension): the `tools/call` declares `io.modelcontextprotocol/tasks` in its
  own request's client capabilities (this request only: other calls stay plain calls), and may come
  back as a task (`resultType: "task"`), as an ordinary result (the server chose to answer at once),
  or as an input round (a task-required tool asking first: answered, then sent again). Then
  `tasks/get` until the task ends; an `input_required` task's questions are answered with
  `tasks/update`. Its result is inlined in `tasks/get`.
* 2025-11-25: the `tools/call` carries a `task` field; `tasks/get` until the task ends, then
  `tasks/result`.

The SDK's client (mcp 2.3) has no task API and stamps each request's capabilities itself, so the
requests here go through its session's raw request path (`ClientSession._stamp`, then
`_dispatcher.send_raw_request`): the SDK still adds the protocol version, client info and headers;
this module adds the extension to one request's capabilities, and the `Mcp-Name` header that
`tasks/*` requests carry (the task id). Only elicitation questions are answered (`on_elicit`);
a task asking for sampling or roots fails with an error saying so.

Those two are private to the SDK, so `call_as_task` checks they are there before sending anything and
names what is missing (the [mcp] extra pins `mcp<2.4` for the same reason).

If the wait is cancelled (an interrupt), the task is cancelled on the server (`tasks/cancel`).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Awaitable, Callable

from ..errors import ToolCallError

EXTENSION = "io.modelcontextprotocol/tasks"
TERMINAL = ("completed", "failed", "cancelled")
_MIN_POLL = 0.05  # seconds: a pollInterval of 0 must not become a busy loop
_MAX_POLL = 5.0  # seconds: an absent or huge pollInterval still checks back this often


WORKS_WITH = "mcp 2.3"  # the SDK whose private request path this module was written against


def _check_sdk(session: Any, name: str) -> None:
    """Refuse with one clear line when this SDK lacks the private request path the task requests use."""
    missing = [what for what, there in (
        ("ClientSession._stamp", callable(getattr(session, "_stamp", None))),
        ("ClientSession._dispatcher.send_raw_request",
         callable(getattr(getattr(session, "_dispatcher", None), "send_raw_request", None))),
    ) if not there]
    if missing:
        from importlib.metadata import PackageNotFoundError, version

        try:
            installed = f"mcp {version('mcp')}"
        except PackageNotFoundError:
            installed = "this mcp"
        raise ToolCallError(name, f"call(task=True) needs {' and '.join(missing)}, private to the MCP SDK, which "
                                  f"{installed} lacks: install {WORKS_WITH} (pip install 'mcp>=2.3,<2.4'), or "
                                  "call without task=True")


class _Raw:
    """Raw requests on one SDK `ClientSession`."""

    def __init__(self, session: Any, modern: bool, timeout: float) -> None:
        self.session = session
        self.modern = modern
        self.timeout = timeout

    async def __call__(self, method: str, params: dict, *, task_id: str | None = None) -> dict:
        from mcp.shared.inbound import MCP_NAME_HEADER, encode_header_value
        from mcp_types import CLIENT_CAPABILITIES_META_KEY

        data: dict[str, Any] = {"method": method, "params": dict(params)}
        options: dict[str, Any] = {"timeout": self.timeout}
        self.session._stamp(data, options)
        if self.modern:  # this request declares the tasks extension (the SDK stamped the session's ad)
            meta = data["params"].setdefault("_meta", {})
            capabilities = dict(meta.get(CLIENT_CAPABILITIES_META_KEY) or {})
            capabilities["extensions"] = {**(capabilities.get("extensions") or {}), EXTENSION: {}}
            meta[CLIENT_CAPABILITIES_META_KEY] = capabilities
            if task_id is not None:
                options.setdefault("headers", {})[MCP_NAME_HEADER] = encode_header_value(task_id)
        return await self.session._dispatcher.send_raw_request(method, data["params"], options)


def _pause(task: dict) -> float:
    given = task.get("pollIntervalMs", task.get("pollInterval"))
    seconds = given / 1000 if isinstance(given, (int, float)) and not isinstance(given, bool) else 1.0
    return min(max(seconds, _MIN_POLL), _MAX_POLL)


async def call_as_task(session: Any, name: str, arguments: dict, *, modern: bool, timeout: float,
                       ask: Callable[[str, dict], Awaitable[dict]], ttl_ms: int | None = None) -> Any:
    """Run `tools/call name(arguments)` as a task and return its `CallToolResult` (see the module docs).
    `ask(key, request)` answers one input request (a dict: `method`, `params`) with the answer's dict."""
    import mcp_types as types

    _check_sdk(session, name)
    send = _Raw(session, modern, timeout)
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if not modern:
        params["task"] = {} if ttl_ms is None else {"ttl": ttl_ms}
    answer = await send("tools/call", params)
    while modern and answer.get("resultType") == "input_required":  # a round before the task exists
        answers = {key: await ask(key, request) for key, request in (answer.get("inputRequests") or {}).items()}
        again = {**params, "inputResponses": answers}
        if answer.get("requestState") is not None:
            again["requestState"] = answer["requestState"]
        answer = await send("tools/call", again)
    if modern and answer.get("resultType") != "task":
        return types.CallToolResult.model_validate(answer)  # the server answered at once
    task = answer if modern else answer.get("task")
    if not isinstance(task, dict) or not isinstance(task.get("taskId"), str):
        raise ToolCallError(name, f"the server answered a task-augmented call without a task: {answer!r:.300}")
    task_id = task["taskId"]
    try:
        while task.get("status") not in TERMINAL:
            await asyncio.sleep(_pause(task))
            task = await send("tasks/get", {"taskId": task_id}, task_id=task_id)
            if modern and task.get("status") == "input_required" and task.get("inputRequests"):
                answers = {key: await ask(key, request) for key, request in task["inputRequests"].items()}
                await send("tasks/update", {"taskId": task_id, "inputResponses": answers}, task_id=task_id)
    except BaseException:  # an interrupt or a timeout: the task must not run on unseen
        with contextlib.suppress(BaseException):
            await asyncio.shield(send("tasks/cancel", {"taskId": task_id}, task_id=task_id))
        raise
    status = task["status"]
    if status == "cancelled":
        raise ToolCallError(name, f"the server cancelled task {task_id}" +
                            (f": {task['statusMessage']}" if task.get("statusMessage") else ""))
    if modern:
        if status == "failed":
            error = task.get("error") or {}
            raise ToolCallError(name, f"task {task_id} failed: {error.get('message', 'no reason given')} "
                                      f"(JSON-RPC {error.get('code')})")
        return types.CallToolResult.model_validate(task.get("result") or {})
    return types.CallToolResult.model_validate(await send("tasks/result", {"taskId": task_id}))


def answer_from(request: Any, elicit: Callable[[str, dict, str | None], Awaitable[dict]]) -> Awaitable[dict]:
    """Answer one input request: elicitation through `elicit(message, schema, url)`; anything else refused."""
    method = request.get("method") if isinstance(request, dict) else None
    if method != "elicitation/create":
        raise ToolCallError("tasks", f"the task asked this client for {method!r}, which nbtools' MCP client answers "
                                     "only for elicitation/create; call the tool from a client that offers it")
    params = request.get("params") or {}
    return elicit(str(params.get("message", "")), dict(params.get("requestedSchema") or {}), params.get("url"))


__all__ = ["call_as_task", "answer_from", "EXTENSION"]
