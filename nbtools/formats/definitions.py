"""A neutral `Tool` rendered as one provider's tool definition (pure; never mutates the Tool).

| fmt              | shape                                                                          |
|------------------|--------------------------------------------------------------------------------|
| None             | `{"name", "description", "parameters"}` (neutral JSON Schema, draft 2020-12)    |
| "openai"         | Chat Completions `{"type": "function", "function": {..., "strict"?: true}}`      |
| "responses"      | Responses API, flat, always with `"strict": bool` (the API defaults it to true)  |
| "anthropic"      | `{"name", "description", "input_schema", "strict"?: true}`                       |
| "gemini"         | one FunctionDeclaration with `parametersJsonSchema` (+ `responseJsonSchema`)     |
| "gemini-openapi" | one FunctionDeclaration with `parameters` in Gemini's OpenAPI 3.0 subset         |
| "mcp"            | `{"name", "description", "inputSchema", "outputSchema"?, "annotations"?}`        |

`strict=True` only changes the formats whose provider has a strict flag (openai, responses,
anthropic; see `strict`); the others have no such mode and ignore it, so a Tool marked strict still
renders everywhere. Names go through `wire_name` (see `names`). A Tool's `callers` and `defer` add
`allowed_callers` and `defer_loading` where the provider has them (responses, anthropic; see `callers`).
"""

from __future__ import annotations

from typing import Any

from .callers import add_caller_fields
from .catalog import check_format
from .mcp import mcp_annotations, mcp_output_schema, with_dialect, without_dialect
from .names import wire_name
from .openapi import openapi_schema
from .strict import strict_schema


def render(tool: Any, fmt: str | None = None, strict: bool = False) -> dict:
    """The definition of `tool` in format `fmt` (see the table in the module docstring).

    `strict` applies to openai, responses and anthropic and is ignored elsewhere. Raises
    `ValueError` for an unknown format and `SchemaError` when a schema cannot be expressed.
    Parts of `tool.parameters` / `tool.returns` may be shared with the result: do not mutate it.
    """
    check_format(fmt)
    name = wire_name(tool.name, fmt)
    description = tool.description or ""
    # a schema read back from MCP keeps its `$schema` (SEP-1613); a definition names the dialect only for MCP
    parameters = without_dialect(tool.parameters)
    # Extra keys of the arguments object come from **kwargs: refusals about them name it.
    extras = next((param for param, kind in getattr(tool, "passing", ()) if kind == "varkw"), None)
    varargs = next((param for param, kind in getattr(tool, "passing", ()) if kind == "varargs"), None)
    if fmt is None:
        return {"name": name, "description": description, "parameters": parameters}
    if fmt in ("openai", "responses"):
        if strict:
            parameters = strict_schema(parameters, tool.name, provider="openai", extras_name=extras, varargs_name=varargs)
        if fmt == "openai":
            function = {"name": name, "description": description, "parameters": parameters}
            if strict:
                function["strict"] = True
            return {"type": "function", "function": function}
        return add_caller_fields({"type": "function", "name": name, "description": description,
                                  "parameters": parameters, "strict": bool(strict)}, fmt, tool)
    if fmt == "anthropic":
        if strict:
            parameters = strict_schema(parameters, tool.name, provider="anthropic", extras_name=extras, varargs_name=varargs)
        definition = {"name": name, "description": description, "input_schema": parameters}
        if strict:
            definition["strict"] = True
        return add_caller_fields(definition, fmt, tool)
    if fmt == "gemini":
        declaration = {"name": name, "description": description, "parametersJsonSchema": parameters}
        if tool.returns is not None:
            declaration["responseJsonSchema"] = tool.returns
        return declaration
    if fmt == "gemini-openapi":
        declaration = {"name": name, "description": description}
        converted = openapi_schema(parameters, tool.name, extras_name=extras, varargs_name=varargs)
        if converted.get("properties"):  # Gemini: "for a function with no parameters, leave it unset"
            declaration["parameters"] = converted
        return declaration
    # mcp
    definition = {"name": name, "description": description, "inputSchema": with_dialect(parameters)}
    if tool.returns is not None:
        definition["outputSchema"] = with_dialect(mcp_output_schema(tool.returns))
    annotations = mcp_annotations(tool.hints)
    if annotations:
        definition["annotations"] = annotations
    return definition


__all__ = ["render"]
