"""A schema in a provider's dialect -> plain JSON Schema (draft 2020-12), for the schema reader.

Schemas written for (or sent back by) Gemini and OpenAPI 3.0 differ from JSON Schema in three ways
this module undoes, so that `schema.read` and everything after it know only JSON Schema:

- type names in upper case (`"STRING"`, `"OBJECT"`: Gemini's `Type` enum), and `TYPE_UNSPECIFIED`
  (no type at all);
- `nullable: true` (OpenAPI 3.0, Gemini) instead of a `"null"` type;
- integer keywords written as strings (`"minItems": "2"`): Gemini's proto JSON writes int64 fields so.

`plain_copy` is the one entry point; it is the inverse of `openapi.openapi_schema` on what that
renders. It copies the schema as it goes (the copy a Tool keeps: one walk, not a walk and a
`deepcopy`), rewriting at the subschema keywords only (never inside `default`, `enum` or `const`
values, which are data); its argument is never mutated. A `$ref` to a place no subschema keyword
leads to is not rewritten (no provider writes one).
"""

from __future__ import annotations

import math

import copy
from typing import Any

__all__ = ["plain_copy"]

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


def plain_copy(schema: Any) -> Any:
    """A copy of `schema` (every dict and list new) with the provider dialects above rewritten as
    JSON Schema 2020-12 (see the module): the one walk `schema.params.parameters_root` makes.

    Call it after the nesting depth is checked (`schema.read.check_json_depth`): it recurses."""
    if not isinstance(schema, dict):
        return _data(schema)
    out: dict[str, Any] = {}
    dropped = False
    for key, value in schema.items():
        if key in _SUBSCHEMAS:
            out[key] = [plain_copy(sub) for sub in value] if type(value) is list else plain_copy(value)
        elif key in _MAPS and type(value) is dict:
            out[key] = {name: plain_copy(sub) for name, sub in value.items()}
        elif key == "type" and isinstance(value, (str, list)):
            out[key] = _type_names(value)
            dropped = dropped or out[key] is _DROP
        elif key in _NUMBER_KEYWORDS and isinstance(value, str):
            out[key] = _number(value)
            dropped = dropped or out[key] is _DROP
        else:
            out[key] = _data(value)
    if dropped:
        out = {key: value for key, value in out.items() if value is not _DROP}
    if "nullable" in out and out.pop("nullable") is True:
        return _or_null(out)
    return out


def _data(value: Any) -> Any:
    """A copy of a value that is no schema (`default`, `enum`, an extension keyword's)."""
    kind = type(value)
    if kind is dict:
        return {key: _data(item) for key, item in value.items()}
    if kind is list:
        return [_data(item) for item in value]
    if kind in (str, int, float, bool) or value is None:
        return value
    return copy.deepcopy(value)  # not JSON (a tuple, an object): copied as before


_DROP = object()  # a keyword with no plain form: left out


def _type_names(raw: str | list) -> Any:
    """`type` with Gemini's upper-case names in lower case; `TYPE_UNSPECIFIED` (no type) -> _DROP."""
    if raw == "TYPE_UNSPECIFIED":
        return _DROP  # the reader then infers the type from the keywords present
    if isinstance(raw, str):
        if raw in _TYPE_NAMES:
            return raw
        return raw.lower() if raw.lower() in _TYPE_NAMES else raw
    return [name.lower() if isinstance(name, str) and name.lower() in _TYPE_NAMES else _data(name)
            for name in raw]


def _number(text: str) -> Any:
    """A numeric keyword written as a string ("2", "1.5"); _DROP when it is not a finite number
    ("nan", "inf": Python's float reads them, JSON has no such numbers)."""
    try:
        return int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            return _DROP
        return number if math.isfinite(number) else _DROP


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
