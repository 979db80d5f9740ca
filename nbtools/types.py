"""Python annotations -> the intermediate form (`ir`).

This is the one place that inspects Python types. It knows nothing about JSON Schema keywords
beyond the few validation constraints carried on nodes, and nothing about providers.

Hand-written on purpose: the type → schema mapping is the product (pydantic cannot be a dependency,
refuses `typing.TypedDict` on 3.11, and extracts no descriptions).
"""

from __future__ import annotations

import collections.abc as cabc
import dataclasses
import datetime as dt
import decimal
import enum
import pathlib
import sys
import typing
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from . import ir
from .errors import SchemaError
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
}

_ARRAY_ORIGINS: dict[Any, type] = {
    list: list, cabc.Sequence: list, cabc.MutableSequence: list, cabc.Iterable: list,
    cabc.Collection: list, cabc.Iterator: list, cabc.Reversible: list,
    set: set, cabc.Set: set, cabc.MutableSet: set, frozenset: frozenset,
}
_MAP_ORIGINS = (dict, cabc.Mapping, cabc.MutableMapping)

# typing constructs whose bare (unsubscripted) forms mean "any"
_ANY_LIKE = (Any, object)

# annotated_types / pydantic metadata attribute -> JSON Schema keyword
_CONSTRAINT_ATTRS = {
    "gt": "exclusiveMinimum", "ge": "minimum", "lt": "exclusiveMaximum", "le": "maximum",
    "multiple_of": "multipleOf", "min_length": "minLength", "max_length": "maxLength",
    "pattern": "pattern",
}


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
    """

    function: str | None = None
    parameter: str | None = None
    building: dict[Any, str] = field(default_factory=dict)
    done: dict[str, ir.Node] = field(default_factory=dict)
    recursive: set[str] = field(default_factory=set)
    names: dict[str, Any] = field(default_factory=dict)
    field_docs: Callable[[type], dict[str, str]] | None = None

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


def to_ir(tp: Any, ctx: Context | None = None) -> ir.Node:
    """The intermediate node of annotation `tp` (already resolved: no string annotations)."""
    ctx = ctx or Context()
    return _convert(tp, ctx)


def _convert(tp: Any, ctx: Context) -> ir.Node:
    if tp is _EMPTY or tp in _ANY_LIKE:
        return ir.AnyValue()
    if tp is None or tp is _NoneType:
        return ir.NoneValue()
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


_EMPTY = object()  # stands for "no annotation" (callers pass inspect.Parameter.empty through `annotation_or_any`)


def _convert_generic(tp: Any, origin: Any, ctx: Context) -> ir.Node:
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        return _convert_annotated(args[0], args[1:], ctx)
    if origin in (typing.Union, _UnionType):
        return _convert_union(args, ctx)
    if origin is typing.Literal:
        return _convert_literal(args, ctx)
    if origin in (typing.Required, typing.NotRequired, typing.ClassVar, typing.Final):
        return _convert(args[0], ctx)
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
    if origin in _MAP_ORIGINS or origin is collections_defaultdict or origin is collections_ordereddict:
        key = _convert(args[0], ctx) if args else ir.Str()
        value = _convert(args[1], ctx) if len(args) > 1 else ir.AnyValue()
        if not _is_key_node(key):
            raise ctx.fail(f"mapping keys of type {type_name(args[0])} have no JSON form; "
                           "JSON object keys are strings (use str, int, an Enum or a Literal)")
        return ir.Map(key=key, value=value)
    if origin is type:
        raise ctx.fail(f"the annotation {type_name(tp)} (a class) has no JSON form")
    if isinstance(origin, type) and (hasattr(origin, "__dataclass_fields__") or is_typeddict(origin)
                                     or _is_namedtuple(origin) or _has_own_init(origin)):
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


import collections as _collections  # noqa: E402

collections_defaultdict = _collections.defaultdict
collections_ordereddict = _collections.OrderedDict


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


def metadata_constraints(meta: Any) -> ir.Constraints:
    """The validation keywords one `Annotated` metadata object carries (pydantic `Field(ge=1)`,
    annotated_types `Gt(0)`, `Len(1, 5)`, ...), written as for a string or a number: `minLength`
    and `maxLength` stand for any length until `with_constraints` sees what they apply to."""
    found: dict[str, Any] = {}
    for item in [meta, *getattr(meta, "metadata", ())]:
        for attr, keyword in _CONSTRAINT_ATTRS.items():
            value = getattr(item, attr, None)
            if value is not None and not callable(value):
                found[keyword] = value
    return tuple(found.items())


# A length bound means characters for a string, items for an array, keys for an object.
_LENGTH_KEYWORDS = {"minLength": ("minItems", "minProperties"), "maxLength": ("maxItems", "maxProperties")}
_NUMBER_KEYWORDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})


def _constraint_for(node: ir.Node, keyword: str) -> str | None:
    """The keyword that carries `keyword` (written as for strings/numbers) on `node`, None when it
    says nothing about the values `node` accepts."""
    if isinstance(node, ir.AnyValue):
        return keyword
    if keyword in _NUMBER_KEYWORDS:
        numeric = isinstance(node, (ir.Int, ir.Float)) or isinstance(node, (ir.Literal, ir.Enum)) and any(
            isinstance(value, (int, float)) and not isinstance(value, bool) for value in node.values)
        return keyword if numeric else None
    if keyword in _LENGTH_KEYWORDS:
        items, keys = _LENGTH_KEYWORDS[keyword]
        if isinstance(node, (ir.Array, ir.Tuple)):
            return items
        if isinstance(node, (ir.Map, ir.Object, ir.Ref, ir.Pydantic)):
            return keys
        if isinstance(node, ir.Str) or isinstance(node, (ir.Literal, ir.Enum)) and any(
                isinstance(value, str) for value in node.values):
            return keyword
        return None
    if keyword == "pattern":
        return keyword if isinstance(node, (ir.Str, ir.Literal, ir.Enum)) else None
    return keyword


def with_constraints(node: ir.Node, constraints: ir.Constraints) -> ir.Node:
    """`node` with validation `constraints` added (later ones win), each written with the keyword
    that means it for this node (`min_length` on a list is `minItems`). On a union each goes to the
    options it applies to (`Annotated[int | None, Field(ge=1)]`: the integer must be >= 1), so that
    flattening the union with another cannot lose it and strict dialects never see it beside anyOf."""
    if not constraints:
        return node
    if isinstance(node, ir.Union):
        options = tuple(with_constraints(option, tuple(
            pair for pair in constraints if _constraint_for(option, pair[0]) is not None))
            for option in node.options)
        return dataclasses.replace(node, options=options)
    merged = dict(node.constraints)
    for keyword, value in constraints:
        target = _constraint_for(node, keyword)
        if target is not None:
            merged[target] = value
    if merged == dict(node.constraints):
        return node
    return dataclasses.replace(node, constraints=tuple(merged.items()))


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


def is_typeddict(tp: Any) -> bool:
    # duck-typed so typing.TypedDict and typing_extensions.TypedDict both count on every Python
    return (isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__required_keys__")
            and hasattr(tp, "__optional_keys__"))


def _required_marker(annotation: Any) -> bool | None:
    """True/False when a TypedDict key is written `Required[...]`/`NotRequired[...]`, else None.

    Read from the resolved annotation because Python 3.11 computes `__required_keys__` before string
    annotations are resolved, so under `from __future__ import annotations` it misses the markers.
    """
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    origin = typing.get_origin(annotation)
    if origin is typing.Required:
        return True
    if origin is typing.NotRequired:
        return False
    return None


def _is_namedtuple(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, tuple) and hasattr(tp, "_fields")


def _pydantic_model(tp: Any) -> bool:
    # the submodule, not `pydantic.BaseModel`: that lazy attribute would import pydantic's heavy
    # core just to answer "no" after a bare `import pydantic`
    main = sys.modules.get("pydantic.main")
    return main is not None and isinstance(tp, type) and issubclass(tp, main.BaseModel)


def class_hints(cls: type, ctx: Context, of: Any = None) -> dict[str, Any]:
    """Resolved annotations of `cls` (or of `of`, e.g. its `__init__`), naming the class on failure."""
    target = cls if of is None else of
    localns = {cls.__name__: cls}
    try:
        return typing.get_type_hints(target, localns=localns, include_extras=True)
    except Exception as error:  # NameError for an undefined forward reference, mostly
        raise ctx.fail(f"the annotations of {cls.__name__} could not be resolved ({error}); "
                       "define the names they use before using the class") from None


def _convert_class(cls: type, ctx: Context, bindings: dict[Any, Any] | None = None) -> ir.Node:
    """A record class as an Object; `bindings` maps its type variables to the arguments given."""
    if _pydantic_model(cls):
        return ir.Pydantic(cls=cls)
    key: Any = (cls, tuple(bindings.items())) if bindings else cls
    try:
        hash(key)
    except TypeError:  # an unhashable type argument: describe the class with its variables unbound
        key, bindings = cls, None
    if key in ctx.building:
        name = ctx.building[key]
        ctx.recursive.add(name)
        return ir.Ref(name=name, target=_Target(ctx.done, name))
    if not (dataclasses.is_dataclass(cls) or is_typeddict(cls) or _is_namedtuple(cls) or _has_own_init(cls)):
        raise ctx.fail(f"the annotation {cls.__module__}.{cls.__qualname__} has no JSON form "
                       "(use a dataclass, TypedDict, NamedTuple, pydantic model, or a class whose "
                       "__init__ has annotated parameters)")
    name = ctx.def_name(cls, key)
    ctx.building[key] = name
    try:
        node = _convert_record(cls, name, ctx, bindings or {})
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


def _has_own_init(cls: type) -> bool:
    """Whether `cls` can be described (and later built) through an annotated `__init__`.

    Library classes such as `socket.socket` have a Python `__init__` without annotations: they are
    not records a model could fill in, so at least one parameter must be annotated and every
    parameter without a default must be.
    """
    init = getattr(cls, "__init__", None)
    if not (init is not None and init is not object.__init__ and callable(init)
            and cls.__module__ != "builtins" and hasattr(init, "__code__")):
        return False
    import inspect

    try:
        params = list(inspect.signature(init).parameters.values())[1:]
    except (TypeError, ValueError):
        return False
    named = [param for param in params if param.kind not in (param.VAR_POSITIONAL, param.VAR_KEYWORD)]
    annotated = [param for param in named if param.annotation is not param.empty]
    return bool(annotated) and all(param.annotation is not param.empty or param.default is not param.empty
                                   for param in named)


def _convert_record(cls: type, name: str, ctx: Context, bindings: dict[Any, Any]) -> ir.Object:
    docs = ctx.field_docs(cls) if ctx.field_docs else {}
    outer_parameter = ctx.parameter
    fields: list[ir.Field] = []

    def add(field_name: str, annotation: Any, required: bool, default: Any) -> None:
        node = _convert(_bound(annotation, bindings), ctx)
        fields.append(ir.Field(name=field_name, type=node, required=required, default=default,
                               json_default=json_default(default) if not required else ir.MISSING,
                               description=written_description(node) or docs.get(field_name)))

    try:
        if dataclasses.is_dataclass(cls):
            hints = class_hints(cls, ctx)
            kind = "dataclass"
            for item in _init_fields(cls, hints):
                ctx.parameter = _nested(outer_parameter, item.name)
                annotation = hints.get(item.name, Any)
                if isinstance(annotation, dataclasses.InitVar):
                    annotation = annotation.type  # an `__init__` argument that is not stored
                if item.default is not dataclasses.MISSING:
                    add(item.name, annotation, False, item.default)
                elif item.default_factory is not dataclasses.MISSING:
                    add(item.name, annotation, False, _Factory(item.default_factory))
                else:
                    add(item.name, annotation, True, ir.MISSING)
        elif is_typeddict(cls):
            hints = class_hints(cls, ctx)
            kind = "typeddict"
            required_keys = cls.__required_keys__
            for key, annotation in hints.items():
                ctx.parameter = _nested(outer_parameter, key)
                marked = _required_marker(annotation)
                add(key, annotation, key in required_keys if marked is None else marked, ir.MISSING)
        elif _is_namedtuple(cls):
            hints = class_hints(cls, ctx)
            kind = "namedtuple"
            defaults = getattr(cls, "_field_defaults", {})
            for key in cls._fields:
                ctx.parameter = _nested(outer_parameter, key)
                if key in defaults:
                    add(key, hints.get(key, Any), False, defaults[key])
                else:
                    add(key, hints.get(key, Any), True, ir.MISSING)
        else:
            import inspect

            kind = "class"
            hints = class_hints(cls, ctx, cls.__init__)
            signature = inspect.signature(cls.__init__)
            for index, parameter in enumerate(signature.parameters.values()):
                if index == 0:
                    continue  # self
                if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                    continue  # a model cannot address them by name inside a nested object
                ctx.parameter = _nested(outer_parameter, parameter.name)
                annotation = hints.get(parameter.name, Any)
                if parameter.default is parameter.empty:
                    add(parameter.name, annotation, True, ir.MISSING)
                else:
                    add(parameter.name, _nullable_if_none(annotation, parameter.default), False,
                        parameter.default)
    finally:
        ctx.parameter = outer_parameter
    description = _class_description(cls)
    return ir.Object(name=name, fields=tuple(fields), cls=cls, kind=kind, description=description)


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


def _init_fields(cls: type, hints: dict[str, Any]) -> list[dataclasses.Field]:
    """The fields a dataclass's `__init__` takes: `dataclasses.fields` plus `InitVar` pseudo-fields
    (which it leaves out, though `__init__` requires them), without `init=False` ones."""
    stored = {item.name for item in dataclasses.fields(cls)}
    return [item for item in cls.__dataclass_fields__.values()  # type: ignore[attr-defined]
            if item.init and (item.name in stored or isinstance(hints.get(item.name), dataclasses.InitVar))]


def written_description(node: ir.Node) -> str | None:
    """The description written on the annotation (`Annotated` text, `Field(description=...)`), else None.

    A record's class docstring also lands in `node.description`, but it describes the type, not this
    parameter or field: the parameter's own docs must outrank it, and it must not be copied beside a
    `$ref` (the definition already carries it).
    """
    if isinstance(node, ir.Object) and node.cls is not None and node.description == _class_description(node.cls):
        return None
    return node.description


def _class_description(cls: type) -> str | None:
    doc = cls.__dict__.get("__doc__")
    if not doc or not isinstance(doc, str):
        return None
    import inspect

    text = inspect.cleandoc(doc)
    if cls.__module__ != "builtins" and (text.startswith(cls.__name__ + "(") or _is_namedtuple(cls)
                                         and text.startswith(cls.__name__)):
        return None  # dataclass/namedtuple auto-generated signature docstrings say nothing
    # keep the summary paragraph only: field sections belong to the fields
    return text.split("\n\n", 1)[0].strip() or None


def _nested(parent: str | None, child: str) -> str:
    return f"{parent}.{child}" if parent else child


def _nullable_if_none(annotation: Any, default: Any) -> Any:
    """`x: int = None` means `int | None`."""
    if default is None and annotation is not Any and annotation is not _EMPTY:
        return typing.Optional[annotation]
    return annotation


class _Factory:
    """A dataclass default_factory as a default value (called only when rendering needs a value)."""

    __slots__ = ("factory",)

    def __init__(self, factory: Callable[[], Any]):
        self.factory = factory

    def __repr__(self) -> str:
        return f"<factory {getattr(self.factory, '__name__', self.factory)}>"


def json_default(value: Any) -> Any:
    """A Python default as JSON, or `ir.MISSING` when it has no faithful JSON form."""
    if isinstance(value, _Factory):
        if value.factory in (list, dict, set, tuple, frozenset):
            value = value.factory()
        else:
            return ir.MISSING  # calling arbitrary factories at describe time could have effects
    return to_json(value, strict=True)


__all__ = ["Context", "to_ir", "type_name", "json_default", "duration_text", "class_hints", "written_description",
           "metadata_constraints", "with_constraints"]
