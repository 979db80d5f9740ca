"""A tool another MCP server lists, as an nbtools `Tool` whose function sends `tools/call` to it.

The function is built by `mk_tool` from the listed `inputSchema` (real signature and docstring);
hints come from the tool's annotations as said (tri-state, `formats.mcp.hints_from_annotations`), `returns` from its `outputSchema`.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable

from ..formats.mcp import MCP_HINTS, hints_from_annotations
from ..tool import Tool
from .toolresults import unwrapped_output

if TYPE_CHECKING:
    import mcp_types

# MCP tool annotations <-> nbtools hints: one table, owned by the MCP rendering (formats/mcp.py).
HINT_ANNOTATIONS = MCP_HINTS


def remote_tool(listed: "mcp_types.Tool", call: Callable[[str, dict], Any], group: str | None) -> Tool:
    """The Tool for one listed tool; `call(name, arguments)` sends the call. Raises ValueError or
    TypeError for a tool that cannot be made into a function (its reason says why)."""
    from ..formats.mcp import without_dialect  # an output schema's default dialect says nothing a Tool keeps
    from ..inverse import mk_tool, py_name

    definition = listed.model_dump(by_alias=True, exclude_none=True, mode="json")
    name = definition["name"]
    given = definition.get("inputSchema")
    if isinstance(given, dict) and "type" in given:
        # the SDK's 2025-11-25 path re-orders the schema's keys and its 2026-07-28 path does not: keep
        # nbtools' own order (type first), so a tool renders the same whichever revision was spoken
        definition["inputSchema"] = {"type": given["type"], **given}

    def dispatch(tool_name: str, /, **arguments: Any) -> Any:  # positional: a property may be called "tool_name"
        return call(tool_name, arguments)

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

    output_schema = definition.get("outputSchema")
    returns = without_dialect(unwrapped_output(output_schema)) if output_schema else None
    # the inputSchema is kept as the server wrote it, `$schema` included (SEP-1613: a client preserves it)
    return Tool.from_schema(name, definition.get("description") or "", definition.get("inputSchema"),
                            fn, hints=hints_from_annotations(definition.get("annotations")), returns=returns,
                            group=group)
