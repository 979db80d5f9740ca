"""The intermediate form (`ir`) -> JSON Schema (draft 2020-12), and `type_schema`; owns `$defs` naming.

Neutral output only: provider dialects are derived from it in `formats`. The way back (JSON Schema
-> ir) is `read.py` beside this module.
"""

from __future__ import annotations

from typing import Any

from .. import ir

_SCALAR_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null"}


# A schema that would be larger than this many nodes written out puts each type it uses more than
# once in `$defs` (a shared type nested 30 levels deep doubles the written-out schema per level);
# a smaller one writes its types out where they are used, which models read more easily.
INLINE_NODES = 1_000


class Renderer:
    """Renders nodes, collecting `$defs` for recursive Objects, pydantic models, and, when the schema
    would be large written out (`INLINE_NODES`), for Objects used more than once (`root`).

    `output`: the schema describes a value the function returns, as `values.to_json` writes it
    (a pydantic model dumped by field name, in its serialization form), not one a model sends.
    """

    def __init__(self, recursive: set[str] | frozenset[str] = frozenset(), output: bool = False):
        self.recursive = recursive
        self.output = output
        self.defs: dict[str, dict] = {}
        self.shared: set[str] = set()  # names of Objects used more than once (see `root`)

    def render(self, node: ir.Node) -> dict:
        schema = self._body(node)
        description = node.description
        if description and "$ref" in schema and isinstance(node, ir.Object):
            from ..typeinfo import written_description

            description = written_description(node)  # the class docstring is in `$defs` already
        if description and "description" not in schema:
            schema["description"] = description
        for keyword, value in node.constraints:
            schema[keyword] = value
        return schema

    def _body(self, node: ir.Node) -> dict:
        if isinstance(node, ir.AnyValue):
            return {}
        if isinstance(node, ir.NoneValue):
            return {"type": "null"}
        if isinstance(node, ir.Bool):
            return {"type": "boolean"}
        if isinstance(node, ir.Int):
            return {"type": "integer"}
        if isinstance(node, ir.Float):
            return {"type": "number"}
        if isinstance(node, ir.Str):
            schema: dict[str, Any] = {"type": "string"}
            if node.format:
                schema["format"] = node.format
            if node.encoding:
                schema["contentEncoding"] = node.encoding
            return schema
        if isinstance(node, (ir.Literal, ir.Enum)):
            return _enum_schema(node.values)
        if isinstance(node, ir.Array):
            return {"type": "array", "items": self.render(node.item)}
        if isinstance(node, ir.Tuple):
            count = len(node.items)
            if not count:
                return {"type": "array", "maxItems": 0}
            return {"type": "array", "prefixItems": [self.render(item) for item in node.items],
                    "minItems": count, "maxItems": count}
        if isinstance(node, ir.Map):
            schema = {"type": "object", "additionalProperties": self.render(node.value)}
            names = _key_names(node.key)
            if names:
                schema["propertyNames"] = names
            return schema
        if isinstance(node, ir.Object):
            by_reference = node.name in self.recursive or node.name in self.shared
            if by_reference and node.name not in self.defs:
                self.defs[node.name] = {}  # placeholder first: the body may refer to itself
                self.defs[node.name] = self.object_schema(node)
            if by_reference:
                return {"$ref": f"#/$defs/{node.name}"}
            return self.object_schema(node)
        if isinstance(node, ir.Union):
            return {"anyOf": [self.render(option) for option in node.options]}
        if isinstance(node, ir.Ref):
            if node.name not in self.defs:
                self.defs[node.name] = {}
                self.defs[node.name] = self.object_schema(node.target())
            return {"$ref": f"#/$defs/{node.name}"}
        if isinstance(node, ir.Pydantic):
            return self._pydantic(node.cls)
        raise TypeError(f"unknown node {node!r}")

    def object_schema(self, node: ir.Object) -> dict:
        properties: dict[str, dict] = {}
        required: list[str] = []
        for item in node.fields:
            prop = self.render(item.type)
            if item.description:
                prop["description"] = item.description
            if not item.required and item.json_default is not ir.MISSING:
                prop["default"] = item.json_default
            properties[item.name] = prop
            if item.required:
                required.append(item.name)
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        schema["additionalProperties"] = False if node.extra is None else self.render(node.extra)
        if node.description:
            schema["description"] = node.description
        return schema

    def _pydantic(self, cls: type) -> dict:
        try:
            if self.output:  # what `model_dump(mode="json", by_alias=True)` writes (as the mcp SDK, FastAPI)
                model_schema = cls.model_json_schema(ref_template="#/$defs/{model}", by_alias=True,
                                                     mode="serialization")
            else:
                model_schema = cls.model_json_schema(ref_template="#/$defs/{model}")
        except Exception as error:  # PydanticInvalidForJsonSchema (arbitrary types), and the like
            from ..errors import SchemaError

            raise SchemaError(None, None, f"the pydantic model {cls.__name__} has no JSON Schema "
                              f"({type(error).__name__}: {str(error).splitlines()[0]}); give its fields "
                              "JSON types, or a `WithJsonSchema` annotation") from None
        defs = model_schema.pop("$defs", {})
        # pydantic names its $defs after class names, which may collide with our recursive records
        # or with another model's different class of the same name: rename those, never overwrite
        taken = set(self.defs) | set(self.recursive) | self.shared
        renames: dict[str, str] = {}
        for name, definition in defs.items():
            if name in self.defs and name not in self.recursive and self.defs[name] == definition:
                continue  # the same model reached twice
            if name not in taken:
                taken.add(name)
                continue
            counter = 2
            while f"{name}{counter}" in taken:
                counter += 1
            renames[name] = f"{name}{counter}"
            taken.add(renames[name])
        if renames:
            model_schema = _renamed_refs(model_schema, renames)
            defs = {renames.get(name, name): _renamed_refs(body, renames) for name, body in defs.items()}
        for name, definition in defs.items():
            self.defs.setdefault(name, definition)
        model_schema.pop("title", None)
        return model_schema

    def root(self, node: ir.Node) -> dict:
        """A top-level schema: the node's schema with `$defs` attached when any were needed."""
        if _written_size(node, {}) > INLINE_NODES:
            self.shared = _shared_objects(node) - {node.name if isinstance(node, ir.Object) else ""}
        schema = self.render(node)
        if self.defs:
            schema["$defs"] = dict(self.defs)
        return schema


def _written_size(node: ir.Node, sizes: dict[int, int]) -> int:
    """How many nodes `node` has written out (every use of a shared node counted), computed once per
    distinct node: linear time however large the result (Python's integers do not overflow)."""
    known = sizes.get(id(node))
    if known is None:
        sizes[id(node)] = 1  # while walking: a cycle through here adds one
        known = sizes[id(node)] = 1 + sum(_written_size(child, sizes) for child in ir.children(node))
    return known


def _shared_objects(root: ir.Node) -> set[str]:
    """Names of the classes' Objects reached more than once from `root` (each Object's inside is
    walked once: linear in the number of distinct nodes, however often they are shared)."""
    seen: set[int] = set()
    shared: set[str] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, ir.Object) and node.cls is not None and node.name:
            if id(node) in seen:
                shared.add(node.name)
                continue
            seen.add(id(node))
        elif id(node) in seen:
            continue
        elif isinstance(node, (ir.Array, ir.Tuple, ir.Map, ir.Union)):
            seen.add(id(node))
        stack.extend(ir.children(node))
    return shared


def _renamed_refs(schema: Any, renames: dict[str, str]) -> Any:
    """A copy of `schema` with `#/$defs/<old>` references pointing to the renamed definitions."""
    if isinstance(schema, dict):
        out = {key: _renamed_refs(value, renames) for key, value in schema.items()}
        ref = out.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in renames:
            out["$ref"] = "#/$defs/" + renames[ref[8:]]
        return out
    if isinstance(schema, list):
        return [_renamed_refs(item, renames) for item in schema]
    return schema


def _enum_schema(values: tuple[Any, ...]) -> dict:
    kinds = {_SCALAR_TYPES.get(type(value)) for value in values}
    schema: dict[str, Any] = {}
    if len(kinds) == 1 and None not in kinds:
        schema["type"] = kinds.pop()
    elif kinds <= {"integer", "number"}:
        schema["type"] = "number"
    schema["enum"] = list(values)
    return schema


def _key_names(key: ir.Node) -> dict | None:
    if isinstance(key, ir.Int):
        return {"pattern": r"^-?[0-9]+$"}
    if isinstance(key, (ir.Enum, ir.Literal)):
        return {"enum": [str(value) for value in key.values]}
    return None


def render_schema(node: ir.Node, recursive: set[str] | frozenset[str] = frozenset(), *,
                  output: bool = False) -> dict:
    """JSON Schema of one node (with `$defs` when needed); `output`: of a returned value (see `Renderer`)."""
    return Renderer(recursive, output).root(node)


def type_schema(tp: Any) -> dict:
    """JSON Schema (draft 2020-12) of one Python type, with `$defs` when it needs them.

    >>> type_schema(list[int])
    {'type': 'array', 'items': {'type': 'integer'}}
    """
    from ..docs.classes import field_docs
    from ..typeinfo import Context, to_ir

    ctx = Context(field_docs=field_docs)
    node = to_ir(tp, ctx)
    return render_schema(node, ctx.recursive)


__all__ = ["type_schema", "render_schema", "Renderer"]
