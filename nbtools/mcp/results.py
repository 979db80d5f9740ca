"""Tool results <-> MCP `CallToolResult`s, both ways.

Serving: a tool's return value becomes text plus `structuredContent` (`success_result`), a
`ToolCallError` an error result (`error_result`). Connecting: a server's result becomes a Python value
(`result_value`) or a `ToolCallError` (`remote_error`).

An error result carries the error's text for the model (written by `ToolCallError.text`, the only
place that writes it) and, in `_meta` under `ERROR_META_KEY`, the error's fields, so that an nbtools
client rebuilds the very same error instead of parsing the text back.
"""

from __future__ import annotations

import json
import weakref
from typing import TYPE_CHECKING, Any, Iterable

from ..errors import ToolCallError
from ..tool import Tool

if TYPE_CHECKING:
    import mcp_types

ERROR_META_KEY = "nbtools/error"
"""The `_meta` key of an error result holding `ToolCallError.record()` (MCP's `prefix/name` form)."""


# ------------------------------------------------------------------------------------------------
# Serving: value or error -> CallToolResult
# ------------------------------------------------------------------------------------------------
def error_result(error: ToolCallError) -> "mcp_types.CallToolResult":
    """An `isError` result: the error's text for the model, and its fields in `_meta`."""
    import mcp_types as types

    return types.CallToolResult(content=[types.TextContent(type="text", text=str(error))], is_error=True,
                                _meta={ERROR_META_KEY: error.record()})


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

    from ..call import rendered
    from ..values import to_json

    data, text = rendered(value, max_chars, tool.name if tool is not None else None)
    cut = len(text) > max_chars  # only cut text grows past the limit (it carries a marker)
    structured = None
    if tool is not None and tool.returns is not None:
        from ..formats import mcp_wraps_result

        # the text for the model and `values.to_json` (lenient: text stands in for what JSON
        # cannot hold) are the same JSON unless the text was cut
        structured = to_json(value) if cut else data
        if mcp_wraps_result(tool):
            structured = {"result": structured}
        problem = _output_problem(tool, structured)
        if problem is not None:
            # The tool did run (it may have changed something): say so, and show what it returned.
            return error_result(ToolCallError(tool.name, "it ran, but returned a value that does not match its "
                                                         f"declared return type: {problem}. It returned: {text}"))
    elif not cut and isinstance(data, dict):
        structured = data
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                structured_content=structured)


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


# ------------------------------------------------------------------------------------------------
# Connecting: a server's CallToolResult -> value or error
# ------------------------------------------------------------------------------------------------
def result_value(result: "mcp_types.CallToolResult", output_schema: dict | None = None) -> Any:
    """The Python value of a successful `tools/call` result.

    The structured content when there is some (unwrapped when `output_schema` is the `{"result": ...}`
    wrapper of a non-object value); else the text content (JSON text is parsed); else the content
    blocks as dicts.
    """
    structured = result.structured_content
    if structured is not None:
        if is_result_wrapper(output_schema) and isinstance(structured, dict) and "result" in structured:
            return structured["result"]
        return structured
    text = content_text(result.content)
    if text is not None:
        try:
            return json.loads(text)
        except ValueError:
            return text
    return [block.model_dump(by_alias=True, exclude_none=True, mode="json") for block in result.content]


def remote_error(name: str, result: "mcp_types.CallToolResult") -> ToolCallError:
    """The ToolCallError for a server's error result of a call to tool `name`.

    From an nbtools server: rebuilt from the fields in `_meta` (the same argument, problem and
    schema, so `str()` reads as on the server). From any other server: its text is the problem.
    """
    rebuilt = ToolCallError.from_record((result.meta or {}).get(ERROR_META_KEY), name)
    if rebuilt is not None:
        return rebuilt
    return ToolCallError(name, content_text(result.content) or "the server reported an error")


def is_result_wrapper(schema: dict | None) -> bool:
    """The `{"type":"object","properties":{"result": X},"required":["result"]}` wrapper MCP servers use."""
    if not isinstance(schema, dict):
        return False
    properties = schema.get("properties")
    return (isinstance(properties, dict) and list(properties) == ["result"]
            and schema.get("required") == ["result"])


def unwrapped_output(schema: dict) -> dict:
    """The schema of the value itself: `X` for the `{"result": X}` wrapper, else `schema`."""
    return schema["properties"]["result"] if is_result_wrapper(schema) else schema


def content_text(content: Iterable[Any]) -> str | None:
    """The text blocks of a result's content, joined by newlines (None when there are none)."""
    texts = [block.text for block in content if getattr(block, "type", None) == "text"]
    return "\n".join(texts) if texts else None
