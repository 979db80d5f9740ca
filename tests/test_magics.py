"""The magics in a real kernel (the session's shared kernel, cells run as a notebook runs them), plus
the pure helpers they are built from."""

from __future__ import annotations

import importlib.util
import json
import re
import textwrap
from pathlib import Path

import nbformat
import pytest
from nbclient.exceptions import CellExecutionError

from kernels import stderr_of, stdout_of, text_of
from nbtools.magics import defined_functions, parameter_summary, first_line


# -- pure helpers (no kernel) ------------------------------------------------------------------------

def test_defined_functions_counts_defs_in_blocks_but_not_other_bindings():
    source = textwrap.dedent('''
        import os
        from math import sqrt
        def top(): pass
        async def atop(): pass
        if os:
            def in_if(): pass
        elif sqrt:
            def in_elif(): pass
        else:
            def in_else(): pass
        try:
            def in_try(): pass
        except ValueError:
            def in_except(): pass
        else:
            def in_try_else(): pass
        finally:
            def in_finally(): pass
        with open(__file__) as handle:
            def in_with(): pass
        match 1:
            case 1:
                def in_case(): pass
        for loop_variable in range(3):
            def in_loop(): pass
        while False:
            def in_while(): pass
        class Klass:
            def method(self): pass
        def outer():
            def nested(): pass
        lam = lambda: 1
        top2 = top
        def top(): pass
    ''')
    assert defined_functions(source) == [
        "atop", "in_if", "in_elif", "in_else", "in_try", "in_except", "in_try_else", "in_finally",
        "in_with", "in_case", "outer", "top"]


def test_defined_functions_rejects_non_python():
    with pytest.raises(SyntaxError):
        defined_functions("!ls")


def test_parameter_summary_and_first_line():
    schema = {"properties": {"a": {}, "b": {"default": 1}, "c": {"default": "x"}, "d": {}}, "required": ["a"]}
    assert parameter_summary(schema) == 'a, b=1, c="x", d?'
    assert first_line("\n\n  First line.  \nSecond") == "First line."
    assert first_line("x" * 100, limit=10) == "xxxxxxxxx…"


# -- in the session's real kernel (tests/conftest.py), cells run as a notebook runs them -------------

@pytest.fixture
def fresh(nbtools_kernel):
    """The shared kernel with the extension loaded and an empty registry."""
    return nbtools_kernel


def printed_only(outputs: list) -> str:
    """What a cell printed on stdout (joined: under load one print may arrive in two messages), or a
    marker when it showed anything else (stderr, a display, an error)."""
    if any(output["output_type"] != "stream" or output["name"] != "stdout" for output in outputs):
        return f"<other outputs: {outputs}>"
    return stdout_of(outputs)


def names(kernel) -> list[str]:
    return kernel.value("_registry.names()")


def test_tool_cell_registers_the_functions_the_cell_defines(fresh):
    outputs = fresh.run('''
        %%tool --group math --hints read-only idempotent
        import os
        from math import sqrt
        def add(a: int, b: int = 1) -> int:
            """Add two integers."""
            return a + b
        if True:
            async def later(seconds: float) -> str:
                """Wait, then say so."""
                return "done"
        try:
            def guarded(x: int) -> int:
                return x
        except Exception:
            pass
        def _helper(): pass
        double = lambda x: 2 * x
        class Point: pass
        for loop_variable in range(2): pass
    ''')
    # a clean registration shows one line: what was registered, with the cell's group and hints
    assert printed_only(outputs) == "registered: add, later, guarded (math · idempotent read-only)\n"
    assert names(fresh) == ["add", "later", "guarded"]
    assert fresh.value("[_registry['add'].group, sorted(_registry['add'].hints)]") == [
        "math", ["idempotent", "read-only"]]
    assert fresh.value("_registry['later'].is_async") is True


def test_tool_cell_stores_the_function_object(fresh):
    fresh.run('''
        %%tool
        def triple(x: int) -> int:
            return 3 * x
    ''')
    fresh.run("triple = None")  # rebinding the name later changes nothing
    assert fresh.value("_registry.call('triple', {'x': 2})") == 6


def test_tool_cell_runs_like_a_normal_cell(fresh):
    outputs = fresh.run('''
        %%tool
        !echo shell-says-hi
        %time _unused = 1
        from IPython.display import display, Markdown
        display(Markdown("**shown**"))
        def shout(text: str) -> str:
            return text.upper()
        shout("last value")
    ''')
    shown = text_of(outputs)
    assert "shell-says-hi" in shown and "Wall time" in shown
    assert any(output["output_type"] == "display_data" and "text/markdown" in output["data"] for output in outputs)
    assert any(output["output_type"] == "execute_result" and output["data"]["text/plain"] == "'LAST VALUE'"
               for output in outputs)
    assert names(fresh) == ["shout"]


def test_tool_decorator_inside_a_tool_cell_keeps_its_options(fresh):
    outputs = fresh.run('''
        %%tool -g cell-group
        from nbtools import tool

        @tool(name="renamed", group="decorator-group")
        def original(x: int) -> int:
            return x

        def plain(x: int) -> int:
            return x
    ''')
    assert printed_only(outputs) == "registered: renamed, plain (cell-group, decorator-group)\n"
    assert names(fresh) == ["renamed", "plain"]
    assert fresh.value("[_registry['renamed'].group, _registry['plain'].group]") == ["decorator-group", "cell-group"]
    outputs = fresh.run('''
        %%tool
        @tool(name="only_decorated")
        def inner(x: int) -> int:
            return x
    ''')
    assert printed_only(outputs) == "registered: only_decorated\n"  # not "defined no functions": @tool registered it


def test_failing_tool_cell_errors_and_registers_nothing(fresh):
    shown = fresh.fails('''
        %%tool
        def early(x: int) -> int:
            return x
        raise ValueError("boom in the cell")
    ''')
    assert "boom in the cell" in shown  # the body's own traceback
    assert "%%tool: the cell failed, so no tools were registered" in shown
    assert names(fresh) == []
    shown = fresh.fails('''
        %%tool
        def broken(:
            pass
    ''')
    assert "SyntaxError" in shown and names(fresh) == []


def test_top_level_await_in_a_tool_cell_fails_cleanly(fresh):
    fresh.fails('''
        %%tool
        import asyncio
        async def pause() -> None:
            await asyncio.sleep(0)
        await pause()
    ''')
    assert names(fresh) == []
    doc = fresh.value("get_ipython().find_cell_magic('tool').__doc__")
    assert "Top-level `await`" in doc and "`async def` tools are fine" in doc


def test_failing_tool_cell_stops_a_notebook_run(fresh):
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("from nbtools import registry\nregistry.clear()"),
        nbformat.v4.new_code_cell("%%tool\ndef first(x: int) -> int:\n    return x"),
        nbformat.v4.new_code_cell("%%tool\ndef second(x: int) -> int:\n    return x\n1 / 0"),
        nbformat.v4.new_code_cell("print('never runs')"),
    ])
    # The whole notebook through nbclient's `execute`, as `jupyter execute` runs it (same kernel).
    with pytest.raises(CellExecutionError):
        fresh.execute_notebook(notebook)
    assert notebook.cells[3].outputs == []
    assert notebook.cells[2].outputs[-1]["output_type"] == "error"
    assert fresh.value("registry.names()") == ["first"]


def test_a_function_that_cannot_be_described_is_reported_and_the_others_register(fresh):
    outputs = fresh.run('''
        %%tool
        def fine(x: int) -> int:
            return x
        def unresolvable(x: "NoSuchType") -> int:
            return 1
        def also_fine(y: str) -> str:
            return y
    ''')
    problems = stderr_of(outputs).strip().splitlines()
    assert len(problems) == 1
    assert problems[0].startswith("%%tool: 'unresolvable' not registered:") and "NoSuchType" in problems[0]
    assert names(fresh) == ["fine", "also_fine"]


def test_tool_cell_names_tools_after_the_def_not_a_decorator_wrapper(fresh):
    outputs = fresh.run('''
        %%tool
        def logged(function):
            def wrapper(*args, **kwargs):  # no functools.wraps: its __name__ is "wrapper"
                return function(*args, **kwargs)
            return wrapper

        @logged
        def search(query: str) -> str:
            return query
    ''')
    assert printed_only(outputs) == "registered: logged, search\n"
    assert names(fresh) == ["logged", "search"]
    assert fresh.value("_registry.call('search', {'args': ['hi']})") == "hi"


def test_an_object_that_breaks_introspection_is_reported_and_the_others_register(fresh):
    outputs = fresh.run('''
        %%tool
        class Hostile:
            "A proxy whose attribute lookups fail with something other than AttributeError."
            def __call__(self, x: int) -> int:
                return x
            def __getattr__(self, attribute):
                raise RuntimeError(f"remote object has no {attribute}")

        def proxied(x: int) -> int:
            return x
        proxied = Hostile()

        def fine(x: int) -> int:
            return x
    ''')
    (problem,) = stderr_of(outputs).strip().splitlines()
    assert problem.startswith("%%tool: 'proxied' not registered: describing it raised RuntimeError: remote object")
    assert names(fresh) == ["fine"]


def test_a_cell_without_functions_says_so(fresh):
    outputs = fresh.run("%%tool\nvalue = 41 + 1")
    assert "defined no functions" in stderr_of(outputs)
    outputs = fresh.run("%%tool\ndef _private_helper(x): return x")
    assert "defined only helpers (names starting with _), so no tools were registered" in stderr_of(outputs)
    assert names(fresh) == []


def test_a_tool_cell_whose_body_starts_with_another_cell_magic(fresh):
    outputs = fresh.run('''
        %%tool
        %%time
        def timed_square(x: int) -> int:
            return x * x
    ''')
    assert "Wall time" in text_of(outputs)
    fresh.run('''
        %%tool -g quiet

        %%capture captured
        print("hidden")
        def captured_cube(x: int) -> int:
            return x ** 3
    ''')
    assert names(fresh) == ["timed_square", "captured_cube"]
    assert fresh.value("[captured.stdout, _registry['captured_cube'].group]") == ["hidden\n", "quiet"]
    assert fresh.value("_registry.call('timed_square', {'x': 4})") == 16
    outputs = fresh.run("%%tool\n%%bash\necho from-bash")  # not Python: runs, defines nothing
    assert "from-bash" in stdout_of(outputs) and "defined no functions" in stderr_of(outputs)


def test_a_def_in_a_branch_not_taken_does_not_register_an_older_function(fresh):
    fresh.run("def maybe(): return 'old'")
    fresh.run('''
        %%tool
        if False:
            def maybe(): return 'new'
        def sure() -> str: return 'sure'
    ''')
    assert names(fresh) == ["sure"]


def test_redefinition_replaces_quietly(fresh):
    fresh.run("%%tool\ndef version() -> int:\n    return 1")
    outputs = fresh.run("%%tool -g v2\ndef version() -> int:\n    return 2")
    assert printed_only(outputs) == "registered: version (v2)\n"  # no "already registered" warning
    assert fresh.value("_registry.call('version', {})") == 2
    assert fresh.value("_registry['version'].group") == "v2"
    assert names(fresh) == ["version"]


def test_tool_cell_strict_refuses_what_strict_mode_cannot_express(fresh):
    outputs = fresh.run('''
        %%tool --strict
        def count(words: list[str]) -> int:
            return len(words)
        def tally(counts: dict[str, object]) -> int:
            return sum(counts.values())
    ''')
    assert "'tally' not registered" in stderr_of(outputs) and "counts" in stderr_of(outputs)
    assert names(fresh) == ["count"]
    # OpenAI's strict mode takes a recursive type, Anthropic's does not: --strict needs both.
    outputs = fresh.run('''
        from __future__ import annotations
        import dataclasses
        @dataclasses.dataclass
        class TreeNode:
            value: int
            children: list[TreeNode]
    ''')
    outputs = fresh.run('''
        %%tool --strict
        def total(tree: TreeNode) -> int:
            return tree.value + sum(total(child) for child in tree.children)
    ''')
    assert "'total' not registered: --strict: no strict anthropic definition" in stderr_of(outputs)
    assert names(fresh) == ["count"]
    assert fresh.value("_registry['count'].strict") is True


def test_bad_options_are_usage_errors_and_nothing_runs(fresh):
    shown = fresh.fails("%%tool --hints dangerous\nbad_hint_cell_ran = True\ndef nope(): pass")
    assert "unknown tool hint 'dangerous'" in shown
    assert fresh.value("'bad_hint_cell_ran' in globals()") is False
    shown = fresh.fails("%%tool --frobnicate\ndef nope(): pass")
    assert "unrecognized arguments" in shown
    assert names(fresh) == []


def test_tool_line_registers_existing_functions(fresh):
    fresh.run('''
        import types
        def area(width: float, height: float) -> float:
            """Area of a rectangle."""
            return width * height
        helpers = types.SimpleNamespace(perimeter=lambda: 0)
        def perimeter(width: float, height: float) -> float:
            return 2 * (width + height)
        helpers.perimeter = perimeter
    ''')
    outputs = fresh.run("%tool area helpers.perimeter -g geometry --hints read-only")
    assert text_of(outputs) == ""
    assert names(fresh) == ["area", "perimeter"]
    assert fresh.value("_registry['perimeter'].group") == "geometry"
    shown = fresh.fails("%tool area no_such_function")
    assert "no variable named 'no_such_function'" in shown
    fresh.run("value = 3")
    shown = fresh.fails("%tool value")
    assert "'value' not registered: it is an int, not a function" in shown
    shown = fresh.fails("import math\n%tool math")
    assert "'math' not registered: it is a module, not a function" in shown and "tools_from(math)" in shown


def test_quoted_option_values_lose_their_quotes_as_in_a_shell(fresh):
    # IPython's own option parser keeps quotes in the values: a quoted group was stored with its
    # quotes and a quoted glob matched nothing.
    fresh.run("%%tool -g 'data tools' --hints 'read-only'\ndef load(path: str) -> str:\n    return path")
    assert fresh.value("_registry['load'].group") == "data tools"
    fresh.run("def save(path: str) -> str:\n    return path")
    fresh.run('%tool "save" --group "data tools"')
    assert names(fresh) == ["load", "save"]
    assert "save" in text_of(fresh.run("%tools 'sa*' -g 'data tools'"))
    listed = json.loads(stdout_of(fresh.run("%tools -g \"data tools\" --fmt 'openai'")))
    assert [each["function"]["name"] for each in listed] == ["load", "save"]
    assert stdout_of(fresh.run("%untool 'lo*'")) == "Removed 1 tool: load\n"
    assert "%tools: No closing quotation" in fresh.fails("%tools 'sa*")


def test_option_mistakes_name_the_magic_and_the_fix(fresh):
    fresh.run("def save(path: str) -> str:\n    return path")
    shown = fresh.fails("%tool --hints read-only save")  # the hints list swallowed the name
    assert "%tool: no NAME given; names go before --hints" in shown
    shown = fresh.fails("%tool save --hints read-only save")
    assert "unknown tool hint 'save'" in shown and "names go before --hints" in shown
    assert "%tool: the following arguments are required: NAME (see %tool?)" in fresh.fails("%tool")
    assert "(%tool takes names, not globs)" in fresh.fails("%tool sa*")
    assert "%%tool: unrecognized arguments: -q" in fresh.fails("%%tool -q\ndef nope(): pass")
    assert names(fresh) == []


def test_tool_line_names_each_tool_after_the_name_typed(fresh):
    fresh.run('''
        import functools
        def add(a: int, b: int = 1) -> int:
            return a + b
        add_ten = functools.partial(add, b=10)
        double = lambda x: 2 * x
    ''')
    outputs = fresh.run("%tool add add_ten double")
    assert text_of(outputs) == ""
    # The partial does not take over `add`'s name (which would replace that tool silently), and a
    # lambda, which has no name of its own, gets the variable's.
    assert names(fresh) == ["add", "add_ten", "double"]
    assert fresh.value("[_registry.call('add', {'a': 1}), _registry.call('add_ten', {'a': 1}), "
                       "_registry.call('double', {'x': 4})]") == [2, 11, 8]


def test_tool_line_refuses_a_method_taken_from_its_class(fresh):
    fresh.run('''
        class Shelf:
            def count(self, kind: str) -> int:
                return 3
            @staticmethod
            def label(kind: str) -> str:
                return kind.upper()
        shelf = Shelf()
    ''')
    shown = fresh.fails("%tool Shelf.count Shelf.label")
    # Its `self` would have become a parameter the model fills in.
    assert "'Shelf.count' not registered: it is a method of class Shelf" in shown and "%tool obj.count" in shown
    assert names(fresh) == ["label"]  # the others still register
    fresh.run("%tool shelf.count")
    assert fresh.value("_registry.call('count', {'kind': 'book'})") == 3


def test_untool_by_name_and_glob(fresh):
    fresh.run('''
        %%tool
        def math_add(a: int, b: int) -> int: return a + b
        def math_sub(a: int, b: int) -> int: return a - b
        def greet(name: str) -> str: return "hi " + name
    ''')
    assert stdout_of(fresh.run("%untool greet")) == "Removed 1 tool: greet\n"
    assert "math_add" in fresh.value("list(globals())")  # the function itself stays
    shown = fresh.fails("%untool math_* nothing_*")
    assert "no tool matches 'nothing_*'" in shown and names(fresh) == ["math_add", "math_sub"]
    assert stdout_of(fresh.run("%untool math_*")) == "Removed 2 tools: math_add, math_sub\n"
    assert names(fresh) == []


@pytest.fixture
def listed(fresh):
    fresh.run('''
        %%tool -g math --hints read-only
        def add(a: int, b: int = 1) -> int:
            """Add two integers.

            Longer text that the table leaves out.
            """
            return a + b
    ''')
    fresh.run('''
        %%tool --hints destructive
        def wipe(path: str) -> str:
            """Delete <everything> under a path."""
            return path
    ''')
    return fresh


def test_tools_table_text_and_html(listed):
    outputs = listed.run("%tools")
    (display,) = [output for output in outputs if output["output_type"] == "display_data"]
    text = display["data"]["text/plain"]
    assert text.splitlines()[0].split() == ["name", "group", "hints", "description", "parameters"]
    rows = [re.split(r"\s{2,}", line) for line in text.splitlines()[2:]]
    assert rows == [["add", "math", "read-only", "Add two integers.", "a, b=1"],
                    ["wipe", "destructive", "Delete <everything> under a path.", "path"]]
    assert "Longer text" not in text
    page = display["data"]["text/html"]
    assert "&lt;everything&gt;" in page and "<everything>" not in page
    # the destructive tool is marked (⚠ by its name, its hint on the theme's error colour); the read-only one is not
    add_row, wipe_row = page.split("<tr")[2:]
    assert "⚠" in wipe_row and "background:var(--jp-error-color0" in wipe_row and "⚠" not in add_row
    assert "jp-error-color0" not in add_row
    listed.run("_registry.disable('wipe')")
    assert "wipe (disabled)" in text_of(listed.run("%tools"))


def test_tools_glob_and_group_filters(listed):
    assert "wipe" not in text_of(listed.run("%tools a*")) and "add" in text_of(listed.run("%tools a*"))
    assert "wipe" not in text_of(listed.run("%tools -g math"))
    assert "No tools match name 'zzz*' (of 2 registered; `%tools` alone lists them all)." in text_of(
        listed.run("%tools zzz*"))


def test_tools_fmt_prints_the_definitions(listed):
    definitions = json.loads(stdout_of(listed.run("%tools --fmt openai")))
    assert [item["function"]["name"] for item in definitions] == ["add", "wipe"]
    anthropic = json.loads(stdout_of(listed.run("%tools a* --fmt anthropic --strict")))
    assert anthropic[0]["name"] == "add" and anthropic[0]["input_schema"]["additionalProperties"] is False
    listed.run("_registry.disable('wipe')")
    neutral = json.loads(stdout_of(listed.run("%tools --fmt neutral")))
    assert [item["name"] for item in neutral] == ["add"]  # disabled tools are not offered
    assert "--fmt klingon" in listed.fails("%tools --fmt klingon")
    assert json.loads(stdout_of(listed.run("%tools --fmt Gemini")))[0]["name"] == "add"  # any case
    assert "no strict mode" in listed.fails("%tools --fmt gemini --strict")  # not silently ignored
    listed.run("_registry.clear()")
    assert "unknown format; use one of neutral, openai" in listed.fails("%tools --fmt klingon")
    assert "--strict needs --fmt" in listed.fails("%tools --strict")


def test_tools_panel(listed):
    outputs = listed.run("%tools --panel")
    display, fallback = [output for output in outputs if output["output_type"] == "display_data"]
    assert "application/vnd.jupyter.widget-view+json" in display["data"]
    assert display["data"]["text/plain"] == "ToolsPanel(2 of 2 tools shown: add, wipe)"
    # a separate plain output: what a saved notebook shows once the widget's model is gone
    assert "application/vnd.jupyter.widget-view+json" not in fallback["data"]
    assert fallback["data"]["text/plain"] == "Tools panel, when shown: 2 of 2 tools: add (read-only), wipe (destructive)"
    assert "<code>add</code>" in fallback["data"]["text/html"] and "<code>wipe</code>" in fallback["data"]["text/html"]


def test_a_saved_notebook_shows_the_panels_tools_without_its_widget_state(listed, tmp_path):
    """Run a notebook with a panel, save it without widget state (as a notebook reopened after its
    kernel is gone), and read what a front end can still render: the plain output names the tools."""
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("%load_ext nbtools"),
        nbformat.v4.new_code_cell("%%tool --hints destructive\ndef wipe(path: str) -> str:\n    return path"),
        nbformat.v4.new_code_cell("import nbtools\nnbtools.panel()")])
    listed.run("_registry.clear()")
    listed.execute_notebook(notebook)
    saved = tmp_path / "saved.ipynb"
    nbformat.write(notebook, saved)
    reopened = nbformat.read(saved, as_version=4)
    reopened.metadata.pop("widgets", None)  # the model is gone
    shown = [output["data"] for output in reopened.cells[-1].outputs if output["output_type"] != "stream"]
    renderable = [data for data in shown if "application/vnd.jupyter.widget-view+json" not in data]
    assert len(shown) == 2 and len(renderable) == 1, shown
    assert "wipe" in renderable[0]["text/html"] and "destructive" in renderable[0]["text/plain"]


@pytest.mark.parametrize("options, named", [("--panel --fmt openai", "--fmt and --panel"),
                                            ("--fmt mcp --serve", "--fmt and --serve"),
                                            ("--serve 0 --stop", "--serve and --stop")])
def test_tools_actions_are_not_combined(listed, options, named):
    shown = listed.fails(f"%tools {options}")
    assert f"%tools: {named} cannot be combined; use one at a time" in shown
    assert not any(output["output_type"] == "display_data" for output in listed.nb.cells[-1].outputs)
    assert "No MCP server is running." in text_of(listed.run("%tools --stop"))  # nothing was started


def test_a_panel_follows_tools_defined_in_later_cells(fresh):
    fresh.run("import nbtools\nlive_panel = nbtools.panel()")
    assert fresh.value("repr(live_panel)") == "ToolsPanel(0 of 0 tools shown: )"
    fresh.run("%%tool\ndef appears_later(x: int) -> int:\n    return x")
    assert fresh.value("repr(live_panel)") == "ToolsPanel(1 of 1 tools shown: appears_later)"
    fresh.run("_registry.disable('appears_later')")
    assert fresh.value("live_panel.rows['appears_later'].enabled.value") is False


def test_in_kernel_calls_use_the_registry_and_refuse_unregistered_globals(listed):
    listed.run('''
        from nbtools import call_func, ToolCallError
        def secret() -> str:
            return "kernel global, never registered"
        refusals = []
        for name in ("secret", "get_ipython", "open", "__builtins__", "_registry.clear", "os"):
            try:
                call_func(name, {})
            except ToolCallError as error:
                refusals.append(name)
    ''')
    assert listed.value("refusals") == ["secret", "get_ipython", "open", "__builtins__", "_registry.clear", "os"]
    assert listed.value("call_func('add', '{\"a\": 2, \"b\": 3}')") == 5
    listed.run("_registry.disable('add')")
    refused = listed.value("call_func('add', {'a': 1}, raise_on_err=False)")
    assert refused.startswith("Error calling tool 'add'")  # a disabled tool is refused
    assert listed.value("_registry.schemas() and [schema['name'] for schema in _registry.schemas()]") == ["wipe"]


def test_in_kernel_run_tool_calls_defaults_to_the_registry(listed):
    listed.run('''
        from nbtools import run_tool_calls
        reply = {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": "{\\"a\\": 40, \\"b\\": 2}"}},
            {"id": "call_2", "type": "function", "function": {"name": "secret", "arguments": "{}"}}]}
        results = run_tool_calls(reply)
    ''')
    results = listed.value("results")
    assert results[0] == {"role": "tool", "tool_call_id": "call_1", "content": "42"}
    assert results[1]["tool_call_id"] == "call_2" and "secret" in results[1]["content"]


def test_in_kernel_python_defaults_to_the_kernel_namespace(fresh):
    fresh.run("kernel_number = 21")
    assert fresh.value("__import__('nbtools').python('kernel_number * 2')") == 42
    fresh.run("__import__('nbtools').python('made_by_python = 7')")
    assert fresh.value("made_by_python") == 7


def test_reload_ext_keeps_tools_and_magics(listed):
    outputs = listed.run("%reload_ext nbtools")
    assert text_of(outputs) == ""
    assert names(listed) == ["add", "wipe"]
    listed.run("%%tool\ndef after_reload() -> int:\n    return 1")
    assert names(listed) == ["add", "wipe", "after_reload"]
    assert listed.value("sorted(get_ipython().magics_manager.registry).count('ToolMagics')") == 1


def test_unload_ext_removes_every_magic_and_keeps_tools(listed):
    listed.run("%unload_ext nbtools")
    try:
        magics = listed.value("{kind: sorted(table) for kind, table in get_ipython().magics_manager.magics.items()}")
        assert "tool" not in magics["cell"]
        assert not {"tool", "tools", "untool"} & set(magics["line"])
        assert "ToolMagics" not in listed.value("list(get_ipython().magics_manager.registry)")
        assert "Cell magic `%%tool` not found" in listed.fails("%%tool\ndef orphan(): pass")
        assert "%tools` not found" in listed.fails("%tools")
        assert names(listed) == ["add", "wipe"]  # the registry is untouched
    finally:
        listed.run("%load_ext nbtools")
    assert "add" in text_of(listed.run("%tools"))


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a parent is a plain module, not a package
        return False


# The names nbtools.interp.process replaces for the duration of its install() (issue 9).
PATCHED = ["threading.Thread.start", "signal.signal", "signal.getsignal", "signal.setitimer", "signal.getitimer",
           "signal.alarm", "_thread.interrupt_main"]


@pytest.mark.skipif(not _module_exists("nbtools.interp.process"),
                    reason="nbtools.interp.process (every process-wide patch of python(), with install/uninstall) "
                           "is not in this tree yet; this test runs once it is")
def test_unload_ext_undoes_the_interpreters_process_wide_patches(new_kernel):
    kernel = new_kernel()  # its own: the shared kernel's patches belong to the tests that come later
    kernel.run("%load_ext nbtools")
    kernel.run(f"import _thread, signal, threading\noriginals = {{name: eval(name) for name in {PATCHED!r}}}")
    kernel.run("from nbtools import python\nassert python('1 + 1', timeout=1) == 2")
    assert kernel.value("threading.Thread.start is not originals['threading.Thread.start']")  # python() patched it
    kernel.run("%unload_ext nbtools")
    assert kernel.value("[name for name, original in originals.items() if eval(name) is not original]") == []


# -- a %%tool cell's tools are the cell's: re-running it replaces them ---------------------------------

def run_as_cell(kernel, source: str, cell_id: str) -> list:
    """Run `source` the way JupyterLab runs a cell: the execute request carries the cell's id."""
    client = kernel.blocking()
    content = {"code": textwrap.dedent(source), "silent": False, "store_history": True, "user_expressions": {},
               "allow_stdin": False, "stop_on_error": True}
    message = client.session.msg("execute_request", content, metadata={"cellId": cell_id})
    client.shell_channel.send(message)
    outputs = []
    while True:
        reply = client.get_iopub_msg(timeout=60)
        if reply["parent_header"].get("msg_id") != message["header"]["msg_id"]:
            continue
        kind = reply["msg_type"]
        if kind == "status" and reply["content"]["execution_state"] == "idle":
            return outputs
        if kind in ("stream", "display_data", "execute_result", "error"):
            outputs.append(nbformat.v4.output_from_msg(reply))


def test_rerunning_a_tool_cell_replaces_that_cells_tools(fresh):
    run_as_cell(fresh, "%%tool -g g\ndef old_name(x: int) -> int:\n    return x\ndef kept() -> int:\n    return 1",
                "cell-a")
    run_as_cell(fresh, "%%tool\ndef elsewhere() -> int:\n    return 0", "cell-b")
    assert names(fresh) == ["old_name", "kept", "elsewhere"]
    outputs = run_as_cell(fresh, "%%tool -g g\ndef new_name(x: int) -> int:\n    return x\n"
                                 "def kept() -> int:\n    return 2", "cell-a")
    assert printed_only(outputs) == "registered: new_name, kept (g); removed: old_name (no longer in this cell)\n"
    assert names(fresh) == ["kept", "elsewhere", "new_name"]  # another cell's tools stay
    # a tool another cell has since taken over is that cell's now: not removed from under it
    run_as_cell(fresh, "%%tool\ndef new_name(x: int) -> int:\n    return -x", "cell-c")
    outputs = run_as_cell(fresh, "%%tool\nvalue = 1", "cell-a")
    assert "removed its earlier tools kept" in stderr_of(outputs)
    assert names(fresh) == ["elsewhere", "new_name"]
    assert fresh.value("_registry.call('new_name', {'x': 3})") == -3


def test_without_a_cell_id_rerunning_replaces_same_names_only(fresh):
    fresh.run("%%tool\ndef first() -> int:\n    return 1")
    fresh.run("%%tool\ndef second() -> int:\n    return 2")  # no id: cannot tell it is the same cell
    assert names(fresh) == ["first", "second"]


# -- expected outcomes read as a line or two in a cell -----------------------------------------------

def _error_of(outputs: list) -> dict:
    (error,) = [output for output in outputs if output["output_type"] == "error"]
    return error


def test_a_wrong_argument_type_reads_as_one_line(listed):
    listed.fails("from nbtools import call_func\ncall_func('add', {'a': 'two'})")
    error = _error_of(listed.nb.cells[-1].outputs)
    assert error["ename"] == "ToolCallError"
    (line,) = error["traceback"]
    assert line.startswith("ToolCallError: Error calling tool 'add', argument 'a': ") and "string" in line


def _interrupt_when(kernel, code: str, started: Path) -> dict:
    """Run `code`, interrupt the kernel once `started` exists (the call is under way), return the error."""
    import time

    client = kernel.blocking()
    request = client.execute(code)
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started.exists(), "the call never started"
    kernel.manager.interrupt_kernel()
    errors = []
    while True:
        message = client.get_iopub_msg(timeout=60)
        if message["parent_header"].get("msg_id") != request:
            continue
        if message["msg_type"] == "error":
            errors.append(message["content"])
        elif message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            break
    (error,) = errors
    return error


def test_an_interrupt_during_call_func_reads_as_one_line(fresh, tmp_path):
    started = tmp_path / "started"
    fresh.run(f"""
        %%tool
        def slow() -> int:
            import time
            open({str(started)!r}, "w").close()
            time.sleep(60)
            return 1
    """)
    error = _interrupt_when(fresh, "from nbtools import call_func\ncall_func('slow', {})", started)
    assert error["traceback"] == ["KeyboardInterrupt: tool 'slow' was interrupted and did not finish"]
    assert error["ename"] == "Interrupted"


def test_an_interrupt_during_python_reads_as_one_line(fresh, tmp_path):
    started = tmp_path / "started"
    code = f"import time\nopen({str(started)!r}, 'w').close()\ntime.sleep(60)"
    error = _interrupt_when(fresh, f"from nbtools import python\npython({code!r})", started)
    assert error["traceback"] == ["KeyboardInterrupt: the code was interrupted and did not finish"]
    assert fresh.value("1 + 1") == 2  # the kernel goes on


def test_pythons_text_answer_is_shown_as_text_in_a_cell(fresh):
    outputs = fresh.run("from nbtools import python\npython('print(\"hello\")\\n1/0')")
    (result,) = [output for output in outputs if output["output_type"] == "execute_result"]
    shown = result["data"]["text/plain"]
    assert shown.startswith("hello\nTraceback (most recent call last):\n")
    assert shown.rstrip().endswith("ZeroDivisionError: division by zero") and "\\n" not in shown
    # still the string the model gets (DESIGN: python() returns the text)
    assert fresh.value("isinstance(python('print(1)'), str) and python('print(1)') == '1\\n'") is True


def test_a_tool_hiding_a_builtin_warns_and_says_how_to_keep_both(fresh):
    outputs = fresh.run("%%tool\ndef open(path: str) -> str:\n    'Open a document.'\n    return path")
    warning = stderr_of(outputs)
    assert "%%tool: warning: `open` now hides Python's builtin open() in this notebook" in warning
    assert '@tool(name="open")' in warning and "del open" in warning
    assert stdout_of(outputs) == "registered: open\n"
    fresh.run("del open")
    assert fresh.value("open is __builtins__.open if not isinstance(__builtins__, dict) else True") is True
    assert not stderr_of(fresh.run("%%tool\ndef open_file(path: str) -> str:\n    return path"))


def test_a_tool_replacing_another_cells_tool_says_so(fresh):
    run_as_cell(fresh, "%%tool\ndef twin() -> int:\n    return 1", "cell-a")
    outputs = run_as_cell(fresh, "%%tool\ndef twin() -> int:\n    return 2", "cell-b")
    assert printed_only(outputs) == ("registered: twin; replaced the earlier tool twin (registered elsewhere; "
                                     "that definition no longer runs)\n")
    again = run_as_cell(fresh, "%%tool\ndef twin() -> int:\n    return 3", "cell-b")  # its own re-run: quiet
    assert printed_only(again) == "registered: twin\n"
    fresh.run("def other_twin() -> int:\n    return 4")
    assert "%tool: replaced the earlier tool twin" in stdout_of(fresh.run("twin = other_twin\n%tool twin"))
