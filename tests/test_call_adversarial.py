"""What a hostile or confused model sends: every attempt is refused, says why, and runs nothing."""

from __future__ import annotations

import builtins
import dataclasses
import decimal
import functools
import json
import operator
import os
import pathlib
import sys
import time
from typing import Any

import pytest

from nbtools import Limits, Registry, Tool, ToolCallError
from nbtools.call import call_func, mk_ns

CALLS: list[tuple[str, Any]] = []


def add(a: int, b: int = 1) -> int:
    """Add two integers."""
    CALLS.append(("add", (a, b)))
    return a + b


def record(text: str = "", data: Any = None, n: int = 0, blob: bytes = b"") -> str:
    """Record what arrived."""
    CALLS.append(("record", (text, data, n, blob)))
    return "recorded"


@dataclasses.dataclass
class Point:
    x: float
    y: float


def plot(p: Point, label: str = "") -> str:
    CALLS.append(("plot", p))
    return "plotted"


@pytest.fixture(autouse=True)
def no_calls_yet():
    CALLS.clear()
    yield


def namespaces() -> dict[str, Any]:
    return {
        "registry": Registry([add, record, plot]),
        "list": [add, record, plot],
        "dict": {"add": add, "record": record, "plot": plot},
        "mk_ns": mk_ns([add, record, plot]),
    }


NAMESPACE_KINDS = ["registry", "list", "dict", "mk_ns"]


def refused(name: Any, args: Any, ns: Any, **options: Any) -> ToolCallError:
    """Call, expect a ToolCallError, check nothing ran, and return the error."""
    with pytest.raises(ToolCallError) as caught:
        call_func(name, args, ns=ns, **options)
    assert CALLS == [], f"a refused call ran: {CALLS}"
    text = call_func(name, args, ns=ns, raise_on_err=False, **options)
    assert text == str(caught.value)
    assert CALLS == []
    return caught.value


# -- names: no attribute paths, no dunders, no builtins, no globals -------------------------------------

DUNDER_NAMES = ["__builtins__", "__import__", "__class__", "__globals__", "__init__", "__subclasses__",
                "__call__", "__dict__"]
UNKNOWN_NAMES = [
    "add.__globals__", "add.__class__.__subclasses__", "add.__self__", "record.__code__",
    "fn.__self__.os.system", "add.__globals__.os.system", "os.system", "os", "sys", "eval", "exec",
    "open", "getattr", "compile", "globals", "get_ipython", "print", "breakpoint", "input",
    "ADD", "Add", " add", "add ", "add\x00", "add()", "add;import os", "add\n", "registry.add",
    "add/..", "math__add", "nbtools.call.call_func", "Point", "CALLS",
]


@pytest.mark.parametrize("kind", NAMESPACE_KINDS)
@pytest.mark.parametrize("name", DUNDER_NAMES)
def test_dunder_names_are_never_tools(kind, name):
    error = refused(name, {}, namespaces()[kind])
    assert error.problem == "names with double underscores are never tools"


@pytest.mark.parametrize("kind", NAMESPACE_KINDS)
@pytest.mark.parametrize("name", UNKNOWN_NAMES)
def test_names_resolve_only_exactly(kind, name):
    error = refused(name, {"a": 1}, namespaces()[kind])
    assert error.tool == name
    assert error.problem.startswith(f"no tool named {name!r}")
    assert "available tools: add, plot, record" in error.problem


@pytest.mark.parametrize("name", [None, 5, b"add", ["add"], "", add])
def test_names_must_be_strings(name):
    error = refused(name, {"a": 1}, [add])
    assert "the tool name must be a non-empty string" in error.problem


def test_case_mistakes_get_a_suggestion():
    assert "did you mean 'add'" in refused("ADD", {"a": 1}, [add]).problem


KERNEL_LIKE = {"__builtins__": builtins, "__name__": "__main__", "add": add, "os": os, "open": open}


@pytest.mark.parametrize("name", ["add", "os", "open", "__builtins__"])
def test_a_globals_dict_is_refused_as_a_namespace(name):
    with pytest.raises(TypeError, match="__builtins__.*Register the tools instead"):
        call_func(name, {"a": 1}, ns=KERNEL_LIKE)
    with pytest.raises(TypeError, match="__builtins__"):
        call_func(name, {"a": 1}, ns=KERNEL_LIKE, raise_on_err=False)  # a bug of the caller, not the model's
    with pytest.raises(TypeError):
        mk_ns(KERNEL_LIKE)
    assert CALLS == []


def test_module_globals_are_refused():
    with pytest.raises(TypeError, match="__builtins__"):
        call_func("add", {"a": 1}, ns=globals())
    with pytest.raises(TypeError, match="__builtins__"):
        call_func("add", {"a": 1}, ns=vars(sys.modules[__name__]))


class Recorder:
    def __init__(self, value: int = 0):
        CALLS.append(("Recorder", value))


DANGEROUS_DICT = {
    "add": add,
    "os": os,
    "open": open,
    "eval": eval,
    "getattr": getattr,
    "system": os.system,
    "system_partial": functools.partial(os.system, "echo pwned"),
    "Path": pathlib.Path,
    "Recorder": Recorder,
    "append": [].append,
    "attrgetter": operator.attrgetter("__class__"),
    "dict_get": {}.get,
    "str_join": str.join,
    "not_callable": 42,
}


@pytest.mark.parametrize(("name", "kind"), [
    ("os", "a module"), ("open", "a builtin"), ("eval", "a builtin"), ("getattr", "a builtin"),
    ("system", "a builtin"), ("system_partial", "a builtin"), ("Path", "a class"), ("Recorder", "a class"),
    ("append", "a builtin"), ("attrgetter", "a builtin"), ("dict_get", "a builtin"), ("str_join", "a builtin"),
    ("not_callable", "not callable"),
])
def test_builtins_classes_and_modules_in_a_dict_are_never_called(name, kind):
    error = refused(name, {"path": "/"}, DANGEROUS_DICT)
    assert error.problem.startswith(f"{name!r} is {kind}")
    assert "register them explicitly as Tools" in error.problem
    assert name not in mk_ns(DANGEROUS_DICT)
    assert call_func("add", {"a": 1}, ns=DANGEROUS_DICT) == 2  # the plain function is fine


def test_a_class_is_a_tool_only_when_registered_explicitly():
    reg = Registry()
    reg.add(Recorder)
    assert isinstance(reg.call("Recorder", {"value": 3}), Recorder)
    assert CALLS == [("Recorder", 3)]


# -- rebinding after registration changes nothing ---------------------------------------------------------

def test_rebinding_a_name_after_registration(monkeypatch):
    namespace: dict[str, Any] = {}
    exec("def greet(name: str) -> str:\n    return 'hi ' + name", namespace)
    reg = Registry([namespace["greet"]])
    listed = mk_ns([namespace["greet"]])
    tools = mk_ns({"greet": namespace["greet"]})
    exec("def greet(name: str) -> str:\n    return 'rebound'", namespace)
    assert reg.call("greet", {"name": "x"}) == "hi x"
    assert call_func("greet", {"name": "x"}, ns=listed) == "hi x"
    assert call_func("greet", {"name": "x"}, ns=tools) == "hi x"
    # the module attribute too
    module = sys.modules[__name__]
    reg.add(add)
    monkeypatch.setattr(module, "add", lambda a, b=1: "rebound")
    assert reg.call("add", {"a": 1}) == 2


def test_changing_the_dict_after_mk_ns_changes_nothing():
    source = {"add": add}
    tools = mk_ns(source)
    source["add"] = record
    source["record"] = record
    assert call_func("add", {"a": 1}, ns=tools) == 2
    assert CALLS == [("add", (1, 1))]
    CALLS.clear()
    assert refused("record", {}, tools).problem.startswith("no tool named 'record'")


# -- keys: duplicates, collisions, no rewriting -------------------------------------------------------------

@pytest.mark.parametrize(("text", "key"), [
    ('{"a": 1, "a": 2}', "a"),
    ('{"a": 1, "b": 2, "a": 1}', "a"),
    ('{"a": 1, "\\u0061": 2}', "a"),
    ('{"a": 1, "b": {"x": 1, "x": 2}}', "x"),
])
def test_duplicate_keys_are_refused(text, key):
    def take(a: int, b: Any = None) -> None:
        CALLS.append(("take", a))

    error = refused("take", text, [take])
    assert error.problem == f'the key "{key}" appears twice in one object of the arguments JSON; send each key once'


@pytest.mark.parametrize("text", [
    '{"p": {"x": 1, "x": 2, "y": 3}}',
    '{"p": {"x": 1, "y": 3}, "label": "a:b", "label": "c"}',
    '{"p": {"x": 1, "y": 3, "y": 4}, "label": "12:30"}',
])
def test_duplicate_keys_in_nested_objects_are_refused(text):
    assert "appears twice" in refused("plot", text, [plot]).problem


@pytest.mark.parametrize("text", [
    '{"text": "a:b:c"}',
    '{"text": "a\\u003ab", "n": 2}',
    '{"data": {"url": "http://x:80/"}, "text": "\\"q\\": 1"}',
    '{"data": {"k:1": ["::"]}}',
])
def test_colons_inside_strings_are_not_duplicates(text):
    assert call_func("record", text, ns=[record]) == "recorded"


@pytest.mark.parametrize(("key", "fragment"), [
    ("01", "decimal digits"), ("-0", "decimal digits"), ("1.0", "decimal digits"), (" 1", "decimal digits"),
    ("one", "decimal digits"), ("99999999999999999999", "between"),
])
def test_integer_keys_have_one_spelling(key, fragment):
    def scores(by_id: dict[int, str]) -> None:
        CALLS.append(("scores", by_id))

    error = refused("scores", {"by_id": {"1": "a", key: "b"}}, [scores])
    assert fragment in error.problem
    assert error.argument == f'by_id[{json.dumps(key)}]' or error.argument == f"by_id.{key}"


@pytest.mark.parametrize("key", ["A", "a ", "a-b", "A_", "__class__", "a.b", "kwargs", "self"])
def test_argument_names_are_exact(key):
    error = refused("add", {"a": 1, key: 2}, [add])
    assert error.argument == key and error.problem.startswith("unexpected argument")


def test_a_model_cannot_choose_the_class_to_build():
    for extra in ({"__class__": "os.system"}, {"__init__": {}}, {"cls": "Recorder"}):
        error = refused("plot", {"p": {"x": 1, "y": 2, **extra}}, [plot])
        assert error.argument == "p" and "unexpected key" in error.problem


# -- size: huge, long, deep -----------------------------------------------------------------------------

def fast(seconds: float = 0.5):
    """Refusals must not do the expensive thing first."""
    class Timer:
        def __enter__(self):
            self.start = time.perf_counter()

        def __exit__(self, *exc):
            assert time.perf_counter() - self.start < seconds

    return Timer()


@pytest.mark.parametrize(("args", "argument", "fragment"), [
    ('{"text": "' + "x" * (1 << 20) + '"}', None, "the arguments are too large"),
    ({"text": "x" * ((1 << 20) + 1)}, "text", "the string is too long"),
    ({"data": ["x" * ((1 << 20) + 1)]}, "data[0]", "the string is too long"),
    ({"data": list(range((1 << 20) + 1))}, "data", "the array is too long"),
    ('{"data": ' + "[" * 100 + "]" * 100 + "}", "data" + "[0]" * 63, "nested too deeply"),
    ('{"data": ' + "[" * 200_000 + "]" * 200_000 + "}", None, "nested too deeply"),
    ('{"data": ' + '{"k": ' * 70 + "1" + "}" * 70 + "}", "data" + ".k" * 63, "nested too deeply"),
    ({"n": 2**63 + 1}, "n", "between"),
    ('{"n": 9223372036854775809}', "n", "between"),
    ({"data": [-(2**63) - 1]}, "data[0]", "between"),
    ('{"n": 1' + "0" * 5000 + "}", None, "an integer with too many digits"),
    ('{"data": 1e400}', "data", "finite"),
    ('{"data": NaN}', None, "NaN is not a JSON number"),
    ('{"data": [Infinity]}', None, "Infinity is not a JSON number"),
    ('{"n": -Infinity}', None, "-Infinity is not a JSON number"),
    ({"data": float("nan")}, "data", "finite"),
    ({"blob": 300_000_000}, "blob", "expected a base64-encoded string, got an integer"),
    ({"blob": "A" * ((1 << 20) + 4)}, "blob", "the string is too long"),
])
def test_oversized_values_are_refused(args, argument, fragment):
    with fast():
        error = refused("record", args, [record])
    assert error.argument == argument
    assert fragment in error.problem


def test_deep_python_structures_are_refused_without_recursion_errors():
    deep: Any = []
    for _ in range(10_000):
        deep = [deep]
    error = refused("record", {"data": deep}, [record])
    assert "nested too deeply" in error.problem


def test_limits_are_per_registry():
    reg = Registry([record], limits=Limits(max_depth=2, max_string=3, max_items=3, max_bytes=64, max_int=9))
    assert reg.call("record", {"data": [1, 2, 3], "text": "abc", "n": 9}) == "recorded"
    CALLS.clear()
    for args in ({"data": [[1]]}, {"text": "abcd"}, {"data": [1, 2, 3, 4]}, {"n": 10}, '{"text": "' + " " * 64 + '"}'):
        refused("record", args, reg)


# -- not JSON, not an object, wrong types -------------------------------------------------------------------

@pytest.mark.parametrize(("args", "fragment"), [
    ("not json", "not valid JSON"),
    ("{", "not valid JSON"),
    ("{'a': 1}", "not valid JSON"),
    ('{"a": 1,}', "not valid JSON"),
    ('{"a": 1} trailing', "extra data"),
    ('{"a": 1}{"a": 2}', "extra data"),
    ("[1]", "must be a JSON object"),
    ('"a"', "must be a JSON object"),
    ("null", "must be a JSON object"),
    ("true", "must be a JSON object"),
    (b"\x80abc", "not UTF-8"),
    ([("a", 1)], "must be a JSON object"),
    ({"a"}, "must be a JSON object"),
    (1.5, "must be a JSON object"),
])
def test_arguments_must_be_a_json_object(args, fragment):
    error = refused("add", args, [add])
    assert fragment in error.problem and error.argument is None


@pytest.mark.parametrize(("args", "argument", "fragment"), [
    ({"a": "1"}, "a", "a string, not an integer: send 1 without quotes"),
    ({"a": True}, "a", "got true"),
    ({"a": [1]}, "a", "got an array"),
    ({"a": {"value": 1}}, "a", "got an object"),
    ({"a": None}, "a", "got null"),
    ({"a": 1.5}, "a", "got a number (1.5)"),
    ({"a": 1, "b": "2"}, "b", "send 2 without quotes"),
    ({"a": object()}, "a", "a Python object (not a JSON value)"),
])
def test_wrong_types_are_refused(args, argument, fragment):
    error = refused("add", args, [add])
    assert (error.argument, fragment in error.problem) == (argument, True), error.problem


@pytest.mark.parametrize("data", [{1, 2}, object(), {1: "x"}, b"raw", [pathlib.Path("/")]])
def test_python_values_that_are_not_json_are_refused(data):
    error = refused("record", {"data": data}, [record])
    assert "JSON" in error.problem or "keys must be strings" in error.problem


def test_refused_calls_leave_the_namespace_alone():
    reg = Registry([add, record])
    before = (reg.names(), [tool.fn for tool in reg])
    for name, args in [("__class__", {}), ("add", '{"a": "1"}'), ("add.__globals__", {}), ("record", "[")]:
        refused(name, args, reg)
    assert (reg.names(), [tool.fn for tool in reg]) == before
    assert Tool.from_function(add).fn is add


# -- fuzzing: whatever arrives, the answer is a result or a ToolCallError, and nothing else runs --------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(["add", "record", "plot", "nope", "__class__", "add.__globals__"]),
       arguments=st.dictionaries(st.sampled_from(["a", "b", "p", "label", "text", "data", "n", "blob", "x"]),
                                 JSON_VALUES, max_size=4))
def test_fuzzed_calls_answer_or_refuse(name, arguments):
    for sent in (arguments, json.dumps(arguments)):
        CALLS.clear()
        try:
            result = call_func(name, sent, ns=[add, record, plot])
        except ToolCallError as error:
            assert CALLS == [], (name, sent, CALLS)
            assert str(error).startswith(f"Error calling tool {name!r}")
        else:
            assert len(CALLS) == 1 and CALLS[0][0] == name
            assert result in ("recorded", "plotted") or isinstance(result, int)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet='{}[]":,0123456789.eE-+ abtrufnlsNI\\\\u', max_size=60))
def test_fuzzed_json_text_answers_or_refuses(text):
    CALLS.clear()
    answer = call_func("record", text, ns=[record], raise_on_err=False)
    assert answer == "recorded" or answer.startswith("Error calling tool 'record'")
    assert len(CALLS) == (answer == "recorded")


# -- time: no input makes a refusal slow (regular expressions, digit conversions) ------------------------

def measure(n: int = 0, x: float = 0.0, amount: decimal.Decimal = decimal.Decimal(0),
            counts: dict[int, int] | None = None) -> str:
    CALLS.append(("measure", (n, x, amount, counts)))
    return "measured"


DIGITS = "1" * 200_000  # a backtracking number pattern takes minutes on this; a linear one, milliseconds


@pytest.mark.parametrize(("args", "argument", "fragment"), [
    ({"n": DIGITS + "x"}, "n", "expected an integer, got a string"),
    ({"x": DIGITS + "x"}, "x", "expected a number, got a string"),
    ({"x": " " + DIGITS + ".5e"}, "x", "expected a number, got a string"),
    ({"amount": DIGITS + "x"}, "amount", "expected a decimal number"),
    ({"amount": DIGITS + ".1.1"}, "amount", "expected a decimal number"),
    ({"counts": {"7" * 5000: 1}}, "counts", "digits"),
    ('{"counts": {"' + "7" * 5000 + '": 1}}', "counts", "digits"),
])
def test_long_digit_strings_are_refused_quickly(args, argument, fragment):
    with fast(2.0):
        error = refused("measure", args, [measure])
    assert error.argument.startswith(argument) and fragment in error.problem
    assert len(str(error)) < 2000  # the text for the model quotes an excerpt, not the megabytes


def test_a_number_in_quotes_still_gets_the_hint():
    assert "send 12 without quotes" in refused("measure", {"n": "12"}, [measure]).problem
    assert "send 1.5e3 without quotes" in refused("measure", {"x": " 1.5e3"}, [measure]).problem


def test_a_tool_whose_schema_is_too_deep_is_refused_not_a_crash():
    deep: dict = {"type": "string"}
    for _ in range(3000):
        deep = {"type": "array", "items": deep}
    tool = Tool(name="deep", description="", parameters={"type": "object", "properties": {"x": deep}},
                fn=lambda **arguments: CALLS.append(("deep", arguments)))
    error = refused("deep", {"x": "s"}, [tool])
    assert "this tool cannot be called" in error.problem and "nests more than" in error.problem


# The duplicate-key check is skipped when the colons of the text equal the keys parsed (see
# `call.jsontext.no_key_dropped` for why that proves no key was repeated). Pinned on every path a
# call takes: flat arguments, a closed type, a free-form value; keys and strings full of colons,
# quotes and backslashes.
_TRICKY = "a:\\\"é"


def _flat(a: str, b: str = "") -> str:
    return a + b


def _closed(data: dict[str, str]) -> dict:
    return data


def _free(data: dict) -> dict:
    return data


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(_TRICKY, max_size=3), st.text(_TRICKY, max_size=4), min_size=1, max_size=4),
       st.data())
def test_the_colon_count_never_lets_a_repeated_key_through(obj, data):
    key = data.draw(st.sampled_from(sorted(obj)))
    ascii_only = data.draw(st.booleans())
    for name, fn in (("_closed", _closed), ("_free", _free)):
        text = json.dumps({"data": obj}, ensure_ascii=ascii_only)
        assert call_func(name, text, ns=[fn]) == obj
        repeated = text[:-2] + ", " + json.dumps(key, ensure_ascii=ascii_only) + ": " + \
            json.dumps(obj[key], ensure_ascii=ascii_only) + "}}"
        assert "appears twice" in refused(name, repeated, [fn]).problem
    value = obj[key]
    text = json.dumps({"a": value, "b": key}, ensure_ascii=ascii_only)
    assert call_func("_flat", text, ns=[_flat]) == value + key
    assert "appears twice" in refused("_flat", text[:-1] + ", " + json.dumps({"a": key})[1:], [_flat]).problem


# An object's converter checks a plain int, str or bool field's value itself, without calling the
# field's converter (`call.scalars.passes_as_is`; the ints with a fast comparison only up to
# `scalars.SMALL_INT`). Whatever the value, the object must give what the field's own converter
# gives: the same value of the same type, or a refusal with the same words.
class _Int(int):
    pass


class _Str(str):
    pass


def _plain(i: int, s: str, b: bool) -> None:
    return None


_EDGES = [0, 5, 6, -5, -6, 2**30 - 1, 2**30, -(2**30), 2**63, 2**63 + 1, -(2**63) - 1]


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.integers(), st.sampled_from(_EDGES), st.text(max_size=5), st.booleans(), st.none(),
                 st.floats(allow_nan=False), st.builds(_Int, st.sampled_from(_EDGES)),
                 st.builds(_Str, st.text(max_size=5)), st.lists(st.integers(), max_size=2)),
       st.sampled_from([Limits(), Limits(max_int=5, max_string=3), Limits(max_int=2**40)]))
def test_plain_fields_checked_inline_agree_with_their_converters(value, limits):
    from nbtools.call import compile_converter, ConversionError
    from nbtools.call.convert import Compiler
    from nbtools.tool import Tool as _Tool

    args = _Tool.from_function(_plain).args
    whole = Compiler(limits).compile_arguments(args)
    for field in args.fields:
        alone = compile_converter(field.type, limits)
        try:
            expected: Any = alone(value, field.name)
        except ConversionError as error:
            expected = ("refused", error.problem)
        others = {item.name: {"i": 1, "s": "x", "b": True}[item.name] for item in args.fields if item is not field}
        try:
            got = whole({field.name: value, **others}, "")[field.name]
        except ConversionError as error:
            got = ("refused", error.problem)
        assert got == expected and type(got) is type(expected), (field.name, value, limits)


# The duplicate-key check counts the keys of the values that may hold objects only (`CallPlan.nested`):
# a repeated key inside an object beside a list of strings, or inside an object in a list, is found.
# (Counting too few keys only sends a call the careful way; too many would let a repeat through.)
@dataclasses.dataclass
class _Line:
    sku: str
    qty: int


def _order(tags: list[str], lines: list[_Line], note: dict[str, str]) -> int:
    return len(lines)


def _extra(**options: dict[str, int]) -> int:
    return len(options)


def test_a_repeated_key_inside_nested_objects_is_found_beside_lists():
    from nbtools.call import call_plan

    assert call_plan(Tool.from_function(_order)).nested == ("lines", "note")
    assert call_plan(Tool.from_function(_extra)).nested is None  # any key may hold an object: all walked
    assert call_func("_extra", '{"a": {"x": 1}, "b": {"y": 2}}', ns=[_extra]) == 2
    assert "appears twice" in refused("_extra", '{"a": {"x": 1, "x": 2}}', [_extra]).problem
    good = '{"tags": ["a:b", "c"], "lines": [{"sku": "x:1", "qty": 2}], "note": {"k": "v"}}'
    assert call_func("_order", good, ns=[_order]) == 1
    for text in ('{"tags": ["a:b", "c"], "lines": [{"sku": "x", "qty": 2, "qty": 3}], "note": {"k": "v"}}',
                 '{"tags": ["a", "c"], "lines": [{"sku": "x", "qty": 2}], "note": {"k": "v", "k": "w"}}',
                 '{"tags": ["a", "c"], "tags": ["d"], "lines": [], "note": {}}'):
        assert "appears twice" in refused("_order", text, [_order]).problem, text
