"""`connect()`: another MCP server's tools as nbtools Tools that forward their calls to it.

Built on the `mcp` SDK's `Client` (mode "auto": `server/discover` at 2026-07-28, else the
`initialize` handshake of 2025-11-25). The session runs on a background thread with its own event
loop, so the tools are ordinary blocking functions, usable from scripts and notebook cells alike.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import keyword
import queue
import shlex
import threading
import time
import warnings
import weakref
from typing import Any, Callable, Sequence

from ..errors import ToolCallError
from ..extras import require_extra
from ..tool import Tool
from . import transports
from .link import Link, SessionLost, leaf_message, list_all_tools, open_link, stop_link
from .notify import Elicitation, LogMessage, Progress, default_sink, deliver, elicit_result, log_to_logging, show
from .remotetools import remote_tool
from .toolresults import remote_error, result_value
from .transports import describe as _describe

PROTOCOLS = ("auto", "2025-11-25", "2026-07-28")
"""`connect(protocol=...)`: "auto" asks for 2026-07-28 and falls back to the 2025-11-25 handshake."""


class Connection(list):
    """The tools of one MCP server, as nbtools `Tool`s, plus the live session they forward to.

    A list of Tools (`Registry(connection)`, `registry.add(connection[0])`, `[t.name for t in
    connection]`) that also answers `connection["name"]`, `connection.name` (for tool names that
    are identifiers and not list methods: a tool called `append` is `connection["append"]`) and
    `connection.call(name, arguments=None, **kwargs)`. `close()` ends it (also a context manager,
    and done at interpreter exit).

    Constructing one does no I/O; `open()` connects (what `connect()` does). Fields: `target`,
    `server_name`, `protocol_version` (negotiated), `transport` ("streamable-http", "sse" or
    "stdio"), `timeout`, `max_time`, `skipped` (tools the server listed that could not be made into functions:
    name -> reason), `reconnects` (sessions opened again after the server lost one), `refreshes`
    (tool lists read again after `notifications/tools/list_changed`).
    """

    def __init__(self, target: str | Sequence[str], *, timeout: float = 30.0, protocol: str = "auto",
                 env: dict | None = None, cwd: str | None = None, errlog: Any = None,
                 token: str | None = None, headers: dict[str, str] | None = None,
                 max_time: float | None = None, on_progress: Callable[[Progress], Any] | None = None,
                 on_log: Callable[[LogMessage], Any] | None = None,
                 on_elicit: Callable[[Elicitation], Any] | None = None, log_level: str | None = "info"):
        super().__init__()
        if protocol not in PROTOCOLS:
            raise ValueError(f"connect: protocol must be one of {', '.join(PROTOCOLS)}, not {protocol!r}")
        if not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ValueError(f"connect: timeout must be a positive number of seconds, not {timeout!r}")
        if max_time is not None and (isinstance(max_time, bool) or not isinstance(max_time, (int, float))
                                     or not max_time > 0):
            raise ValueError(f"connect: max_time must be a positive number of seconds or None, not {max_time!r}")
        self.target = target
        self.timeout = float(timeout)
        self.max_time = None if max_time is None else float(max_time)
        self.protocol = protocol
        self.on_progress = on_progress
        self.on_log = on_log
        self.on_elicit = on_elicit
        self._log_level = log_level
        self._url = target if transports.is_url(target) else None
        if self._url is None:
            if token is not None or headers:
                raise ValueError("connect: token= and headers= are for HTTP servers; a stdio server needs none")
            argv = shlex.split(target) if isinstance(target, str) else [str(part) for part in target]
            if not argv:
                raise ValueError("connect: empty command")
            self._argv = argv
        self._headers = transports.request_headers(self._url, token, headers) if self._url else {}
        self._env, self._cwd, self._errlog = env, cwd, errlog
        self.server_name = ""
        self.protocol_version: str | None = None
        self.transport = "stdio" if self._url is None else "streamable-http"
        self.skipped: dict[str, str] = {}
        # tools listed with execution.taskSupport "required", and "forbidden" or none (2025-11-25)
        self._task_required: set[str] = set()
        self._task_forbidden: set[str] = set()
        self.reconnects = 0
        self.refreshes = 0
        self._output_schemas: dict[str, Any] = {}
        # The notification queues of the calls now waiting (oldest first): a log line the server
        # sends goes to the oldest, whose caller shows it; with none waiting, to `on_log` directly.
        self._waiting: list[queue.SimpleQueue] = []
        self._lock = threading.RLock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._link: Link | None = None
        self._closed = False

    # -- opening ---------------------------------------------------------------------------------------
    def open(self) -> "Connection":
        """Connect: start the session (a stdio server is started), negotiate, read the tools. Idempotent."""
        if self._closed:
            raise ConnectionError(f"the MCP connection to {_describe(self.target)} is closed; connect again")
        if self._loop is not None:
            return self
        if self._url is not None:
            transports.refuse_own_loop_server(self._url)
            import mcp.client.streamable_http  # noqa: F401 - fail here, not on the session's thread

            transports.quiet_unreachable_session_end()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="nbtools MCP client", daemon=True)
        self._thread.start()
        try:
            self._start_link()
        except BaseException:
            self.close()
            raise
        _CONNECTIONS.add(self)
        return self

    def _start_link(self) -> None:
        """Open a session (HTTP: streamable first, the SSE transport if that is refused with a 4xx)."""
        try:
            listed = self._open_link(self._transport_factory(self.transport))
        except ConnectionError as error:
            if self.transport != "streamable-http" or not transports.sse_worth_trying(self._url or "", self._headers):
                raise
            try:
                listed = self._open_link(self._transport_factory("sse"))
            except ConnectionError:
                raise error from None  # the streamable HTTP failure says more than the SSE one
            self.transport = "sse"
        self._take_tools(listed, stacklevel=5)  # the warning names the caller of connect()

    def _transport_factory(self, kind: str) -> Callable[[], Any]:
        if kind == "stdio":
            return lambda: transports.stdio(self._argv, self._env, self._cwd,
                                            self._errlog if self._errlog is not None else transports.server_errlog())
        opener = transports.streamable_http if kind == "streamable-http" else transports.legacy_sse
        return lambda: opener(self._url, self._headers)

    def _open_link(self, factory: Callable[[], Any]) -> list:
        """Start a session with `factory()`'s transport and wait for its tool list; raise ConnectionError."""
        assert self._loop is not None
        options = dict(logging_callback=self._log_notification, log_level=self._log_level,
                       elicitation_callback=self._elicitation if self.on_elicit is not None else None)
        link = asyncio.run_coroutine_threadsafe(
            open_link(_describe(self.target), factory(), self.protocol, options, self._refresh), self._loop).result()
        try:
            listed = asyncio.run_coroutine_threadsafe(
                asyncio.wait_for(asyncio.shield(link.ready), self.timeout), self._loop).result(self.timeout + 5)
        except BaseException as error:
            self._end_link(link)
            reason = transports.explain_failure(leaf_message(error), self._url, self._headers, self.timeout)
            raise ConnectionError(f"could not use the MCP server {_describe(self.target)}: {reason}") from None
        client = link.client
        self.protocol_version = client.protocol_version
        self.server_name = client.server_info.name if client.server_info is not None else ""
        old, self._link = self._link, link
        if old is not None:
            self._end_link(old)
        return listed

    def _end_link(self, link: Link, timeout: float = 5.0) -> None:
        """End a session: politely (its transport closes, a stdio server is stopped), then by cancelling."""
        assert self._loop is not None
        with contextlib.suppress(BaseException):
            asyncio.run_coroutine_threadsafe(stop_link(link, timeout), self._loop).result(timeout + 10)

    # -- the tool list, and following its changes -------------------------------------------------------
    def _take_tools(self, listed: list, stacklevel: int = 2) -> None:
        """Make the listed tools into `Tool`s and become that list (a hostile list is bounded in time)."""
        deadline = time.monotonic() + self.timeout
        tools: list[Tool] = []
        skipped: dict[str, str] = {}
        required: set[str] = set()
        forbidden: set[str] = set()
        for index, listed_tool in enumerate(listed):
            if time.monotonic() > deadline:
                raise ConnectionError(f"could not use the MCP server {_describe(self.target)}: reading its "
                                      f"{len(listed)} tool definitions took more than {self.timeout} s "
                                      f"({index} read)")
            # one malformed or hostile schema must not cost the user every other tool of the server
            try:
                tools.append(remote_tool(listed_tool, self.call, self.server_name or None))
                support = getattr(getattr(listed_tool, "execution", None), "task_support", None) or "forbidden"
                (required if support == "required" else forbidden if support == "forbidden" else set()).add(
                    listed_tool.name)  # required: every call of it runs as a task
                self._output_schemas[listed_tool.name] = listed_tool.output_schema
            except (ValueError, TypeError) as error:
                name = getattr(listed_tool, "name", "?")
                skipped[name] = str(error)
                if self.skipped.get(name) == skipped[name]:
                    continue  # said already (the list was read again after a change)
                warnings.warn(f"MCP server {_describe(self.target)}: tool {name!r} skipped: {error}",
                              stacklevel=stacklevel)
        with self._lock:
            self[:] = tools
            self.skipped = skipped
            self._task_required, self._task_forbidden = required, forbidden

    async def _refresh(self, link: Link) -> None:
        """Read the tool list again (after `tools/list_changed`) and take it."""
        client = link.client
        if client is None or link.lost:
            return
        try:
            listed = await asyncio.wait_for(list_all_tools(client.session), self.timeout)
            self._take_tools(listed)
        except Exception as error:  # keep the tools we have; say why they may be stale
            warnings.warn(f"MCP server {_describe(self.target)} changed its tools, but reading them again "
                          f"failed: {leaf_message(error)}", stacklevel=1)
            return
        self.refreshes += 1

    # -- finding tools -----------------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            with self._lock:
                for tool in list.__iter__(self):
                    if tool.name == key:
                        return tool
                names = [tool.name for tool in list.__iter__(self)]
            raise KeyError(f"{_describe(self.target)} has no tool {key!r}"
                           + (f" ({key!r} was skipped: {self.skipped[key]})" if key in self.skipped else "")
                           + f"; its tools: {', '.join(names) or 'none'}")
        return list.__getitem__(self, key)

    def __getattr__(self, name: str) -> Any:
        # only reached when normal lookup fails: list methods and fields win over tool names
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"'Connection' object has no attribute or tool {name!r}") from None

    def __contains__(self, item: object) -> bool:
        if isinstance(item, str):
            return any(tool.name == item for tool in list.__iter__(self))
        return list.__contains__(self, item)

    def __dir__(self) -> list[str]:
        names = [tool.name for tool in list.__iter__(self) if tool.name.isidentifier() and not keyword.iskeyword(tool.name)]
        return sorted(set(super().__dir__()) | set(names))

    # -- calls ----------------------------------------------------------------------------------------
    def call(self, name: str, arguments: dict | None = None, /, task: bool = False, **kwargs: Any) -> Any:
        """Call tool `name` on the server with `arguments` (a dict) and/or keyword arguments; blocks.

        Returns the tool's value (see `connect`). While it waits, the server's progress and log
        notifications reach `on_progress` / `on_log` (or the notebook's progress bar and cell
        output) in this thread, and `on_elicit` answers the server's questions. The call fails after
        `timeout` seconds without an answer or progress that advances (a progress value above the
        call's last one, or a person's answer to the server's question, starts that time again), and
        after `max_time` seconds in all whatever comes (None: no cap). If the server has lost the session (it restarted), a new session is opened once and
        the call sent again when that cannot run it twice (see `_may_resend`). Raises ToolCallError
        when the server answers with an error result (see `toolresults.remote_error`).

        `task=True` runs the call as an MCP task (`taskclient`): the server answers at once with a
        task, which is polled as the server asks until it ends (a tool argument named `task` goes
        in `arguments`). Tools whose `execution.taskSupport` is "required" always run so.
        """
        arguments = {**(arguments or {}), **kwargs}
        if self._closed:
            raise ToolCallError(name, f"the MCP connection to {_describe(self.target)} is closed")
        if self._loop is None:
            raise ToolCallError(name, "this Connection is not open: call .open() (or use nbtools.mcp.connect)")
        if name in self.skipped:  # e.g. it needs task augmentation: the server would only refuse it
            raise ToolCallError(name, f"nbtools' MCP client cannot call this tool of "
                                      f"{self.server_name or 'the server'}: {self.skipped[name]}")
        if self._url is not None:
            transports.refuse_own_loop_server(self._url)
        began = time.monotonic()  # `max_time` covers a call sent again after a reconnect too
        try:
            if self._link is None or self._link.lost:
                raise SessionLost("the session has ended", unsent=True)
            if task or name in self._task_required:
                return self._call_task(name, arguments, began)
            try:
                return self._call_once(name, arguments, began)
            except _NeedsTask:  # 2026-07-28: the server runs this tool only as a task (it refused before running it)
                return self._call_task(name, arguments, began)
        except SessionLost as lost:
            reason = str(lost)
            if not (lost.unsent or self._may_resend(name)):
                self._reopen(name, reason)  # for the next call; this one may have run
                raise ToolCallError(name, f"the connection to {_describe(self.target)} ended during the call "
                                          f"({reason}); it was not sent again, as it may have run. "
                                          "A new session is open for the next call") from None
        self._reopen(name, reason)
        try:
            if task or name in self._task_required:
                return self._call_task(name, arguments, began)
            return self._call_once(name, arguments, began)
        except SessionLost as again:
            raise ToolCallError(name, f"the MCP server {_describe(self.target)} lost the session again "
                                      f"right after a reconnect ({again}); connect again once it runs") from None

    def _may_resend(self, name: str) -> bool:
        """A call the connection lost mid-way is sent again only to a tool that says it is harmless twice."""
        with contextlib.suppress(KeyError):
            return bool({"read-only", "idempotent"} & set(self[name].hints))
        return False

    def _reopen(self, name: str, reason: str) -> None:
        try:
            with self._lock:
                if self._link is not None and not self._link.lost:
                    return  # another thread has just opened a new session
                self._start_link()
        except ConnectionError as error:
            raise ToolCallError(name, f"the MCP server {_describe(self.target)} ended the session ({reason}; has "
                                      f"it stopped?) and a new one could not be opened: "
                                      f"{str(error).split(': ', 1)[-1]}") from None
        self.reconnects += 1

    def _call_once(self, name: str, arguments: dict, began: float) -> Any:
        assert self._loop is not None and self._link is not None
        # 1. Notifications come through a queue, so callbacks and widgets run in the calling thread
        #    (a notebook cell's output belongs to its thread), not on the session's loop.
        events: queue.SimpleQueue = queue.SimpleQueue()
        on_progress, on_log = self._sinks(name)
        self._waiting.append(events)
        future = asyncio.run_coroutine_threadsafe(self._acall(self._link, name, arguments, events), self._loop)
        future.add_done_callback(lambda _: events.put(None))
        try:
            # 2. Show each notification as it comes, until the answer (None), `timeout` of silence
            #    or `max_time` in all.
            cap = float("inf") if self.max_time is None else began + self.max_time
            deadline = min(time.monotonic() + self.timeout, cap)
            last: float | None = None  # the call's highest progress so far
            while True:
                try:
                    event = events.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    future.cancel()
                    raise self._gave_up(name, deadline >= cap) from None
                if event is None:
                    break
                advanced = True  # a person who answered the server's question, or progress that advanced
                if isinstance(event, Elicitation):
                    event.answer_with(self.on_elicit)
                else:
                    show(event, on_progress, on_log)
                    if isinstance(event, Progress):
                        # MCP: progress MUST increase. A server repeating one value is not making any,
                        # and must not keep a call alive for ever
                        advanced = last is None or event.progress > last
                        last = event.progress if advanced else last
                if advanced and not isinstance(event, LogMessage):  # time starts again
                    deadline = min(time.monotonic() + self.timeout, cap)
        except BaseException:
            future.cancel()  # e.g. KeyboardInterrupt: the session sends the server notifications/cancelled
            raise
        finally:
            self._waiting.remove(events)
        # 3. Log lines that arrived after the answer was queued still belong to this call.
        while not events.empty():
            event = events.get_nowait()
            if isinstance(event, (Progress, LogMessage)):
                show(event, on_progress, on_log)
        return future.result()

    def _call_task(self, name: str, arguments: dict, began: float) -> Any:
        """`call(..., task=True)`: the task runs on the session's loop; its questions are answered here.
        No silence time-out (each poll has its own, `timeout`: a task may take hours); `max_time` caps it."""
        from .taskclient import answer_from, call_as_task

        assert self._loop is not None and self._link is not None
        client = self._link.client
        if client is None:
            raise SessionLost("the session has ended", unsent=True)
        events: queue.SimpleQueue = queue.SimpleQueue()

        async def elicit(message: str, schema: dict, url: str | None) -> dict:
            request = Elicitation(message, schema, url)
            events.put(request)
            await asyncio.wrap_future(request.reply)
            return elicit_result(request.reply.result()).model_dump(by_alias=True, mode="json", exclude_none=True)

        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        modern = client.protocol_version in MODERN_PROTOCOL_VERSIONS
        if not modern and name in self._task_forbidden:  # 2025-11-25: a client MUST NOT ask then
            raise ToolCallError(name, f"{self.server_name or 'the server'} does not run this tool as a task (its "
                                      "execution.taskSupport is 'forbidden' or absent): call it without task=True")
        running = call_as_task(client.session, name, arguments, modern=modern, timeout=self.timeout,
                               ask=lambda key, request: answer_from(request, elicit))
        future = asyncio.run_coroutine_threadsafe(running, self._loop)
        future.add_done_callback(lambda _: events.put(None))
        cap = float("inf") if self.max_time is None else began + self.max_time
        try:
            while True:
                try:
                    event = events.get(timeout=max(0.0, min(0.5, cap - time.monotonic())))
                except queue.Empty:
                    if time.monotonic() >= cap:
                        future.cancel()  # the task is cancelled on the server (tasks/cancel)
                        raise self._gave_up(name, True) from None
                    continue
                if event is None:
                    break
                event.answer_with(self.on_elicit)
        except BaseException:
            future.cancel()  # e.g. KeyboardInterrupt: the task is cancelled on the server (tasks/cancel)
            raise
        try:
            result = future.result()
        except ToolCallError:
            raise
        except Exception as error:
            raise ToolCallError(name, f"the MCP task did not finish: {leaf_message(error)}") from None
        if result.is_error:
            raise remote_error(name, result)
        return result_value(result, self._output_schemas.get(name))

    def _gave_up(self, name: str, capped: bool) -> ToolCallError:
        where = _describe(self.target)
        if capped:
            return ToolCallError(name, f"the call to {where} took more than max_time={self.max_time:g} s in all "
                                       "(progress does not extend that cap); it was cancelled")
        return ToolCallError(name, f"no answer or progress from {where} for {self.timeout:g} s "
                                   f"(timeout={self.timeout:g}); it was cancelled")

    def _sinks(self, name: str) -> tuple[Callable[[Progress], Any], Callable[[LogMessage], Any]]:
        default_progress, default_log = default_sink(name) if self.on_progress is None or self.on_log is None \
            else (None, None)
        return self.on_progress or default_progress, self.on_log or default_log  # type: ignore[return-value]

    async def _log_notification(self, params: Any) -> None:
        message = LogMessage(str(params.level), params.data, params.logger, self.server_name)
        waiting = list(self._waiting)
        if waiting:
            waiting[0].put(message)
        else:  # between calls: nobody's cell to show it in
            deliver(self.on_log or log_to_logging, message)

    async def _elicitation(self, context: Any, params: Any) -> Any:
        """The server asks the person something: `on_elicit` answers, in the waiting caller's thread."""
        request = Elicitation(str(params.message), dict(getattr(params, "requested_schema", None) or {}),
                              getattr(params, "url", None))
        waiting = list(self._waiting)
        if waiting:
            waiting[0].put(request)
            await asyncio.wrap_future(request.reply)
        else:
            await asyncio.to_thread(request.answer_with, self.on_elicit)
        return elicit_result(request.reply.result())

    async def _acall(self, link: Link, name: str, arguments: dict, events: queue.SimpleQueue) -> Any:
        client = link.client
        if client is None:
            raise SessionLost("the session has ended", unsent=True)

        async def progress(done: float, total: float | None, message: str | None) -> None:
            events.put(Progress(name, done, total, message))

        try:
            result = await client.call_tool(name, arguments, progress_callback=progress)
        except Exception as error:
            reason = leaf_message(error)
            message = getattr(getattr(error, "error", None), "message", "") or ""
            if message in ("Session not found", "Session terminated"):
                link.lost = True
                raise SessionLost(message, unsent=True) from None
            if reason.endswith("Connection closed") or "All connection attempts failed" in reason:
                link.lost = True
                raise SessionLost(reason, unsent="All connection attempts failed" in reason) from None
            if getattr(error, "code", None) == -32021 and "io.modelcontextprotocol/tasks" in \
                    str(getattr(getattr(error, "error", None), "data", None)):
                raise _NeedsTask() from None
            if getattr(error, "code", None) == -32601:
                raise ToolCallError(name, "the server refused the call as needing a protocol feature nbtools' "
                                          f"MCP client does not offer (JSON-RPC -32601, method not found): "
                                          f"{message or reason}") from None
            raise ToolCallError(name, f"the MCP server did not answer the call: {reason}") from None
        if result.is_error:
            raise remote_error(name, result)
        return result_value(result, self._output_schemas.get(name))

    # -- lifetime --------------------------------------------------------------------------------------
    def close(self, timeout: float = 5.0) -> None:
        """End the session (a stdio server process is stopped) and the background thread. Idempotent."""
        if self._closed:
            return
        self._closed = True
        _CONNECTIONS.discard(self)
        if self._loop is None:
            return
        if self._link is not None:
            self._end_link(self._link, timeout)
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(timeout)
            if not self._thread.is_alive():
                self._loop.close()

    def __enter__(self) -> "Connection":
        return self.open()

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open" if self._loop is not None else "not open"
        names = ", ".join(tool.name for tool in list.__iter__(self))
        return f"Connection({_describe(self.target)}, {state}: {names})"

    # A list compares by contents; a connection is one live object.
    __hash__ = object.__hash__  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        return self is other


_CONNECTIONS: "weakref.WeakSet[Connection]" = weakref.WeakSet()


@atexit.register
class _NeedsTask(Exception):
    """The server refused a plain call of a tool it runs only as a task (-32021 naming the extension)."""


def _close_connections_at_exit() -> None:
    for connection in list(_CONNECTIONS):
        with contextlib.suppress(Exception):
            connection.close(timeout=2.0)


def connect(command_or_url: str | Sequence[str], *, timeout: float = 30.0, protocol: str = "auto",
            env: dict | None = None, cwd: str | None = None, errlog: Any = None, token: str | None = None,
            headers: dict[str, str] | None = None, max_time: float | None = None,
            on_progress: Callable[[Progress], Any] | None = None,
            on_log: Callable[[LogMessage], Any] | None = None,
            on_elicit: Callable[[Elicitation], Any] | None = None,
            log_level: str | None = "info") -> Connection:
    """Connect to an MCP server and return its tools as nbtools Tools (a `Connection`, a list of Tools).

    `command_or_url`: an `http(s)://` URL (e.g. `http://127.0.0.1:8000/mcp`; streamable HTTP, or a
    legacy HTTP+SSE endpoint such as `http://host/sse`, tried when a POST there is refused with a
    4xx), or a command that starts a stdio server, as one string (split like a shell would) or a
    list of arguments, e.g. `"nbtools serve tools.ipynb"`; `cwd` is its working folder and `errlog`
    receives its stderr (default: this process's real stderr). The command does not inherit this
    process's whole environment: the `mcp` package passes on only a few variables (PATH, HOME,
    USER, ...), so API keys stay here; `env` adds to those (e.g. `env={"PYTHONPATH": ...}`).

    `protocol`: "auto" (default) asks for 2026-07-28 (stateless, `server/discover`) and falls back
    to the 2025-11-25 handshake (sessions) for servers that do not speak it; "2025-11-25" or
    "2026-07-28" uses that one only. `timeout`: seconds to connect, and seconds a call may go
    without an answer or progress (each progress notification whose value is above the call's last
    one starts it again, so a long call that keeps reporting is not cut off; one that repeats a
    value is not making progress). `max_time`: seconds a call may take in all, whatever progress
    comes (None: no cap; the TypeScript SDK's `maxTotalTimeout`).

    HTTP only: `token` is sent as `Authorization: Bearer <token>`; without it `$NBTOOLS_MCP_TOKEN`
    (the token nbtools servers require) is sent, but only to a server this user's nbtools started
    on this machine (a loopback address, `127.0.0.1`, `localhost` or `::1`, recorded by that server
    in an owner-only runtime folder: see `nbtools.mcp.ownservers`), never to another user's server on
    the same host nor to another host. `headers` adds HTTP headers to every request (an
    `Authorization` given there wins over `token`).

    Each Tool's function is built by `mk_tool` from the listed `inputSchema` (real signature and
    docstring); calling it (or `Tool.call`, or `connection.call(name, {...})`) sends `tools/call`
    and returns:

    - the structured content, when the result has some (unwrapped from `{"result": ...}` when the
      server wrapped a non-object value);
    - else, when every block is text, the text (joined by newlines; JSON text is parsed);
    - else a list of the blocks in order, each a `str` or an `nbtools.content` record: `Image` and
      `Audio` (bytes + mime), `Resource` (an embedded resource: uri, text or blob bytes, mime),
      `ResourceLink` (uri, name, description, mime). Block annotations are not kept.

    Notifications while a call runs: `on_progress(Progress)` gets the server's progress (tool,
    progress, total, message) and `on_log(LogMessage)` its log lines (level, data, logger, server),
    both in the calling thread; log lines that come between calls reach `on_log` on the session's
    thread. Without them, in a notebook the call shows a progress bar and its log lines in the
    cell's output; elsewhere log lines go to the `logging` logger "nbtools.mcp". `log_level` is the
    least severe level asked for. `on_elicit(Elicitation)` answers a server's question during a call
    (in the calling thread): a dict accepts with that content, None declines, False cancels;
    without it the client does not offer elicitation. Sampling and roots are not offered.

    Changes: the tool list is read again when the server sends `notifications/tools/list_changed`
    (at 2026-07-28 through a `subscriptions/listen` stream), so the Connection's contents follow the
    server. A server that lost the session (restarted: "Session not found") gets one new session and
    the call is sent again; a call whose connection broke while it ran is sent again only when the
    tool is read-only or idempotent, since it may have run.

    A tool that needs a capability this client does not offer (task-augmented execution) is left
    out with a warning naming it and why (see `Connection.skipped`); a call refused with JSON-RPC
    -32601 raises a ToolCallError saying a protocol feature is missing. An error result raises
    ToolCallError: from an nbtools server the same error it raised there, from another server one
    whose problem is the server's text. Hints come from the tool's annotations (a hint the server
    leaves out takes MCP's default), `returns` from its `outputSchema`.
    """
    require_extra("mcp", "nbtools.mcp.connect()")
    return Connection(command_or_url, timeout=timeout, protocol=protocol, env=env, cwd=cwd, errlog=errlog,
                      token=token, headers=headers, max_time=max_time, on_progress=on_progress, on_log=on_log,
                      on_elicit=on_elicit, log_level=log_level).open()
