"""Long calls as MCP tasks: the task store, and the methods that start, show, feed and stop tasks.

The `mcp` SDK (2.3) has the task types and the hooks (request handlers, `Server.middleware`,
`Server.extensions`) but no store, so the store is this module. Two revisions, one store:

* 2026-07-28: the tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663), advertised under
  `capabilities.extensions`. Task creation is the server's choice: a `tools/call` whose request
  declares the extension (in its `_meta` client capabilities) gets a flat `CreateTaskResult`
  (`resultType: "task"`) for a tool whose task support is optional or required; a required tool
  without it is the error -32021. `tasks/get` inlines the result (or the JSON-RPC error of a
  failed task, or the questions of an `input_required` one), `tasks/update` answers questions,
  `tasks/cancel` acknowledges with an empty result; `tasks/result` and `tasks/list` do not exist
  (-32601). Over HTTP the `Mcp-Name` header must equal the task id (-32020 otherwise).
* 2025-11-25: the revision's own text. `capabilities.tasks` (list, cancel, tools/call), each tool's
  `execution.taskSupport`; a `tools/call` with a `task` field gets `{task: {...}}`; `tasks/get`,
  `tasks/list`, `tasks/result` (blocks until the task ends, then answers what the call would have
  answered), `tasks/cancel` (-32602 for a task that already ended); `notifications/tasks/status`
  on every change while the creating session is open. A tool error is status `failed` there.

A task runs the same path as a plain call (validation, approval, the kernel's main thread,
stopping): the `tools/call` handler itself, in an asyncio task of the transport's loop that no
request owns, so it survives its client. `tasks/cancel` cancels that asyncio task, which stops the
call as a client's cancellation does (`handoff`, `stopping`). Questions (`ctx.elicit`,
`ctx.sample`, `ctx.roots`) inside a 2026-07-28 task park it in `input_required`; once every
question is answered the tool runs again with all the answers (as in input rounds). A task-required
tool's questions asked at its very start (within `PRELUDE` seconds) come back as an ordinary input
round before any task exists (SEP-2663's composition of input rounds and tasks); later ones are
asked inside the task.

A task belongs to (token, client name): the fingerprint of the request's `Authorization` header and
the name the client gave. Any holder of the token can give any client name, so the name separates
a token holder's clients, not people. Other owners get -32602 as for an unknown id. A task is kept
for its ttl (asked for, or `DEFAULT_TTL_MS`; at most `MAX_TTL_MS`: a longer ask is shortened and
the task's `statusMessage` says so), then removed, and stopped if it still runs.

Room: the server keeps at most `MAX_TASKS` tasks, one token at most `MAX_KEPT_PER_TOKEN` (client names
are free, tokens are not), one owner at most `MAX_RUNNING_PER_CLIENT` unfinished ones. When a new task
finds no room, finished tasks are dropped before their ttl ends, oldest first: those whose outcome the
client has already fetched, then the same token's, then others'. A dropped task's unfetched result is
lost (`tasks/get` answers -32602). Only when every kept task is still running is a new one refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import secrets
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, Callable

from .access import origin_of, proxied_user

EXTENSION = "io.modelcontextprotocol/tasks"
RELATED_TASK = "io.modelcontextprotocol/related-task"
TERMINAL = frozenset({"completed", "failed", "cancelled"})
SUPPORT = ("optional", "required", "forbidden")
DEFAULT_TTL_MS = 60 * 60 * 1000  # an hour
MAX_TTL_MS = 24 * 60 * 60 * 1000  # a day
POLL_INTERVAL_MS = 500
PRELUDE = 0.5  # seconds a task-required tool may take to ask its first questions as an input round
PAGE = 50  # tasks per tasks/list page
MAX_TASKS = 1000  # tasks kept per server: past it, finished ones are dropped to make room
MAX_KEPT_PER_TOKEN = 500  # tasks kept per token: one token holder cannot fill the server
MAX_RUNNING_PER_CLIENT = 100  # unfinished tasks one owner may have: each holds a run (and maybe a thread)


class TaskRun:
    """What a task's run knows of its task (`in_task`): the task (None until created) and its store."""

    __slots__ = ("task", "store")

    def __init__(self, store: "TaskStore") -> None:
        self.task: Task | None = None
        self.store = store

    async def ask(self, session: Any, request: Any, result_type: Any) -> Any:
        """2025-11-25: a question the task's tool asks the client. The request that started the task has
        been answered, so it goes on the session's own stream, tagged with the task (`related-task`);
        the task is `input_required` until the answer comes."""
        task = self.task
        if task is not None:
            meta = {**(request.params.meta or {}), RELATED_TASK: {"taskId": task.task_id}}
            request = request.model_copy(update={"params": request.params.model_copy(update={"meta": meta})})
            self.store.change(task, "input_required")
        try:
            return await session.send_request(request, result_type)
        finally:
            if task is not None and task.status == "input_required":
                self.store.change(task, "working")


    async def progress(self, session: Any, token: Any, done: float, total: Any, message: Any) -> None:
        """2025-11-25: a progress notification of the task's call, on the session's own stream."""
        params: dict[str, Any] = {"progressToken": token, "progress": done}
        if total is not None:
            params["total"] = float(total)
        if message is not None:
            params["message"] = str(message)
        if self.task is not None:
            params["_meta"] = {RELATED_TASK: {"taskId": self.task.task_id}}
        outbound = getattr(getattr(session, "_connection", None), "outbound", None)
        if outbound is None:  # private to the SDK (mcp 2.3): say what is missing rather than fail obscurely
            from ..errors import NbtoolsError

            raise NbtoolsError("a 2025-11-25 task's progress needs ServerSession._connection.outbound, private to "
                               "the MCP SDK and missing from this mcp version: install mcp 2.3 "
                               "(pip install 'mcp>=2.3,<2.4')")
        await outbound.notify("notifications/progress", params)


# Set inside a task's run: the tools/call handler then leaves the activity log to the task, and the
# served context sends a 2025-11-25 task's questions through `TaskRun.ask`
in_task: contextvars.ContextVar[TaskRun | None] = contextvars.ContextVar("nbtools_in_task", default=None)


def task_support(tool: Any, kernel: bool) -> str:
    """A tool's task support: what `@tool(task=...)` said, else optional for `async def` tools and for
    every tool served from a kernel (both can be stopped), else forbidden (a plain function in a worker
    thread runs to its end whatever happens)."""
    given = getattr(tool, "task", None)
    if given is not None:
        return given
    return "optional" if tool.is_async or kernel else "forbidden"


def _iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def owner_of(ctx: Any, client_name: Callable[[Any], str]) -> tuple[str, str]:
    """(fingerprint of the request's bearer token, `client_name(ctx)`) of a request. Through the
    Jupyter Server extension every Jupyter user's request bears the extension's one private token:
    the user it vouches for (`access.proxied_user`) is part of the fingerprint then."""
    headers = getattr(getattr(ctx, "request", None), "headers", None)
    auth = headers.get("authorization", "") if headers is not None else ""
    user = proxied_user(ctx)
    key = auth if user is None else f"{auth}\nuser:{user}"
    return (hashlib.sha256(key.encode()).hexdigest()[:32] if key else "", client_name(ctx))


def _modern(ctx: Any) -> bool:
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return getattr(ctx, "protocol_version", None) in MODERN_PROTOCOL_VERSIONS


def _error(code: int, message: str, data: Any = None) -> Exception:
    from mcp.shared.exceptions import MCPError

    return MCPError(code, message, data=data)


@dataclass(eq=False)
class Task:
    """One task: its wire fields, what it returned, and the asyncio task running it."""

    task_id: str
    owner: tuple[str, str]
    tool: str
    modern: bool  # created at 2026-07-28 (the extension), else 2025-11-25
    ttl_ms: int
    message: str | None = None
    status: str = "working"
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    expires: float = 0.0  # time.monotonic() when it is removed
    result: dict | None = None  # the call's result (wire form)
    error: dict | None = None  # the JSON-RPC error of a failed call
    questions: dict = field(default_factory=dict)  # key -> input request not answered yet (2026-07-28)
    answers: dict = field(default_factory=dict)  # key -> the client's answer
    job: "asyncio.Task[Any] | None" = None
    again: Callable[[dict], "asyncio.Task[Any]"] | None = None  # runs the call again with answers
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    fetched: bool = False  # the client has seen its outcome: dropping it early loses nothing
    record: Any = None  # its row in the activity log
    connection: Any = None  # 2025-11-25: the session told of status changes

    def wire(self) -> dict:
        """The task's fields in its revision's spelling."""
        fields: dict[str, Any] = {"taskId": self.task_id, "status": self.status, "createdAt": _iso(self.created),
                                  "lastUpdatedAt": _iso(self.updated)}
        if self.modern:
            fields.update(ttlMs=self.ttl_ms, pollIntervalMs=POLL_INTERVAL_MS)
        else:
            fields.update(ttl=self.ttl_ms, pollInterval=POLL_INTERVAL_MS)
        if self.message:
            fields["statusMessage"] = self.message
        return fields

    def detailed(self) -> dict:
        """2026-07-28 `tasks/get`: the task with its result, error or questions inlined."""
        fields = self.wire()
        if self.status == "completed" and self.result is not None:
            fields["result"] = self.result
        elif self.status == "failed" and self.error is not None:
            fields["error"] = self.error
        elif self.status == "input_required":
            fields["inputRequests"] = dict(self.questions)
        return fields


class TaskStore:
    """The tasks of one server, by id (see the module docs). Used on the transport's loop only."""

    def __init__(self, activity: Any = None) -> None:
        self.tasks: dict[str, Task] = {}
        self.activity = activity

    def create(self, owner: tuple[str, str], tool: str, arguments: Any, *, modern: bool,
               ttl_ms: Any = None, user: str | None = None) -> Task:
        self.admit(owner)
        asked = ttl_ms if isinstance(ttl_ms, int) and not isinstance(ttl_ms, bool) and ttl_ms > 0 else None
        ttl = min(asked or DEFAULT_TTL_MS, MAX_TTL_MS)
        message = (f"ttl shortened from {asked} ms to {ttl} ms: this server keeps a task at most "
                   f"{MAX_TTL_MS // 3_600_000} hours") if asked is not None and asked > ttl else None
        task = Task(secrets.token_urlsafe(16), owner, tool, modern, ttl, message)
        task.expires = time.monotonic() + ttl / 1000
        self.tasks[task.task_id] = task
        with contextlib.suppress(RuntimeError):  # removed (and stopped) once its ttl is over
            asyncio.get_running_loop().call_later(ttl / 1000 + 0.05, self.purge)
        if self.activity is not None:
            task.record = self.activity.begin(owner[1], tool, arguments, kind="task", user=user,
                                              origin=origin_of(owner[1], user))
            self.activity.state(task.record, "working")
        return task

    def admit(self, owner: tuple[str, str]) -> None:
        """Make room for a new task of `owner` (dropping finished tasks, see the module docs), or refuse it
        before anything of it runs when the server, its token or `owner` has too many unfinished tasks."""
        self.purge()
        running = sum(1 for task in self.tasks.values() if task.owner == owner and task.status not in TERMINAL)
        if running >= MAX_RUNNING_PER_CLIENT:
            raise _error(-32600, f"this client already has {running} unfinished tasks on this server: wait for some "
                                 "to end, or stop them with tasks/cancel, then call again")
        token = owner[0]
        kept = sum(1 for task in self.tasks.values() if task.owner[0] == token)
        if kept >= MAX_KEPT_PER_TOKEN and not self._drop(owner, same_token_only=True):
            raise _error(-32600, f"this token already has {MAX_KEPT_PER_TOKEN} unfinished tasks on this server: "
                                 "wait for some to end, or stop them with tasks/cancel, then call again")
        if len(self.tasks) >= MAX_TASKS and not self._drop(owner, same_token_only=False):
            raise _error(-32600, f"this server already runs {MAX_TASKS} unfinished tasks: wait for some to end, "
                                 "or stop yours with tasks/cancel, then call again")

    def _drop(self, owner: tuple[str, str], *, same_token_only: bool) -> bool:
        """Drop one finished task to make room for `owner`'s new one: fetched ones first, then the same
        token's, oldest first. False when no finished task may go."""
        finished = [task for task in self.tasks.values() if task.status in TERMINAL
                    and (not same_token_only or task.owner[0] == owner[0])]
        if not finished:
            return False
        victim = min(finished, key=lambda task: (not task.fetched, task.owner[0] != owner[0], task.updated))
        del self.tasks[victim.task_id]
        return True

    def find(self, task_id: Any, owner: tuple[str, str]) -> Task:
        """The caller's task, else -32602 (also for another owner's task: its existence is not told)."""
        self.purge()
        task = self.tasks.get(task_id) if isinstance(task_id, str) else None
        if task is None or task.owner != owner:
            raise _error(-32602, f"Failed to retrieve task: no task {task_id!r} for this client (unknown id, "
                                 "expired after its ttl, finished and dropped to make room for newer tasks, or "
                                 "created by another client)")
        return task

    def owned(self, owner: tuple[str, str]) -> list[Task]:
        self.purge()
        return [task for task in self.tasks.values() if task.owner == owner]

    def purge(self) -> None:
        """Remove the tasks whose ttl is over, stopping those still running."""
        now = time.monotonic()
        for task in [task for task in self.tasks.values() if task.expires <= now]:
            del self.tasks[task.task_id]
            if task.status not in TERMINAL:
                self.change(task, "cancelled", message="its ttl ran out before it finished")
                if task.job is not None:
                    task.job.cancel()

    def change(self, task: Task, status: str, *, message: str | None = None) -> None:
        """Move `task` to `status` (never out of a terminal one) and tell who listens."""
        if task.status in TERMINAL:
            return
        task.status, task.updated = status, time.time()
        if message is not None:
            task.message = message
        if status in TERMINAL:
            task.ended.set()
            task.questions = {}
        if task.record is not None and self.activity is not None:
            task.record.result = task.result  # its wire form, for watchers (the notebook's cell: `jupyter.cells`)
            self.activity.state(task.record, status.replace("_", " "), _outcome(task))
        if task.connection is not None:  # 2025-11-25: notifications/tasks/status, best-effort
            with contextlib.suppress(RuntimeError):
                asyncio.get_running_loop().create_task(_notify_status(task.connection, task.wire()))


async def _notify_status(connection: Any, fields: dict) -> None:
    with contextlib.suppress(Exception):  # the session has ended: nobody to tell
        await connection.outbound.notify("notifications/tasks/status", fields)


def _outcome(task: Task) -> str:
    if task.status == "completed" and task.result is not None:
        from .activity import wire_text

        return wire_text(task.result)
    if task.status == "failed":
        if task.error is not None:
            return f"error {task.error.get('code')}: {task.error.get('message')}"
        from .activity import wire_text

        return wire_text(task.result or {})
    if task.status == "input_required":
        return "waiting for the client's answers (" + ", ".join(task.questions) + ")"
    return task.message or ""


def _declares_extension(ctx: Any) -> bool:
    """Whether this 2026-07-28 request declares the tasks extension in its client capabilities."""
    from mcp_types import CLIENT_CAPABILITIES_META_KEY

    meta = getattr(ctx, "meta", None) or {}
    capabilities = meta.get(CLIENT_CAPABILITIES_META_KEY) if isinstance(meta, dict) else None
    if capabilities is None:
        capabilities = getattr(getattr(ctx, "session", None), "client_capabilities", None)
    extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else \
        getattr(capabilities, "extensions", None)
    return isinstance(extensions, dict) and EXTENSION in extensions


def _needs_extension(what: str) -> Exception:
    return _error(-32021, f"{what} needs the tasks extension: declare {EXTENSION!r} under extensions in the "
                          "request's client capabilities",
                  data={"requiredCapabilities": {"extensions": {EXTENSION: {}}}})


def _quiet(meta: Any) -> Any:
    """A 2026-07-28 request's `_meta` for a task's run: no progress token nor log level (that request's
    stream has ended; nothing could carry them)."""
    from mcp_types import LOG_LEVEL_META_KEY

    if not isinstance(meta, dict):
        return meta
    return {key: value for key, value in meta.items()
            if key not in ("progressToken", "progress_token", LOG_LEVEL_META_KEY)}


def _json_error(error: BaseException) -> dict:
    from mcp.shared.exceptions import MCPError

    if isinstance(error, MCPError):
        return error.error.model_dump(by_alias=True, mode="json", exclude_none=True)
    return {"code": -32603, "message": f"{type(error).__name__}: {error}"}


class TaskCalls:
    """`Server.middleware` that turns a `tools/call` into a task when the revision and the tool say so,
    and the `tasks/*` request handlers (see the module docs)."""

    def __init__(self, tools: Any, store: TaskStore, *, kernel: bool, client_name: Callable[[Any], str],
                 connection_of: Callable[[Any], Any]) -> None:
        self.tools = tools
        self.store = store
        self.kernel = kernel
        self.client_name = client_name  # the server's (server.client_name, served.connection_of): not
        self.connection_of = connection_of  # imported here, which would tie these modules in a cycle

    def owner(self, ctx: Any) -> tuple[str, str]:
        return owner_of(ctx, self.client_name)

    # -- tools/call ------------------------------------------------------------------------------
    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if ctx.method != "tools/call" or not isinstance(ctx.params, dict):
            return await call_next(ctx)
        name = ctx.params.get("name")
        tool = self.tools.resolve(name) if isinstance(name, str) else None
        if tool is None:
            return await call_next(ctx)  # the handler's -32602 for an unknown tool
        support = task_support(tool, self.kernel)
        if _modern(ctx):
            wanted = _declares_extension(ctx)
            if support == "required" and not wanted:
                raise _needs_extension(f"tool {name!r} runs only as a task, so calling it")
            if support == "forbidden" or not wanted:
                return await call_next(ctx)  # a legacy `task` field is ignored, as SEP-2663 says
            return await self._start(ctx, call_next, support, ttl_ms=None)
        asked = ctx.params.get("task")
        if asked is None:
            if support == "required":
                raise _error(-32601, f"tool {name!r} runs only as a task (execution.taskSupport is 'required'): "
                                     "call it again with a `task` field in the params")
            return await call_next(ctx)
        if support == "forbidden":
            raise _error(-32601, f"tool {name!r} does not run as a task (execution.taskSupport is 'forbidden'): "
                                 "call it again without the `task` field")
        return await self._start(ctx, call_next, support,
                                 ttl_ms=asked.get("ttl") if isinstance(asked, dict) else None)

    async def _start(self, ctx: Any, call_next: Any, support: str, *, ttl_ms: Any) -> Any:
        modern = _modern(ctx)
        loop = asyncio.get_running_loop()
        base = replace(ctx, meta=_quiet(ctx.meta)) if modern else ctx

        self.store.admit(self.owner(ctx))  # before anything of the call runs
        run = TaskRun(self.store)

        async def attempt(run_ctx: Any) -> Any:
            in_task.set(run)  # this asyncio task's own context (see `in_task`)
            return await call_next(run_ctx)

        job = loop.create_task(attempt(base))
        if modern and support == "required":  # questions at its very start: an input round, no task yet
            try:
                await asyncio.wait({job}, timeout=PRELUDE)
            except asyncio.CancelledError:  # the client gave up before any task existed: stop its run
                job.cancel()
                raise
            if job.done() and not job.cancelled() and job.exception() is None and _asks(job.result()):
                return job.result()
        try:
            task = self.store.create(self.owner(ctx), ctx.params["name"], ctx.params.get("arguments"), modern=modern,
                                     ttl_ms=ttl_ms, user=proxied_user(ctx))
        except BaseException:  # refused (too many tasks): its run must not go on unseen
            job.cancel()
            raise
        run.task = task
        if not modern:
            task.connection = self.connection_of(ctx)

        def again(answers: dict) -> "asyncio.Task[Any]":
            params = {key: value for key, value in ctx.params.items() if key != "requestState"}
            params["inputResponses"] = dict(answers)
            return self._follow(task, loop.create_task(attempt(replace(base, params=params))))

        task.again = again
        self._follow(task, job)
        if modern:
            return {"resultType": "task", **task.wire()}
        return {"task": task.wire()}

    def _follow(self, task: Task, job: "asyncio.Task[Any]") -> "asyncio.Task[Any]":
        task.job = job
        job.add_done_callback(lambda ended: self._settle(task, ended))
        return job

    def _settle(self, task: Task, job: "asyncio.Task[Any]") -> None:
        """A run of the task's call ended: record what it answered."""
        if task.job is not job or task.status in TERMINAL:
            if not job.cancelled():
                job.exception()  # retrieved: a stopped run's error is expected
            return
        if job.cancelled():
            self.store.change(task, "cancelled")
            return
        error = job.exception()
        if error is not None:
            task.error = _json_error(error)
            self.store.change(task, "failed")
            return
        result = dict(job.result())
        if task.modern and _asks(result):
            task.questions = dict(result.get("inputRequests") or {})
            self.store.change(task, "input_required")
            return
        if task.modern:
            result.pop("resultType", None)  # the inlined result is a CallToolResult
        task.result = result
        # 2025-11-25: "failed" also covers a tool call whose result has isError (2026-07-28: completed)
        self.store.change(task, "failed" if result.get("isError") and not task.modern else "completed")

    # -- tasks/* -----------------------------------------------------------------------------------
    def _task(self, ctx: Any, params: Any, method: str) -> Task:
        if _modern(ctx):
            if not _declares_extension(ctx):
                raise _needs_extension(method)
            headers = getattr(getattr(ctx, "request", None), "headers", None)
            if headers is not None:
                from mcp.shared.inbound import decode_header_value

                if decode_header_value(headers.get("mcp-name")) != params.task_id:
                    raise _error(-32020, f"the Mcp-Name header must equal params.taskId on {method}")
        return self.store.find(params.task_id, self.owner(ctx))

    async def get(self, ctx: Any, params: Any) -> dict:
        task = self._task(ctx, params, "tasks/get")
        if task.status in TERMINAL and (task.modern or _modern(ctx) or task.result is None):
            task.fetched = True  # its outcome is in this answer (2025-11-25: none left to fetch)
        return task.detailed() if task.modern or _modern(ctx) else task.wire()

    async def update(self, ctx: Any, params: Any) -> dict:
        if not _modern(ctx):
            raise _error(-32601, "tasks/update exists at protocol 2026-07-28 only")
        task = self._task(ctx, params, "tasks/update")
        responses = params.input_responses if isinstance(params.input_responses, dict) else {}
        answered = [key for key in responses if key in task.questions]  # unknown keys are ignored
        for key in answered:
            task.answers[key] = responses[key]
            del task.questions[key]
        if answered and task.status == "input_required":
            if task.questions:  # some still open: stay input_required with only those
                self.store.change(task, "input_required")
            elif task.again is not None:
                self.store.change(task, "working")
                task.again(task.answers)
        return {}

    async def cancel(self, ctx: Any, params: Any) -> dict:
        task = self._task(ctx, params, "tasks/cancel")
        task.fetched = True  # the client gives its outcome up
        if task.status in TERMINAL:
            if _modern(ctx):
                return {}  # idempotent acknowledgement
            raise _error(-32602, f"task {task.task_id!r} has already ended ({task.status}); it cannot be cancelled")
        self.store.change(task, "cancelled", message="cancelled by the client")
        if task.job is not None:
            task.job.cancel()  # stops the call as a cancelled request is stopped (handoff, stopping)
        return {} if _modern(ctx) else task.wire()

    async def result(self, ctx: Any, params: Any) -> dict:
        if _modern(ctx):
            raise _error(-32601, "tasks/result does not exist at 2026-07-28: tasks/get inlines the result")
        task = self._task(ctx, params, "tasks/result")
        await task.ended.wait()  # blocks until the task ends, as the 2025-11-25 text says
        task.fetched = True
        if task.error is not None:
            raise _error(task.error.get("code", -32603), task.error.get("message", "the task failed"),
                         task.error.get("data"))
        if task.result is None:
            raise _error(-32602, f"task {task.task_id!r} was {task.status} before it finished: it has no result")
        meta = dict(task.result.get("_meta") or {})
        meta[RELATED_TASK] = {"taskId": task.task_id}
        return {**task.result, "_meta": meta}

    async def list(self, ctx: Any, params: Any) -> dict:
        if _modern(ctx):
            raise _error(-32601, "tasks/list does not exist at 2026-07-28")
        owned = self.store.owned(self.owner(ctx))
        cursor = getattr(params, "cursor", None)
        start = 0
        if cursor is not None:
            if not (isinstance(cursor, str) and cursor.isdigit() and int(cursor) <= len(owned)):
                raise _error(-32602, f"invalid tasks/list cursor {cursor!r}: pass the nextCursor of the last page")
            start = int(cursor)
        page: dict[str, Any] = {"tasks": [task.wire() for task in owned[start:start + PAGE]]}
        if start + PAGE < len(owned):
            page["nextCursor"] = str(start + PAGE)
        return page


def _asks(result: Any) -> bool:
    return isinstance(result, dict) and result.get("resultType") == "input_required"


def add_tasks(server: Any, tools: Any, *, client_name: Callable[[Any], str], connection_of: Callable[[Any], Any],
              activity: Any = None, kernel: bool = False) -> TaskCalls:
    """Serve tasks on `server` (an mcp low-level Server): the middleware and the `tasks/*` methods.
    `client_name(ctx)`, `connection_of(ctx)`: a request's client name and its SDK connection."""
    from pydantic import ConfigDict, Field

    import mcp_types as types

    class TaskParams(types.RequestParams):
        model_config = ConfigDict(extra="allow")
        task_id: str = Field(alias="taskId")
        input_responses: Any = Field(default=None, alias="inputResponses")

    class ListParams(types.RequestParams):
        model_config = ConfigDict(extra="allow")
        cursor: Any = None

    calls = TaskCalls(tools, TaskStore(activity), kernel=kernel, client_name=client_name, connection_of=connection_of)
    server.middleware.append(calls)
    server.extensions[EXTENSION] = {}
    for method, params, handler in (("tasks/get", TaskParams, calls.get),
                                    ("tasks/update", TaskParams, calls.update),
                                    ("tasks/cancel", TaskParams, calls.cancel),
                                    ("tasks/result", TaskParams, calls.result),
                                    ("tasks/list", ListParams, calls.list)):
        server.add_request_handler(method, params, handler)
    return calls


def capability() -> Any:
    """The 2025-11-25 `capabilities.tasks`: list, cancel, and task-augmented tools/call."""
    import mcp_types as types

    return types.ServerTasksCapability.model_validate({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})


__all__ = ["EXTENSION", "Task", "TaskStore", "TaskCalls", "TaskRun", "add_tasks", "task_support", "capability",
           "in_task"]
