"""Provider rendering: a corpus of neutral schemas x every format x strict on/off.

Checks, for every case: the output is JSON, its parameter schema is valid draft 2020-12, strict
output obeys the provider's strict rules (checked by the independent checker in providers.py, written
from the providers' documentation), Gemini declarations validate in google-genai, MCP tools validate in
the mcp SDK, and values keep their meaning (valid examples stay valid once strict nulls are
filled in, and dispatch reads those nulls as "left out", giving the function the original value).
Refusals name the parameter.
"""

from __future__ import annotations

import copy
import json
import re

import jsonschema
import pytest

from nbtools import call_func
from nbtools.errors import SchemaError, ToolCallError
from nbtools.formats import (
    FORMATS, mcp_output_schema, mcp_wraps_result, openapi_schema, render,
    strict_schema, wire_name, wire_names,
)
from nbtools.tool import Tool
from providers import check_strict, parameters_of

from corpus import as_pairs, obj


NODE_DEFS = {"Node": obj({"value": {"type": "integer"},
                          "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
                         ["value"])}

# name -> (parameters, examples valid under the neutral schema)
CORPUS: dict[str, tuple[dict, list[dict]]] = {
    "scalars": (obj({"a": {"type": "integer", "description": "first addend"},
                     "b": {"type": "number", "default": 1.5},
                     "flag": {"type": "boolean", "default": False},
                     "text": {"type": "string", "description": "some text", "default": "hi"}},
                    ["a"]),
                [{"a": 1}, {"a": 2, "b": 3, "flag": True, "text": "x"}]),
    "no_params": (obj({}), [{}]),
    "nested": (obj({"shape": obj({"name": {"type": "string"},
                                  "corner": obj({"x": {"type": "number"}, "y": {"type": "number"}},
                                                ["x", "y"], description="top left")},
                                 ["corner"])},
                   ["shape"]),
               [{"shape": {"corner": {"x": 1, "y": 2}}}, {"shape": {"name": "s", "corner": {"x": 0, "y": 0}}}]),
    "optional": (obj({"when": {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}],
                               "default": None},
                      "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                      "count": {"type": "integer", "default": 3},
                      "note": {"type": "string"}},
                     ["maybe"]),
                 [{"maybe": None}, {"maybe": 4, "when": "2024-01-01T00:00:00Z", "count": 1, "note": "n"},
                  {"maybe": 1, "when": None}]),
    "enums": (obj({"color": {"type": "string", "enum": ["red", "green"]},
                   "level": {"type": "integer", "enum": [1, 2, 3]},
                   "sparse": {"type": "integer", "enum": [1, 5, 10]},
                   "mixed": {"enum": ["auto", 0]},
                   "opt": {"enum": ["a", "b", None]}},
                  ["color", "level", "sparse", "mixed", "opt"]),
              [{"color": "red", "level": 2, "sparse": 5, "mixed": 0, "opt": None},
               {"color": "green", "level": 3, "sparse": 10, "mixed": "auto", "opt": "a"}]),
    "const": (obj({"kind": {"const": "circle"}, "r": {"type": "number"}}, ["kind", "r"]),
              [{"kind": "circle", "r": 1.0}]),
    "arrays": (obj({"numbers": {"type": "array", "items": {"type": "integer"}, "minItems": 1},
                    "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
                    "points": {"type": "array", "items": obj({"x": {"type": "number"}}, ["x"])}},
                   ["numbers"]),
               [{"numbers": [1]}, {"numbers": [1, 2], "tags": ["a", "b"], "points": [{"x": 1}]}]),
    "pair": (obj({"pair": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}],
                           "minItems": 2, "maxItems": 2}}, ["pair"]),
             [{"pair": [1, 2.5]}]),
    "mixed_tuple": (obj({"row": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
                                 "minItems": 2, "maxItems": 2}}, ["row"]),
                    [{"row": [1, "a"]}]),
    "map": (obj({"scores": {"type": "object", "additionalProperties": {"type": "integer"}}}, ["scores"]),
            [{"scores": {"a": 1}}]),
    "keyed_map": (obj({"by_color": {"type": "object", "additionalProperties": {"type": "integer"},
                                    "propertyNames": {"enum": ["red", "green"]}}}, ["by_color"]),
                  [{"by_color": {"red": 1}}]),
    "bare_dict": (obj({"data": {"type": "object"}}, ["data"]), [{"data": {"k": [1]}}]),
    "untyped": (obj({"anything": {"description": "any value"}}, ["anything"]), [{"anything": [1, "x"]}]),
    "recursive": (obj({"tree": {"$ref": "#/$defs/Node", "description": "the root"}}, ["tree"],
                      **{"$defs": NODE_DEFS}),
                  [{"tree": {"value": 1}}, {"tree": {"value": 1, "children": [{"value": 2, "children": []}]}}]),
    "shared_ref": (obj({"start": {"$ref": "#/$defs/Point"},
                        "end": {"$ref": "#/$defs/Point", "description": "where it ends"}},
                       ["start", "end"],
                       **{"$defs": {"Point": obj({"x": {"type": "integer"}, "y": {"type": "integer"}},
                                                 ["x", "y"])}}),
                   [{"start": {"x": 1, "y": 2}, "end": {"x": 3, "y": 4}}]),
    "formats": (obj({"when": {"type": "string", "format": "date-time"},
                     "day": {"type": "string", "format": "date"},
                     "at": {"type": "string", "format": "time"},
                     "id": {"type": "string", "format": "uuid"},
                     "site": {"type": "string", "format": "uri"},
                     "path": {"type": "string", "format": "path"},
                     "blob": {"type": "string", "contentEncoding": "base64"}},
                    ["when", "day", "at", "id", "site", "path", "blob"]),
                [{"when": "2024-01-01T00:00:00Z", "day": "2024-01-01", "at": "10:00:00Z",
                  "id": "12345678-1234-5678-1234-567812345678", "site": "https://example.com",
                  "path": "/tmp/x", "blob": "aGk="}]),
    "constraints": (obj({"name": {"type": "string", "minLength": 2, "maxLength": 8, "pattern": "^[a-z]+$"},
                         "age": {"type": "integer", "minimum": 0, "exclusiveMaximum": 150},
                         "ratio": {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.5},
                         "few": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 4}},
                        ["name", "age", "ratio", "few"]),
                    [{"name": "bob", "age": 3, "ratio": 1.5, "few": ["a", "b"]}]),
    "pydantic_style": ({"type": "object", "title": "Order",
                        "properties": {"item": {"type": "string", "title": "Item"},
                                       "qty": {"type": "integer", "title": "Qty", "default": 1},
                                       "gift": {"anyOf": [{"$ref": "#/$defs/Gift"}, {"type": "null"}],
                                                "default": None}},
                        "required": ["item"],
                        "$defs": {"Gift": {"type": "object", "title": "Gift",
                                           "properties": {"message": {"type": "string", "title": "Message"}},
                                           "required": ["message"]}}},
                       [{"item": "x"}, {"item": "x", "qty": 2, "gift": {"message": "hi"}}]),
    "tagged_union": (obj({"shape": {"oneOf": [obj({"kind": {"const": "circle"}, "r": {"type": "number"}},
                                                  ["kind", "r"]),
                                              obj({"kind": {"const": "square"}, "side": {"type": "number"}},
                                                  ["kind", "side"])]}},
                         ["shape"]),
                     [{"shape": {"kind": "circle", "r": 1}}, {"shape": {"kind": "square", "side": 2}}]),
    "described_root": (obj({"x": {"type": "integer"}}, ["x"], description="Root text"), [{"x": 1}]),
}

# Which (case, target) pairs are refused, and the parameter the error must name.
STRICT_TARGETS = ("openai", "anthropic")
REFUSED = {
    ("mixed_tuple", "openai"): "row", ("mixed_tuple", "anthropic"): "row", ("mixed_tuple", "gemini-openapi"): "row",
    ("map", "gemini-openapi"): "scores",  # strict modes take a typed map as key/value pairs
    ("keyed_map", "gemini-openapi"): "by_color",
    ("bare_dict", "openai"): "data", ("bare_dict", "anthropic"): "data", ("bare_dict", "gemini-openapi"): "data",
    ("untyped", "openai"): "anything", ("untyped", "anthropic"): "anything",
    ("untyped", "gemini-openapi"): "anything",
    ("recursive", "anthropic"): "tree", ("recursive", "gemini-openapi"): "tree",
}


def make_tool(case: str, name: str = "demo.tool", **fields) -> Tool:
    parameters = CORPUS[case][0]
    fields.setdefault("description", f"The {case} case.")
    return Tool(name=name, parameters=parameters, **fields)


def target_of(fmt: str | None, strict: bool) -> str | None:
    """Which transform a format runs: openai/anthropic strict, gemini-openapi, or none."""
    if fmt == "gemini-openapi":
        return "gemini-openapi"
    if strict and fmt in ("openai", "responses"):
        return "openai"
    if strict and fmt == "anthropic":
        return "anthropic"
    return None


def fill_nulls(schema: dict, value, defs: dict):
    """The strict-mode form of a neutral value: every absent optional property sent as null."""
    while isinstance(schema, dict) and "$ref" in schema:
        schema = defs[schema["$ref"].removeprefix("#/$defs/")]
    if isinstance(value, dict):
        options = [schema] + list(schema.get("anyOf", ()) or schema.get("oneOf", ()))
        for option in options:
            while "$ref" in option:
                option = defs[option["$ref"].removeprefix("#/$defs/")]
            if "properties" in option and set(value) <= set(option["properties"]):
                props = option["properties"]
                return {key: fill_nulls(props[key], value[key], defs) if key in value else None
                        for key in props}
        return value
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [fill_nulls(schema["items"], item, defs) for item in value]
    if isinstance(value, list) and "prefixItems" in schema:
        return [fill_nulls(item_schema, item, defs) for item_schema, item in zip(schema["prefixItems"], value)]
    return value


def dispatched(parameters: dict, arguments) -> dict:
    """The keyword arguments dispatch passes to a tool with these parameters (validated, converted)."""
    def received(**kwargs):
        return kwargs

    return Tool.from_schema("demo", "", parameters, received).call(arguments)


def as_json(value):
    """`value` as JSON data (tuples become lists), to compare what a tool received with what was sent."""
    return json.loads(json.dumps(value))


def without_null_defaults(value, schema: dict, defs: dict):
    """`value` with the nulls removed that equal their property's default (same meaning)."""
    while isinstance(schema, dict) and "$ref" in schema:
        schema = defs[schema["$ref"].removeprefix("#/$defs/")]
    if not isinstance(value, dict) or "properties" not in schema:
        return value
    props = schema["properties"]
    return {key: without_null_defaults(item, props.get(key, {}), defs) for key, item in value.items()
            if not (item is None and props.get(key, {}).get("default", 0) is None)}


# ------------------------------------------------------------------------------------------------
# The grid: every case x every format x strict on/off
# ------------------------------------------------------------------------------------------------

GRID = [(case, fmt, strict) for case in CORPUS for fmt in FORMATS for strict in (False, True)]


@pytest.mark.parametrize("case,fmt,strict", GRID, ids=[f"{c}-{f}-{'strict' if s else 'plain'}" for c, f, s in GRID])
def test_every_case_renders_validly_or_refuses_by_parameter(case, fmt, strict):
    from google.genai.types import FunctionDeclaration
    import mcp.types

    tool = make_tool(case, returns={"type": "integer"})
    before = copy.deepcopy(tool.parameters)
    target = target_of(fmt, strict)
    refused = REFUSED.get((case, target))
    if refused:
        with pytest.raises(SchemaError) as info:
            render(tool, fmt, strict)
        assert info.value.parameter == refused
        assert info.value.function == "demo.tool"
        assert refused in str(info.value) and "demo.tool" in str(info.value)
        return
    rendered = render(tool, fmt, strict)
    assert tool.parameters == before, "render must not mutate the tool's schema"
    json.loads(json.dumps(rendered))
    parameters = parameters_of(rendered, fmt)
    if parameters is not None:
        jsonschema.Draft202012Validator.check_schema(parameters)
    if target in STRICT_TARGETS:
        check_strict(parameters, target)
    if fmt in ("gemini", "gemini-openapi"):
        FunctionDeclaration.model_validate(rendered)
    if fmt == "mcp":
        mcp.types.Tool.model_validate(rendered)


def strict_grid():
    for case, (_, examples) in CORPUS.items():
        for provider in STRICT_TARGETS:
            if (case, provider) not in REFUSED:
                yield case, provider


@pytest.mark.parametrize("case,provider", list(strict_grid()))
def test_strict_keeps_the_meaning_of_valid_values(case, provider):
    """A value valid for the neutral schema, sent the strict way, passes the strict schema, and
    dispatch gives the function the original value (a null that stands for "left out" dropped)."""
    parameters, examples = CORPUS[case]
    strict = strict_schema(parameters, "demo", provider)
    neutral_check = jsonschema.Draft202012Validator(parameters)
    strict_check = jsonschema.Draft202012Validator(strict)
    defs = parameters.get("$defs", {})
    for example in examples:
        neutral_check.validate(example)
        sent = fill_nulls(parameters, example, defs) if provider == "openai" else example
        sent = as_pairs(parameters, sent, defs, root=True)
        strict_check.validate(sent)
        # A null for a nullable property whose default is null means the same as leaving it out.
        assert without_null_defaults(as_json(dispatched(parameters, sent)), parameters, defs) == \
            without_null_defaults(example, parameters, defs)


@pytest.mark.parametrize("provider", STRICT_TARGETS)
def test_strict_still_refuses_unknown_keys_and_wrong_types(provider):
    strict = strict_schema(CORPUS["nested"][0], "demo", provider)
    validator = jsonschema.Draft202012Validator(strict)
    good = {"shape": {"name": "s", "corner": {"x": 1, "y": 2}}}
    assert validator.is_valid(good)
    assert not validator.is_valid({"shape": {"name": "s", "corner": {"x": 1, "y": 2}, "extra": 1}})
    assert not validator.is_valid({"shape": {"name": "s", "corner": {"x": "1", "y": 2}}})


# ------------------------------------------------------------------------------------------------
# Exact outputs for representative cases
# ------------------------------------------------------------------------------------------------

ADD = obj({"a": {"type": "integer", "description": "first addend"},
           "b": {"type": "integer", "description": "second addend", "default": 1}}, ["a"])


def add_tool(**fields) -> Tool:
    fields.setdefault("name", "add")
    fields.setdefault("description", "Add two integers.")
    return Tool(parameters=ADD, returns={"type": "integer"}, **fields)


def test_neutral_openai_responses_anthropic_shapes():
    tool = add_tool()
    assert render(tool) == {"name": "add", "description": "Add two integers.", "parameters": ADD}
    assert render(tool, "openai") == {"type": "function", "function": {
        "name": "add", "description": "Add two integers.", "parameters": ADD}}
    assert render(tool, "responses") == {"type": "function", "name": "add", "description": "Add two integers.",
                                         "parameters": ADD, "strict": False}
    assert render(tool, "anthropic") == {"name": "add", "description": "Add two integers.", "input_schema": ADD}


def test_openai_strict_exact():
    expected_parameters = {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "first addend"},
            "b": {"type": ["integer", "null"], "description": "second addend (null means the default, 1)"},
        },
        "required": ["a", "b"],
        "additionalProperties": False,
    }
    assert render(add_tool(), "openai", strict=True) == {"type": "function", "function": {
        "name": "add", "description": "Add two integers.", "parameters": expected_parameters, "strict": True}}
    responses = render(add_tool(), "responses", strict=True)
    assert responses["strict"] is True and responses["parameters"] == expected_parameters


def test_anthropic_strict_keeps_optional_parameters_optional():
    assert render(add_tool(), "anthropic", strict=True) == {
        "name": "add", "description": "Add two integers.", "strict": True,
        "input_schema": {"type": "object",
                         "properties": {"a": {"type": "integer", "description": "first addend"},
                                        "b": {"type": "integer", "description": "second addend (default: 1)"}},
                         "required": ["a"], "additionalProperties": False}}


def test_strict_moves_unsupported_constraints_into_the_description():
    parameters = CORPUS["constraints"][0]
    openai = strict_schema(parameters, "demo", "openai")["properties"]
    assert openai["name"] == {"type": "string", "pattern": "^[a-z]+$",
                              "description": "(minLength: 2, maxLength: 8)"}
    assert openai["age"] == {"type": "integer", "minimum": 0, "exclusiveMaximum": 150}
    assert openai["few"] == {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 4}
    anthropic = strict_schema(parameters, "demo", "anthropic")["properties"]
    assert anthropic["name"] == {"type": "string",
                                 "description": '(minLength: 2, maxLength: 8, pattern: "^[a-z]+$")'}
    assert anthropic["age"] == {"type": "integer", "description": "(minimum: 0, exclusiveMaximum: 150)"}
    assert anthropic["few"] == {"type": "array", "items": {"type": "string"},
                                "description": "(minItems: 2, maxItems: 4)"}


def test_strict_formats_and_tuples():
    formats = strict_schema(CORPUS["formats"][0], "demo", "openai")["properties"]
    assert formats["id"] == {"type": "string", "format": "uuid"}
    assert formats["site"] == {"type": "string", "description": '(format: "uri")'}
    assert formats["blob"] == {"type": "string", "description": '(contentEncoding: "base64")'}
    assert strict_schema(CORPUS["formats"][0], "demo", "anthropic")["properties"]["site"] == {
        "type": "string", "format": "uri"}
    pair = strict_schema(CORPUS["pair"][0], "demo", "openai")["properties"]["pair"]
    assert pair == {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}


def test_strict_recursion_openai_keeps_refs_and_inlines_described_ones():
    strict = strict_schema(CORPUS["recursive"][0], "demo", "openai")
    node = {"type": "object",
            "properties": {"value": {"type": "integer"},
                           "children": {"anyOf": [{"type": "array", "items": {"$ref": "#/$defs/Node"}},
                                                  {"type": "null"}],
                                        "description": "(null leaves it out)"}},
            "required": ["value", "children"], "additionalProperties": False}
    assert strict["$defs"] == {"Node": node}
    # the described reference cannot keep a sibling description, so the definition is inlined
    assert strict["properties"]["tree"] == {**node, "description": "the root"}


def test_strict_optional_ref_becomes_anyof_with_null():
    strict = strict_schema(CORPUS["shared_ref"][0] | {"required": ["start"]}, "demo", "openai")
    assert strict["properties"]["start"] == {"$ref": "#/$defs/Point"}
    assert strict["properties"]["end"] == {
        "anyOf": [{"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                   "required": ["x", "y"], "additionalProperties": False}, {"type": "null"}],
        "description": "where it ends (null leaves it out)"}


def test_strict_refusals_say_what_to_change():
    untyped_map = obj({"scores": {"type": "object", "additionalProperties": {}}}, ["scores"])
    with pytest.raises(SchemaError, match=r"dataclass or TypedDict with fixed keys") as info:
        strict_schema(untyped_map, "scores_tool", "openai")
    assert (info.value.function, info.value.parameter) == ("scores_tool", "scores")
    with pytest.raises(SchemaError, match=r"annotate it with a concrete type"):
        strict_schema(CORPUS["untyped"][0], "demo", "openai")
    with pytest.raises(SchemaError, match=r"list of one type"):
        strict_schema(CORPUS["mixed_tuple"][0], "demo", "openai")
    with pytest.raises(SchemaError, match=r"recursive type 'Node'"):
        strict_schema(CORPUS["recursive"][0], "demo", "anthropic")


def test_refusal_deep_inside_names_the_parameter_and_the_path():
    parameters = obj({"config": obj({"extras": {"type": "object", "additionalProperties": {}}},
                                    ["extras"])}, ["config"])
    with pytest.raises(SchemaError) as info:
        strict_schema(parameters, "setup", "openai")
    assert info.value.parameter == "config"
    assert "at config.extras" in str(info.value)
    in_pairs = obj({"config": {"type": "object", "additionalProperties": {"type": "array"}}}, ["config"])
    with pytest.raises(SchemaError, match=r"at config\[\]\.value"):
        strict_schema(in_pairs, "setup", "openai")
    listed = obj({"rows": {"type": "array", "items": {"type": "array"}}}, ["rows"])
    with pytest.raises(SchemaError, match=r"at rows\[\]"):
        strict_schema(listed, "setup", "openai")


def test_strict_limits_are_checked():
    many = obj({f"p{index}": {"type": "integer"} for index in range(30)})
    with pytest.raises(SchemaError, match=r"30 optional properties.*at most 24"):
        strict_schema(many, "wide", "anthropic")
    strict_schema(many, "wide", "openai")  # OpenAI makes them required: no such budget
    deep: dict = {"type": "integer"}
    for level in range(11):
        deep = obj({f"l{level}": deep}, [f"l{level}"])
    with pytest.raises(SchemaError, match=r"levels of nested objects.*at most 10"):
        strict_schema(deep, "deep", "openai")


def test_strict_is_ignored_where_the_provider_has_no_strict_mode():
    tool = make_tool("bare_dict", returns={"type": "integer"})  # an untyped map: strict would refuse it
    for fmt in (None, "gemini", "mcp"):
        assert render(tool, fmt, strict=True) == render(tool, fmt, strict=False)


def test_gemini_declarations():
    tool = add_tool(name="math.add")
    assert render(tool, "gemini") == {"name": "math.add", "description": "Add two integers.",
                                      "parametersJsonSchema": ADD, "responseJsonSchema": {"type": "integer"}}
    assert render(tool, "gemini-openapi") == {
        "name": "math.add", "description": "Add two integers.",
        "parameters": {"type": "object", "properties": {
            "a": {"type": "integer", "description": "first addend"},
            "b": {"type": "integer", "default": 1, "description": "second addend"}}, "required": ["a"]}}
    no_params = make_tool("no_params", name="ping", description="")
    assert render(no_params, "gemini-openapi") == {"name": "ping", "description": ""}


def test_gemini_openapi_exact_conversions():
    enums = openapi_schema(CORPUS["enums"][0], "demo")["properties"]
    assert enums["color"] == {"type": "string", "enum": ["red", "green"]}
    assert enums["level"] == {"type": "integer", "minimum": 1, "maximum": 3}
    # not a run of consecutive values: one exact range per value, the constraint kept (issue 12, 10)
    assert enums["sparse"] == {"anyOf": [{"type": "integer", "minimum": value, "maximum": value}
                                         for value in (1, 5, 10)]}
    assert enums["mixed"] == {"anyOf": [{"type": "string", "enum": ["auto"]},
                                        {"type": "integer", "minimum": 0, "maximum": 0}]}
    assert enums["opt"] == {"type": "string", "enum": ["a", "b"], "nullable": True}
    assert openapi_schema(CORPUS["const"][0], "demo")["properties"]["kind"] == {"type": "string", "enum": ["circle"]}
    optional = openapi_schema(CORPUS["optional"][0], "demo")["properties"]
    assert optional["when"] == {"type": "string", "format": "date-time", "nullable": True, "default": None}
    assert optional["maybe"] == {"type": "integer", "nullable": True}
    formats = openapi_schema(CORPUS["formats"][0], "demo")["properties"]
    assert formats["blob"] == {"type": "string", "format": "byte"}
    assert formats["id"] == {"type": "string", "description": '(format: "uuid")'}
    assert openapi_schema(CORPUS["pair"][0], "demo")["properties"]["pair"] == {
        "type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}
    constraints = openapi_schema(CORPUS["constraints"][0], "demo")["properties"]
    assert constraints["age"] == {"type": "integer", "minimum": 0, "maximum": 149}
    assert constraints["ratio"] == {"type": "number",
                                    "description": "(exclusiveMinimum: 0, multipleOf: 0.5)"}
    arrays = openapi_schema(CORPUS["arrays"][0], "demo")["properties"]
    assert arrays["tags"] == {"type": "array", "items": {"type": "string"}, "description": "(uniqueItems: true)"}
    shared = openapi_schema(CORPUS["shared_ref"][0], "demo")["properties"]
    assert shared["end"]["description"] == "where it ends" and "$ref" not in json.dumps(shared)
    pydantic_style = openapi_schema(CORPUS["pydantic_style"][0], "demo")
    assert pydantic_style["properties"]["gift"] == {
        "type": "object", "title": "Gift", "properties": {"message": {"type": "string", "title": "Message"}},
        "required": ["message"], "nullable": True, "default": None}


def test_mcp_definition_wraps_non_object_results_and_maps_hints():
    tool = add_tool(name="math.add", hints=frozenset({"read-only", "idempotent"}))
    dialect = {"$schema": "https://json-schema.org/draft/2020-12/schema"}  # on both schemas (SEP-1613)
    assert render(tool, "mcp") == {
        "name": "math.add", "description": "Add two integers.", "inputSchema": dialect | ADD,
        "outputSchema": dialect | {"type": "object", "properties": {"result": {"type": "integer"}},
                                   "required": ["result"]},
        "annotations": {"readOnlyHint": True, "idempotentHint": True}}
    assert mcp_wraps_result(tool)
    everything = add_tool(hints=frozenset({"read-only", "destructive", "idempotent", "open-world"}))
    assert render(everything, "mcp")["annotations"] == {
        "readOnlyHint": True, "destructiveHint": True, "idempotentHint": True, "openWorldHint": True}
    assert "annotations" not in render(add_tool(), "mcp")
    as_object = Tool(name="info", description="", parameters=obj({}),
                     returns=obj({"ok": {"type": "boolean"}}, ["ok"]))
    assert render(as_object, "mcp")["outputSchema"] == dialect | as_object.returns
    assert not mcp_wraps_result(as_object)
    assert "outputSchema" not in render(Tool(name="x", description="", parameters=obj({})), "mcp")
    assert not mcp_wraps_result(Tool(name="x", description="", parameters=obj({})))


def test_mcp_wrapping_keeps_defs_resolvable():
    returns = {"$ref": "#/$defs/Node", "$defs": NODE_DEFS}
    wrapped = mcp_output_schema(returns)
    assert wrapped == {"type": "object", "properties": {"result": {"$ref": "#/$defs/Node"}},
                       "required": ["result"], "$defs": NODE_DEFS}
    validator = jsonschema.Draft202012Validator(wrapped)
    assert validator.is_valid({"result": {"value": 1, "children": [{"value": 2}]}})
    assert not validator.is_valid({"result": {"value": "1"}})
    assert returns == {"$ref": "#/$defs/Node", "$defs": NODE_DEFS}


def test_provider_sdks_accept_the_definitions():
    import anthropic.types
    import openai.types.chat
    import openai.types.responses
    from pydantic import TypeAdapter

    tool = add_tool(name="math.add")
    for strict in (False, True):
        TypeAdapter(openai.types.chat.ChatCompletionFunctionToolParam).validate_python(
            render(tool, "openai", strict))
        TypeAdapter(openai.types.responses.FunctionToolParam).validate_python(render(tool, "responses", strict))
        TypeAdapter(anthropic.types.ToolParam).validate_python(render(tool, "anthropic", strict))


def test_no_docstring_gives_empty_description():
    tool = Tool(name="bare", description="", parameters=obj({}))
    for fmt in FORMATS:
        rendered = render(tool, fmt)
        body = rendered.get("function", rendered)
        assert body["description"] == ""


def test_unknown_format_lists_the_valid_ones():
    with pytest.raises(ValueError, match=r"'claude'.*'openai', 'responses', 'anthropic'"):
        render(add_tool(), "claude")
    with pytest.raises(ValueError, match="unknown tool format"):
        wire_name("x", "claude")


def test_tool_schema_caches_the_rendering():
    tool = add_tool()
    first = tool.schema("openai", strict=True)
    assert tool.schema("openai", strict=True) == first
    assert tool.schema("openai", strict=True)["function"] is not first["function"]  # fresh top level


# ------------------------------------------------------------------------------------------------
# Names
# ------------------------------------------------------------------------------------------------

NAME_PATTERNS = {
    "openai": r"[A-Za-z0-9_-]{1,64}", "responses": r"[A-Za-z0-9_-]{1,64}", "anthropic": r"[A-Za-z0-9_-]{1,64}",
    "gemini": r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}", "gemini-openapi": r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}",
    "mcp": r"[A-Za-z0-9_.-]{1,128}",
}
NAMES = ["add", "calc.add", "db.users.find", "x" * 64, "x" * 65, "a.b" + "c" * 70, "9lives", "weird name!",
         "ünïcode", "calculator.add_two_numbers_with_a_very_long_descriptive_name_indeed", "-dash", "a:b"]


@pytest.mark.parametrize("fmt", [fmt for fmt in FORMATS if fmt])
def test_wire_names_are_valid_deterministic_and_distinct(fmt):
    mapped = {name: wire_name(name, fmt) for name in NAMES}
    for name, wire in mapped.items():
        assert re.fullmatch(NAME_PATTERNS[fmt], wire), (fmt, name, wire)
        assert wire_name(name, fmt) == wire
        assert wire in wire_names(name)
    assert len(set(mapped.values())) == len(NAMES), "distinct names must stay distinct"


def test_wire_name_mapping_rules():
    assert wire_name("calc.add", "openai") == "calc__add"
    assert wire_name("calc.add", "anthropic") == "calc__add"
    assert wire_name("calc.add", "gemini") == "calc.add"
    assert wire_name("calc.add", "mcp") == "calc.add"
    assert wire_name("calc.add", None) == "calc.add"
    assert wire_name("x" * 64, "openai") == "x" * 64
    long = wire_name("x" * 65, "openai")
    assert len(long) == 64 and long.startswith("x" * 55 + "_")
    assert wire_name("x" * 65, "openai") != wire_name("x" * 66, "openai")
    assert wire_names("calc.add") == {"calc.add", "calc__add"}
    assert wire_names("add") == {"add"}


def test_registry_accepts_every_mapped_name():
    from nbtools.policy import origin_of
    from nbtools.registry import Registry

    tools = [add_tool(name=name) for name in NAMES]
    registry = Registry(tools)
    for tool in tools:
        for fmt in FORMATS:
            # the registry hands out copies bound to its policy (issue 10); origin_of is the Tool given
            assert origin_of(registry.get(wire_name(tool.name, fmt))) is tool
            body = render(tool, fmt)
            assert origin_of(registry.get(body.get("function", body)["name"])) is tool


# ------------------------------------------------------------------------------------------------
# A strict null means "left out": dispatch applies the rule
# ------------------------------------------------------------------------------------------------

def test_dispatch_reads_a_strict_null_as_left_out_only_where_it_means_that():
    """Nulls for optional properties that cannot hold null are left out (in nested objects too);
    nulls a property accepts are kept; a null for a required property is refused."""
    parameters = CORPUS["optional"][0]
    sent = {"when": None, "maybe": None, "count": None, "note": None}
    assert dispatched(parameters, sent) == {"when": None, "maybe": None}
    assert sent == {"when": None, "maybe": None, "count": None, "note": None}
    nested = CORPUS["recursive"][0]
    assert dispatched(nested, {"tree": {"value": 1, "children": [{"value": 2, "children": None}]}}) == {
        "tree": {"value": 1, "children": [{"value": 2}]}}
    required_null = obj({"a": {"type": "integer"}}, ["a"])
    with pytest.raises(ToolCallError) as info:
        dispatched(required_null, {"a": None})
    assert info.value.argument == "a" and "got null" in str(info.value)
    with pytest.raises(ToolCallError, match="JSON object"):
        dispatched(parameters, ["not", "a dict"])


def test_a_strict_null_for_an_optional_parameter_gives_the_default():
    def scaled(x: int, factor: int = 3, label: str = "n") -> str:
        return f"{label}{x * factor}"

    sent = {"x": 2, "factor": None, "label": None}
    strict = render(Tool.from_function(scaled), "openai", strict=True)["function"]["parameters"]
    jsonschema.Draft202012Validator(strict).validate(sent)  # what an OpenAI strict model may send
    assert call_func("scaled", sent, ns=[scaled]) == "n6"
    with pytest.raises(ToolCallError) as info:
        call_func("scaled", {"x": None, "factor": None, "label": None}, ns=[scaled])
    assert info.value.argument == "x"


def test_the_strict_checker_rejects_what_providers_reject():
    """The strict checker is what makes the grid meaningful: it must fail on non-strict schemas."""
    with pytest.raises(AssertionError, match="not all required"):
        check_strict(ADD, "openai")
    with pytest.raises(AssertionError, match="unsupported keywords"):
        check_strict(obj({"s": {"type": "string", "minLength": 1}}, ["s"]), "openai")
    with pytest.raises(AssertionError, match="object not closed"):
        check_strict(obj({"m": {"type": "object", "properties": {}, "additionalProperties": {"type": "integer"}}},
                         ["m"]), "openai")
    with pytest.raises(AssertionError, match="untyped"):
        check_strict(obj({"x": {"description": "anything"}}, ["x"]), "openai")
    with pytest.raises(AssertionError, match="recursive"):
        check_strict(strict_schema(CORPUS["recursive"][0], "demo", "openai"), "anthropic")


def test_refusal_of_extra_keys_names_the_kwargs_parameter():
    parameters = obj({"first": {"type": "string"}}, ["first"], additionalProperties={"type": "string"})
    tool = Tool(name="configure", description="", parameters=parameters,
                passing=(("first", "keyword"), ("options", "varkw")))
    # untyped **options: an optional catch-all with no strict form is left out, not a refusal
    untyped = tool.replace(parameters={**parameters, "additionalProperties": {}})
    assert render(untyped, "openai", strict=True)["function"]["parameters"] == {
        "type": "object", "properties": {"first": {"type": "string"}}, "required": ["first"],
        "additionalProperties": False}
    # Gemini's OpenAPI subset keeps the named parameters and says in words that extras are allowed
    assert render(tool, "gemini-openapi")["parameters"] == {
        "type": "object", "properties": {"first": {"type": "string"}}, "required": ["first"],
        "description": '(additionalProperties: {"type": "string"})'}
    only_extras = Tool(name="anything", description="", parameters=obj({}, additionalProperties={}),
                       passing=(("rest", "varkw"),))
    assert render(only_extras, "anthropic", True)["input_schema"] == {
        "type": "object", "properties": {}, "required": [], "additionalProperties": False}
    assert "parameters" not in render(only_extras, "gemini-openapi")  # nothing the model must send


def test_optional_catch_alls_are_left_out_where_a_dialect_cannot_carry_them():
    from nbtools import get_schema

    def collect(label: str, *values, **options) -> str:
        """Collect values."""
        return label

    for fmt, strict in (("openai", True), ("anthropic", True), ("gemini-openapi", False)):
        parameters = parameters_of(get_schema(collect, fmt, strict=strict), fmt)
        assert list(parameters["properties"]) == ["label"], fmt  # *values and **options left out
    # typed catch-alls keep their form: *values as an array, **options as key/value pairs
    def typed(label: str, *values: int, **options: str) -> str:
        """Typed."""
        return label

    strict = parameters_of(get_schema(typed, "openai", strict=True), "openai")
    assert list(strict["properties"]) == ["label", "values", "extra-arguments"]
    # a required property with no form is still refused: only optional catch-alls are left out
    with pytest.raises(SchemaError):
        strict_schema(obj({"args": {"type": "array", "items": {}}}, ["args"]), "t", "openai", varargs_name="args")


# ------------------------------------------------------------------------------------------------
# issue 12, points 5 and 6: draft-07 references, allOf/$ref beside other keywords, root references
# ------------------------------------------------------------------------------------------------
DRAFT7 = {"type": "object", "properties": {"where": {"$ref": "#/definitions/Spot"}}, "required": ["where"],
          "definitions": {"Spot": obj({"lat": {"type": "number"}, "lon": {"type": "number"}}, ["lat", "lon"])}}


def test_point5_draft07_definitions_render_in_strict_and_openapi():
    tool = Tool.from_schema("locate", "", DRAFT7, lambda **kw: kw)
    for provider in ("openai", "anthropic"):
        fmt = "anthropic" if provider == "anthropic" else "openai"
        parameters = parameters_of(render(tool, fmt, strict=True), fmt)
        check_strict(parameters, provider)
        assert parameters["properties"]["where"] == {"$ref": "#/$defs/Spot"}
    assert render(tool, "gemini-openapi")["parameters"]["properties"]["where"]["required"] == ["lat", "lon"]
    assert tool.call({"where": {"lat": 1, "lon": 2}}) == {"where": {"lat": 1.0, "lon": 2.0}}


def test_point6_ref_beside_constraints_keeps_its_meaning():
    defs = {"Base": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}}
    wrapped = {"type": "object", "required": ["item"], "$defs": defs, "properties": {"item": {
        "allOf": [{"$ref": "#/$defs/Base"}], "properties": {"qty": {"type": "integer"}}, "required": ["qty"],
        "description": "one line"}}}
    item = strict_schema(wrapped, "order", "openai")["properties"]["item"]
    assert item["properties"] == {"id": {"type": "string"}, "qty": {"type": "integer"}}
    assert item["required"] == ["id", "qty"] and item["description"] == "one line"
    # a $ref with a sibling property: the same intersection, never the property moved into words
    beside = {**wrapped, "properties": {"item": {"$ref": "#/$defs/Base", "properties": {"qty": {"type": "integer"}},
                                                 "required": ["qty"]}}}
    assert strict_schema(beside, "order", "openai")["properties"]["item"]["required"] == ["id", "qty"]
    # a closed part another part adds keys to has no single-object form: refused, not loosened
    closed = {**wrapped, "$defs": {"Base": obj({"id": {"type": "string"}}, ["id"])}}
    with pytest.raises(SchemaError, match="closed object"):
        strict_schema(closed, "order", "openai")
    # parts that cannot both hold are refused by name, not guessed
    clash = {"type": "object", "properties": {"n": {"allOf": [{"type": "string"}, {"type": "integer"}]}}}
    with pytest.raises(SchemaError, match="no common type") as info:
        strict_schema(clash, "t", "openai")
    assert info.value.parameter == "n"


def test_point6_root_refs_self_references_and_embedded_resources():
    rooted = {"$ref": "#/definitions/Args", "definitions": {"Args": obj({"q": {"type": "string"}}, ["q"])}}
    tool = Tool.from_schema("search", "", rooted, lambda **kw: kw)
    strict = parameters_of(render(tool, "openai", strict=True), "openai")
    assert strict["type"] == "object" and strict["properties"] == {"q": {"type": "string"}}
    check_strict(strict, "openai")
    tree = obj({"label": {"type": "string"}, "kids": {"type": "array", "items": {"$ref": "#"}}}, ["label", "kids"])
    strict = strict_schema(tree, "t", "openai")
    check_strict(strict, "openai")
    assert strict["properties"]["kids"]["items"] == {"$ref": "#/$defs/Root"}
    assert strict["$defs"]["Root"]["properties"]["label"] == {"type": "string"}
    with pytest.raises(SchemaError, match="recursive"):
        strict_schema(tree, "t", "anthropic")
    # a $ref inside a subschema with its own $id and $defs means that resource's definition
    embedded = {"type": "object", "required": ["v"], "additionalProperties": False,
                "$defs": {"N": {"type": "string"}},
                "properties": {"v": {"$id": "https://example.com/v", "$defs": {"N": {"type": "integer"}},
                                     **obj({"n": {"$ref": "#/$defs/N"}}, ["n"])}}}
    strict = strict_schema(embedded, "t", "openai")
    inner = strict["properties"]["v"]["properties"]["n"]
    assert strict["$defs"][split_name(inner["$ref"])] == {"type": "integer"}
    assert openapi_schema(embedded, "t")["properties"]["v"]["properties"]["n"] == {"type": "integer"}


def split_name(ref: str) -> str:
    return ref.removeprefix("#/$defs/")
