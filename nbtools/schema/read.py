"""JSON Schema -> the intermediate form (`ir`): the way back from `render.py`.

`schema_to_ir` reads any JSON Schema into nodes with no Python conversion attached (a string is
`Str(py=str)` whatever its `format`, an object is `Object(kind="dict")`), so validated values stay
plain JSON; unknown keywords are ignored (looser validation, never an error). Every error is a
`SchemaError`. A tool's parameters schema becomes its arguments object in `params.py`.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from .. import ir
from ..errors import SchemaError
from .bundle import bundle, has_embedded
from .unions import union

__all__ = ["schema_to_ir", "check_json_depth", "json_types", "MAX_SCHEMA_DEPTH", "MAX_SCHEMA_NODES",
           "MAX_SCHEMA_OPTIONS"]

# Validation keywords kept as node constraints, by the JSON type they apply to.
_STRING_KEYWORDS = ("minLength", "maxLength", "pattern")
_NUMBER_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_ARRAY_KEYWORDS = ("minItems", "maxItems", "uniqueItems")
_OBJECT_KEYWORDS = ("minProperties", "maxProperties")
_FAMILY_KEYWORDS = {
    "string": _STRING_KEYWORDS + ("format", "contentEncoding"),
    "number": _NUMBER_KEYWORDS,
    "array": _ARRAY_KEYWORDS + ("items", "prefixItems", "contains", "additionalItems"),
    "object": _OBJECT_KEYWORDS + ("properties", "required", "additionalProperties",
                                  "patternProperties", "propertyNames"),
}


def schema_to_ir(schema: dict | bool, defs: dict | None = None) -> ir.Node:
    """Read a JSON Schema into intermediate-form nodes, with no Python conversion attached.

    Understands JSON Schema (draft 2020-12, and the older drafts' forms noted below; a provider's
    dialect, such as Gemini's upper-case type names or OpenAPI's `nullable`, is made plain before,
    by `formats.plainschema` in `schema.params.parameters_root`): `type` (also a list),
    `anyOf`/`oneOf`, a one-member `allOf`, `enum`/`const`,
    `$ref` into `$defs`/`definitions` (or any local JSON pointer, `#` included; a reference that
    closes a cycle becomes `ir.Ref`), `items`, `prefixItems` and the legacy list form of `items`,
    `properties`/`required`/`additionalProperties`, and numeric/string/array/object validation
    keywords (kept in `constraints`). `description` goes on the node, except a property's, which goes
    on its `ir.Field` together with its `default`.

    A `$ref` written inside an embedded resource (a subschema with its own `$id`) means that
    resource's definition, and a resource may be named by its `$id` URI or an `$anchor`
    (`schema.bundle`); a reference there that points to nothing is a SchemaError.

    `defs` resolves references when `schema` is a fragment of a larger document: a mapping of
    definition name -> schema, consulted after the schema's own `$defs`/`definitions`.
    Unknown keywords and unresolvable references are ignored (looser validation, never an error).
    The one error is SchemaError for a schema too large to use: nested more than `MAX_SCHEMA_DEPTH`
    levels, an `anyOf`/`oneOf`/`enum`/`type` list longer than `MAX_SCHEMA_OPTIONS`, or expanding to
    more than `MAX_SCHEMA_NODES` nodes once its `$ref`s are followed (a schema from an MCP server
    must not be able to exhaust the stack or hang the process that reads it; every later stage
    walks the expanded form). Reading takes time linear in the expanded size.
    """
    check_json_depth(schema, "schema")
    if isinstance(schema, dict) and has_embedded(schema):  # a compound document: refs made root-relative
        schema = bundle(schema)
    return _Reader(schema, defs or {}).read(schema, pointer="#")


MAX_SCHEMA_DEPTH = 100
"""Deepest nesting of schemas inside schemas (through properties, items, anyOf, `$ref`...) read."""
MAX_SCHEMA_NODES = 100_000
"""Most nodes a schema may expand to when each `$ref` is replaced by its definition (cycles aside)."""
MAX_SCHEMA_OPTIONS = 1_000
"""Longest `anyOf`/`oneOf`/`enum`/`type` list read (a model cannot choose among more anyway)."""


def _options(schema: dict, key: str) -> Any:
    """`schema[key]`, refused with a SchemaError when it is a list over MAX_SCHEMA_OPTIONS long."""
    value = schema.get(key)
    if isinstance(value, list) and len(value) > MAX_SCHEMA_OPTIONS:
        raise SchemaError(None, None, f"the schema's {key} lists {len(value)} options, more than the "
                                      f"{MAX_SCHEMA_OPTIONS} nbtools reads; split the tool or use a "
                                      "plain string with a description")
    return value


def check_json_depth(value: Any, what: str) -> None:
    """SchemaError when dicts/lists nest more than 2 * MAX_SCHEMA_DEPTH levels (checked without recursion,
    before anything recursive, even `copy.deepcopy`, touches the value)."""
    limit = 2 * MAX_SCHEMA_DEPTH  # a schema level is often two JSON levels ("properties" -> name)
    stack = [(value, 1)]
    while stack:
        current, depth = stack.pop()
        if depth > limit:
            raise SchemaError(None, None, f"the {what} nests more than {limit} levels of objects/arrays; "
                                          "no tool definition needs that (is it generated recursively?)")
        if not isinstance(current, (dict, list)):
            continue
        children = current.values() if isinstance(current, dict) else current
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))


class _Reader:
    """One pass over one schema document; remembers definitions it has read (and is reading)."""

    def __init__(self, root: Any, defs: dict):
        self.root = root
        self.defs = defs
        self.done: dict[str, ir.Node] = {}
        self.reading: dict[str, int] = {}  # pointer -> self.containers when its reading began
        self.containers = 0  # arrays/objects entered: a $ref back inside one of them is a real recursion
        self.depth = 0
        self.sizes: dict[int, tuple[ir.Node, int]] = {}  # id -> (node kept alive, expanded size)

    def _size(self, node: ir.Node) -> int:
        """The node's expanded size (shared definitions counted each time they are used)."""
        known = self.sizes.get(id(node))
        if known is not None and known[0] is node:
            return known[1]
        size = 1 + sum(self._size(child) for child in ir.children(node))
        self.sizes[id(node)] = (node, size)
        return size

    # -- entry points ----------------------------------------------------------------------------
    def read(self, schema: Any, pointer: str | None = None) -> ir.Node:
        """Node for `schema`; `pointer` names it when it can be the target of a `$ref`."""
        if pointer is None:
            return self._read(schema)
        if pointer in self.done:
            return self.done[pointer]
        self.reading[pointer] = self.containers
        try:
            node = self._read(schema, name=_pointer_name(pointer, schema))
        finally:
            del self.reading[pointer]
        self.done[pointer] = node
        return node

    def _read(self, schema: Any, name: str = "", own_description: bool = True) -> ir.Node:
        if schema is True or schema is None:
            return ir.AnyValue()
        if schema is False:
            return ir.Union(options=())  # matches nothing
        if not isinstance(schema, dict):
            return ir.AnyValue()  # not a schema at all: ignore rather than crash
        self.depth += 1
        try:
            if self.depth > MAX_SCHEMA_DEPTH:
                raise SchemaError(None, None, f"the schema nests more than {MAX_SCHEMA_DEPTH} levels of "
                                              "schemas (properties, items, anyOf, $ref chains)")
            node = self._read_body(schema, name)
        finally:
            self.depth -= 1
        if self._size(node) > MAX_SCHEMA_NODES:
            raise SchemaError(None, None, f"the schema expands to more than {MAX_SCHEMA_NODES} nodes when "
                                          "its $refs are followed (definitions used many times inside each other)")
        description = _text(schema.get("description")) if own_description else None
        if description is not None and node.description != description:
            node = dataclasses.replace(node, description=description)
        return node

    # -- dispatch on the keyword families --------------------------------------------------------
    def _read_body(self, schema: dict, name: str) -> ir.Node:
        if isinstance(schema.get("$ref"), str):
            return self._reference(schema["$ref"])
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1:
            # pydantic v1 and others wrap a lone $ref this way to give it a description
            return self._read(all_of[0], name)
        for key in ("anyOf", "oneOf"):
            options = _options(schema, key)
            if isinstance(options, list) and options:
                return union([self.read(option) for option in options])
        if "const" in schema:
            return _choice([schema["const"]], None)
        if isinstance(_options(schema, "enum"), list):
            return _choice(schema["enum"], json_types(schema))
        return self._typed(schema, name)

    def _typed(self, schema: dict, name: str) -> ir.Node:
        types = json_types(schema)
        if types is None:  # no `type`: infer from the keywords present, if they agree on one family
            families = {family for family, words in _FAMILY_KEYWORDS.items()
                        if any(word in schema for word in words)}
            if len(families) != 1:
                return ir.AnyValue()
            types = list(families)
        nodes = [self._one_type(json_type, schema, name) for json_type in types]
        return union(nodes)

    def _one_type(self, json_type: str, schema: dict, name: str) -> ir.Node:
        if json_type == "string":
            return ir.Str(format=_text(schema.get("format")), encoding=_text(schema.get("contentEncoding")),
                          constraints=_constraints(schema, _STRING_KEYWORDS))
        if json_type == "integer":
            return ir.Int(constraints=_constraints(schema, _NUMBER_KEYWORDS))
        if json_type == "number":
            return ir.Float(None, constraints=_constraints(schema, _NUMBER_KEYWORDS))  # JSON values stay JSON
        if json_type == "boolean":
            return ir.Bool()
        if json_type == "null":
            return ir.NoneValue()
        if json_type == "array":
            return self._array(schema)
        if json_type == "object":
            return self._object(schema, name)
        return ir.AnyValue()  # not reached: `json_types` keeps known names only

    def _array(self, schema: dict) -> ir.Node:
        self.containers += 1
        try:
            return self._array_body(schema)
        finally:
            self.containers -= 1

    def _array_body(self, schema: dict) -> ir.Node:
        constraints = _constraints(schema, _ARRAY_KEYWORDS)
        items = schema.get("items")
        prefix = schema.get("prefixItems")
        rest: Any = items
        if prefix is None and isinstance(items, list):  # draft 4-7 tuple form
            prefix, rest = items, schema.get("additionalItems")
        if not isinstance(prefix, list):
            return ir.Array(item=self.read(items) if items is not None else ir.AnyValue(),
                            constraints=constraints)
        prefix_nodes = tuple(self.read(item) for item in prefix)
        max_items = _number(schema.get("maxItems"))
        if rest is False or (max_items is not None and max_items <= len(prefix)):
            # a closed prefix is a fixed-length tuple; the length keywords are then implied
            kept = tuple(pair for pair in constraints if pair[0] not in ("minItems", "maxItems"))
            return ir.Tuple(items=prefix_nodes, constraints=kept)
        # open-ended prefix: no fixed-length node fits, so accept any of the item types (looser)
        tail = [self.read(rest)] if rest is not None else [ir.AnyValue()]
        return ir.Array(item=union([*prefix_nodes, *tail]), constraints=constraints)

    def _object(self, schema: dict, name: str) -> ir.Node:
        self.containers += 1
        try:
            return self._object_body(schema, name)
        finally:
            self.containers -= 1

    def _object_body(self, schema: dict, name: str) -> ir.Node:
        constraints = _constraints(schema, _OBJECT_KEYWORDS)
        properties = schema.get("properties")
        if not isinstance(properties, dict):
            properties = {}
        additional = schema.get("additionalProperties", True)
        if isinstance(schema.get("patternProperties"), dict) and schema["patternProperties"]:
            additional = True  # keys matching a pattern are allowed; we do not check patterns (looser)
        extra = None if additional is False else self.read(additional)
        required = schema.get("required")
        required = [key for key in required if isinstance(key, str)] if isinstance(required, list) else []
        if not properties and not required and extra is not None:
            key = ir.Str()
            names = schema.get("propertyNames")
            if isinstance(names, dict):
                key_node = self.read(names)
                if isinstance(key_node, (ir.Str, ir.Literal)):
                    key = key_node
            return ir.Map(key=key, value=extra, constraints=constraints)
        needed = dict.fromkeys(required)  # a set with the schema's order: membership is O(1)
        fields = [self._field(prop, sub, prop in needed) for prop, sub in properties.items()]
        # `required` may name keys without a property schema: they must be present, with any value
        fields += [ir.Field(prop, ir.AnyValue(), required=True, default=ir.MISSING, json_default=ir.MISSING)
                   for prop in needed if prop not in properties]
        title = name or _text(schema.get("title")) or ""
        return ir.Object(name=title, fields=tuple(fields), kind="dict", extra=extra, constraints=constraints)

    def _field(self, prop: str, sub: Any, required: bool) -> ir.Field:
        # a property's text documents the field, not its type (which may be a shared definition)
        node = self._read(sub, own_description=False)
        description = _text(sub.get("description")) if isinstance(sub, dict) else None
        if isinstance(sub, dict) and "default" in sub:
            default = copy.deepcopy(sub["default"])
            return ir.Field(prop, node, required=required, default=default,
                            json_default=copy.deepcopy(default), description=description)
        return ir.Field(prop, node, required=required, default=ir.MISSING, json_default=ir.MISSING,
                        description=description)

    # -- references ------------------------------------------------------------------------------
    def _reference(self, ref: str) -> ir.Node:
        if not ref.startswith("#"):
            return ir.AnyValue()  # remote documents are never fetched
        pointer = "#" + ref[1:]
        if pointer in self.reading:
            if self.reading[pointer] == self.containers:
                # back to a definition without entering an array or object: `A = A | int` or an alias
                # cycle. Such a reference adds no value (A means just int), and following it would
                # recurse forever without consuming any of the value
                return ir.Union(options=())
            done = self.done
            name = _pointer_name(pointer, self.root if pointer == "#" else None) or "Root"
            return ir.Ref(name=name, target=lambda: done[pointer])
        if pointer in self.done:
            return self.done[pointer]
        target = self._resolve(pointer)
        if target is _UNRESOLVED:
            return ir.AnyValue()
        return self.read(target, pointer=pointer)

    def _resolve(self, pointer: str) -> Any:
        if pointer == "#":
            return self.root
        if not pointer.startswith("#/"):
            return _UNRESOLVED  # an `$anchor` name: not supported
        parts = [_segment(part) for part in pointer[2:].split("/")]
        current: Any = self.root
        for part in parts:
            if isinstance(current, dict) and part in current:
                current = current[part]
            elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
                current = current[int(part)]
            else:
                current = _UNRESOLVED
                break
        if current is _UNRESOLVED and len(parts) == 2 and parts[0] in ("$defs", "definitions"):
            current = self.defs.get(parts[1], _UNRESOLVED)
        return current


_UNRESOLVED = object()


def _pointer_name(pointer: str, schema: Any) -> str:
    """The definition name a pointer ends in (`#/$defs/Node` -> `Node`); for `#`, the schema's title."""
    if pointer == "#":
        return _text(schema.get("title")) or "" if isinstance(schema, dict) else ""
    return _segment(pointer.rsplit("/", 1)[-1])


def _segment(part: str) -> str:
    """One JSON-pointer segment of a URI fragment: percent-decoded, then `~1` -> `/` and `~0` -> `~`."""
    if "%" in part:
        from urllib.parse import unquote  # here: `import nbtools` need not load urllib

        part = unquote(part)
    return part.replace("~1", "/").replace("~0", "~")


def json_types(schema: dict) -> list[str] | None:
    """The `type` keyword as a list of JSON type names (None when absent or unusable)."""
    raw = _options(schema, "type")
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list):
        return None
    known = [item for item in raw if isinstance(item, str) and item in ir.JSON_KINDS]
    if not known:
        return None
    if "integer" in known and "number" in known:  # integers are numbers: "number" alone says it
        known.remove("integer")
    return list(dict.fromkeys(known))


def _choice(values: list, types: list[str] | None) -> ir.Node:
    """`enum`/`const`: a Literal of the scalar values (filtered by `type`), `| None` if null is allowed."""
    scalars = []
    for value in values:
        if value is not None and not isinstance(value, (str, int, float, bool)):
            return ir.AnyValue()  # object/array values: no Literal can hold them (looser)
        if types is None or _json_type_matches(value, types):
            scalars.append(value)
    has_null = None in scalars
    scalars = [value for value in scalars if value is not None]
    if not scalars:
        return ir.NoneValue() if has_null else ir.Union(options=())
    node: ir.Node = ir.Literal(values=_dedupe(scalars))
    return _or_null(node) if has_null else node


def _dedupe(values: list) -> tuple:
    """Unique values in order, keeping 1, 1.0 and True apart (they are different JSON values)."""
    seen: set = set()
    out = []
    for value in values:
        marker = (type(value), value)
        if marker not in seen:
            seen.add(marker)
            out.append(value)
    return tuple(out)


def _json_type_matches(value: Any, types: list[str]) -> bool:
    if value is None:
        return "null" in types
    if isinstance(value, bool):
        return "boolean" in types
    if isinstance(value, int):
        return "integer" in types or "number" in types
    if isinstance(value, float):
        return "number" in types or ("integer" in types and value.is_integer())
    return "string" in types


def _or_null(node: ir.Node) -> ir.Node:
    """`node | None` (a no-op when null is already accepted)."""
    if isinstance(node, (ir.NoneValue, ir.AnyValue)):
        return node
    if isinstance(node, ir.Union):
        if any(isinstance(option, ir.NoneValue) for option in node.options):
            return node
        return dataclasses.replace(node, options=(*node.options, ir.NoneValue()))
    return ir.Union(options=(node, ir.NoneValue()))


def _constraints(schema: dict, keywords: tuple[str, ...]) -> ir.Constraints:
    """The validation keywords of one family present in `schema`, as hashable (keyword, value) pairs."""
    pairs: list[tuple[str, Any]] = []
    for word in keywords:
        if word not in schema:
            continue
        value = schema[word]
        if word == "pattern":
            if isinstance(value, str):
                pairs.append((word, value))
            continue
        if word == "uniqueItems":
            if value is True:
                pairs.append((word, True))
            continue
        if word in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(value, bool):
            continue  # draft-4 boolean form: folded into minimum/maximum below
        number = _number(value)
        if number is None:
            continue
        if word in ("minimum", "maximum"):
            exclusive = "exclusiveMinimum" if word == "minimum" else "exclusiveMaximum"
            if schema.get(exclusive) is True:
                word = exclusive
        pairs.append((word, number))
    return tuple(pairs)


def _number(value: Any) -> int | float | None:
    """A numeric keyword value (None when it is not a number)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
