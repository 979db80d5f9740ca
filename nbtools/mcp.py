"""MCP (Model Context Protocol): serve a registry's tools to any MCP client, and use another server's tools.

Built on the official `mcp` package (its low-level `Server`, the stdio and streamable HTTP transports,
and `ClientSession`); this module only maps between nbtools' `Tool`/`Registry` and MCP's messages.

Serving:

* `serve(registry, transport="stdio" | "http", host, port)` blocks and serves until the client goes
  away (stdio) or the process is stopped (HTTP, at path `/mcp`). `nbtools serve` uses it.
* `start(registry, port=...)` serves over HTTP *inside this process* and returns at once; in a kernel
  this is `%tools --serve`. See "Which thread runs a tool call" below.

Every `tools/call` goes through `call_func_async`: the same lookup (enabled tools only), validation,
conversion, approval and limits as `call_func`. A refused or failed call comes back as a result with
`isError: true` and the text written for the model; the server keeps serving. A successful call comes
back as text (`result_text`) and, when the tool declares a return type, as `structuredContent`
(checked against the `outputSchema` it advertised; a non-object return is wrapped as
`{"result": value}`). The registry's `max_result_chars` cuts the text; `structuredContent` must match
the `outputSchema` (MCP requires it, and the `mcp` client checks), so it stays whole, except for a
tool without a return annotation, where it is left out when the text was cut.

Which thread runs a tool call:

* `serve(...)`: the thread that called `serve` (the main thread under `nbtools serve`), one call at
  a time for plain functions; `async def` tools interleave at their `await`s.
* `start(...)` where an asyncio event loop is running on the calling thread (a Jupyter kernel, where
  cells run on the main thread inside that loop): the server is a task on that loop, so tool calls
  run on the kernel's main thread, *between* cells. A call never runs in the middle of a cell's code
  (only at an `await` of a cell that awaits), sees the kernel's current variables, and a long cell
  simply delays the call. A long tool call likewise delays the next cell. Interrupting the kernel
  during a call ends that call with an error result, and the server keeps running.
* `start(...)` with no running loop (a plain Python script or terminal IPython): the server gets its
  own thread and event loop, and tool calls run on that thread, concurrently with your code. Share
  state with care.

Client: `connect(command_or_url)` starts (stdio) or reaches (HTTP) an MCP server and returns its tools
as nbtools `Tool`s (functions built by `mk_tool`), ready for a `Registry` or any provider format.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import json
import os
import re
import shlex
import socket
import sys
import threading
import warnings
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from .errors import ToolCallError
from .registry import Registry
from .tool import Tool

if TYPE_CHECKING:  # the mcp package is imported only when a function here needs it
    import mcp_types
    from mcp.server.lowlevel import Server

MCP_PATH = "/mcp"
"""Where the streamable HTTP transport is served."""

DEFAULT_PORT = 8000

# MCP tool annotations <-> nbtools hints.
HINT_ANNOTATIONS = {
    "read-only": "readOnlyHint",
    "destructive": "destructiveHint",
    "idempotent": "idempotentHint",
    "open-world": "openWorldHint",
}


# ================================================================================================
# The server: Registry -> MCP handlers
# ================================================================================================
def as_registry(tools: Any = None) -> Registry:
    """`None` -> the default `nbtools.registry`; a Registry as is; an iterable of Tools/callables -> a new one."""
    if tools is None:
        from .registry import registry

        return registry
    if isinstance(tools, Registry):
        return tools
    if isinstance(tools, Tool) or callable(tools):
        return Registry([tools])
    return Registry(tools)


def build_server(registry: Any = None, *, name: str = "nbtools") -> "Server":
    """An `mcp` low-level `Server` listing the registry's enabled tools and calling them through nbtools.

    The registry is read on every request, so tools added, removed, enabled or disabled after the
    server started show up in the next `tools/list`.
    """
    from mcp.server.lowlevel import Server

    import mcp_types as types

    from . import __version__

    tools = as_registry(registry)

    async def list_tools(ctx: Any, params: Any) -> "mcp_types.ListToolsResult":
        return types.ListToolsResult(tools=[_listed_tool(tool) for tool in tools.enabled()])

    async def call_tool(ctx: Any, params: "mcp_types.CallToolRequestParams") -> "mcp_types.CallToolResult":
        return await call_result(tools, params.name, params.arguments)

    return Server(name, version=__version__, on_list_tools=list_tools, on_call_tool=call_tool,
                  instructions="Tools defined with nbtools; every call is validated against the listed "
                               "inputSchema before it runs.")


def _listed_tool(tool: Tool) -> "mcp_types.Tool":
    import mcp_types as types

    return types.Tool.model_validate(tool.schema("mcp"))


async def call_result(registry: Registry, name: str, arguments: dict | None) -> "mcp_types.CallToolResult":
    """Run one `tools/call` through `call_func_async` and build its MCP result (never raises for a bad call)."""
    from .call import call_func_async

    tool = registry.resolve(name)
    try:
        value = await call_func_async(name, {} if arguments is None else arguments, ns=registry)
    except ToolCallError as error:
        return _error_result(str(error))
    except KeyboardInterrupt:
        # In a kernel, "interrupt" while a tool runs on the main thread: end this call, keep serving.
        return _error_result(f"Error calling tool {name!r}: interrupted by the person running the server")
    except Exception as error:  # a bug below call_func_async; still an answer, not a dead session
        return _error_result(f"Error calling tool {name!r}: {type(error).__name__}: {error}")
    return success_result(tool, value, registry.limits.max_result_chars)


def _error_result(text: str) -> "mcp_types.CallToolResult":
    import mcp_types as types

    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def success_result(tool: Tool | None, value: Any, max_chars: int) -> "mcp_types.CallToolResult":
    """A tool's return value as MCP content: text for the model, plus `structuredContent`.

    `structuredContent` is given when the tool advertises an `outputSchema` (the value as JSON,
    wrapped as `{"result": value}` when the declared type is not an object) and, for tools without
    a return annotation, when the value is a JSON object. A value that does not match the advertised
    schema becomes an error result: clients reject such results, and the message says why.

    `max_chars` (the registry's `max_result_chars`) cuts the text. The structured content of a
    tool with an `outputSchema` is always whole: the MCP spec requires it to match that schema
    (the `mcp` client rejects a result without it), so cut text cannot stand in for it. For a tool
    without one it is optional, and left out when the text had to be cut.
    """
    import mcp_types as types

    from .call import rendered

    data, text = rendered(value, max_chars)
    cut = len(text) > max_chars  # only cut text grows past the limit (it carries a marker)
    structured = None
    if tool is not None and tool.returns is not None:
        from .formats import mcp_wraps_result

        structured = to_json_value(value) if cut else data
        if mcp_wraps_result(tool):
            structured = {"result": structured}
        problem = _output_problem(tool, structured)
        if problem is not None:
            # The tool did run (it may have changed something): say so, and show what it returned.
            return _error_result(f"Error calling tool {tool.name!r}: it ran, but returned a value that does "
                                 f"not match its declared return type: {problem}. It returned: {text}")
    elif not cut and isinstance(data, dict):
        structured = data
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                structured_content=structured)


def to_json_value(value: Any) -> Any:
    """`value` as plain JSON data (dataclasses as objects, tuples as arrays, ...; see `values.to_json`)."""
    from .values import to_json

    return to_json(value)


# One compiled validator per Tool object (Tools are immutable; a redefinition is a new Tool).
_OUTPUT_VALIDATORS: "weakref.WeakKeyDictionary[Tool, Any]" = weakref.WeakKeyDictionary()


def _output_problem(tool: Tool, structured: Any) -> str | None:
    """None when `structured` matches the tool's advertised outputSchema, else what is wrong."""
    validator = _OUTPUT_VALIDATORS.get(tool)
    if validator is None:
        import jsonschema

        schema = tool.schema("mcp").get("outputSchema")
        if schema is None:
            return None
        validator_class = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        validator = validator_class(schema)
        _OUTPUT_VALIDATORS[tool] = validator
    error = next(iter(validator.iter_errors(structured)), None)
    if error is None:
        return None
    where = "/".join(str(part) for part in error.absolute_path)
    return f"{error.message}" + (f" (at {where})" if where else "")


# ================================================================================================
# serve(): blocking, stdio or HTTP
# ================================================================================================
def serve(registry: Any = None, transport: str = "stdio", host: str = "127.0.0.1",
          port: int = DEFAULT_PORT, *, name: str = "nbtools", log_level: str = "warning",
          on_listening: Callable[[str], Any] | None = None) -> None:
    """Serve the registry's enabled tools over MCP until the client leaves or the process is stopped.

    Args:
        registry: a Registry (default: `nbtools.registry`), or Tools/callables.
        transport: "stdio" (the process's stdin/stdout carry the protocol; anything the tools print
            goes to stderr) or "http" (streamable HTTP at `http://HOST:PORT/mcp`).
        host, port: where the HTTP transport listens (default 127.0.0.1: this machine only; port 0
            picks a free port).
        name: the server name clients see.
        log_level: uvicorn's log level for the HTTP transport.
        on_listening: HTTP only: called with the URL (`http://HOST:PORT/mcp`, the real port) once
            the socket listens, before the first request is served.

    Blocks, running its own event loop; in a notebook use `start` (or `%tools --serve`) instead.
    """
    if transport not in ("stdio", "http"):
        raise ValueError(f"serve: transport must be 'stdio' or 'http', not {transport!r}")
    _refuse_running_loop("serve")
    server = build_server(registry, name=name)
    import anyio

    if transport == "stdio":
        try:
            anyio.run(_serve_stdio, server)
        except* (BrokenPipeError, ConnectionResetError):
            pass  # the client closed its end of the pipe before reading every reply: it has left
    else:
        listener = bind_socket(host, port)
        uvicorn_server = _uvicorn_server(server, host, log_level=log_level, embedded=False)
        with listener:
            if on_listening is not None:
                on_listening(_listener_url(host, listener))
            anyio.run(functools.partial(uvicorn_server.serve, sockets=[listener]))


async def _serve_stdio(server: "Server") -> None:
    from mcp.server.stdio import stdio_server

    # stdout is the protocol: a tool's print() must not reach it. The transport takes the stdout
    # pipe for itself and points fd 1 at stderr while serving; sys.stdout is redirected as well (after
    # the transport has taken the real one), or text left in its buffer would reach the pipe at exit.
    sys.stdout.flush()
    async with stdio_server() as (read_stream, write_stream):
        with contextlib.redirect_stdout(sys.stderr):
            await server.run(read_stream, write_stream, server.create_initialization_options())


def _refuse_running_loop(what: str) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(f"{what}() blocks and runs its own event loop, but one is already running in this "
                       "thread (a notebook?). Use nbtools.mcp.start(...) or `%tools --serve` to serve from "
                       "a kernel, or `nbtools serve` in a terminal.")


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (port 0: a free one), with an error that says which address failed."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"cannot serve MCP on port {port!r}: a TCP port is an integer from 0 to 65535 "
                         "(0 picks a free one)")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(128)
    except OSError as error:
        listener.close()
        raise OSError(error.errno, f"cannot serve MCP on {host}:{port}: {error.strerror or error}") from None
    listener.setblocking(False)
    return listener


def _uvicorn_server(server: "Server", host: str, *, log_level: str, embedded: bool) -> Any:
    """A uvicorn server for the streamable HTTP app at `/mcp` (DNS-rebinding protection on localhost)."""
    import uvicorn

    app = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host)
    config = uvicorn.Config(app, log_config=None, log_level=log_level, access_log=False,
                            lifespan="on", timeout_graceful_shutdown=2)
    uvicorn_server = _uvicorn_class(embedded)(config)
    uvicorn_server.session_manager = server.session_manager
    return uvicorn_server


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


async def _end_sessions(session_manager: Any) -> None:
    # The mcp package has no public way to list live sessions: read its table defensively, so a
    # later version without it only brings back the slower shutdown.
    sessions = getattr(session_manager, "_server_instances", None)
    for transport in list(sessions.values()) if isinstance(sessions, dict) else []:
        with contextlib.suppress(Exception):
            await transport.terminate()


# ================================================================================================
# start()/stop(): an HTTP server inside this process (%tools --serve)
# ================================================================================================
@dataclass(eq=False)
class RunningServer:
    """An MCP server over streamable HTTP running inside this process (see `start`).

    Fields:
        url: where clients connect (`http://HOST:PORT/mcp`).
        host, port: the address it listens on.
        registry: the registry it serves (read live on every request).
        in_thread: False when it runs as a task on the event loop of the thread that started it
            (a kernel's main thread), True when it has a thread of its own.
    """

    url: str
    host: str
    port: int
    registry: Registry
    in_thread: bool
    _uvicorn: Any = field(repr=False)
    _listener: socket.socket = field(repr=False)
    _loop: asyncio.AbstractEventLoop | None = field(repr=False)
    _task: Any = field(default=None, repr=False)  # the asyncio.Task running uvicorn (on `_loop`)
    _thread: threading.Thread | None = field(default=None, repr=False)
    _began: bool = field(default=False, repr=False)  # the serving coroutine has started running

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop listening at once and end the server (in loop mode, it finishes when the loop next runs)."""
        _RUNNING.pop(self.port, None)
        if self._task is None or self._task.done():
            self._listener.close()
            return
        if self.in_thread and self._loop is not None:
            self._loop.call_soon_threadsafe(self._request_exit)
            if self._thread is not None:
                self._thread.join(timeout)
        else:
            self._request_exit()

    def _request_exit(self) -> None:
        # Close the listening sockets now, so the port is free again as soon as this returns.
        for listening in getattr(self._uvicorn, "servers", []):
            listening.close()
        self._uvicorn.should_exit = True
        if self._uvicorn.started:
            self._listener.close()
        elif not self._began:
            # The task never ran: cancelling it is clean, and nothing else will close the socket.
            self._listener.close()
            self._task.cancel()
        # Else uvicorn is starting up (its lifespan): cancelling now would log a traceback, and
        # closing the socket would make it fail to listen (EBADF). It sees `should_exit` once
        # started, shuts down at once and closes the socket itself.

    async def wait_closed(self) -> None:
        """Await the end of a loop-mode server after `stop()` (from code on the same loop)."""
        if self._task is not None and not self.in_thread:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def __repr__(self) -> str:
        where = "own thread" if self.in_thread else "this thread's event loop"
        state = "running" if self.running else "stopped"
        return f"RunningServer({self.url}, {len(self.registry.enabled())} tools, {where}, {state})"


_RUNNING: dict[int, RunningServer] = {}


def start(registry: Any = None, host: str = "127.0.0.1", port: int = 0, *, name: str = "nbtools",
          log_level: str = "warning") -> RunningServer:
    """Serve the registry's tools over streamable HTTP from this process, and return at once.

    `port=0` picks a free port (see `.port`/`.url` on the result). With an asyncio loop running on
    this thread (a Jupyter kernel) the server is a task on that loop and tool calls run on this
    thread between cells; otherwise it gets a thread and loop of its own (see the module docs).
    Stop it with `.stop()` or `nbtools.mcp.stop()`.
    """
    tools = as_registry(registry)
    server = build_server(tools, name=name)
    listener = bind_socket(host, port)
    bound_port = listener.getsockname()[1]
    url = _listener_url(host, listener)
    try:
        uvicorn_server = _uvicorn_server(server, host, log_level=log_level, embedded=True)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is not None:
            running = RunningServer(url, host, bound_port, tools, False, uvicorn_server, listener, loop)
            async def serve_on_this_loop() -> None:
                running._began = True
                await uvicorn_server.serve(sockets=[listener])

            running._task = loop.create_task(serve_on_this_loop(), name=f"nbtools MCP server on port {bound_port}")
            running._task.add_done_callback(functools.partial(_report_end, running))
        else:
            running = RunningServer(url, host, bound_port, tools, True, uvicorn_server, listener, None)
            ready = threading.Event()

            async def serve_here() -> None:
                running._loop = asyncio.get_running_loop()
                running._task = asyncio.current_task()
                running._began = True
                ready.set()
                await uvicorn_server.serve(sockets=[listener])

            def run_loop() -> None:
                # asyncio.Runner cancels what the server leaves behind (e.g. SSE watchers) and closes the loop.
                try:
                    with asyncio.Runner() as runner:
                        runner.run(serve_here())
                except Exception as error:  # nobody awaits this thread: say why it ended
                    _RUNNING.pop(bound_port, None)
                    print(f"nbtools: the MCP server at {url} stopped: {type(error).__name__}: {error}",
                          file=sys.stderr)
                finally:
                    ready.set()  # also when it failed before serving

            thread = threading.Thread(target=run_loop, name=f"nbtools MCP server on port {bound_port}",
                                      daemon=True)
            running._thread = thread
            thread.start()
            ready.wait()
    except BaseException:
        listener.close()
        raise
    previous = _RUNNING.get(bound_port)
    if previous is not None:  # a port reused after the old server was stopped by hand
        previous.stop()
    _RUNNING[bound_port] = running
    return running


def _report_end(server: RunningServer, task: "asyncio.Task[Any]") -> None:
    """A loop-mode server that ended by itself says why (nobody awaits its task)."""
    if task.cancelled():
        return
    error = task.exception()
    if error is not None:
        _RUNNING.pop(server.port, None)
        print(f"nbtools: the MCP server at {server.url} stopped: {type(error).__name__}: {error}",
              file=sys.stderr)


def _listener_url(host: str, listener: socket.socket) -> str:
    return f"http://{_url_host(host)}:{listener.getsockname()[1]}{MCP_PATH}"


def _url_host(host: str) -> str:
    if host in ("0.0.0.0", "::", ""):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


def running_servers() -> list[RunningServer]:
    """The servers `start` started in this process that are still serving."""
    return [server for server in _RUNNING.values() if server.running]


def stop(port: int | None = None) -> list[RunningServer]:
    """Stop the server on `port` (default: every server `start` started); returns the ones stopped."""
    if port is not None and port not in _RUNNING:
        raise KeyError(f"no MCP server started by this process on port {port}; running: "
                       f"{', '.join(str(known) for known in _RUNNING) or 'none'}")
    chosen = [_RUNNING[port]] if port is not None else list(_RUNNING.values())
    for server in chosen:
        server.stop()
    return chosen


def serve_magic(registry: Registry, port: int | None, stop_servers: bool, *, filtered: bool = False) -> str:
    """What `%tools --serve [PORT]` / `%tools --stop` do; returns the line to print.

    Raises IPython's UsageError for a combination that makes no sense or a port that is taken.
    """
    from IPython.core.error import UsageError

    if stop_servers and port is not None:
        raise UsageError("%tools: use either --serve or --stop")
    if stop_servers:
        stopped = stop()
        if not stopped:
            return "No MCP server is running."
        return "Stopped the MCP server" + ("s" if len(stopped) > 1 else "") + " at " + \
            ", ".join(server.url for server in stopped) + "."
    if filtered:
        raise UsageError("%tools --serve serves every enabled tool (read live, so new %%tool cells appear); "
                         "disable tools (registry.disable(name) or the panel) to hide them")
    if port is not None and not 0 <= port <= 65535:
        raise UsageError(f"%tools --serve: {port} is not a TCP port (0-65535; 0 or none picks a free one)")
    count = len(registry.enabled())
    # Running the cell again (or "Run All") must not fail on our own port nor start a second server.
    for server in running_servers():
        if server.registry is registry and port in (None, 0, server.port):
            return (f"Already serving {count} tool{'s' if count != 1 else ''} at {server.url} "
                    "(`%tools --stop` ends it).")
    try:
        server = start(registry, port=port or 0)
    except OSError as error:
        raise UsageError(f"%tools --serve: {error.strerror or error}") from None
    where = ("on this kernel's main thread, between cells" if not server.in_thread
             else "on a background thread")
    return (f"MCP server for {count} tool{'s' if count != 1 else ''} at {server.url} "
            f"(tool calls run {where}; `%tools --stop` ends it).")


@atexit.register
def _stop_all_at_exit() -> None:
    for server in list(_RUNNING.values()):
        with contextlib.suppress(Exception):
            server.stop(timeout=1.0)


# ================================================================================================
# The client: connect() -> Tools that forward to a server
# ================================================================================================
class Connection(list):
    """The tools of one MCP server, as nbtools `Tool`s, plus the live session they forward to.

    It is a list of Tools (`Registry(connection)`, `registry.add(connection[0])`, `[t.name for t in
    connection]`), with `close()` (also a context manager, and done at interpreter exit) and
    `call(name, arguments)`. The session runs on a background thread with its own event loop, so the
    tools are ordinary blocking functions, usable from scripts and from notebook cells alike.

    Fields: `target` (the URL or command), `server_name`, `timeout` (seconds per request).
    """

    def __init__(self, target: str | Sequence[str], *, timeout: float = 30.0, env: dict | None = None,
                 cwd: str | None = None, errlog: Any = None):
        super().__init__()
        self.target = target
        self.timeout = timeout
        self.server_name = ""
        self._closed = False
        self._output_schemas: dict[str, Any] = {}
        self._url = target if isinstance(target, str) and _is_url(target) else None
        if self._url is not None:
            _refuse_own_loop_server(self._url)
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
            raise ConnectionError(f"could not use the MCP server {_describe(target)}: {reason}") from None
        self.skipped: dict[str, str] = {}
        """Tools the server listed that could not be made into functions: name -> reason."""
        for listed_tool in listed:
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
            from mcp.client.streamable_http import streamable_http_client

            _quiet_unreachable_session_end()

            return streamable_http_client(self._url)
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
                async with ClientSession(read_stream, write_stream, read_timeout_seconds=self.timeout) as session:
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

        Raises ToolCallError when the server answers with an error result (its text is the message).
        """
        if self._closed:
            raise ToolCallError(name, f"the MCP connection to {_describe(self.target)} is closed")
        if self._session is None:
            raise ToolCallError(name, f"the MCP server {_describe(self.target)} ended the session (has it "
                                      "stopped?); connect again once it runs")
        if self._url is not None:
            _refuse_own_loop_server(self._url)
        future = asyncio.run_coroutine_threadsafe(self._acall(name, arguments or {}), self._loop)
        try:
            return future.result(self.timeout + 5)
        except TimeoutError:
            future.cancel()
            raise ToolCallError(name, f"no answer from {_describe(self.target)} within {self.timeout} s") from None

    async def _acall(self, name: str, arguments: dict) -> Any:
        session = self._session
        if session is None:
            raise ToolCallError(name, f"the MCP connection to {_describe(self.target)} is closed")
        try:
            result = await session.call_tool(name, arguments)
        except ToolCallError:
            raise
        except Exception as error:
            reason = _leaf_message(error)
            if reason.endswith("Connection closed"):
                raise ToolCallError(name, f"the MCP server {_describe(self.target)} closed the connection (has it "
                                          "stopped?); connect again once it runs") from None
            raise ToolCallError(name, f"the MCP server did not answer the call: {reason}") from None
        if result.is_error:
            raise remote_error(name, _content_text(result.content) or "the server reported an error")
        return result_value(result, self._output_schemas.get(name))

    def _tool(self, listed: "mcp_types.Tool") -> Tool:
        from .inverse import mk_tool, py_name

        definition = listed.model_dump(by_alias=True, exclude_none=True, mode="json")
        name = definition["name"]
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

        returns = _unwrapped_output(output_schema) if output_schema else None
        return Tool.from_schema(name, definition.get("description") or "", definition.get("inputSchema"), fn,
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
            cwd: str | None = None, errlog: Any = None) -> Connection:
    """Connect to an MCP server and return its tools as nbtools Tools (a `Connection`, a list of Tools).

    `command_or_url`: an `http(s)://` URL of a streamable HTTP server (e.g. `http://127.0.0.1:8000/mcp`),
    or a command that starts a stdio server, as one string (split like a shell would) or a list of
    arguments, e.g. `"nbtools serve tools.ipynb"`; `cwd` is its working folder and `errlog`
    receives its stderr (default: this process's real stderr). The command does not inherit this
    process's whole environment: the `mcp` package passes on only a few variables (PATH, HOME,
    USER, ...), so API keys stay here; `env` adds to those (e.g. `env={"PYTHONPATH": ...}`, or
    `env=dict(os.environ)` for all of yours). `timeout` bounds connecting and each request, in seconds.

    Each Tool's function is built by `mk_tool` from the listed `inputSchema` (real signature and
    docstring); calling it (or `Tool.call`) sends `tools/call` and returns the structured result
    (unwrapped from `{"result": ...}` when the server wrapped a non-object value) or else the text.
    An error result raises ToolCallError with the server's text. Hints come from the tool's
    annotations (only those the server sets to true), `returns` from its `outputSchema`.
    """
    return Connection(command_or_url, timeout=timeout, env=env, cwd=cwd, errlog=errlog)


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


def result_value(result: "mcp_types.CallToolResult", output_schema: dict | None = None) -> Any:
    """The Python value of a successful `tools/call` result.

    The structured content when there is some (unwrapped when `output_schema` is the `{"result": ...}`
    wrapper of a non-object value); else the text content (JSON text is parsed); else the content
    blocks as dicts.
    """
    structured = result.structured_content
    if structured is not None:
        if _is_result_wrapper(output_schema) and isinstance(structured, dict) and "result" in structured:
            return structured["result"]
        return structured
    text = _content_text(result.content)
    if text is not None:
        try:
            return json.loads(text)
        except ValueError:
            return text
    return [block.model_dump(by_alias=True, exclude_none=True, mode="json") for block in result.content]


def remote_error(name: str, text: str) -> ToolCallError:
    """A ToolCallError carrying a server's error text, without repeating an "Error calling tool" prefix.

    Servers built by nbtools already write `Error calling tool 'NAME'[, argument 'ARG']: PROBLEM`;
    that is taken apart so `str()` of the error reads the same as on the server.
    """
    prefix = f"Error calling tool {name!r}"
    if text.startswith(prefix):
        rest = text[len(prefix):]
        argument = re.match(r", argument '([^']*)': ", rest)
        if argument is not None:
            return ToolCallError(name, rest[argument.end():], argument=argument.group(1))
        if rest.startswith(": "):
            return ToolCallError(name, rest[2:])
    return ToolCallError(name, text)


def _is_result_wrapper(schema: dict | None) -> bool:
    """The `{"type":"object","properties":{"result": X},"required":["result"]}` wrapper MCP servers use."""
    if not isinstance(schema, dict):
        return False
    properties = schema.get("properties")
    return (isinstance(properties, dict) and list(properties) == ["result"]
            and schema.get("required") == ["result"])


def _unwrapped_output(schema: dict) -> dict:
    return schema["properties"]["result"] if _is_result_wrapper(schema) else schema


def _content_text(content: Iterable[Any]) -> str | None:
    texts = [block.text for block in content if getattr(block, "type", None) == "text"]
    return "\n".join(texts) if texts else None


def hints_from_annotations(annotations: dict | None) -> frozenset[str]:
    """nbtools hints for the MCP annotations a server set to true (`readOnlyHint` -> "read-only", ...)."""
    if not annotations:
        return frozenset()
    return frozenset(hint for hint, key in HINT_ANNOTATIONS.items() if annotations.get(key) is True)


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
    server = _RUNNING.get(port) if port is not None else None
    if server is not None and server.running and not server.in_thread and server._loop is loop:
        raise RuntimeError(
            f"the MCP server at {url} runs on this thread's event loop (started with `%tools --serve` "
            "or nbtools.mcp.start here), so a blocking call to it from this thread would wait for "
            "itself forever. Call the tools directly here, or serve them from another process "
            "(`nbtools serve NOTEBOOK --http PORT`) and connect to that.")


__all__ = [
    "serve", "start", "stop", "running_servers", "RunningServer", "build_server", "call_result",
    "success_result", "serve_magic", "connect", "Connection", "result_value", "remote_error",
    "hints_from_annotations", "bind_socket",
    "as_registry", "MCP_PATH", "HINT_ANNOTATIONS",
]
