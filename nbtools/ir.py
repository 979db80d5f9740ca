"""The intermediate form between Python types and everything downstream.

`types.py` turns an annotation into one of these nodes; `schema.py` renders a node as JSON Schema;
`call.py` compiles a node into a validating converter (JSON value -> declared Python value);
`inverse.py` reads a JSON Schema back into nodes. Keeping one small vocabulary in the middle means
type inspection never knows about providers, and validation never re-reads annotations.

Every node is a frozen dataclass. `description` is carried by any node (from `Annotated` text or a
field's docs) and `constraints` holds JSON Schema validation keywords that apply to the node
(`minimum`, `maxLength`, `pattern`, ...) as a tuple of (keyword, value) pairs so nodes stay hashable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any as _Any

Constraints = tuple[tuple[str, _Any], ...]


@dataclass(frozen=True)
class Node:
    """Base of every node."""

    description: str | None = field(default=None, kw_only=True)
    constraints: Constraints = field(default=(), kw_only=True)


@dataclass(frozen=True)
class AnyValue(Node):
    """Any JSON value (unannotated parameter, `Any`, `object`)."""


@dataclass(frozen=True)
class NoneValue(Node):
    """JSON null (`None`)."""


@dataclass(frozen=True)
class Bool(Node):
    """JSON true/false."""


@dataclass(frozen=True)
class Int(Node):
    """JSON integer. `py` is the Python class to build (int or an int subclass such as bool is excluded)."""

    py: type = int


@dataclass(frozen=True)
class Float(Node):
    """JSON number (integers accepted and converted to float)."""


@dataclass(frozen=True)
class Str(Node):
    """JSON string.

    `py` is the Python type the string converts to (str, Path, UUID, Decimal, datetime, date, time,
    timedelta, bytes); `format` is the JSON Schema format keyword (or None); `encoding` is the
    JSON Schema `contentEncoding` (bytes travel as base64).
    """

    py: type = str
    format: str | None = None
    encoding: str | None = None


@dataclass(frozen=True)
class Literal(Node):
    """One of a fixed set of JSON scalars (`typing.Literal`)."""

    values: tuple[_Any, ...] = ()


@dataclass(frozen=True)
class Enum(Node):
    """An `enum.Enum` class: the model sends a member's value, the function gets the member."""

    cls: type | None = None
    values: tuple[_Any, ...] = ()


@dataclass(frozen=True)
class Array(Node):
    """A homogeneous JSON array. `py` is list, tuple, set or frozenset (what the function gets)."""

    item: Node = field(default_factory=AnyValue)
    py: type = list


@dataclass(frozen=True)
class Tuple(Node):
    """A fixed-length JSON array (`tuple[int, str]`); the function gets a tuple."""

    items: tuple[Node, ...] = ()


@dataclass(frozen=True)
class Map(Node):
    """A JSON object used as a mapping (`dict[K, V]`). `key` is Str, Int, Enum or Literal."""

    key: Node = field(default_factory=lambda: Str())
    value: Node = field(default_factory=AnyValue)


@dataclass(frozen=True)
class Field:
    """One named field of an Object (a dataclass field, TypedDict key, parameter, ...).

    `default` is the Python default (`MISSING` when required); `json_default` is the default as JSON
    (`MISSING` when it has no faithful JSON form, so the schema leaves it out).
    """

    name: str
    type: Node
    required: bool = True
    default: _Any = None
    json_default: _Any = None
    description: str | None = None


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __reduce__(self) -> str:
        return "MISSING"


MISSING: _Any = _Missing()


@dataclass(frozen=True)
class Object(Node):
    """A JSON object with known fields.

    `kind` says what the function gets: "dataclass", "typeddict", "namedtuple", "class" (built
    through `__init__`), "dict" (a plain dict, e.g. from a schema with no Python type), or
    "pydantic" (see `Pydantic`). `extra` is the node for additional keys (None: closed object).
    `name` is the class name, used for `$defs` when the type is recursive.
    """

    name: str = ""
    fields: tuple[Field, ...] = ()
    cls: type | None = None
    kind: str = "dict"
    extra: Node | None = None


@dataclass(frozen=True)
class Union(Node):
    """Any of several nodes (`X | Y`, `Optional[X]`). Tried in order when converting."""

    options: tuple[Node, ...] = ()


@dataclass(frozen=True)
class Ref(Node):
    """A reference to a named Object, used to break recursion (`$ref: #/$defs/<name>`).

    `target` is a zero-argument callable returning the Object (it is filled in after the Object is
    built, which is what makes recursion possible with frozen nodes).
    """

    name: str = ""
    target: _Any = field(default=None, compare=False, repr=False, hash=False)


@dataclass(frozen=True)
class Pydantic(Node):
    """A pydantic model: its own JSON Schema, validated and built by pydantic itself."""

    cls: type | None = None


# ==================================================================================================
# Questions about nodes: each answered here and only here (dispatch, schema reading and the inverse
# all ask them; copies in several modules drifted apart before).
# ==================================================================================================
JSON_KINDS = frozenset(("string", "integer", "number", "boolean", "null", "array", "object"))

# JSON kind by exact Python type (the fast path of `kind_of`)
KIND_OF_TYPE: dict[type, str] = {
    str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null",
    list: "array", tuple: "array", dict: "object",
}

_SCALAR_NODES = (Int, Float, Str, Bool, NoneValue, Literal, Enum)


def kind_of(value: _Any) -> str | None:
    """The JSON kind of a Python value ("string", "integer", ...), or None when it has none."""
    kind = KIND_OF_TYPE.get(type(value))
    if kind is not None:
        return kind
    for cls, name in ((bool, "boolean"), (str, "string"), (int, "integer"), (float, "number"),
                      (list, "array"), (tuple, "array"), (dict, "object")):
        if isinstance(value, cls):
            return name
    return None


def children(node: Node) -> tuple[Node, ...]:
    """The nodes directly inside `node` (a Ref is a leaf: a cycle is walked once, not expanded)."""
    if isinstance(node, Array):
        return (node.item,)
    if isinstance(node, Tuple):
        return node.items
    if isinstance(node, Map):
        return (node.key, node.value)
    if isinstance(node, Object):
        return tuple(item.type for item in node.fields) + ((node.extra,) if node.extra is not None else ())
    if isinstance(node, Union):
        return node.options
    return ()


def accepted_kinds(node: Node, following: frozenset[int] = frozenset()) -> frozenset[str]:
    """The JSON kinds a node can possibly accept (before looking at the value)."""
    if isinstance(node, Ref):  # a recursive definition read from a schema need not be an object
        target = node.target() if callable(node.target) else None
        if target is None or id(target) in following:
            return frozenset({"object"})
        return accepted_kinds(target, following | {id(target)})
    if isinstance(node, AnyValue):
        return JSON_KINDS
    if isinstance(node, NoneValue):
        return frozenset({"null"})
    if isinstance(node, Bool):
        return frozenset({"boolean"})
    if isinstance(node, (Int, Float)):
        return frozenset({"integer", "number"})
    if isinstance(node, Str):
        return frozenset({"string"})
    if isinstance(node, (Literal, Enum)):
        kinds: set[str] = set()
        for value in node.values:
            kind = kind_of(value)
            if kind in ("integer", "number"):
                kinds.update(("integer", "number"))
            elif kind:
                kinds.add(kind)
        return frozenset(kinds)
    if isinstance(node, (Array, Tuple)):
        return frozenset({"array"})
    if isinstance(node, (Map, Object, Pydantic)):
        return frozenset({"object"})
    if isinstance(node, Union):
        found: frozenset[str] = frozenset()
        for option in node.options:
            found |= accepted_kinds(option, following)
        return found
    return JSON_KINDS


def accepts_null(node: Node) -> bool:
    """Whether JSON null is a valid value for `node` (None, Any, a Literal/Enum with a None value,
    or a union with such an option)."""
    if isinstance(node, (NoneValue, AnyValue)):
        return True
    if isinstance(node, (Literal, Enum)):
        return None in node.values
    if isinstance(node, Union):
        return any(accepts_null(option) for option in node.options)
    return False


def static_depth(node: Node) -> int | None:
    """How many levels of arrays/objects a node's values can have, or None when unbounded or open
    (free-form values, recursive types, pydantic models): those need the limits scan."""
    if isinstance(node, _SCALAR_NODES):
        return 0
    if isinstance(node, Union):
        depths = [static_depth(option) for option in node.options]
        return None if None in depths else max(depths, default=0)  # type: ignore[type-var]
    if isinstance(node, (Array, Tuple, Map, Object)):
        parts = children(node) if not isinstance(node, Map) else (node.value,)
        depths = [static_depth(part) for part in parts]
        return None if None in depths else max(depths, default=0) + 1  # type: ignore[type-var,operator]
    return None


def is_scalar(node: Node) -> bool:
    """True when every value the node accepts is a JSON scalar (so no nested limits to check)."""
    if isinstance(node, _SCALAR_NODES):
        return True
    if isinstance(node, Union):
        return all(is_scalar(option) for option in node.options)
    return False


def is_async(*candidates: _Any) -> bool:
    """Whether calling any of `candidates` (a callable, what it wraps or unwraps to, a callable
    instance's `__call__`) returns an awaitable: coroutine functions and async generators."""
    import inspect  # the standard library's; cheap after the first import

    for candidate in candidates:
        if candidate is None:
            continue
        for fn in (candidate, getattr(candidate, "__call__", None)):
            if fn is not None and (inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn)):
                return True
    return False
