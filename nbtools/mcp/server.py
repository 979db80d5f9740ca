"""A Registry as an `mcp` low-level `Server`: the `tools/list` and `tools/call` handlers.

The transports that carry the server (stdio, streamable HTTP) live in `blocking`, `web` and
`background`; how values and errors become MCP results lives in `results`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import ToolCallError
from ..registry import Registry
from ..tool import Tool
from .results import error_result, success_result

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


def build_server(registry: Any = None, *, name: str = "nbtools") -> "Server":
    """An `mcp` low-level `Server` listing the registry's enabled tools and calling them through nbtools.

    The registry is read on every request, so tools added, removed, enabled or disabled after the
    server started show up in the next `tools/list`.
    """
    from mcp.server.lowlevel import Server

    import mcp_types as types

    from .. import __version__

    tools = as_registry(registry)

    async def list_tools(ctx: Any, params: Any) -> "mcp_types.ListToolsResult":
        return types.ListToolsResult(tools=[_listed_tool(tool) for tool in tools.enabled()])

    async def call_tool(ctx: Any, params: "mcp_types.CallToolRequestParams") -> "mcp_types.CallToolResult":
        return await call_result(tools, params.name, params.arguments)

    return Server(name, version=__version__, on_list_tools=list_tools, on_call_tool=call_tool,
                  instructions=INSTRUCTIONS)


def _listed_tool(tool: Tool) -> "mcp_types.Tool":
    import mcp_types as types

    return types.Tool.model_validate(tool.schema("mcp"))


async def call_result(registry: Registry, name: str, arguments: dict | None) -> "mcp_types.CallToolResult":
    """Run one `tools/call` through `call_func_async` and build its MCP result (never raises for a bad call)."""
    from ..call import call_func_async

    tool = registry.resolve(name)
    try:
        value = await call_func_async(name, {} if arguments is None else arguments, ns=registry)
    except ToolCallError as error:
        return error_result(error)
    except KeyboardInterrupt:
        # In a kernel, "interrupt" while a tool runs on the main thread: end this call, keep serving.
        return error_result(ToolCallError(name, "interrupted by the person running the server"))
    except Exception as error:  # a bug below call_func_async; still an answer, not a dead session
        return error_result(ToolCallError(name, f"{type(error).__name__}: {error}"))
    try:
        return success_result(tool, value, registry.limits.max_result_chars)
    except ToolCallError as error:  # the result could not be rendered: an error result, not a JSON-RPC error
        return error_result(ToolCallError(name, error.problem))
