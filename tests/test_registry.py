"""The Tool record, the @tool decorator, the Registry, and the per-function schema cache."""

from __future__ import annotations

import ast
import gc
import pathlib
import subprocess
import sys
import warnings
import weakref

import pytest

from nbtools import Registry, SchemaError, Tool, ToolCallError, get_schema, tool, tools_from
from nbtools.introspect import callable_spec


def add(a: int, b: int = 1) -> int:
    """Add two integers."""
    return a + b


def test_decorator_bare_empty_and_with_overrides_keep_the_function():
    local = Registry()

    @tool(registry=local)
    def first(x: int) -> int:
        return x

    def second(x: int) -> int:
        return x * 2

    assert tool(registry=local)(second) is second
    assert first(3) == 3 and second(3) == 6  # still directly callable
    decorated = tool(name="third", group="g", hints="read-only", registry=local)(lambda y: y)
    assert decorated(4) == 4
    assert local.names() == ["first", "second", "third"]
    assert local.get("third").group == "g"
    assert local.get("third").hints == frozenset({"read-only"})


def test_bare_decorator_registers_in_default_registry():
    from nbtools import registry

    @tool
    def only_in_default(x: str) -> str:
        return x

    try:
        assert registry.get("only_in_default").fn is only_in_default
    finally:
        registry.remove("only_in_default")


def test_name_collision_warns_and_newer_wins():
    local = Registry([add])

    def other(a: int) -> int:
        return a

    with pytest.warns(UserWarning, match="'add' was already registered"):
        local.add(other, name="add")
    assert local.get("add").fn is other
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        local.add(local.get("add"))  # re-adding the same function is not a collision


def test_select_by_globs_hints_and_group():
    local = Registry()
    local.add(add, group="math", hints="read-only")
    local.add(lambda path: None, name="delete_file", hints=["destructive"])
    local.add(lambda x: x, name="math_echo", group="math")
    assert [t.name for t in local.select(allow="math*")] == ["math_echo"]
    assert [t.name for t in local.select(deny=["delete_*"])] == ["add", "math_echo"]
    assert [t.name for t in local.select(hints="read-only")] == ["add"]
    assert [t.name for t in local.select(group="math")] == ["add", "math_echo"]


def test_disabled_tools_leave_schemas_and_resolution():
    local = Registry([add])
    local.disable("add")
    assert local.schemas() == []
    assert local.resolve("add") is None
    local.enable("add")
    assert [schema["name"] for schema in local.schemas()] == ["add"]


def test_remove_by_glob_and_unknown():
    local = Registry([add])
    local.add(lambda: 1, name="add_more")
    assert local.remove("add*") == ["add", "add_more"]
    with pytest.raises(KeyError, match="no tool named 'nothing'"):
        local.remove("nothing")


def test_unknown_hint_is_refused_with_the_valid_ones():
    with pytest.raises(ValueError, match="unknown tool hint 'dangerous'; expected one of read-only"):
        Tool.from_function(add, hints="dangerous")


def test_lambda_needs_a_name():
    with pytest.raises(SchemaError, match="lambda has no name"):
        Tool.from_function(lambda x: x)
    assert Tool.from_function(lambda x: x, name="ident").name == "ident"


def test_schema_cached_per_function_object_and_redefinition_is_fresh():
    namespace: dict = {}
    source = "def f(x: int) -> int:\n    'First.'\n    return x\n"
    exec(source, namespace)
    first = namespace["f"]
    assert callable_spec(first) is callable_spec(first)
    before = get_schema(first)
    exec(source.replace("x: int", "x: str").replace("First", "Second"), namespace)
    second = namespace["f"]
    after = get_schema(second)
    assert before["parameters"]["properties"]["x"] == {"type": "integer"}
    assert after["parameters"]["properties"]["x"] == {"type": "string"}


def test_cache_does_not_keep_dead_functions_alive():
    namespace: dict = {}
    exec("def g(x: int) -> int:\n    return x\n", namespace)
    func = namespace.pop("g")
    get_schema(func)
    Tool.from_function(func).schema("openai")
    ref = weakref.ref(func)
    del func, namespace
    gc.collect()
    assert ref() is None


def test_returned_definitions_can_be_extended_without_touching_the_cache():
    first = get_schema(add, "anthropic")
    first["cache_control"] = {"type": "ephemeral"}
    assert "cache_control" not in get_schema(add, "anthropic")


class Counter:
    """A counter."""

    def __init__(self) -> None:
        self.count = 0

    def increment(self, by: int = 1) -> int:
        """Add `by` to the count."""
        self.count += by
        return self.count

    def reset(self) -> None:
        self.count = 0

    def _private(self) -> None:
        pass


def test_tools_from_instance_names_sub_tools_and_inherits_group_and_hints():
    counter = Counter()
    tools = tools_from(counter, hints="idempotent")
    assert [t.name for t in tools] == ["counter.increment", "counter.reset"]
    assert {t.group for t in tools} == {"counter"}
    assert all(t.hints == {"idempotent"} for t in tools)
    assert tools[0].fn() == 1 and counter.count == 1  # bound to that instance
    named = tools_from(counter, group="tally")
    assert [t.name for t in named] == ["tally.increment", "tally.reset"]


def test_tools_from_module():
    import json as json_module

    with pytest.raises(SchemaError):
        tools_from(object())
    tools = tools_from(json_module)
    assert {"json.dumps", "json.loads"} <= {t.name for t in tools}


def test_class_without_own_init_takes_no_arguments():
    class Marker:
        """A marker."""

    assert get_schema(Marker)["parameters"] == {"type": "object", "properties": {}, "additionalProperties": False}


def test_calling_a_disabled_tool_says_it_is_disabled():
    from nbtools import ToolCallError, call_func

    local = Registry([add])
    local.disable("add")
    with pytest.raises(ToolCallError, match="the tool 'add' is disabled"):
        call_func("add", {"a": 1}, ns=local)
    assert call_func("nothing", {}, ns=local, raise_on_err=False).startswith("Error calling tool 'nothing': no tool named")


def test_two_tools_with_the_same_provider_name_are_refused_not_misrouted():
    local = Registry()

    def dotted(a: int) -> int:
        return a

    def underscored(a: int) -> int:
        return -a

    local.add(dotted, name="geo.area")
    with pytest.warns(UserWarning, match="'geo.area' both become 'geo__area'"):
        local.add(underscored, name="geo__area")
    # exact names still reach their own tool, and formats that allow dots still work
    assert local.get("geo.area").fn is dotted and local.get("geo__area").fn is underscored
    assert [item["name"] for item in local.schemas("mcp")] == ["geo.area", "geo__area"]
    for fmt in ("openai", "responses", "anthropic"):
        with pytest.raises(ValueError, match="'geo.area' and 'geo__area' both become 'geo__area'.*rename"):
            local.schemas(fmt)
    # once the clash is gone, the provider form maps back to the dotted tool again
    local.remove("geo__area")
    assert [item["function"]["name"] for item in local.schemas("openai")] == ["geo__area"]
    assert local.get("geo__area").fn is dotted


def test_a_mapped_name_never_takes_over_an_existing_tool():
    local = Registry()

    def plain(a: int) -> int:
        return a

    def dotted(a: int) -> int:
        return -a

    local.add(plain, name="geo__area")
    with pytest.warns(UserWarning, match="both become 'geo__area'"):
        local.add(dotted, name="geo.area")
    assert local.get("geo__area").fn is plain


def test_running_the_same_definition_again_replaces_it_without_a_warning():
    # a notebook cell run twice defines a new function object with the same module and qualname
    local = Registry()
    namespace: dict = {"__name__": "cell"}
    exec("def resize(size: int) -> int:\n    return size\n", namespace)  # noqa: S102
    local.add(namespace["resize"])
    exec("def resize(size: float) -> float:\n    return size\n", namespace)  # noqa: S102
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        local.add(namespace["resize"])
    assert local.get("resize").fn is namespace["resize"]
    # a different function (or another lambda) under the same name still warns
    with pytest.warns(UserWarning, match="'resize' was already registered"):
        local.add(lambda size: size, name="resize")
    with pytest.warns(UserWarning, match="'resize' was already registered"):
        local.add(lambda size: size, name="resize")


def test_the_decorator_inside_a_class_body_says_to_register_a_bound_method():
    local = Registry()
    with pytest.raises(SchemaError) as caught:
        class Shop:
            @tool(registry=local)
            def price(self, item: str) -> float:
                return 1.0
    assert caught.value.parameter == "self" and caught.value.function.endswith("Shop.price")
    assert "registry.add(instance.method)" in str(caught.value) and "@staticmethod" in str(caught.value)
    assert len(local) == 0

    class Till:
        @staticmethod
        @tool(registry=local)
        def total(prices: list[float]) -> float:  # a static method takes no self: fine
            return sum(prices)

        def pay(self, amount: float) -> str:
            return "paid"

    local.add(Till().pay)  # the bound method: no self in its schema
    assert local.names() == ["total", "pay"]
    assert "self" not in local.get("pay").parameters["properties"]


# -- registry and dispatch: no import cycle -------------------------------------------------------------
def test_dispatch_reads_any_tool_source_with_its_policy():
    # nbtools.call reads registries through policy.ToolSource (limits, approval, lookup), so it
    # never imports nbtools.registry: a registry of another shape works the same way
    from nbtools.call import call_func, mk_ns
    from nbtools.policy import Limits, ToolSource

    def echo(text: str) -> str:
        return text

    class Single(ToolSource):
        def __init__(self) -> None:
            super().__init__(limits=Limits(max_string=3))
            self.tool = Tool.from_function(echo, hints="destructive")

        def resolve(self, name: str) -> Tool | None:
            return self.tool if name == "echo" else None

        def get(self, name: str, default=None):
            return self.resolve(name) or default

        def enabled(self) -> list[Tool]:
            return [self.tool]

    source = Single()
    assert call_func("echo", {"text": "abc"}, ns=source) == "abc"
    assert mk_ns(source) == {"echo": source.tool}
    with pytest.raises(ToolCallError, match="too long"):
        call_func("echo", {"text": "abcd"}, ns=source)
    with pytest.raises(ToolCallError, match="available tools: echo"):
        call_func("ech", {}, ns=source)
    source.refuse_destructive = True
    with pytest.raises(ToolCallError, match="refused"):
        call_func("echo", {"text": "a"}, ns=source)


def test_dispatch_never_imports_the_registry_and_import_nbtools_loads_no_dispatch():
    package = pathlib.Path(__file__).resolve().parent.parent / "nbtools" / "call"
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [getattr(node, "module", None) or ""] + [alias.name for alias in node.names]
                assert not any(name == "registry" or name.endswith(".registry") for name in names), path.name
    loaded = subprocess.run([sys.executable, "-c", "import sys, nbtools; "
                             "print(sorted(m for m in sys.modules if m.startswith('nbtools.call')))"],
                            capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"


@pytest.mark.parametrize("hints", ["read-only destructive", ["destructive", "readonly"], "read_only,destructive"])
def test_contradictory_hints_are_refused_naming_both(hints):
    with pytest.raises(ValueError, match="contradictory tool hints 'read-only' and 'destructive'.*keep one"):
        Tool.from_function(add, hints=hints)


def test_a_remote_read_only_tool_marked_destructive_too_stays_read_only():
    from nbtools.mcp import hints_from_annotations

    assert hints_from_annotations({"readOnlyHint": True, "destructiveHint": True}) == {"read-only", "open-world"}
    assert hints_from_annotations({"readOnlyHint": True, "destructiveHint": True, "openWorldHint": False}) == {"read-only", "not-open-world"}


# -- the table of callable Tools (`ToolSource._callable`): call_func's one lookup -----------------------
def table_double(x: int) -> int:
    return 2 * x


def table_triple(x: int) -> int:
    return 3 * x


def test_the_callable_table_follows_every_change():
    from nbtools.call import call_func

    registry = Registry([table_double])
    math_add = Tool.from_function(table_triple, name="math.triple")
    registry.add(math_add)
    assert call_func("table_double", {"x": 2}, ns=registry) == 4
    assert registry._callable == registry._callable_table()  # built by that call
    assert call_func("math__triple", {"x": 2}, ns=registry) == 6  # a provider-mapped name
    registry.disable("table_double")
    assert "disabled" in call_func("table_double", {"x": 2}, ns=registry, raise_on_err=False)
    registry.enable("table_double")
    assert call_func("table_double", {"x": 2}, ns=registry) == 4
    registry.remove("math.triple")
    assert "no tool named" in call_func("math__triple", {"x": 2}, ns=registry, raise_on_err=False)
    registry.add(table_triple)
    assert call_func("table_triple", {"x": 2}, ns=registry) == 6
    registry.clear()
    assert "no tool named" in call_func("table_triple", {"x": 2}, ns=registry, raise_on_err=False)


def test_views_and_tools_from_other_registries_keep_no_table():
    """Their answers change with another registry's changes, which they are not told of."""
    from nbtools.call import call_func

    base = Registry([table_double, table_triple])
    view = base.select(allow="table_*")
    borrowed = Registry([base["table_double"]])
    for ns in (view, borrowed):
        assert call_func("table_double", {"x": 1}, ns=ns) == 2
        assert ns._callable is None
    base.disable("table_double")
    for ns in (view, borrowed):
        assert "disabled" in call_func("table_double", {"x": 1}, ns=ns, raise_on_err=False)


def test_a_registry_subclass_answering_otherwise_is_asked_on_every_call():
    """A subclass's own `resolve` (here: a tool switched off by a flag of its own) holds on every
    call: no table of callable Tools bypasses it once a call went through."""
    from nbtools.call import call_func

    class Gated(Registry):
        closed = False

        def resolve(self, name):
            return None if self.closed else super().resolve(name)

    gated = Gated([table_double])
    assert call_func("table_double", {"x": 2}, ns=gated) == 4
    gated.closed = True
    assert "cannot be called now" in call_func("table_double", {"x": 2}, ns=gated, raise_on_err=False)
    assert gated._callable is None


def test_a_table_built_while_a_change_came_is_not_kept():
    """Another thread disabling a tool while a call built the table: that table is stale, dropped."""
    from nbtools.call import call_func

    registry = Registry([table_double, table_triple])
    build = registry._callable_table

    def built_during_a_change():
        table = build()  # `table_triple` still enabled here
        registry.disable("table_triple")
        return table

    registry._callable_table = built_during_a_change
    assert call_func("table_double", {"x": 1}, ns=registry) == 2
    assert registry._callable is None
    del registry._callable_table
    assert "disabled" in call_func("table_triple", {"x": 1}, ns=registry, raise_on_err=False)


def test_calls_beside_changes_in_threads_raise_nothing_and_end_consistent():
    import threading
    from nbtools.call import call_func

    registry = Registry([table_double, table_triple])
    stop = threading.Event()

    def caller():
        while not stop.is_set():
            call_func("table_double", {"x": 1}, ns=registry, raise_on_err=False)

    def changer():
        for index in range(300):
            registry.disable("table_triple") if index % 2 else registry.enable("table_triple")
            registry.add(Tool.from_function(table_double, name=f"d{index % 7}"))

    callers = [threading.Thread(target=caller) for _ in range(3)]
    for thread in callers:
        thread.start()
    changers = [threading.Thread(target=changer) for _ in range(2)]
    for thread in changers:
        thread.start()
    for thread in changers:
        thread.join()
    stop.set()
    for thread in callers:
        thread.join()
    call_func("table_double", {"x": 1}, ns=registry)
    assert registry._callable == registry._callable_table()
    registry.disable("table_triple")
    assert "disabled" in call_func("table_triple", {"x": 1}, ns=registry, raise_on_err=False)


def test_a_tool_borrowed_while_the_table_was_being_built_is_never_called_from_a_table():
    """Another thread adds a Tool from another registry between `resolve`'s check "nothing added
    from elsewhere" and its reading of the change count: the table built then must not be kept,
    or a Tool later disabled in its own registry would still run here (a disabled tool stays
    disabled everywhere)."""
    from nbtools.call import call_func

    base = Registry([table_triple])
    registry = Registry([table_double])

    class AddsWhileChecked(dict):
        added = False

        def __len__(self) -> int:  # `not self._upstream` in `resolve` read it empty; the other thread adds now
            size = dict.__len__(self)
            if not AddsWhileChecked.added:
                AddsWhileChecked.added = True
                registry.add(base["table_triple"])
            return size

    registry._upstream = AddsWhileChecked()
    assert call_func("table_double", {"x": 1}, ns=registry) == 2 and AddsWhileChecked.added
    assert registry._callable is None  # it holds a Tool of another registry now
    base.disable("table_triple")
    assert "disabled" in call_func("table_triple", {"x": 1}, ns=registry, raise_on_err=False)


def test_a_deep_copy_of_a_registry_or_of_its_tool_is_its_own():
    """`copy.deepcopy` of a Registry (or of a Tool it handed out, which carries it) gives an
    independent copy, as before the registry kept a lock for its table of callable Tools."""
    import copy

    from nbtools.call import call_func

    registry = Registry([table_double, table_triple])
    assert call_func("table_double", {"x": 1}, ns=registry) == 2  # the table exists: copied too
    copied = copy.deepcopy(registry)
    copied.disable("table_double")
    assert call_func("table_double", {"x": 1}, ns=registry) == 2
    assert "disabled" in call_func("table_double", {"x": 1}, ns=copied, raise_on_err=False)
    tool_copy = copy.deepcopy(registry["table_triple"])
    assert tool_copy.source is not registry and tool_copy.call({"x": 1}) == 3


def test_a_shallow_copy_shares_the_tools_and_what_is_disabled():
    import copy
    from nbtools.call import call_func

    registry = Registry([table_double])
    assert call_func("table_double", {"x": 1}, ns=registry) == 2  # the table built
    copied = copy.copy(registry)
    copied.disable("table_double")
    for ns in (registry, copied):
        assert "disabled" in call_func("table_double", {"x": 1}, ns=ns, raise_on_err=False)
    registry.enable("table_double")
    assert call_func("table_double", {"x": 1}, ns=copied) == 2
