"""A parameters schema in the OpenAPI 3.0 subset of Gemini's older `parameters` field ("gemini-openapi").

No `additionalProperties`, no `$ref` (references are inlined, so a recursive type is refused),
`nullable` instead of null types, enums of strings only; what has no such form is described in
words or refused with a `SchemaError` naming the parameter.
"""

from __future__ import annotations

import math
from typing import Any

from .walk import MISSING, OPEN_MAP, Walker, note_text, pop_type, type_list, with_notes

# What google.genai.types.Schema accepts (it forbids any other key), minus what we never emit.
_OPENAPI_KEEP = frozenset({"minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems",
                           "minProperties", "maxProperties", "pattern", "default", "example"})
# Formats Gemini documents per type; others are described in words.
_OPENAPI_FORMATS = {"string": frozenset({"date-time", "date", "email", "byte", "password", "enum"}),
                    "integer": frozenset({"int32", "int64"}),
                    "number": frozenset({"float", "double"})}
_JSON_KIND = {bool: "boolean", int: "integer", float: "number", str: "string"}


def openapi_schema(schema: dict, tool_name: str, *, extras_name: str | None = None,
                   varargs_name: str | None = None) -> dict:
    """`schema` (neutral) in the OpenAPI 3.0 subset of Gemini's `parameters` field.

    `$ref`s are inlined (a recursive type cannot be: `SchemaError`), null becomes
    `nullable: true`, `const` becomes a one-value `enum`, enums of non-strings become typed values
    (integers as exact minimum/maximum ranges, others listed in the description), a homogeneous tuple
    becomes an array with a fixed length, `contentEncoding: base64` becomes `format: byte`, and
    keywords Gemini lacks (exclusive bounds, multipleOf, uniqueItems, most formats) are described
    in words. Open maps, untyped values and mixed tuples raise `SchemaError`; render with
    fmt="gemini" (full JSON Schema) for those; `extras_name` (the `**kwargs` parameter, if any) is
    the parameter named when the root's extra keys are the problem. Optional catch-alls are never
    the reason for a refusal: extra keys (`**kwargs`) are described in words, and the `*args`
    property (`varargs_name`) is left out when it has no form here. The input is never mutated.
    """
    walker = _OpenAPI(schema, tool_name, extras_name, varargs_name)
    return walker.node(walker.root_keys(None), (), root=True)


MOST_INLINED = 5_000  # definitions written out in one schema (each use of a shared type is one)


class _OpenAPI(Walker):
    """The Gemini OpenAPI transform: references inlined, null as `nullable`, the rest in words."""

    form = "form in Gemini's OpenAPI schema subset"
    advice = ", or render with fmt='gemini' (parametersJsonSchema), which takes full JSON Schema"
    empty_array_items = "string"

    def __init__(self, root: dict, tool_name: str, extras_name: str | None = None,
                 varargs_name: str | None = None):
        super().__init__(root, tool_name, extras_name, varargs_name)
        self.expanding: list[str] = []  # $defs being inlined, to detect recursion
        self.inlined = 0  # schemas written out from $defs so far (bounded: MOST_INLINED)

    def node(self, schema: Any, where: tuple[str, ...], root: bool = False) -> dict:
        keys, description, title = self.opened(schema, where)
        notes: dict[str, Any] = {}

        if "$ref" in keys:
            out = self.inline(keys.pop("$ref"), where)
            for keyword, value in keys.items():
                if keyword in _OPENAPI_KEEP:
                    out[keyword] = value
                else:
                    notes[keyword] = value
            return self.finish(out, description or out.pop("description", None), title, notes, False)

        self.const_and_one_of(keys, where)
        kinds = type_list(pop_type(keys))
        nullable = "null" in kinds
        kinds = [item for item in kinds if item != "null"]

        if "enum" in keys:
            values = list(keys.pop("enum"))
            if None in values:
                nullable = True
                values = [value for value in values if value is not None]
            out = self.enum(values, kinds, notes, where)
        elif "anyOf" in keys:
            options = []
            for option in keys.pop("anyOf"):
                if isinstance(option, dict) and option.get("type") == "null" and len(option) == 1:
                    nullable = True
                    continue
                converted = self.node(option, where)
                if converted.pop("nullable", False):
                    nullable = True
                options.append(converted)
            if len(options) == 1:
                out = options[0]
                description = description or out.pop("description", None)
            elif options:
                out = {"anyOf": options}
            else:
                out = {"type": "null"}
        elif len(kinds) > 1:
            # Several types without a union keyword: one option per type, each with the keywords.
            out = {"anyOf": [self.node({**keys, "type": item}, where) for item in kinds]}
            keys = {}
        elif kinds:
            out = {"type": kinds[0]}
        else:
            out = {"type": "null"}

        current = out.get("type")
        if current == "object" and "properties" not in out:
            self.object_into(out, keys, where, root)
        elif current == "array" and "items" not in out:
            self.array_into(out, keys, where)
        elif current in ("integer", "number"):
            self.bounds_into(out, keys, current, notes)
        self.format_into(out, keys, current, notes)
        for keyword, value in keys.items():
            if keyword in _OPENAPI_KEEP:
                out[keyword] = value
            else:
                notes[keyword] = value
        return self.finish(out, description, title, notes, nullable)

    @staticmethod
    def finish(out: dict, description: str | None, title: str | None, notes: dict, nullable: bool) -> dict:
        if nullable:
            out["nullable"] = True
        if title is not None:
            out["title"] = title
        text = with_notes(description, notes)
        if text is not None:
            out["description"] = text
        return out

    def inline(self, ref: Any, where: tuple[str, ...]) -> dict:
        name, target = self.def_of(ref, where)
        self.inlined += 1
        if self.inlined > MOST_INLINED:
            # a type shared at every level doubles the written-out schema per level (2**30 copies)
            self.fail(where, f"the schema uses its shared types more than {MOST_INLINED:,} times once "
                             f"written out ({name!r} among them), and the {{form}} has no references "
                             "to write each once; nest fewer shared types{advice}")
        if name in self.expanding:
            self.fail(where, f"the recursive type {name!r} has no {{form}} (it has no references, "
                             "so a type that contains itself cannot be written out){advice}")
        self.expanding.append(name)
        try:
            return self.node(target, where)
        finally:
            self.expanding.pop()

    def enum(self, values: list, kinds: list[str], notes: dict, where: tuple[str, ...]) -> dict:
        """Gemini's enum holds strings only: other values become typed schemas that say which.

        Integers become exact minimum/maximum bounds, one range per run of consecutive values;
        numbers and booleans are listed in the description (dispatch still checks them).
        """
        groups: dict[str, list] = {}
        for value in values:
            kind = _JSON_KIND.get(type(value))
            if kind is None:
                self.fail(where, "an enum of objects or arrays has no {form}{advice}")
            if kind == "integer" and "number" in kinds and "integer" not in kinds:
                kind = "number"
            groups.setdefault(kind, []).append(value)
        options = []
        for kind, group in groups.items():
            if kind == "string":
                options.append({"type": "string", "enum": group})
            elif kind == "integer":
                # each run of consecutive integers as exact bounds (10, 20 -> two one-value ranges)
                options.extend({"type": "integer", "minimum": low, "maximum": high}
                               for low, high in _runs(sorted(set(group))))
            else:
                options.append({"type": kind, "description": f"({note_text({'enum': group})})"})
        if not options:
            return {"type": "null"}
        if len(options) == 1:
            only = options[0]
            if only.pop("description", None) is not None:
                notes["enum"] = values  # merged with the schema's own description
            return only
        return {"anyOf": options}

    def object_into(self, out: dict, keys: dict, where: tuple[str, ...], root: bool) -> None:
        properties = keys.pop("properties", None) or {}
        required = keys.pop("required", None)
        extra = keys.pop("additionalProperties", MISSING)
        open_keys = extra is not False and extra is not MISSING
        if not root and not properties and (open_keys or extra is MISSING):
            self.fail(where, OPEN_MAP.replace("{why}", " (an OpenAPI object is described by its properties only)"))
        if not properties and not root:
            self.fail(where, "an object with no fields has no {form} (Gemini needs at least one "
                             "property){advice}")
        if open_keys:
            # extra keys (**kwargs at the root) described in words: optional, so never a refusal
            keys["additionalProperties"] = extra
        out["properties"] = {}
        for name, prop in properties.items():
            converted = self.optional_catch_all(name, prop, where) if root else MISSING
            if converted is MISSING:
                converted = self.node(prop, where + (name,))
            if converted is not None:
                out["properties"][name] = converted
        if required:
            out["required"] = [name for name in required if name in out["properties"]]

    @staticmethod
    def bounds_into(out: dict, keys: dict, kind: str, notes: dict) -> None:
        """Exclusive integer bounds become inclusive ones (same meaning); others are described."""
        for exclusive, inclusive, step in (("exclusiveMinimum", "minimum", 1), ("exclusiveMaximum", "maximum", -1)):
            if exclusive not in keys:
                continue
            bound = keys.pop(exclusive)
            if kind == "integer" and isinstance(bound, (int, float)) and not isinstance(bound, bool):
                whole = math.floor(bound) + 1 if step > 0 else math.ceil(bound) - 1
                current = keys.get(inclusive)
                keys[inclusive] = whole if current is None else (max(current, whole) if step > 0
                                                                 else min(current, whole))
            else:
                notes[exclusive] = bound

    @staticmethod
    def format_into(out: dict, keys: dict, kind: Any, notes: dict) -> None:
        fmt = keys.pop("format", None)
        encoding = keys.pop("contentEncoding", None)
        if kind == "string" and encoding == "base64" and fmt is None:
            fmt = "byte"  # OpenAPI 3.0 spells base64 text as format: byte
        elif encoding is not None:
            notes["contentEncoding"] = encoding
        if fmt is None:
            return
        if fmt in _OPENAPI_FORMATS.get(kind, ()):
            out["format"] = fmt
        else:
            notes["format"] = fmt

def _runs(values: list[int]) -> list[tuple[int, int]]:
    """Sorted distinct integers as (first, last) runs of consecutive values: [1, 2, 3, 7] -> [(1, 3), (7, 7)]."""
    runs: list[tuple[int, int]] = []
    for value in values:
        if runs and value == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], value)
        else:
            runs.append((value, value))
    return runs


__all__ = ["openapi_schema"]
