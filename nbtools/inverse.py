"""The inverse direction: a JSON-Schema tool definition -> intermediate form -> Python signature/function.

Three uses share one reader (`schema_to_ir`):

* `tool_from_schema` makes a `Tool` from a schema someone else wrote (an MCP server's tool, a
  definition loaded from JSON): calls are validated against the schema and passed on as JSON values.
* `schema2sig` gives the `inspect.Signature` a Python function with that interface would have.
* `mk_tool` builds that function: calling it binds the arguments like any function and calls
  `dispatch(tool_name, **arguments)` with the schema's own property names.

The reader never chooses a Python conversion: a string is `Str(py=str)` whatever its `format`, an object
with properties is `Object(kind="dict")`, so validated arguments stay plain JSON. Keywords it does not
understand are ignored, which can only make validation looser, never raise.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import keyword
import operator
import typing
import unicodedata
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import unquote

from . import ir
from .tool import Tool, normalise_hints

__all__ = ["schema_to_ir", "tool_from_schema", "schema2sig", "mk_tool", "read_tool_def", "ToolDef",
           "py_name", "MAX_SCHEMA_DEPTH", "MAX_SCHEMA_NODES"]

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
_JSON_TYPES = ("string", "integer", "number", "boolean", "null", "array", "object")


# ------------------------------------------------------------------------------------------------
# JSON Schema -> intermediate form
# ------------------------------------------------------------------------------------------------
def schema_to_ir(schema: dict | bool, defs: dict | None = None) -> ir.Node:
    """Read a JSON Schema into intermediate-form nodes, with no Python conversion attached.

    Understands draft 2020-12 and the dialects providers emit: `type` (also a list, also Gemini's
    upper-case names), `nullable: true`, `anyOf`/`oneOf`, a one-member `allOf`, `enum`/`const`,
    `$ref` into `$defs`/`definitions` (or any local JSON pointer, `#` included; a reference that
    closes a cycle becomes `ir.Ref`), `items`, `prefixItems` and the legacy list form of `items`,
    `properties`/`required`/`additionalProperties`, and numeric/string/array/object validation
    keywords (kept in `constraints`). `description` goes on the node, except a property's, which goes
    on its `ir.Field` together with its `default`.

    `defs` resolves references when `schema` is a fragment of a larger document: a mapping of
    definition name -> schema, consulted after the schema's own `$defs`/`definitions`.
    Unknown keywords and unresolvable references are ignored (looser validation, never an error).
    The one error is ValueError for a schema too large to use: nested more than `MAX_SCHEMA_DEPTH`
    levels, or expanding to more than `MAX_SCHEMA_NODES` nodes once its `$ref`s are followed (a
    schema from an MCP server must not be able to exhaust the stack or hang the process that
    reads it; every later stage walks the expanded form).
    """
    _check_json_depth(schema, "schema")
    return _Reader(schema, defs or {}).read(schema, pointer="#")


MAX_SCHEMA_DEPTH = 100
"""Deepest nesting of schemas inside schemas (through properties, items, anyOf, `$ref`...) read."""
MAX_SCHEMA_NODES = 100_000
"""Most nodes a schema may expand to when each `$ref` is replaced by its definition (cycles aside)."""


def _check_json_depth(value: Any, what: str) -> None:
    """ValueError when dicts/lists nest more than 2 * MAX_SCHEMA_DEPTH levels (checked without recursion,
    before anything recursive, even `copy.deepcopy`, touches the value)."""
    limit = 2 * MAX_SCHEMA_DEPTH  # a schema level is often two JSON levels ("properties" -> name)
    stack = [(value, 1)]
    while stack:
        current, depth = stack.pop()
        if depth > limit:
            raise ValueError(f"the {what} nests more than {limit} levels of objects/arrays; "
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
                raise ValueError(f"the schema nests more than {MAX_SCHEMA_DEPTH} levels of schemas "
                                 "(properties, items, anyOf, $ref chains)")
            node = self._read_body(schema, name)
        finally:
            self.depth -= 1
        if self._size(node) > MAX_SCHEMA_NODES:
            raise ValueError(f"the schema expands to more than {MAX_SCHEMA_NODES} nodes when its $refs are "
                             "followed (definitions used many times inside each other)")
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
            options = schema.get(key)
            if isinstance(options, list) and options:
                node = _union([self.read(option) for option in options])
                return _or_null(node) if schema.get("nullable") is True else node
        if "const" in schema:
            node = _choice([schema["const"]], None)
        elif isinstance(schema.get("enum"), list):
            node = _choice(schema["enum"], _types_of(schema))
        else:
            node = self._typed(schema, name)
        return _or_null(node) if schema.get("nullable") is True else node

    def _typed(self, schema: dict, name: str) -> ir.Node:
        types = _types_of(schema)
        if types is None:  # no `type`: infer from the keywords present, if they agree on one family
            families = {family for family, words in _FAMILY_KEYWORDS.items()
                        if any(word in schema for word in words)}
            if len(families) != 1:
                return ir.AnyValue()
            types = list(families)
        nodes = [self._one_type(json_type, schema, name) for json_type in types]
        return _union(nodes)

    def _one_type(self, json_type: str, schema: dict, name: str) -> ir.Node:
        if json_type == "string":
            return ir.Str(format=_text(schema.get("format")), encoding=_text(schema.get("contentEncoding")),
                          constraints=_constraints(schema, _STRING_KEYWORDS))
        if json_type == "integer":
            return ir.Int(constraints=_constraints(schema, _NUMBER_KEYWORDS))
        if json_type == "number":
            return ir.Float(constraints=_constraints(schema, _NUMBER_KEYWORDS))
        if json_type == "boolean":
            return ir.Bool()
        if json_type == "null":
            return ir.NoneValue()
        if json_type == "array":
            return self._array(schema)
        if json_type == "object":
            return self._object(schema, name)
        return ir.AnyValue()  # e.g. Gemini's TYPE_UNSPECIFIED

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
        return ir.Array(item=_union([*prefix_nodes, *tail]), constraints=constraints)

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
        fields = [self._field(prop, sub, prop in required) for prop, sub in properties.items()]
        # `required` may name keys without a property schema: they must be present, with any value
        fields += [ir.Field(prop, ir.AnyValue(), required=True, default=ir.MISSING, json_default=ir.MISSING)
                   for prop in dict.fromkeys(required) if prop not in properties]
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
        parts = [unquote(part).replace("~1", "/").replace("~0", "~") for part in pointer[2:].split("/")]
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
    return unquote(pointer.rsplit("/", 1)[-1]).replace("~1", "/").replace("~0", "~")


def _types_of(schema: dict) -> list[str] | None:
    """The `type` keyword as a list of lower-case JSON type names (None when absent or unusable)."""
    raw = schema.get("type")
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list):
        return None
    names = [item.lower() for item in raw if isinstance(item, str)]
    known = [item for item in names if item in _JSON_TYPES]
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


def _union(nodes: list[ir.Node]) -> ir.Node:
    """One node for "any of these": flattened, with duplicates removed; a single option stands alone."""
    flat: list[ir.Node] = []
    for node in nodes:
        if isinstance(node, ir.Union) and node.description is None and not node.constraints:
            flat.extend(node.options)
        else:
            flat.append(node)
    unique: list[ir.Node] = []
    for node in flat:
        if not any(_same(node, seen) for seen in unique):
            unique.append(node)
    if any(isinstance(node, ir.AnyValue) and node.description is None and not node.constraints
           for node in unique):
        return ir.AnyValue()
    if len(unique) == 1:
        return unique[0]
    return ir.Union(options=tuple(unique))


def _same(left: ir.Node, right: ir.Node) -> bool:
    try:
        return left == right
    except Exception:  # unhashable/odd defaults inside fields: treat as different
        return False


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
    """A numeric keyword value; Gemini's proto JSON writes int64 fields as strings ("2")."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            try:
                return float(value)
            except ValueError:
                return None
    return None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


# ------------------------------------------------------------------------------------------------
# JSON Schema -> Tool
# ------------------------------------------------------------------------------------------------
_TOOL_META = ("group", "hints", "strict", "returns", "returns_description")


def tool_from_schema(name: str, description: str | None, parameters: dict | None,
                     fn: Callable[..., Any] | None, **meta: Any) -> Tool:
    """A Tool for a schema someone else wrote: calls validate against `parameters`, then `fn(**arguments)`.

    Arguments keep their original property names (which need not be Python identifiers), and their
    values stay plain JSON. `meta`: group, hints, strict, returns (a JSON Schema), returns_description.
    Raises ValueError when the name is empty or `parameters` is not an object schema.
    """
    unknown = sorted(set(meta) - set(_TOOL_META))
    if unknown:
        raise TypeError(f"tool_from_schema: unknown option(s) {', '.join(unknown)}; "
                        f"expected {', '.join(_TOOL_META)}")
    if not isinstance(name, str) or not name:
        raise ValueError(f"tool_from_schema: the tool name must be a non-empty string, got {name!r}")
    parameters = _parameters_root(name, parameters)
    args = arguments_object(name, parameters)
    passing = tuple((field.name, "keyword") for field in args.fields)
    if args.extra is not None:
        passing += (("kwargs", "varkw"),)
    return Tool(
        name=name,
        description=description or "",
        parameters=parameters,
        fn=fn,
        returns=copy.deepcopy(meta.get("returns")),
        returns_description=meta.get("returns_description"),
        group=meta.get("group"),
        hints=normalise_hints(meta.get("hints")),
        strict=bool(meta.get("strict", False)),
        args=args,
        passing=passing,
        is_async=fn is not None and ir.is_async(fn),
    )


def _parameters_root(name: str, parameters: Any) -> dict:
    """A private copy of the parameters schema, checked to be an object schema, with `type` spelled out."""
    if parameters is None:
        return {"type": "object", "properties": {}}
    if not isinstance(parameters, dict):
        raise ValueError(f"tool {name!r}: parameters must be a JSON Schema object (a dict), "
                         f"got {type(parameters).__name__}")
    types = _types_of(parameters)
    if types is None and "$ref" not in parameters and "type" in parameters:
        raise ValueError(f"tool {name!r}: parameters must be a JSON Schema of type 'object', "
                         f"got type {parameters['type']!r}")
    if types is not None and types != ["object"]:
        raise ValueError(f"tool {name!r}: parameters must be a JSON Schema of type 'object', "
                         f"got type {parameters['type']!r}")
    _check_json_depth(parameters, f"parameters schema of tool {name!r}")
    copied = copy.deepcopy(parameters)
    if types is None and "$ref" not in copied:
        copied = {"type": "object", **copied}
    return copied


def arguments_object(name: str, parameters: dict) -> ir.Object:
    """The arguments object of tool `name` read from its parameters schema (dispatch uses it too).
    Raises ValueError naming the tool when the schema is not an object schema or too large to read."""
    try:
        node = schema_to_ir(parameters)
    except ValueError as error:
        raise ValueError(f"tool {name!r}: {error}") from None
    if isinstance(node, ir.Ref) and node.target is not None:
        node = node.target()
    if isinstance(node, ir.Map):
        return ir.Object(fields=(), kind="dict", extra=node.value, description=node.description)
    if not isinstance(node, ir.Object):
        raise ValueError(f"tool {name!r}: parameters must describe a JSON object with named properties; "
                         f"read it as {type(node).__name__}")
    return node


# ------------------------------------------------------------------------------------------------
# Tool definitions in any format
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ToolDef:
    """A tool definition read from any provider format.

    Fields:
        name: the tool's name exactly as given.
        description: its description ("" when absent).
        parameters: the JSON Schema of its arguments object.
    """

    name: str
    description: str
    parameters: dict


# Keys that hold the parameters schema, most specific first.
_PARAMETER_KEYS = ("inputSchema", "input_schema", "parametersJsonSchema", "parameters_json_schema",
                   "parameters")
_DEF_ATTRIBUTES = ("name", "description", "type", "function", *_PARAMETER_KEYS,
                   "functionDeclarations", "function_declarations")


def read_tool_def(tool_def: Any) -> ToolDef:
    """Name, description and parameter schema from a tool definition in any format nbtools emits.

    Accepts neutral `{"name","description","parameters"}`, OpenAI chat `{"type":"function",
    "function":{...}}`, OpenAI Responses (flat), Anthropic (`input_schema`), Gemini
    (`parametersJsonSchema`, or `parameters` in the OpenAPI dialect; a `functionDeclarations` list
    holding exactly one), MCP (`inputSchema`), and SDK objects of those (pydantic models such as
    `mcp.types.Tool`, read through `model_dump`). Raises ValueError naming the keys it found when
    the shape is not one of these.
    """
    data = _as_dict(tool_def)
    declarations = data.get("functionDeclarations", data.get("function_declarations"))
    if isinstance(declarations, list) and "name" not in data:
        if len(declarations) != 1:
            raise ValueError(f"tool definition holds {len(declarations)} function declarations; "
                             "pass them one at a time")
        data = _as_dict(declarations[0])
    if "name" not in data and "function" in data:
        data = _as_dict(data["function"])  # OpenAI chat nests the definition
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(_shape_error(data, "no 'name'"))
    kind = data.get("type")
    if isinstance(kind, str) and kind not in ("function", "custom"):
        raise ValueError(f"tool definition {name!r} has type {kind!r}: a provider's built-in tool "
                         "has no parameter schema to read")
    present = [key for key in _PARAMETER_KEYS if key in data]
    if present:
        parameters = data[present[0]]
    elif any(_looks_like_parameters(key) for key in data):
        raise ValueError(_shape_error(data, "no parameter schema under a known key"))
    else:
        parameters = None  # a definition without parameters takes no arguments
    parameters = _parameters_root(name, parameters)
    description = data.get("description")
    return ToolDef(name=name, description=description if isinstance(description, str) else "",
                   parameters=parameters)


def _looks_like_parameters(key: str) -> bool:
    """A key that was probably meant to hold the parameters (a typo, an unknown dialect)."""
    lowered = key.lower()
    if lowered.startswith(("output", "response")):  # MCP outputSchema, Gemini responseJsonSchema
        return False
    return any(word in lowered for word in ("schema", "param", "input", "arg"))


def _as_dict(value: Any) -> dict:
    if isinstance(value, dict):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            dumped = dump(by_alias=True, exclude_none=True, mode="json")
        except TypeError:
            dumped = dump()
        if isinstance(dumped, dict):
            return dumped
    found = {key: getattr(value, key) for key in _DEF_ATTRIBUTES
             if getattr(value, key, None) is not None}
    if found:
        return found
    raise ValueError(f"cannot read a tool definition from a {type(value).__name__} object "
                     f"(expected a dict or an object with name/description/parameters)")


def _shape_error(data: dict, problem: str) -> str:
    keys = ", ".join(repr(key) for key in data) or "none"
    return (f"unrecognised tool definition ({problem}); keys found: {keys}. Expected one of: "
            "neutral/Gemini {'name','parameters'}, OpenAI {'type':'function','function':{...}}, "
            "Anthropic {'name','input_schema'}, Gemini {'name','parametersJsonSchema'}, "
            "MCP {'name','inputSchema'}")


# ------------------------------------------------------------------------------------------------
# Tool definition -> signature -> function
# ------------------------------------------------------------------------------------------------
def py_name(name: str) -> str:
    """A Python identifier for a property or tool name: `first-name` -> `first_name`, `class` -> `class_`,
    `1x` -> `_1x`, `obj.fn` -> `obj_fn`."""
    # Python reads identifiers in NFKC form: `ﬁle=` in source is `file=`, so the name must be that form
    name = unicodedata.normalize("NFKC", name)
    chars = "".join(char if ("a" + char).isidentifier() else "_" for char in name) or "_"
    if not chars.isidentifier():  # starts with a digit (or another character only valid later)
        chars = "_" + chars
    if keyword.iskeyword(chars):
        chars += "_"
    return chars


@dataclass(frozen=True)
class _Param:
    """How one Python parameter maps back to one property."""

    py: str  # the Python parameter name
    prop: str  # the original property name
    required: bool  # the schema requires the key: always sent
    has_default: bool  # the Python parameter has a default (from the schema, or None)
    none_is_absent: bool  # passing None means "not given" (optional, no default, not nullable)


@dataclass(frozen=True)
class _Plan:
    definition: ToolDef
    func_name: str
    signature: inspect.Signature
    params: tuple[_Param, ...]
    varkw: str | None  # name of the **kwargs parameter (extra properties allowed), if any
    doc: str | None


def schema2sig(tool_def: Any) -> inspect.Signature:
    """The signature of a Python function with the interface of `tool_def` (any format; see `read_tool_def`).

    Required properties come first (no default), then optional ones with the schema's `default`, or
    None when it has none (annotated `T | None`); all positional-or-keyword. A `**kwargs` parameter
    is added only when the schema explicitly allows extra properties (`additionalProperties: true`
    or a schema). Annotations are real types: int, float, str, bool, None, Any, `list[T]`,
    `tuple[...]`, `dict[str, T]` for maps, `Literal[...]`, unions with `|`, and a `TypedDict` (with
    `NotRequired` keys and `Annotated` descriptions) for nested objects with named properties; a
    recursive reference is `dict[str, Any]`. Property names that are not identifiers are mapped
    (see `py_name`); two properties mapping to one name raise ValueError.
    """
    return _plan(tool_def).signature


def mk_tool(dispatch: Callable[..., Any], tool_def: Any) -> Callable[..., Any]:
    """A real Python function with the interface of `tool_def` that forwards to `dispatch`.

    Calling it binds the arguments like any function (TypeError for missing/unknown ones), then calls
    `dispatch(tool_name, **arguments)` with the original property names. Only what the schema needs
    is sent: arguments the caller gave, and required ones; optional arguments left out (or given as
    None when the schema does not accept null and has no default) are omitted so the other side
    applies its own defaults. No type checking happens here: the receiving side validates.
    If `dispatch` is a coroutine function, the result is an `async def` function.
    """
    plan = _plan(tool_def)
    tool_name = plan.definition.name
    signature = plan.signature
    label = plan.func_name

    def arguments_for(args: tuple, kwargs: dict) -> dict[str, Any]:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{label}(): {exc}") from None
        given = bound.arguments
        arguments: dict[str, Any] = {}
        for param in plan.params:
            if param.py in given:
                value = given[param.py]
                if value is None and param.none_is_absent:
                    continue
                arguments[param.prop] = value
            elif param.required and param.has_default:
                arguments[param.prop] = copy.deepcopy(signature.parameters[param.py].default)
        if plan.varkw is not None:
            for key, value in given.get(plan.varkw, {}).items():
                owner = next((param.py for param in plan.params if param.prop == key), None)
                if owner is not None:
                    raise TypeError(f"{label}(): property {key!r} is passed as {owner}=...")
                arguments[key] = value
        return arguments

    if ir.is_async(dispatch):
        async def tool_function(*args: Any, **kwargs: Any) -> Any:
            return await dispatch(tool_name, **arguments_for(args, kwargs))
    else:
        def tool_function(*args: Any, **kwargs: Any) -> Any:
            return dispatch(tool_name, **arguments_for(args, kwargs))

    tool_function.__name__ = plan.func_name
    tool_function.__qualname__ = plan.func_name
    tool_function.__doc__ = plan.doc
    tool_function.__signature__ = signature  # type: ignore[attr-defined]
    tool_function.__annotations__ = {name: param.annotation for name, param in signature.parameters.items()
                                     if param.annotation is not inspect.Parameter.empty}
    return tool_function


def _plan(tool_def: Any) -> _Plan:
    definition = read_tool_def(tool_def)
    args = arguments_object(definition.name, definition.parameters)
    func_name = py_name(definition.name)
    annotations = _Annotations(func_name)

    owners: dict[str, str] = {}
    for field in args.fields:
        py = py_name(field.name)
        if py in owners:
            raise ValueError(f"tool {definition.name!r}: properties {owners[py]!r} and {field.name!r} "
                             f"both map to the Python parameter name {py!r}")
        owners[py] = field.name

    without_default: list[inspect.Parameter] = []
    with_default: list[inspect.Parameter] = []
    params: list[_Param] = []
    doc_lines: list[tuple[str, str]] = []
    for field in args.fields:
        py = py_name(field.name)
        annotation = annotations.of(field.type, hint=py)
        has_json_default = field.json_default is not ir.MISSING
        nullable = ir.accepts_null(field.type)
        if has_json_default:
            default = field.json_default
        elif not field.required:
            default = None
            if not nullable:
                annotation = annotation | None if _can_or(annotation) else typing.Optional[annotation]
        else:
            default = inspect.Parameter.empty
        parameter = inspect.Parameter(py, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default,
                                      annotation=annotation)
        (without_default if default is inspect.Parameter.empty else with_default).append(parameter)
        params.append(_Param(py=py, prop=field.name, required=field.required,
                             has_default=default is not inspect.Parameter.empty,
                             none_is_absent=not field.required and not has_json_default and not nullable))
        if field.description:
            doc_lines.append((py, field.description))

    varkw = None
    ordered = without_default + with_default
    if args.extra is not None and _extra_declared(definition.parameters):
        varkw = "kwargs"
        while varkw in owners:
            varkw += "_"
        ordered.append(inspect.Parameter(varkw, inspect.Parameter.VAR_KEYWORD,
                                         annotation=annotations.of(args.extra, hint=varkw)))
    signature = inspect.Signature(ordered)
    return _Plan(definition=definition, func_name=func_name, signature=signature, params=tuple(params),
                 varkw=varkw, doc=_docstring(definition.description, doc_lines))


def _extra_declared(parameters: dict) -> bool:
    """Whether the root says extra properties are welcome (absent `additionalProperties` is not enough)."""
    additional = parameters.get("additionalProperties")
    return additional is True or isinstance(additional, dict)


def _docstring(description: str, params: list[tuple[str, str]]) -> str | None:
    """The description, then a Google-style `Args:` section for the documented parameters."""
    parts = [description.strip()] if description.strip() else []
    if params:
        lines = ["Args:"]
        for py, text in params:
            first, *rest = text.strip().splitlines() or [""]
            lines.append(f"    {py}: {first}")
            lines.extend(f"        {line.strip()}" if line.strip() else "" for line in rest)
        parts.append("\n".join(lines))
    return "\n\n".join(parts) or None


def _can_or(annotation: Any) -> bool:
    try:
        annotation | None
    except TypeError:
        return False
    return True


class _Annotations:
    """Python annotations for nodes; one TypedDict per object node, named after where it was found."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.typed_dicts: dict[int, Any] = {}

    def of(self, node: ir.Node, hint: str) -> Any:
        if isinstance(node, ir.AnyValue):
            return Any
        if isinstance(node, ir.NoneValue):
            return None
        if isinstance(node, ir.Bool):
            return bool
        if isinstance(node, ir.Int):
            return int
        if isinstance(node, ir.Float):
            return float
        if isinstance(node, ir.Str):
            return str
        if isinstance(node, (ir.Literal, ir.Enum)):
            return typing.Literal[node.values] if node.values else typing.Never
        if isinstance(node, ir.Array):
            return list[self.of(node.item, hint)]  # type: ignore[misc]
        if isinstance(node, ir.Tuple):
            return tuple[tuple(self.of(item, hint) for item in node.items)] if node.items else tuple[()]
        if isinstance(node, ir.Map):
            return dict[str, self.of(node.value, hint)]  # type: ignore[misc]
        if isinstance(node, ir.Object):
            return self._typed_dict(node, hint) if node.fields else dict[str, Any]
        if isinstance(node, ir.Union):
            return _union_annotation([self.of(option, hint) for option in node.options])
        if isinstance(node, ir.Ref):  # a cycle: stop at a plain dict (or Any for a recursive non-object)
            target = node.target() if callable(node.target) else None
            return dict[str, Any] if isinstance(target, ir.Object) else Any
        return Any

    def _typed_dict(self, node: ir.Object, hint: str) -> Any:
        known = self.typed_dicts.get(id(node))
        if known is not None:
            return known
        class_name = node.name if node.name.isidentifier() else _camel(self.prefix, hint)
        keys: dict[str, Any] = {}
        for field in node.fields:
            annotation = self.of(field.type, py_name(field.name))
            if field.description:
                annotation = typing.Annotated[annotation, field.description]
            keys[field.name] = annotation if field.required else typing.NotRequired[annotation]
        built = typing.TypedDict(class_name, keys)  # type: ignore[operator]
        if node.description:
            built.__doc__ = node.description
        self.typed_dicts[id(node)] = built
        return built


def _union_annotation(options: list[Any]) -> Any:
    if not options:
        return typing.Never
    if Any in options:
        return Any
    unique = list(dict.fromkeys(options))
    try:
        return functools.reduce(operator.or_, unique)
    except TypeError:
        return typing.Union[tuple(unique)]


def _camel(*words: str) -> str:
    parts = [piece for word in words for piece in word.replace("-", "_").split("_") if piece]
    name = "".join(piece[:1].upper() + piece[1:] for piece in parts) or "Object"
    return py_name(name)
