"""Python annotations -> the intermediate form (`ir`).

This is the one place that turns Python types into nodes (which kind of record a class is and what
its fields are comes from `records`). It knows nothing about JSON Schema keywords beyond the few
validation constraints carried on nodes, and nothing about providers.

Hand-written on purpose: the type → schema mapping is the product (pydantic cannot be a dependency,
refuses `typing.TypedDict` on 3.11, and extracts no descriptions).
"""

from __future__ import annotations

import collections
import collections.abc as cabc
import dataclasses
import datetime as dt
import decimal
import enum
import inspect
import pathlib
import re
import typing
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from . import ir
from .constraints import metadata_constraints, with_constraints
from .errors import SchemaError
from .records import (Factory, class_docstring, is_namedtuple, is_pydantic_model, is_read_only, is_typeddict,
                      record_fields, record_kind)
from .values import duration_text, to_json

_NoneType = type(None)
_JSON_SCALARS = (str, int, float, bool, _NoneType)

# str-borne scalar types: python type -> (format, contentEncoding, extra constraints)
_STRING_TYPES: dict[type, tuple[str | None, str | None, ir.Constraints]] = {
    dt.datetime: ("date-time", None, ()),
    dt.date: ("date", None, ()),
    dt.time: ("time", None, ()),
    dt.timedelta: ("duration", None, ()),
    uuid.UUID: ("uuid", None, ()),
    decimal.Decimal: (None, None, (("pattern", r"^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$"),)),
    pathlib.Path: ("path", None, ()),
    pathlib.PurePath: ("path", None, ()),
    pathlib.PurePosixPath: ("path", None, ()),
    pathlib.PosixPath: ("path", None, ()),
    bytes: (None, "base64", ()),
    bytearray: (None, "base64", ()),
    re.Pattern: ("regex", None, ()),  # a regular expression as text, compiled on the way in
}

_ARRAY_ORIGINS: dict[Any, type] = {
    list: list, cabc.Sequence: list, cabc.MutableSequence: list, cabc.Iterable: list,
    cabc.Collection: list, cabc.Iterator: list, cabc.Reversible: list,
    set: set, cabc.Set: set, cabc.MutableSet: set, frozenset: frozenset,
}
_MAP_ORIGINS = (dict, cabc.Mapping, cabc.MutableMapping)

# typing constructs whose bare (unsubscripted) forms mean "any"
_ANY_LIKE = (Any, object)


@dataclass
class Context:
    """State while converting one callable's annotations.

    Fields:
        function: the function's name (for error messages).
        parameter: the parameter being converted (for error messages).
        building: classes being converted right now -> their `$defs` name (to detect recursion).
        done: finished Objects by `$defs` name (targets of Refs).
        recursive: `$defs` names that are referenced recursively (rendered via `$defs`).
        field_docs: function `cls -> {field: description}` (docs module), injected to keep this
            module free of docstring parsing.
        self_type: what `typing.Self` means here (the class of a bound method's instance), or None.
    """

    function: str | None = None
    parameter: str | None = None
    building: dict[Any, str] = field(default_factory=dict)
    done: dict[str, ir.Node] = field(default_factory=dict)
    recursive: set[str] = field(default_factory=set)
    names: dict[str, Any] = field(default_factory=dict)
    field_docs: Callable[[type], dict[str, str]] | None = None
    self_type: type | None = None

    def fail(self, reason: str) -> SchemaError:
        return SchemaError(self.function, self.parameter, reason)

    def def_name(self, cls: type, key: Any = None) -> str:
        """A `$defs` name for `cls` (`key`: what identifies it, e.g. `(cls, type arguments)` for a
        parameterised generic; default `cls`), unique within this context."""
        key = cls if key is None else key
        base = getattr(cls, "__name__", "Model")
        candidate, counter = base, 2
        while candidate in self.names and self.names[candidate] != key:
            candidate, counter = f"{base}{counter}", counter + 1
        self.names[candidate] = key
        return candidate


def type_name(tp: Any) -> str:
    """A short readable name of an annotation, for descriptions ("list[str]", "Point | None")."""
    if tp is _NoneType or tp is None:
        return "None"
    if isinstance(tp, str):
        return tp
    if isinstance(tp, list):  # the parameter list of Callable[[int, str], bool]
        return "[" + ", ".join(type_name(arg) for arg in tp) + "]"
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return type_name(typing.get_args(tp)[0])
    if origin in (typing.Union, _UnionType):
        return " | ".join(type_name(arg) for arg in typing.get_args(tp))
    if origin is typing.Literal:
        return "Literal[" + ", ".join(repr(arg) for arg in typing.get_args(tp)) + "]"
    if origin is not None:
        args = typing.get_args(tp)
        base = getattr(origin, "__name__", str(origin))
        if not args:
            return base
        return base + "[" + ", ".join("..." if arg is Ellipsis else type_name(arg) for arg in args) + "]"
    if tp is Any:
        return "Any"
    return getattr(tp, "__name__", str(tp).replace("typing.", ""))


_UnionType = type(int | str)
_SELF: Any = getattr(typing, "Self", None)  # typing_extensions.Self is this same object


def to_ir(tp: Any, ctx: Context | None = None) -> ir.Node:
    """The intermediate node of annotation `tp` (already resolved: no string annotations)."""
    ctx = ctx or Context()
    return _convert(tp, ctx)


def _convert(tp: Any, ctx: Context) -> ir.Node:
    if tp in _ANY_LIKE:
        return ir.AnyValue()
    if tp is None or tp is _NoneType:
        return ir.NoneValue()
    if tp is _SELF and _SELF is not None:
        if ctx.self_type is None:
            raise ctx.fail("typing.Self names no class here; annotate with the class itself")
        return _convert(ctx.self_type, ctx)
    if isinstance(tp, (str, typing.ForwardRef)):
        raise ctx.fail(f"the annotation {type_name(tp)!r} could not be resolved to a type; "
                       "define it before the function or import it where the function is defined")

    origin = typing.get_origin(tp)
    if origin is not None:
        return _convert_generic(tp, origin, ctx)

    if isinstance(tp, typing.TypeVar):
        if tp.__bound__ is not None:
            return _convert(tp.__bound__, ctx)
        if tp.__constraints__:
            return ir.Union(options=tuple(_convert(arg, ctx) for arg in tp.__constraints__))
        return ir.AnyValue()
    supertype = getattr(tp, "__supertype__", None)  # typing.NewType
    if supertype is not None:
        return _convert(supertype, ctx)
    if not isinstance(tp, type):
        raise ctx.fail(f"the annotation {tp!r} is not a type nbtools can describe")

    # scalars (bool before int; Enum before its mixed-in scalar)
    if issubclass(tp, enum.Enum):
        return _convert_enum(tp, ctx)
    if tp is bool:
        return ir.Bool()
    if issubclass(tp, int) and tp is not bool:
        return ir.Int(py=tp)
    if issubclass(tp, float):
        return ir.Float()
    if issubclass(tp, str):
        return ir.Str()
    for string_type, (fmt, encoding, constraints) in _STRING_TYPES.items():
        if tp is string_type or (issubclass(tp, string_type) and tp is not bool):
            py = bytes if string_type in (bytes, bytearray) else string_type
            if string_type in (pathlib.PurePath, pathlib.PurePosixPath, pathlib.PosixPath):
                py = pathlib.Path if string_type is not pathlib.PurePath else pathlib.PurePath
            return ir.Str(py=py, format=fmt, encoding=encoding, constraints=constraints)

    # containers written bare (`list`, `dict`, `tuple`)
    if tp in _ARRAY_ORIGINS:
        return ir.Array(item=ir.AnyValue(), py=_ARRAY_ORIGINS[tp])
    if tp is tuple:
        return ir.Array(item=ir.AnyValue(), py=tuple)
    if tp in _MAP_ORIGINS:
        return ir.Map(key=ir.Str(), value=ir.AnyValue())

    return _convert_class(tp, ctx)


def _convert_generic(tp: Any, origin: Any, ctx: Context) -> ir.Node:
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        return _convert_annotated(args[0], args[1:], ctx)
    if origin in (typing.Union, _UnionType):
        return _convert_union(args, ctx)
    if origin is typing.Literal:
        return _convert_literal(args, ctx)
    if origin in (typing.Required, typing.NotRequired, typing.ClassVar, typing.Final) or is_read_only(origin):
        return _convert(args[0], ctx)
    if origin is re.Pattern:  # `re.Pattern[str]`
        if args and args[0] is not str:
            raise ctx.fail(f"the annotation {type_name(tp)} has no JSON form (JSON text is str, not bytes)")
        return _convert(re.Pattern, ctx)
    if origin in _ARRAY_ORIGINS:
        item = _convert(args[0], ctx) if args else ir.AnyValue()
        py = _ARRAY_ORIGINS[origin]
        constraints = (("uniqueItems", True),) if py in (set, frozenset) else ()
        return ir.Array(item=item, py=py, constraints=constraints)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return ir.Array(item=_convert(args[0], ctx), py=tuple)
        if args == ((),):  # tuple[()]
            return ir.Tuple(items=())
        return ir.Tuple(items=tuple(_convert(arg, ctx) for arg in args))
    if origin in _MAP_ORIGINS or origin is collections.defaultdict or origin is collections.OrderedDict:
        key = _convert(args[0], ctx) if args else ir.Str()
        value = _convert(args[1], ctx) if len(args) > 1 else ir.AnyValue()
        if not _is_key_node(key):
            raise ctx.fail(f"mapping keys of type {type_name(args[0])} have no JSON form; "
                           "JSON object keys are strings (use str, int, an Enum or a Literal)")
        return ir.Map(key=key, value=value)
    if origin is type:
        raise ctx.fail(f"the annotation {type_name(tp)} (a class) has no JSON form")
    if isinstance(origin, type) and (hasattr(origin, "__dataclass_fields__") or record_kind(origin) is not None):
        # a parameterised generic record (`Box[int]`): its fields with the type variables bound
        parameters = getattr(origin, "__parameters__", ())
        bindings = dict(zip(parameters, args)) if len(parameters) == len(args) else {}
        return _convert_class(origin, ctx, bindings)
    if origin in (cabc.Callable, cabc.Awaitable, cabc.Coroutine, cabc.Generator, cabc.AsyncIterator):
        raise ctx.fail(f"the annotation {type_name(tp)} has no JSON form (a model cannot send one)")
    raise ctx.fail(f"the annotation {type_name(tp)} is not a type nbtools can describe")


def _convert_union(args: tuple[Any, ...], ctx: Context) -> ir.Node:
    """`X | Y | None`, flattened, with one written description lifted onto the union.

    `Optional[Annotated[int, "doc"]]` (also what `x: Annotated[int, "doc"] = None` becomes) must
    describe the parameter, not one branch of its `anyOf`; and `Optional[Annotated[Optional[str],
    "doc"]]` must not list null twice.
    """
    options: list[ir.Node] = []
    descriptions: list[str] = []
    for arg in args:
        node = _convert(arg, ctx)
        if isinstance(node, ir.Union):
            if node.description:
                descriptions.append(node.description)
            members: tuple[ir.Node, ...] = node.options
        else:
            members = (node,)
        for option in members:
            if option not in options:
                options.append(option)
    if any(type(option) is ir.AnyValue and not option.constraints for option in options):
        # `Optional[Any]`, `Any | int`: any value already, an anyOf around `{}` says nothing more
        described = [option.description for option in options if option.description] + descriptions
        return ir.AnyValue(description=described[0] if len(described) == 1 else None)
    if any(isinstance(option, ir.Literal) and None in option.values for option in options):
        options = [option for option in options if not isinstance(option, ir.NoneValue)]  # null listed already
    non_null = [option for option in options if not isinstance(option, ir.NoneValue)]
    if not descriptions and len(non_null) == 1 and written_description(non_null[0]) \
            and all(not option.description for option in options if option is not non_null[0]):
        descriptions.append(non_null[0].description)  # type: ignore[arg-type]
        options[options.index(non_null[0])] = dataclasses.replace(non_null[0], description=None)
    result = options[0] if len(options) == 1 else ir.Union(options=tuple(options))
    if len(descriptions) == 1:
        result = dataclasses.replace(result, description=descriptions[0])
    return result


def _is_key_node(node: ir.Node) -> bool:
    if isinstance(node, ir.Str):
        return node.py is str
    if isinstance(node, ir.Int):
        return True
    if isinstance(node, (ir.Enum, ir.Literal)):
        return all(isinstance(value, (str, int)) and not isinstance(value, bool) for value in node.values)
    return False


def _convert_annotated(base: Any, metadata: tuple[Any, ...], ctx: Context) -> ir.Node:
    node = _convert(base, ctx)
    description: str | None = None
    constraints: dict[str, Any] = {}
    for meta in metadata:
        if isinstance(meta, str):
            description = meta
            continue
        # pydantic FieldInfo (duck-typed: never import pydantic here); PEP 727 `Doc("...")`
        meta_description = getattr(meta, "description", None)
        if not isinstance(meta_description, str) and type(meta).__name__ == "Doc":
            meta_description = getattr(meta, "documentation", None)
        if isinstance(meta_description, str):
            description = meta_description
        constraints.update(metadata_constraints(meta))
    if constraints:
        node = with_constraints(node, tuple(constraints.items()))
    return dataclasses.replace(node, description=description) if description is not None else node



def _convert_literal(values: tuple[Any, ...], ctx: Context) -> ir.Node:
    flat: list[Any] = []
    for value in values:
        if typing.get_origin(value) is typing.Literal:  # nested Literal
            flat.extend(typing.get_args(value))
        else:
            flat.append(value)
    if flat and all(isinstance(value, enum.Enum) for value in flat) and len({type(v) for v in flat}) == 1:
        cls = type(flat[0])
        return ir.Enum(cls=cls, values=tuple(_enum_value(member, ctx) for member in flat))
    for value in flat:
        if not isinstance(value, _JSON_SCALARS):
            raise ctx.fail(f"Literal value {value!r} has no JSON form (use str, int, float, bool or None)")
    return ir.Literal(values=tuple(flat))


def _enum_value(member: enum.Enum, ctx: Context) -> Any:
    value = member.value
    if not isinstance(value, _JSON_SCALARS) or value is None:
        raise ctx.fail(f"enum {type(member).__name__} has the value {value!r} for {member.name}, "
                       "which has no JSON form (use str or int values)")
    return value


def _convert_enum(cls: type[enum.Enum], ctx: Context) -> ir.Node:
    values = tuple(_enum_value(member, ctx) for member in cls)
    return ir.Enum(cls=cls, values=values)


def class_hints(cls: type, ctx: Context, of: Any = None) -> dict[str, Any]:
    """Resolved annotations of `cls` (or of `of`, e.g. its `__init__`), naming the class on failure."""
    target = cls if of is None else of
    localns = {cls.__name__: cls}
    try:
        return typing.get_type_hints(target, localns=localns, include_extras=True)
    except Exception as error:  # NameError for an undefined forward reference, mostly
        raise ctx.fail(f"the annotations of {cls.__name__} could not be resolved ({error}); "
                       "define the names they use before using the class") from None


def _model_accepts_null(cls: type, ctx: Context) -> bool:
    """Whether pydantic model `cls` takes null as a value: a `RootModel` whose root type can be None.

    The strict renderer asks it of the model's JSON Schema (null kept as a value, not made "left
    out"), dispatch of this node (`ir.accepts_null`): the root type converted here answers for both.
    Recursion-safe: a model met again while its question is open answers no (a loop of references
    ends, as in `ir.accepts_null`)."""
    if not getattr(cls, "__pydantic_root_model__", False):
        return False  # a model's schema is an object: never null
    key = (_ROOT_QUESTION, cls)
    if key in ctx.building:
        return False
    root = getattr(cls, "model_fields", {}).get("root")
    annotation = getattr(root, "annotation", None)
    if annotation is None or isinstance(annotation, (str, typing.ForwardRef)):
        return False
    # a context of its own: the definitions met on the way must not change the caller's `$defs`
    inner = Context(function=ctx.function, parameter=ctx.parameter, self_type=ctx.self_type)
    open_questions = [asked for asked in ctx.building if isinstance(asked, tuple) and asked[:1] == (_ROOT_QUESTION,)]
    inner.building.update(dict.fromkeys([*open_questions, key], ""))
    try:
        return ir.accepts_null(_convert(annotation, inner))
    except SchemaError:  # a root with no JSON form: no schema is rendered for it either
        return False


_ROOT_QUESTION = "does the root accept null"  # the key `_model_accepts_null` marks its open questions with


def _convert_class(cls: type, ctx: Context, bindings: dict[Any, Any] | None = None) -> ir.Node:
    """A record class as an Object; `bindings` maps its type variables to the arguments given."""
    if is_pydantic_model(cls):
        return ir.Pydantic(cls=cls, nullable=_model_accepts_null(cls, ctx))
    key: Any = (cls, tuple(bindings.items())) if bindings else cls
    try:
        hash(key)
    except TypeError:  # an unhashable type argument: describe the class with its variables unbound
        key, bindings = cls, None
    if key in ctx.building:
        name = ctx.building[key]
        ctx.recursive.add(name)
        return ir.Ref(name=name, target=_Target(ctx.done, name))
    kind = record_kind(cls)
    if kind is None:
        raise ctx.fail(f"the annotation {cls.__module__}.{cls.__qualname__} has no JSON form "
                       "(use a dataclass, TypedDict, NamedTuple, pydantic model, or a class whose "
                       "__init__ has annotated parameters)")
    name = ctx.def_name(cls, key)
    if name in ctx.done:  # met before: the same node (a shared type is converted once, not once per use)
        return ctx.done[name]
    ctx.building[key] = name
    try:
        node = _convert_record(cls, kind, name, ctx, bindings or {})
    finally:
        del ctx.building[key]
    ctx.done[name] = node
    return node


class _Target:
    """Late-bound Ref target (filled when the Object being built is finished)."""

    __slots__ = ("done", "name")

    def __init__(self, done: dict[str, ir.Node], name: str):
        self.done, self.name = done, name

    def __call__(self) -> ir.Node:
        return self.done[self.name]


def _convert_record(cls: type, kind: str, name: str, ctx: Context, bindings: dict[Any, Any]) -> ir.Object:
    docs = ctx.field_docs(cls) if ctx.field_docs else {}
    hints = class_hints(cls, ctx, cls.__init__ if kind == "class" else None)
    outer_parameter = ctx.parameter
    fields: list[ir.Field] = []
    try:
        for item in record_fields(cls, kind, hints):
            ctx.parameter = f"{outer_parameter}.{item.name}" if outer_parameter else item.name
            annotation = _bound(item.annotation, bindings)
            if not item.required:
                annotation = optional_if_none(annotation, item.default)
            node = _convert(annotation, ctx)
            fields.append(ir.Field(name=item.name, type=node, required=item.required, default=item.default,
                                   json_default=ir.MISSING if item.required else json_default(item.default),
                                   description=written_description(node) or docs.get(item.name)))
    finally:
        ctx.parameter = outer_parameter
    return ir.Object(name=name, fields=tuple(fields), cls=cls, kind=kind, description=class_description(cls))


def _bound(annotation: Any, bindings: dict[Any, Any]) -> Any:
    """`annotation` with the type variables in `bindings` replaced (`list[T]` -> `list[int]`)."""
    if not bindings:
        return annotation
    if isinstance(annotation, typing.TypeVar):
        return bindings.get(annotation, annotation)
    free = getattr(annotation, "__parameters__", ())
    if free and typing.get_origin(annotation) is not None:
        try:
            return annotation[tuple(bindings.get(variable, variable) for variable in free)]
        except TypeError:
            return annotation
    return annotation


def optional_if_none(annotation: Any, default: Any) -> Any:
    """`x: int = None` means `int | None`: the one place this rule lives (parameters, `__init__`
    parameters, dataclass and NamedTuple fields all ask here)."""
    if default is None and annotation is not Any:
        return typing.Optional[annotation]
    return annotation


def written_description(node: ir.Node) -> str | None:
    """The description written on the annotation (`Annotated` text, `Field(description=...)`), else None.

    A record's class docstring also lands in `node.description`, but it describes the type, not this
    parameter or field: the parameter's own docs must outrank it, and it must not be copied beside a
    `$ref` (the definition already carries it).
    """
    if isinstance(node, ir.Object) and node.cls is not None and node.description == class_description(node.cls):
        return None
    return node.description


def class_description(cls: type) -> str | None:
    """What a record's docstring says about the type: its summary paragraph (the field sections
    belong to the fields); None when it has no docstring of its own (see `records.class_docstring`)."""
    doc = class_docstring(cls)
    if doc is None:
        return None
    return inspect.cleandoc(doc).split("\n\n", 1)[0].strip() or None


def json_default(value: Any) -> Any:
    """A Python default as JSON, or `ir.MISSING` when it has no faithful JSON form."""
    if isinstance(value, Factory):
        if value.factory in (list, dict, set, tuple, frozenset):
            value = value.factory()
        else:
            return ir.MISSING  # calling arbitrary factories at describe time could have effects
    return to_json(value, strict=True)


__all__ = ["Context", "to_ir", "type_name", "json_default", "duration_text", "class_hints", "written_description",
           "class_description", "optional_if_none", "metadata_constraints", "with_constraints",
           "is_typeddict", "is_namedtuple", "is_pydantic_model"]
