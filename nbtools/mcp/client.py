"""`connect()`: another MCP server's tools as nbtools Tools that forward their calls to it.

The session runs on a background thread with its own event loop, so the tools are ordinary blocking
functions, usable from scripts and from notebook cells alike.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import os
import queue
import shlex
import sys
import threading
import time
import warnings
import weakref
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ..errors import ToolCallError
from ..extras import require_extra
from ..formats.mcp import hints_from_annotations
from ..tool import Tool
from .background import serves_on_loop
from .access import http_headers, http_transport, refused_status
from .notify import LogMessage, Progress, default_sink, deliver, log_to_logging, show
from .toolresults import remote_error, result_value, unwrapped_output
from .web import MCP_PATH

if TYPE_CHECKING:  # the mcp package is imported only when a function here needs it
    import mcp_types


class Connection(list):
    """The tools of one MCP server, as nbtools `Tool`s, plus the live session they forward to.

    It is a list of Tools (`Registry(connection)`, `registry.add(connection[0])`, `[t.name for t in
    connection]`), with `close()` (also a context manager, and done at interpreter exit) and
    `call(name, arguments)`. The session runs on a background thread with its own event loop, so the
    tools are ordinary blocking functions, usable from scripts and from notebook cells alike.

    Fields: `target` (the URL or command), `server_name`, `timeout` (seconds per request),
    `skipped` (tools the server listed that could not be made into functions: name -> reason),
    `on_progress` / `on_log` (see `connect`).
    """

    def __init__(self, target: str | Sequence[str], *, timeout: float = 30.0, env: dict | None = None,
                 cwd: str | None = None, errlog: Any = None, token: str | None = None,
                 headers: dict[str, str] | None = None,
                 on_progress: Callable[[Progress], Any] | None = None,
                 on_log: Callable[[LogMessage], Any] | None = None, log_level: str | None = "info"):
        super().__init__()
        deadline = time.monotonic() + timeout  # connecting and reading the tool list, together
        self.target = target
        self.timeout = timeout
        self.on_progress = on_progress
        self.on_log = on_log
        self._log_level = log_level
        # The notification queues of the calls now waiting (oldest first): a log line the server
        # sends goes to the oldest, whose caller shows it; with none waiting, to `on_log` directly.
        self._waiting: list[queue.SimpleQueue] = []
        self.server_name = ""
        self._closed = False
        self._output_schemas: dict[str, Any] = {}
        self._url = target if isinstance(target, str) and _is_url(target) else None
        if self._url is not None:
            _refuse_own_loop_server(self._url)
        if self._url is None and (token is not None or headers):
            raise ValueError("connect: token= and headers= are for HTTP servers; a stdio server needs none")
        self._headers = http_headers(token, headers) if self._url is not None else {}
        transport = self._transport(target, env, cwd, errlog)  # nothing runs until the session enters it
        self._session: Any = None
        self._closing: asyncio.Event | None = None
        self._ready: "asyncio.Future[Any] | None" = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="nbtools MCP client", daemon=True)
        self._thread.start()
        self._holder = asyncio.run_coroutine_threadsafe(self._hold(transport), self._loop)
        try:
            listed = asyncio.run_coroutine_threadsafe(self._wait_ready(), self._loop).result(timeout + 5)
        except BaseException as error:
            self.close()
            reason = _leaf_message(error)
            if reason == "TimeoutError":
                reason = (f"no answer to `initialize` within {timeout} s (does the command start an MCP "
                          "server that speaks on its stdout?)" if self._url is None
                          else f"no answer to `initialize` within {timeout} s")
            elif self._url is not None and reason.endswith("Not Found"):
                reason += f" (is the path right? nbtools, like most MCP servers, serves at {MCP_PATH})"
            elif self._url is not None and (refused_status(self._url, self._headers) == 401 or "401" in reason):
                reason = "401 Unauthorized" + (" (the server wants a bearer token: connect(url, token=...) or $NBTOOLS_MCP_TOKEN; "
                           "nbtools prints it when it starts serving)" if "authorization" not in
                           {key.lower() for key in self._headers} else " (the token was refused)")
            raise ConnectionError(f"could not use the MCP server {_describe(target)}: {reason}") from None
        self.skipped: dict[str, str] = {}
        """Tools the server listed that could not be made into functions: name -> reason."""
        for index, listed_tool in enumerate(listed):
            if time.monotonic() > deadline:  # hostile schemas must not hold connect() past its time-out
                self.close()
                raise ConnectionError(f"could not use the MCP server {_describe(target)}: reading its "
                                      f"{len(listed)} tool definitions took more than {timeout} s "
                                      f"({index} read)")
            # one malformed or hostile schema must not cost the user every other tool of the server
            try:
                self.append(self._tool(listed_tool))
            except (ValueError, TypeError) as error:
                name = getattr(listed_tool, "name", "?")
                self.skipped[name] = str(error)
                warnings.warn(f"MCP server {_describe(target)}: tool {name!r} skipped: {error}", stacklevel=2)
        _CONNECTIONS.add(self)

    # -- the session, held open by one task ---------------------------------------------------------
    def _transport(self, target: Any, env: dict | None, cwd: str | None, errlog: Any) -> Any:
        if self._url is not None:
            import mcp.client.streamable_http  # noqa: F401 - fail here, not on the session's thread
            import mcp.shared._httpx_utils  # noqa: F401

            _quiet_unreachable_session_end()

            return http_transport(self._url, self._headers)
        from mcp import StdioServerParameters, stdio_client

        argv = shlex.split(target) if isinstance(target, str) else [str(part) for part in target]
        if not argv:
            raise ValueError("connect: empty command")
        parameters = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=cwd)
        return stdio_client(parameters, errlog=errlog if errlog is not None else _server_errlog())

    async def _hold(self, transport: Any) -> None:
        from mcp import ClientSession

        self._closing = asyncio.Event()
        ready = self._ready_future()
        try:
            async with transport as (read_stream, write_stream):
                async with ClientSession(read_stream, write_stream, read_timeout_seconds=self.timeout,
                                         logging_callback=self._log_notification,
                                         log_level=self._log_level) as session:
                    initialized = await session.initialize()
                    self.server_name = initialized.server_info.name
                    listed = await _list_all_tools(session)
                    self._session = session
                    ready.set_result(listed)
                    await self._closing.wait()
        except BaseException as error:
            if not ready.done():
                _settle(ready, error if isinstance(error, Exception) else RuntimeError(repr(error)))
            if not isinstance(error, (Exception, asyncio.CancelledError)):
                raise
        finally:
            self._session = None
            if not ready.done():
                _settle(ready, ConnectionError("the MCP session ended before it was ready"))

    def _ready_future(self) -> "asyncio.Future[Any]":
        if self._ready is None:
            self._ready = self._loop.create_future()
        return self._ready

    async def _wait_ready(self) -> Any:
        return await asyncio.wait_for(asyncio.shield(self._ready_future()), self.timeout)

    # -- calls ----------------------------------------------------------------------------------------
    def call(self, name: str, arguments: dict | None = None) -> Any:
        """Call tool `name` on the server and return its value (see `result_value`); blocks.

        While it waits, the server's progress and log notifications for the call reach `on_progress`
        and `on_log` (or the notebook's progress bar and cell output) in this thread. Raises
        ToolCallError when the server answers with an error result (see `results.remote_error`).
        """
        if self._closed:
            raise ToolCallError(name, f"the MCP connection to {_describe(self.target)} is closed")
        if self._session is None:
            raise ToolCallError(name, f"the MCP server {_describe(self.target)} ended the session (has it "
                                      "stopped?); connect again once it runs")
        if name in self.skipped:  # e.g. it needs task augmentation: the server would only refuse it
            raise ToolCallError(name, f"nbtools' MCP client cannot call this tool of {self.server_name or 'the server'}: "
                                      f"{self.skipped[name]}")
        if self._url is not None:
            _refuse_own_loop_server(self._url)
        # 1. Notifications come through a queue, so callbacks and widgets run in the calling thread
        #    (a notebook cell's output belongs to its thread), not on the session's loop.
        events: queue.SimpleQueue = queue.SimpleQueue()
        on_progress, on_log = self._sinks(name)
        self._waiting.append(events)
        future = asyncio.run_coroutine_threadsafe(self._acall(name, arguments or {}, events), self._loop)
        future.add_done_callback(lambda _: events.put(None))
        try:
            # 2. Show each notification as it comes, until the answer (None) or the time-out.
            deadline = time.monotonic() + self.timeout + 5
            while True:
                try:
                    event = events.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    future.cancel()
                    raise ToolCallError(name, f"no answer from {_describe(self.target)} within {self.timeout} s") from None
                if event is None:
                    break
                show(event, on_progress, on_log)
        except BaseException:
            future.cancel()  # e.g. KeyboardInterrupt: the session sends the server notifications/cancelled
            raise
        finally:
            self._waiting.remove(events)
        # 3. Log lines that arrived after the answer was queued still belong to this call.
        while not events.empty():
            event = events.get_nowait()
            if event is not None:
                show(event, on_progress, on_log)
        return future.result()

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

    async def _acall(self, name: str, arguments: dict, events: queue.SimpleQueue | None = None) -> Any:
        session = self._session
        if session is None:
            raise ToolCallError(name, f"the MCP connection to {_describe(self.target)} is closed")

        async def progress(done: float, total: float | None, message: str | None) -> None:
            if events is not None:
                events.put(Progress(name, done, total, message))

        try:
            result = await session.call_tool(name, arguments, progress_callback=progress)
        except ToolCallError:
            raise
        except Exception as error:
            reason = _leaf_message(error)
            if reason.endswith("Connection closed"):
                raise ToolCallError(name, f"the MCP server {_describe(self.target)} closed the connection (has it "
                                          "stopped?); connect again once it runs") from None
            if getattr(error, "code", None) == -32601:
                raise ToolCallError(name, "the server refused the call as needing a protocol feature nbtools' "
                                          f"MCP client does not offer (JSON-RPC -32601, method not found): "
                                          f"{getattr(error, 'message', reason)}") from None
            raise ToolCallError(name, f"the MCP server did not answer the call: {reason}") from None
        if result.is_error:
            raise remote_error(name, result)
        return result_value(result, self._output_schemas.get(name))

    def _tool(self, listed: "mcp_types.Tool") -> Tool:
        from ..inverse import mk_tool, py_name

        definition = listed.model_dump(by_alias=True, exclude_none=True, mode="json")
        name = definition["name"]
        if (definition.get("execution") or {}).get("taskSupport") == "required":
            raise ValueError("it requires task-augmented execution (MCP tasks: its execution.taskSupport is "
                             "'required'), which nbtools' MCP client does not offer, so every call would fail; "
                             "use a client with task support for this tool")
        output_schema = definition.get("outputSchema")
        self._output_schemas[name] = output_schema

        def dispatch(tool_name: str, /, **arguments: Any) -> Any:  # positional: a property may be called "tool_name"
            return self.call(tool_name, arguments)

        function = mk_tool(dispatch, definition)
        properties = (definition.get("inputSchema") or {}).get("properties") or {}
        fn: Any = function
        if any(py_name(prop) != prop for prop in properties):
            # Tool calls pass the schema's own property names as keywords (`**{"city-name": ...}`),
            # which are not all Python identifiers here: those are forwarded as they are. A person
            # calling the function uses the signature they see (`city_name=...`, positional
            # arguments), which the `mk_tool` function maps back to the property names.
            @functools.wraps(function)
            def fn(*args: Any, **arguments: Any) -> Any:
                if not args and all(key in properties for key in arguments):
                    return dispatch(name, **arguments)
                return function(*args, **arguments)

        from ..formats.mcp import without_dialect  # the default dialect says nothing a Tool needs to keep

        returns = without_dialect(unwrapped_output(output_schema)) if output_schema else None
        return Tool.from_schema(name, definition.get("description") or "", without_dialect(definition.get("inputSchema")), fn,
                                hints=hints_from_annotations(definition.get("annotations")),
                                returns=returns, group=self.server_name or None)

    # -- lifetime --------------------------------------------------------------------------------------
    def close(self, timeout: float = 5.0) -> None:
        """End the session (a stdio server process is stopped) and the background thread. Idempotent."""
        if self._closed:
            return
        self._closed = True
        _CONNECTIONS.discard(self)
        closing = self._closing
        if closing is not None:
            self._loop.call_soon_threadsafe(closing.set)
        with contextlib.suppress(BaseException):
            self._holder.result(timeout)
        if not self._holder.done():
            self._holder.cancel()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)
        if not self._thread.is_alive():
            self._loop.close()

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        names = ", ".join(tool.name for tool in self)
        return f"Connection({_describe(self.target)}, {state}: {names})"

    # A list compares by contents; a connection is one live object.
    __hash__ = object.__hash__  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        return self is other


_CONNECTIONS: "weakref.WeakSet[Connection]" = weakref.WeakSet()


@atexit.register
def _close_connections_at_exit() -> None:
    for connection in list(_CONNECTIONS):
        with contextlib.suppress(Exception):
            connection.close(timeout=2.0)


def connect(command_or_url: str | Sequence[str], *, timeout: float = 30.0, env: dict | None = None,
            cwd: str | None = None, errlog: Any = None, token: str | None = None,
            headers: dict[str, str] | None = None, on_progress: Callable[[Progress], Any] | None = None,
            on_log: Callable[[LogMessage], Any] | None = None, log_level: str | None = "info") -> Connection:
    """Connect to an MCP server and return its tools as nbtools Tools (a `Connection`, a list of Tools).

    `command_or_url`: an `http(s)://` URL of a streamable HTTP server (e.g. `http://127.0.0.1:8000/mcp`),
    or a command that starts a stdio server, as one string (split like a shell would) or a list of
    arguments, e.g. `"nbtools serve tools.ipynb"`; `cwd` is its working folder and `errlog`
    receives its stderr (default: this process's real stderr). The command does not inherit this
    process's whole environment: the `mcp` package passes on only a few variables (PATH, HOME,
    USER, ...), so API keys stay here; `env` adds to those (e.g. `env={"PYTHONPATH": ...}`, or
    `env=dict(os.environ)` for all of yours). `timeout` bounds connecting and each request, in seconds.

    HTTP only: `token` is sent as `Authorization: Bearer <token>` (default: `$NBTOOLS_MCP_TOKEN`,
    the token nbtools servers require); `headers` adds HTTP headers to every request (an
    `Authorization` given there wins over `token`).

    Each Tool's function is built by `mk_tool` from the listed `inputSchema` (real signature and
    docstring); calling it (or `Tool.call`) sends `tools/call` and returns:

    - the structured content, when the result has some (unwrapped from `{"result": ...}` when the
      server wrapped a non-object value);
    - else, when every block is text, the text (joined by newlines; JSON text is parsed);
    - else a list of the blocks in order, each a `str` or an `nbtools.content` record: `Image` and
      `Audio` (bytes + mime), `Resource` (an embedded resource: uri, text or blob bytes, mime),
      `ResourceLink` (uri, name, description, mime). Block annotations are not kept. Returned by a
      local tool, such a list reaches a model as `run_tool_calls` renders rich results.

    Notifications while a call runs: `on_progress(Progress)` gets the server's progress (tool,
    progress, total, message) and `on_log(LogMessage)` its log lines (level, data, logger, server),
    both in the calling thread; log lines that come between calls reach `on_log` on the session's
    thread. Without them, in a notebook the call shows a progress bar and its log lines in the
    cell's output; elsewhere log lines go to the `logging` logger "nbtools.mcp". `log_level` is the
    least severe level asked for (servers on the 2026 protocol send logs only when asked).

    A tool that needs a capability this client does not offer (task-augmented execution) is left
    out with a warning naming it and why (see `Connection.skipped`); a call refused with JSON-RPC
    -32601 raises a ToolCallError saying a protocol feature is missing.

    An error result raises ToolCallError: from an nbtools server the same error it raised there (its
    argument, problem and schema), from another server one whose problem is the server's text. Hints
    come from the tool's annotations as the server said them (`formats.mcp.hints_from_annotations`:
    true, false or left out to MCP's default), `returns` from its
    `outputSchema`.
    """
    require_extra("mcp", "nbtools.mcp.connect()")
    return Connection(command_or_url, timeout=timeout, env=env, cwd=cwd, errlog=errlog, token=token,
                      headers=headers, on_progress=on_progress, on_log=on_log, log_level=log_level)


async def _list_all_tools(session: Any) -> list:
    import mcp_types as types

    listed = await session.list_tools()
    tools = list(listed.tools)
    pages = 0
    while listed.next_cursor and pages < 100:  # bounded: a server that never ends its pages cannot hang us
        listed = await session.list_tools(params=types.PaginatedRequestParams(cursor=listed.next_cursor))
        tools.extend(listed.tools)
        pages += 1
    return tools


def _is_url(target: str) -> bool:
    return target.startswith(("http://", "https://"))


def _describe(target: Any) -> str:
    return target if isinstance(target, str) else shlex.join(str(part) for part in target)


def _server_errlog() -> Any:
    """Where a stdio server's stderr goes: the process's real stderr (a kernel's sys.stderr has no fd)."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.fileno()
                return stream
        except (AttributeError, OSError, ValueError):
            continue
    return open(os.devnull, "w")  # noqa: SIM115 - lives as long as the server process


@functools.cache
def _quiet_unreachable_session_end() -> None:
    """Closing a connection whose HTTP server has gone makes the `mcp` client warn that it could not
    end the session: nothing is left to end, so that one warning is dropped."""
    import logging

    def keep(record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Session termination failed: All connection attempts failed")

    logging.getLogger("mcp.client.streamable_http").addFilter(keep)


def _settle(future: "asyncio.Future[Any]", error: BaseException) -> None:
    """Fail `future`, marked as seen: after a time-out nobody awaits it any more, and asyncio would
    print "Future exception was never retrieved" with the whole traceback at exit."""
    future.set_exception(error)
    future.exception()


def _leaf_message(error: BaseException) -> str:
    """The first real error inside (nested) exception groups, as `Type: message`."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _refuse_own_loop_server(url: str) -> None:
    """A blocking call from the thread whose loop runs the target server would wait for itself forever."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    from urllib.parse import urlsplit

    port = urlsplit(url).port
    if port is not None and serves_on_loop(port, loop) is not None:
        raise RuntimeError(
            f"the MCP server at {url} runs on this thread's event loop (started with `%tools --serve` "
            "or nbtools.mcp.start here), so a blocking call to it from this thread would wait for "
            "itself forever. Call the tools directly here, or serve them from another process "
            "(`nbtools serve NOTEBOOK --http PORT`) and connect to that.")
