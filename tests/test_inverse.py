"""The inverse: JSON Schema -> intermediate form -> signature -> callable (nbtools/inverse.py)."""

from __future__ import annotations

import asyncio
import copy
import inspect
import typing
from typing import Any, Literal

import pytest

from nbtools import ir
from nbtools.errors import SchemaError, ToolCallError
from nbtools.inverse import mk_tool, py_name, schema2sig
from nbtools.schema.read import schema_to_ir
from nbtools.tool import Tool

MISSING = ir.MISSING


def required(name: str, node: ir.Node, description: str | None = None) -> ir.Field:
    return ir.Field(name, node, required=True, default=MISSING, json_default=MISSING, description=description)


def optional(name: str, node: ir.Node, default: Any = MISSING, description: str | None = None) -> ir.Field:
    return ir.Field(name, node, required=False, default=default, json_default=default, description=description)


# ------------------------------------------------------------------------------------------------
# schema_to_ir: one keyword family at a time, exact nodes
# ------------------------------------------------------------------------------------------------
class TestScalars:
    def test_string_keeps_format_encoding_and_constraints_but_no_conversion(self):
        node = schema_to_ir({"type": "string", "format": "date-time", "minLength": 1, "maxLength": 30,
                             "pattern": "^2", "contentEncoding": "base64", "description": "when"})
        assert node == ir.Str(py=str, format="date-time", encoding="base64", description="when",
                              constraints=(("minLength", 1), ("maxLength", 30), ("pattern", "^2")))

    def test_numbers(self):
        assert schema_to_ir({"type": "integer", "minimum": 0, "exclusiveMaximum": 10, "multipleOf": 2}) == \
            ir.Int(constraints=(("minimum", 0), ("exclusiveMaximum", 10), ("multipleOf", 2)))
        assert schema_to_ir({"type": "number", "maximum": 1.5}) == ir.Float(None, constraints=(("maximum", 1.5),))

    def test_draft4_boolean_exclusive_bounds_become_numeric(self):
        node = schema_to_ir({"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 5})
        assert node == ir.Float(None, constraints=(("exclusiveMinimum", 0), ("maximum", 5)))

    def test_bool_null_any_and_never(self):
        assert schema_to_ir({"type": "boolean"}) == ir.Bool()
        assert schema_to_ir({"type": "null"}) == ir.NoneValue()
        assert schema_to_ir({}) == ir.AnyValue()
        assert schema_to_ir(True) == ir.AnyValue()
        assert schema_to_ir({"description": "anything"}) == ir.AnyValue(description="anything")
        assert schema_to_ir(False) == ir.Union(options=())

    def test_type_list_and_integer_number_overlap(self):
        assert schema_to_ir({"type": ["string", "null"], "maxLength": 3}) == \
            ir.Union(options=(ir.Str(constraints=(("maxLength", 3),)), ir.NoneValue()))
        assert schema_to_ir({"type": ["integer", "number"]}) == ir.Float(None)

    def test_gemini_openapi_dialect(self):
        # upper-case types, `nullable`, int64 keywords written as strings: read as the JSON Schema they mean
        tool = Tool.from_schema("t", "", {"type": "OBJECT", "properties": {
            "n": {"type": "INTEGER", "nullable": True, "minimum": "1"},
            "words": {"type": "ARRAY", "items": {"type": "STRING"}, "minItems": "2"},
            "any": {"type": "TYPE_UNSPECIFIED"},
            "pick": {"type": "STRING", "format": "enum", "enum": ["x"], "nullable": True},
            "either": {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}], "nullable": True}}}, None)
        types = {field.name: field.type for field in tool.args.fields}
        assert types == {
            "n": ir.Union(options=(ir.Int(constraints=(("minimum", 1),)), ir.NoneValue())),
            "words": ir.Array(item=ir.Str(), constraints=(("minItems", 2),)),
            "any": ir.AnyValue(),
            "pick": ir.Union(options=(ir.Literal(values=("x",)), ir.NoneValue())),
            "either": ir.Union(options=(ir.Str(), ir.Int(), ir.NoneValue()))}
        # the Tool keeps plain JSON Schema, so every provider (OpenAI too) gets a schema it accepts
        assert tool.parameters["properties"]["n"] == {"type": ["integer", "null"], "minimum": 1}
        assert tool.parameters["properties"]["any"] == {}

    def test_numeric_keywords_written_as_text_that_are_no_json_number_are_dropped(self):
        tool = Tool.from_schema("t", "", {"type": "OBJECT", "properties": {
            "s": {"type": "STRING", "minLength": "nan", "maxLength": "inf"},
            "n": {"type": "NUMBER", "maximum": "-Infinity", "minimum": "1.5"}}}, None)
        assert tool.parameters["properties"] == {"s": {"type": "string"}, "n": {"type": "number", "minimum": 1.5}}

    def test_the_dialect_is_read_from_a_copy_and_the_schema_given_is_left_alone(self):
        given = {"type": "OBJECT", "properties": {"tags": {"type": "ARRAY", "items": {"type": "STRING"},
                                                           "nullable": True, "default": ["a"]}}}
        before = copy.deepcopy(given)
        tool = Tool.from_schema("t", "", given, None)
        assert given == before
        assert tool.parameters["properties"]["tags"]["default"] is not given["properties"]["tags"]["default"]

    def test_gemini_openapi_dialect_inside_definitions_and_items(self):
        tool = Tool.from_schema("t", "", {"type": "object", "properties": {
            "points": {"type": "array", "items": {"$ref": "#/$defs/Point"}}},
            "$defs": {"Point": {"type": "OBJECT", "nullable": True, "properties": {"x": {"type": "NUMBER"}}}}}, None)
        point = tool.args.fields[0].type.item
        assert isinstance(point, ir.Union) and point.options[1] == ir.NoneValue()
        assert point.options[0].name == "Point" and point.options[0].fields[0].type == ir.Float(None)

    def test_a_root_of_no_known_type_is_refused_as_before(self):
        with pytest.raises(SchemaError, match="type 'object'"):
            Tool.from_schema("t", "", {"type": "TYPE_UNSPECIFIED"}, None)


class TestChoices:
    def test_enum_and_const(self):
        assert schema_to_ir({"type": "string", "enum": ["a", "b"]}) == ir.Literal(values=("a", "b"))
        assert schema_to_ir({"const": 5}) == ir.Literal(values=(5,))
        assert schema_to_ir({"const": None}) == ir.NoneValue()

    def test_enum_with_null_is_optional_literal(self):
        assert schema_to_ir({"enum": ["x", None]}) == ir.Union(options=(ir.Literal(values=("x",)), ir.NoneValue()))

    def test_enum_values_filtered_by_type_and_kept_distinct(self):
        assert schema_to_ir({"type": "string", "enum": ["a", 1]}) == ir.Literal(values=("a",))
        assert schema_to_ir({"enum": [1, True, 1]}).values == (1, True)

    def test_enum_of_objects_is_ignored_not_an_error(self):
        assert schema_to_ir({"enum": [{"a": 1}, [2]]}) == ir.AnyValue()

    def test_anyof_oneof_flatten_and_dedupe(self):
        node = schema_to_ir({"anyOf": [{"type": "integer"}, {"oneOf": [{"type": "string"}, {"type": "integer"}]}],
                             "description": "id"})
        assert node == ir.Union(options=(ir.Int(), ir.Str()), description="id")
        assert schema_to_ir({"oneOf": [{"type": "integer"}]}) == ir.Int()
        assert schema_to_ir({"anyOf": [{"type": "integer"}, {}]}) == ir.AnyValue()

    def test_pydantic_optional(self):
        node = schema_to_ir({"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Name"})
        assert node == ir.Union(options=(ir.Str(), ir.NoneValue()))

    def test_single_allof_unwraps_and_unknown_keywords_are_ignored(self):
        assert schema_to_ir({"allOf": [{"type": "integer"}], "description": "n"}) == ir.Int(description="n")
        assert schema_to_ir({"type": "integer", "not": {"const": 3}, "if": {}, "x-custom": 1}) == ir.Int()


class TestArrays:
    def test_homogeneous(self):
        assert schema_to_ir({"type": "array", "items": {"type": "integer"}, "maxItems": 4, "uniqueItems": True}) == \
            ir.Array(item=ir.Int(), py=list, constraints=(("maxItems", 4), ("uniqueItems", True)))
        assert schema_to_ir({"type": "array"}) == ir.Array(item=ir.AnyValue())

    def test_closed_prefix_items_is_a_tuple(self):
        closed = {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False}
        assert schema_to_ir(closed) == ir.Tuple(items=(ir.Int(), ir.Str()))
        pydantic_style = {"type": "array", "prefixItems": [{"type": "integer"}], "minItems": 1, "maxItems": 1}
        assert schema_to_ir(pydantic_style) == ir.Tuple(items=(ir.Int(),))

    def test_legacy_items_list(self):
        legacy = {"type": "array", "items": [{"type": "integer"}, {"type": "number"}], "additionalItems": False}
        assert schema_to_ir(legacy) == ir.Tuple(items=(ir.Int(), ir.Float(None)))

    def test_open_prefix_is_a_looser_array(self):
        node = schema_to_ir({"type": "array", "prefixItems": [{"type": "integer"}], "items": {"type": "string"}})
        assert node == ir.Array(item=ir.Union(options=(ir.Int(), ir.Str())))


class TestObjects:
    def test_properties_required_defaults_and_descriptions(self):
        node = schema_to_ir({
            "type": "object", "title": "Point", "additionalProperties": False,
            "properties": {
                "x": {"type": "integer", "description": "across"},
                "label": {"type": "string", "default": "origin"},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["x"],
        })
        assert node == ir.Object(name="Point", kind="dict", extra=None, fields=(
            required("x", ir.Int(), description="across"),
            optional("label", ir.Str(), default="origin"),
            optional("tags", ir.Array(item=ir.Str())),
        ))

    def test_additional_properties_forms(self):
        props = {"properties": {"a": {"type": "integer"}}}
        assert schema_to_ir({"type": "object", **props}).extra == ir.AnyValue()
        assert schema_to_ir({"type": "object", **props, "additionalProperties": True}).extra == ir.AnyValue()
        assert schema_to_ir({"type": "object", **props, "additionalProperties": {"type": "number"}}).extra == \
            ir.Float(None)
        assert schema_to_ir({"type": "object", **props, "additionalProperties": False,
                             "patternProperties": {"^x-": {}}}).extra == ir.AnyValue()

    def test_maps(self):
        assert schema_to_ir({"type": "object"}) == ir.Map(key=ir.Str(), value=ir.AnyValue())
        assert schema_to_ir({"type": "object", "additionalProperties": {"type": "integer"}, "maxProperties": 3}) == \
            ir.Map(key=ir.Str(), value=ir.Int(), constraints=(("maxProperties", 3),))
        assert schema_to_ir({"type": "object", "propertyNames": {"enum": ["a", "b"]}}) == \
            ir.Map(key=ir.Literal(values=("a", "b")), value=ir.AnyValue())

    def test_closed_empty_object(self):
        assert schema_to_ir({"type": "object", "properties": {}, "additionalProperties": False}) == \
            ir.Object(fields=(), extra=None)

    def test_type_inferred_from_keywords(self):
        assert schema_to_ir({"properties": {"a": {}}, "required": ["a"]}) == \
            ir.Object(fields=(required("a", ir.AnyValue()),), extra=ir.AnyValue())
        assert schema_to_ir({"items": {"type": "integer"}}) == ir.Array(item=ir.Int())
        assert schema_to_ir({"minLength": 1, "minimum": 2}) == ir.AnyValue()  # families disagree

    def test_required_key_without_property_schema(self):
        node = schema_to_ir({"type": "object", "properties": {}, "required": ["token"]})
        assert node.fields == (required("token", ir.AnyValue()),)


class TestReferences:
    def test_defs_are_inlined_named_and_shared(self):
        schema = {
            "type": "object",
            "properties": {"start": {"$ref": "#/$defs/Point", "description": "from"},
                           "end": {"$ref": "#/$defs/Point"}},
            "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"],
                                "description": "A point."}},
        }
        node = schema_to_ir(schema)
        point = ir.Object(name="Point", fields=(required("x", ir.Int()),), extra=ir.AnyValue(),
                          description="A point.")
        start, end = node.fields
        assert start.type == point and start.description == "from"
        assert end.type is node.fields[1].type and end.type == point

    def test_definitions_and_external_defs(self):
        assert schema_to_ir({"$ref": "#/definitions/N", "definitions": {"N": {"type": "integer"}}}) == ir.Int()
        assert schema_to_ir({"type": "array", "items": {"$ref": "#/$defs/N"}}, defs={"N": {"type": "string"}}) == \
            ir.Array(item=ir.Str())

    def test_recursive_ref_becomes_ref_with_target(self):
        schema = {
            "$ref": "#/$defs/Tree",
            "$defs": {"Tree": {"type": "object", "additionalProperties": False, "required": ["value"],
                               "properties": {"value": {"type": "integer"},
                                              "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}}}},
        }
        tree = schema_to_ir(schema)
        assert isinstance(tree, ir.Object) and tree.name == "Tree"
        children = tree.fields[1].type
        assert isinstance(children, ir.Array) and isinstance(children.item, ir.Ref)
        assert children.item.name == "Tree" and children.item.target() is tree

    def test_root_recursion(self):
        node = schema_to_ir({"title": "Expr", "anyOf": [{"type": "integer"},
                                                        {"type": "array", "items": {"$ref": "#"}}]})
        ref = node.options[1].item
        assert isinstance(ref, ir.Ref) and ref.name == "Expr" and ref.target() is node

    def test_json_pointer_escapes(self):
        schema = {"$ref": "#/$defs/a~1b", "$defs": {"a/b": {"type": "boolean"}}}
        assert schema_to_ir(schema) == ir.Bool()
        encoded = {"$ref": "#/$defs/a%20b~0c", "$defs": {"a b~c": {"type": "integer"}}}  # URI fragment: %-decoded
        assert schema_to_ir(encoded) == ir.Int()

    def test_unresolvable_refs_are_ignored(self):
        assert schema_to_ir({"$ref": "#/$defs/Nope"}) == ir.AnyValue()
        assert schema_to_ir({"$ref": "https://example.com/schema.json"}) == ir.AnyValue()
        assert schema_to_ir({"$ref": "#anchor"}) == ir.AnyValue()


# ------------------------------------------------------------------------------------------------
# tool_from_schema
# ------------------------------------------------------------------------------------------------
WEATHER_PARAMS = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "City name."},
        "unit": {"enum": ["c", "f"], "default": "c"},
        "days-ahead": {"type": "integer", "minimum": 0},
    },
    "required": ["city"],
    "additionalProperties": False,
}


class TestToolFromSchema:
    def test_fields(self):
        received = {}

        def forward(**arguments):
            received.update(arguments)
            return "sunny"

        built = Tool.from_schema("weather", "Get weather.", WEATHER_PARAMS, forward, group="web",
                                 hints="read_only idempotent", strict=True,
                                 returns={"type": "string"}, returns_description="the forecast")
        assert isinstance(built, Tool) and built.name == "weather" and built.description == "Get weather."
        assert built.parameters == WEATHER_PARAMS and built.parameters is not WEATHER_PARAMS
        assert built.group == "web" and built.hints == frozenset({"read-only", "idempotent"}) and built.strict
        assert built.returns == {"type": "string"} and built.returns_description == "the forecast"
        assert [field.name for field in built.args.fields] == ["city", "unit", "days-ahead"]
        assert built.args.kind == "dict" and built.args.extra is None
        assert built.passing == (("city", "keyword"), ("unit", "keyword"), ("days-ahead", "keyword"))
        assert not built.is_async
        assert built(**{"city": "Oslo", "days-ahead": 2}) == "sunny"
        assert received == {"city": "Oslo", "days-ahead": 2}

    def test_open_object_passes_extra_keys_and_async_is_detected(self):
        async def forward(**arguments):
            return arguments

        built = Tool.from_schema("echo", None, {"type": "object", "properties": {"a": {}},
                                                "additionalProperties": True}, forward)
        assert asyncio.run(built.acall({"a": 1, "b": 2})) == {"a": 1, "b": 2}
        assert built.is_async and built.description == ""
        # with no additionalProperties, only the named arguments are taken (as by mk_tool's function)
        closed = Tool.from_schema("echo", None, {"type": "object", "properties": {"a": {}}}, forward)
        with pytest.raises(ToolCallError, match="argument 'b': unexpected argument"):
            asyncio.run(closed.acall({"a": 1, "b": 2}))

    def test_parameters_without_properties(self):
        built = Tool.from_schema("ping", "", None, None)
        assert built.parameters == {"type": "object", "properties": {}} and built.args.fields == ()
        assert Tool.from_schema("ping", "", {"type": "object"}, None).args.extra is None
        assert Tool.from_schema("ping", "", {"type": "object", "additionalProperties": {}},
                                None).args.extra == ir.AnyValue()

    @pytest.mark.parametrize("parameters, fragment", [
        ({"type": "array"}, "type 'object'"),
        ({"type": ["object", "null"]}, "type 'object'"),
        ({"type": "banana"}, "type 'object'"),
        ({"anyOf": [{"type": "integer"}]}, "named properties"),
        ([1, 2], "a dict"),
    ])
    def test_root_must_be_an_object(self, parameters, fragment):
        with pytest.raises(SchemaError, match="tool 'bad'") as info:
            Tool.from_schema("bad", "", parameters, None)
        assert fragment in str(info.value)

    def test_bad_options(self):
        with pytest.raises(SchemaError, match="colour"):  # also a TypeError, as for any unknown keyword
            Tool.from_schema("t", "", None, None, colour="red")
        with pytest.raises(ValueError, match="unknown tool hint"):
            Tool.from_schema("t", "", None, None, hints="sleepy")
        with pytest.raises(SchemaError, match="non-empty"):
            Tool.from_schema("", "", None, None)

    def test_calls_validate_against_the_schema_and_keep_json_values(self):
        from nbtools.errors import ToolCallError

        built = Tool.from_schema("weather", "", WEATHER_PARAMS, lambda **arguments: arguments)
        assert built.call('{"city": "Oslo", "days-ahead": 2}') == {"city": "Oslo", "days-ahead": 2}
        for bad, argument in (({"city": 5}, "city"), ({"city": "x", "days-ahead": -1}, "days-ahead"),
                              ({"city": "x", "unit": "k"}, "unit"), ({"unit": "c"}, "city")):
            with pytest.raises(ToolCallError) as info:
                built.call(bad)
            assert info.value.argument == argument

    def test_recursive_schema_validates_deeply(self):
        from nbtools.errors import ToolCallError

        tree = {"type": "object", "additionalProperties": False, "required": ["value"],
                "properties": {"value": {"type": "integer"},
                               "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}}}
        built = Tool.from_schema("walk", "", {"type": "object", "required": ["tree"], "$defs": {"Tree": tree},
                                              "properties": {"tree": {"$ref": "#/$defs/Tree"}}},
                                 lambda **arguments: arguments["tree"])
        assert built.call({"tree": {"value": 1, "children": [{"value": 2}]}}) == {"value": 1, "children": [{"value": 2}]}
        with pytest.raises(ToolCallError, match=r"tree\.children\[0\]\.value"):
            built.call({"tree": {"value": 1, "children": [{"value": "x"}]}})

    def test_tool_from_schema_classmethod(self):
        assert Tool.from_schema("weather", "", WEATHER_PARAMS, None).args.fields[0].name == "city"


# ------------------------------------------------------------------------------------------------
# schema2sig / mk_tool: a definition in every provider's shape
# ------------------------------------------------------------------------------------------------
NEUTRAL = {"name": "weather", "description": "Get weather.", "parameters": WEATHER_PARAMS}
FORMATS = {
    "neutral": NEUTRAL,
    "openai": {"type": "function", "function": {**NEUTRAL, "strict": False}},
    "responses": {"type": "function", **NEUTRAL, "strict": False},
    "anthropic": {"name": "weather", "description": "Get weather.", "input_schema": WEATHER_PARAMS,
                  "cache_control": {"type": "ephemeral"}},
    "gemini": {"name": "weather", "description": "Get weather.", "parametersJsonSchema": WEATHER_PARAMS},
    "gemini-wrapper": {"functionDeclarations": [{"name": "weather", "description": "Get weather.",
                                                 "parametersJsonSchema": WEATHER_PARAMS}]},
    "gemini-openapi": {"name": "weather", "description": "Get weather.", "parameters": {
        "type": "OBJECT",
        "properties": {"city": {"type": "STRING", "description": "City name."},
                       "unit": {"type": "STRING", "format": "enum", "enum": ["c", "f"], "default": "c"},
                       "days-ahead": {"type": "INTEGER", "minimum": 0}},
        "required": ["city"]}},
    "mcp": {"name": "weather", "title": "Weather", "description": "Get weather.", "inputSchema": WEATHER_PARAMS,
            "annotations": {"readOnlyHint": True}},
}
WEATHER_SIGNATURE = "(city: str, unit: Literal['c', 'f'] = 'c', days_ahead: int | None = None)"


def sig_text(signature: inspect.Signature) -> str:
    return str(signature).replace("typing.", "")


class TestFormats:
    @pytest.mark.parametrize("fmt", list(FORMATS))
    def test_every_format_gives_the_same_signature(self, fmt):
        assert sig_text(schema2sig(FORMATS[fmt])) == WEATHER_SIGNATURE
        assert mk_tool(lambda name, **arguments: None, FORMATS[fmt]).__doc__.startswith("Get weather.\n")

    def test_mcp_tool_object(self):
        import mcp.types

        tool_def = mcp.types.Tool(name="weather", description="Get weather.", inputSchema=WEATHER_PARAMS,
                                  annotations=mcp.types.ToolAnnotations(readOnlyHint=True))
        assert sig_text(schema2sig(tool_def)) == WEATHER_SIGNATURE
        sent = []
        mk_tool(lambda name, **arguments: sent.append((name, arguments)), tool_def)("Oslo", days_ahead=2)
        assert sent == [("weather", {"city": "Oslo", "days-ahead": 2})]

    def test_gemini_sdk_object(self):
        from google.genai import types as genai

        declaration = genai.FunctionDeclaration(name="weather", description="Get weather.", parameters=genai.Schema(
            type="OBJECT", required=["city"],
            properties={"city": genai.Schema(type="STRING"), "days": genai.Schema(type="INTEGER", nullable=True)}))
        assert sig_text(schema2sig(declaration)) == "(city: str, days: int | None = None)"

    def test_definition_without_parameters_takes_no_arguments(self):
        assert str(schema2sig({"type": "function", "name": "now", "description": "Time."})) == "()"

    def test_unrecognised_shape_names_the_keys(self):
        with pytest.raises(SchemaError, match=r"keys found: 'tool', 'schema'"):
            schema2sig({"tool": "weather", "schema": {}})
        with pytest.raises(SchemaError, match=r"no parameter schema.*'input_shema'"):
            schema2sig({"name": "weather", "input_shema": {}})
        with pytest.raises(SchemaError, match="built-in tool"):
            schema2sig({"type": "bash_20250124", "name": "bash"})
        with pytest.raises(SchemaError, match="2 function declarations"):
            schema2sig({"functionDeclarations": [NEUTRAL, NEUTRAL]})
        with pytest.raises(SchemaError, match="cannot read a tool definition from a int"):
            schema2sig(3)
        with pytest.raises(SchemaError, match="type 'object'"):
            schema2sig({"name": "x", "parameters": {"type": "string"}})


class TestSignatures:
    def test_required_first_then_optional_with_defaults(self):
        sig = schema2sig({"name": "f", "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer", "default": 1}, "b": {"type": "string"},
                           "c": {"type": ["number", "null"]}, "d": {"type": "boolean"}},
            "required": ["b", "d"]}})
        assert sig_text(sig) == "(b: str, d: bool, a: int = 1, c: float | None = None)"
        assert all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in sig.parameters.values())

    def test_annotations_are_real_types(self):
        sig = schema2sig({"name": "f", "parameters": {"type": "object", "required": list("abcdefgh"), "properties": {
            "a": {}, "b": {"type": "array", "items": {"type": "integer"}},
            "c": {"type": "object", "additionalProperties": {"type": "number"}},
            "d": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False},
            "e": {"anyOf": [{"type": "integer"}, {"type": "string"}]}, "f": {"type": "null"},
            "g": {"type": "object"}, "h": {"const": "x"}}}})
        hints = {name: param.annotation for name, param in sig.parameters.items()}
        assert hints == {"a": Any, "b": list[int], "c": dict[str, float], "d": tuple[int, str], "e": int | str,
                         "f": None, "g": dict[str, Any], "h": Literal["x"]}

    def test_nested_objects_become_typed_dicts(self):
        sig = schema2sig({"name": "draw", "parameters": {"type": "object", "required": ["shape"], "properties": {
            "shape": {"type": "object", "required": ["kind"], "properties": {
                "kind": {"enum": ["circle", "square"], "description": "Which shape."},
                "size-px": {"type": "integer"}}}}}})
        shape = sig.parameters["shape"].annotation
        assert typing.is_typeddict(shape) and shape.__name__ == "DrawShape"
        assert shape.__required_keys__ == frozenset({"kind"})
        assert shape.__optional_keys__ == frozenset({"size-px"})
        hints = typing.get_type_hints(shape, include_extras=True)
        assert hints["kind"] == typing.Annotated[Literal["circle", "square"], "Which shape."]
        assert typing.get_type_hints(shape)["size-px"] == int

    def test_refs_reuse_one_typed_dict_and_recursion_stops_at_dict(self):
        sig = schema2sig({"name": "f", "parameters": {
            "type": "object", "required": ["a", "b", "tree"],
            "properties": {"a": {"$ref": "#/$defs/Point"}, "b": {"$ref": "#/$defs/Point"},
                           "tree": {"$ref": "#/$defs/Tree"}},
            "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "integer"}}},
                      "Tree": {"type": "object", "properties": {
                          "kids": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}}}}}})
        a, b, tree = (sig.parameters[name].annotation for name in ("a", "b", "tree"))
        assert a is b and a.__name__ == "Point"
        assert typing.get_type_hints(tree)["kids"] == list[dict[str, Any]]
        assert tree.__optional_keys__ == frozenset({"kids"})

    def test_name_mapping(self):
        assert [py_name(name) for name in ("first-name", "class", "1x", "a.b", "", "None", "ok_name", "naïve")] == \
            ["first_name", "class_", "_1x", "a_b", "_", "None_", "ok_name", "naïve"]
        sig = schema2sig({"name": "f", "parameters": {"type": "object", "required": ["class", "first-name", "1x"],
                                                      "properties": {"class": {}, "first-name": {}, "1x": {}}}})
        assert list(sig.parameters) == ["class_", "first_name", "_1x"]

    def test_collision_names_both_properties(self):
        with pytest.raises(SchemaError, match=r"'first-name' and 'first_name' both map to .*'first_name'"):
            schema2sig({"name": "f", "parameters": {"type": "object",
                                                    "properties": {"first-name": {}, "first_name": {}}}})

    def test_kwargs_only_when_extras_are_declared(self):
        open_def = {"name": "f", "parameters": {"type": "object", "properties": {"kwargs": {"type": "string"}},
                                                "additionalProperties": {"type": "integer"}}}
        assert sig_text(schema2sig(open_def)) == "(kwargs: str | None = None, **kwargs_: int)"
        assert "**" not in str(schema2sig({"name": "f", "parameters": {"type": "object", "properties": {"a": {}}}}))


# ------------------------------------------------------------------------------------------------
# mk_tool
# ------------------------------------------------------------------------------------------------
class Recorder:
    def __init__(self):
        self.calls = []

    def __call__(self, name, **arguments):
        self.calls.append((name, arguments))
        return f"called {name}"


class TestMkTool:
    def test_function_metadata(self):
        weather = mk_tool(Recorder(), FORMATS["mcp"] | {"name": "get-weather"})
        assert weather.__name__ == "get_weather" and weather.__qualname__ == "get_weather"
        assert inspect.signature(weather) == schema2sig(FORMATS["mcp"])
        assert weather.__annotations__ == {"city": str, "unit": Literal["c", "f"], "days_ahead": int | None}
        assert weather.__doc__ == "Get weather.\n\nArgs:\n    city: City name."
        assert not hasattr(weather, "__wrapped__")
        assert not inspect.iscoroutinefunction(weather)

    def test_docstring_parses_as_google_style(self):
        import docstring_parser

        definition = {"name": "f", "description": "Do it.", "parameters": {"type": "object", "properties": {
            "first-name": {"type": "string", "description": "Given name.\nCan be long."}}}}
        parsed = docstring_parser.parse(mk_tool(Recorder(), definition).__doc__)
        assert parsed.short_description == "Do it."
        assert [(p.arg_name, p.description) for p in parsed.params] == [("first_name", "Given name.\nCan be long.")]
        assert mk_tool(Recorder(), {"name": "g", "parameters": {"type": "object"}}).__doc__ is None

    def test_original_names_and_omitted_defaults(self):
        recorder = Recorder()
        weather = mk_tool(recorder, FORMATS["openai"])
        assert weather("Oslo") == "called weather"
        weather("Oslo", "f", days_ahead=3)
        weather(city="Rome", unit="c", days_ahead=None)  # explicit default is sent; None for non-null is "absent"
        assert recorder.calls == [("weather", {"city": "Oslo"}),
                                  ("weather", {"city": "Oslo", "unit": "f", "days-ahead": 3}),
                                  ("weather", {"city": "Rome", "unit": "c"})]

    def test_keyword_names_and_nullable_none(self):
        recorder = Recorder()
        fn = mk_tool(recorder, {"name": "f", "parameters": {"type": "object", "properties": {
            "class": {"type": "integer"}, "note": {"type": ["string", "null"]},
            "mode": {"type": "string", "default": "fast"}}, "required": ["class", "mode"]}})
        assert sig_text(inspect.signature(fn)) == "(class_: int, note: str | None = None, mode: str = 'fast')"
        fn(1, note=None)  # a required property with a default is always sent; null is a real value here
        assert recorder.calls == [("f", {"class": 1, "mode": "fast", "note": None})]

    def test_bad_arguments_raise_type_error_like_a_function(self):
        weather = mk_tool(Recorder(), NEUTRAL)
        with pytest.raises(TypeError, match=r"weather\(\): missing a required argument: 'city'"):
            weather()
        with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
            weather("Oslo", colour="red")
        with pytest.raises(TypeError, match="too many positional arguments"):
            weather("Oslo", "c", 1, 2)
        with pytest.raises(TypeError, match="unexpected keyword argument 'days-ahead'"):
            weather("Oslo", **{"days-ahead": 1})

    def test_extra_properties_pass_through(self):
        recorder = Recorder()
        fn = mk_tool(recorder, {"name": "f", "parameters": {"type": "object", "properties": {"a-b": {}},
                                                            "additionalProperties": True}})
        fn(a_b=1, other=2)
        assert recorder.calls == [("f", {"a-b": 1, "other": 2})]
        with pytest.raises(TypeError, match=r"'a-b' is passed as a_b="):
            fn(**{"a-b": 1})

    async def test_async_dispatch_gives_async_tool(self):
        seen = []

        async def dispatch(name, **arguments):
            await asyncio.sleep(0)
            seen.append((name, arguments))
            return len(arguments)

        weather = mk_tool(dispatch, FORMATS["anthropic"])
        assert inspect.iscoroutinefunction(weather)
        assert await weather("Oslo", days_ahead=1) == 2
        assert seen == [("weather", {"city": "Oslo", "days-ahead": 1})]
        with pytest.raises(TypeError, match="missing a required argument"):
            await weather()


# ------------------------------------------------------------------------------------------------
# Round trip through the lead's introspection (nbtools.get_schema)
# ------------------------------------------------------------------------------------------------
def test_round_trip_through_get_schema():
    # Depends on nbtools.get_schema (introspection, owned by the lead); fails with ImportError until it lands.
    from nbtools import get_schema

    definition = {"name": "weather", "description": "Get weather.", "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City name."},
                       "days": {"type": "integer", "default": 1, "description": "How many days."},
                       "tags": {"type": "array", "items": {"enum": ["rain", "wind"]}}},
        "required": ["city"]}}
    produced = get_schema(mk_tool(Recorder(), definition))
    assert produced["name"] == "weather" and produced["description"] == "Get weather."
    params = produced["parameters"]
    assert params["type"] == "object" and set(params["required"]) == {"city"}
    assert list(params["properties"]) == ["city", "days", "tags"]
    city, days, tags = (params["properties"][name] for name in ("city", "days", "tags"))
    assert city["type"] == "string" and city["description"] == "City name."
    assert days["type"] == "integer" and days["default"] == 1 and days["description"] == "How many days."
    # `tags` had no default, so the Python side is `list[...] | None = None`: null is accepted too
    assert schema_to_ir(tags) == ir.Union(options=(ir.Array(item=ir.Literal(values=("rain", "wind"))),
                                                   ir.NoneValue())) or \
        schema_to_ir({k: v for k, v in tags.items() if k != "default"}) == \
        ir.Union(options=(ir.Array(item=ir.Literal(values=("rain", "wind"))), ir.NoneValue()))


# -- schemas from elsewhere (an MCP server) cannot exhaust the stack or hang the reader -------------------

def _time_limit(seconds: float):
    import contextlib
    import time

    @contextlib.contextmanager
    def limit():
        start = time.perf_counter()
        yield
        assert time.perf_counter() - start < seconds

    return limit()


def test_a_deeply_nested_schema_is_refused_clearly():
    deep: dict = {"type": "string"}
    for _ in range(5000):
        deep = {"type": "array", "items": deep}
    parameters = {"type": "object", "properties": {"x": deep}}
    for attempt in (lambda: schema2sig({"name": "deep", "inputSchema": parameters}),
                    lambda: Tool.from_schema("deep", "", parameters, fn=dict),
                    lambda: schema_to_ir(parameters)):
        with pytest.raises(SchemaError, match="nests more than"):
            attempt()


def test_a_long_chain_of_references_is_refused_clearly():
    defs = {f"d{index}": {"type": "array", "items": {"$ref": f"#/$defs/d{index + 1}"}} for index in range(500)}
    defs["d500"] = {"type": "integer"}
    parameters = {"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": defs}
    with pytest.raises(SchemaError, match=r"tool 'chain': the schema nests more than 100 levels"):
        Tool.from_schema("chain", "", parameters, fn=dict)


def test_definitions_that_double_at_each_level_are_refused_quickly():
    levels = 40  # expanded: 2**40 nodes; every later stage walks the expanded form
    defs: dict = {f"a{levels}": {"type": "integer"}}
    for index in range(levels - 1, -1, -1):
        inner = {"$ref": f"#/$defs/a{index + 1}"}
        defs[f"a{index}"] = {"anyOf": [inner, {"type": "array", "items": inner}]}
    parameters = {"type": "object", "properties": {"x": {"$ref": "#/$defs/a0"}}, "$defs": defs}
    with _time_limit(2.0):
        with pytest.raises(SchemaError, match="expands to more than 100000 nodes"):
            schema2sig({"name": "dag", "inputSchema": parameters})
        with pytest.raises(SchemaError, match="tool 'dag': the schema expands"):
            Tool.from_schema("dag", "", parameters, fn=dict)


def test_a_reference_back_without_a_container_adds_nothing():
    # A = A | int means int; following the reference would recurse without consuming the value
    parameters = {"type": "object", "properties": {"x": {"$ref": "#/$defs/A"}},
                  "$defs": {"A": {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "integer"}]}}}
    assert str(schema2sig({"name": "t", "inputSchema": parameters})) == "(x: int | None = None)"
    tool = Tool.from_schema("t", "", parameters, fn=lambda **arguments: arguments)
    assert tool.call({"x": 3}) == {"x": 3}
    with pytest.raises(ToolCallError, match="expected an integer, got an empty object"):
        tool.call({"x": {}})
    alias_cycle = {"type": "object", "properties": {"x": {"$ref": "#/$defs/A"}},
                   "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}}
    tool = Tool.from_schema("t", "", alias_cycle, fn=lambda **arguments: arguments)
    with pytest.raises(ToolCallError, match="argument 'x'"):
        tool.call({"x": 1})


def test_a_recursive_definition_that_is_not_an_object():
    # Nested = list[Nested] | int, as a schema: converted like any recursive type
    parameters = {"type": "object", "properties": {"x": {"$ref": "#/$defs/Nested"}}, "required": ["x"],
                  "$defs": {"Nested": {"anyOf": [{"type": "array", "items": {"$ref": "#/$defs/Nested"}},
                                                 {"type": "integer"}]}}}
    assert str(schema2sig({"name": "t", "inputSchema": parameters})) == "(x: list[typing.Any] | int)"
    tool = Tool.from_schema("t", "", parameters, fn=lambda **arguments: arguments)
    assert tool.call({"x": [1, [2, [3, []]]]}) == {"x": [1, [2, [3, []]]]}
    with pytest.raises(ToolCallError) as caught:
        tool.call({"x": [1, [2, ["s"]]]})
    assert caught.value.argument == "x[1][1][0]"
    with pytest.raises(ToolCallError, match="nested too deeply"):
        tool.call('{"x": ' + "[" * 100 + "]" * 100 + "}")
    # the same shape one level down, reached from inside an array
    split = {"type": "object", "properties": {"x": {"$ref": "#/$defs/A"}}, "required": ["x"],
             "$defs": {"A": {"type": "array", "items": {"$ref": "#/$defs/B"}},
                       "B": {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "integer"}]}}}
    tool = Tool.from_schema("t", "", split, fn=lambda **arguments: arguments)
    assert tool.call({"x": [1, [2, [3]]]}) == {"x": [1, [2, [3]]]}
    assert "expected an array (A) or an integer" in tool.call({"x": [["s"]]}, raise_on_err=False)


def test_names_python_would_normalise_collide():
    assert py_name("ﬁle") == "file"
    with pytest.raises(SchemaError, match="both map to the Python parameter name 'file'"):
        schema2sig({"name": "n", "inputSchema": {"type": "object", "properties": {"ﬁle": {}, "file": {}}}})


def test_every_schema_entry_point_raises_schema_error_naming_the_tool():
    # Tool.from_function raised SchemaError, Tool.from_schema ValueError/TypeError: one error now,
    # still a TypeError for code that caught that
    bad = {"type": "array"}
    for attempt in (lambda: Tool.from_schema("bad", "", bad, None),
                    lambda: schema2sig({"name": "bad", "parameters": bad}),
                    lambda: mk_tool(lambda *a, **k: None, {"name": "bad", "parameters": bad})):
        with pytest.raises(SchemaError, match="tool 'bad': parameters must be a JSON Schema of type 'object'") as info:
            attempt()
        assert isinstance(info.value, TypeError) and info.value.function == "bad"
    with pytest.raises(TypeError, match="unknown option"):
        Tool.from_schema("t", "", None, None, colour="red")


def test_arguments_object_reads_a_parameters_schema():
    from nbtools.schema.params import arguments_object

    args = arguments_object("t", {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})
    assert [(item.name, item.type, item.required) for item in args.fields] == [("a", ir.Int(), True)]
    opened = arguments_object("m", {"type": "object", "additionalProperties": {"type": "string"}, "description": "d"})
    assert (opened.fields, opened.extra, opened.description) == ((), ir.Str(), "d")
    with pytest.raises(SchemaError, match="tool 'u': parameters must describe a JSON object"):
        arguments_object("u", {"anyOf": [{"type": "integer"}]})
