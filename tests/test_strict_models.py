"""Strict mode for typed maps, as a tool's own parameters and inside records: a strict model can call
the tool, the function gets its types.

Strict rendering writes a typed map as an array of `{"key", "value"}` pairs and (OpenAI) an optional
property as required-but-nullable, also inside a pydantic model's own schema. These tests render
such tools strictly, check the result with the independent strict checker, write the arguments a
strict model would send (validated against the rendered schema), send them through `call_func`,
`run_tool_calls` and the MCP server (in process, the real SDK client), and check the function
receives dicts, and models / dataclasses / TypedDicts whose map fields are dicts. The plain-object
form keeps working; repeated or malformed pairs are refused naming the field; untyped maps are still
refused in strict mode.
"""

from __future__ import annotations

import copy
import json
import typing as _typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Literal, Optional, TypedDict, Union

import jsonschema
import pydantic
import pytest

from nbtools import Registry, Tool, call_func, get_schema, run_tool_calls
from nbtools.errors import SchemaError, ToolCallError
from nbtools.formats import render
from corpus import obj
from providers import (
    STRICT_FORMATS, anthropic_message, check_strict, openai_completion, parameters_of, responses_response,
)


class Order(pydantic.BaseModel):
    counts: dict[str, int]
    note: str = ""


class Basket(pydantic.BaseModel):
    order: Order  # a model inside a model
    tags: Optional[dict[str, list[int]]] = None
    by_day: dict[str, Order] = {}  # a map of models, each with its own map


RECEIVED: list[dict] = []


def place(order: Order, orders: list[Order], basket: Basket, maybe: Optional[Order] = None) -> str:
    """Place an order."""
    RECEIVED.append({"order": order, "orders": orders, "basket": basket, "maybe": maybe})
    return "placed"


def pairs(mapping: dict) -> list[dict]:
    return [{"key": key, "value": value} for key, value in mapping.items()]


# What a strict model sends, by provider: OpenAI sends every property (null for one left out),
# Anthropic leaves optional ones out. Written by hand from the strict form's description.
OPENAI_CALL = {
    "order": {"counts": pairs({"apples": 3, "pears": 0}), "note": None},
    "orders": [{"counts": pairs({"figs": 1}), "note": "second"}, {"counts": [], "note": None}],
    "basket": {"order": {"counts": pairs({"kiwis": 2}), "note": None},
               "tags": pairs({"red": [1, 2]}),
               "by_day": pairs({"mon": {"counts": pairs({"plums": 5}), "note": "early"}})},
    "maybe": {"counts": pairs({"limes": 7}), "note": None},
}
ANTHROPIC_CALL = {
    "order": {"counts": pairs({"apples": 3, "pears": 0})},
    "orders": [{"counts": pairs({"figs": 1}), "note": "second"}, {"counts": []}],
    "basket": {"order": {"counts": pairs({"kiwis": 2})}, "tags": pairs({"red": [1, 2]}),
               "by_day": pairs({"mon": {"counts": pairs({"plums": 5}), "note": "early"}})},
    "maybe": {"counts": pairs({"limes": 7})},
}
PLAIN_CALL = {
    "order": {"counts": {"apples": 3, "pears": 0}},
    "orders": [{"counts": {"figs": 1}, "note": "second"}, {"counts": {}}],
    "basket": {"order": {"counts": {"kiwis": 2}}, "tags": {"red": [1, 2]},
               "by_day": {"mon": {"counts": {"plums": 5}, "note": "early"}}},
    "maybe": {"counts": {"limes": 7}},
}
EXPECTED = {
    "order": Order(counts={"apples": 3, "pears": 0}),
    "orders": [Order(counts={"figs": 1}, note="second"), Order(counts={})],
    "basket": Basket(order=Order(counts={"kiwis": 2}), tags={"red": [1, 2]},
                     by_day={"mon": Order(counts={"plums": 5}, note="early")}),
    "maybe": Order(counts={"limes": 7}),
}


def call_of(fmt: str) -> dict:
    return ANTHROPIC_CALL if fmt == "anthropic" else OPENAI_CALL


def received_once() -> dict:
    assert len(RECEIVED) == 1, RECEIVED
    return RECEIVED.pop()


@pytest.fixture(autouse=True)
def _fresh():
    RECEIVED.clear()
    yield
    RECEIVED.clear()


@pytest.mark.parametrize("fmt", STRICT_FORMATS)
def test_strict_model_fields_render_as_pairs_a_strict_model_can_send(fmt):
    provider = "anthropic" if fmt == "anthropic" else "openai"
    parameters = parameters_of(get_schema(place, fmt, strict=True), fmt)
    check_strict(parameters, provider)
    counts = parameters["properties"]["order"]["properties"]["counts"]
    assert counts["type"] == "array" and counts["items"]["required"] == ["key", "value"]
    # the call written above is one the strict schema accepts (and so one a strict model may send)
    jsonschema.Draft202012Validator(parameters).validate(call_of(fmt))
    # ... and not the plain form: strict models cannot send open objects
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(parameters).validate({**call_of(fmt), "order": PLAIN_CALL["order"]})


@pytest.mark.parametrize("fmt", STRICT_FORMATS)
def test_strict_model_pairs_reach_the_function_as_its_declared_models(fmt):
    sent = call_of(fmt)
    before = copy.deepcopy(sent)
    assert call_func("place", sent, [place]) == "placed"
    got = received_once()
    assert got == EXPECTED
    assert type(got["order"]) is Order and type(got["basket"].by_day["mon"]) is Order
    assert got["basket"].by_day["mon"].counts == {"plums": 5}
    assert sent == before  # the caller's data is read, never rewritten
    assert call_func("place", json.dumps(sent), [place]) == "placed"
    assert received_once() == EXPECTED


def test_strict_model_pairs_through_run_tool_calls_for_every_strict_provider():
    reg = Registry()
    reg.add(place)
    chat = openai_completion({"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "place", "arguments": json.dumps(OPENAI_CALL)}}]})
    [message] = run_tool_calls(chat, reg)
    assert message == {"role": "tool", "tool_call_id": "call_1", "content": "placed"}
    assert received_once() == EXPECTED
    responses = responses_response([{"type": "function_call", "id": "fc_1", "call_id": "call_2", "name": "place",
                                     "arguments": json.dumps(OPENAI_CALL), "status": "completed"}])
    [output] = run_tool_calls(responses, reg)
    assert output["output"] == "placed" and output["call_id"] == "call_2"
    assert received_once() == EXPECTED
    anthropic = anthropic_message([{"type": "tool_use", "id": "tu_1", "name": "place", "input": ANTHROPIC_CALL}])
    block = run_tool_calls(anthropic, reg)["content"][0]
    assert not block.get("is_error") and block["content"] == "placed"
    assert received_once() == EXPECTED


def test_plain_objects_and_mixed_forms_keep_working():
    assert call_func("place", PLAIN_CALL, [place]) == "placed"
    assert received_once() == EXPECTED
    mixed = {**PLAIN_CALL, "order": ANTHROPIC_CALL["order"], "maybe": None}
    call_func("place", mixed, [place])
    assert received_once() == {**EXPECTED, "maybe": None}
    # a nullable field keeps its null: only a null for a field that cannot hold one means "left out"
    call_func("place", {**PLAIN_CALL, "basket": {"order": {"counts": {}}, "tags": None, "by_day": None}}, [place])
    assert received_once()["basket"] == Basket(order=Order(counts={}))


def refusal_of(fn, arguments: dict) -> str:
    """The first line of the error `fn` gets for `arguments` (the function never ran)."""
    with pytest.raises(ToolCallError) as info:
        call_func(fn.__name__, arguments, [fn])
    assert RECEIVED == []
    return str(info.value).splitlines()[0]


def refusal(arguments: dict) -> str:
    return refusal_of(place, arguments)


def test_bad_pairs_in_a_model_are_refused_naming_the_field():
    base = ANTHROPIC_CALL
    text = refusal({**base, "order": {"counts": [{"key": "a", "value": 1}, {"key": "a", "value": 2}]}})
    assert "'order.counts[1]'" in text and "given twice" in text
    text = refusal({**base, "order": {"counts": [{"key": "a"}]}})
    assert "'order.counts[0]'" in text and '"key": ..., "value": ...' in text
    text = refusal({**base, "order": {"counts": [{"key": "a", "value": "many"}]}})
    assert "order.counts.a" in text and "valid integer" in text
    text = refusal({**base, "order": {"counts": [{"key": 5, "value": 1}]}})
    assert "'order.counts[0]'" in text and "a key must be a string" in text
    text = refusal({**base, "orders": [base["order"], {"counts": [{"key": "a", "value": 1, "and": 2}]}]})
    assert "'orders[1].counts[0]'" in text
    text = refusal({**base, "basket": {"order": {"counts": [{"key": "x", "value": 1}] * 2}}})
    assert "'basket.order.counts[1]'" in text
    # a null for a required field is still refused: only optional ones take their default
    assert "order.counts" in refusal({**base, "order": {"counts": None}})


# -- unions inside models: which option the pairs belong to --------------------------------------

class Apples(pydantic.BaseModel):
    kind: Literal["apples"] = "apples"
    sizes: dict[str, int]


class Pears(pydantic.BaseModel):
    kind: Literal["pears"] = "pears"
    sizes: list[int]


class Crate(pydantic.BaseModel):
    fruit: Annotated[Union[Apples, Pears], pydantic.Field(discriminator="kind")]
    spread: Union[list[int], dict[str, int]]
    labels: Union[list[str], dict[str, str], None] = None


def pack(crate: Crate) -> Crate:
    """Pack a crate."""
    return crate


@pytest.mark.parametrize("fmt", STRICT_FORMATS)
def test_unions_in_models_take_pairs_for_the_map_option_and_arrays_for_the_array_option(fmt):
    parameters = parameters_of(get_schema(pack, fmt, strict=True), fmt)
    check_strict(parameters, "anthropic" if fmt == "anthropic" else "openai")
    validate = jsonschema.Draft202012Validator(parameters).validate
    cases = [
        ({"fruit": {"kind": "apples", "sizes": pairs({"big": 2})}, "spread": pairs({"a": 1})},
         Crate(fruit=Apples(sizes={"big": 2}), spread={"a": 1})),
        ({"fruit": {"kind": "pears", "sizes": [1, 2]}, "spread": [4, 5], "labels": ["x"]},
         Crate(fruit=Pears(sizes=[1, 2]), spread=[4, 5], labels=["x"])),
        ({"fruit": {"kind": "pears", "sizes": []}, "spread": [], "labels": pairs({"k": "v"})},
         Crate(fruit=Pears(sizes=[]), spread=[], labels={"k": "v"})),
    ]
    for crate, expected in cases:
        sent = {"crate": {**crate, **({"labels": crate.get("labels")} if fmt != "anthropic" else {})}}
        validate(sent)
        assert call_func("pack", sent, [pack]) == expected


# -- dataclass and TypedDict fields typed as maps: the same form, read by dispatch's own converters --

@dataclass
class Stock:
    levels: dict[str, int]
    label: str = "main"


class Shelf(TypedDict):
    bins: Mapping[str, list[int]]
    owner: Optional[Order]


def restock(stock: Stock, shelf: Shelf, more: list[Stock]) -> str:
    """Restock."""
    RECEIVED.append({"stock": stock, "shelf": shelf, "more": more})
    return "ok"


@pytest.mark.parametrize("fmt", STRICT_FORMATS)
def test_dataclass_and_typeddict_map_fields_take_the_pair_form(fmt):
    parameters = parameters_of(get_schema(restock, fmt, strict=True), fmt)
    check_strict(parameters, "anthropic" if fmt == "anthropic" else "openai")
    sent = {"stock": {"levels": pairs({"a": 1}), **({"label": None} if fmt != "anthropic" else {})},
            "shelf": {"bins": pairs({"top": [1, 2]}), "owner": {"counts": pairs({"z": 9}),
                                                             **({"note": None} if fmt != "anthropic" else {})}},
            "more": [{"levels": [], "label": "spare"}]}
    jsonschema.Draft202012Validator(parameters).validate(sent)
    assert call_func("restock", sent, [restock]) == "ok"
    assert received_once() == {"stock": Stock(levels={"a": 1}), "shelf": {"bins": {"top": [1, 2]},
                                                                          "owner": Order(counts={"z": 9})},
                               "more": [Stock(levels={}, label="spare")]}
    with pytest.raises(ToolCallError, match=r"'stock\.levels\[1\]'.*given twice"):
        call_func("restock", {**sent, "stock": {"levels": pairs({"a": 1}) * 2}}, [restock])


# -- a recursive model, and a root model that is itself a map -------------------------------------

class Tree(pydantic.BaseModel):
    weights: dict[str, float]
    children: list["Tree"] = []


Counts = pydantic.RootModel[dict[str, int]]


def grow(tree: Tree, counts: Counts) -> str:
    """Grow a tree."""
    RECEIVED.append({"tree": tree, "counts": counts})
    return "grown"


def test_recursive_models_and_root_model_maps_read_pairs_at_every_level():
    parameters = parameters_of(get_schema(grow, "openai", strict=True), "openai")
    check_strict(parameters, "openai")
    sent = {"tree": {"weights": pairs({"a": 1.5}),
                     "children": [{"weights": pairs({"b": 2.0}),
                                   "children": [{"weights": [], "children": None}]}]},
            "counts": pairs({"x": 3})}
    jsonschema.Draft202012Validator(parameters).validate(sent)
    assert call_func("grow", sent, [grow]) == "grown"
    assert received_once() == {
        "tree": Tree(weights={"a": 1.5}, children=[Tree(weights={"b": 2.0}, children=[Tree(weights={})])]),
        "counts": Counts({"x": 3})}
    text = refusal_of(grow, {**sent, "tree": {"weights": [], "children": [{"weights": pairs({"b": 1}) * 2}]}})
    assert "'tree.children[0].weights[1]'" in text and "given twice" in text


def test_a_recursive_map_behind_a_reference_in_a_union_takes_pairs_at_every_level():
    # One rule for both readers of a union (formats.readback.array_options): a list is tried as a
    # map's pairs also when the map option is a reference (recursive), as the strict schema asks
    values = {"anyOf": [{"$ref": "#/$defs/Tally"}, {"type": "integer"}]}
    schema = {"type": "object", "properties": {"tally": values}, "required": ["tally"],
              "$defs": {"Tally": {"type": "object", "additionalProperties": values}}}
    tally = Tool.from_schema("tally", "Nested counts.", schema, lambda tally: tally)
    parameters = parameters_of(tally.schema("openai", strict=True), "openai")
    check_strict(parameters, "openai")
    sent = {"tally": [{"key": "a", "value": [{"key": "b", "value": 1}]}, {"key": "c", "value": 2}]}
    jsonschema.Draft202012Validator(parameters).validate(sent)
    assert tally.call(sent) == {"a": {"b": 1}, "c": 2}
    assert tally.call({"tally": {"a": {"b": 1}}}) == {"a": {"b": 1}}  # the plain form stays
    with pytest.raises(ToolCallError, match="given twice"):
        tally.call({"tally": [{"key": "a", "value": [{"key": "b", "value": 1}] * 2}]})



class Tags(pydantic.RootModel[list[str]]):
    """Tags, as a list."""


def test_a_root_model_parameter_takes_its_roots_json_kind():
    # A RootModel's JSON is its root's: a list here, not an object.
    def tag(tags: Tags) -> int:
        "Count the tags."
        assert isinstance(tags, Tags)
        return len(tags.root)

    assert get_schema(tag)["parameters"]["properties"]["tags"]["type"] == "array"
    assert call_func("tag", {"tags": ["a", "b"]}, ns=[tag]) == 2
    assert call_func("tag", '{"tags": []}', ns=[tag]) == 0
    refused = call_func("tag", {"tags": "a"}, ns=[tag], raise_on_err=False)
    assert "argument 'tags'" in refused and "valid array" in refused
    refused = call_func("tag", {"tags": ["a", 1]}, ns=[tag], raise_on_err=False)
    assert "argument 'tags[1]'" in refused and "valid string" in refused


# -- a root model whose root can be None: its null is a value, in strict rendering and in dispatch ---
class MaybeCount(pydantic.RootModel[Optional[int]]):
    """A count, or none."""


class Count(pydantic.RootModel[int]):
    """A count."""


class Chain(pydantic.RootModel[Optional[dict[str, "Chain"]]]):
    """Links by name, or none (a recursive root model)."""


Chain.model_rebuild()


def count(n: MaybeCount = MaybeCount(5), m: Count = Count(7), chain: Chain = Chain({})) -> str:
    """Count."""
    RECEIVED.append({"n": n, "m": m, "chain": chain})
    return "counted"


def test_strict_rendering_and_dispatch_agree_on_a_null_for_a_root_model_that_can_be_none():
    parameters = parameters_of(get_schema(count, "openai", strict=True), "openai")
    check_strict(parameters, "openai")
    # `n` and `chain` admit null already (kept as they are: their null is a value); `m` does not
    # (made nullable: its null means "left out", the default applies)
    assert "null means the default" not in parameters["properties"]["n"].get("description", "")
    assert "null means the default" in parameters["properties"]["m"]["description"]
    sent = {"n": None, "m": None, "chain": None}
    jsonschema.Draft202012Validator(parameters).validate(sent)
    expected = {"n": MaybeCount(None), "m": Count(7), "chain": Chain(None)}
    assert call_func("count", sent, [count]) == "counted"
    assert received_once() == expected
    chat = openai_completion({"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "count", "arguments": json.dumps(sent)}}]})
    reg = Registry()
    reg.add(count)
    assert run_tool_calls(chat, reg)[0]["content"] == "counted"
    assert received_once() == expected
    # left out, each takes its default; a nested null inside the recursive root stays a value
    assert call_func("count", {"chain": {"a": None}}, [count]) == "counted"
    assert received_once() == {"n": MaybeCount(5), "m": Count(7), "chain": Chain({"a": Chain(None)})}


# -- typed maps as the tool's own parameters: pairs on the wire, the declared dict in the function --

def ledger(totals: dict[str, int], rooms: dict[int, str], *, tags: _typing.Mapping[str, list[float]] | None = None,
           **flags: bool) -> dict:
    """Book a ledger."""
    return {"totals": totals, "rooms": rooms, "tags": tags, "flags": flags}


PAIRS_CALL = {
    "totals": [{"key": "apples", "value": 3}, {"key": "pears", "value": 0}],
    "rooms": [{"key": "101", "value": "single"}, {"key": "7", "value": "suite"}],
    "tags": [{"key": "w", "value": [0.5, 1.0]}],
    "extra-arguments": [{"key": "late", "value": True}],
}
PAIRS_RESULT = {"totals": {"apples": 3, "pears": 0}, "rooms": {101: "single", 7: "suite"},
                "tags": {"w": [0.5, 1.0]}, "flags": {"late": True}}


@pytest.mark.parametrize("fmt", ["openai", "responses", "anthropic"])
def test_strict_typed_maps_render_as_closed_pairs_the_providers_accept(fmt):
    from nbtools import get_schema

    provider = "anthropic" if fmt == "anthropic" else "openai"
    parameters = parameters_of(get_schema(ledger, fmt, strict=True), fmt)
    check_strict(parameters, provider)
    from providers import anthropic_strict_violations, openai_strict_violations

    violations = (anthropic_strict_violations if provider == "anthropic" else openai_strict_violations)(parameters)
    assert violations == []
    rooms = parameters["properties"]["rooms"]
    assert rooms["type"] == "array"
    assert rooms["items"]["required"] == ["key", "value"] and rooms["items"]["additionalProperties"] is False
    assert rooms["items"]["properties"]["key"]["type"] == "string"
    assert rooms["items"]["properties"]["value"] == {"type": "string"}
    assert "extra-arguments" in parameters["properties"] and not "extra-arguments".isidentifier()
    # a call a strict model can make passes the strict schema itself
    sent = dict(PAIRS_CALL) if provider == "openai" else {k: v for k, v in PAIRS_CALL.items() if k != "tags"}
    jsonschema.Draft202012Validator(parameters).validate(sent)


def test_strict_map_pairs_round_trip_through_call_func_and_run_tool_calls():
    from nbtools import Registry, run_tool_calls

    assert call_func("ledger", PAIRS_CALL, [ledger]) == PAIRS_RESULT
    assert call_func("ledger", json.dumps(PAIRS_CALL), [ledger]) == PAIRS_RESULT
    tool = Tool.from_function(ledger)
    assert tool.call(PAIRS_CALL) == PAIRS_RESULT
    reg = Registry()
    reg.add(ledger)
    assert reg.call("ledger", PAIRS_CALL) == PAIRS_RESULT
    # OpenAI strict sends null for an optional property it leaves out
    assert call_func("ledger", {**PAIRS_CALL, "tags": None, "extra-arguments": None}, [ledger]) == {
        **PAIRS_RESULT, "tags": None, "flags": {}}
    # the plain object form keeps working
    plain = {"totals": {"apples": 3, "pears": 0}, "rooms": {"101": "single", "7": "suite"},
             "tags": {"w": [0.5, 1.0]}, "late": True}
    assert call_func("ledger", plain, [ledger]) == PAIRS_RESULT
    reply = {"id": "c1", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "tool_calls",
             "message": {"role": "assistant", "content": None, "tool_calls": [
                 {"id": "call_1", "type": "function",
                  "function": {"name": "ledger", "arguments": json.dumps(PAIRS_CALL)}}]}}]}
    [message] = run_tool_calls(reply, [ledger])
    assert message["tool_call_id"] == "call_1" and json.loads(message["content"]) == json.loads(
        json.dumps(PAIRS_RESULT))
    anthropic_reply = {"role": "assistant", "content": [
        {"type": "tool_use", "id": "tu_1", "name": "ledger", "input": PAIRS_CALL}]}
    result = run_tool_calls(anthropic_reply, reg)
    block = result["content"][0]
    assert not block.get("is_error") and json.loads(block["content"]) == json.loads(json.dumps(PAIRS_RESULT))


async def test_strict_map_pairs_through_the_mcp_server():
    import anyio

    from nbtools import Registry
    from sessions import session_for

    reg = Registry()
    reg.add(ledger)
    with anyio.fail_after(30):
        async with session_for(reg) as session:
            result = await session.call_tool("ledger", PAIRS_CALL)
    assert not result.is_error, result
    assert result.structured_content == json.loads(json.dumps(PAIRS_RESULT))


def test_strict_map_pairs_refuse_repeated_and_malformed_keys():
    def refusal(arguments) -> str:
        with pytest.raises(ToolCallError) as info:
            call_func("ledger", arguments, [ledger])
        return str(info.value)

    base = {"totals": {}, "rooms": {}}
    assert "given twice" in refusal({**base, "totals": [{"key": "a", "value": 1}, {"key": "a", "value": 2}]})
    # two spellings of one int key: the same key after conversion
    assert "mean the same key" in refusal({**base, "rooms": [{"key": "7", "value": "x"}, {"key": 7, "value": "y"}]})
    assert "pairs" in refusal({**base, "totals": [{"key": "a"}]})
    assert "pairs" in refusal({**base, "totals": [{"key": "a", "value": 1, "extra": 0}]})
    assert "expected an integer" in refusal({**base, "totals": [{"key": "a", "value": "1"}]})
    assert "given twice" in refusal({**base, "extra-arguments": [{"key": "totals", "value": True}]})
    assert "given twice" in refusal({**base, "late": False, "extra-arguments": [{"key": "late", "value": True}]})
    assert "canonical" in refusal({**base, "rooms": [{"key": "007", "value": "x"}]}) or \
        "decimal digits" in refusal({**base, "rooms": [{"key": "007", "value": "x"}]})


def test_strict_still_refuses_untyped_maps_and_mixed_tuples():
    from nbtools import get_schema

    def loose(data: dict, more: dict[str, _typing.Any] = None) -> None:
        """Loose."""

    def rows(row: tuple[int, str]) -> None:
        """Rows."""

    def nested(options: dict[str, dict]) -> None:
        """A typed map of untyped maps."""

    for fn, parameter in ((loose, "data"), (rows, "row"), (nested, "options")):
        for fmt in ("openai", "anthropic"):
            with pytest.raises(SchemaError) as info:
                get_schema(fn, fmt, strict=True)
            assert info.value.parameter == parameter


def test_strict_pairs_property_name_cannot_collide():
    parameters = obj({"extra-arguments": {"type": "integer"}}, additionalProperties={"type": "integer"})
    tool = Tool.from_schema("odd", "", parameters, lambda **kw: kw)
    with pytest.raises(SchemaError, match="'extra-arguments' is taken"):
        render(tool, "openai", strict=True)
    # dispatch reads that property as the declared field, never as pairs
    assert tool.call({"extra-arguments": 5, "x": 1}) == {"extra-arguments": 5, "x": 1}
