"""`$ref` inside embedded schema resources (a subschema with its own `$id`): dispatch and rendering agree.

JSON Schema 2020-12 §9.1.2/§12.3: a reference written inside an embedded resource resolves against
that resource, and a resource can be named by its `$id` URI or an `$anchor`. `schema.bundle` answers
that once; the schema reader (`Tool.from_schema`, `mk_tool`, client tools) and the strict/OpenAPI
renderings both use it. `jsonschema` (which follows base URIs itself) is the oracle for meaning.
"""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest

from nbtools import call_func, mk_ns
from nbtools.errors import SchemaError, ToolCallError
from nbtools.formats import openapi_schema, strict_schema
from nbtools.schema.bundle import bundle, has_embedded
from nbtools.tool import Tool
from providers import check_strict


def obj(properties: dict, required: list[str] | None = None, **extra) -> dict:
    return {"type": "object", "properties": properties, "required": required or list(properties), **extra}


# The root's Item is a string; the embedded resource's own Item (what its `#/$defs/Item` means) an integer.
EMBEDDED = {"type": "object", "required": ["v"], "additionalProperties": False,
            "$defs": {"Item": {"type": "string"}},
            "properties": {"v": {"$id": "https://example.com/v", "$defs": {"Item": {"type": "integer"}},
                                 **obj({"n": {"$ref": "#/$defs/Item"}}, additionalProperties=False)}}}

# A bundled document whose parts name each other by URI (relative to the root's $id), by `#` inside a
# resource (a recursive tree), and by $anchor.
BY_URI = {"$id": "https://example.com/root", "type": "object", "additionalProperties": False,
          "required": ["count", "again", "tree", "pos"],
          "properties": {"count": {"$ref": "count"},                       # relative to the root's $id
                         "again": {"$ref": "https://example.com/count"},   # absolute
                         "tree": {"$ref": "https://example.com/tree"},
                         "pos": {"$ref": "#positive"}},
          "$defs": {"Count": {"$id": "count", "type": "integer", "minimum": 0},
                    "Positive": {"$anchor": "positive", "type": "number", "exclusiveMinimum": 0},
                    "Tree": {"$id": "tree", **obj({"label": {"type": "string"},
                                                   "kids": {"type": "array", "items": {"$ref": "#"}}},
                                                  additionalProperties=False)}}}


def same_meaning(original: dict, instances: list) -> None:
    """`bundle(original)` accepts exactly what `original` accepts (per jsonschema) for each instance."""
    before = jsonschema.Draft202012Validator(original)
    after = jsonschema.Draft202012Validator(bundle(original))
    for instance in instances:
        assert before.is_valid(instance) == after.is_valid(instance), instance


def test_dispatch_uses_the_embedded_resources_definition():
    tool = Tool.from_schema("t", "", EMBEDDED, lambda **kw: kw)
    assert tool.call({"v": {"n": 3}}) == {"v": {"n": 3}}
    with pytest.raises(ToolCallError, match=r"v\.n.*expected an integer") as info:
        tool.call({"v": {"n": "x"}})
    assert info.value.argument == "v.n"
    # the same through call_func and a namespace, and through mk_tool's plan on the other side
    assert call_func("t", '{"v": {"n": 4}}', ns=mk_ns([tool])) == {"v": {"n": 4}}
    assert "expected an integer" in call_func("t", {"v": {"n": "4"}}, ns=mk_ns([tool]), raise_on_err=False)
    same_meaning(EMBEDDED, [{"v": {"n": 3}}, {"v": {"n": "x"}}])


def test_rendering_uses_the_embedded_resources_definition():
    strict = strict_schema(EMBEDDED, "t", "openai")
    check_strict(strict, "openai")
    ref = strict["properties"]["v"]["properties"]["n"]["$ref"]
    assert strict["$defs"][ref.removeprefix("#/$defs/")] == {"type": "integer"}
    assert openapi_schema(EMBEDDED, "t")["properties"]["v"]["properties"]["n"] == {"type": "integer"}
    tool = Tool.from_schema("t", "", EMBEDDED, lambda **kw: kw)
    rendered = tool.schema("anthropic", strict=True)["input_schema"]
    assert jsonschema.Draft202012Validator(rendered).is_valid({"v": {"n": 3}})
    assert not jsonschema.Draft202012Validator(rendered).is_valid({"v": {"n": "x"}})


def test_references_by_uri_anchor_and_resource_root():
    good = {"count": 2, "again": 0, "pos": 0.5,
            "tree": {"label": "a", "kids": [{"label": "b", "kids": []}]}}
    tool = Tool.from_schema("t", "", BY_URI, lambda **kw: kw)
    assert tool.call(good) == good
    for bad, where, expected in [({**good, "count": "2"}, "count", "integer"),
                                 ({**good, "again": -1}, "again", ">= 0"),
                                 ({**good, "pos": 0}, "pos", "> 0"),
                                 ({**good, "tree": {"label": "a", "kids": [{"label": 1, "kids": []}]}},
                                  "tree.kids[0].label", "string")]:
        with pytest.raises(ToolCallError, match=expected) as info:
            tool.call(bad)
        assert info.value.argument == where
    same_meaning(BY_URI, [good, {**good, "count": "2"}, {**good, "pos": 0},
                          {**good, "tree": {"label": "a", "kids": [{"label": 1, "kids": []}]}}])
    # strict rendering: every reference is a root definition; the recursive tree stays recursive
    strict = strict_schema(BY_URI, "t", "openai")
    check_strict(strict, "openai")
    assert strict["properties"]["count"]["$ref"] == strict["properties"]["again"]["$ref"] == "#/$defs/Count"
    assert strict["$defs"]["Tree"]["properties"]["kids"]["items"] == {"$ref": "#/$defs/Tree"}


def test_an_inline_resource_referenced_whole_moves_to_the_root():
    schema = {"type": "object", "required": ["a", "b"],
              "properties": {"a": {"$id": "https://example.com/point", "description": "where",
                                   **obj({"x": {"type": "integer"}})},
                             "b": {"$ref": "https://example.com/point"}}}
    bundled = bundle(schema)
    assert bundled["properties"]["a"] == {"$ref": "#/$defs/a", "description": "where"}
    assert bundled["properties"]["b"] == {"$ref": "#/$defs/a"}
    assert bundled["$defs"]["a"]["properties"] == {"x": {"type": "integer"}}
    tool = Tool.from_schema("t", "", schema, lambda **kw: kw)
    assert tool.call({"a": {"x": 1}, "b": {"x": 2}}) == {"a": {"x": 1}, "b": {"x": 2}}
    with pytest.raises(ToolCallError, match="integer"):
        tool.call({"a": {"x": 1}, "b": {"x": "2"}})
    assert tool.schema("gemini-openapi")["parameters"]["properties"]["a"]["description"] == "where"
    same_meaning(schema, [{"a": {"x": 1}, "b": {"x": 2}}, {"a": {"x": 1}, "b": {"x": "2"}}])


def test_a_root_pointer_into_an_embedded_resources_defs_follows_the_move():
    schema = {**copy.deepcopy(EMBEDDED), "required": ["v", "w"]}
    schema["properties"]["w"] = {"$ref": "#/properties/v/$defs/Item"}
    tool = Tool.from_schema("t", "", schema, lambda **kw: kw)
    assert tool.call({"v": {"n": 1}, "w": 2}) == {"v": {"n": 1}, "w": 2}
    with pytest.raises(ToolCallError, match="integer"):
        tool.call({"v": {"n": 1}, "w": "2"})


def test_nested_resources_resolve_each_against_its_own():
    inner = {"$id": "inner", "$defs": {"Item": {"type": "boolean"}}, **obj({"flag": {"$ref": "#/$defs/Item"}})}
    outer = {"$id": "https://example.com/outer/", "$defs": {"Item": {"type": "integer"}},
             **obj({"n": {"$ref": "#/$defs/Item"}, "in": inner, "same": {"$ref": "inner#/$defs/Item"}})}
    schema = {"type": "object", "$defs": {"Item": {"type": "string"}}, "properties": {"o": outer}, "required": ["o"]}
    tool = Tool.from_schema("t", "", schema, lambda **kw: kw)
    good = {"o": {"n": 1, "in": {"flag": True}, "same": False}}
    assert tool.call(good) == good
    for bad in ({"o": {**good["o"], "n": "1"}}, {"o": {**good["o"], "in": {"flag": 1}}},
                {"o": {**good["o"], "same": "no"}}):
        with pytest.raises(ToolCallError):
            tool.call(bad)
    same_meaning(schema, [good, {"o": {**good["o"], "same": "no"}}])
    strict = strict_schema(schema, "t", "openai")
    check_strict(strict, "openai")
    inside = strict["properties"]["o"]["properties"]
    assert [strict["$defs"][inside[key]["$ref"].removeprefix("#/$defs/")] for key in ("n", "same")] == \
        [{"type": "integer"}, {"type": "boolean"}]


def test_what_is_not_followed_is_refused_by_name_or_left_as_before():
    # a reference inside an embedded resource to a definition it lacks must not mean the root's namesake
    broken = copy.deepcopy(EMBEDDED)
    broken["properties"]["v"]["properties"]["n"] = {"$ref": "#/$defs/Missing"}
    broken["$defs"]["Missing"] = {"type": "string"}
    with pytest.raises(SchemaError, match=r"tool 't'.*'#/\$defs/Missing'.*https://example.com/v.*points to nothing"):
        Tool.from_schema("t", "", broken, lambda **kw: kw)
    with pytest.raises(SchemaError, match=r"'t'.*points to nothing"):
        strict_schema(broken, "t", "openai")
    # an anchor the named resource does not have
    with pytest.raises(SchemaError, match="'https://example.com/root#nowhere'.*points to nothing"):
        Tool.from_schema("t", "", {**BY_URI, "properties": {"x": {"$ref": "https://example.com/root#nowhere"}},
                                   "required": ["x"]}, lambda **kw: kw)
    # another document's URI: never fetched, left as written (the reader accepts any value, as before)
    remote = {"$id": "https://example.com/root", **obj({"r": {"$ref": "https://other.example/x.json"}})}
    assert bundle(remote)["properties"]["r"] == {"$ref": "https://other.example/x.json"}
    assert Tool.from_schema("t", "", remote, lambda **kw: kw).call({"r": [1]}) == {"r": [1]}


def test_plain_schemas_pass_untouched_and_inputs_are_not_changed():
    plain = {"type": "object", "$defs": {"A": {"type": "integer"}}, "properties": {
        "$id": {"type": "string"},                                    # a property named $id
        "d": {"type": "object", "default": {"$id": "x", "$defs": {}}},  # data, not a schema
        "a": {"$ref": "#/$defs/A"}}}
    assert not has_embedded(plain) and bundle(plain) is plain
    before = json.dumps(BY_URI, sort_keys=True)
    bundle(BY_URI)
    Tool.from_schema("t", "", BY_URI, lambda **kw: kw)
    assert json.dumps(BY_URI, sort_keys=True) == before
    # the old import path still works
    from nbtools.formats.allof import bundle as old

    assert old is bundle
