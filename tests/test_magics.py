"""Registering tools with the magics in a real kernel (the session's shared kernel, cells run as a
notebook runs them): %%tool cells, %tool lines, %untool, re-running a cell, what registering warns
about; plus the pure helpers they are built from. %tools, calls from cells and the extension's
reload and unload are in test_magics_tools.py."""

from __future__ import annotations

import json
import textwrap

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


# -- what registering warns about: a builtin hidden, another cell's tool replaced ----------------------

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
