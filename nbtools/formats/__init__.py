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

This module only re-exports (the names `nbtools.formats` always had).
"""

from __future__ import annotations

from .catalog import DIALECTS, FORMATS, STRICT_FORMATS
from .mcp import mcp_output_schema, mcp_wraps_result
from .names import wire_name, wire_names
from .openapi import openapi_schema
from .definitions import render
from .replies import ToolCallRequest, ToolResult, parse_reply, result_message
from .strict import STRICT_RULES, StrictRules, strict_schema

__all__ = [
    "FORMATS", "STRICT_FORMATS", "DIALECTS", "render", "strict_schema", "openapi_schema", "wire_name",
    "wire_names", "mcp_output_schema", "mcp_wraps_result", "StrictRules", "STRICT_RULES",
    "ToolCallRequest", "ToolResult", "parse_reply", "result_message",
]
