"""Any callable -> `Spec`: what runs, its parameters as an arguments object, their descriptions.

Specs are cached per function object in weak dictionaries, so a schema is built once per function,
dead functions are not kept alive, and a redefined function (a new object) gets a fresh schema.
`Tool.from_function` builds its Tool from the Spec; this module knows nothing of Tools.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
import types
import typing
import weakref
from dataclasses import field
from typing import Any, Callable

from . import ir
from .errors import SchemaError
from .records import Factory

__all__ = ["Spec", "callable_spec", "unnamed_error", "method_taken_from_class", "refuse_unbound_method"]


@ir._record  # a frozen dataclass without generated code (as the nodes in `ir`: cheap to import)
class Spec(ir._Record):
    """What introspection found for one callable shape (independent of the object that runs).

    Fields:
        name: default tool name ("" for lambdas: a name must be given).
        description: composed description (docstring without parameter sections + Returns line).
        args: the arguments object (fields = parameters the model may send).
        passing: (parameter name, kind) pairs, see `Tool.passing`.
        parameters: JSON Schema of `args`.
        returns: JSON Schema of the return annotation (None when absent).
        returns_description: from docments/docstring.
        is_async: whether calling returns an awaitable.
        render_cache: shared by the Tools built from this spec without render-affecting overrides.
    """

    name: str
    description: str
    args: ir.Object
    passing: tuple[tuple[str, str], ...]
    parameters: dict
    returns: dict | None
    returns_description: str | None
    is_async: bool
    render_cache: dict = field(default_factory=dict, compare=False, repr=False)

    def __init__(self, name: str, description: str, args: ir.Object, passing: tuple[tuple[str, str], ...],
                 parameters: dict, returns: dict | None, returns_description: str | None, is_async: bool,
                 render_cache: dict | None = None) -> None:
        self.__dict__.update(name=name, description=description, args=args, passing=passing, parameters=parameters,
                             returns=returns, returns_description=returns_description, is_async=is_async,
                             render_cache={} if render_cache is None else render_cache)


# One cache per callable shape: the same function object has a different spec as a plain function
# (with `self`) and as the function behind a bound method (without it). Callable instances are
# keyed by their class, not by `__call__`: a subclass inherits `__call__` but has its own name.
_PLAIN: "weakref.WeakKeyDictionary[Any, Spec]" = weakref.WeakKeyDictionary()
_BOUND: "weakref.WeakKeyDictionary[Any, Spec]" = weakref.WeakKeyDictionary()
_INSTANCE: "weakref.WeakKeyDictionary[Any, Spec]" = weakref.WeakKeyDictionary()


def callable_spec(fn: Callable[..., Any]) -> Spec:
    """The cached Spec of `fn` (built on first use)."""
    cache, key, drop_first = _shape(fn)
    if key is not None:
        try:
            return cache[key]
        except (KeyError, TypeError):
            pass
    spec = _build_spec(fn, drop_first)
    if key is not None and not _keeps_alive(spec, key):
        try:
            cache[key] = spec
        except TypeError:  # not weak-referenceable: just don't cache
            pass
    return spec


_WRAPPED = (classmethod, staticmethod, types.MethodType)  # what holds a function as `__func__`
_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: set on every class created by a class statement


def _keeps_alive(spec: Spec, key: Any) -> bool:
    """Whether `spec` refers (through a class it describes) to its own cache key.

    A weak-key cache entry whose value holds its key never dies: a class whose `__init__` takes
    its own type, or a method taking an instance of its class (`def merge(self, other: "Point")`).
    Such specs are rebuilt on demand instead; the Tools built from them keep their own renders.
    """
    for cls in _classes_in(spec.args, set()):
        if cls is key:
            return True
        for klass in getattr(cls, "__mro__", (cls,)):
            if not klass.__flags__ & _HEAP_TYPE:
                continue  # a built-in (static) type such as object or dict holds no user function
            # a copy, and no getattr on arbitrary members: a pydantic model's lazy attributes (its
            # validator before a forward reference resolves) rebuild the class when touched
            for member in list(vars(klass).values()):
                if member is key or isinstance(member, _WRAPPED) and member.__func__ is key:
                    return True
    return False


def _classes_in(node: ir.Node, found: set[type], walked: set[int] | None = None) -> set[type]:
    """The classes an IR tree holds (records, enums, pydantic models, and defaults' types); `walked`:
    Objects walked already (a shared type is one node met many times: walked once)."""
    walked = set() if walked is None else walked
    if isinstance(node, ir.Object):
        if id(node) in walked:
            return found
        walked.add(id(node))
    cls = getattr(node, "cls", None)
    if isinstance(cls, type):
        found.add(cls)
    if isinstance(node, ir.Object):  # its fields' defaults count too (walked here, not through ir.children)
        for item in node.fields:
            if item.default is not ir.MISSING and type(item.default).__module__ != "builtins":
                found.add(type(item.default))
            _classes_in(item.type, found, walked)
        if node.extra is not None:
            _classes_in(node.extra, found, walked)
        return found
    for child in ir.children(node):  # an ir.Ref is a leaf: it points back to an Object already visited
        _classes_in(child, found, walked)
    return found


def _shape(fn: Any) -> tuple[Any, Any, bool]:
    """Which cache, which key, and whether the first parameter (self/cls) is bound."""
    if isinstance(fn, types.MethodType):
        return _BOUND, fn.__func__, True
    if isinstance(fn, (types.FunctionType, functools.partial, type)):
        return _PLAIN, fn, False
    if isinstance(fn, (staticmethod, classmethod)):
        return _PLAIN, fn.__func__, isinstance(fn, classmethod)
    if callable(fn) and not isinstance(fn, types.BuiltinFunctionType):
        call = getattr(type(fn), "__call__", None)
        if isinstance(call, types.FunctionType):
            return _INSTANCE, type(fn), True
    return _PLAIN, None, False


def _build_spec(fn: Any, drop_first: bool) -> Spec:
    # Lazy: the first function described pays for docstring parsing and type conversion, not
    # `import nbtools`. From submodules, not the `docs` package (a package's names are looked up anew
    # by every such import).
    from .docs.classes import field_docs, function_docs
    from .docs.functions import compose_description
    from .schema.render import render_schema
    from .content import is_content_annotation
    from .context import is_context_annotation
    from .typeinfo import (Context, json_default, optional_if_none, to_ir, type_name, with_constraints,
                           written_description)

    if isinstance(fn, types.FunctionType):
        refuse_unbound_method(fn)
    target, name, bound_positional, bound_keywords, drop_first = _target(fn, drop_first)
    display = name or "<lambda>"
    unwrapped = inspect.unwrap(target) if not isinstance(target, type) else target
    code_owner = unwrapped.__init__ if isinstance(unwrapped, type) else unwrapped
    record = _record_signature(unwrapped) if isinstance(unwrapped, type) else None
    try:
        if record is not None:  # a NamedTuple or pydantic model: its fields are the arguments
            signature = record[0]
        elif code_owner is object.__init__:  # a class without its own __init__ takes no arguments
            signature = inspect.Signature([inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)])
        else:
            signature = inspect.signature(code_owner)
    except (TypeError, ValueError) as error:
        raise SchemaError(display, None, f"its signature cannot be read ({error}); wrap it in a "
                                         "Python function with annotated parameters") from None
    ctx = Context(function=display, field_docs=field_docs, self_type=_self_type(fn, unwrapped))
    exclude = set(getattr(unwrapped, "__tool_exclude__", ()) or getattr(fn, "__tool_exclude__", ()) or ())
    hints = record[1] if record is not None else _hints(code_owner, unwrapped, ctx, exclude)
    docs = function_docs(unwrapped)
    instance_cls = type(fn) if target is getattr(type(fn), "__call__", None) and drop_first \
        and not isinstance(fn, (types.MethodType, functools.partial)) else None
    if instance_cls is not None and not docs.description:  # the class says what its instances do
        class_docs = function_docs(instance_cls)
        docs = dataclasses.replace(docs, description=class_docs.description,
                                   params={**class_docs.params, **docs.params})

    fields: list[ir.Field] = []
    passing: list[tuple[str, str]] = []
    filled: list[str] = []  # optional parameters whose default dispatch must pass (see `Tool.passing`)
    extra: ir.Node | None = None
    params = list(signature.parameters.values())
    if isinstance(unwrapped, type) or drop_first:
        params = params[1:]
    _check_bound(display, params, bound_positional, bound_keywords)
    params = _without_bound(params, bound_positional, bound_keywords)
    for param in params:
        if param.name in exclude:
            if param.default is param.empty and param.kind not in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise SchemaError(display, param.name, "is excluded from the tool (__tool_exclude__) "
                                                      "but has no default")
            continue
        ctx.parameter = param.name
        annotation = hints.get(param.name, param.empty)
        if annotation is not param.empty and is_context_annotation(annotation):
            # injected by dispatch (nbtools.ToolContext), never part of what the model sends
            _check_context_parameter(display, param, params)
            passing.append((param.name, "context"))
            continue
        if annotation is param.empty and type(param.default) in (int, float, str, bool):
            annotation = type(param.default)  # `n=3`: an integer whose default is 3, as the author meant
        annotation = _any_if_unannotated(annotation)
        if param.kind is param.VAR_KEYWORD:
            extra = to_ir(annotation, ctx)
            if docs.params.get(param.name) and not written_description(extra):
                # the docs of **kwargs describe each extra key's value
                extra = dataclasses.replace(extra, description=docs.params[param.name])
            passing.append((param.name, "varkw"))
            continue
        if param.kind is param.VAR_POSITIONAL:
            node = ir.Array(item=to_ir(annotation, ctx), py=tuple)
            fields.append(ir.Field(param.name, node, required=False, default=ir.MISSING,
                                   json_default=ir.MISSING, description=docs.params.get(param.name)))
            passing.append((param.name, "varargs"))
            continue
        default = param.default
        default_info = _field_info(default)
        constraints_from_default: ir.Constraints = ()
        description_from_default = None
        if default_info is not None:  # `x: int = Field(3, description=...)` (pydantic style)
            default, description_from_default, constraints_from_default = default_info
            if default is not param.empty:  # the function's own default is the FieldInfo: pass the real one
                filled.append(param.name)
        elif default is param.empty:  # `x: Annotated[float, Field(default=5.0)]`: optional, with that default
            annotated_default = _annotated_default(annotation)
            if annotated_default is not param.empty:
                default = annotated_default
                filled.append(param.name)
        required = default is param.empty
        if not required:
            annotation = optional_if_none(annotation, default)
        node = to_ir(annotation, ctx)
        if constraints_from_default:
            node = with_constraints(node, constraints_from_default)
        if description_from_default:
            node = dataclasses.replace(node, description=description_from_default)
        fields.append(ir.Field(
            name=param.name, type=node, required=required,
            default=ir.MISSING if required else default,
            json_default=ir.MISSING if required else json_default(default),
            description=written_description(node) or docs.params.get(param.name),
        ))
        passing.append((param.name, "positional" if param.kind is param.POSITIONAL_ONLY else "keyword"))
    ctx.parameter = None
    passing.extend((name, "default") for name in filled)

    args = ir.Object(name="", fields=tuple(fields), kind="dict", extra=extra)
    parameters = _rendered(args, ctx, display)

    returns_schema = None
    return_text = None
    return_annotation = hints.get("return", inspect.Signature.empty)
    if isinstance(unwrapped, type):
        return_annotation = inspect.Signature.empty
    if return_annotation is not inspect.Signature.empty and return_annotation is not None \
            and return_annotation is not type(None) and not is_content_annotation(return_annotation):
        ctx.parameter = "return"
        try:
            return_node = to_ir(return_annotation, ctx)
            # a plain class's instance is sent as its text (values.to_json): no schema it would match
            returns_schema = None if _holds_plain_class(return_node) else render_schema(
                return_node, ctx.recursive, output=True)
        except SchemaError:
            returns_schema = None  # the model never sends a return value: describe it in words only
        ctx.parameter = None
        return_text = type_name(return_annotation)
    description = compose_description(docs, return_text)
    from .schema.frozen import freeze

    return Spec(
        name=name,
        description=description,
        args=args,
        passing=tuple(passing),
        parameters=freeze(parameters),  # shared by every Tool and definition made from this spec
        returns=freeze(returns_schema),
        returns_description=docs.returns,
        is_async=ir.is_async(fn, target, unwrapped, getattr(fn, "func", None)),
    )


def _check_context_parameter(display: str, param: inspect.Parameter, params: list[inspect.Parameter]) -> None:
    """A ToolContext parameter is passed by keyword: it cannot be positional-only, nor stand before `*args`."""
    before_varargs = param.kind is param.POSITIONAL_OR_KEYWORD and any(
        other.kind is other.VAR_POSITIONAL for other in params)
    if param.kind is param.POSITIONAL_ONLY or before_varargs:
        raise SchemaError(display, param.name, "a ToolContext parameter is passed by keyword: make it "
                                               "keyword-only (after `*` or `*args`)")


def _record_signature(cls: type) -> tuple[inspect.Signature, dict[str, Any]] | None:
    """(signature with a leading `self`, resolved hints) of a class whose `__init__` does not say
    what it takes: a NamedTuple (fields go to `__new__`) or a pydantic model (`**data`); else None."""
    from .records import is_namedtuple, is_pydantic_model, is_typeddict
    from .typeinfo import Context, class_hints

    self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)
    if is_typeddict(cls):  # `dict.__init__` says nothing: the keys are the arguments (called as cls(**keys))
        from .records import record_fields

        hints = class_hints(cls, Context(function=cls.__name__))
        params = [inspect.Parameter(item.name, inspect.Parameter.KEYWORD_ONLY,
                                    default=inspect.Parameter.empty if item.required else _ABSENT)
                  for item in record_fields(cls, "typeddict", hints)]
        return inspect.Signature([self_param, *params]), hints
    if is_namedtuple(cls) and cls.__init__ is object.__init__:
        hints = class_hints(cls, Context(function=cls.__name__))
        defaults = getattr(cls, "_field_defaults", {})
        params = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                    default=defaults.get(name, inspect.Parameter.empty)) for name in cls._fields]
        return inspect.Signature([self_param, *params]), hints
    if is_pydantic_model(cls):
        params, hints = [], {}
        for name, info in cls.model_fields.items():
            # the model is built from keyword arguments named by alias when a field has one
            key = info.alias if isinstance(info.alias, str) and info.alias.isidentifier() else name
            params.append(inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, default=info))
            hints[key] = info.annotation
        return inspect.Signature([self_param, *params]), hints
    return None


class _Absent:
    """The 'default' of a TypedDict key that may be left out: not a value, so no `default` is written."""

    def __repr__(self) -> str:
        return "<absent>"


_ABSENT = _Absent()


def _rendered(args: ir.Object, ctx: Any, display: str) -> dict:
    """The parameters schema; a model pydantic cannot describe is named with the parameter holding it."""
    from .schema.render import render_schema

    try:
        return render_schema(args, ctx.recursive)
    except SchemaError as error:
        if error.function is not None:
            raise
        for item in args.fields:  # which parameter: render each alone (the error path only)
            try:
                render_schema(item.type, ctx.recursive)
            except SchemaError:
                raise SchemaError(display, item.name, error.reason) from None
        raise SchemaError(display, None, error.reason) from None


def _holds_plain_class(node: ir.Node, seen: set[int] | None = None) -> bool:
    """Whether a value of `node` may hold a plain class instance (built via `__init__`, serialised as text)."""
    seen = set() if seen is None else seen
    if id(node) in seen:
        return False
    seen.add(id(node))
    if isinstance(node, ir.Object):
        if node.kind == "class":
            return True
        return any(_holds_plain_class(item.type, seen) for item in node.fields) or (
            node.extra is not None and _holds_plain_class(node.extra, seen))
    return any(_holds_plain_class(child, seen) for child in ir.children(node))


def _self_type(fn: Any, unwrapped: Any) -> type | None:
    """What `typing.Self` means for `fn`: the class of a bound method's instance (or the class of a
    classmethod, or the class itself used as the tool); None elsewhere."""
    owner = getattr(fn, "__self__", None)
    if owner is not None and not isinstance(fn, types.BuiltinFunctionType):
        return owner if isinstance(owner, type) else type(owner)
    if isinstance(unwrapped, type):
        return unwrapped
    return None


def _annotated_default(annotation: Any) -> Any:
    """The default a pydantic `Field(default=...)` inside `Annotated[...]` gives (Parameter.empty: none)."""
    if typing.get_origin(annotation) is not typing.Annotated:
        return inspect.Parameter.empty
    for meta in typing.get_args(annotation)[1:]:
        info = _field_info(meta)
        if info is not None and info[0] is not inspect.Parameter.empty:
            return info[0]
    return inspect.Parameter.empty


def method_taken_from_class(func: Any) -> str | None:
    """`self` or `cls` when `func` is a method taken from its class (`Class.method`, or `@tool` inside
    the class body): a plain function whose first parameter the model would have to send, and the
    method would run on it. None for anything else (bound methods, static methods, functions)."""
    qualname = getattr(func, "__qualname__", "")
    if "." not in qualname or qualname.split(".")[-2] == "<locals>":
        return None
    try:
        first = next(iter(inspect.signature(func).parameters), None)
    except (TypeError, ValueError):
        return None
    return first if first in ("self", "cls") else None


def refuse_unbound_method(func: Any) -> None:
    """Refuse a method taken from its class (`method_taken_from_class`), saying what to do instead."""
    first = method_taken_from_class(func)
    if first is None:
        return
    qualname = func.__qualname__
    raise SchemaError(qualname, first, f"this is a method taken from its class, so the model would have to send "
                      f"{first!r}; use a bound method instead (`registry.add(instance.method)` or "
                      "`for t in tools_from(instance): registry.add(t)`), or make it a @staticmethod")


def _any_if_unannotated(annotation: Any) -> Any:
    return typing.Any if annotation is inspect.Parameter.empty else annotation


def _target(fn: Any, drop_first: bool) -> tuple[Any, str, int, frozenset[str], bool]:
    """(object whose signature and docs describe fn, default name, bound positional count, bound keywords, drop_first)."""
    if isinstance(fn, functools.partial):
        inner, inner_name, positional, keywords, inner_drop = _target(fn.func, False)
        if isinstance(fn.func, types.MethodType):
            inner_drop = True
        return inner, inner_name, positional + len(fn.args), keywords | frozenset(fn.keywords), inner_drop
    if isinstance(fn, types.MethodType):
        return fn.__func__, fn.__func__.__name__, 0, frozenset(), True
    if isinstance(fn, (staticmethod, classmethod)):
        return fn.__func__, fn.__func__.__name__, 0, frozenset(), isinstance(fn, classmethod)
    if isinstance(fn, type):
        return fn, fn.__name__, 0, frozenset(), False
    if isinstance(fn, (types.FunctionType, types.BuiltinFunctionType)):
        name = fn.__name__
        return fn, "" if name == "<lambda>" else name, 0, frozenset(), False
    call = getattr(type(fn), "__call__", None)
    if callable(fn) and isinstance(call, types.FunctionType):
        return call, type(fn).__name__, 0, frozenset(), True
    if callable(fn):
        return fn, getattr(fn, "__name__", type(fn).__name__), 0, frozenset(), drop_first
    raise SchemaError(None, None, f"{fn!r} is not callable")


def _check_bound(display: str, params: list[inspect.Parameter], positional: int, keywords: frozenset[str]) -> None:
    """A functools.partial that binds what the function does not take fails on every call: say so now."""
    kinds = {param.kind for param in params}
    takes = sum(param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD) for param in params)
    if positional > takes and inspect.Parameter.VAR_POSITIONAL not in kinds:
        raise SchemaError(display, None, f"the functools.partial binds {positional} positional arguments but "
                                         f"the function takes at most {takes}")
    names = {param.name for param in params if param.kind is not param.POSITIONAL_ONLY}
    unknown = sorted(keywords - names)
    if unknown and inspect.Parameter.VAR_KEYWORD not in kinds:
        raise SchemaError(display, unknown[0], "the functools.partial binds this keyword argument, which the "
                                               "function does not take")


def _without_bound(params: list[inspect.Parameter], positional: int, keywords: frozenset[str]) -> list[inspect.Parameter]:
    """Parameters left after a functools.partial bound some."""
    kept: list[inspect.Parameter] = []
    skipped = 0
    for param in params:
        if skipped < positional and param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            skipped += 1
            continue
        if param.name in keywords:
            continue
        kept.append(param)
    return kept


def _hints(code_owner: Any, unwrapped: Any, ctx: Any,
           exclude: "set[str] | frozenset[str]" = frozenset()) -> dict[str, Any]:
    """Resolved annotations (strings and `from __future__ import annotations` included); those of
    `exclude`d parameters (never in the tool) need not resolve (`python`'s `allow` names a class
    its module imports only when used)."""
    owner_cls = unwrapped if isinstance(unwrapped, type) else None
    localns = {owner_cls.__name__: owner_cls} if owner_cls else None
    try:
        return typing.get_type_hints(code_owner, localns=localns, include_extras=True)
    except Exception:
        pass
    # find which annotation fails, to name it
    raw = getattr(code_owner, "__annotations__", {}) or {}
    globalns = getattr(code_owner, "__globals__", {})
    resolved: dict[str, Any] = {}
    for param_name, annotation in raw.items():
        if param_name in exclude:
            continue
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, dict(globalns), dict(localns or {}))  # noqa: S307 - the author's own annotation text
            except Exception as error:
                raise SchemaError(ctx.function, param_name,
                                  f"its annotation {raw[param_name]!r} cannot be resolved ({error}); "
                                  "define or import that name where the function is defined") from None
        resolved[param_name] = annotation
    return resolved


def _field_info(default: Any) -> tuple[Any, str | None, ir.Constraints] | None:
    """A pydantic `Field(...)` used as a default: (real default, description, constraints)."""
    # `pydantic.fields` is a lazy attribute of `pydantic`: read the submodule itself, which exists
    # whenever a FieldInfo does (after a bare `import pydantic`, `pydantic.fields` raises)
    fields_module = sys.modules.get("pydantic.fields")
    if fields_module is None or not isinstance(default, fields_module.FieldInfo):
        return None
    from pydantic_core import PydanticUndefined

    from .constraints import metadata_constraints

    real = default.default
    if real is PydanticUndefined:
        # a factory is called when a value is needed (each call), never at describe time
        real = inspect.Parameter.empty if default.default_factory is None else Factory(default.default_factory)
    constraints = metadata_constraints(default)
    return real, default.description, constraints


def unnamed_error(fn: Any) -> SchemaError:
    """The error for a callable with no name a model could call (a lambda), saying where it is defined."""
    return SchemaError("<lambda>", None, f"a lambda has no name a model could call{_defined_at(fn)}: "
                       "pass name=..., e.g. tool(lambda x: x, name='double') or "
                       "Tool.from_function(f, name='double')")


def _defined_at(fn: Any) -> str:
    """' (it is defined at FILE line N)' for a function (which lambda is meant, when there are several)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    code = getattr(fn, "__code__", None)
    return f" (it is defined at {code.co_filename} line {code.co_firstlineno})" if code is not None else ""
