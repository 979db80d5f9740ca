"""The strict form of a value, read back: what OpenAI's and Anthropic's strict modes make a model send.

Strict rendering (`strict`) writes two things differently from the neutral schema; this module is
the one place that reads them back, wherever a type says so, so dispatch gets the neutral shape:

- a typed map (`dict[str, V]`, `Mapping`, `**kwargs: V`) as an array of `{"key", "value"}` pairs:
  `pairs_object` is the one rule turning those pairs into the object they stand for;
- an optional property as required-but-nullable (OpenAI): `null_means_absent` names the fields
  for which a null means "left out".

Dispatch's converters (`call.convert`, `call.plan`) apply them node by node. A pydantic model
validates its data itself, so `model_decoder` walks the model's JSON Schema (the very schema strict
rendering transformed) and applies the same two rules to the data before pydantic sees it; a plain
object passes unchanged. pydantic is never imported here: the model class arrives from the caller.
"""

from __future__ import annotations

from typing import Any, Callable

from .. import ir
from ..errors import SchemaError
from ..refusals import ConversionError, got, key_segment, key_text

Decoder = Callable[[Any, str], Any]
"""`decode(json_value, path) -> json_value` with the strict form read back; ConversionError on bad pairs."""

__all__ = ["pairs_object", "null_means_absent", "model_decoder", "strict_form_decoder", "Decoder"]


def null_means_absent(fields: tuple[ir.Field, ...]) -> frozenset[str]:
    """Optional fields that cannot hold null: a null for them means "left out" (the default applies).

    That is what OpenAI's strict mode makes a model send for an optional property (every property
    required, optional ones nullable); a null for a required field is still refused.
    """
    return frozenset(item.name for item in fields if not item.required and not ir.accepts_null(item.type))


def pairs_object(pairs: list, path: str, max_items: int) -> dict:
    """The object a map's strict form stands for: `[{"key": k, "value": v}, ...]` -> `{k: v, ...}`.

    Each item must be an object of exactly "key" and "value"; a key given twice is refused (an
    object cannot hold it twice either). Keys are converted by the map's key converter afterwards.
    """
    if len(pairs) > max_items:
        raise ConversionError(path, f"the array is too long: {len(pairs)} items, the limit is {max_items}")
    out: dict = {}
    for index, pair in enumerate(pairs):
        if type(pair) is not dict or len(pair) != 2 or "key" not in pair or "value" not in pair:
            error = ConversionError(path, 'expected an object or an array of {"key": ..., "value": ...} '
                                          f"pairs, got {got(pair)} as an item")
            error.segments.append(f"[{index}]")
            raise error
        key = pair["key"]
        try:
            hash(key)
        except TypeError:
            key = None  # a list or object as a key: the key converter refuses it below
        if key is None or isinstance(key, (bool, float)):
            error = ConversionError(path, f"a key must be a string, got {got(pair['key'])}")
            error.segments.append(f"[{index}]")
            raise error
        if key in out:
            error = ConversionError(path, f"the key {key_text(key)} is given twice; each key at most once")
            error.segments.append(f"[{index}]")
            raise error
        out[key] = pair["value"]
    return out


def model_decoder(cls: type, max_items: int) -> Decoder | None:
    """The decoder for the data of pydantic model `cls` (None: its schema has nothing to read back).

    Walks the model's own JSON Schema, the same call the renderer makes, read into the intermediate
    form; a model with no JSON Schema (or one too large to read) had no strict form rendered either.
    """
    try:
        schema = cls.model_json_schema(ref_template="#/$defs/{model}")  # type: ignore[attr-defined]
    except Exception:  # PydanticInvalidForJsonSchema and the like: the schema side refuses such a tool
        return None
    from ..schema.read import schema_to_ir  # the schema reader: only tools with pydantic models need it

    try:
        node = schema_to_ir(schema)
    except SchemaError:
        return None
    return strict_form_decoder(node, max_items)


def strict_form_decoder(node: ir.Node, max_items: int) -> Decoder | None:
    """A decoder reading the strict form back in JSON data of type `node` (None: nothing to read).

    Pairs become objects where `node` has a map (keys must be strings: the data is JSON for a
    validator that reads keys itself); a null for an optional, non-nullable object field is dropped.
    Everything else is passed through for the validator to judge.
    """
    return _Decoders(max_items).of(node)


class _Decoders:
    """Builds decoders; remembers the objects being built so recursive types end."""

    def __init__(self, max_items: int):
        self.max_items = max_items
        self.cells: dict[int, list[Decoder | None]] = {}

    def of(self, node: ir.Node) -> Decoder | None:
        if isinstance(node, ir.Ref):
            target = ir.target_of(node)
            return None if target is None else self.of(target)
        if isinstance(node, ir.Map):
            return self.map(node)
        if isinstance(node, ir.Object):
            return self.object(node)
        if isinstance(node, ir.Array):
            return self.array(node)
        if isinstance(node, ir.Tuple):
            return self.tuple(node)
        if isinstance(node, ir.Union):
            return self.union(node)
        return None  # scalars, free-form values: nothing to read back

    def map(self, node: ir.Map) -> Decoder:
        max_items = self.max_items
        value_of = self.of(node.value)

        def decode_map(value: Any, path: str) -> Any:
            if type(value) is list:
                value = pairs_object(value, path, max_items)
                for index, key in enumerate(value):
                    if type(key) is not str:
                        error = ConversionError(path, f"a key must be a string, got {got(key)}")
                        error.segments.append(f"[{index}]")
                        raise error
            if value_of is None or type(value) is not dict:
                return value
            return {key: _inside(value_of, item, path, key_segment(key)) for key, item in value.items()}

        return decode_map

    def object(self, node: ir.Object) -> Decoder | None:
        cell = self.cells.get(id(node))
        if cell is not None:  # a recursive reference back into this object
            return lambda value, path: cell[0](value, path) if cell[0] is not None else value
        cell = self.cells[id(node)] = [None]
        fields = {item.name: self.of(item.type) for item in node.fields}
        extra = self.of(node.extra) if node.extra is not None else None
        absent = null_means_absent(node.fields)
        decoders = {name: decode for name, decode in fields.items() if decode is not None}
        if not decoders and extra is None and not absent:
            return None

        named = tuple(decoders.items())

        def decode_object(value: Any, path: str) -> Any:
            if type(value) is not dict:
                return value
            out = None  # copied on the first change: the caller's data is never rewritten
            for key in absent:
                if key in value and value[key] is None:  # OpenAI strict's "left out": the default applies
                    if out is None:
                        out = dict(value)
                    del out[key]
            # only the fields that can hold a strict form are visited (a plain object costs little)
            for key, decode in named:
                item = value.get(key)
                if item is not None:
                    try:
                        new = decode(item, path)
                    except ConversionError as error:
                        error.segments.append(key_segment(key))
                        raise
                    if new is not item:
                        if out is None:
                            out = dict(value)
                        out[key] = new
            if extra is not None:
                for key, item in value.items():
                    if key not in fields:
                        new = _inside(extra, item, path, key_segment(key))
                        if new is not item:
                            if out is None:
                                out = dict(value)
                            out[key] = new
            return value if out is None else out

        cell[0] = decode_object
        return decode_object

    def array(self, node: ir.Array) -> Decoder | None:
        item_of = self.of(node.item)
        if item_of is None:
            return None

        def decode_array(value: Any, path: str) -> Any:
            if type(value) is not list:
                return value
            out = [_inside(item_of, item, path, f"[{index}]") for index, item in enumerate(value)]
            return value if all(new is item for new, item in zip(out, value)) else out

        return decode_array

    def tuple(self, node: ir.Tuple) -> Decoder | None:
        items = [self.of(item) for item in node.items]
        if not any(items):
            return None

        def decode_tuple(value: Any, path: str) -> Any:
            if type(value) is not list:
                return value
            return [item if index >= len(items) or items[index] is None
                    else _inside(items[index], item, path, f"[{index}]")  # type: ignore[misc]
                    for index, item in enumerate(value)]

        return decode_tuple

    def union(self, node: ir.Union) -> Decoder | None:
        options = [(_target(option), self.of(option)) for option in node.options]
        if not any(decode for _, decode in options):
            return None
        # real arrays first, then maps (in their pair form), as the union converter orders them
        arrays = [(option, decode) for option, decode in options
                  if not isinstance(option, ir.Map) and "array" in ir.accepted_kinds(option)]
        maps = [(option, decode) for option, decode in options if isinstance(option, ir.Map)]
        objects = [(option, decode) for option, decode in options if "object" in ir.accepted_kinds(option)]
        arrays_take_objects = any(_items_take_objects(option) for option, _ in arrays)

        def decode_union(value: Any, path: str) -> Any:
            if type(value) is list:
                if maps and (not arrays or (not arrays_take_objects and _looks_like_pairs(value))):
                    decode = maps[0][1]
                else:
                    decode = arrays[0][1] if arrays else None
            elif type(value) is dict and objects:
                decode = max(objects, key=lambda pair: _fit(pair[0], value))[1]  # the first best fit
            else:
                return value
            return value if decode is None else decode(value, path)

        return decode_union


def _inside(decode: Decoder, value: Any, path: str, segment: str) -> Any:
    """`decode(value)` for a value inside a container; an error gains the step to it."""
    try:
        return decode(value, path)
    except ConversionError as error:
        error.segments.append(segment)
        raise


def _target(node: ir.Node) -> ir.Node:
    return (ir.target_of(node) or node) if isinstance(node, ir.Ref) else node


def _items_take_objects(node: ir.Node) -> bool:
    """Whether an array option could hold `{"key", "value"}` objects (then it keeps a list of them)."""
    if isinstance(node, ir.Array):
        return "object" in ir.accepted_kinds(node.item)
    if isinstance(node, ir.Tuple):
        return any("object" in ir.accepted_kinds(item) for item in node.items)
    return True


def _looks_like_pairs(value: list) -> bool:
    return bool(value) and all(type(item) is dict and item.keys() == {"key", "value"} for item in value)


def _fit(node: ir.Node, value: dict) -> tuple[bool, bool, bool]:
    """How well an object option fits `value`'s keys: its constant fields (a tagged union's tag)
    agree, its required fields are present, every key is one of its fields. Maps fit any keys."""
    if not isinstance(node, ir.Object):
        return (True, True, False)
    fields = {item.name: item for item in node.fields}
    tags_agree = all(value[name] == item.type.values[0] for name, item in fields.items()
                     if name in value and isinstance(item.type, ir.Literal) and len(item.type.values) == 1)
    required = all(item.name in value for item in node.fields if item.required)
    return (tags_agree, required, all(key in fields for key in value))
