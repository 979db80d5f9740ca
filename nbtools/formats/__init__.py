"""Provider formats: a neutral `Tool` rendered for each provider, and model replies read back.

Every provider quirk lives in this package; everything else works on the neutral form. One job
per module, in the order a tool definition is built:

    catalog      FORMATS, STRICT_FORMATS, DIALECTS: the names the others check against
    names        tool names as each provider accepts them, mapped reversibly (`wire_name`)
    walk         what the two schema transforms share (reading a node, refusals, arrays)
    allof        schemas that combine others, written as one (their intersection)
    strict       OpenAI's and Anthropic's strict tool modes (`strict_schema`)
    openapi      Gemini's OpenAPI 3.0 subset, "gemini-openapi" (`openapi_schema`)
    mcp          MCP-only parts: the object `outputSchema`, hint annotations (both ways)
    definitions  Tool -> one provider's definition (`render`; the table of shapes is there)
    replies      the tool calls in a model reply, and the results sent back (`parse_reply`,
                 `result_message`)
    turns        the message shapes the agent loop (`Chat`) sends and reads
    streamed     each provider's stream events put back together into one reply

Three modules read back what a provider sends in its own shape, for the rest to get the neutral one:

    readback     the strict form of argument values read back (key/value pairs -> an object, OpenAI's
                 null for a left-out optional property), for dispatch (`call.convert`, `call.plan`)
    tooldefs     a tool definition in any provider's shape -> name, description, parameters
                 (`read_tool_def`, for the inverse: `schema2sig`, `mk_tool`)
    plainschema  a schema in a provider's dialect (Gemini's upper-case types, OpenAPI's `nullable`,
                 int64 keywords as strings) -> plain JSON Schema (`plain_copy`, applied by
                 `schema.params.parameters_root`: the schema reader knows JSON Schema only)

This module only re-exports, lazily: dispatch imports `formats.readback` on every call path, and
the renderers (schema walkers, reply readers) are loaded only when something renders or reads a reply.
"""

from __future__ import annotations

from ..lazy import lazy_names

# name -> the module of this package that defines it
_EXPORTS = {
    "FORMATS": "catalog", "STRICT_FORMATS": "catalog", "DIALECTS": "catalog",
    "mcp_output_schema": "mcp", "mcp_wraps_result": "mcp",
    "wire_name": "names", "wire_names": "names",
    "openapi_schema": "openapi",
    "render": "definitions",
    "ToolCallRequest": "replies", "ToolResult": "replies", "parse_reply": "replies", "result_message": "replies",
    "STRICT_RULES": "strict", "StrictRules": "strict", "strict_schema": "strict",
}

__all__ = list(_EXPORTS)


__getattr__ = lazy_names(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
