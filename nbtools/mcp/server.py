"""A Registry as an `mcp` low-level `Server`: tools/list, tools/call, logging/setLevel, list_changed,
and (through `offerings`) the registry's resources, prompts and completions.

The transports that carry the server (stdio, streamable HTTP) live in `blocking`, `web` and
`background`; how values and errors become MCP results lives in `results`; what a tool reaches
through its `ToolContext` while it runs lives in `context`.

What the server promises:

* `tools/list`: the registry's enabled tools, read live on every request; the `tools` capability
  says `listChanged: true` and every connected client gets `notifications/tools/list_changed`
  when the registry changes (a `%%tool` cell run while `%tools --serve` serves, `registry.add`,
  `remove`, `enable`/`disable`), several changes in a row coalesced into one notification.
* `tools/call` of a name the server does not list: the JSON-RPC error -32602 (invalid params),
  as the MCP spec lists unknown tools under protocol errors. Anything else about a call (bad
  arguments, a refusal, the tool raised) is a result with `isError: true`.
* `logging/setLevel`: answered `{}`; log lines a tool sends with `ctx.log` below that level (default
  "info") are not sent to that client.
* Which thread runs a call (`threads`): with `threads=True` (`nbtools serve`) a plain function runs
  in a worker thread (anyio's pool, at most 40 at once), so one slow call does not hold up the
  other sessions, as the SDK's own MCPServer does (plain resource and prompt functions too);
  `async def` tools run on the server's event loop. With `threads=False` every call runs on the loop's thread, or, given `calls` (`%tools
  --serve` in a kernel), on the kernel's main thread, between cells (`handoff`). A cancelled call
  (`notifications/cancelled`) gets no response, as the spec says; an `async def` tool is cancelled
  at its next `await`; on a kernel's main thread a plain function is interrupted (`stopping`);
  a plain function in a worker thread cannot be stopped by Python: it runs to its end and its
  result is dropped. A long plain function can check `ctx.cancelled` and return early.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from typing import TYPE_CHECKING, Any, AsyncIterator

from ..call import call_func_async
from ..context import check_level, reset_context, use_context
from ..errors import ToolCallError
from ..policy import asking_as
from ..registry import Registry
from ..tool import Tool
from .access import origin_of, proxied_user
from .stopping import interruptible
from .toolresults import error_result, success_result

if TYPE_CHECKING:  # the mcp package is imported only when a function here needs it
    import mcp_types
    from mcp.server.lowlevel import Server

INSTRUCTIONS = "Tools defined with nbtools; every call is validated against the listed inputSchema before it runs."


def as_registry(tools: Any = None) -> Registry:
    """`None` -> the default `nbtools.registry`; a Registry as is; an iterable of Tools/callables -> a new one."""
    if tools is None:
        from ..registry import registry

        return registry
    if isinstance(tools, Registry):
        return tools
    if isinstance(tools, Tool) or callable(tools):
        return Registry([tools])
    return Registry(tools)


class _Clients:
    """The connections of one server, told `notifications/tools/list_changed` when its registry changes."""

    def __init__(self) -> None:
        self.connections: dict[int, Any] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        self._queued = False
        self.bus: Any = None  # 2026-07-28 clients hear of changes on `subscriptions/listen` streams

    def add(self, connection: Any) -> None:
        if connection is None or id(connection) in self.connections:
            return
        self.connections[id(connection)] = connection
        # the connection's teardown forgets it (the SDK unwinds `exit_stack` when the client leaves)
        connection.exit_stack.callback(self.connections.pop, id(connection), None)

    def registry_changed(self) -> None:
        """Called by the registry on whatever thread changed it: queue one notification on the loop."""
        loop = self.loop
        if loop is None or loop.is_closed() or self._queued:
            return
        self._queued = True
        try:
            loop.call_soon_threadsafe(self._start_broadcast)
        except RuntimeError:  # the loop closed meanwhile
            self._queued = False

    def _start_broadcast(self) -> None:
        assert self.loop is not None
        self.loop.create_task(self._broadcast())

    async def _broadcast(self) -> None:
        self._queued = False  # later changes queue another notification
        await self.publish("tools")
        for connection in list(self.connections.values()):
            with contextlib.suppress(Exception):  # best-effort: a client that left is forgotten at teardown
                await connection.send_tool_list_changed()

    async def publish(self, kind: str, uri: str | None = None) -> None:
        """Tell the `subscriptions/listen` streams (2026-07-28) that `kind` changed."""
        if self.bus is None:
            return
        from mcp.shared.subscriptions import (PromptsListChanged, ResourcesListChanged, ResourceUpdated,
                                              ToolsListChanged)

        event = {"tools": ToolsListChanged, "prompts": PromptsListChanged,
                 "resources": ResourcesListChanged}.get(kind)
        with contextlib.suppress(Exception):  # best-effort, as the notifications above
            await self.bus.publish(event() if event is not None else ResourceUpdated(uri or ""))


def build_server(registry: Any = None, *, name: str = "nbtools", threads: bool = False,
                 activity: Any = None, calls: Any = None) -> "Server":
    """An `mcp` low-level `Server` serving the registry's enabled tools through nbtools' dispatch.

    The registry is read on every request, so tools added, removed, enabled or disabled after the
    server started show up in the next `tools/list` (and clients are told). `threads`: run plain
    (non-async) tools in worker threads (see the module docs). `activity`: an `activity.Activity`
    that records every tool call (client, tool, arguments, elapsed time, outcome). `calls`: a
    `handoff.MainThreadCalls` when the transport runs on a thread of its own and calls (tools, resource
    and prompt functions) must run on a kernel's main thread; None: they run on the transport's loop.
    """
    from mcp.server.lowlevel import NotificationOptions, Server  # first: a missing SDK is named "mcp"

    import mcp_types as types

    from .. import __version__
    from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity

    from .served import LEVEL_KEY, ServedContext, client_name, connection_of, round_outcome
    from .tasks import add_tasks, capability, in_task, task_support

    from ..resources import catalog_of
    from .offerings import Announcer, add_offerings

    from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
    from mcp.shared.exceptions import MCPError  # here, not per call
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    tools = as_registry(registry)
    catalog = catalog_of(tools)
    clients = _Clients()
    clients.bus = InMemorySubscriptionBus()

    @contextlib.asynccontextmanager
    async def lifespan(server: Any) -> AsyncIterator[dict]:
        # Entered once per server run (the HTTP session manager's lifetime, or one stdio session):
        # from now on a change of the registry reaches every connected client.
        clients.loop = asyncio.get_running_loop()
        unsubscribe = tools.on_change(clients.registry_changed)
        unsubscribe_catalog = catalog.on_change(Announcer(clients))  # resources, prompts (offerings.py)
        try:
            yield {}
        finally:
            unsubscribe()
            unsubscribe_catalog()
            clients.loop = None

    async def list_tools(ctx: Any, params: Any) -> "mcp_types.ListToolsResult":
        clients.add(connection_of(ctx))
        return types.ListToolsResult(tools=[_listed_tool(tool, task_support(tool, calls is not None))
                                            for tool in tools.enabled()])

    async def call_tool(ctx: Any, params: "mcp_types.CallToolRequestParams") -> "mcp_types.CallToolResult":
        tool = tools.resolve(params.name)
        if tool is None:
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name!r} is not a tool of this server; "
                                                 "tools/list names the tools it has")
        served = ServedContext(ctx, asyncio.get_running_loop(), params)
        client = client_name(ctx)
        user = proxied_user(ctx)  # the Jupyter user, when the call came through the extension
        # a task's run: the task has its own row in the activity log (tasks.py)
        task_run = in_task.get()
        record = activity.begin(client, params.name, params.arguments, user=user, origin=origin_of(client, user)) \
            if activity is not None and task_run is None else None

        async def run() -> Any:  # where calls run: this loop, or a kernel's main thread (`calls`)
            token = use_context(served)
            if record is not None and record.live is not None:  # its cell is written as it runs (--cells)
                from ..interp.capture import live_output

                live_output.set(record.live)  # this task's own context: gone when the call ends
            elif task_run is not None:  # an MCP task's run: its task's record (made once the task exists)
                from ..interp.capture import live_output

                live_output.set(functools.partial(_task_live, task_run))
            try:
                # who asks: an approval prompt names the client, registry.decisions records it
                with asking_as(origin_of(client, user)):
                    return await call_result(tools, params.name, params.arguments,
                                             in_thread=threads and not tool.is_async)
            finally:
                reset_context(token)

        def stopped() -> None:  # cancelled (by the client, or the server stopping)
            if record is not None:
                activity.end(record, cancelled=True)

        try:
            if calls is None:
                result = await run()
            else:  # `served.cancel` first: a tool that checks `ctx.cancelled` sees it before it is stopped
                result = await calls.run(run, stopping=served.cancel, ended=stopped)
            await served.flush()  # every progress/log notification goes out before the result
            outcome = round_outcome(served, result)
        except asyncio.CancelledError:
            served.cancel()
            if calls is None:
                stopped()  # else once the call has really ended, on the kernel's side (`ended`)
            raise
        except BaseException as error:  # e.g. the -32021 error of round_outcome
            if record is not None:
                activity.end(record, error=error)
            raise
        if record is not None:
            activity.end(record, outcome)
        return outcome

    async def set_level(ctx: Any, params: "mcp_types.SetLevelRequestParams") -> "mcp_types.EmptyResult":
        connection = connection_of(ctx)
        if connection is not None:
            connection.state[LEVEL_KEY] = check_level(params.level)
        return types.EmptyResult()

    async def initialized(ctx: Any, params: Any) -> None:
        clients.add(connection_of(ctx))

    class NbtoolsServer(Server):
        def create_initialization_options(self, notification_options: Any = None, *args: Any, **kwargs: Any) -> Any:
            # `listChanged: true`: this server sends notifications/tools/list_changed (see _Clients)
            return super().create_initialization_options(
                notification_options or NotificationOptions(tools_changed=True, resources_changed=True,
                                                            prompts_changed=True), *args, **kwargs)

        def get_capabilities(self, *args: Any, protocol_version: str | None = None, **kwargs: Any) -> Any:
            capabilities = super().get_capabilities(*args, protocol_version=protocol_version, **kwargs)
            if protocol_version not in MODERN_PROTOCOL_VERSIONS:  # 2025-11-25 tasks (2026-07-28: the extension)
                capabilities.tasks = capability()
            return capabilities

    server = NbtoolsServer(name, version=__version__, on_list_tools=list_tools, on_call_tool=call_tool,
                           instructions=INSTRUCTIONS, lifespan=lifespan)
    # Registered by method, not as `on_set_logging_level=` (which warns: mcp 2.3 marks the logging
    # capability deprecated for 2026-07-28 clients; 2025 clients and the conformance suite use it).
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    server.add_notification_handler("notifications/initialized", types.NotificationParams, initialized)
    # resources, prompts, completion (nbtools.resources); plain functions where plain tools run
    add_offerings(server, catalog, clients, activity=activity, calls=calls,
                  run_sync=_in_worker_thread if threads else None)
    # 2026-07-28: change notifications travel on `subscriptions/listen` streams (so `server/discover`
    # says listChanged: true, as `initialize` does for 2025-11-25 sessions)
    listen = ListenHandler(clients.bus)
    server.add_request_handler("subscriptions/listen", types.SubscriptionsListenRequestParams, listen)
    server.end_listen_streams = listen.close  # type: ignore[attr-defined]  # web.py: before shutting down
    # 2026-07-28 input-required rounds: the SDK seals each requestState (a process-local key, so
    # state from another process or a tampered one is refused with -32602) and verifies it on return.
    server.middleware.append(RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience=name))
    # long calls as tasks (both revisions); after the boundary, so a task's input rounds are its own
    add_tasks(server, tools, activity=activity, kernel=calls is not None, client_name=_client_name,
              connection_of=connection_of)
    return server


def _task_live(task_run: Any, *event: Any) -> None:
    """What a task's run prints and displays, told to its task's record's watcher (`record.live`, set by
    `%tools --serve --cells`) when there is one: the task and its record exist only once the run began."""
    live = getattr(getattr(task_run.task, "record", None), "live", None)
    if live is not None:
        live(*event)


def client_name(request_ctx: Any) -> str:
    """The name the MCP client gave in `initialize` (or in a 2026-07-28 request's client info);
    "unnamed client" when it gave none."""
    from .served import connection_of

    params = getattr(connection_of(request_ctx), "client_params", None)
    info = getattr(params, "client_info", None)
    name = getattr(info, "name", None)
    if not name:
        meta = getattr(request_ctx, "meta", None) or {}
        given = meta.get("io.modelcontextprotocol/clientInfo") if isinstance(meta, dict) else None
        name = given.get("name") if isinstance(given, dict) else None
    return str(name)[:80] if name else "unnamed client"


_client_name = client_name  # for build_server, where `client_name` names served's (the activity log's)


async def _in_worker_thread(call: Any) -> Any:
    """Run `call()` in anyio's worker thread pool; a cancelled caller stops waiting at once (the
    thread itself runs on: Python cannot stop it)."""
    import anyio.to_thread

    return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)


def _listed_tool(tool: Tool, task: str = "forbidden") -> "mcp_types.Tool":
    """The SDK's record of `tool`'s MCP definition with its `execution.taskSupport` (2025-11-25; the
    2026-07-28 surface drops it), built once per Tool and task support (its render cache holds it)."""
    key = ("mcp-listed", task)
    listed = tool._cache.get(key)
    if listed is None:
        import mcp_types as types

        definition = tool.schema("mcp")
        if task != "forbidden":  # absent means forbidden
            definition["execution"] = {"taskSupport": task}
        listed = types.Tool.model_validate(definition)
        tool._cache[key] = listed
    return listed


async def call_result(registry: Registry, name: str, arguments: dict | None, *,
                      in_thread: bool = False) -> "mcp_types.CallToolResult":
    """Run one `tools/call` through nbtools' dispatch and build its MCP result (never raises for a bad call).

    `in_thread`: a plain function runs in a worker thread (validation, conversion and approval stay
    on this loop, as in the SDK's MCPServer: a thread holds the GIL only for the tool's own work);
    else everything runs on this loop.
    """
    tool = registry.resolve(name)
    arguments = {} if arguments is None else arguments
    try:
        async with interruptible():  # a kernel's Interrupt ends a call served between cells
            value = await call_func_async(name, arguments, ns=registry,
                                          run_sync=_in_worker_thread if in_thread else None)
    except ToolCallError as error:
        return error_result(error)
    except KeyboardInterrupt:
        # In a kernel, "interrupt" while a tool runs on the main thread: end this call, keep serving.
        return error_result(ToolCallError(name, "interrupted by the person running the server"))
    except Exception as error:  # a bug below dispatch; still an answer, not a dead session
        return error_result(ToolCallError(name, f"{type(error).__name__}: {error}"))
    try:
        return success_result(tool, value, registry.limits.max_result_chars)
    except ToolCallError as error:  # the result could not be rendered: an error result, not a JSON-RPC error
        return error_result(ToolCallError(name, error.problem))
