"""%tools and the registered tools in use, in a real kernel (the session's shared kernel, cells run as a
notebook runs them): the table in text and HTML, glob and group filters, --fmt definitions, the panel
and what a saved notebook keeps of it, actions that do not combine; calls from cells through the
registry (never an unregistered global); reloading and unloading the extension; errors and
interrupts in a call read as one line. Registering tools (%%tool, %tool, %untool) is in test_magics.py.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import nbformat
import pytest
from test_magics import fresh, names  # noqa: F401 - `fresh` is a fixture, used by name

from kernels import stdout_of, text_of


# -- %tools: the registered tools, listed ------------------------------------------------------------

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


# -- calls from cells, and the extension reloaded and unloaded ---------------------------------------

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
