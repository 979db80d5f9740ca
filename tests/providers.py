"""What the providers accept and send, for any test: checkers of their rules and their SDKs' reply objects.

Written from the providers' documentation, independently of `nbtools.formats`, so a format that
drifts from a provider's rules fails the tests.

- `FORMATS`, `STRICT_FORMATS`: the formats a definition can be rendered in (None is neutral).
- `parameters_of(definition, fmt)`: the parameters schema inside a definition of that format.
- `strict_violations(parameters, provider)`: every way a schema breaks OpenAI's or Anthropic's
  strict tool rules (empty list: accepted); `openai_strict_violations`/`anthropic_strict_violations`
  name the provider; `check_strict(parameters, provider)` asserts there are none.
- `gemini_openapi_violations(declaration)`: what google-genai or the OpenAPI 3.0 subset refuses.
- `openai_completion`, `responses_response`, `anthropic_message`, `gemini_response`: the JSON of one
  model reply around the calls (message, output items, content blocks, parts) a test gives.
- `sdk_reply(provider, data)`: a model reply as the provider's own SDK object (offline:
  `model_validate` of the reply's JSON), for provider "openai" (chat completion), "responses",
  "anthropic" or "gemini".
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

FORMATS = (None, "openai", "responses", "anthropic", "gemini", "gemini-openapi", "mcp")
STRICT_FORMATS = ("openai", "responses", "anthropic")


def parameters_of(definition: dict, fmt: str | None) -> dict | None:
    """The parameters schema inside a tool definition of format `fmt` (None when a format omits it)."""
    if fmt == "openai":
        return definition["function"]["parameters"]
    if fmt == "anthropic":
        return definition["input_schema"]
    if fmt == "gemini":
        return definition["parametersJsonSchema"]
    if fmt == "mcp":
        return definition["inputSchema"]
    if fmt == "gemini-openapi":
        return definition.get("parameters")  # Gemini wants it left out when there are no parameters
    return definition["parameters"]


# -- strict modes ----------------------------------------------------------------------------------
# OpenAI Structured Outputs (function calling with strict: true), "Supported schemas"; Anthropic
# strict tool use, "JSON Schema limitations" (no numeric or string-length constraints, minItems only
# 0 or 1, no recursive schemas). Keywords outside these sets are refused; `const` is left out for
# both (rendered as a one-value `enum`), and so are Anthropic's `allOf` and `default`.
KEYWORDS = {
    "openai": frozenset({
        "type", "properties", "required", "additionalProperties", "items", "anyOf", "enum", "description",
        "title", "$ref", "$defs", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
        "exclusiveMaximum", "multipleOf", "minItems", "maxItems"}),
    "anthropic": frozenset({
        "type", "properties", "required", "additionalProperties", "items", "anyOf", "enum", "description",
        "title", "$ref", "$defs", "format", "minItems"}),
}
_OPENAI_FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"})
STRING_FORMATS = {"openai": _OPENAI_FORMATS, "anthropic": _OPENAI_FORMATS | {"uri"}}
JSON_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})
MAX_OBJECT_DEPTH = 10
MAX_PROPERTIES = 5000
MAX_ENUM_VALUES = 1000


def _types_of(schema: dict) -> set[str]:
    kind = schema.get("type")
    return set(kind) if isinstance(kind, list) else {kind} if kind else set()


def _walk(schema: Any, path: str, visit: Callable[[Any, str], None]) -> None:
    """Call `visit(subschema, path)` on every subschema reachable through schema keywords."""
    visit(schema, path)
    if not isinstance(schema, dict):
        return
    for key, sub in (schema.get("properties") or {}).items():
        _walk(sub, f"{path}.{key}", visit)
    for keyword in ("items", "additionalProperties", "propertyNames", "not"):
        if isinstance(schema.get(keyword), dict):
            _walk(schema[keyword], f"{path}[{keyword}]", visit)
    for keyword in ("anyOf", "allOf", "oneOf", "prefixItems"):
        for index, sub in enumerate(schema.get(keyword) or []):
            _walk(sub, f"{path}[{keyword}{index}]", visit)
    for name, sub in (schema.get("$defs") or {}).items():
        _walk(sub, f"$defs.{name}", visit)


def strict_violations(parameters: dict, provider: str) -> list[str]:
    """Every way `parameters` breaks `provider`'s ("openai" or "anthropic") strict rules (empty: accepted).

    Both: a plain object at the root; only the provider's keywords and string formats; every
    schema says its type (JSON types only); objects closed (`additionalProperties: false`) and
    listing their properties; arrays with one `items` schema; a `$ref` alone (no sibling keywords)
    and resolving inside `$defs`; at most 10 levels of objects and 5000 properties. OpenAI: every
    property required, in order. Anthropic: `required` names existing properties, `minItems` 0 or
    1, scalar enum values, no recursive definitions.
    """
    keywords, formats = KEYWORDS[provider], STRING_FORMATS[provider]
    problems: list[str] = []
    if parameters.get("type") != "object" or "anyOf" in parameters:
        problems.append("root: must be a plain object schema (no anyOf at the root)")
    defs = parameters.get("$defs") or {}
    property_count = 0

    def visit(node: Any, path: str) -> None:
        nonlocal property_count
        if not isinstance(node, dict):
            problems.append(f"{path}: a schema must be an object, got {node!r}")
            return
        if set(node) - keywords:
            problems.append(f"{path}: unsupported keywords {sorted(set(node) - keywords)}")
        if "$ref" in node:
            target = node["$ref"]
            if not (isinstance(target, str) and target.startswith("#/$defs/") and target[8:] in defs):
                problems.append(f"{path}: $ref {target!r} does not resolve inside $defs")
            if set(node) != {"$ref"}:
                problems.append(f"{path}: $ref with sibling keywords {sorted(set(node) - {'$ref'})}")
            return
        if not ({"type", "anyOf", "enum"} & set(node)):
            problems.append(f"{path}: untyped schema: a schema must say its type (got {node!r})")
        kinds = _types_of(node)
        if kinds - JSON_TYPES:
            problems.append(f"{path}: unknown type {sorted(kinds - JSON_TYPES)}")
        if "object" in kinds:
            properties = node.get("properties")
            if not isinstance(properties, dict):
                problems.append(f"{path}: an object must list its properties")
                properties = {}
            property_count += len(properties)
            if node.get("additionalProperties") is not False:
                problems.append(f"{path}: object not closed: it must have additionalProperties: false")
            if provider == "openai" and node.get("required", []) != list(properties):
                problems.append(f"{path}: not all required: every property must be required, in order")
            if provider == "anthropic" and not set(node.get("required", [])) <= set(properties):
                problems.append(f"{path}: required names a property that does not exist")
        if "array" in kinds and not isinstance(node.get("items"), dict):
            problems.append(f"{path}: an array must have an items schema")
        if "format" in node and node["format"] not in formats:
            problems.append(f"{path}: format {node['format']!r} is not supported")
        if provider == "openai" and len(node.get("enum", [])) > MAX_ENUM_VALUES:
            problems.append(f"{path}: more than {MAX_ENUM_VALUES} enum values")
        if provider == "anthropic" and "minItems" in node and node["minItems"] not in (0, 1):
            problems.append(f"{path}: minItems must be 0 or 1")
        if provider == "anthropic" and any(isinstance(value, (dict, list)) for value in node.get("enum", [])):
            problems.append(f"{path}: enum values must be scalars")

    _walk(parameters, "parameters", visit)
    if property_count > MAX_PROPERTIES:
        problems.append(f"more than {MAX_PROPERTIES} properties in total")
    if _object_depth(parameters, defs, set()) > MAX_OBJECT_DEPTH:
        problems.append(f"objects nested more than {MAX_OBJECT_DEPTH} levels deep")
    if provider == "anthropic":
        problems.extend(f"$defs.{name}: recursive schemas are not supported" for name in defs
                        if _refers_to(defs[name], name, defs, set()))
    return problems


def openai_strict_violations(parameters: dict) -> list[str]:
    """Every way `parameters` breaks OpenAI's strict rules (empty list: accepted)."""
    return strict_violations(parameters, "openai")


def anthropic_strict_violations(parameters: dict) -> list[str]:
    """Every way `parameters` breaks Anthropic's strict tool rules (empty list: accepted)."""
    return strict_violations(parameters, "anthropic")


def check_strict(parameters: dict, provider: str) -> None:
    """Assert `parameters` obeys `provider`'s strict tool rules; the message lists every violation."""
    problems = strict_violations(parameters, provider)
    assert not problems, "; ".join(problems)


def _object_depth(schema: Any, defs: dict, seen: set[str]) -> int:
    """How many object levels deep `schema` nests (a recursive reference counts once)."""
    if not isinstance(schema, dict):
        return 0
    if "$ref" in schema:
        name = str(schema["$ref"]).removeprefix("#/$defs/")
        return 0 if name in seen or name not in defs else _object_depth(defs[name], defs, seen | {name})
    children = [*(schema.get("properties") or {}).values(), *schema.get("anyOf", [])]
    if isinstance(schema.get("items"), dict):
        children.append(schema["items"])
    deepest = max((_object_depth(child, defs, seen) for child in children), default=0)
    return deepest + (1 if "object" in _types_of(schema) else 0)


def _refers_to(schema: Any, name: str, defs: dict, seen: set[str]) -> bool:
    """Whether `schema` reaches `$defs/name` through references (directly or through other defs)."""
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = ref[8:]
            if target == name:
                return True
            if target not in seen and target in defs:
                return _refers_to(defs[target], name, defs, seen | {target})
        return any(_refers_to(value, name, defs, seen) for value in schema.values())
    if isinstance(schema, list):
        return any(_refers_to(value, name, defs, seen) for value in schema)
    return False


# -- Gemini's OpenAPI subset -----------------------------------------------------------------------
# google-genai's Schema model checks the keys; DESIGN.md adds that this dialect carries no
# additionalProperties and no references (older endpoints refuse them).
GEMINI_OPENAPI_FORBIDDEN = frozenset({"additionalProperties", "$ref", "$defs", "prefixItems", "const",
                                      "propertyNames", "uniqueItems", "contentEncoding", "exclusiveMinimum",
                                      "exclusiveMaximum", "multipleOf", "oneOf", "allOf", "not"})


def gemini_openapi_violations(declaration: dict) -> list[str]:
    """Problems google-genai or the OpenAPI subset would have with a `gemini-openapi` declaration."""
    from google.genai import types as genai_types

    problems: list[str] = []
    try:
        genai_types.FunctionDeclaration.model_validate(declaration)
    except Exception as error:  # pydantic.ValidationError: the SDK refuses the declaration
        problems.append(f"google-genai refuses it: {error}")

    def visit(node: Any, path: str) -> None:
        if not isinstance(node, dict):
            problems.append(f"{path}: a schema must be an object, got {node!r}")
            return
        for keyword in set(node) & GEMINI_OPENAPI_FORBIDDEN:
            problems.append(f"{path}: keyword {keyword!r} is not in the OpenAPI subset")
        if isinstance(node.get("type"), list):  # Gemini has a NULL type, but no type lists
            problems.append(f"{path}: use one type (and nullable) instead of a list of types")
        if "enum" in node and any(not isinstance(value, str) for value in node["enum"]):
            problems.append(f"{path}: enum values must be strings")

    if "parameters" in declaration:
        _walk(declaration["parameters"], "parameters", visit)
    return problems


# -- model replies ---------------------------------------------------------------------------------
# The JSON each API sends for one model reply, around the calls a test puts in it.

def openai_completion(message: dict) -> dict:
    """An OpenAI chat completion whose one choice is `message` (an assistant message with tool_calls)."""
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "gpt-4.1",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}]}


def responses_response(output: list) -> dict:
    """An OpenAI Responses API response with these `output` items."""
    return {"id": "resp_1", "object": "response", "created_at": 0, "model": "gpt-4.1", "output": output,
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}


def anthropic_message(content: list, message_id: str = "msg_1", tokens: tuple[int, int] = (10, 20)) -> dict:
    """An Anthropic assistant message with these `content` blocks, stopped for tool use."""
    return {"id": message_id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
            "content": content, "stop_reason": "tool_use", "stop_sequence": None,
            "usage": {"input_tokens": tokens[0], "output_tokens": tokens[1]}}


def gemini_response(parts: list) -> dict:
    """A Gemini GenerateContentResponse (REST JSON, camelCase) with one candidate holding `parts`."""
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}]}



# provider -> (module, class) of the object its SDK returns for one model reply
SDK_REPLY_TYPES = {
    "openai": ("openai.types.chat", "ChatCompletion"),
    "responses": ("openai.types.responses", "Response"),
    "anthropic": ("anthropic.types", "Message"),
    "gemini": ("google.genai.types", "GenerateContentResponse"),
}


def sdk_reply(provider: str, data: dict) -> Any:
    """The reply `data` (its JSON, as the provider's API sends it) as the provider's SDK object."""
    module, name = SDK_REPLY_TYPES[provider]
    return getattr(importlib.import_module(module), name).model_validate(data)


__all__ = ["FORMATS", "STRICT_FORMATS", "parameters_of", "KEYWORDS", "STRING_FORMATS", "JSON_TYPES",
           "strict_violations", "openai_strict_violations", "anthropic_strict_violations", "check_strict",
           "GEMINI_OPENAPI_FORBIDDEN", "gemini_openapi_violations", "openai_completion", "responses_response",
           "anthropic_message", "gemini_response", "SDK_REPLY_TYPES", "sdk_reply"]
