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
