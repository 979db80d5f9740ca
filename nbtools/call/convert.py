"""The intermediate form -> converters: one validating closure per node, compiled once per Tool.

`Compiler.compile` looks the node's class up in `COMPILERS` (an explicit table: a node class with no
entry has no conversion) and wraps the result with the node's constraint checks. Scalars are built
in `scalars`; containers (arrays, tuples, maps, objects, unions, references, pydantic models) here,
recursively. Conversion follows a fixed list: a class is only ever built from validated values
through its own `__init__` (or pydantic's validation), never an annotation called on model data.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

from .. import ir
from ..errors import SchemaError
from ..policy import DEFAULT_LIMITS, Limits
from . import scalars
from .keywords import with_constraints
from .scalars import Converter
from ..formats.readback import array_options, model_decoder, null_means_absent, pairs_object
from ..shortening import short
from ..refusals import KEY_MAX_CHARS, ConversionError, describe, did_you_mean, got, key_segment, key_text, mismatch


def compile_converter(node: ir.Node, limits: Limits = DEFAULT_LIMITS) -> Converter:
    """A converter for `node`: `convert(json_value, path) -> python_value`.

    Raises `ConversionError` (with the path, what was expected and what arrived) for a value the
    node does not accept, and `SchemaError` at compile time for a node it cannot convert to.
    """
    return Compiler(limits).compile(node)


class Compiler:
    """Compiles nodes into closures; remembers Objects so recursive types (Ref) compile once."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.objects: dict[int, list[Converter | None]] = {}

    def compile(self, node: ir.Node) -> Converter:
        make = COMPILERS.get(type(node))
        if make is None:
            raise SchemaError(None, None, f"no conversion for the intermediate node {type(node).__name__}")
        convert = make(self, node)
        if type(node) is ir.Map:  # checks its constraints itself, on the object (also one given as pairs)
            return convert
        return with_constraints(convert, node.constraints) if node.constraints else convert

    # -- containers ----------------------------------------------------------------------------------
    def compile_array(self, node: ir.Array) -> Converter:
        max_items = self.limits.max_items
        item = self.compile(node.item)
        py = node.py
        identity = isinstance(node.item, ir.AnyValue) and not node.item.constraints

        def convert_array(value: Any, path: str) -> Any:
            if type(value) is not list and not isinstance(value, (list, tuple)):
                raise mismatch(node, value, path)
            if len(value) > max_items:
                raise ConversionError(path, f"the array is too long: {len(value)} items, the limit is {max_items}")
            if identity:  # free-form items: copies of their containers (scalars.fresh)
                items = [scalars.fresh(element) for element in value]
            else:
                try:
                    items = [item(element, path) for element in value]
                except ConversionError:
                    _locate_item(item, value, path)
                    raise
            if py is list:
                return items
            try:
                return py(items)
            except TypeError as error:  # a set of unhashable values
                raise ConversionError(path, f"the items cannot form a {py.__name__}: {error}") from None

        return convert_array

    def compile_tuple(self, node: ir.Tuple) -> Converter:
        items = [self.compile(item) for item in node.items]
        count = len(items)

        def convert_tuple(value: Any, path: str) -> tuple:
            if not isinstance(value, (list, tuple)):
                raise mismatch(node, value, path)
            if len(value) != count:
                raise ConversionError(path, f"expected an array of exactly {count} items, got {len(value)}")
            out = []
            for index, (convert, element) in enumerate(zip(items, value)):
                try:
                    out.append(convert(element, path))
                except ConversionError as error:
                    error.segments.append(f"[{index}]")
                    raise
            return tuple(out)

        return convert_tuple

    def compile_map(self, node: ir.Map) -> Converter:
        max_items = self.limits.max_items
        key_of = self.map_key(node.key)
        value_of = self.compile(node.value)

        def convert_map(value: Any, path: str) -> dict:
            if not isinstance(value, dict):
                if not isinstance(value, list):
                    raise mismatch(node, value, path)
                value = pairs_object(value, path, max_items)  # the strict form: [{"key", "value"}, ...]
            if len(value) > max_items:
                raise ConversionError(path, f"the object has too many keys: {len(value)}, the limit is {max_items}")
            out = {}
            for key, item in value.items():
                try:
                    converted_key = key_of(key, path)
                    out[converted_key] = value_of(item, path)
                except ConversionError as error:
                    error.segments.append(key_segment(key))
                    raise
            if len(out) != len(value):
                raise ConversionError(path, _collision(value, key_of, path))
            return out

        if node.constraints:
            checked = with_constraints(lambda value, path: value, node.constraints)
            unchecked = convert_map

            def convert_map(value: Any, path: str) -> dict:
                out = unchecked(value, path)
                checked(out, path)  # minProperties and the like count keys, also of pairs
                return out

        return convert_map

    def map_key(self, node: ir.Node) -> Converter:
        """Keys arrive as JSON strings; Int keys (and int-valued Enum/Literal keys) convert from digits."""
        if isinstance(node, ir.Str):
            inner = self.compile(node)

            def string_key(key: Any, path: str) -> Any:
                try:
                    return inner(key, path)
                except ConversionError as error:
                    raise ConversionError(path, f"key: {error.problem}") from None

            return string_key
        if isinstance(node, (ir.Int, ir.Enum, ir.Literal)):
            inner = self.compile(node)
            numeric = isinstance(node, ir.Int) or any(
                isinstance(value, int) and not isinstance(value, bool) for value in node.values)
            stringy = not isinstance(node, ir.Int) and any(isinstance(value, str) for value in node.values)

            def scalar_key(key: Any, path: str) -> Any:
                if not isinstance(key, str):  # an int key from a Python caller
                    return inner(key, path)
                if stringy:
                    try:
                        return inner(key, path)
                    except ConversionError:
                        pass
                if numeric and re.match(_CANONICAL_INT, key):
                    try:
                        number = int(key)
                    except ValueError:  # beyond Python's int/str digit limit: far out of any range
                        raise ConversionError(path, f"key: expected {describe(node)} within "
                                                    f"+-{self.limits.max_int}, got <{len(key)} digits>") from None
                    try:
                        return inner(number, path)
                    except ConversionError as error:
                        raise ConversionError(path, f"key: {error.problem}") from None
                digits = " (integers written in decimal digits, e.g. \"12\")" if numeric else ""
                raise ConversionError(path, f"key: expected {describe(node)}{digits}, got {got(key)}")

            return scalar_key
        raise SchemaError(None, None, f"mapping keys of kind {type(node).__name__} have no JSON form")

    def compile_object(self, node: ir.Object) -> Converter:
        cell: list[Converter | None] = [None]
        self.objects[id(node)] = cell
        convert = self.object_body(node)
        cell[0] = convert
        return convert

    def compile_arguments(self, node: ir.Object) -> Converter:
        """The converter of a Tool's arguments object (`call.plan`): an object converter worded for
        a call (argument names, "this tool takes: ..."), with `**kwargs` also taken as key/value
        pairs (strict mode), and the object's own constraints."""
        convert = self.object_body(node, arguments=True)
        return with_constraints(convert, node.constraints) if node.constraints else convert

    def object_body(self, node: ir.Object, arguments: bool = False) -> Converter:
        """An object's converter. `arguments`: the arguments object of a call, whose keys are
        argument names: a parameter's converter gets its name as its path (`it's`, not `["it's"]`),
        the words name arguments, and no class is built (the call passes the values)."""
        # name -> (converter, plain type): a plain int, str or bool field's value of exactly that
        # type within the limits is what its converter would return, so it is checked here
        # without the call (`scalars.passes_as_is`)
        fields = {item.name: (self.compile(item.type), scalars.passes_as_is(item.type)) for item in node.fields}
        high, max_chars = min(self.limits.max_int, scalars.SMALL_INT), self.limits.max_string
        low = -high
        required = tuple(item.name for item in node.fields if item.required)
        extra = self.compile(node.extra) if node.extra is not None else None
        build = None if arguments else _builder(node)
        field_count = len(fields)
        absent_if_null = null_means_absent(node.fields)
        max_items = self.limits.max_items
        pairs_key = _pairs_property(fields) if arguments and extra is not None else None
        if arguments:
            takes = ("this tool takes: " + ", ".join(fields) + (" (and other keys)" if extra is not None else "")
                     if fields else "this tool takes no arguments" if extra is None else "this tool takes any keys")
        else:
            allowed = ", ".join(fields) or "(none)"

        def unexpected(key: Any, path: str) -> ConversionError:
            if arguments:
                return ConversionError(short(str(key), KEY_MAX_CHARS), f"unexpected argument{did_you_mean(key, fields)}; {takes}")
            return ConversionError(path, f"unexpected key {key_text(key)}{did_you_mean(key, fields)}; allowed keys: {allowed}")

        def not_a_string(key: Any, path: str) -> ConversionError:
            if arguments:
                return ConversionError(str(key), f"argument names must be strings, got {got(key)}")
            return ConversionError(path, f"object keys must be strings, got {got(key)}")

        def missing(name: str, path: str) -> ConversionError:
            if arguments:
                return ConversionError(name, "missing required argument")
            error = ConversionError(path, "missing required key")
            error.segments.append(key_segment(name))
            return error

        def convert_object(value: Any, path: str) -> Any:
            if not isinstance(value, dict):
                raise mismatch(node, value, path)
            if len(value) > max_items:
                raise ConversionError(path, f"the object has too many keys: {len(value)}, the limit is {max_items}")
            out = {}
            pairs = None
            for key in value:  # keys, then a subscript: cheaper than .items() (no pair tuples)
                item = value[key]
                if item is None and key in absent_if_null:
                    continue
                try:
                    convert, plain = fields[key]
                except KeyError:  # not a named field (a subscript is cheaper than .get on the common path)
                    if extra is None:
                        raise unexpected(key, path) from None
                    if type(key) is not str:
                        raise not_a_string(key, path) from None
                    if key == pairs_key:  # **kwargs in strict form, unpacked once the named ones are in
                        pairs = item
                        continue
                    convert, plain = extra, None
                if type(item) is plain and (low <= item <= high if plain is int
                                            else plain is bool or len(item) <= max_chars):
                    out[key] = item
                    continue
                try:
                    out[key] = convert(item, key if arguments else path)
                except ConversionError as error:
                    if not arguments:
                        error.segments.append(key_segment(key))
                    raise
            if pairs is not None:
                _add_pairs(out, pairs, pairs_key, fields, extra, max_items)  # type: ignore[arg-type]
            if len(out) != field_count or extra is not None:
                for name in required:
                    if name not in out:
                        raise missing(name, path)
            return out if build is None else build(out, path)

        return convert_object

    def compile_ref(self, node: ir.Ref) -> Converter:
        target = ir.target_of(node)
        if target is None:
            raise SchemaError(None, None, f"the recursive reference {node.name!r} has no target")
        cell = self.objects.get(id(target))
        if cell is None:
            if isinstance(target, ir.Object):
                return self.compile(target)  # registers its own cell before compiling its fields
            # a recursive definition that is not an object (`A = list[A] | int` from a schema): the
            # references met while compiling it use this cell, filled once it is compiled
            cell = [None]
            self.objects[id(target)] = cell
            cell[0] = self.compile(target)
            return cell[0]

        def convert_ref(value: Any, path: str) -> Any:
            return cell[0](value, path)  # type: ignore[misc]  # filled once the Object is compiled

        return convert_ref

    def compile_union(self, node: ir.Union) -> Converter:
        options = [(option, self.compile(option)) for option in node.options]
        by_kind: dict[str, tuple[tuple[ir.Node, Converter], ...]] = {}
        for kind in ir.JSON_KINDS:
            # a number tries the option of its own kind first: `int | float` keeps 2.0 a float and
            # `float | int` keeps 2 an int (the order stays the author's otherwise)
            inexact = ir.Float if kind == "integer" else ir.Int if kind == "number" else None
            by_kind[kind] = tuple(sorted(((option, convert) for option, convert in options
                                          if kind in ir.accepted_kinds(option)),
                                         key=lambda pair: type(pair[0]) is inexact))
        arrays, maps = array_options(options)  # maps also take their strict form, key/value pairs
        by_kind["array"] = (*arrays, *maps)
        by_type = {cls: by_kind[kind] for cls, kind in ir.KIND_OF_TYPE.items()}

        def convert_union(value: Any, path: str) -> Any:
            candidates = by_type.get(type(value))
            if candidates is None:
                kind = ir.kind_of(value)
                candidates = by_kind[kind] if kind else ()
            if len(candidates) == 1:
                return candidates[0][1](value, path)
            failures: list[tuple[ir.Node, ConversionError]] = []
            for option, convert in candidates:
                try:
                    return convert(value, path)
                except ConversionError as error:
                    failures.append((option, error))
            if not failures:
                raise mismatch(node, value, path)
            details = "; ".join(
                f"as {describe(option)}: {(error.where() + ': ') if error.segments else ''}{error.problem}"
                for option, error in failures)
            raise ConversionError(path, f"expected {describe(node)}, got {got(value)} ({details})")

        return convert_union

    def compile_pydantic(self, node: ir.Pydantic) -> Converter:
        cls = node.cls
        if cls is None or not hasattr(cls, "model_validate_json"):
            raise SchemaError(None, None, f"{cls!r} is not a pydantic v2 model")

        # the strict form (maps as key/value pairs, null for a left-out field) read back along the
        # model's own schema, before pydantic, which knows neither
        decode = model_decoder(cls, self.limits.max_items)
        # a RootModel's JSON is its root's (a list, a string...): pydantic checks its kind
        needs_object = not getattr(cls, "__pydantic_root_model__", False)

        def convert_model(value: Any, path: str) -> Any:
            if decode is not None:
                value = decode(value, path)
            if needs_object and not isinstance(value, dict):
                raise mismatch(node, value, path)
            try:
                # JSON-mode strict validation: the same rules as ours (no "5" for an int, ISO text
                # for datetimes), with the model's own validators
                return cls.model_validate_json(json.dumps(value), strict=True)
            except Exception as error:
                if not hasattr(error, "errors"):
                    raise
                raise _pydantic_failure(error, path) from None

        return convert_model


def _pydantic_failure(error: Any, path: str) -> ConversionError:
    problems = error.errors(include_url=False)
    first = problems[0] if problems else {"loc": (), "msg": str(error)}
    failure = ConversionError(path, _pydantic_message(first))
    failure.segments = [f"[{step}]" if isinstance(step, int) else key_segment(step)
                        for step in reversed(tuple(first.get("loc", ())))]
    if len(problems) > 1:
        more = "; ".join(
            f"{'.'.join(str(step) for step in item.get('loc', ())) or '(root)'}: {_pydantic_message(item)}"
            for item in problems[1:4])
        failure.problem += f" (also: {more}{'; ...' if len(problems) > 4 else ''})"
    return failure


def _pydantic_message(item: dict) -> str:
    message = str(item.get("msg", "invalid value"))
    if "input" in item and item.get("type") not in ("missing",):
        return f"{message}, got {got(item['input'])}"
    return message


def _builder(node: ir.Object) -> Callable[[dict, str], Any] | None:
    """How to build the Python value of an object from its converted keys (None: keep the dict)."""
    kind, cls = node.kind, node.cls
    if kind in ("dict", "typeddict") or cls is None:
        return None
    if kind == "pydantic":
        def build_model(values: dict, path: str) -> Any:
            try:
                return cls.model_validate(values)
            except Exception as error:
                if not hasattr(error, "errors"):
                    raise
                raise _pydantic_failure(error, path) from None

        return build_model
    if kind in ("dataclass", "namedtuple", "class"):
        # the class was annotated by the tool's author and described field by field: it is built
        # through its own __init__ from validated values only
        def build_instance(values: dict, path: str) -> Any:
            try:
                return cls(**values)
            except Exception as error:
                raise ConversionError(path, f"could not build {cls.__name__}: "
                                            f"{type(error).__name__}: {short(str(error))}") from None

        return build_instance
    raise SchemaError(None, None, f"no conversion to objects of kind {kind!r}")


def _pairs_property(fields: dict) -> str | None:
    """The property carrying `**kwargs` as key/value pairs in strict mode (None when a field has its name)."""
    from ..formats.strict import PAIRS_PROPERTY  # only tools with **kwargs ask, once per plan

    return None if PAIRS_PROPERTY in fields else PAIRS_PROPERTY


def _add_pairs(out: dict, pairs: Any, where: str, fields: dict, extra: Converter, max_items: int) -> None:
    """Extra keyword arguments sent as `[{"key", "value"}, ...]` (strict mode), converted into `out`."""
    if not isinstance(pairs, list):
        raise ConversionError(where, f'expected an array of {{"key": ..., "value": ...}} pairs, got {got(pairs)}')
    for key, value in pairs_object(pairs, where, max_items).items():
        if type(key) is not str:
            raise ConversionError(where, f"argument names must be strings, got {got(key)}")
        if key in fields or key in out:
            raise ConversionError(where, f"the key {key!r} is given twice (also as a named argument or "
                                         "an extra key); each argument at most once")
        out[key] = extra(value, key)


def _locate_item(convert: Converter, items: Any, path: str) -> None:
    """After a list comprehension failed, find the failing index and add it to the error's path."""
    for index, element in enumerate(items):
        try:
            convert(element, path)
        except ConversionError as error:
            error.segments.append(f"[{index}]")
            raise


_CANONICAL_INT = r"(0|-?[1-9][0-9]*)\Z"  # ASCII digits only, as the schema's ^-?[0-9]+$ says (compiled on first use)


def _collision(value: dict, key_of: Converter, path: str) -> str:
    seen: dict[Any, Any] = {}
    for key in value:
        converted = key_of(key, path)
        if converted in seen:
            return (f"keys {key_text(seen[converted])} and {key_text(key)} mean the same key "
                    f"{short(repr(converted), KEY_MAX_CHARS)}")
        seen[converted] = key
    return "two keys mean the same key"


def _scalar(make: Callable[[Any, Limits], Converter]) -> Callable[[Compiler, Any], Converter]:
    return lambda compiler, node: make(node, compiler.limits)


COMPILERS: dict[type, Callable[[Compiler, Any], Converter]] = {
    ir.AnyValue: _scalar(scalars.any_value),
    ir.NoneValue: _scalar(scalars.none_value),
    ir.Bool: _scalar(scalars.boolean),
    ir.Int: _scalar(scalars.integer),
    ir.Float: _scalar(scalars.number),
    ir.Str: _scalar(scalars.string),
    ir.Literal: _scalar(scalars.literal),
    ir.Enum: _scalar(scalars.enum),
    ir.Array: Compiler.compile_array,
    ir.Tuple: Compiler.compile_tuple,
    ir.Map: Compiler.compile_map,
    ir.Object: Compiler.compile_object,
    ir.Ref: Compiler.compile_ref,
    ir.Union: Compiler.compile_union,
    ir.Pydantic: Compiler.compile_pydantic,
}
"""How each node class is compiled: `(compiler, node) -> Converter`."""
