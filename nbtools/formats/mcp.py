"""What only MCP's tool definitions carry: an `outputSchema` (always an object), hint annotations, and
the `$schema` dialect on both schemas (MCP 2025-11-25, SEP-1613: draft 2020-12 unless `$schema` says)."""

from __future__ import annotations

from typing import Any

from .walk import is_object_schema

# nbtools hints -> MCP ToolAnnotations fields
MCP_HINTS = {"read-only": "readOnlyHint", "destructive": "destructiveHint",
             "idempotent": "idempotentHint", "open-world": "openWorldHint"}


JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def with_dialect(schema: dict) -> dict:
    """`schema` with `"$schema"` (draft 2020-12) first, unless it names its own dialect already."""
    if "$schema" in schema:
        return schema
    return {"$schema": JSON_SCHEMA_DIALECT, **schema}


def without_dialect(schema: Any) -> Any:
    """`schema` without a `"$schema"` that names the default dialect (a schema read back from MCP)."""
    if isinstance(schema, dict) and schema.get("$schema") == JSON_SCHEMA_DIALECT:
        return {key: value for key, value in schema.items() if key != "$schema"}
    return schema


def mcp_output_schema(returns: dict) -> dict:
    """MCP `outputSchema` for a return schema: objects as they are, anything else wrapped.

    MCP requires an object at the root; a non-object return becomes
    `{"type": "object", "properties": {"result": <schema>}, "required": ["result"]}` and the
    call's `structuredContent` is then `{"result": value}` (see `mcp_wraps_result`). `$defs` move
    to the wrapper's root so `#/$defs/...` references still resolve.
    """
    if is_object_schema(returns):
        return returns
    inner = dict(returns)
    defs = inner.pop("$defs", None)
    wrapped: dict[str, Any] = {"type": "object", "properties": {"result": inner}, "required": ["result"]}
    if defs:
        wrapped["$defs"] = defs
    return wrapped


def mcp_wraps_result(tool: Any) -> bool:
    """Whether an MCP server must send this tool's structured result as `{"result": value}`."""
    return tool.returns is not None and not is_object_schema(tool.returns)


def mcp_annotations(hints: Any) -> dict[str, bool]:
    """MCP `annotations` for a tool's hints (in sorted order; hints MCP has no field for are left out)."""
    return {MCP_HINTS[hint]: True for hint in sorted(hints) if hint in MCP_HINTS}


__all__ = ["MCP_HINTS", "JSON_SCHEMA_DIALECT", "with_dialect", "without_dialect", "mcp_output_schema", "mcp_wraps_result",
           "mcp_annotations"]
