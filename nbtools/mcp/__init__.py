"""MCP (Model Context Protocol): serve a registry's tools to any MCP client, and use another server's tools.

Built on the official `mcp` package (its low-level `Server`, the stdio and streamable HTTP transports,
and `ClientSession`); this package only maps between nbtools' `Tool`/`Registry` and MCP's messages.
Importing it imports neither `mcp` nor uvicorn: each function imports what it needs when called.

One job per module:

* `server`: a Registry as an `mcp` low-level `Server` (tools/list, tools/call, logging/setLevel, list_changed,
  subscriptions/listen).
* `offerings`: the registry's resources, prompts and completions (`nbtools.resource`, `nbtools.prompt`,
  `nbtools.share`) on that Server.
* `activity`: the recent calls of a server (tools, resources, prompts), and their view under the
  `%tools --serve` cell.
* `served`: the `ToolContext` of a served call (progress, log, sampling, elicitation).
* `toolresults`: a tool's value or error as a `CallToolResult`, and a server's `CallToolResult` as a value.
* `web`: the streamable HTTP app at `/mcp` under uvicorn, and the listening socket.
* `access`: who may call an HTTP server: its bearer token and the Host/Origin names it answers to.
* `stopping`: a kernel's Interrupt, or the client's cancellation, ends a call served between cells.
* `handoff`: calls handed from the transport's thread to a kernel's main thread, stopped when cancelled.
* `blocking`: `serve()`, which serves over stdio or HTTP until the client or the process ends.
* `background`: `start()`/`stop()`, servers running inside this process (`%tools --serve`).
* `client`: `connect()` and its `Connection`, another server's tools as nbtools Tools.
* `link`: one live client session (the SDK's `Client` held open on the connection's loop).
* `transports`: how the client reaches a server (stdio, streamable HTTP, legacy SSE) and which headers go where.
* `remotetools`: a listed remote tool as a `Tool` (its function, hints, return schema).
* `notify`: what a remote server reports or asks during a call (`Progress`, `LogMessage`, `Elicitation`).

Serving:

* `serve(registry, transport="stdio" | "http", host, port)` blocks and serves until the client goes
  away (stdio) or the process is stopped (HTTP, at path `/mcp`). `nbtools serve` uses it.
* `start(registry, port=...)` serves over HTTP *inside this process* and returns at once; in a kernel
  this is `%tools --serve`. See "Which thread runs a tool call" below.

Every HTTP server requires `Authorization: Bearer <token>` (401 otherwise): `token=` / `--token`,
else `$NBTOOLS_MCP_TOKEN`, else a random one (printed, and `.token` on a `RunningServer`);
`token=False` / `--no-token` turns that off with a warning. Host/Origin are checked for every bind
address (`allow_hosts=` / `--allow-host` add names). `connect(url, token=...)` sends the token;
without `token=` it sends `$NBTOOLS_MCP_TOKEN` only to a server this user's nbtools started (`ownservers`).

Every `tools/call` goes through `call_func_async`: the same lookup (enabled tools only), validation,
conversion, approval and limits as `call_func`. A name the server does not list is the JSON-RPC error
-32602 (the MCP spec lists unknown tools under protocol errors). A refused or failed call comes back
as a result with `isError: true` and the text written for the model (its fields also ride along in
the result's `_meta`, so an nbtools client rebuilds the same `ToolCallError`); the server keeps
serving. A successful call comes back as text (`result_text`) and, when the tool declares a return
type, as `structuredContent` (checked against the `outputSchema` it advertised; a non-object return
is wrapped as `{"result": value}`); a rich value (images, audio, resources, matplotlib figures, PIL
images, or a list mixing them with text) as content blocks in order. Nothing over the registry's
`max_result_chars` is sent: the text is cut, optional `structuredContent` left out, and a call whose
`outputSchema` requires the whole value gets an error result saying it is too large. A tool may take
a `ToolContext` (progress and log notifications, sampling, elicitation: `context`); the server
answers `logging/setLevel`, and tells clients `notifications/tools/list_changed` when the registry
changes.

Which thread runs a tool call:

* `serve(...)` (`nbtools serve`): plain functions run in a pool of worker threads, so calls from
  several sessions run side by side; `async def` tools run on the event loop and interleave at their
  `await`s. A call the client cancels gets no answer; a plain function already running finishes in
  its thread (Python cannot stop a thread) unless it checks `ctx.cancelled` and returns early.
* `start(...)` where an asyncio event loop is running on the calling thread (a Jupyter kernel, where
  cells run on the main thread inside that loop): the transport runs on a thread of its own, and each
  call is handed to that loop, so tool calls run on the kernel's main thread, *between* cells. A call
  never runs in the middle of a cell's code (only at an `await` of a cell that awaits), sees the
  kernel's current variables, and a long cell simply delays the call. A long tool call likewise
  delays the next cell. Interrupting the kernel during a call ends that call with an error result,
  and the server keeps running. A client's cancellation ends the call the same way, plain functions
  included (the activity log says "cancelled"; the client gets no answer, as the spec says). Only
  while a cell `await`s does SIGINT belong to that cell: a plain function served meanwhile then
  runs to its end (an `async def` tool still stops at its next `await`).
* `start(...)` with no running loop (a plain Python script or terminal IPython): the server gets its
  own thread and event loop, and tool calls run on that thread, concurrently with your code. Share
  state with care.

Client: `connect(command_or_url)` starts (stdio) or reaches (HTTP) an MCP server and returns its tools
as nbtools `Tool`s (functions built by `mk_tool`), ready for a `Registry` or any provider format.
Their results keep every content block (text, `Image`, `Audio`, `Resource`, `ResourceLink`; see
`connect`), and the server's progress and log notifications reach `on_progress`/`on_log` or, in a
notebook, a progress bar and the cell's output.
"""

from __future__ import annotations

from .background import RunningServer, running_servers, served_at, start, stop
from .blocking import DEFAULT_PORT, serve
from .client import Connection, connect
from .notify import Elicitation, LogMessage, Progress
from .remotetools import HINT_ANNOTATIONS, hints_from_annotations
from .toolresults import ERROR_META_KEY, error_result, remote_error, result_value, success_result
from .server import as_registry, build_server, call_result
from .web import MCP_PATH, bind_socket

__all__ = [
    "serve", "start", "stop", "running_servers", "served_at", "RunningServer", "build_server", "call_result",
    "success_result", "error_result", "connect", "Connection", "result_value",
    "remote_error", "hints_from_annotations", "bind_socket", "as_registry", "MCP_PATH", "DEFAULT_PORT",
    "HINT_ANNOTATIONS", "ERROR_META_KEY", "Progress", "LogMessage", "Elicitation",
]
