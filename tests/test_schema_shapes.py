"""Schemas of callables and parameter shapes beyond the corpus table (tests/corpus.py): partials and
bound methods, NamedTuple and pydantic classes as tools, optional parameters' descriptions, definitions
that share a name, bounds enforced by dispatch too, generic records, `**kwargs` docs, a None default in
every kind of record, one lister for modules, and the shapes other projects' test suites use (issue 12:
pydantic Field defaults, aliases in MCP output schemas checked over the real SDK client in process,
read-only shared schemas, TypedDict, unbound methods, patterns, properties left alone).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Annotated, Any, NamedTuple

import pydantic
import pytest
import typing_extensions
from jsonschema import Draft202012Validator

import corpus
from corpus import obj
from providers import parameters_of
from nbtools import Registry, SchemaError, Tool, call_func, get_schema, tools_from, type_schema


# -- callable kinds beyond the corpus table --------------------------------------------------------


def test_partial_of_a_bound_method_drops_self_and_the_bound_arguments() -> None:
    counter = corpus.Counter()
    labelled = functools.partial(counter.add, label="x")
    assert get_schema(labelled)["parameters"] == obj({"amount": {"type": "integer"}}, ["amount"])


async def test_async_tools_are_marked_async() -> None:
    assert Tool.from_function(corpus.fetch).is_async
    assert not Tool.from_function(corpus.plain).is_async


# -- parameter and record shapes -----------------------------------------------------------------


def described_optionals(count: Annotated[int, "how many"] = None,  # noqa: RUF013 - the shape under test
                        name: Annotated[str | None, "who asks"] = None,
                        box: corpus.Point | None = None):
    return count


def test_an_optional_parameter_keeps_its_description_on_the_property() -> None:
    # the description belongs to the parameter, not to one branch of its anyOf; null appears once
    properties = get_schema(described_optionals)["parameters"]["properties"]
    assert properties["count"] == {"anyOf": [{"type": "integer"}, {"type": "null"}], "description": "how many",
                                   "default": None}
    assert properties["name"] == {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "who asks",
                                  "default": None}
    assert properties["box"] == {"anyOf": [corpus.POINT, {"type": "null"}], "default": None}  # class doc stays inside


class Leaf(pydantic.BaseModel):
    weight: int


class Branch(pydantic.BaseModel):
    leaves: list[Leaf]


# a recursive record that happens to share the pydantic model's class name (another module's "Leaf")
OtherLeaf = __import__("dataclasses").make_dataclass("Leaf", [("label", str), ("next", "Leaf | None", None)])


def grow(branch: Branch, chain: OtherLeaf):
    return branch


def test_same_named_definitions_from_pydantic_and_records_do_not_collide() -> None:
    parameters = get_schema(grow)["parameters"]
    Draft202012Validator.check_schema(parameters)
    validator = Draft202012Validator(parameters)
    assert validator.is_valid({"branch": {"leaves": [{"weight": 1}]}, "chain": {"label": "a", "next": {"label": "b"}}})
    assert not validator.is_valid({"branch": {"leaves": [{"label": "a"}]}, "chain": {"label": "a"}})
    assert not validator.is_valid({"branch": {"leaves": []}, "chain": {"weight": 1}})
    assert sorted(parameters["$defs"]) == ["Leaf", "Leaf2"]


def test_length_and_union_bounds_are_enforced_by_dispatch_too() -> None:
    # `min_length` on a list once became minLength (a string keyword): neither schema nor call checked it
    checked = Tool.from_function(corpus.constrained)
    for arguments, problem in (({"items": []}, "at least 1 items"), ({"items": [1, 2, 3, 4]}, "at most 3"),
                               ({"items": [1], "limit": 0}, ">= 1"), ({"items": [1], "names": ["a", "b", "c"]},
                                                                      "at most 2 items")):
        with pytest.raises(Exception, match=problem):
            checked.call(arguments)
    assert checked.call({"items": [1], "limit": None}) == [1]


def test_generic_records_and_initvars_are_described_as_their_init_takes_them() -> None:
    def scale(reading: corpus.Scaled, span: corpus.Span[int], tagged: corpus.Labelled[str]) -> float:
        return reading.amount

    checked = Tool.from_function(scale)
    assert checked.call({"reading": {"amount": 2.0, "factor": 3}, "span": {"start": 1, "end": 2},
                         "tagged": {"value": "a", "children": [{"value": "b"}]}}) == 6.0
    with pytest.raises(Exception, match="tagged.children"):  # T is str all the way down
        checked.call({"reading": {"amount": 2.0, "factor": 3}, "span": {"start": 1, "end": 2},
                      "tagged": {"value": "a", "children": [{"value": 5}]}})


def test_the_docs_of_kwargs_describe_the_extra_values() -> None:
    def tag(name: str, **labels: str) -> None:
        """Tag something.

        Args:
            name: what to tag.
            **labels: label values by label name.
        """

    assert get_schema(tag)["parameters"]["additionalProperties"] == {"type": "string",
                                                                     "description": "label values by label name."}


def test_a_namedtuple_or_pydantic_class_registered_as_a_tool_takes_its_fields() -> None:
    # a NamedTuple's __init__ is object.__init__ and a model's is `**data`: both once gave no parameters
    pair = Tool.from_function(corpus.Pair)
    assert pair.parameters == get_schema(corpus.with_namedtuple)["parameters"]["properties"]["pair"]
    assert pair.call({"left": 1, "right": "b"}) == corpus.Pair(1, "b")

    class Person(pydantic.BaseModel):
        """Someone to greet."""

        name: str = pydantic.Field(description="full name", min_length=1)
        nick: str | None = pydantic.Field(None, alias="nickname")

    person = Tool.from_function(Person)
    assert person.description == "Someone to greet."  # not BaseModel.__init__'s docstring
    assert person.parameters == corpus.obj({"name": {"type": "string", "description": "full name", "minLength": 1},
                                            "nickname": {"anyOf": [{"type": "string"}, {"type": "null"}],
                                                         "default": None}}, ["name"])
    assert person.call({"name": "Ada", "nickname": "A"}) == Person(name="Ada", nickname="A")
    with pytest.raises(Exception, match="at least 1 characters"):
        person.call({"name": ""})


def test_a_partial_that_binds_what_the_function_does_not_take_is_refused() -> None:
    def pair(a: int, /, b: int) -> int:
        return a + b

    for bound, parameter, reason in ((functools.partial(pair, 1, 2, 3), None, "binds 3 positional"),
                                     (functools.partial(pair, c=1), "c", "does not take")):
        with pytest.raises(SchemaError, match=reason) as caught:
            get_schema(bound)
        assert (caught.value.function, caught.value.parameter) == ("pair", parameter)


# -- one rule, one place ---------------------------------------------------------------------------

@dataclass
class Box:
    width: int = None  # type: ignore[assignment]
    label: Annotated[str, "what is inside"] = None  # type: ignore[assignment]


class Corner(NamedTuple):
    x: int = None  # type: ignore[assignment]


class Frame:
    def __init__(self, width: int = None):  # type: ignore[assignment]
        self.width = width


@pytest.mark.parametrize("record", [Box, Corner, Frame])
def test_a_none_default_makes_a_field_nullable_in_every_kind_of_record(record: type) -> None:
    # "x: int = None means nullable" held for parameters and plain classes' __init__, not for
    # dataclass and NamedTuple fields: their schema said integer with a null default
    width = "width" if record is not Corner else "x"
    schema = type_schema(record)
    assert schema["properties"][width] == {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}
    Draft202012Validator(schema).validate({width: None})

    def place(item):  # type: ignore[no-untyped-def]
        return item

    place.__annotations__ = {"item": record}

    assert get_schema(place)["parameters"]["properties"]["item"]["properties"][width]["default"] is None
    assert getattr(Tool.from_function(place).call({"item": {width: None}}), width) is None


def test_a_none_default_keeps_the_written_description() -> None:
    assert type_schema(Box)["properties"]["label"] == {
        "anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "description": "what is inside"}


def test_tools_from_a_module_and_the_cli_list_the_same_functions(tmp_path: Any) -> None:
    # `tools_from(module)` ignored `__all__` while the `nbtools` command honoured it: one lister now
    import importlib.util

    from nbtools import tools_from
    from nbtools.cli import module_tools
    from nbtools.introspect import module_functions

    source = ("from json import dumps\n__all__ = ['area', 'dumps', 'Shape']\n"
              "class Shape:\n    pass\n"
              "def area(w: float, h: float) -> float:\n    return w * h\n"
              "def helper(x: int) -> int:\n    return x\n")
    path = tmp_path / "shapes_for_layout.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("shapes_for_layout", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    assert [name for name, _value in module_functions(module)] == ["area", "dumps"]
    assert [each.name for each in tools_from(module)] == ["shapes_for_layout.area", "shapes_for_layout.dumps"]
    assert sorted(each.name for each in module_tools(module)) == ["area", "dumps"]
    del module.__all__
    assert [name for name, _value in module_functions(module)] == ["area", "helper"]
    assert [each.name for each in tools_from(module)] == ["shapes_for_layout.area", "shapes_for_layout.helper"]


# -- issue 12: shapes the field's own test suites use ------------------------------------------------



def shipping(city: str, weight: float = pydantic.Field(default=2.5, ge=0),
             stops: list[str] = pydantic.Field(default_factory=list)) -> tuple:
    return city, weight, stops


def test_point1_a_pydantic_field_default_reaches_the_function_as_its_value() -> None:
    assert call_func("shipping", {"city": "Oslo"}, [shipping]) == ("Oslo", 2.5, [])
    first = call_func("shipping", {"city": "Oslo"}, [shipping])[2]
    first.append("changed")
    assert call_func("shipping", {"city": "Oslo"}, [shipping])[2] == []  # a fresh list each call
    assert call_func("shipping", {"city": "Oslo", "weight": 4}, [shipping]) == ("Oslo", 4.0, [])
    assert get_schema(shipping)["parameters"]["properties"]["weight"] == {"type": "number", "minimum": 0,
                                                                          "default": 2.5}


def discount(price: Annotated[float, pydantic.Field(default=9.5, description="unit price")], /,
             rate: Annotated[float, pydantic.Field(default=0.1)]) -> tuple:
    return price, rate


def test_point2_an_annotated_field_default_makes_the_parameter_optional() -> None:
    parameters = get_schema(discount)["parameters"]
    assert "required" not in parameters
    assert parameters["properties"]["price"] == {"type": "number", "description": "unit price", "default": 9.5}
    assert call_func("discount", {}, [discount]) == (9.5, 0.1)
    assert call_func("discount", {"rate": 0.5}, [discount]) == (9.5, 0.5)
    assert Tool.from_function(discount).call({"price": 3}) == (3.0, 0.1)


class Receipt:
    def __init__(self, total: float):
        self.total = total


class Aliased(pydantic.BaseModel):
    full_name: str = pydantic.Field(alias="fullName")


def make_receipt(total: float) -> Receipt:
    return Receipt(total)


def make_aliased(name: str) -> Aliased:
    return Aliased(fullName=name)


def echo_aliased(person: Aliased) -> Aliased:
    return person


async def test_point3_mcp_output_schemas_match_what_is_returned() -> None:
    import anyio
    from sessions import session_for

    assert "outputSchema" not in get_schema(make_receipt, "mcp")  # sent as text: no schema to promise
    output = get_schema(make_aliased, "mcp")["outputSchema"]
    assert set(output["properties"]) == {"fullName"}  # aliases both ways: parameters and results
    assert set(get_schema(make_aliased, "mcp")["inputSchema"]["properties"]) == {"name"}
    reg = Registry()
    reg.add(make_receipt)
    reg.add(make_aliased)
    reg.add(echo_aliased)
    with anyio.fail_after(30):
        async with session_for(reg) as session:
            receipt = await session.call_tool("make_receipt", {"total": 3.5})
            aliased = await session.call_tool("make_aliased", {"name": "Ada"})
            echoed = await session.call_tool("echo_aliased", {"person": {"fullName": "Bo"}})
            listed = {tool.name: tool for tool in (await session.list_tools()).tools}
    # what goes in is what comes out: the alias, in the input schema, the output schema and the result
    assert not echoed.is_error and echoed.structured_content == {"fullName": "Bo"}
    echo_schemas = listed["echo_aliased"]
    assert "fullName" in json.dumps(echo_schemas.input_schema) and "full_name" not in json.dumps(echo_schemas.input_schema)
    assert set(echo_schemas.output_schema["properties"]) == {"fullName"}
    assert not receipt.is_error and not aliased.is_error
    assert aliased.structured_content == {"fullName": "Ada"}
    assert json.loads(aliased.content[0].text) == {"fullName": "Ada"}


def test_point4_get_schema_hands_out_data_nobody_else_shares() -> None:
    def weigh(grams: list[int], unit: str = "g") -> int:
        """Weigh things."""
        return sum(grams)

    import copy

    tool = Tool.from_function(weigh)
    pristine = json.dumps(tool.parameters, sort_keys=True)
    for fmt in (None, "openai", "anthropic", "gemini", "mcp"):
        for _ in range(2):  # cold, then warm
            definition = get_schema(weigh, fmt)
            parameters = parameters_of(definition, fmt)
            # the shared parts are read-only views: a change raises, saying to copy first
            with pytest.raises(TypeError, match="deepcopy"):
                parameters["properties"]["grams"]["items"]["type"] = "string"
            with pytest.raises(TypeError, match="cached and shared"):
                parameters["required"].append("bogus")
            definition["description"] = "changed"  # the top level is the caller's own
            mine = copy.deepcopy(definition)  # a changeable copy, plain dicts and lists
            parameters_of(mine, fmt)["required"].append("bogus")
            assert type(parameters_of(mine, fmt)["properties"]) is dict
            assert json.loads(json.dumps(definition)) == definition
    with pytest.raises(TypeError):
        tool.parameters["properties"].pop("unit")
    for fmt in (None, "openai", "anthropic", "gemini", "mcp"):
        parameters = parameters_of(get_schema(weigh, fmt), fmt)
        assert parameters["properties"]["grams"]["items"] == {"type": "integer"}
        assert parameters["required"] == ["grams"]
    assert json.dumps(Tool.from_function(weigh).parameters, sort_keys=True) == pristine


class Movie(typing_extensions.TypedDict):
    """A film on the list."""
    title: str
    year: typing_extensions.NotRequired[typing_extensions.ReadOnly[int]]
    seen: typing_extensions.ReadOnly[bool]


def rate_movie(movie: Movie) -> Movie:
    return movie


@dataclass
class Tally:
    count: int = 0

    def bump(self, by: int) -> typing_extensions.Self:
        self.count += by
        return self


def test_point7_typeddict_tools_readonly_items_and_self_returns() -> None:
    definition = get_schema(Movie)
    assert definition["description"] == "A film on the list."
    assert definition["parameters"] == {"type": "object", "properties": {
        "title": {"type": "string"}, "year": {"type": "integer"}, "seen": {"type": "boolean"}},
        "required": ["title", "seen"], "additionalProperties": False}
    assert call_func("Movie", {"title": "Heat", "seen": True}, [Movie]) == {"title": "Heat", "seen": True}
    with pytest.raises(Exception, match="unexpected"):
        call_func("Movie", {"title": "Heat", "seen": True, "extra": 1}, [Movie])
    assert get_schema(rate_movie, "mcp")["outputSchema"]["required"] == ["title", "seen"]
    assert get_schema(Tally().bump, "mcp")["outputSchema"] == {
        "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {"count": {"type": "integer", "default": 0}}, "additionalProperties": False}


class Thermostat:
    def set_to(self, degrees: int) -> int:
        return degrees


def test_point8_an_unbound_method_is_refused_on_every_path() -> None:
    for attempt in (lambda: get_schema(Thermostat.set_to), lambda: Tool.from_function(Thermostat.set_to),
                    lambda: call_func("set_to", {"self": 1, "degrees": 2}, [Thermostat.set_to])):
        with pytest.raises(Exception) as info:
            attempt()
        assert "self" in str(info.value) and "bound method" in str(info.value)
    assert call_func("set_to", {"degrees": 2}, [Thermostat().set_to]) == 2
    assert call_func("set_to", {"degrees": 2}, [functools.partial(Thermostat.set_to, Thermostat())]) == 2


class Opaque:
    pass


class Holds(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(arbitrary_types_allowed=True)
    thing: Opaque


def store(label: str, box: Holds) -> None:
    pass


def test_point9_a_model_pydantic_cannot_describe_is_named_with_its_parameter() -> None:
    with pytest.raises(SchemaError) as info:
        get_schema(store)
    assert (info.value.function, info.value.parameter) == ("store", "box")
    assert "Holds" in str(info.value) and "no JSON Schema" in str(info.value)


class Doubler:
    """Double a number."""

    def __call__(self, x: float) -> float:
        return 2 * x


def grep_lines(pattern: re.Pattern, text: str, limit=10, loud=False, ratio=0.5) -> list:
    return [line for line in text.splitlines() if pattern.search(line)][:limit]


class Lazy:
    @property
    def expensive(self) -> int:
        raise AssertionError("a property getter ran while listing tools")

    def ping(self) -> str:
        return "pong"


def test_point10_patterns_callable_instances_inferred_defaults_and_properties() -> None:
    properties = get_schema(grep_lines)["parameters"]["properties"]
    assert properties["pattern"] == {"type": "string", "format": "regex"}
    assert call_func("grep_lines", {"pattern": "^a.", "text": "ab\nba\nac"}, [grep_lines]) == ["ab", "ac"]
    with pytest.raises(Exception, match="regular expression"):
        call_func("grep_lines", {"pattern": "(", "text": ""}, [grep_lines])
    # an unannotated parameter with a JSON default has that default's type
    assert properties["limit"] == {"type": "integer", "default": 10}
    assert properties["loud"] == {"type": "boolean", "default": False}
    assert properties["ratio"] == {"type": "number", "default": 0.5}
    with pytest.raises(Exception, match="integer"):
        call_func("grep_lines", {"pattern": "a", "text": "", "limit": "3"}, [grep_lines])
    assert get_schema(Doubler())["description"] == "Double a number.\n\nReturns: float"
    assert [t.name for t in tools_from(Lazy())] == ["lazy.ping"]
