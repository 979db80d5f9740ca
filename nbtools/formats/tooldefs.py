"""A tool definition in any provider's shape, read back as name, description and parameters schema.

The inverse direction (`inverse.schema2sig`, `mk_tool`) takes definitions someone else wrote, in any
shape nbtools renders (`definitions`): this module is the one that knows where each provider keeps
the name and the parameters schema (`inputSchema`, `input_schema`, `parametersJsonSchema`, a nested
`function`, a `functionDeclarations` list...), so the inverse works on the neutral `ToolDef`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import SchemaError
from ..schema.params import parameters_root, schema_error

__all__ = ["ToolDef", "read_tool_def"]


@dataclass(frozen=True)
class ToolDef:
    """A tool definition read from any provider format.

    Fields:
        name: the tool's name exactly as given.
        description: its description ("" when absent).
        parameters: the JSON Schema of its arguments object.
    """

    name: str
    description: str
    parameters: dict


# Keys that hold the parameters schema, most specific first.
_PARAMETER_KEYS = ("inputSchema", "input_schema", "parametersJsonSchema", "parameters_json_schema",
                   "parameters")
_DEF_ATTRIBUTES = ("name", "description", "type", "function", *_PARAMETER_KEYS,
                   "functionDeclarations", "function_declarations")


def read_tool_def(tool_def: Any) -> ToolDef:
    """Name, description and parameter schema from a tool definition in any format nbtools emits.

    Accepts neutral `{"name","description","parameters"}`, OpenAI chat `{"type":"function",
    "function":{...}}`, OpenAI Responses (flat), Anthropic (`input_schema`), Gemini
    (`parametersJsonSchema`, or `parameters` in the OpenAPI dialect; a `functionDeclarations` list
    holding exactly one), MCP (`inputSchema`), and SDK objects of those (pydantic models such as
    `mcp.types.Tool`, read through `model_dump`). Raises SchemaError naming the keys it found when
    the shape is not one of these.
    """
    data = _as_dict(tool_def)
    declarations = data.get("functionDeclarations", data.get("function_declarations"))
    if isinstance(declarations, list) and "name" not in data:
        if len(declarations) != 1:
            raise SchemaError(None, None, f"tool definition holds {len(declarations)} function declarations; "
                                          "pass them one at a time")
        data = _as_dict(declarations[0])
    if "name" not in data and "function" in data:
        data = _as_dict(data["function"])  # OpenAI chat nests the definition
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise SchemaError(None, None, _shape_error(data, "no 'name'"))
    kind = data.get("type")
    if isinstance(kind, str) and kind not in ("function", "custom"):
        raise schema_error(name, f"the definition has type {kind!r}: a provider's built-in tool "
                                 "has no parameter schema to read")
    present = [key for key in _PARAMETER_KEYS if key in data]
    if present:
        parameters = data[present[0]]
    elif any(_looks_like_parameters(key) for key in data):
        raise SchemaError(None, None, _shape_error(data, "no parameter schema under a known key"))
    else:
        parameters = None  # a definition without parameters takes no arguments
    parameters = parameters_root(name, parameters)
    description = data.get("description")
    return ToolDef(name=name, description=description if isinstance(description, str) else "",
                   parameters=parameters)


def _looks_like_parameters(key: str) -> bool:
    """A key that was probably meant to hold the parameters (a typo, an unknown dialect)."""
    lowered = key.lower()
    if lowered.startswith(("output", "response")):  # MCP outputSchema, Gemini responseJsonSchema
        return False
    return any(word in lowered for word in ("schema", "param", "input", "arg"))


def _as_dict(value: Any) -> dict:
    if isinstance(value, dict):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            dumped = dump(by_alias=True, exclude_none=True, mode="json")
        except TypeError:
            dumped = dump()
        if isinstance(dumped, dict):
            return dumped
    found = {key: getattr(value, key) for key in _DEF_ATTRIBUTES
             if getattr(value, key, None) is not None}
    if found:
        return found
    raise SchemaError(None, None, f"cannot read a tool definition from a {type(value).__name__} object "
                                  "(expected a dict or an object with name/description/parameters)")


def _shape_error(data: dict, problem: str) -> str:
    keys = ", ".join(repr(key) for key in data) or "none"
    return (f"unrecognised tool definition ({problem}); keys found: {keys}. Expected one of: "
            "neutral/Gemini {'name','parameters'}, OpenAI {'type':'function','function':{...}}, "
            "Anthropic {'name','input_schema'}, Gemini {'name','parametersJsonSchema'}, "
            "MCP {'name','inputSchema'}")
