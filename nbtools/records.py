"""Record classes: recognise them, list the fields a model fills in, and read their own docstring.

A record is a class a JSON object can become: a dataclass, a TypedDict, a NamedTuple, a pydantic
model, or a plain class whose `__init__` has annotated parameters. This module answers "which kind
is it, and what are its fields" once, for `typeinfo` (annotations -> ir), `introspect` (a class as a
tool) and `docs` (field descriptions). It converts no type and evaluates no annotation.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import typing
from typing import Any, Callable

from . import ir

__all__ = ["is_typeddict", "is_namedtuple", "is_pydantic_model", "has_own_init", "record_kind",
           "RecordField", "record_fields", "Factory", "class_docstring", "is_read_only"]


def is_typeddict(tp: Any) -> bool:
    """Whether `tp` is a TypedDict class (duck-typed: `typing` and `typing_extensions` ones both count)."""
    return (isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__required_keys__")
            and hasattr(tp, "__optional_keys__"))


def is_namedtuple(tp: Any) -> bool:
    """Whether `tp` is a NamedTuple (or `collections.namedtuple`) class."""
    return isinstance(tp, type) and issubclass(tp, tuple) and hasattr(tp, "_fields")


def is_pydantic_model(tp: Any) -> bool:
    """Whether `tp` is a pydantic model class; never imports pydantic (no pydantic loaded: no)."""
    # the submodule, not `pydantic.BaseModel`: that lazy attribute would import pydantic's heavy
    # core just to answer "no" after a bare `import pydantic`
    main = sys.modules.get("pydantic.main")
    return main is not None and isinstance(tp, type) and issubclass(tp, main.BaseModel)


def has_own_init(cls: type) -> bool:
    """Whether `cls` can be described (and later built) through an annotated `__init__`.

    Library classes such as `socket.socket` have a Python `__init__` without annotations: they are
    not records a model could fill in, so at least one parameter must be annotated and every
    parameter without a default must be.
    """
    init = getattr(cls, "__init__", None)
    if not (init is not None and init is not object.__init__ and callable(init)
            and cls.__module__ != "builtins" and hasattr(init, "__code__")):
        return False
    try:
        params = list(inspect.signature(init).parameters.values())[1:]
    except (TypeError, ValueError):
        return False
    named = [param for param in params if param.kind not in (param.VAR_POSITIONAL, param.VAR_KEYWORD)]
    annotated = [param for param in named if param.annotation is not param.empty]
    return bool(annotated) and all(param.annotation is not param.empty or param.default is not param.empty
                                   for param in named)


def record_kind(cls: type) -> str | None:
    """"dataclass", "typeddict", "namedtuple" or "class" (built through `__init__`); None when `cls` is
    no record (pydantic models are asked about with `is_pydantic_model`: pydantic describes them)."""
    if dataclasses.is_dataclass(cls):
        return "dataclass"
    if is_typeddict(cls):
        return "typeddict"
    if is_namedtuple(cls):
        return "namedtuple"
    if has_own_init(cls):
        return "class"
    return None


class RecordField:
    """One field a model fills in: its name, annotation (as given in `hints`), whether it is
    required, and its Python default (`ir.MISSING` when required; a `Factory` for a dataclass
    `default_factory`). A plain class with slots: built once per field of every record described, it
    must be cheap (so was a NamedTuple, but building its class cost ~0.3 ms of the import)."""

    __slots__ = ("name", "annotation", "required", "default")

    def __init__(self, name: str, annotation: Any, required: bool, default: Any = ir.MISSING) -> None:
        self.name, self.annotation, self.required, self.default = name, annotation, required, default

    def __repr__(self) -> str:
        return (f"RecordField(name={self.name!r}, annotation={self.annotation!r}, required={self.required!r}, "
                f"default={self.default!r})")


class Factory:
    """A dataclass `default_factory` standing for the default (called only when a value is needed)."""

    __slots__ = ("factory",)

    def __init__(self, factory: Callable[[], Any]):
        self.factory = factory

    def __repr__(self) -> str:
        return f"<factory {getattr(self.factory, '__name__', self.factory)}>"


def record_fields(cls: type, kind: str, hints: dict[str, Any]) -> list[RecordField]:
    """The fields of record `cls` of `kind` (see `record_kind`), in order. `hints`: the resolved
    annotations of the class, or of its `__init__` for kind "class"."""
    if kind == "dataclass":
        return [_dataclass_field(item, hints) for item in _init_fields(cls, hints)]
    if kind == "typeddict":
        required_keys = cls.__required_keys__  # type: ignore[attr-defined]
        fields = []
        for key, annotation in hints.items():
            marked = _required_marker(annotation)
            fields.append(RecordField(key, annotation, key in required_keys if marked is None else marked))
        return fields
    if kind == "namedtuple":
        defaults = getattr(cls, "_field_defaults", {})
        return [RecordField(key, hints.get(key, Any), key not in defaults, defaults.get(key, ir.MISSING))
                for key in cls._fields]  # type: ignore[attr-defined]
    fields = []
    for index, parameter in enumerate(inspect.signature(cls.__init__).parameters.values()):  # type: ignore[misc]
        if index == 0 or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue  # self; and *args/**kwargs, which a model cannot address by name in a nested object
        required = parameter.default is parameter.empty
        fields.append(RecordField(parameter.name, hints.get(parameter.name, Any), required,
                                  ir.MISSING if required else parameter.default))
    return fields


def _dataclass_field(item: dataclasses.Field, hints: dict[str, Any]) -> RecordField:
    annotation = hints.get(item.name, Any)
    if isinstance(annotation, dataclasses.InitVar):
        annotation = annotation.type  # an `__init__` argument that is not stored
    if item.default is not dataclasses.MISSING:
        return RecordField(item.name, annotation, False, item.default)
    if item.default_factory is not dataclasses.MISSING:
        return RecordField(item.name, annotation, False, Factory(item.default_factory))
    return RecordField(item.name, annotation, True)


def _init_fields(cls: type, hints: dict[str, Any]) -> list[dataclasses.Field]:
    """The fields a dataclass's `__init__` takes: `dataclasses.fields` plus `InitVar` pseudo-fields
    (which it leaves out, though `__init__` requires them), without `init=False` ones."""
    stored = {item.name for item in dataclasses.fields(cls)}
    return [item for item in cls.__dataclass_fields__.values()  # type: ignore[attr-defined]
            if item.init and (item.name in stored or isinstance(hints.get(item.name), dataclasses.InitVar))]


def _required_marker(annotation: Any) -> bool | None:
    """True/False when a TypedDict key is written `Required[...]`/`NotRequired[...]`, else None.

    Read from the resolved annotation because Python 3.11 computes `__required_keys__` before string
    annotations are resolved, so under `from __future__ import annotations` it misses the markers.
    """
    while typing.get_origin(annotation) is typing.Annotated or is_read_only(typing.get_origin(annotation)):
        annotation = typing.get_args(annotation)[0]
    origin = typing.get_origin(annotation)
    if origin is typing.Required:
        return True
    if origin is typing.NotRequired:
        return False
    return None


def is_read_only(origin: Any) -> bool:
    """Whether `origin` is PEP 705's `ReadOnly` (`typing` on 3.13+, or `typing_extensions`): a TypedDict
    item the function will not change, which says nothing about the value's JSON form."""
    return origin is not None and (origin is getattr(typing, "ReadOnly", None)
                                   or (getattr(origin, "_name", None) == "ReadOnly"
                                       and type(origin).__name__.endswith("SpecialForm")))


def class_docstring(cls: type) -> str | None:
    """The docstring written in the body of `cls` itself, as written (not cleaned).

    None when it has none, or when the one it has was made up: a class that `dataclasses` or
    `collections.namedtuple` (also `typing.NamedTuple`) made gets one line, its name and fields
    (`Name(a: int, b: str = 'x')`, `Name(a, b)`), which says nothing the fields do not. A docstring
    a person wrote is kept even when it starts with the class name (`Point(x, y) on the grid...`).
    """
    doc = cls.__dict__.get("__doc__")
    if not isinstance(doc, str) or not doc.strip():
        return None
    made = "__dataclass_fields__" in cls.__dict__ or "_fields" in cls.__dict__ and is_namedtuple(cls)
    generated = made and "\n" not in doc and doc.startswith(cls.__name__ + "(") and doc.endswith(")")
    return None if generated else doc
