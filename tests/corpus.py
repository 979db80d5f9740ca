"""A corpus of callables of every shape, each with the exact neutral parameters schema expected.

Reusable by any test: `from corpus import CASES, ERROR_CASES, TYPE_CASES`. Each `Case` holds the
callable, the name to pass (`tool_name`, only for lambdas), the expected tool name, description and
exact `parameters`, and which renderings must be refused (`Case.refused_by(fmt, strict)`: the
parameter the SchemaError must name, or None when a faithful form exists).

The checkers of what providers accept, and `parameters_of(definition, fmt)`, are in `providers.py`.
"""

import collections.abc as cabc
import datetime as dt
import decimal
import enum
import functools
import pathlib
import socket
import typing
import uuid
import dataclasses
from dataclasses import dataclass, field
from typing import Annotated, Any, Callable, Literal, NamedTuple, Optional, Union

import pydantic
import typing_extensions

import corpus_future

# -- shared types ----------------------------------------------------------------------------------


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Size(enum.StrEnum):
    SMALL = "s"
    LARGE = "l"


@dataclass
class Point:
    """A point in the plane."""

    x: float
    y: float = 0.0
    tags: list[str] = field(default_factory=list)
    created: dt.datetime = field(default_factory=dt.datetime.now)


@dataclass
class TreeNode:
    value: int
    children: list["TreeNode"] = field(default_factory=list)


T = typing.TypeVar("T")


@dataclass
class Labelled(typing.Generic[T]):
    """A value with a label (generic: `Labelled[int]` binds T)."""

    value: T
    history: list[T] = field(default_factory=list)
    children: list["Labelled[T]"] = field(default_factory=list)


class Span(NamedTuple, typing.Generic[T]):
    start: T
    end: T


@dataclass
class Scaled:
    amount: float
    factor: dataclasses.InitVar[float]  # an `__init__` argument that is not stored

    def __post_init__(self, factor: float) -> None:
        self.amount *= factor


class Movie(typing.TypedDict):
    title: str
    year: int


class MovieExtras(typing.TypedDict, total=False):
    rating: float
    note: typing.Required[str]


class Book(typing_extensions.TypedDict):
    title: str
    pages: typing_extensions.NotRequired[int]


class Pair(NamedTuple):
    left: int
    right: str = "x"


class User(pydantic.BaseModel):
    name: str
    age: int = pydantic.Field(0, ge=0, description="age in years")


class Config:
    """Connection settings."""

    def __init__(self, host: str, port: int = 8080, timeout: float | None = None):
        self.host, self.port, self.timeout = host, port, timeout


# -- expected schema pieces ------------------------------------------------------------------------

INT = {"type": "integer"}
STR = {"type": "string"}
NUM = {"type": "number"}
BOOL = {"type": "boolean"}
NULL = {"type": "null"}


def obj(properties: dict, required: list[str] | None = None, **extra: Any) -> dict:
    """A closed object schema, the shape every parameters root and record has."""
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = extra.pop("additionalProperties", False)
    schema.update(extra)
    return schema


def nullable(schema: dict, **extra: Any) -> dict:
    return {"anyOf": [schema, NULL], **extra}


POINT = obj({"x": NUM, "y": {**NUM, "default": 0.0}, "tags": {"type": "array", "items": STR, "default": []},
             "created": {"type": "string", "format": "date-time"}}, ["x"], description="A point in the plane.")

# -- the callables ---------------------------------------------------------------------------------


def plain(a: int, b: str):
    return a, b


def json_defaults(text: str = "hi", count: int = 3, ratio: float = 1.5, flag: bool = False,
                  nothing: None = None, items: list[int] = [1, 2], table: dict[str, int] = {"a": 1}):  # noqa: B006
    return text


def converted_defaults(where: pathlib.Path = pathlib.Path("/tmp/data"), pair: tuple[int, int] = (1, 2),
                       tags: set[str] = frozenset({"b", "a"}), color: Color = Color.RED,
                       when: dt.datetime = dt.datetime(2024, 1, 2, 3, 4, 5),
                       delay: dt.timedelta = dt.timedelta(hours=1, minutes=30),
                       ident: uuid.UUID = uuid.UUID(int=1), amount: decimal.Decimal = decimal.Decimal("1.50"),
                       blob: bytes = b"hi", since: float = float("nan")):
    return where


def none_default(limit: int = None, name: str | None = None, anything=None):  # noqa: RUF013 - the shape under test
    return limit


def unions(a: Optional[int], b: int | None, c: Union[int, str], d: Optional[Union[int, str]] = None,
           e: Union[int, None, str] = 0):
    return a


def sequences(numbers: list[int], names: set[str], frozen: frozenset[int], fixed: tuple[int, str],
              rest: tuple[float, ...], nothing: tuple[()], bare_list: list, bare_tuple: tuple):
    return numbers


def mappings(by_name: dict[str, int], by_number: dict[int, str], by_color: dict[Color, float],
             by_literal: dict[Literal["x", "y"], bool], anything: dict):
    return by_name


def abc_containers(seq: cabc.Sequence[int], mapping: cabc.Mapping[str, float], it: cabc.Iterable[str],
                   mset: cabc.MutableSet[int], mseq: cabc.MutableSequence[str], aset: cabc.Set[int],
                   mmap: cabc.MutableMapping[str, bool]):
    return seq


def literals(mode: Literal["r", "w"], level: Literal[1, 2, 3], mixed: Literal["a", 1, None],
             on: Literal[True], nested: Literal[Literal["x"], "y"] = "y"):
    return mode


def enums(color: Color, priority: Priority, size: Size = Size.SMALL, only_red: Literal[Color.RED] = Color.RED):
    return color


def string_types(when: dt.datetime, day: dt.date, at: dt.time, wait: dt.timedelta, ident: uuid.UUID,
                 amount: decimal.Decimal, where: pathlib.Path, blob: bytes):
    return when


def anything(unannotated, any_value: Any, obj_value: object, default_only=3):
    return unannotated


def with_dataclass(point: Point, points: list[Point] | None = None):
    return point


def with_typeddicts(movie: Movie, extras: MovieExtras, book: Book):
    return movie


def with_namedtuple(pair: Pair):
    return pair


def with_pydantic(user: User):
    return user


def with_class(config: Config):
    return config


def with_recursive(tree: TreeNode):
    return tree


def annotated(count: Annotated[int, "how many to fetch"],
              who: Annotated[str, pydantic.Field(description="who asks", min_length=1)],
              size: int = pydantic.Field(10, description="page size", ge=1, le=100)):
    return count


def constrained(items: Annotated[list[int], pydantic.Field(min_length=1, max_length=3)],
                limit: Annotated[Optional[int], pydantic.Field(ge=1)] = None,
                names: list[str] = pydantic.Field([], max_length=2)):
    """A length bound counts a list's items; a bound on an optional value bounds the value."""
    return items


def string_annotations(count: "int", points: "list[Point]", maybe: "Optional[str]" = None):
    return count


async def fetch(url: str, retries: int = 3):
    return url


class Counter:
    """Counts things."""

    def __init__(self, start: int = 0):
        self.total = start

    def add(self, amount: int, label: str = "") -> int:
        self.total += amount
        return self.total

    @classmethod
    def make(cls, start: int):
        return cls(start)

    @staticmethod
    def double(value: float):
        return value * 2

    def __call__(self, step: int = 1):
        return self.add(step)


def three(a: int, b: str, c: float = 1.0, d: bool = True):
    return a, b, c, d


def logged(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return wrapper


@logged
def decorated(query: str, limit: int = 10):
    return query


@functools.cache
def cached(n: int):
    return n


def positional_only(a: int, b: str = "x", /, c: float = 0.5):
    return a


def keyword_only(a: int, *, b: str, c: bool = False):
    return a


def var_args(first: str, *values: int, **options: str):
    return values


def var_kwargs_untyped(**anything):
    return anything


def no_params():
    return 1


counter = Counter()

# -- cases -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One corpus entry.

    Fields:
        id: pytest id.
        fn: the callable.
        name: the expected tool name.
        parameters: the exact expected neutral parameters schema.
        tool_name: passed as `name=` (lambdas need one).
        description: the exact expected tool description.
        strict_refuses: the parameter OpenAI strict mode must refuse (SchemaError naming it), or None.
        anthropic_refuses: the same for Anthropic strict mode (default: as `strict_refuses`).
        openapi_refuses: the parameter `gemini-openapi` must refuse (no OpenAPI 3.0 form), or None.
    """

    id: str
    fn: Callable[..., Any]
    name: str
    parameters: dict
    tool_name: str | None = None
    description: str = ""
    strict_refuses: str | None = None
    anthropic_refuses: str | None = None
    openapi_refuses: str | None = None

    def refused_by(self, fmt: str | None, strict: bool) -> str | None:
        """The parameter rendering in `fmt` must refuse, or None when a faithful form exists."""
        if fmt == "gemini-openapi":
            return self.openapi_refuses
        if not strict or fmt not in ("openai", "responses", "anthropic"):
            return None
        if fmt == "anthropic":
            return self.anthropic_refuses or self.strict_refuses
        return self.strict_refuses


def arr(items: dict, **extra: Any) -> dict:
    return {"type": "array", "items": items, **extra}


def _build_cases() -> list[Case]:
    color = {"type": "string", "enum": ["red", "green"]}
    cases = [
        Case("plain", plain, "plain", obj({"a": INT, "b": STR}, ["a", "b"])),
        Case("json_defaults", json_defaults, "json_defaults", obj({
            "text": {**STR, "default": "hi"}, "count": {**INT, "default": 3},
            "ratio": {**NUM, "default": 1.5}, "flag": {**BOOL, "default": False},
            "nothing": {**NULL, "default": None},
            "items": arr(INT, default=[1, 2]),
            "table": {"type": "object", "additionalProperties": INT, "default": {"a": 1}},
        }), openapi_refuses="table"),
        Case("converted_defaults", converted_defaults, "converted_defaults", obj({
            "where": {"type": "string", "format": "path", "default": "/tmp/data"},
            "pair": {"type": "array", "prefixItems": [INT, INT], "minItems": 2, "maxItems": 2, "default": [1, 2]},
            "tags": arr(STR, uniqueItems=True, default=["a", "b"]),
            "color": {**color, "default": "red"},
            "when": {"type": "string", "format": "date-time", "default": "2024-01-02T03:04:05"},
            "delay": {"type": "string", "format": "duration", "default": "PT1H30M"},
            "ident": {"type": "string", "format": "uuid", "default": "00000000-0000-0000-0000-000000000001"},
            "amount": {"type": "string", "pattern": r"^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$", "default": "1.50"},
            "blob": {"type": "string", "contentEncoding": "base64", "default": "aGk="},
            "since": NUM,
        })),
        Case("none_default", none_default, "none_default", obj({
            "limit": nullable(INT, default=None), "name": nullable(STR, default=None),
            "anything": {"default": None},
        }), strict_refuses="anything", openapi_refuses="anything"),
        Case("unions", unions, "unions", obj({
            "a": nullable(INT), "b": nullable(INT), "c": {"anyOf": [INT, STR]},
            "d": {"anyOf": [INT, STR, NULL], "default": None},
            "e": {"anyOf": [INT, NULL, STR], "default": 0},
        }, ["a", "b", "c"])),
        Case("sequences", sequences, "sequences", obj({
            "numbers": arr(INT), "names": arr(STR, uniqueItems=True), "frozen": arr(INT, uniqueItems=True),
            "fixed": {"type": "array", "prefixItems": [INT, STR], "minItems": 2, "maxItems": 2},
            "rest": arr(NUM), "nothing": {"type": "array", "maxItems": 0},
            "bare_list": arr({}), "bare_tuple": arr({}),
        }, ["numbers", "names", "frozen", "fixed", "rest", "nothing", "bare_list", "bare_tuple"]),
            strict_refuses="fixed", openapi_refuses="fixed"),
        Case("mappings", mappings, "mappings", obj({
            "by_name": {"type": "object", "additionalProperties": INT},
            "by_number": {"type": "object", "additionalProperties": STR, "propertyNames": {"pattern": "^-?[0-9]+$"}},
            "by_color": {"type": "object", "additionalProperties": NUM, "propertyNames": {"enum": ["red", "green"]}},
            "by_literal": {"type": "object", "additionalProperties": BOOL, "propertyNames": {"enum": ["x", "y"]}},
            "anything": {"type": "object", "additionalProperties": {}},
        }, ["by_name", "by_number", "by_color", "by_literal", "anything"]), strict_refuses="anything", openapi_refuses="by_name"),
        Case("abc_containers", abc_containers, "abc_containers", obj({
            "seq": arr(INT), "mapping": {"type": "object", "additionalProperties": NUM}, "it": arr(STR),
            "mset": arr(INT, uniqueItems=True), "mseq": arr(STR), "aset": arr(INT, uniqueItems=True),
            "mmap": {"type": "object", "additionalProperties": BOOL},
        }, ["seq", "mapping", "it", "mset", "mseq", "aset", "mmap"]), openapi_refuses="mapping"),
        Case("literals", literals, "literals", obj({
            "mode": {"type": "string", "enum": ["r", "w"]}, "level": {"type": "integer", "enum": [1, 2, 3]},
            "mixed": {"enum": ["a", 1, None]}, "on": {"type": "boolean", "enum": [True]},
            "nested": {"type": "string", "enum": ["x", "y"], "default": "y"},
        }, ["mode", "level", "mixed", "on"])),
        Case("enums", enums, "enums", obj({
            "color": color, "priority": {"type": "integer", "enum": [1, 2]},
            "size": {"type": "string", "enum": ["s", "l"], "default": "s"},
            "only_red": {"type": "string", "enum": ["red"], "default": "red"},
        }, ["color", "priority"])),
        Case("string_types", string_types, "string_types", obj({
            "when": {"type": "string", "format": "date-time"}, "day": {"type": "string", "format": "date"},
            "at": {"type": "string", "format": "time"}, "wait": {"type": "string", "format": "duration"},
            "ident": {"type": "string", "format": "uuid"},
            "amount": {"type": "string", "pattern": r"^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$"},
            "where": {"type": "string", "format": "path"}, "blob": {"type": "string", "contentEncoding": "base64"},
        }, ["when", "day", "at", "wait", "ident", "amount", "where", "blob"])),
        Case("anything", anything, "anything", obj({
            "unannotated": {}, "any_value": {}, "obj_value": {}, "default_only": {"type": "integer", "default": 3},
        }, ["unannotated", "any_value", "obj_value"]), strict_refuses="unannotated", openapi_refuses="unannotated"),
        Case("dataclass", with_dataclass, "with_dataclass", obj({
            "point": POINT, "points": nullable(arr(POINT), default=None),
        }, ["point"])),
        Case("typeddicts", with_typeddicts, "with_typeddicts", obj({
            "movie": obj({"title": STR, "year": INT}, ["title", "year"]),
            "extras": obj({"rating": NUM, "note": STR}, ["note"]),
            "book": obj({"title": STR, "pages": INT}, ["title"]),
        }, ["movie", "extras", "book"])),
        Case("namedtuple", with_namedtuple, "with_namedtuple", obj({
            "pair": obj({"left": INT, "right": {**STR, "default": "x"}}, ["left"]),
        }, ["pair"])),
        Case("pydantic", with_pydantic, "with_pydantic", obj({
            "user": {"type": "object", "properties": {
                "name": {"title": "Name", "type": "string"},
                "age": {"default": 0, "description": "age in years", "minimum": 0, "title": "Age", "type": "integer"},
            }, "required": ["name"]},
        }, ["user"])),
        Case("plain_class", with_class, "with_class", obj({
            "config": obj({"host": STR, "port": {**INT, "default": 8080},
                           "timeout": nullable(NUM, default=None)}, ["host"], description="Connection settings."),
        }, ["config"])),
        Case("recursive", with_recursive, "with_recursive", obj(
            {"tree": {"$ref": "#/$defs/TreeNode"}}, ["tree"],
            **{"$defs": {"TreeNode": obj({"value": INT, "children": arr({"$ref": "#/$defs/TreeNode"}, default=[])},
                                         ["value"])}}), anthropic_refuses="tree", openapi_refuses="tree"),
        Case("annotated", annotated, "annotated", obj({
            "count": {**INT, "description": "how many to fetch"},
            "who": {**STR, "description": "who asks", "minLength": 1},
            "size": {**INT, "description": "page size", "minimum": 1, "maximum": 100, "default": 10},
        }, ["count", "who"])),
        Case("constrained", constrained, "constrained", obj({
            "items": arr(INT, minItems=1, maxItems=3),
            "limit": {"anyOf": [{**INT, "minimum": 1}, NULL], "default": None},
            "names": arr(STR, maxItems=2, default=[]),
        }, ["items"]), description="A length bound counts a list's items; a bound on an optional value "
                                   "bounds the value."),
        Case("string_annotations", string_annotations, "string_annotations", obj({
            "count": INT, "points": arr(POINT), "maybe": nullable(STR, default=None),
        }, ["count", "points"])),
        Case("future_annotations", corpus_future.pack, "pack", obj({
            "box": obj({"label": STR, "size": nullable(INT, default=None)}, ["label"], description="A box with a label."),
            "count": {**INT, "default": 1}, "tags": nullable(arr(STR), default=None),
            "fragile": {**BOOL, "default": False},
        }, ["box"]), description="Returns: Box"),
        Case("future_recursive", corpus_future.walk, "walk", obj(
            {"chain": {"$ref": "#/$defs/Chain"}}, ["chain"],
            **{"$defs": {"Chain": obj({"value": INT, "next": nullable({"$ref": "#/$defs/Chain"}, default=None)},
                                      ["value"], description="A linked list whose annotation names itself "
                                                             "before the class exists.")}}),
             anthropic_refuses="chain", openapi_refuses="chain"),
        Case("future_typeddicts", corpus_future.render, "render", obj({
            "options": obj({"verbose": BOOL, "level": INT}, ["level"],
                           description="Python 3.11 computes `__required_keys__` from the string annotations "
                                       "and misses `Required`."),
            "layout": obj({"width": INT, "height": INT}, ["width"]),
        }, ["options", "layout"])),
        Case("async_def", fetch, "fetch", obj({"url": STR, "retries": {**INT, "default": 3}}, ["url"])),
        Case("bound_method", counter.add, "add", obj({"amount": INT, "label": {**STR, "default": ""}}, ["amount"]),
             description="Returns: int"),
        Case("classmethod", Counter.make, "make", obj({"start": INT}, ["start"])),
        Case("staticmethod", Counter.double, "double", obj({"value": NUM}, ["value"])),
        Case("callable_instance", counter, "Counter", obj({"step": {**INT, "default": 1}}),
             description="Counts things."),  # no __call__ docstring: the class says what it does
        Case("partial", functools.partial(three, 1, d=False), "three", obj(
            {"b": STR, "c": {**NUM, "default": 1.0}}, ["b"])),
        Case("wraps", decorated, "decorated", obj({"query": STR, "limit": {**INT, "default": 10}}, ["query"])),
        Case("cache", cached, "cached", obj({"n": INT}, ["n"])),
        Case("class", Config, "Config", obj({"host": STR, "port": {**INT, "default": 8080},
                                             "timeout": nullable(NUM, default=None)}, ["host"]),
             description="Connection settings."),
        Case("lambda_named", lambda x, y=2: x * y, "scale", obj({"x": {}, "y": {"type": "integer", "default": 2}}, ["x"]),
             tool_name="scale", strict_refuses="x", openapi_refuses="x"),
        Case("positional_only", positional_only, "positional_only", obj({
            "a": INT, "b": {**STR, "default": "x"}, "c": {**NUM, "default": 0.5}}, ["a"])),
        Case("keyword_only", keyword_only, "keyword_only", obj({
            "a": INT, "b": STR, "c": {**BOOL, "default": False}}, ["a", "b"])),
        Case("var_args", var_args, "var_args", obj({"first": STR, "values": arr(INT)}, ["first"],
                                                   additionalProperties=STR)),
        Case("var_kwargs_untyped", var_kwargs_untyped, "var_kwargs_untyped", obj({}, additionalProperties={}),
             ),  # an optional catch-all: left out where a dialect cannot carry it, never a refusal
        Case("no_params", no_params, "no_params", obj({})),
    ]
    return cases


CASES: list[Case] = _build_cases()


@dataclass(frozen=True)
class ErrorCase:
    """A callable that has no tool definition; the SchemaError must name `function` and `parameter`
    and contain `reason` (a fragment of the explanation)."""

    id: str
    fn: Callable[..., Any]
    function: str | None
    parameter: str | None
    reason: str


def takes_callback(callback: Callable[[int], int], n: int = 1):
    return callback(n)


def takes_socket(n: int, sock: socket.socket):
    return sock


def takes_tuple_keys(grid: dict[tuple[int, int], str]):
    return grid


def takes_undefined(thing: "Undefined"):  # noqa: F821 - the failure under test
    return thing


def takes_nested_callable(point: Point, handlers: list[Callable[[], None]]):
    return handlers


def takes_type(kind: type[int]):
    return kind


ERROR_CASES: list[ErrorCase] = [
    ErrorCase("callable", takes_callback, "takes_callback", "callback", "no JSON form"),
    ErrorCase("socket", takes_socket, "takes_socket", "sock", "socket"),
    ErrorCase("tuple_keys", takes_tuple_keys, "takes_tuple_keys", "grid", "keys"),
    ErrorCase("undefined_name", takes_undefined, "takes_undefined", "thing", "Undefined"),
    ErrorCase("nested_callable", takes_nested_callable, "takes_nested_callable", "handlers", "no JSON form"),
    ErrorCase("type_annotation", takes_type, "takes_type", "kind", "no JSON form"),
    ErrorCase("lambda_without_name", lambda x: x, None, None, "name="),
]

# -- single types for type_schema ------------------------------------------------------------------

TYPE_CASES: list[tuple[str, Any, dict]] = [
    ("int", int, INT),
    ("bool", bool, BOOL),
    ("none", None, NULL),
    ("list_of_optional", list[Optional[str]], arr(nullable(STR))),
    ("dict_of_lists", dict[str, list[int]], {"type": "object", "additionalProperties": arr(INT)}),
    ("tuple_nested", tuple[int, tuple[str, ...]], {"type": "array", "prefixItems": [INT, arr(STR)],
                                                   "minItems": 2, "maxItems": 2}),
    ("dataclass", Point, POINT),
    ("recursive", TreeNode, {"$ref": "#/$defs/TreeNode", "$defs": {
        "TreeNode": obj({"value": INT, "children": arr({"$ref": "#/$defs/TreeNode"}, default=[])}, ["value"])}}),
    ("annotated", Annotated[float, "a ratio"], {**NUM, "description": "a ratio"}),
    ("enum_union", Union[Color, Priority, None], {"anyOf": [{"type": "string", "enum": ["red", "green"]},
                                                            {"type": "integer", "enum": [1, 2]}, NULL]}),
    # a union that already admits every value (or null) says no more than its widest member
    ("optional_any", Optional[Any], {}),
    # a parameterised generic record has its type variables bound, recursion included
    ("generic_dataclass", Labelled[int], {"$ref": "#/$defs/Labelled", "$defs": {"Labelled": obj(
        {"value": INT, "history": arr(INT, default=[]), "children": arr({"$ref": "#/$defs/Labelled"}, default=[])},
        ["value"], description="A value with a label (generic: `Labelled[int]` binds T).")}}),
    ("generic_namedtuple", Span[float], obj({"start": NUM, "end": NUM}, ["start", "end"])),
    ("two_bindings_of_one_generic", tuple[Span[int], Span[str]], {
        "type": "array", "prefixItems": [obj({"start": INT, "end": INT}, ["start", "end"]),
                                         obj({"start": STR, "end": STR}, ["start", "end"])],
        "minItems": 2, "maxItems": 2}),
    ("dataclass_initvar", Scaled, obj({"amount": NUM, "factor": {**NUM, "description": "an `__init__` argument "
                                                                    "that is not stored"}}, ["amount", "factor"])),
    ("pep727_doc", Annotated[int, typing_extensions.Doc("how many")], {**INT, "description": "how many"}),
    # a length bound is written for what it bounds; a bound on a union goes to the options it applies to
    ("length_of_mapping", Annotated[dict[str, int], pydantic.Field(min_length=1)],
     {"type": "object", "additionalProperties": INT, "minProperties": 1}),
    ("length_of_tuple", Annotated[tuple[int, ...], pydantic.Field(max_length=4)], arr(INT, maxItems=4)),
    ("bound_on_optional", Annotated[Optional[str], pydantic.Field(max_length=3)],
     {"anyOf": [{**STR, "maxLength": 3}, NULL]}),
    ("bound_on_union", Annotated[Union[int, list[int]], pydantic.Field(ge=0, max_length=2)],
     {"anyOf": [{**INT, "minimum": 0}, arr(INT, maxItems=2)]}),
    ("optional_any_described", Optional[Annotated[Any, "anything"]], {"description": "anything"}),
    ("optional_literal_with_none", Optional[Literal["x", None]], {"enum": ["x", None]}),
]


__all__ = ["Case", "CASES", "ErrorCase", "ERROR_CASES", "TYPE_CASES", "obj", "nullable", "arr"]


# -- the strict form of a value (typed maps as key/value pairs) ------------------------------------

def is_typed_map_schema(schema) -> bool:
    extra = schema.get("additionalProperties") if isinstance(schema, dict) else None
    return isinstance(extra, dict) and bool(extra) and not schema.get("properties")


def as_pairs(schema: dict, value, defs: dict, root: bool = False):
    """The strict-mode form of a neutral value's maps: `{"a": 1}` -> `[{"key": "a", "value": 1}]`,
    and at the root, extra keys (typed **kwargs) under "extra-arguments" (written from the
    description of the strict form, not from nbtools' code)."""
    while isinstance(schema, dict) and "$ref" in schema:
        schema = defs[schema["$ref"].removeprefix("#/$defs/")]
    if isinstance(value, dict):
        for option in [schema] + list(schema.get("anyOf", ()) or schema.get("oneOf", ())):
            while "$ref" in option:
                option = defs[option["$ref"].removeprefix("#/$defs/")]
            if not root and is_typed_map_schema(option):
                extra = option["additionalProperties"]
                return [{"key": key, "value": as_pairs(extra, item, defs)} for key, item in value.items()]
            if root or ("properties" in option and set(value) <= set(option["properties"])):
                props = option.get("properties", {})
                out = {key: as_pairs(props[key], item, defs) for key, item in value.items() if key in props}
                extras = {key: item for key, item in value.items() if key not in props}
                if extras and root and isinstance(option.get("additionalProperties"), dict):
                    out["extra-arguments"] = as_pairs({"additionalProperties": option["additionalProperties"]},
                                                      extras, defs)
                return out
        return value
    if isinstance(value, list):  # an array, also one option of a union (Optional[list[dict[str, int]]])
        for option in [schema] + list(schema.get("anyOf", ()) or schema.get("oneOf", ())):
            while "$ref" in option:
                option = defs[option["$ref"].removeprefix("#/$defs/")]
            if isinstance(option.get("items"), dict):
                return [as_pairs(option["items"], item, defs) for item in value]
    return value
