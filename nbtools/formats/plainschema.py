"""A schema in a provider's dialect -> plain JSON Schema (draft 2020-12), for the schema reader.

Schemas written for (or sent back by) Gemini and OpenAPI 3.0 differ from JSON Schema in three ways
this module undoes, so that `schema.read` and everything after it know only JSON Schema:

- type names in upper case (`"STRING"`, `"OBJECT"`: Gemini's `Type` enum), and `TYPE_UNSPECIFIED`
  (no type at all);
- `nullable: true` (OpenAPI 3.0, Gemini) instead of a `"null"` type;
- integer keywords written as strings (`"minItems": "2"`): Gemini's proto JSON writes int64 fields so.

`plain_schema` is the one entry point; it is the inverse of `openapi.openapi_schema` on what that
renders. It walks the subschema keywords only (never `default`, `enum` or `const` values, which are
data), returns its argument itself when nothing needed changing (the common case: a schema that is
already plain costs one walk and no copy) and never mutates it. A `$ref` to a place no subschema
keyword leads to is not rewritten (no provider writes one).
"""

from __future__ import annotations

from typing import Any

__all__ = ["plain_schema"]

# JSON Schema's type names: Gemini's upper-case ones are these, upper-cased.
_TYPE_NAMES = frozenset(("string", "integer", "number", "boolean", "null", "array", "object"))
# Keywords whose value is a number (JSON Schema) that proto JSON may write as a string.
_NUMBER_KEYWORDS = frozenset(("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
                              "minLength", "maxLength", "minItems", "maxItems", "minProperties",
                              "maxProperties"))
# Keywords holding subschemas: one (or, for `items` and the lists, a list of them), or a mapping of
# name -> subschema.
_SUBSCHEMAS = frozenset(("items", "additionalItems", "additionalProperties", "propertyNames", "contains",
                         "not", "if", "then", "else", "unevaluatedItems", "unevaluatedProperties",
                         "anyOf", "oneOf", "allOf", "prefixItems"))
_MAPS = frozenset(("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"))


def plain_schema(schema: Any) -> Any:
    """`schema` with the provider dialects above rewritten as JSON Schema 2020-12 (see the module).

    Call it after the nesting depth is checked (`schema.read.check_json_depth`): it recurses."""
    if not isinstance(schema, dict):
        return schema
    changed: dict[str, Any] = {}
    for key, value in schema.items():  # a schema has a few keys: cheaper than asking for each keyword
        if key in _SUBSCHEMAS:
            if isinstance(value, dict):
                new = plain_schema(value)
                if new is not value:
                    changed[key] = new
            elif isinstance(value, list):
                new_list = [plain_schema(sub) for sub in value]
                if any(new is not old for new, old in zip(new_list, value)):
                    changed[key] = new_list
        elif key in _MAPS:
            if isinstance(value, dict):
                new_map = {name: plain_schema(sub) for name, sub in value.items()}
                if any(new_map[name] is not sub for name, sub in value.items()):
                    changed[key] = new_map
        elif key == "type":
            if isinstance(value, (str, list)):
                types = _type_names(value)
                if types is not value:
                    changed[key] = types
        elif key == "nullable":
            changed[key] = value
        elif key in _NUMBER_KEYWORDS and isinstance(value, str):
            changed[key] = _number(value)
    if not changed:
        return schema
    plain = {**schema, **changed}
    for key in [key for key, value in plain.items() if value is _DROP]:
        del plain[key]
    if plain.pop("nullable", None) is True:
        plain = _or_null(plain)
    return plain


_DROP = object()  # a keyword with no plain form: left out


def _type_names(raw: str | list) -> Any:
    """`type` with Gemini's upper-case names in lower case; `TYPE_UNSPECIFIED` (no type) -> _DROP."""
    if raw == "TYPE_UNSPECIFIED":
        return _DROP  # the reader then infers the type from the keywords present
    if isinstance(raw, str):
        if raw in _TYPE_NAMES:
            return raw
        return raw.lower() if raw.lower() in _TYPE_NAMES else raw
    lowered = [name.lower() if isinstance(name, str) and name.lower() in _TYPE_NAMES else name
               for name in raw]
    return lowered if lowered != raw else raw


def _number(text: str) -> Any:
    """A numeric keyword written as a string ("2", "1.5"); _DROP when it is not a number."""
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return _DROP


def _or_null(schema: dict) -> dict:
    """`schema | null`, written as JSON Schema: OpenAPI's `nullable: true` (already removed) made plain.

    As OpenAPI 3.0 says, `nullable` beside a `$ref` (or a lone `allOf` member, its wrapped form)
    changes nothing."""
    all_of = schema.get("allOf")
    if "$ref" in schema or isinstance(all_of, list) and len(all_of) == 1:
        return schema
    for key in ("anyOf", "oneOf"):  # the options the reader takes: null becomes one more
        options = schema.get(key)
        if isinstance(options, list) and options:
            return {**schema, key: [*options, {"type": "null"}]}
    if "const" in schema:  # a nullable constant: the constant or null
        rest = {key: value for key, value in schema.items() if key not in ("const", "type")}
        return {**rest, "enum": [schema["const"], None]}
    types = schema.get("type")
    if isinstance(types, (str, list)):
        types = [types] if isinstance(types, str) else list(types)
        plain = {**schema, "type": types if "null" in types else [*types, "null"]}
        enum = schema.get("enum")
        if isinstance(enum, list) and None not in enum:
            plain["enum"] = [*enum, None]
        return plain
    if isinstance(schema.get("enum"), list):
        enum = schema["enum"]
        return schema if None in enum else {**schema, "enum": [*enum, None]}
    # no type: the reader infers one from the keywords; null is a second option beside it
    outer = {key: schema[key] for key in ("description", "default") if key in schema}
    inner = {key: value for key, value in schema.items() if key not in ("description", "default")}
    return {**outer, "anyOf": [inner, {"type": "null"}]}
