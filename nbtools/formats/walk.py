"""What the strict and the OpenAPI transforms share: reading one JSON Schema node, refusing what has
no faithful form in the target dialect (naming the tool and the parameter), arrays, notes in words.

Each transform subclasses `Walker` with its own `node(schema, where)`; `where` is the path from the
parameter down (`("shape", "corner")`, `"[]"` for array items), used in error messages.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any

from ..errors import SchemaError
from ..schema.bundle import bundle
from .allof import ANNOTATIONS, intersect, is_annotation_only

MISSING: Any = type("_Missing", (), {"__repr__": lambda self: "MISSING"})()
IN_PROGRESS: Any = type("_InProgress", (), {"__repr__": lambda self: "IN_PROGRESS"})()

# Annotations no provider needs; dropping them changes nothing a value must satisfy.
_DROPPED_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "$anchor", "examples", "deprecated",
                                  "readOnly", "writeOnly"})

# Refusal texts; `{form}`, `{advice}` and `{why}` are filled in by `Walker.fail`.
UNTYPED = ("an untyped value (no annotation, Any or object) has no {form}; annotate it with a "
           "concrete type{advice}")
OPEN_MAP = ("an object with arbitrary keys (a dict or mapping) has no {form}{why}; use a dataclass or "
            "TypedDict with fixed keys{advice}")
MIXED_TUPLE = ("a fixed-length tuple whose items differ in type (prefixItems) has no {form}; use a "
               "list of one type or a dataclass/TypedDict{advice}")

# Keywords with no faithful form in either target dialect, and why.
_NO_FORM = {
    "propertyNames": "constrained mapping keys (propertyNames) have no {form}; use a dataclass or "
                     "TypedDict with fixed keys{advice}",
    "patternProperties": "keys matched by pattern (patternProperties) have no {form}{advice}",
    "not": "a negated schema (not) has no {form}{advice}",
    "if": "a conditional schema (if/then/else) has no {form}{advice}",
    "dependentSchemas": "dependentSchemas has no {form}{advice}",
    "unevaluatedProperties": "unevaluatedProperties has no {form}{advice}",
    "unevaluatedItems": "unevaluatedItems has no {form}{advice}",
    "contains": "an array constraint on some of its items (contains) has no {form}{advice}",
    "$dynamicRef": "$dynamicRef has no {form}{advice}",
}


def is_object_schema(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "object"


def is_untyped(schema: dict) -> bool:
    """True for a schema that says nothing about the value's type (`{}`, or only annotations)."""
    return not any(key in schema for key in ("type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref",
                                             "properties", "items", "prefixItems"))


def is_typed_map(schema: Any) -> bool:
    """True for a key/value map whose values have a type (`{"type": "object", "additionalProperties":
    {"type": "integer"}}`): no properties, nothing required, and a typed `additionalProperties`."""
    if not isinstance(schema, dict) or "object" not in type_list(schema.get("type")):
        return False
    extra = schema.get("additionalProperties")
    return (isinstance(extra, dict) and not is_untyped(extra) and not schema.get("properties")
            and not schema.get("required") and "patternProperties" not in schema)


def split_ref(ref: Any) -> str | None:
    """The definition name a local reference points to (`#/$defs/<name>`, or draft-07's
    `#/definitions/<name>` as zod-to-json-schema and pydantic v1 write), else None."""
    if isinstance(ref, str):
        for prefix in ("#/$defs/", "#/definitions/"):
            if ref.startswith(prefix):
                name = ref[len(prefix):]
                if "/" not in name:
                    return name.replace("~1", "/").replace("~0", "~")
    return None


def pop_type(keys: dict) -> Any:
    """Pop `type` from `keys`; with no type, anyOf or enum the node is an object (when it has
    properties) or else an array (it has items or prefixItems: untyped nodes are refused earlier)."""
    kind = keys.pop("type", None)
    if kind is None and "anyOf" not in keys and "enum" not in keys:
        kind = "object" if "properties" in keys else "array"
    return kind


def type_list(kind: Any) -> list[str]:
    """A `type` keyword as a list: `"integer"` -> `["integer"]`, `["integer", "null"]` as is, None -> `[]`."""
    return [kind] if isinstance(kind, str) else list(kind or ())


def note_text(notes: dict[str, Any]) -> str:
    """`{"minLength": 3, "": "null leaves it out"}` -> `minLength: 3; null leaves it out`."""
    keywords = ", ".join(f"{key}: {json.dumps(value, default=str)}" for key, value in notes.items() if key)
    words = notes.get("")
    return "; ".join(part for part in (keywords, words) if part)


def with_notes(description: str | None, notes: dict[str, Any] | str | None) -> str | None:
    """The description with constraints the dialect cannot carry appended in words, e.g. `(minLength: 3)`."""
    if not notes:
        return description
    text = notes if isinstance(notes, str) else note_text(notes)
    return f"{description} ({text})" if description else f"({text})"


def _path_text(where: tuple[str, ...]) -> str:
    text = ""
    for segment in where:
        text += segment if segment == "[]" else ("." if text else "") + segment
    return text


def _homogeneous_tuple(keys: dict) -> dict | None:
    """The item schema of a `prefixItems` tuple whose items all share one schema, else None."""
    prefix = keys.get("prefixItems")
    if not isinstance(prefix, list) or not prefix:
        return None
    count = len(prefix)
    if any(item != prefix[0] for item in prefix) or keys.get("maxItems") != count:
        return None
    if keys.get("items", False) is not False:
        return None
    return prefix[0]


class Walker(ABC):
    """The base of a transform: the tool, the root's `$defs`, error reporting, arrays.

    Subclasses set `form` (what the target is called in messages), `advice` (what else to try) and
    `empty_array_items`, and define `node(schema, where, root=False) -> dict`.
    """

    form = ""
    advice = ""
    empty_array_items = "null"  # item type written for an always-empty array (`maxItems: 0`)

    def __init__(self, root: dict, tool_name: str, extras_name: str | None = None,
                 varargs_name: str | None = None):
        self.tool = tool_name
        self.extras_name = extras_name
        self.varargs_name = varargs_name
        # embedded resources' definitions moved to the root, so each $ref means what it meant
        try:
            self.source: Any = bundle(root) if isinstance(root, dict) else root
        except SchemaError as error:
            raise SchemaError(tool_name, None, error.reason) from None
        self.source_defs: dict = {}
        for keyword in ("definitions", "$defs"):  # draft-07 and 2020-12 spellings; $defs wins a tie
            defs = self.source.get(keyword) if isinstance(self.source, dict) else None
            if isinstance(defs, dict):
                self.source_defs.update(defs)
        # `{"$ref": "#"}` (the root itself, recursively) becomes a definition of its own
        self.root_name, counter = "Root", 2
        while self.root_name in self.source_defs:
            self.root_name, counter = f"Root{counter}", counter + 1

    @abstractmethod
    def node(self, schema: Any, where: tuple[str, ...], root: bool = False) -> dict:
        """One schema in the target dialect (`root`: the parameters object itself)."""

    def root_keys(self, schema: Any) -> dict:
        """The root's keys without `$defs` (those are reached through references); the root must be an
        object. A root that is a `$ref` (`{"$ref": "#/definitions/Args", "definitions": ...}`) is
        replaced by what it points to (with its own other keywords)."""
        schema = self.source if schema is None else schema
        if isinstance(schema, dict) and ("$ref" in schema or "allOf" in schema):
            keys = {key: value for key, value in schema.items() if key not in ("$defs", "definitions")}
            merged, why = intersect([keys], self.resolvable)
            if merged is None:
                raise SchemaError(self.tool, None, f"the parameters schema cannot be written out: {why}")
            schema = merged
        if not is_object_schema(schema):
            raise SchemaError(self.tool, None, "the parameters schema must be an object at its root")
        return {key: value for key, value in schema.items() if key not in ("$defs", "definitions")}

    def resolvable(self, part: dict) -> dict | None:
        """The target of `part`'s `$ref` when it can be copied in place (None: recursive or unknown)."""
        ref = part.get("$ref")
        if ref == "#":
            return None
        name = split_ref(ref)
        if name is None or name not in self.source_defs or self.refers_to(name, self.source_defs[name], set()):
            return None
        return self.source_defs[name]

    def refers_to(self, name: str, schema: Any, seen: set[str]) -> bool:
        if isinstance(schema, dict):
            target = split_ref(schema.get("$ref"))
            if target == name:
                return True
            if target is not None and target not in seen and target in self.source_defs:
                seen.add(target)
                if self.refers_to(name, self.source_defs[target], seen):
                    return True
            return any(self.refers_to(name, value, seen) for value in schema.values())
        if isinstance(schema, list):
            return any(self.refers_to(name, value, seen) for value in schema)
        return False

    def fail(self, where: tuple[str, ...], reason: str) -> None:
        # Plain replacement, not str.format: reasons quote user names that may hold braces.
        reason = reason.replace("{why}", "").replace("{form}", self.form).replace("{advice}", self.advice)
        if len(where) > 1:
            reason = f"at {_path_text(where)}: {reason}"
        raise SchemaError(self.tool, where[0] if where else None, reason)

    def def_of(self, ref: Any, where: tuple[str, ...]) -> tuple[str, Any]:
        if ref == "#":  # the root, recursively: as a definition (its body is the root's own keys)
            return self.root_name, self.root_keys(None)
        name = split_ref(ref)
        if name is None:
            self.fail(where, f"the reference {ref!r} is not a local '#/$defs/<name>' (or '#/definitions/<name>', "
                             "or '#') reference")
        if name not in self.source_defs:
            self.fail(where, f"the reference {ref!r} points to no entry of $defs")
        return name, self.source_defs[name]

    def optional_catch_all(self, name: str, prop: Any, where: tuple[str, ...]) -> Any:
        """The `*args` property in this dialect, or None (left out) when it has no form here: an
        optional catch-all the model need not send, so the tool stays usable. MISSING for others."""
        if name != self.varargs_name:
            return MISSING
        try:
            return self.node(prop, where + (name,))
        except SchemaError:
            return None

    def merged_all_of(self, keys: dict, where: tuple[str, ...]) -> dict:
        """`allOf` (and the keywords beside it) as one schema meaning the same: a part that only
        describes (what older generators write around a `$ref`) lends its words, and parts that
        constrain are intersected (`allof.intersect`); where that has no faithful form, refused."""
        parts = keys.pop("allOf")
        if not isinstance(parts, list) or not parts or not all(isinstance(part, dict) for part in parts):
            self.fail(where, "an allOf that is not a list of schemas has no {form}{advice}")
        parts = [*parts, keys]
        constraining = [part for part in parts if not is_annotation_only(part)]
        if len(constraining) <= 1:
            merged = dict(constraining[0]) if constraining else {}
            for part in parts:  # the words of the describing parts; the outer keywords last (they win)
                if part is not (constraining[0] if constraining else None):
                    merged.update(part)
            return merged
        return self.intersected(parts, where)

    def intersected(self, parts: list[dict], where: tuple[str, ...]) -> dict:
        merged, why = intersect(parts, self.resolvable)
        if merged is None:
            self.fail(where, f"an intersection of schemas (allOf, or a $ref beside other keywords) has no "
                             f"{{form}}: {why}; merge them into one type{{advice}}")
        return merged

    def check_no_form(self, keys: dict, where: tuple[str, ...]) -> None:
        """Refuse keywords with no faithful form (`keys` loses the harmless `unevaluated*: false`)."""
        for keyword in ("unevaluatedProperties", "unevaluatedItems"):
            if keys.get(keyword) is False:
                del keys[keyword]  # closed already: strict objects are closed, OpenAPI cannot say it
        for keyword in keys:
            if keyword in _NO_FORM:
                self.fail(where, _NO_FORM[keyword])

    def opened(self, schema: Any, where: tuple[str, ...]) -> tuple[dict, Any, Any]:
        """A copy of one schema's keys ready to transform (one-part `allOf` merged, `$id`/`examples`
        and the like dropped, keywords with no form refused), and its description and title."""
        if schema is False:
            self.fail(where, "a schema that accepts no value has no {form}")
        if not isinstance(schema, dict) or is_untyped(schema):
            self.fail(where, UNTYPED)
        keys = dict(schema)
        if "allOf" in keys:
            return self.opened(self.merged_all_of(keys, where), where)
        if "$ref" in keys and not all(key == "$ref" or key in ANNOTATIONS for key in keys):
            # a reference beside constraints (`{"$ref": ..., "properties": ...}`): both hold, so the
            # definition is copied here with them, never the constraints turned into words
            return self.opened(self.intersected([keys], where), where)
        description = keys.pop("description", None)
        title = keys.pop("title", None)
        for keyword in _DROPPED_ANNOTATIONS:
            keys.pop(keyword, None)
        self.check_no_form(keys, where)
        return keys, description, title

    def const_and_one_of(self, keys: dict, where: tuple[str, ...]) -> None:
        """`const` as a one-value `enum` (empty when it contradicts `enum`), `oneOf` as `anyOf`."""
        if "const" in keys:
            value = keys.pop("const")
            enum = keys.pop("enum", [value])
            keys["enum"] = [value] if value in enum else []
        if "oneOf" in keys:
            # Disjoint alternatives (tagged unions) mean the same as anyOf; dispatch still checks them.
            if "anyOf" in keys:
                self.fail(where, "a schema with both anyOf and oneOf has no {form}{advice}")
            keys["anyOf"] = keys.pop("oneOf")

    def array_into(self, out: dict, keys: dict, where: tuple[str, ...]) -> None:
        """`items` of an array schema; a tuple of one repeated item type becomes a plain array."""
        if "prefixItems" in keys:
            item = _homogeneous_tuple(keys)
            if item is None:
                self.fail(where, MIXED_TUPLE)
            keys.pop("prefixItems")
            keys.pop("items", None)
            keys["items"] = item
        items = keys.pop("items", MISSING)
        if items is MISSING and keys.get("maxItems") == 0:
            items = {"type": self.empty_array_items}  # an always-empty array: its item type is irrelevant
        if items is MISSING:
            self.fail(where, UNTYPED)
        out["items"] = self.node(items, where + ("[]",))


__all__ = ["MISSING", "IN_PROGRESS", "UNTYPED", "OPEN_MAP", "MIXED_TUPLE", "Walker", "is_object_schema",
           "is_untyped", "is_typed_map", "split_ref", "pop_type", "type_list", "note_text", "with_notes"]
