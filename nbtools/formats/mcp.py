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
    """MCP `annotations` for a tool's hints, in sorted order: `destructive` -> `destructiveHint: true`,
    `not-destructive` -> `destructiveHint: false` (said explicitly, so MCP's default does not apply)."""
    out = {}
    for hint in sorted(hints, key=lambda hint: hint.removeprefix("not-")):
        name = hint.removeprefix("not-")
        if name in MCP_HINTS:
            out[MCP_HINTS[name]] = name == hint
    return out


# What MCP assumes of a hint a server leaves out (spec, ToolAnnotations): a tool may destroy and may
# reach the open world unless it says otherwise.
_MCP_DEFAULT_HINTS = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False,
                      "openWorldHint": True}


def hints_from_annotations(annotations: dict | None) -> frozenset[str]:
    """nbtools hints for a remote tool's MCP annotations (`readOnlyHint: true` -> "read-only", ...).

    Tri-state, as the server said it: true -> the hint, false -> `not-<hint>` (rendered back as
    false), left out -> MCP's default (a tool is destructive and open-world unless it says
    otherwise, so `refuse_destructive` and approvals apply to it). As the spec says,
    `destructiveHint` means nothing for a read-only tool: a true one is dropped there.
    """
    given = annotations if isinstance(annotations, dict) else {}
    hints = set()
    for hint, key in MCP_HINTS.items():
        found = given.get(key)
        if isinstance(found, bool):
            hints.add(hint if found else f"not-{hint}")
        elif _MCP_DEFAULT_HINTS[key]:
            hints.add(hint)
    if "read-only" in hints:
        hints.discard("destructive")
    return frozenset(hints)


__all__ = ["MCP_HINTS", "JSON_SCHEMA_DIALECT", "with_dialect", "without_dialect", "mcp_output_schema", "mcp_wraps_result",
           "mcp_annotations", "hints_from_annotations"]
