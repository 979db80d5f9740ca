"""What a schema read back keeps, through the public API: open objects in strict mode, JSON numbers,
undeclared arguments (`Tool.call` and `mk_tool` agree), explicit false hints over MCP, "neutral"."""

from __future__ import annotations

import pytest

from nbtools import Registry, SchemaError, Tool, ToolCallError, get_schema, mk_tool


def echo(**arguments):
    return arguments


PROPS = {"x": {"type": "number"}}


# -- strict mode and an explicitly open object -----------------------------------------------------
@pytest.mark.parametrize("fmt", ["openai", "responses", "anthropic"])
@pytest.mark.parametrize("extra", [True, {}])
def test_strict_mode_refuses_an_explicitly_open_arguments_object(fmt, extra):
    tool = Tool.from_schema("lookup", "", {"type": "object", "properties": PROPS, "additionalProperties": extra},
                            echo)
    with pytest.raises(SchemaError) as refused:
        tool.schema(fmt, strict=True)
    text = str(refused.value)
    assert "'lookup'" in text and "arguments object is explicitly open" in text and "additionalProperties" in text
    assert tool.call({"x": 1, "y": 2}) == {"x": 1, "y": 2}  # not strict: the extra arguments still go through
    assert tool.schema(fmt)  # and it renders


@pytest.mark.parametrize("extra", [True, {}])
def test_strict_mode_refuses_an_explicitly_open_nested_object(extra):
    nested = {"type": "object", "properties": {"filter": {"type": "object", "properties": PROPS,
                                                          "additionalProperties": extra}}}
    with pytest.raises(SchemaError, match="'lookup'.*filter.*arbitrary keys and untyped values"):
        Tool.from_schema("lookup", "", nested, echo).schema("openai", strict=True)


def test_a_typed_open_object_stays_as_key_value_pairs():
    tool = Tool.from_schema("tag", "", {"type": "object", "properties": PROPS,
                                        "additionalProperties": {"type": "integer"}}, echo)
    parameters = tool.schema("openai", strict=True)["function"]["parameters"]
    pairs = parameters["properties"]["extra-arguments"]["anyOf"][0]
    assert pairs["items"]["properties"]["value"] == {"type": "integer"}
    assert tool.call({"x": 1, "extra-arguments": [{"key": "n", "value": 3}]}) == {"x": 1, "n": 3}


def test_a_functions_untyped_kwargs_stay_an_optional_catch_all_left_out():
    def tagged(name: str, **extra):
        return extra

    parameters = Tool.from_function(tagged).schema("openai", strict=True)["function"]["parameters"]
    assert list(parameters["properties"]) == ["name"] and parameters["additionalProperties"] is False


# -- strict rendering and dispatch agree on what a null means ---------------------------------------
# An optional property that cannot hold null is rendered required-but-nullable (OpenAI strict), and a
# null for it means "left out"; one that can hold null stays as it is, and a null for it is a value.
# Behind a `$ref` (a recursive definition, which the reader keeps as a reference) both sides follow it.
CHAIN = {"type": "object", "properties": {"head": {"$ref": "#/$defs/Link"}}, "$defs": {
    "Link": {"anyOf": [{"type": "object", "properties": {"next": {"$ref": "#/$defs/Link"},  # can be null
                                                         "tail": {"$ref": "#/$defs/Node"}}},
                       {"type": "null"}]},
    "Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}}}  # cannot be null


def test_strict_rendering_and_dispatch_agree_on_a_null_behind_a_reference():
    tool = Tool.from_schema("walk", "", CHAIN, echo)
    strict = tool.schema("openai", strict=True)["function"]["parameters"]
    assert strict["$defs"]["Link"]["anyOf"][0]["properties"]["next"] == {"$ref": "#/$defs/Link"}  # as it was
    assert strict["$defs"]["Node"]["properties"]["next"]["anyOf"][1] == {"type": "null"}  # made nullable
    assert tool.call({"head": None}) == {"head": None}
    # `Link.next`'s null is a value; `Node.next`'s means "left out"
    assert tool.call({"head": {"next": None, "tail": {"next": None}}}) == {"head": {"next": None, "tail": {}}}
    assert tool.call({"head": {"next": {"next": None}}}) == {"head": {"next": {"next": None}}}


# -- a JSON number keeps ints ints -----------------------------------------------------------------
def test_number_keeps_an_int_an_int():
    tool = Tool.from_schema("measure", "", {"type": "object", "properties": PROPS, "required": ["x"]}, echo)
    zero = tool.call({"x": 0})["x"]
    assert zero == 0 and type(zero) is int
    assert tool.call({"x": 2**60 + 1})["x"] == 2**60 + 1
    assert tool.call('{"x": 1152921504606846977}')["x"] == 2**60 + 1  # from JSON text too
    half = tool.call({"x": 0.5})["x"]
    assert half == 0.5 and type(half) is float
    # through a mk_tool function forwarding to it
    forward = mk_tool(lambda name, **arguments: tool.call(arguments), tool.schema())
    assert type(forward(x=0)["x"]) is int and forward(x=2**60 + 1)["x"] == 2**60 + 1


def test_a_float_parameter_still_gets_a_float():
    def scale(x: float) -> float:
        return x

    value = Tool.from_function(scale).call({"x": 2})
    assert value == 2.0 and type(value) is float


# -- undeclared arguments: one answer ----------------------------------------------------------------
def test_tool_call_and_the_mk_tool_function_both_refuse_an_undeclared_argument():
    definition = {"name": "plain", "description": "", "parameters": {"type": "object", "properties": PROPS}}
    tool = Tool.from_schema("plain", "", definition["parameters"], echo)
    with pytest.raises(ToolCallError, match="argument 'y': unexpected argument"):
        tool.call({"x": 1, "y": 2})
    function = mk_tool(lambda name, **arguments: arguments, definition)
    with pytest.raises(TypeError, match="'y'"):
        function(x=1, y=2)
    # declared open: both take it
    definition["parameters"] = {**definition["parameters"], "additionalProperties": True}
    assert Tool.from_schema("plain", "", definition["parameters"], echo).call({"x": 1, "y": 2}) == {"x": 1, "y": 2}
    assert mk_tool(lambda name, **arguments: arguments, definition)(x=1, y=2) == {"x": 1, "y": 2}


# -- "neutral" wherever a format is taken ------------------------------------------------------------
def test_neutral_is_accepted_everywhere():
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    registry = Registry()
    registry.add(add)
    assert get_schema(add, "neutral") == get_schema(add)
    assert Tool.from_function(add).schema("neutral") == Tool.from_function(add).schema(None)
    assert registry.schemas("neutral") == registry.schemas()
    with pytest.raises(ValueError, match="unknown tool format 'natural'"):
        get_schema(add, "natural")


# -- explicit false hints, over a real MCP connection ------------------------------------------------
def test_explicit_false_hints_survive_serving_and_connect():
    nbmcp = pytest.importorskip("nbtools.mcp")
    served = Registry()
    served.add(Tool.from_schema("look", "Look.", {"type": "object", "properties": PROPS}, echo,
                                hints="read-only not-destructive not-open-world"))
    served.add(Tool.from_schema("touch", "Touch.", {"type": "object", "properties": PROPS}, echo))
    server = nbmcp.start(served, port=0)
    try:
        with nbmcp.connect(server.url, timeout=30) as remote:
            tools = {tool.name: tool for tool in remote}
            assert tools["look"].hints == {"read-only", "not-destructive", "not-open-world"}
            assert tools["look"].schema("mcp")["annotations"] == {
                "destructiveHint": False, "openWorldHint": False, "readOnlyHint": True}
            # a tool that says nothing takes MCP's defaults: destructive, open-world
            assert tools["touch"].hints == {"destructive", "open-world"}
    finally:
        server.stop()


def test_a_hint_and_its_negation_contradict():
    with pytest.raises(ValueError, match="'destructive' and 'not-destructive'"):
        Tool.from_schema("t", "", None, echo, hints="destructive not_destructive")


# -- a root allOf: properties spread over the parts (JSON Schema 2020-12, MCP SEP-2106) --------------

SPREAD = {"$defs": {"Paging": {"type": "object", "properties": {"page": {"type": "integer", "minimum": 1}}}},
          "allOf": [{"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
                    {"$ref": "#/$defs/Paging"}]}


def test_a_root_allof_spreading_the_properties_is_read_as_one_object():
    # Was read as an object with no properties: every call refused ("this tool takes no arguments").
    search = Tool.from_schema("search", "Find things.", SPREAD, lambda **arguments: arguments)
    assert search.call({"query": "tea", "page": 2}) == {"query": "tea", "page": 2}
    with pytest.raises(ToolCallError, match="argument 'query': missing required argument"):
        search.call({"page": 2})
    with pytest.raises(ToolCallError, match="argument 'page'"):
        search.call({"query": "tea", "page": 0})
    strict = search.schema("openai", strict=True)["function"]["parameters"]
    assert sorted(strict["properties"]) == ["page", "query"]
    assert search.schema("mcp")["inputSchema"]["allOf"] == SPREAD["allOf"]  # served as written
    sent = []
    search_fn = mk_tool(lambda name, **arguments: sent.append((name, arguments)), {"name": "search", "inputSchema": SPREAD})
    search_fn("tea", page=3)
    assert sent == [("search", {"query": "tea", "page": 3})]


def test_a_root_allof_that_cannot_be_one_object_is_refused_by_name():
    parts = {"allOf": [{"type": "object", "properties": {"n": {"type": "integer"}}},
                       {"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": False,
                        "required": ["n"]},
                       {"type": "object", "properties": {"m": {"type": "string"}}}]}
    with pytest.raises(SchemaError, match="tool 'odd': its root allOf cannot be read as one object"):
        Tool.from_schema("odd", None, parts, lambda **arguments: arguments)
