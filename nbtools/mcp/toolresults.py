"""Tool results <-> MCP `CallToolResult`s, both ways.

Serving: a tool's return value becomes text plus `structuredContent` (`success_result`), a
`ToolCallError` an error result (`error_result`). Connecting: a server's result becomes a Python value
(`result_value`) or a `ToolCallError` (`remote_error`).

An error result carries the error's text for the model (written by `ToolCallError.text`, the only
place that writes it) and, in `_meta` under `ERROR_META_KEY`, the error's fields, so that an nbtools
client rebuilds the very same error instead of parsing the text back.
"""

from __future__ import annotations

import base64
import json
import math
import weakref
from typing import TYPE_CHECKING, Any, Iterable

from ..call.answers import rendered
from ..content import content_parts
from ..errors import ToolCallError
from ..formats.mcp import mcp_wraps_result
from ..tool import Tool
from ..values import to_json

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

    A rich value (an `nbtools.Image`/`Audio`/`Resource`/`ResourceLink`, a PIL image, a matplotlib
    figure, `IPython.display.Image`/`Audio`, or a list mixing them with text) becomes image, audio,
    embedded-resource, resource-link and text blocks in its order (`content_blocks`), with no
    `structuredContent`.

    Otherwise `structuredContent` is given when the tool advertises an `outputSchema` (the value as
    JSON, wrapped as `{"result": value}` when the declared type is not an object) and, for tools
    without a return annotation, when the value is a JSON object. A value that does not match the
    advertised schema becomes an error result: clients reject such results, and the message says why.

    `max_chars` (the registry's `max_result_chars`) bounds what is sent: the text is cut (with a
    marker), `structuredContent` is left out when it would exceed the limit, and a tool whose
    `outputSchema` requires it gets an error result saying the value is too large (MCP requires
    the structured content of such a tool, whole, and clients check it against the schema).
    """
    import mcp_types as types

    parts = content_parts(value)
    if parts is not None:
        blocks = content_blocks(parts, max_chars)
        if tool is None or tool.returns is None or tool.schema("mcp").get("outputSchema") is None:
            return types.CallToolResult(content=blocks)
        # Declared as e.g. `-> list` and returned with images in it: blocks for the model, and the
        # structuredContent its outputSchema makes required (clients reject a result without it).
        structured = _declared_result(tool, to_json(value), max_chars, check_size=True)
        if isinstance(structured, types.CallToolResult):
            return structured  # the error result
        return types.CallToolResult(content=blocks, structured_content=structured)
    data, text = rendered(value, max_chars, tool.name if tool is not None else None)
    cut = len(text) > max_chars  # only cut text grows past the limit (it carries a marker)
    structured = None
    if tool is not None and tool.returns is not None:
        # the text for the model and `values.to_json` (lenient: text stands in for what JSON
        # cannot hold) are the same JSON unless the text was cut
        structured = _declared_result(tool, to_json(value) if cut else data, max_chars,
                                      check_size=cut or 2 * len(text) + 32 > max_chars, text=text)
        if isinstance(structured, types.CallToolResult):
            return structured  # the error result
    elif not cut and isinstance(data, dict) and _json_size(data, max_chars) <= max_chars:
        structured = data
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                structured_content=structured)


def _declared_result(tool: Tool, data: Any, max_chars: int, *, check_size: bool,
                     text: str | None = None) -> Any:
    """The structuredContent of a tool with a declared return type (wrapped as `{"result": value}`
    when that type is not an object), or the error result (a CallToolResult) when it is over
    `max_chars` or does not match the advertised outputSchema."""
    structured = {"result": data} if mcp_wraps_result(tool) else data
    size = _json_size(structured, max_chars) if check_size else 0
    if size > max_chars:
        return error_result(ToolCallError(tool.name, (
            f"it ran, but its result is {size} characters of JSON, over this server's limit of "
            f"{max_chars} (max_result_chars), and its declared return type requires the whole value as "
            "structuredContent. Ask for less (e.g. a narrower query), or raise the registry's "
            "Limits(max_result_chars=...)")))
    problem = _output_problem(tool, structured)
    if problem is not None:
        # The tool did run (it may have changed something): say so, and show what it returned.
        shown = text if text is not None else rendered(data, max_chars)[1]
        return error_result(ToolCallError(tool.name, "it ran, but returned a value that does not match its "
                                                     f"declared return type: {problem}. It returned: {shown}"))
    return structured


def _json_size(value: Any, max_chars: int) -> int:
    """Characters of `value` as compact JSON (what goes on the wire, give or take whitespace)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str))


def content_blocks(parts: list[Any], max_chars: int) -> list[Any]:
    """MCP content blocks for `content_parts`: records -> image/audio/resource blocks, the rest -> text."""
    import mcp_types as types

    from ..content import Audio, Image, Resource, ResourceLink

    blocks: list[Any] = []
    for part in parts:
        if isinstance(part, Image):
            blocks.append(types.ImageContent(type="image", data=part.base64(), mime_type=part.mime))
        elif isinstance(part, Audio):
            blocks.append(types.AudioContent(type="audio", data=part.base64(), mime_type=part.mime))
        elif isinstance(part, Resource):
            if part.text is not None:
                inner: Any = types.TextResourceContents(uri=part.uri, mime_type=part.mime, text=part.text)
            else:
                import base64

                inner = types.BlobResourceContents(uri=part.uri, mime_type=part.mime,
                                                   blob=base64.b64encode(part.blob or b"").decode("ascii"))
            blocks.append(types.EmbeddedResource(type="resource", resource=inner))
        elif isinstance(part, ResourceLink):
            blocks.append(types.ResourceLink(type="resource_link", uri=part.uri, name=part.name or part.uri,
                                             description=part.description, mime_type=part.mime))
        else:
            text = part if isinstance(part, str) else rendered(part, max_chars)[1]
            if len(text) > max_chars:
                text = rendered(text, max_chars)[1]
            blocks.append(types.TextContent(type="text", text=text))
    return blocks


# One compiled check per Tool object (Tools are immutable; a redefinition is a new Tool).
_OUTPUT_CHECKS: "weakref.WeakKeyDictionary[Tool, Any]" = weakref.WeakKeyDictionary()


# A return schema that is one JSON scalar type: checked by Python type, without a schema validator
# (most tools return one). NaN and infinities are not JSON.
_SCALAR_CHECKS = {
    "integer": lambda value: type(value) is int,
    "number": lambda value: (type(value) is int) or (type(value) is float and math.isfinite(value)),
    "string": lambda value: type(value) is str,
    "boolean": lambda value: type(value) is bool,
}


def _output_problem(tool: Tool, structured: Any) -> str | None:
    """None when `structured` matches the tool's advertised outputSchema, else what is wrong."""
    returns = tool.returns
    if returns is not None and len(returns) == 1 and isinstance(structured, dict) and len(structured) == 1:
        check = _SCALAR_CHECKS.get(returns.get("type"))  # type: ignore[arg-type]
        if check is not None and "result" in structured and check(structured["result"]):
            return None
    check = _OUTPUT_CHECKS.get(tool)
    if check is None:
        schema = tool.schema("mcp").get("outputSchema")
        if schema is None:
            return None
        check = _OUTPUT_CHECKS[tool] = _output_check(schema)
    return check(structured)


# The output check takes what the tool returned as it is: no limit on sizes or integers (the
# arguments' limits guard against a model; a result is the tool's own, cut later for display).
_UNLIMITED_OUTPUT = None


def _output_check(schema: dict) -> Any:
    """`check(value) -> problem or None` for `schema`: nbtools' own converter compiled from the schema
    read back (the validator of arguments, ~2 us for a dict where jsonschema took ~70 us); jsonschema
    only for a schema nbtools cannot read."""
    global _UNLIMITED_OUTPUT
    from ..call.convert import compile_converter
    from ..refusals import ConversionError
    from ..errors import SchemaError
    from ..policy import Limits
    from ..schema.read import schema_to_ir

    if _UNLIMITED_OUTPUT is None:
        huge = 1 << 62
        _UNLIMITED_OUTPUT = Limits(max_bytes=huge, max_depth=10_000, max_string=huge, max_items=huge,
                                   max_int=10 ** 4300, max_result_chars=huge)
    try:
        convert = compile_converter(schema_to_ir(schema), _UNLIMITED_OUTPUT)
    except SchemaError:
        return _jsonschema_check(schema)

    def check(value: Any) -> str | None:
        try:
            convert(value, "")
        except ConversionError as error:
            where = error.where()
            return error.problem + (f" (at {where})" if where else "")
        return None

    return check


def _jsonschema_check(schema: dict) -> Any:
    import jsonschema

    validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)(schema)

    def check(value: Any) -> str | None:
        error = next(iter(validator.iter_errors(value)), None)
        if error is None:
            return None
        where = "/".join(str(part) for part in error.absolute_path)
        return f"{error.message}" + (f" (at {where})" if where else "")

    return check


# ------------------------------------------------------------------------------------------------
# Connecting: a server's CallToolResult -> value or error
# ------------------------------------------------------------------------------------------------
def result_value(result: "mcp_types.CallToolResult", output_schema: dict | None = None) -> Any:
    """The Python value of a successful `tools/call` result.

    1. Structured content, when there is some: that value (unwrapped when `output_schema` is the
       `{"result": ...}` wrapper of a non-object value).
    2. Only text blocks: their text, joined by newlines (JSON text is parsed).
    3. Anything else (an image, audio, an embedded resource or a resource link, alone or mixed with
       text): the list of its blocks in order, each a `str` or an `nbtools.content` record (`Image`,
       `Audio`, `Resource`, `ResourceLink`; see `content_part`). An empty content gives `[]`.
    """
    structured = result.structured_content
    if structured is not None:
        if is_result_wrapper(output_schema) and isinstance(structured, dict) and "result" in structured:
            return structured["result"]
        return structured
    blocks = list(result.content)
    if blocks and all(getattr(block, "type", None) == "text" for block in blocks):
        text = "\n".join(block.text for block in blocks)
        try:
            return json.loads(text)
        except ValueError:
            return text
    return [content_part(block) for block in blocks]


def content_part(block: Any) -> Any:
    """One MCP content block as what `connect()` returns: text -> `str`, image -> `Image`, audio ->
    `Audio`, embedded resource -> `Resource` (text, or blob bytes), resource link -> `ResourceLink`.

    Block annotations (audience, priority) are not kept. A block type this client does not know
    (from a newer protocol) comes back as its JSON dict rather than being dropped.
    """
    from ..content import Audio, Image, Resource, ResourceLink

    kind = getattr(block, "type", None)
    if kind == "text":
        return block.text
    if kind == "image":
        return Image.from_base64(block.data, block.mime_type)
    if kind == "audio":
        return Audio.from_base64(block.data, block.mime_type)
    if kind == "resource":
        inner = block.resource
        uri, mime = str(inner.uri), inner.mime_type
        if getattr(inner, "text", None) is not None:
            return Resource(uri, text=inner.text, mime=mime)
        return Resource(uri, blob=base64.b64decode(inner.blob), mime=mime)
    if kind == "resource_link":
        return ResourceLink(str(block.uri), block.name or "", block.description, block.mime_type)
    dump = getattr(block, "model_dump", None)
    return dump(by_alias=True, exclude_none=True, mode="json") if callable(dump) else block


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
