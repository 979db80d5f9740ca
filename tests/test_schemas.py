"""The schema path, proved on a corpus of callables of every shape (see tests/corpus.py).

For every case: the exact neutral definition; for every format and every case, with and without
strict: the definition survives `json.dumps`, its parameters are a valid Draft 2020-12 schema, and
it obeys the provider's rules (checkers in providers.py, written from the providers' documentation),
or the rendering is refused with a SchemaError naming the parameter. Then descriptions from every
source, errors, caching, and the light import.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import textwrap
import weakref
from dataclasses import dataclass, field
from typing import Annotated, Any, Callable

import pydantic
import pytest
from jsonschema import Draft202012Validator

import corpus
import providers
from corpus import CASES, ERROR_CASES, TYPE_CASES, obj
from providers import FORMATS, parameters_of
from nbtools import SchemaError, Tool, get_schema, type_schema
from nbtools.introspect import callable_spec

# -- the corpus, neutral ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_neutral_definition_is_exact(case: corpus.Case) -> None:
    definition = get_schema(case.fn, name=case.tool_name)
    assert definition == {"name": case.name, "description": case.description, "parameters": case.parameters}


@pytest.mark.parametrize("type_id, annotation, expected", TYPE_CASES, ids=[item[0] for item in TYPE_CASES])
def test_type_schema_is_exact_and_valid(type_id: str, annotation: Any, expected: dict) -> None:
    schema = type_schema(annotation)
    assert schema == expected
    Draft202012Validator.check_schema(schema)


# -- the corpus, every format ----------------------------------------------------------------------

def _format_params() -> list[Any]:
    return [pytest.param(case, fmt, strict, id=f"{case.id}-{fmt or 'neutral'}-{'strict' if strict else 'plain'}")
            for case in CASES for fmt in FORMATS for strict in (False, True)]


@pytest.mark.parametrize("case, fmt, strict", _format_params())
def test_every_format(case: corpus.Case, fmt: str | None, strict: bool) -> None:
    refused = case.refused_by(fmt, strict)
    if refused is not None:
        with pytest.raises(SchemaError) as caught:
            get_schema(case.fn, fmt, strict=strict, name=case.tool_name)
        error = caught.value
        assert (error.function, error.parameter) == (case.name, refused)
        assert f"function {case.name!r}" in str(error) and f"parameter {refused!r}" in str(error)
        return

    definition = get_schema(case.fn, fmt, strict=strict, name=case.tool_name)
    assert json.loads(json.dumps(definition)) == definition  # plain JSON all the way down
    parameters = parameters_of(definition, fmt)
    if fmt == "gemini-openapi":
        assert providers.gemini_openapi_violations(definition) == []
        if parameters is None:  # left out only when the function takes nothing
            assert not case.parameters["properties"]
            return
    Draft202012Validator.check_schema(parameters)
    assert parameters["type"] == "object"
    if strict and fmt in ("openai", "responses"):
        assert providers.openai_strict_violations(parameters) == []
    elif strict and fmt == "anthropic":
        assert providers.anthropic_strict_violations(parameters) == []
    elif fmt == "mcp":  # MCP names the dialect (SEP-1613), and keeps the neutral schema otherwise
        assert parameters == {"$schema": "https://json-schema.org/draft/2020-12/schema"} | case.parameters
    elif fmt != "gemini-openapi":
        assert parameters == case.parameters  # formats without a strict mode keep the neutral schema


def add(a: int,        # first addend
        b: int = 1,    # second addend
        ) -> int:      # the sum
    "Add two integers."
    return a + b


ADD_PARAMETERS = obj({"a": {"type": "integer", "description": "first addend"},
                      "b": {"type": "integer", "description": "second addend", "default": 1}}, ["a"])
ADD_DESCRIPTION = "Add two integers.\n\nReturns: int - the sum"


def test_each_format_has_its_provider_shape() -> None:
    tool = Tool.from_function(add, hints="read-only")
    head = {"name": "add", "description": ADD_DESCRIPTION}
    assert tool.schema() == {**head, "parameters": ADD_PARAMETERS}
    assert tool.schema("openai") == {"type": "function", "function": {**head, "parameters": ADD_PARAMETERS}}
    assert tool.schema("responses") == {"type": "function", **head, "parameters": ADD_PARAMETERS, "strict": False}
    assert tool.schema("anthropic") == {**head, "input_schema": ADD_PARAMETERS}
    assert tool.schema("gemini") == {**head, "parametersJsonSchema": ADD_PARAMETERS,
                                     "responseJsonSchema": {"type": "integer"}}
    assert tool.schema("gemini-openapi") == {**head, "parameters": {
        "type": "object", "properties": {"a": {"type": "integer", "description": "first addend"},
                                         "b": {"type": "integer", "description": "second addend", "default": 1}},
        "required": ["a"]}}
    # MCP: a non-object return is wrapped as {"result": ...}; hints become annotations; both
    # schemas name their dialect
    dialect = {"$schema": "https://json-schema.org/draft/2020-12/schema"}
    assert tool.schema("mcp") == {**head, "inputSchema": dialect | ADD_PARAMETERS, "outputSchema": dialect | {
        "type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]},
        "annotations": {"readOnlyHint": True}}


def test_openai_strict_makes_optional_parameters_required_and_nullable() -> None:
    definition = get_schema(add, "openai", strict=True)
    assert definition["function"]["strict"] is True
    parameters = definition["function"]["parameters"]
    assert parameters["required"] == ["a", "b"]
    assert parameters["properties"]["a"] == {"type": "integer", "description": "first addend"}
    assert parameters["properties"]["b"]["type"] == ["integer", "null"]
    assert "default" not in parameters["properties"]["b"]
    assert "1" in parameters["properties"]["b"]["description"]  # the default is still told to the model


def count_words(counts: dict[str, int], title: str = "") -> int:
    return sum(counts.values())


def count_anything(counts: dict[str, Any], title: str = "") -> int:
    return len(counts)


@pytest.mark.parametrize("fmt", ["openai", "responses", "anthropic"])
def test_strict_refuses_an_untyped_map_instead_of_emptying_it(fmt: str) -> None:
    # closing `dict[str, Any]` with additionalProperties: false would accept only {}: refused, loudly
    with pytest.raises(SchemaError) as caught:
        get_schema(count_anything, fmt, strict=True)
    message = str(caught.value)
    assert caught.value.function == "count_anything" and caught.value.parameter == "counts"
    assert "function 'count_anything'" in message and "parameter 'counts'" in message
    assert "arbitrary keys" in message and "strict" in message and "give the values a type" in message
    # the same tool renders fine without strict
    assert parameters_of(get_schema(count_anything, fmt), fmt)["properties"]["counts"] == {
        "type": "object", "additionalProperties": {}}
    # a typed map has a strict form: key/value pairs, not an object that must be empty
    counts = parameters_of(get_schema(count_words, fmt, strict=True), fmt)["properties"]["counts"]
    assert counts["type"] == "array" and counts["items"]["properties"]["value"] == {"type": "integer"}


def test_strict_tool_renders_strict_by_default_in_every_strict_format() -> None:
    tool = Tool.from_function(add, strict=True)
    assert tool.schema("openai")["function"]["strict"] is True
    assert tool.schema("responses")["strict"] is True
    assert tool.schema("anthropic")["strict"] is True
    assert tool.schema("gemini")["parametersJsonSchema"] == ADD_PARAMETERS  # no strict mode there


def test_unknown_format_is_refused_with_the_valid_ones_listed() -> None:
    with pytest.raises(ValueError, match="openai"):
        get_schema(add, "open-ai")


# -- descriptions from every source ----------------------------------------------------------------


def from_annotated(path: Annotated[str, "file to read"],
                   limit: Annotated[int, pydantic.Field(description="lines at most", ge=1)] = 10,
                   encoding: str = pydantic.Field("utf-8", description="text encoding")) -> str:
    return path


def from_docments(
    query: str,          # what to look for
    # how many results to return
    limit: int = 5,
    exact: bool = False,
) -> list[str]:  # the matching titles
    "Search the catalogue."
    return []


def from_google(query: str, limit: int = 5) -> list[str]:
    """Search the catalogue.

    Matching ignores case.

    Args:
        query: what to look for
        limit (int): how many results to return

    Returns:
        the matching titles

    Raises:
        ValueError: on an empty query
    """
    return []


def from_numpy(query: str, limit: int = 5) -> list[str]:
    """Search the catalogue.

    Matching ignores case.

    Parameters
    ----------
    query : str
        what to look for
    limit : int, optional
        how many results to return

    Returns
    -------
    list of str
        the matching titles
    """
    return []


def from_rest(query: str, limit: int = 5) -> list[str]:
    """Search the catalogue.

    Matching ignores case.

    :param query: what to look for
    :param limit: how many results to return
    :returns: the matching titles
    :rtype: list[str]
    """
    return []


def from_epydoc(query: str, limit: int = 5) -> list[str]:
    """Search the catalogue.

    Matching ignores case.

    @param query: what to look for
    @param limit: how many results to return
    @return: the matching titles
    """
    return []


SEARCH_PARAMETERS = obj({"query": {"type": "string", "description": "what to look for"},
                         "limit": {"type": "integer", "description": "how many results to return", "default": 5}},
                        ["query"])
SEARCH_DESCRIPTION = "Search the catalogue.\n\nMatching ignores case.\n\nReturns: list[str] - the matching titles"


def test_descriptions_from_annotated_text_and_pydantic_field() -> None:
    assert get_schema(from_annotated) == {"name": "from_annotated", "description": "Returns: str", "parameters": obj({
        "path": {"type": "string", "description": "file to read"},
        "limit": {"type": "integer", "description": "lines at most", "minimum": 1, "default": 10},
        "encoding": {"type": "string", "description": "text encoding", "default": "utf-8"},
    }, ["path"])}


def test_descriptions_from_docments_comments() -> None:
    assert get_schema(from_docments) == {
        "name": "from_docments",
        "description": "Search the catalogue.\n\nReturns: list[str] - the matching titles",
        "parameters": obj({"query": {"type": "string", "description": "what to look for"},
                           "limit": {"type": "integer", "description": "how many results to return", "default": 5},
                           "exact": {"type": "boolean", "default": False}}, ["query"]),
    }


@pytest.mark.parametrize("fn", [from_google, from_numpy, from_rest, from_epydoc],
                         ids=["google", "numpy", "rest", "epydoc"])
def test_descriptions_from_docstring_sections(fn: Any) -> None:
    # the parameter and return sections move into the schema; other prose stays; Raises goes
    assert get_schema(fn) == {"name": fn.__name__, "description": SEARCH_DESCRIPTION,
                              "parameters": SEARCH_PARAMETERS}


@dataclass
class Order:
    """An order to place."""

    item: str          # catalogue number
    quantity: int = 1  # how many
    notes: list[str] = field(default_factory=list)


def place(order: Order, urgent: bool = False) -> None:
    """Place an order.

    Args:
        order: the order, as the customer wrote it
        urgent: ship today
    """


def test_record_fields_carry_their_comments_and_parameter_docs_outrank_the_class_doc() -> None:
    parameters = get_schema(place)["parameters"]
    assert parameters["properties"]["order"] == obj({
        "item": {"type": "string", "description": "catalogue number"},
        "quantity": {"type": "integer", "description": "how many", "default": 1},
        "notes": {"type": "array", "items": {"type": "string"}, "default": []},
    }, ["item"], description="the order, as the customer wrote it")
    assert type_schema(Order)["description"] == "An order to place."


def test_a_function_without_docstring_has_an_empty_description() -> None:
    assert get_schema(corpus.plain)["description"] == ""


# -- errors ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ERROR_CASES, ids=[case.id for case in ERROR_CASES])
def test_errors_name_the_function_the_parameter_and_the_reason(case: corpus.ErrorCase) -> None:
    with pytest.raises(SchemaError) as caught:
        get_schema(case.fn)
    error = caught.value
    assert error.parameter == case.parameter
    assert case.reason in str(error)
    if case.function is not None:
        assert error.function == case.function
        assert f"function {case.function!r}" in str(error)
    if case.parameter is not None:
        assert f"parameter {case.parameter!r}" in str(error)


def test_lambda_without_name_says_how_to_fix_it_and_where_it_is() -> None:
    anonymous = lambda x: x  # noqa: E731 - the shape under test
    with pytest.raises(SchemaError, match=r"name=") as caught:
        get_schema(anonymous)
    assert "<lambda>" in str(caught.value) and f"line {anonymous.__code__.co_firstlineno}" in str(caught.value)
    assert get_schema(anonymous, name="echo")["name"] == "echo"


def make_adder(n: int) -> Callable[[int], int]:
    return lambda x: x + n


def test_an_unserialisable_return_annotation_only_loses_its_schema() -> None:
    # the model never sends a return value: a callable return is described in words, not refused
    tool = Tool.from_function(make_adder)
    assert tool.returns is None
    assert tool.description == "Returns: Callable[[int], int]"
    assert "outputSchema" not in tool.schema("mcp")


# -- caching ---------------------------------------------------------------------------------------


def _define(source: str, name: str) -> Any:
    namespace: dict[str, Any] = {}
    exec(textwrap.dedent(source), namespace)  # noqa: S102 - fresh function objects on purpose
    return namespace[name]


def test_a_schema_is_built_once_per_function_object(monkeypatch: pytest.MonkeyPatch) -> None:
    import nbtools.spec as spec_module

    builds: list[Any] = []
    real_build = spec_module._build_spec

    def counting_build(fn: Any, drop_first: bool) -> Any:
        builds.append(fn)
        return real_build(fn, drop_first)

    monkeypatch.setattr(spec_module, "_build_spec", counting_build)
    fn = _define("def area(width: float, height: float = 1.0):\n    return width * height\n", "area")
    first = get_schema(fn)
    for fmt in FORMATS:
        get_schema(fn, fmt)
    assert get_schema(fn) == first
    Tool.from_function(fn)
    assert builds == [fn]


def test_the_cache_does_not_keep_dead_functions_alive() -> None:
    fn = _define("def temporary(x: int):\n    return x\n", "temporary")
    get_schema(fn, "openai")
    Tool.from_function(fn).schema("mcp")
    alive = weakref.ref(fn)
    del fn
    gc.collect()
    assert alive() is None


SELF_REFERENCING = {
    # a class tool whose __init__ takes its own type: the spec holds the class it is keyed by
    "class": ("__name__ = 'scratch'\n"  # exec'd classes otherwise claim the module 'builtins'
              "class Chain:\n"
              "    def __init__(self, links: 'list[Chain]' = (), size: int = 0):\n"
              "        self.size = size\n", "Chain", lambda cls: cls),
    # a method taking an instance of its own class: the class holds the function it is keyed by
    "method": ("__name__ = 'scratch'\n"
               "class Point:\n"
               "    def __init__(self, x: int = 0):\n"
               "        self.x = x\n"
               "    def merge(self, other: 'Point') -> int:\n"
               "        return self.x + other.x\n", "Point", lambda cls: cls().merge),
}


@pytest.mark.parametrize("kind", SELF_REFERENCING)
def test_the_cache_does_not_keep_alive_a_class_its_schema_mentions(kind: str) -> None:
    source, name, pick = SELF_REFERENCING[kind]
    cls = _define(source, name)
    assert get_schema(pick(cls), "openai")["function"]["parameters"]["type"] == "object"
    alive = weakref.ref(cls)
    del cls
    gc.collect()
    assert alive() is None


def test_a_callable_instance_of_a_subclass_is_named_after_its_own_class() -> None:
    class Base:
        def __call__(self, x: int) -> int:
            return x

    class Derived(Base):
        pass

    assert get_schema(Base())["name"] == "Base"
    assert get_schema(Derived())["name"] == "Derived"  # was "Base": the cache was keyed by __call__
    assert Tool.from_function(Derived()).name == "Derived"


def test_a_redefined_function_gets_a_fresh_schema() -> None:
    before = _define("def resize(size: int):\n    return size\n", "resize")
    assert get_schema(before)["parameters"]["properties"]["size"] == {"type": "integer"}
    after = _define("def resize(size: float, keep_ratio: bool = True):\n    return size\n", "resize")
    assert get_schema(after)["parameters"]["properties"] == {
        "size": {"type": "number"}, "keep_ratio": {"type": "boolean", "default": True}}
    assert get_schema(before)["parameters"]["properties"]["size"] == {"type": "integer"}


def test_bound_methods_share_one_spec_but_keep_their_own_instance() -> None:
    first, second = corpus.Counter(1), corpus.Counter(2)
    assert callable_spec(first.add) is callable_spec(second.add)
    assert Tool.from_function(second.add).fn.__self__ is second
    # the plain function (with self) is a different shape from the method (without it): refused,
    # since the model would have to send `self` (issue 12, point 8)
    with pytest.raises(SchemaError, match="taken from its class"):
        get_schema(corpus.Counter.add)
    assert "self" not in get_schema(first.add)["parameters"]["properties"]


def test_returned_definitions_are_fresh_at_the_top() -> None:
    # adding a key (e.g. Anthropic's cache_control) must not leak into the cache
    definition = get_schema(add, "anthropic")
    definition["cache_control"] = {"type": "ephemeral"}
    assert "cache_control" not in get_schema(add, "anthropic")
    definition = get_schema(add, "openai")
    definition["function"]["strict"] = "changed"
    assert "strict" not in get_schema(add, "openai")["function"]



def test_the_tool_and_spec_records_keep_what_their_generated_dataclass_methods_did() -> None:
    # Tool and Spec are dataclasses whose methods are written by hand (generating them cost as much
    # to import as the rest of their modules): fields, keywords, defaults, immutability, equality
    # (a Tool by identity, a Spec by value) and `dataclasses.replace` as before
    import copy
    import dataclasses
    import inspect

    tool = Tool.from_function(add)
    for record in (tool, callable_spec(add)):
        init_fields = [item.name for item in dataclasses.fields(record) if item.init]
        assert list(inspect.signature(type(record)).parameters) == init_fields
        assert list(vars(record)) == [item.name for item in dataclasses.fields(record)]
        with pytest.raises(dataclasses.FrozenInstanceError):
            record.name = "changed"  # type: ignore[misc]
        with pytest.raises(dataclasses.FrozenInstanceError):
            del record.name  # type: ignore[misc]
    bare = Tool("bare", "", {"type": "object"})
    assert (bare.fn, bare.hints, bare.passing, bare.source, bare._cache) == (None, frozenset(), (), None, {})
    changed = dataclasses.replace(tool, description="changed")
    assert changed.description == "changed" and changed.fn is add and changed._cache is not tool._cache
    assert tool != Tool.from_function(add) and tool == tool and copy.copy(tool)._cache is tool._cache
    spec = callable_spec(add)
    assert spec == dataclasses.replace(spec) and spec is not dataclasses.replace(spec)
    assert dataclasses.replace(spec, name="other") != spec
    assert repr(spec).startswith("Spec(name='add', description=") and "render_cache" not in repr(spec)

# -- importing nbtools stays light -----------------------------------------------------------------


def test_import_nbtools_imports_no_heavy_dependency() -> None:
    result = subprocess.run([sys.executable, "-X", "importtime", "-c", "import nbtools"],
                            capture_output=True, text=True, check=True)
    imported = {line.split("|")[-1].strip().split(".")[0] for line in result.stderr.splitlines()
                if line.startswith("import time:") and "|" in line}
    assert "nbtools" in imported  # the report really lists modules
    assert imported & {"IPython", "ipywidgets", "pydantic", "mcp", "ipykernel", "jsonschema"} == set()


def test_a_bare_import_of_pydantic_does_not_break_defaults() -> None:
    # `pydantic.fields` / `pydantic.BaseModel` are lazy attributes: a process that only ran
    # `import pydantic` must still describe ordinary defaults and classes
    script = textwrap.dedent("""
        import pydantic, dataclasses
        from nbtools import get_schema

        @dataclasses.dataclass
        class Size:
            width: int

        def resize(size: Size, factor: float = 2.0):
            return size

        print(get_schema(resize)["parameters"]["properties"]["factor"])
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "{'type': 'number', 'default': 2.0}"
