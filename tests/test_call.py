"""Dispatch: conversions to declared types, refusals with useful text, passing, exceptions, limits,
namespaces, results. Approval of destructive tools is in test_approvals.py and test_approval_decisions.py."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import decimal
import enum
import json
import os
import pathlib
import traceback
import typing
import uuid
from typing import Annotated, Any, Literal, NamedTuple, Optional, TypedDict

import pydantic
import pytest

from nbtools import Limits, Registry, SchemaError, Tool, ToolCallError
import nbtools
from nbtools import ir
from nbtools.call import (
    ConversionError, acall_tool, call_func, call_func_async, call_plan, call_tool, compile_converter,
    mk_ns, parse_duration, result_text,
)
from nbtools.values import to_json


# -- types used by the tools below -------------------------------------------------------------------

class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass
class Point:
    x: float
    y: float


@dataclasses.dataclass
class Segment:
    start: Point
    end: Point
    label: str = ""


class Pair(NamedTuple):
    left: int
    right: str = "r"


class Options(TypedDict, total=False):
    depth: int
    name: str


class Box:
    def __init__(self, width: int, height: int = 1):
        self.width, self.height = width, height

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Box) and (self.width, self.height) == (other.width, other.height)


@dataclasses.dataclass
class Tree:
    value: int
    children: list[Tree] = dataclasses.field(default_factory=list)


class Model(pydantic.BaseModel):
    name: str
    count: int = 0
    when: Optional[dt.date] = None


@dataclasses.dataclass
class Checked:
    size: int

    def __post_init__(self) -> None:
        if self.size < 0:
            raise ValueError("size must not be negative")


def echo_tool(annotation: Any, name: str = "echo") -> Tool:
    """A tool `echo(value: annotation)` returning what it received."""
    def echo(value):
        return value

    echo.__annotations__ = {"value": annotation}
    return Tool.from_function(echo, name=name)


# -- conversions: JSON value -> declared Python value -------------------------------------------------

CONVERSIONS = [
    (int, 5, 5),
    (int, 5.0, 5),  # JSON Schema: an integer is a number with no fractional part
    (int, -(2**63), -(2**63)),
    (float, 5, 5.0),
    (float, 2.5, 2.5),
    (str, "text", "text"),
    (bool, False, False),
    (Optional[int], None, None),
    (int | None, 3, 3),
    (dt.datetime, "2024-05-01T13:30:00", dt.datetime(2024, 5, 1, 13, 30)),
    (dt.datetime, "2024-05-01T13:30:00Z", dt.datetime(2024, 5, 1, 13, 30, tzinfo=dt.timezone.utc)),
    (dt.date, "2024-05-01", dt.date(2024, 5, 1)),
    (dt.time, "13:30:15", dt.time(13, 30, 15)),
    (dt.timedelta, "P1DT2H", dt.timedelta(days=1, hours=2)),
    (dt.timedelta, "PT0.5S", dt.timedelta(seconds=0.5)),
    (dt.timedelta, "-P2W", -dt.timedelta(weeks=2)),
    (uuid.UUID, "12345678-1234-5678-1234-567812345678", uuid.UUID("12345678-1234-5678-1234-567812345678")),
    (decimal.Decimal, "12.50", decimal.Decimal("12.50")),
    (pathlib.Path, "data/file.csv", pathlib.Path("data/file.csv")),
    (bytes, "aGVsbG8=", b"hello"),
    (Color, "green", Color.GREEN),
    (Level, 2, Level.HIGH),
    (Literal["a", "b"], "b", "b"),
    (Literal[1, 2], 1.0, 1),  # JSON equality: 1.0 == 1
    (list[int], [1, 2], [1, 2]),
    (tuple[int, ...], [1, 2], (1, 2)),
    (set[str], ["a", "b"], {"a", "b"}),
    (frozenset[int], [3], frozenset({3})),
    (tuple[int, str], [1, "x"], (1, "x")),
    (dict[str, int], {"a": 1}, {"a": 1}),
    (dict[int, str], {"1": "one", "-20": "minus twenty"}, {1: "one", -20: "minus twenty"}),
    (dict[Level, str], {"1": "low"}, {Level.LOW: "low"}),
    (Point, {"x": 1, "y": 2.5}, Point(1.0, 2.5)),
    (Segment, {"start": {"x": 0, "y": 0}, "end": {"x": 3, "y": 4}},
     Segment(Point(0.0, 0.0), Point(3.0, 4.0))),
    (list[Point], [{"x": 1, "y": 1}], [Point(1.0, 1.0)]),
    (Pair, {"left": 1}, Pair(1, "r")),
    (Options, {"depth": 2}, {"depth": 2}),
    (Box, {"width": 3}, Box(3, 1)),
    (Tree, {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]},
     Tree(1, [Tree(2, [Tree(3)])])),
    (Model, {"name": "n", "when": "2024-01-02"}, Model(name="n", when=dt.date(2024, 1, 2))),
    (int | str, 5, 5),
    (int | str, "5", "5"),
    # a number tries the union option of its own JSON kind first, then the others in order
    (float | int, 5, 5),
    (int | float, 2.0, 2.0),
    (int | float, 2, 2),
    (float | str, 5, 5.0),
    (list[int | float], [1, 2.0, 2.5], [1, 2.0, 2.5]),
    (Any, {"free": ["form", 1]}, {"free": ["form", 1]}),
    (dict[str, Any], {"k": [None, True]}, {"k": [None, True]}),
]


@pytest.mark.parametrize(("annotation", "sent", "expected"), CONVERSIONS,
                         ids=[f"{index}-{typing_name}" for index, typing_name in
                              enumerate(str(row[0]).replace("typing.", "") for row in CONVERSIONS)])
def test_conversion(annotation, sent, expected):
    tool = echo_tool(annotation)
    for args in ({"value": sent}, json.dumps({"value": sent})):
        result = tool.call(args)
        assert result == expected
        assert type(result) is type(expected)


def test_nested_values_convert_recursively():
    tool = echo_tool(dict[str, list[Segment]])
    result = tool.call({"value": {"path": [{"start": {"x": 0, "y": 0}, "end": {"x": 1, "y": 1}, "label": "a"}]}})
    assert result == {"path": [Segment(Point(0.0, 0.0), Point(1.0, 1.0), "a")]}
    assert isinstance(result["path"][0].start, Point)


# -- refusals: the text says where, what was expected, what arrived -----------------------------------

REFUSALS = [
    (int, "5", "value", 'a string, not', "send 5 without quotes"),
    (int, True, "value", "expected an integer, got true", None),
    (int, 5.5, "value", "expected an integer, got a number (5.5)", None),
    (int, 2**64, "value", "between", None),
    (float, "1.5", "value", "send 1.5 without quotes", None),
    (bool, "true", "value", "send true without quotes", None),
    (bool, 1, "value", "expected true or false, got an integer (1)", None),
    (str, 5, "value", 'put it in quotes: "5"', None),
    (str, None, "value", "expected a string, got null", None),
    (dt.datetime, "yesterday", "value", "ISO 8601 date-time", None),
    (dt.date, "2024-13-01", "value", "month must be in 1..12", None),
    (dt.timedelta, "P1Y", "value", "years and months have no fixed length", None),
    (dt.timedelta, 3600, "value", "ISO 8601 duration", None),
    (decimal.Decimal, "NaN", "value", "like a JSON number", None),
    (decimal.Decimal, 1.5, "value", 'put it in quotes: "1.5"', None),
    (uuid.UUID, "not-a-uuid", "value", "UUID", None),
    (bytes, "***", "value", "base64", None),
    (bytes, 300000000, "value", "expected a base64-encoded string, got an integer", None),
    (pathlib.Path, "a\x00b", "value", "NUL", None),
    (Color, "blue", "value", 'one of "red", "green"', None),
    (Color, "RED", "value", 'one of "red", "green"', None),
    (Literal[1, 2], True, "value", "got true", None),
    (Literal["a"], "b", "value", 'expected "a"', None),
    (list[int], [1, "2", 3], "value[1]", "send 2 without quotes", None),
    (list[int], "[1, 2]", "value", "not JSON text inside a string", None),
    (tuple[int, str], [1], "value", "exactly 2 items", None),
    (tuple[int, str], [1, 2], "value[1]", "expected a string", None),
    (set[int], [1, 1], "value", "items must be unique", None),
    (dict[int, str], {"01": "x"}, 'value["01"]', "decimal digits", None),
    (dict[int, str], {"one": "x"}, "value.one", "decimal digits", None),
    (dict[str, int], {"a": "1"}, 'value.a', "send 1 without quotes", None),
    (Point, {"x": 1}, "value.y", "missing required key", None),
    (Point, {"x": 1, "y": 2, "z": 3}, "value", 'unexpected key "z"', None),
    (Point, {"x": 1, "Y": 2}, "value", "did you mean 'y'", None),
    (Point, "{\"x\": 1, \"y\": 2}", "value", "not JSON text inside a string", None),
    (Segment, {"start": {"x": 0, "y": 0}, "end": {"x": 1, "y": "1"}}, "value.end.y", "send 1 without quotes", None),
    (list[Point], [{"x": 1, "y": 1}, {"x": 1}], "value[1].y", "missing required key", None),
    (Tree, {"value": 1, "children": [{"value": "2"}]}, "value.children[0].value", "without quotes", None),
    (Checked, {"size": -1}, "value", "could not build Checked: ValueError: size must not be negative", None),
    (Model, {"name": "n", "count": "3"}, "value.count", "Input should be a valid integer", None),
    (Model, {"name": "n", "extra": 1, "count": "x"}, "value.count", "Input should be a valid integer", None),
    (Optional[int], "x", "value", "expected an integer or null, got a string", None),
    (int | Point, {"x": 1}, "value.y", "missing required key", None),
    (Annotated[int, pydantic.Field(ge=0, le=10)], 11, "value", "must be <= 10, got 11", None),
    (Annotated[str, pydantic.Field(max_length=3)], "abcd", "value", "at most 3 characters", None),
    (Annotated[str, pydantic.Field(pattern=r"^\d+$")], "12a", "value", "must match the pattern", None),
]


@pytest.mark.parametrize(("annotation", "sent", "argument", "fragment", "fragment2"), REFUSALS,
                         ids=[str(index) for index in range(len(REFUSALS))])
def test_refusal(annotation, sent, argument, fragment, fragment2):
    tool = echo_tool(annotation)
    for args in ({"value": sent}, json.dumps({"value": sent})):
        with pytest.raises(ToolCallError) as caught:
            tool.call(args)
        error = caught.value
        assert error.tool == "echo"
        assert error.argument == argument
        assert fragment in error.problem
        if fragment2:
            assert fragment2 in error.problem
        assert error.schema == tool.parameters
        text = str(error)
        assert text.startswith(f"Error calling tool 'echo', argument '{argument}': ")
        assert "Parameters schema: " in text and json.dumps(tool.parameters["properties"]["value"],
                                                            separators=(",", ":")) in text


def test_raise_on_err_false_returns_the_text():
    tool = echo_tool(int)
    text = call_func("echo", '{"value": "5"}', ns=[tool], raise_on_err=False)
    assert isinstance(text, str) and text.startswith("Error calling tool 'echo', argument 'value'")
    assert tool.call({"value": "x"}, raise_on_err=False).startswith("Error calling tool 'echo'")


def add(a: int, b: int = 1) -> int:
    """Add two integers."""
    return a + b


def test_unknown_and_missing_arguments():
    with pytest.raises(ToolCallError) as caught:
        call_func("add", {"a": 1, "c": 2}, ns=[add])
    assert caught.value.argument == "c"
    assert "unexpected argument; this tool takes: a, b" in caught.value.problem
    with pytest.raises(ToolCallError) as caught:
        call_func("add", {"b": 2}, ns=[add])
    assert (caught.value.argument, caught.value.problem) == ("a", "missing required argument")
    with pytest.raises(ToolCallError, match="did you mean 'b'"):
        call_func("add", {"a": 1, "B": 2}, ns=[add])


def test_arguments_that_are_not_an_object():
    for sent, fragment in [("[1, 2]", "must be a JSON object"), ("5", "must be a JSON object"),
                           ("{", "not valid JSON"), ('{"a": 1} {}', "extra data"),
                           ("{'a': 1}", "not valid JSON"), ('{"a": NaN}', "NaN is not a JSON number"),
                           (b"\xff\xfe", "not UTF-8"), (42, "must be a JSON object")]:
        with pytest.raises(ToolCallError, match="Error calling tool 'add': ") as caught:
            call_func("add", sent, ns=[add])
        assert fragment in caught.value.problem
        assert caught.value.argument is None


def test_blank_arguments_mean_none():
    def ping() -> str:
        return "pong"

    for sent in (None, "", "  ", {}, "{}", b"{}"):
        assert call_func("ping", sent, ns=[ping]) == "pong"


def test_missing_optional_arguments_are_not_passed():
    marker = object()

    def tool(a: int, b: Any = marker, c: list[int] | None = None):
        return a, b, c

    assert call_func("tool", {"a": 1}, ns=[tool]) == (1, marker, None)


def test_null_for_an_optional_parameter_means_left_out():
    """OpenAI strict mode makes optional properties nullable and sends null for "use the default"."""
    assert call_func("add", {"a": 1, "b": None}, ns=[add]) == 2
    with pytest.raises(ToolCallError, match="expected an integer, got null"):
        call_func("add", {"a": None}, ns=[add])
    tool = echo_tool(Segment)
    assert tool.call({"value": {"start": {"x": 0, "y": 0}, "end": {"x": 1, "y": 1}, "label": None}}).label == ""


def test_argument_names_are_never_rewritten():
    def profile(first_name: str) -> str:
        return first_name

    for key in ("first-name", "firstName", "First_name", "first_name "):
        with pytest.raises(ToolCallError, match="unexpected argument"):
            call_func("profile", {key: "x"}, ns=[profile])


# -- how parameters are passed ----------------------------------------------------------------------

def test_positional_only_varargs_and_varkw():
    def combine(a: int, b: int = 10, /, *rest: int, scale: int = 1, **extra: str):
        return a, b, rest, scale, extra

    ns = [combine]
    assert call_func("combine", {"a": 1}, ns=ns) == (1, 10, (), 1, {})
    assert call_func("combine", {"a": 1, "rest": [3, 4], "tag": "t"}, ns=ns) == (1, 10, (3, 4), 1, {"tag": "t"})
    assert call_func("combine", {"a": 1, "b": 2, "scale": 3}, ns=ns) == (1, 2, (), 3, {})
    with pytest.raises(ToolCallError) as caught:
        call_func("combine", {"a": 1, "tag": 5}, ns=ns)
    assert caught.value.argument == "tag" and 'put it in quotes: "5"' in caught.value.problem
    with pytest.raises(ToolCallError) as caught:
        call_func("combine", {"a": 1, "rest": [1, "2"]}, ns=ns)
    assert caught.value.argument == "rest[1]"


def test_positional_only_gap_is_filled_with_the_default():
    def pos(a: int = 1, b: int = 2, /):
        return a, b

    assert call_func("pos", {"b": 5}, ns=[pos]) == (1, 5)


def test_methods_partials_and_callable_instances():
    import functools

    class Counter:
        def __init__(self):
            self.total = 0

        def bump(self, by: int) -> int:
            self.total += by
            return self.total

    class Doubler:
        def __call__(self, x: int) -> int:
            return 2 * x

    counter = Counter()
    scaled = functools.partial(add, b=100)
    ns = {"bump": counter.bump, "double": Doubler(), "scaled": scaled}
    assert call_func("bump", {"by": 2}, ns=ns) == 2
    assert call_func("double", '{"x": 4}', ns=ns) == 8
    assert call_func("scaled", {"a": 1}, ns=ns) == 101
    with pytest.raises(ToolCallError, match="unexpected argument"):
        call_func("scaled", {"a": 1, "b": 2}, ns=ns)  # the bound argument is not the model's to set


def test_tools_from_schemas_validate_against_the_schema():
    received = {}

    def dispatch(**arguments):
        received.update(arguments)
        return "ok"

    schema = {"type": "object", "properties": {"first-name": {"type": "string", "maxLength": 5},
                                               "age": {"type": "integer", "minimum": 0}},
              "required": ["first-name"], "additionalProperties": False}
    tool = Tool.from_schema("person", "A person.", schema, dispatch)
    assert tool.call({"first-name": "Ada", "age": 36}) == "ok"
    assert received == {"first-name": "Ada", "age": 36}
    with pytest.raises(ToolCallError, match="must be >= 0"):
        tool.call({"first-name": "Ada", "age": -1})
    with pytest.raises(ToolCallError, match="at most 5 characters"):
        tool.call({"first-name": "Adalbert"})
    # a hand-made Tool without `args` is validated against `parameters` alone
    bare = Tool(name="bare", description="", parameters=schema, fn=dispatch)
    with pytest.raises(ToolCallError, match="unexpected argument"):
        bare.call({"first-name": "Ada", "other": 1})
    assert bare.call('{"first-name": "Bo"}') == "ok"


def test_a_hand_made_tool_reads_its_schema_as_tool_from_schema_does():
    # one reader of "parameters schema -> arguments object" (schema.params.arguments_object);
    # dispatch had its own copy, which worded a non-object schema differently
    def echo(**arguments: Any) -> dict:
        return arguments

    not_an_object = {"$ref": "#/$defs/S", "$defs": {"S": {"type": "string"}}}
    with pytest.raises(SchemaError) as from_schema:
        Tool.from_schema("text", "", not_an_object, echo)
    with pytest.raises(ToolCallError) as called:
        Tool(name="text", description="", parameters=not_an_object, fn=echo).call({})
    assert str(from_schema.value) in called.value.problem
    open_map = {"type": "object", "additionalProperties": {"type": "integer"}}
    for built in (Tool.from_schema("m", "", open_map, echo),
                  Tool(name="m", description="", parameters=open_map, fn=echo)):
        assert built.call({"a": 1}) == {"a": 1}
        with pytest.raises(ToolCallError, match="expected an integer"):
            built.call({"a": "x"})


def test_hand_built_tool_records():
    args = ir.Object(fields=(ir.Field("a", ir.Int()), ir.Field("b", ir.Int(), required=False, default=1)))
    tool = Tool(name="plus", description="", parameters={"type": "object"}, fn=add, args=args,
                passing=(("a", "keyword"), ("b", "keyword")))
    assert tool.call({"a": 2}) == 3


def test_converter_is_compiled_once_per_tool_and_limits():
    tool = Tool.from_function(add)
    plan = call_plan(tool)
    assert call_plan(tool) is plan
    tool.call({"a": 1})
    assert tool._cache["dispatch"] is plan
    other = call_plan(tool, Limits(max_string=10))
    assert other is not plan and call_plan(tool, Limits(max_string=10)) is other
    assert call_plan(tool) is plan


def test_compile_converter_reports_paths():
    node = ir.Array(item=ir.Object(fields=(ir.Field("n", ir.Int()),)))
    convert = compile_converter(node, Limits())
    assert convert([{"n": 1}], "items") == [{"n": 1}]
    with pytest.raises(ConversionError) as caught:
        convert([{"n": 1}, {"n": "2"}], "items")
    assert caught.value.where() == "items[1].n"
    assert "send 2 without quotes" in caught.value.problem


# -- the tool's own exceptions ------------------------------------------------------------------------

def divide(a: float, b: float) -> float:
    return a / b


def test_tool_exception_becomes_a_tool_call_error_with_its_line():
    with pytest.raises(ToolCallError) as caught:
        call_func("divide", {"a": 1, "b": 0}, ns=[divide])
    error = caught.value
    assert error.tool == "divide" and error.argument is None and error.schema is None
    assert error.problem.startswith("the tool raised ZeroDivisionError: float division by zero")
    assert "in divide, line" in error.problem and "return a / b" in error.problem
    assert isinstance(error.__cause__, ZeroDivisionError)
    frames = traceback.extract_tb(error.__cause__.__traceback__)
    assert [frame.name for frame in frames] == ["divide"]  # no nbtools frames
    assert call_func("divide", {"a": 1, "b": 0}, ns=[divide], raise_on_err=False) == str(error)


async def divide_later(a: float, b: float) -> float:
    await asyncio.sleep(0)
    return a / b


def test_coroutine_tool_called_synchronously_shows_only_its_own_frames():
    with pytest.raises(ToolCallError) as caught:
        call_func("divide_later", {"a": 1, "b": 0}, ns=[divide_later])
    cause = caught.value.__cause__
    assert isinstance(cause, ZeroDivisionError)
    assert [frame.name for frame in traceback.extract_tb(cause.__traceback__)] == ["divide_later"]
    # no "no running event loop" from nbtools chained as the context of the tool's exception
    assert cause.__context__ is None
    # no frame from the nbtools package itself (judged by the package's folder, not by the word
    # "nbtools", which a checkout in a folder named nbtools puts in every path)
    package = os.path.dirname(nbtools.__file__) + os.sep
    assert not [frame.filename for frame in traceback.extract_tb(cause.__traceback__)
                if frame.filename.startswith(package)]
    assert package not in "".join(traceback.format_exception(cause))


@pytest.mark.parametrize("exception", [KeyboardInterrupt, SystemExit])
def test_interrupts_raised_by_the_tool_are_its_error(exception):
    # DESIGN "Calling rules" (issue 10): nothing a tool raises ends the caller
    def stop():
        raise exception()

    text = call_func("stop", {}, ns=[stop], raise_on_err=False)
    assert f"the tool raised {exception.__name__}" in text


@pytest.mark.usefixtures("sigint_raises")
def test_a_persons_interrupt_passes_through():
    import signal

    def stop():
        signal.raise_signal(signal.SIGINT)  # what Ctrl+C / the kernel's Interrupt delivers
        return "not reached"

    with pytest.raises(KeyboardInterrupt):
        call_func("stop", {}, ns=[stop], raise_on_err=False)


async def test_interrupts_raised_by_the_tool_are_its_error_async():
    async def stop():
        raise KeyboardInterrupt()

    assert "the tool raised KeyboardInterrupt" in await call_func_async("stop", {}, ns=[stop], raise_on_err=False)


def test_a_tool_raising_tool_call_error_keeps_its_text():
    def nested() -> None:
        call_func("add", {"a": "x"}, ns=[add])

    with pytest.raises(ToolCallError) as caught:
        call_func("nested", {}, ns=[nested])
    assert caught.value.tool == "add"


# -- async tools --------------------------------------------------------------------------------------

async def slow_add(a: int, b: int) -> int:
    await asyncio.sleep(0)
    return a + b


async def test_async_tools_are_awaited():
    assert await call_func_async("slow_add", '{"a": 1, "b": 2}', ns=[slow_add]) == 3
    assert await call_func_async("add", {"a": 1}, ns=[add]) == 2
    assert await Tool.from_function(slow_add).acall({"a": 2, "b": 2}) == 4
    assert await acall_tool(Tool.from_function(slow_add), {"a": 2, "b": 3}) == 5


def test_sync_call_runs_an_async_tool_without_a_loop():
    assert call_func("slow_add", {"a": 1, "b": 2}, ns=[slow_add]) == 3


async def test_sync_call_runs_an_async_tool_inside_a_running_loop():
    assert call_func("slow_add", {"a": 1, "b": 2}, ns=[slow_add]) == 3


async def test_async_tool_exception():
    async def fail(x: int) -> None:
        raise ValueError(f"bad {x}")

    with pytest.raises(ToolCallError, match="the tool raised ValueError: bad 3") as caught:
        await call_func_async("fail", {"x": 3}, ns=[fail])
    assert [frame.name for frame in traceback.extract_tb(caught.value.__cause__.__traceback__)] == ["fail"]
    with pytest.raises(ToolCallError, match="the tool raised ValueError: bad 4") as caught:
        call_func("fail", {"x": 4}, ns=[fail])
    assert [frame.name for frame in traceback.extract_tb(caught.value.__cause__.__traceback__)] == ["fail"]



def test_registry_limits_apply():
    def take(text: str = "", items: list[int] = (), data: Any = None, n: int = 0) -> str:
        return "ok"

    reg = Registry([take], limits=Limits(max_bytes=150, max_depth=3, max_string=5, max_items=4, max_int=1000))
    assert reg.call("take", {"text": "12345", "items": [1, 2, 3, 4], "data": [[1]], "n": 1000}) == "ok"
    cases = [
        ({"text": "123456"}, "text", "the string is too long: 6 characters, the limit is 5"),
        ({"items": [1, 2, 3, 4, 5]}, "items", "the array is too long: 5"),
        ({"data": {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}}, "data", "too many keys: 5"),
        ({"data": [[[1]]]}, "data[0][0]", "nested too deeply"),
        ({"data": {"k": "123456"}}, "data.k", "the string is too long"),
        ({"data": [1, 1001]}, "data[1]", "between -1000 and 1000"),
        ({"n": 1001}, "n", "between -1000 and 1000"),
        ({"data": "x" * 6}, "data", "the string is too long"),
    ]
    for args, argument, fragment in cases:
        for sent in (args, json.dumps(args)):
            with pytest.raises(ToolCallError) as caught:
                reg.call("take", sent)
            assert caught.value.argument == argument, (args, caught.value)
            assert fragment in caught.value.problem
    with pytest.raises(ToolCallError, match="the arguments are too large: 330 characters, the limit is 150"):
        reg.call("take", json.dumps({"data": ["abcd"] * 40}))
    big = {"data": {key: ["abcde"] * 4 for key in "abcd"}}
    assert len(json.dumps(big)) > 150
    with pytest.raises(ToolCallError, match="the arguments are too large: .* characters as JSON, the limit is 150"):
        reg.call("take", big)


# -- namespaces ----------------------------------------------------------------------------------------

def test_mk_ns_from_list_dict_and_registry():
    listed = mk_ns([add, divide])
    assert set(listed) == {"add", "divide"} and all(isinstance(tool, Tool) for tool in listed.values())
    named = mk_ns({"plus": add, "Path": pathlib.Path, "json": json, "print": print})
    assert set(named) == {"plus"}  # classes, modules and builtins are left out
    assert call_func("plus", {"a": 2}, ns=named) == 3
    reg = Registry([add, divide])
    reg.disable("divide")
    assert set(mk_ns(reg)) == {"add"}
    with pytest.raises(TypeError, match="__builtins__"):
        mk_ns(globals())
    with pytest.raises(ValueError, match="two different tools are named 'add'"):
        mk_ns([add, Tool.from_function(divide, name="add")])


def test_dict_namespaces_do_not_keep_their_callables_alive():
    import gc
    import weakref

    class Holder:  # a callable instance holding data, as a notebook user's tool object might
        def __init__(self) -> None:
            self.data = bytearray(1000)

        def __call__(self, x: int) -> int:
            return x + len(self.data)

    def make_closure():
        def scaled(x: int) -> int:
            return x * 2

        return scaled

    alive = []
    for make in (Holder, make_closure):
        tool_object = make()
        assert call_func("t", {"x": 1}, ns={"t": tool_object}) == tool_object(1)  # key != name
        assert call_func("t", {"x": 2}, ns={"t": tool_object}) == tool_object(2)  # cached Tool
        named = mk_ns({"other": tool_object})["other"]
        assert named.fn is tool_object and named.name == "other"
        alive.append(weakref.ref(tool_object))
        del tool_object, named
    gc.collect()
    assert [ref() for ref in alive] == [None, None]


def test_disabled_tools_are_refused():
    reg = Registry([add])
    reg.disable("add")
    with pytest.raises(ToolCallError, match="the tool .add. is disabled"):
        reg.call("add", {"a": 1})


def test_dotted_tools_resolve_by_their_provider_names():
    reg = Registry()
    reg.add(add, name="math.add")
    assert reg.call("math.add", {"a": 1}) == 2
    assert reg.call("math__add", {"a": 1}) == 2
    assert call_func("math__add", {"a": 1}, ns={"math.add": add}) == 2
    assert call_func("math__add", {"a": 1}, ns=[Tool.from_function(add, name="math.add")]) == 2


def test_default_namespace_is_the_registry():
    from nbtools.registry import registry

    registry.add(add, name="test_call_add")
    try:
        assert call_func("test_call_add", {"a": 4}) == 5
    finally:
        registry.remove("test_call_add")


def test_bad_namespace_is_a_type_error():
    with pytest.raises(TypeError, match="ns must be a Registry"):
        call_func("add", {}, ns="add")


# -- results for the model ------------------------------------------------------------------------------

RESULTS = [
    ("plain text", "plain text"),
    (5, "5"),
    (2.5, "2.5"),
    (True, "true"),
    (None, "null"),
    ({"a": [1, "x"]}, '{"a": [1, "x"]}'),
    ((1, 2), "[1, 2]"),
    (Point(1, 2), '{"x": 1, "y": 2}'),
    (Pair(1, "b"), '{"left": 1, "right": "b"}'),
    (Model(name="m", count=2), '{"name": "m", "count": 2, "when": null}'),
    (Color.RED, "red"),
    (Level.HIGH, "2"),
    ([Color.GREEN], '["green"]'),
    (dt.date(2024, 1, 2), "2024-01-02"),
    ({"at": dt.datetime(2024, 1, 2, 3, 4)}, '{"at": "2024-01-02T03:04:00"}'),
    ({"d": dt.timedelta(hours=1, minutes=30)}, '{"d": "PT1H30M"}'),
    ({"b": b"hi"}, '{"b": "aGk="}'),
    ({3, 1, 2}, "[1, 2, 3]"),
    ({Level.LOW: 1, 2: "x"}, '{"1": 1, "2": "x"}'),
    (float("nan"), "NaN"),
    ([float("inf")], '["Infinity"]'),
    (decimal.Decimal("1.10"), "1.10"),
    (pathlib.Path("a/b"), "a/b"),
    ({"é": "ü"}, '{"é": "ü"}'),
]


@pytest.mark.parametrize(("value", "text"), RESULTS, ids=[str(index) for index in range(len(RESULTS))])
def test_result_text(value, text):
    assert result_text(value) == text


def test_result_text_of_cycles_and_odd_objects():
    loop: list[Any] = [1]
    loop.append(loop)
    assert result_text(loop) == '[1, "<cycle>"]'

    class Odd:
        def __str__(self):
            return "odd!"

    assert result_text(Odd()) == "odd!"
    assert result_text({"o": Odd()}) == '{"o": "odd!"}'


def test_result_text_truncation_is_marked():
    text = result_text("x" * 50, max_chars=10)
    assert text == "x" * 8 + "\n[truncated: 40 of 50 characters not shown]\n" + "x" * 2  # start and end kept
    assert result_text(list(range(5)), max_chars=100) == "[0, 1, 2, 3, 4]"
    assert result_text(list(range(100)), max_chars=20) == "[0, 1, 2, 3, 4,\n[truncated: 370 of 390 characters not shown]\n, 99]"


def test_to_json_is_json():
    value = {"p": Point(1, 2), "s": {Segment(Point(0, 0), Point(1, 1)).label}, "m": Model(name="x")}
    assert json.loads(json.dumps(to_json(value))) == {"p": {"x": 1, "y": 2}, "s": [""],
                                                       "m": {"name": "x", "count": 0, "when": None}}


def test_parse_duration():
    assert parse_duration("P1W2DT3H4M5.5S") == dt.timedelta(weeks=1, days=2, hours=3, minutes=4, seconds=5.5)
    assert parse_duration("pt1m") == dt.timedelta(minutes=1)
    for bad in ("P", "PT", "1D", "P1M", "P-1D", "PT1H2D"):
        with pytest.raises(ValueError):
            parse_duration(bad)
