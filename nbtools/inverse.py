"""The inverse direction: a JSON-Schema tool definition -> Python signature/function, or a Tool.

* `Tool.from_schema` (in `tool.py`) makes a `Tool` from a schema someone else wrote (an MCP
  server's tool, a definition loaded from JSON): calls are validated against the schema and passed on
  as JSON values.
* `schema2sig` gives the `inspect.Signature` a Python function with that interface would have.
* `mk_tool` builds that function: calling it binds the arguments like any function and calls
  `dispatch(tool_name, **arguments)` with the schema's own property names.
* `formats.tooldefs.read_tool_def` finds name, description and parameters in a definition of any
  provider format (the provider shapes are known there, not here).

All read the schema with `schema.params.arguments_object` (over `schema.read.schema_to_ir`). A
definition that cannot be used raises `SchemaError`; calling a `mk_tool` function with arguments its
signature refuses raises TypeError, like any Python function.
"""

from __future__ import annotations

import copy
import functools
import inspect
import keyword
import operator
import typing
import unicodedata
from dataclasses import dataclass
from typing import Any, Callable

from . import ir
from .formats.tooldefs import ToolDef, read_tool_def
from .schema.params import arguments_object, schema_error

__all__ = ["schema2sig", "mk_tool", "py_name"]


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
    """The signature of a Python function with the interface of `tool_def` (any provider's shape; see
    `formats.tooldefs.read_tool_def`).

    Required properties come first (no default), then optional ones with the schema's `default`, or
    None when it has none (annotated `T | None`); all positional-or-keyword. A `**kwargs` parameter
    is added only when the schema explicitly allows extra properties (`additionalProperties: true`
    or a schema). Annotations are real types: int, float, str, bool, None, Any, `list[T]`,
    `tuple[...]`, `dict[str, T]` for maps, `Literal[...]`, unions with `|`, and a `TypedDict` (with
    `NotRequired` keys and `Annotated` descriptions) for nested objects with named properties; a
    recursive reference is `dict[str, Any]`. Property names that are not identifiers are mapped
    (see `py_name`); two properties mapping to one name raise SchemaError.
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
            raise schema_error(definition.name, f"properties {owners[py]!r} and {field.name!r} "
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
    if args.extra is not None:
        varkw = "kwargs"
        while varkw in owners:
            varkw += "_"
        ordered.append(inspect.Parameter(varkw, inspect.Parameter.VAR_KEYWORD,
                                         annotation=annotations.of(args.extra, hint=varkw)))
    signature = inspect.Signature(ordered)
    return _Plan(definition=definition, func_name=func_name, signature=signature, params=tuple(params),
                 varkw=varkw, doc=_docstring(definition.description, doc_lines))


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


_OR_OPTIONS = 16
"""Unions up to this many options are written `a | b` (each `|` copies the options so far: fine
for a few, quadratic for a hostile schema's thousands); longer ones as `Union[...]`, in one step."""


def _union_annotation(options: list[Any]) -> Any:
    if not options:
        return typing.Never
    if Any in options:
        return Any
    try:
        unique = list(dict.fromkeys(options))
    except TypeError:  # an unhashable annotation: typing de-duplicates by equality itself
        unique = list(options)
    if len(unique) <= _OR_OPTIONS:
        try:
            return functools.reduce(operator.or_, unique)
        except TypeError:
            pass
    return typing.Union[tuple(unique)]


def _camel(*words: str) -> str:
    parts = [piece for word in words for piece in word.replace("-", "_").split("_") if piece]
    name = "".join(piece[:1].upper() + piece[1:] for piece in parts) or "Object"
    return py_name(name)
