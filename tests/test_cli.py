"""The `nbtools` command: `schema` and `serve` for modules, files, attributes and notebooks."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import nbformat
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from nbtools import get_schema
from nbtools.cli import main
from tests import mcp_example_tools as examples

ROOT = Path(__file__).resolve().parent.parent
DEADLINE = 60  # seconds for one command (a notebook run starts IPython)


def run_cli(*args: str, cwd: Path = ROOT, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nbtools.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=DEADLINE, input=stdin)


def write_module(folder: Path, name: str, source: str) -> Path:
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    return path


def write_notebook(path: Path, cells: list) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.cells = cells
    nbformat.write(notebook, path)
    return path


code = nbformat.v4.new_code_cell
markdown = nbformat.v4.new_markdown_cell

TOOL_CELLS = [
    markdown("# Tools for a test"),
    code("%load_ext nbtools"),
    code("rate = float(open('rate.txt').read())  # read relative to the notebook's folder\n"
         "print('noise on stdout from a cell')\n"
         "!echo noise from a shell command\n"
         "rate"),
    # Under `serve`, stdin is the stdio protocol: a cell that reads it must find it empty, or it
    # would swallow the client's `initialize` and the server would never answer.
    code("import os\n"
         "try:\n"
         "    answer = input('your name? ')\n"
         "except EOFError:\n"
         "    answer = None\n"
         "assert answer is None and os.read(0, 100) == b'', answer"),
    code("%%tool --hints read-only\n"
         "def scale(x: float,  # the number to scale\n"
         "         ) -> float:\n"
         "    'Multiply by the notebook-wide rate.'\n"
         "    print('scaling', x)  # must not reach the stdio protocol\n"
         "    return x * rate"),
    code("%%tool --group text\n"
         "def shout(text: str) -> str:\n"
         "    'Upper-case the text.'\n"
         "    return text.upper()"),
    code("def helper():  # a plain function: not a tool\n    return 1"),
]


@pytest.fixture
def tool_notebook(tmp_path: Path) -> Path:
    (tmp_path / "rate.txt").write_text("3")
    return write_notebook(tmp_path / "tools.ipynb", TOOL_CELLS)


# ------------------------------------------------------------------------------------------------
# schema: modules, attributes, files (in process)
# ------------------------------------------------------------------------------------------------
def test_schema_of_one_function_prints_one_definition(capsys):
    assert main(["schema", "tests.mcp_example_tools:add"]) == 0
    assert json.loads(capsys.readouterr().out) == get_schema(examples.add)


def test_schema_of_a_module_lists_its_functions_with_their_registered_hints(capsys):
    assert main(["schema", "tests.mcp_example_tools", "--fmt", "mcp"]) == 0
    definitions = json.loads(capsys.readouterr().out)
    assert [item["name"] for item in definitions] == ["add", "read_note", "delete_note", "stats", "divide", "greet"]
    assert definitions == examples.example_tools.schemas("mcp")  # hints kept from @tool(...)


def test_schema_of_a_registry_attribute_and_of_a_file(capsys):
    assert main(["schema", "tests/mcp_example_tools.py:example_tools", "--fmt", "openai"]) == 0
    from_file = json.loads(capsys.readouterr().out)
    assert from_file == examples.example_tools.schemas("openai")
    assert main(["schema", "tests.mcp_example_tools:example_tools", "--fmt", "gemini"]) == 0
    assert json.loads(capsys.readouterr().out) == examples.example_tools.schemas("gemini")


def test_schema_strict_and_its_refusal(tmp_path, capsys):
    write_module(tmp_path, "strict_target", '''
        def counts(words: list[str]) -> int:
            "Count words."
            return len(words)

        def tally(scores: dict[str, object]) -> int:
            "Sum the scores."
            return sum(scores.values())
    ''')
    assert main(["schema", f"{tmp_path}/strict_target.py:counts", "--fmt", "openai", "--strict"]) == 0
    definition = json.loads(capsys.readouterr().out)
    assert definition["function"]["strict"] is True
    assert main(["schema", f"{tmp_path}/strict_target.py:tally", "--fmt", "openai", "--strict"]) == 1
    error = capsys.readouterr().err
    assert "nbtools: error:" in error and "scores" in error


def test_module_output_on_import_stays_off_stdout(tmp_path, capsys):
    write_module(tmp_path, "chatty_module", '''
        print("imported!")
        def ping() -> str:
            "Say pong."
            return "pong"
    ''')
    assert main(["schema", f"{tmp_path}/chatty_module.py"]) == 0
    captured = capsys.readouterr()
    assert [item["name"] for item in json.loads(captured.out)] == ["ping"]
    assert "imported!" in captured.err


@pytest.mark.parametrize("target, message", [
    ("no_such_package.module", "no module named 'no_such_package'"),
    ("tests.mcp_example_tools:missing", "has no attribute 'missing'"),
    ("tests.mcp_example_tools:notes", "is a dict: expected a function"),
    ("tests.mcp_example_tools:Stats", "is a class: name a function, a Tool, a Registry or a list of them"),
    ("tests/does_not_exist.py", "no such file"),
    ("not a module", "is not a module name"),
    ("tests/missing.ipynb", "no such notebook"),
    ("tests/x.ipynb:name", "takes no ':name' part"),
])
def test_bad_targets_say_what_is_wrong(target, message, capsys):
    assert main(["schema", target]) == 1
    error = capsys.readouterr().err
    assert error.startswith("nbtools: error:") and message in error


def test_module_without_functions(tmp_path, capsys):
    write_module(tmp_path, "empty_module", "VALUE = 1\n")
    assert main(["schema", f"{tmp_path}/empty_module.py"]) == 1
    assert "defines no public functions" in capsys.readouterr().err


def test_usage_errors_exit_with_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([])
    assert exit_info.value.code == 2
    with pytest.raises(SystemExit) as exit_info:
        main(["schema", "tests.mcp_example_tools", "--fmt", "nonsense"])
    assert exit_info.value.code == 2


# ------------------------------------------------------------------------------------------------
# notebooks (each run in a fresh process: the embedded IPython shell is per process)
# ------------------------------------------------------------------------------------------------
def test_schema_of_a_notebook(tool_notebook):
    result = run_cli("schema", str(tool_notebook), "--fmt", "mcp", stdin="text a cell must not read\n")
    assert result.returncode == 0, result.stderr
    definitions = json.loads(result.stdout)  # nothing the cells printed is mixed in
    assert [item["name"] for item in definitions] == ["scale", "shout"]
    scale = definitions[0]
    assert scale["annotations"] == {"readOnlyHint": True}
    assert scale["inputSchema"]["properties"]["x"] == {"type": "number", "description": "the number to scale"}
    assert "noise on stdout from a cell" not in result.stdout and "noise from a shell" not in result.stdout
    assert "running" in result.stderr and "tools.ipynb" in result.stderr


def test_a_failing_cell_is_reported_with_its_position_and_source(tmp_path):
    notebook = write_notebook(tmp_path / "broken.ipynb", [
        markdown("intro"),
        code("%load_ext nbtools"),
        code("values = [1, 2]\ntotal = sum(values) / 0"),
        code("%%tool\ndef never(x: int) -> int:\n    return x"),
    ])
    result = run_cli("schema", str(notebook))
    assert result.returncode == 1
    assert result.stdout == ""
    assert "broken.ipynb, cell 3 failed: ZeroDivisionError: division by zero" in result.stderr
    assert "| total = sum(values) / 0" in result.stderr  # the cell's source
    assert "Traceback" in result.stderr  # and what it printed
    # one numbering: IPython's traceback names the same cell as the message ("In[3]"), no other number
    assert "Cell In[3], line 2" in result.stderr
    assert not re.findall(r"In ?\[(?!3\])\d+\]", result.stderr)


def test_notebook_tags_skip_and_expected_errors(tmp_path):
    skipped = code("raise SystemExit('never run')")
    skipped.metadata["tags"] = ["skip-execution"]
    expected = code("1 / 0")
    expected.metadata["tags"] = ["raises-exception"]
    notebook = write_notebook(tmp_path / "tagged.ipynb", [
        skipped, expected, code("%%tool\ndef one() -> int:\n    'One.'\n    return 1"),
    ])
    result = run_cli("schema", str(notebook))
    assert result.returncode == 0, result.stderr
    assert [item["name"] for item in json.loads(result.stdout)] == ["one"]


def test_a_failing_tool_cell_is_reported(tmp_path):
    notebook = write_notebook(tmp_path / "badtool.ipynb", [
        code("%load_ext nbtools"),
        code("%%tool\ndef broken(x: int) -> int:\n    return x +"),
    ])
    result = run_cli("schema", str(notebook))
    assert result.returncode == 1
    assert "badtool.ipynb, cell 2 failed" in result.stderr
    assert "| def broken(x: int) -> int:" in result.stderr


async def test_serve_a_notebook_over_stdio(tool_notebook):
    parameters = StdioServerParameters(command=sys.executable, args=["-m", "nbtools.cli", "serve", str(tool_notebook)],
                                       cwd=str(ROOT))
    with anyio.fail_after(DEADLINE):
        async with stdio_client(parameters, errlog=subprocess.DEVNULL) as (read_stream, write_stream):
            async with ClientSession(read_stream, write_stream) as session:
                initialized = await session.initialize()
                assert initialized.server_info.name == "nbtools:tools"
                listed = await session.list_tools()
                assert [item.name for item in listed.tools] == ["scale", "shout"]
                # the tool sees the notebook's variables, and its print() does not break the protocol
                result = await session.call_tool("scale", {"x": 2})
                assert result.structured_content == {"result": 6.0}
                result = await session.call_tool("shout", {"text": "hi"})
                assert result.structured_content == {"result": "HI"}
                with pytest.raises(MCPError) as unknown:  # defined by the notebook, but not a tool: -32602
                    await session.call_tool("helper", {})
                assert unknown.value.error.code == -32602


def test_serve_reports_a_failing_notebook_and_exits(tmp_path):
    notebook = write_notebook(tmp_path / "broken.ipynb", [code("import no_such_module_here")])
    result = run_cli("serve", str(notebook))
    assert result.returncode == 1
    assert "cell 1 failed: ModuleNotFoundError" in result.stderr


def test_a_reader_that_closes_the_pipe_early_gets_no_error_message():
    """`nbtools schema MODULE | head -1`: the reader leaves before the JSON is written."""
    process = subprocess.Popen([sys.executable, "-m", "nbtools.cli", "schema", "json"], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    process.stdout.close()  # before the command has imported anything, so its first write fails
    try:
        _, errors = process.communicate(timeout=DEADLINE)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 1
    assert "Broken pipe" not in errors and "Traceback" not in errors, errors


def test_installed_console_script():
    script = Path(sys.executable).parent / "nbtools"
    if not script.exists():
        pytest.skip("the nbtools console script is not installed in this environment")
    result = subprocess.run([str(script), "schema", "tests.mcp_example_tools:add", "--fmt", "anthropic"],
                            cwd=ROOT, capture_output=True, text=True, timeout=DEADLINE)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == get_schema(examples.add, "anthropic")


def test_serve_refuses_a_target_without_tools(tmp_path):
    notebook = write_notebook(tmp_path / "empty.ipynb", [code("x = 1")])
    result = run_cli("serve", str(notebook))
    assert result.returncode == 1
    assert "defines no tools, resources or prompts: nothing to serve" in result.stderr


def test_serve_http_on_port_0_says_which_port_it_chose():
    from nbtools.mcp import connect

    process = subprocess.Popen([sys.executable, "-m", "nbtools.cli", "serve", "tests.mcp_example_tools:add",
                                "--http", "0"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
    import threading

    watchdog = threading.Timer(DEADLINE, process.kill)  # never wait forever for the announcement
    watchdog.start()
    try:
        seen = []
        for line in process.stderr:  # ends if the server exits (or the watchdog kills it)
            seen.append(line)
            if "serving MCP at " in line:
                break
        announced = "".join(seen)
        url = announced.rsplit("serving MCP at ", 1)[-1].split()[0]
        assert url.startswith("http://127.0.0.1:") and not url.startswith("http://127.0.0.1:0/"), announced
        with connect(url, timeout=DEADLINE) as remote:
            assert remote[0].fn(2, 3) == 5
    finally:
        watchdog.cancel()
        process.terminate()
        process.wait(timeout=DEADLINE)
        process.stderr.close()


@pytest.mark.parametrize("port", ["70000", "-1", "eighty"])
def test_serve_refuses_a_port_that_is_not_a_port(port, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", "tests.mcp_example_tools:add", "--http", port])
    assert exit_info.value.code == 2
    assert f"argument --http: '{port}' is not a TCP port" in capsys.readouterr().err


@pytest.mark.parametrize("file_name", ["uuid.py", "mcp.py", "json.py"])
def test_a_target_file_named_like_a_module_hides_nothing(tmp_path, file_name):
    """`nbtools serve mcp.py` must not make `import mcp` (or nbtools' own `import uuid`) find the user's file."""
    write_module(tmp_path, file_name.removesuffix(".py"), '''
        from helper_next_to_it import suffix  # a sibling module still imports

        def shout(text: str) -> str:
            "Upper-case the text."
            return text.upper() + suffix()
    ''')
    write_module(tmp_path, "helper_next_to_it", '''
        def suffix() -> str:
            return "!"
    ''')
    result = run_cli("schema", str(tmp_path / file_name))
    assert result.returncode == 0, result.stderr
    assert [item["name"] for item in json.loads(result.stdout)] == ["shout"]
    from nbtools.mcp import connect

    with connect([sys.executable, "-m", "nbtools.cli", "serve", str(tmp_path / file_name)], cwd=str(ROOT),
                 timeout=DEADLINE, errlog=subprocess.DEVNULL) as remote:
        assert remote[0].fn("hi") == "HI!"


def test_a_stdio_client_that_leaves_early_ends_the_server_quietly():
    """A client that closes the pipe before reading a reply: exit status 0 and no traceback."""
    process = subprocess.Popen([sys.executable, "-m", "nbtools.cli", "serve", "tests.mcp_example_tools:example_tools"],
                               cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)

    def send(message: dict) -> None:
        process.stdin.write(json.dumps(message) + "\n")
        process.stdin.flush()

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "leaver", "version": "1"}}})
        assert '"id":1' in process.stdout.readline()
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        process.stdout.close()  # gone before the answer to the next request is written
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "greet", "arguments": {"name": "x"}}})
        import time

        time.sleep(1)  # let the server try to answer into the closed pipe
        process.stdin.close()
        assert process.wait(timeout=DEADLINE) == 0
        errors = process.stderr.read()
        assert "Traceback" not in errors and "error" not in errors, errors
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stderr.close()


# ------------------------------------------------------------------------------------------------
# the first hour in a terminal: every message says what is wrong and what is accepted
# ------------------------------------------------------------------------------------------------
def test_version(capsys):
    import nbtools

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"nbtools {nbtools.__version__}"


def test_a_file_that_is_no_module_nor_notebook_says_what_is_accepted(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "readme.txt").write_text("hello\n")
    assert main(["schema", "readme.txt"]) == 1
    error = capsys.readouterr().err
    assert "'readme.txt' is neither a Python module (.py) nor a notebook (.ipynb)" in error
    assert "TARGET is package.module[:name], path/to/file.py[:name] or path/to/notebook.ipynb" in error
    assert "no module named" not in error


def test_a_missing_attribute_of_a_file_names_the_file_not_an_internal_module(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_module(tmp_path, "mymod", "def f():\n    'F.'\n")
    # a file named like an installed module is imported under an internal name: never shown
    write_module(tmp_path, "json", "def g():\n    'G.'\n")
    assert main(["schema", "mymod.py:nothere"]) == 1
    assert main(["schema", "json.py:nothere"]) == 1
    error = capsys.readouterr().err
    assert "'mymod.py:nothere': mymod.py has no attribute 'nothere'; its functions: f" in error
    assert "'json.py:nothere': json.py has no attribute 'nothere'; its functions: g" in error
    assert "nbtools_target" not in error


@pytest.mark.parametrize("text", ["{}", "[]", '{"cells": 3}', "not json"])
def test_json_that_is_not_a_notebook_says_so(tmp_path, capsys, text):
    (tmp_path / "empty.ipynb").write_text(text)
    assert main(["schema", str(tmp_path / "empty.ipynb")]) == 1
    error = capsys.readouterr().err
    assert "is not a Jupyter notebook:" in error
    assert "'cells'" not in error.replace('"cells"', "")  # not a bare KeyError


def test_one_undescribable_function_is_skipped_with_a_warning_naming_it(tmp_path, capsys):
    write_module(tmp_path, "mixed", """
        def good(a: int) -> int:
            "Fine."
            return a

        def bad(x: "NoSuchType") -> int:
            "Cannot be described."
            return 1

        def also_good() -> str:
            "Fine too."
            return ""
    """)
    assert main(["schema", str(tmp_path / "mixed.py")]) == 0
    captured = capsys.readouterr()
    assert [item["name"] for item in json.loads(captured.out)] == ["good", "also_good"]
    assert "nbtools: warning: 'bad' skipped (not a tool): function 'bad', parameter 'x'" in captured.err
    # naming the bad one itself still fails, and so does a module of nothing but bad ones
    assert main(["schema", f"{tmp_path / 'mixed.py'}:bad"]) == 1
    write_module(tmp_path, "allbad", "def bad(x: 'NoSuchType') -> int:\n    return 1\n")
    assert main(["schema", str(tmp_path / "allbad.py")]) == 1
    assert "NoSuchType" in capsys.readouterr().err


def test_bench_with_an_unknown_section_lists_the_sections_and_fails():
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "bench.py"), "shcema"], capture_output=True,
                            text=True, timeout=DEADLINE)
    assert result.returncode == 2
    assert "unknown section 'shcema'; the sections are: " in result.stderr and "schema" in result.stderr
    assert "running" not in result.stderr


_WITHOUT_MCP = "import sys; sys.modules['mcp'] = None  # as after `pip install nbtools-llm` without extras\n"


def test_serve_without_the_mcp_extra_says_what_to_install(tmp_path):
    write_module(tmp_path, "one", "def ping() -> str:\n    'Ping.'\n    return 'pong'\n")
    result = subprocess.run([sys.executable, "-c", _WITHOUT_MCP + "from nbtools.cli import main\n"
                             "sys.exit(main(['serve', 'one.py']))"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=DEADLINE)
    assert result.returncode == 1
    from nbtools.extras import install_line

    assert "nbtools serve needs the 'mcp' package, which a plain install leaves out; install it with: " \
           f"{install_line('mcp')}" in result.stderr
    assert "nbtools-llm[" not in result.stderr  # not published: that command finds nothing
    assert "Traceback" not in result.stderr


def test_magic_serve_and_connect_without_the_mcp_extra_say_what_to_install():
    script = _WITHOUT_MCP + textwrap.dedent("""
        from IPython.core.interactiveshell import InteractiveShell
        import nbtools.mcp
        from nbtools.magics import MagicError
        shell = InteractiveShell.instance()
        shell.run_line_magic("load_ext", "nbtools")
        try:
            shell.run_line_magic("tools", "--serve")
        except MagicError as error:
            print("magic:", error)
        try:
            nbtools.mcp.connect("http://127.0.0.1:1/mcp")
        except ModuleNotFoundError as error:
            print("connect:", error)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=DEADLINE)
    assert "magic: %tools --serve needs the 'mcp' package" in result.stdout, result.stderr
    assert "connect: nbtools.mcp.connect() needs the 'mcp' package" in result.stdout
    from nbtools.extras import install_line

    assert result.stdout.count(install_line("mcp")) == 2


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs a POSIX terminal (pty)")
def test_ctrl_c_ends_a_stdio_server_in_a_terminal(tmp_path):
    import pty
    import select
    import time

    write_module(tmp_path, "one", "def ping() -> str:\n    'Ping.'\n    return 'pong'\n")
    pid, terminal = pty.fork()  # the server gets a real terminal: Ctrl+C there is what a person types
    if pid == 0:
        os.chdir(tmp_path)
        # A person's terminal delivers SIGINT; a background job (CI's runner may be one) starts
        # with it ignored, and an ignored signal stays ignored across exec.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.execv(sys.executable, [sys.executable, "-m", "nbtools.cli", "serve", "one.py"])
    seen = b""

    def read_until(predicate, seconds: float) -> None:
        nonlocal seen
        end = time.monotonic() + seconds
        while time.monotonic() < end and not predicate():
            if select.select([terminal], [], [], 0.1)[0]:
                try:
                    seen += os.read(terminal, 4096)
                except OSError:
                    return

    try:
        read_until(lambda: b"serving MCP over stdio" in seen, DEADLINE)
        assert b"Ctrl+C or Ctrl+D ends it" in seen, seen
        os.write(terminal, b"\x03")
        end = time.monotonic() + 10
        status = (0, 0)
        while time.monotonic() < end and status == (0, 0):
            read_until(lambda: False, 0.2)
            status = os.waitpid(pid, os.WNOHANG)
        assert status != (0, 0), "one Ctrl+C did not end the server"
        assert os.waitstatus_to_exitcode(status[1]) == 130
        assert b"interrupted: MCP server stopped" in seen
    finally:
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(terminal)


_WITHOUT_SDKS = ("import sys\nfor name in ('openai', 'anthropic', 'google.genai', 'mcp'):\n"
                 "    sys.modules[name] = None  # a plain `pip install nbtools-llm`\n")


@pytest.mark.parametrize("notebook", ["00_quickstart.ipynb", "04_magics.ipynb"])
def test_the_projects_notebooks_give_their_tools_with_a_plain_install(notebook):
    """README's main-job command runs without the dev extra (the quickstart's recorded replies need
    the openai/anthropic SDKs and are tagged nbtools-skip), and 04_magics runs under the command
    without an approval prompt nobody can click (no AttributeError, no "Task exception was never
    retrieved")."""
    script = _WITHOUT_SDKS + f"from nbtools.cli import main\nsys.exit(main(['schema', 'notebooks/{notebook}', '--fmt', 'openai']))"
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                            timeout=DEADLINE * 2)
    assert result.returncode == 0, result.stderr
    names = [item["function"]["name"] for item in json.loads(result.stdout)]
    assert names and "Traceback" not in result.stderr and "never retrieved" not in result.stderr
    assert {"00_quickstart.ipynb": "weather", "04_magics.ipynb": "delete_note"}[notebook] in names


def test_cells_tagged_nbtools_skip_are_not_run(tmp_path):
    skipped = code("raise SystemExit('needs a live front end')")
    skipped.metadata["tags"] = ["nbtools-skip"]
    notebook = write_notebook(tmp_path / "tagged.ipynb", [
        code("%load_ext nbtools"), skipped, code("%%tool\ndef kept() -> int:\n    return 1")])
    result = run_cli("schema", str(notebook))
    assert result.returncode == 0, result.stderr
    assert [item["name"] for item in json.loads(result.stdout)] == ["kept"]


def _listening_socket() -> tuple[object, int]:
    import socket

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    return taken, taken.getsockname()[1]


def test_a_port_in_use_is_reported_before_the_notebook_runs(tmp_path):
    marker = tmp_path / "ran.txt"
    notebook = write_notebook(tmp_path / "slow.ipynb", [
        code("%load_ext nbtools"),
        code(f"open({str(marker)!r}, 'w').write('the notebook ran')"),
        code("%%tool\ndef ping() -> str:\n    return 'pong'")])
    taken, port = _listening_socket()
    with taken:
        result = run_cli("serve", str(notebook), "--http", str(port))
    assert result.returncode == 1
    assert f"cannot serve MCP on 127.0.0.1:{port}: Address already in use" in result.stderr
    assert "`--http 0` for a free one" in result.stderr and "[Errno" not in result.stderr
    assert not marker.exists(), "the notebook ran before the port was checked"


def test_tools_serve_on_a_port_in_use_says_how_to_get_a_free_one():
    from IPython.core.error import UsageError

    from nbtools import Registry
    from nbtools.magics import serve_magic

    taken, port = _listening_socket()
    with taken, pytest.raises(UsageError) as refused:
        serve_magic(Registry(), port, False)
    assert "another program listens there" in str(refused.value)
    assert "`%tools --serve` with no PORT picks a free one" in str(refused.value)


def test_a_folder_target_says_it_is_a_folder_and_what_to_pass(tmp_path):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    write_notebook(folder / "a.ipynb", [code("x = 1")])
    result = run_cli("serve", "notebooks", cwd=tmp_path)
    assert result.returncode == 1
    assert "'notebooks' is a folder: pass one notebook (.ipynb) or Python file (.py) in it" in result.stderr
    assert "notebooks/a.ipynb" in result.stderr and "defines no public functions" not in result.stderr
    package = tmp_path / "pkg"  # a package folder is a module target, as before
    package.mkdir()
    (package / "__init__.py").write_text("def ping() -> str:\n    'Ping.'\n    return 'pong'\n")
    result = run_cli("schema", "pkg", cwd=tmp_path)
    assert result.returncode == 0 and json.loads(result.stdout)[0]["name"] == "ping"


# -- README's install lines resolve ----------------------------------------------------------------

def _readme_pip_targets() -> list[tuple[bool, str]]:
    """(editable, target) of every `pip install` in README's shell blocks."""
    import shlex

    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", readme, re.S)
    targets = []
    for block in blocks:
        for command in re.split(r"&&|\n", block):
            words = shlex.split(command.strip()) if "pip install" in command else []
            if not words:
                continue
            rest = words[words.index("install") + 1:]
            editable = "-e" in rest
            targets += [(editable, word) for word in rest if not word.startswith("-")]
    return targets


def test_every_install_line_in_the_readme_resolves():
    import tomllib

    targets = _readme_pip_targets()
    assert (True, ".[mcp]") in targets and (True, ".[dev]") in targets, targets
    assert not any(target.startswith(("nbtools-llm", "nbtools[")) or target == "nbtools" for _, target in targets)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for editable, target in targets:
        path, _, extras = target.partition("[")
        assert (ROOT / path / "pyproject.toml").is_file(), target  # a local checkout, not a PyPI name
        for extra in extras.rstrip("]").split(","):
            assert not extra or extra in project["optional-dependencies"], (target, extra)
    # pip itself resolves the first one (metadata only, nothing installed): offline when the build
    # backend is installed here, else from the configured index.
    build_isolation = [] if importlib.util.find_spec("hatchling") else ["--use-pep517"]
    result = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", *build_isolation,
                             *(["--no-build-isolation", "--no-index"] if not build_isolation else []),
                             "-e", ".[mcp]"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    if result.returncode != 0 and "hatchling" in result.stdout + result.stderr and build_isolation:
        pytest.skip("pip could not fetch the build backend (hatchling) to read the checkout's metadata: "
                    "install it (`pip install hatchling`) to check this offline")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Would install {project['name']}-{project['version']}" in result.stdout


def test_the_missing_extra_command_installs_what_the_extra_declares():
    import tomllib

    from nbtools.extras import EXTRAS, install_line

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for extra, (_module, _what, requirements) in EXTRAS.items():
        assert list(requirements) == declared[extra]
        line = install_line(extra)
        assert line.startswith("pip install ") and "nbtools-llm[" not in line
        # here nbtools is installed from this checkout, so the command names it (with the extra)
        assert line.endswith(f"[{extra}]'") and Path(line.split("'")[1].rsplit("[", 1)[0]).resolve() == ROOT


HEAP_TOOLS = '''
import gc
import weakref


def frozen() -> int:
    """How many objects the cyclic collector leaves out while this server serves."""
    return gc.get_freeze_count()


def cycle_freed() -> bool:
    """Whether a reference cycle this call makes is freed by a collection."""
    class Node:
        pass

    node = Node()
    node.loop = node
    alive = weakref.ref(node)
    del node
    gc.collect()
    return alive() is None
'''


async def test_serve_leaves_its_start_up_objects_out_of_the_collector_and_still_frees_what_calls_make(tmp_path):
    # bench_serve: a full collector pass over the start-up heap in the middle of serving cost the
    # calls of that moment 3-8 % of the server's CPU; frozen, the pass never comes (blocking.py)
    module = write_module(tmp_path, "heaptools", HEAP_TOOLS)
    parameters = StdioServerParameters(command=sys.executable, args=["-m", "nbtools.cli", "serve", str(module)],
                                       cwd=str(ROOT))
    with anyio.fail_after(DEADLINE):
        async with stdio_client(parameters, errlog=subprocess.DEVNULL) as (read_stream, write_stream):
            async with ClientSession(read_stream, write_stream) as session:
                await session.initialize()
                frozen = (await session.call_tool("frozen", {})).structured_content["result"]
                assert frozen > 10_000, frozen  # imports, the registry, the SDK's server
                assert (await session.call_tool("cycle_freed", {})).structured_content == {"result": True}


def test_the_heap_is_frozen_only_while_serving_and_a_freeze_of_the_process_own_is_left_alone():
    import gc

    from nbtools.mcp.blocking import _start_up_left_to_refcounting

    assert gc.get_freeze_count() == 0
    with _start_up_left_to_refcounting():
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0  # the process's objects are the collector's again
    gc.freeze()
    try:
        own = gc.get_freeze_count()
        with _start_up_left_to_refcounting():
            pass
        # not undone by the server (an unfreeze makes it 0); on 3.13 the count is of the frozen objects
        # still alive, so one freed meanwhile lowers it a little
        assert own - 1000 < gc.get_freeze_count() <= own
    finally:
        gc.unfreeze()
