"""The `python` code-interpreter tool: values, output, errors, namespaces, async and isolated runs,
its schema, and in a kernel. Against the real interpreter in this process, child processes for
isolated runs, and the session's shared kernel (tests/conftest.py).

Each weakness of the usual `python` tool (toolslm's) has a test here named after it, or in
test_interp_timeouts.py for those about time-outs. The process-wide patches are tested in
test_interp_patches.py, attacks in test_interp_attacks.py.
"""

from __future__ import annotations

import asyncio
import inspect
import linecache
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from kernels import run_in_kernel
from test_interp_timeouts import timed

from nbtools.interp import ExecResult, python, python_async, run_code

pytestmark = pytest.mark.usefixtures("signals_left_as_found")

module_level_answer = 41  # read by test_default_namespace_is_the_callers_globals


# --------------------------------------------------------------------------------------------
# The last expression's value (IPython rules) and what else comes back
# --------------------------------------------------------------------------------------------


def test_value_of_last_expression():
    assert python("x = 6\nx * 7", {}) == 42


def test_result_with_an_empty_namespace():
    # toolslm's `glb or caller's globals` treats an empty dict as "no namespace".
    namespace: dict = {}
    assert python("a = 2\na + 3", namespace) == 5
    assert namespace == {"a": 2}


def test_no_stale_result_after_a_statement():
    namespace: dict = {}
    assert python("1 + 1", namespace) == 2
    assert python("y = 5", namespace) is None
    assert python("import math", namespace) is None


def test_no_name_leaks_into_the_namespace():
    namespace: dict = {}
    python("x = 1\nx + 1", namespace)
    python("print('hello')\nx", namespace)
    python("1/0", namespace)
    assert namespace == {"x": 1}  # no _result, no _, no __builtins__ left behind


def test_builtins_of_a_real_module_namespace_are_kept():
    namespace = {"__builtins__": __builtins__, "__name__": "scratch"}
    python("z = len('abc')", namespace)
    assert namespace["z"] == 3 and namespace["__builtins__"] is __builtins__


def test_separate_locals_mapping():
    globals_ns: dict = {"g": 10}
    locals_ns: dict = {}
    assert python("l = g + 1\nl * 2", globals_ns, locals_ns) == 22
    assert locals_ns == {"l": 11} and globals_ns == {"g": 10}


def test_default_namespace_is_the_callers_globals():
    assert python("module_level_answer + 1") == 42
    python("module_level_from_python = 'set by python()'")
    try:
        assert globals()["module_level_from_python"] == "set by python()"
    finally:
        del globals()["module_level_from_python"]


@pytest.mark.parametrize("code", [
    "x;",
    "x;  # a comment after the semicolon",
    "x ;\n\n# trailing comment lines\n",
    "(x +\n 0);",
    "y = 1; x;",
])
def test_trailing_semicolon_silences_the_value(code):
    assert python(code, {"x": 3}) is None


@pytest.mark.parametrize("code, expected", [
    ("x  # no semicolon; just a comment", 3),
    ("y = 1; x", 3),
    ("';'", ";"),
    ("x\n# ;", 3),
    ("(x\n)", 3),
])
def test_semicolons_that_do_not_silence(code, expected):
    assert python(code, {"x": 3}) == expected


def test_none_value_is_no_value():
    result = run_code("None", {})
    assert result.value is None and result.output == "" and result.error is None


def test_last_statement_that_is_not_an_expression():
    assert python("if True:\n    5", {}) is None
    assert python("for i in range(3):\n    i", {}) is None


def test_printed_output_alone():
    assert python("print('hello')", {}) == "hello\n"


def test_printed_output_kept_when_there_is_a_value():
    # toolslm drops what was printed whenever there is a value.
    assert python("print('working...')\n6 * 7", {}) == "working...\n42"
    assert python("print('no newline', end='')\n'v'", {}) == "no newline\n'v'"


def test_stderr_is_part_of_the_output_in_order():
    result = run_code("import sys\nprint('out')\nprint('err', file=sys.stderr)\nprint('out again')", {})
    assert result.stdout == "out\nout again\n"
    assert result.stderr == "err\n"
    assert result.output == "out\nerr\nout again\n"
    assert python("import sys\nprint('err', file=sys.stderr)\n1", {}) == "err\n1"


def test_warnings_are_part_of_the_output():
    # In a subprocess: pytest records warnings itself instead of printing them.
    code = ("from nbtools.interp import run_code\n"
            "print(repr(run_code('import warnings\\nwarnings.warn(\"careful\")', {}).stderr))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "UserWarning: careful" in out


def test_stdout_is_restored_after_the_run():
    before = sys.stdout, sys.stderr
    python("print('x')", {})
    python("1/0", {})
    assert (sys.stdout, sys.stderr) == before


def test_streams_the_code_replaces_are_put_back():
    # In a kernel, `sys.stdout = sys.__stdout__` sent every later cell's output to the terminal.
    stdout, stderr = sys.stdout, sys.stderr
    code = ("import io, sys\nsys.stdout = io.StringIO()\nsys.stderr = sys.__stderr__\n"
            "print('kept by the code')\nsys.stdout.getvalue()")
    assert python(code, {}, timeout=5) == "kept by the code\n"
    assert sys.stdout is stdout and sys.stderr is stderr


def test_multiline_definitions_then_a_call():
    code = textwrap.dedent("""
        def area(width, height):
            '''Area of a rectangle.'''
            return width * height

        class Box:
            def __init__(self, size):
                self.size = size

        area(3, 4) + Box(2).size
    """)
    namespace: dict = {}
    assert python(code, namespace) == 14
    assert namespace["area"](2, 5) == 10


def test_top_level_code_with_comprehensions_and_lambdas():
    assert python("squares = [n * n for n in range(4)]\nsorted(squares, key=lambda v: -v)", {}) == [9, 4, 1, 0]


def test_exec_result_fields():
    result = run_code("print('a')\n2 + 2", {}, timeout=5)
    assert isinstance(result, ExecResult)
    assert (result.value, result.stdout, result.stderr, result.error, result.timed_out) == (4, "a\n", "", None, False)
    assert 0 <= result.duration < 5
    assert not hasattr(result, "__dict__")  # a slots record: no stray attributes


def test_value_with_a_broken_repr_after_output():
    code = "class Bad:\n    def __repr__(self):\n        raise RuntimeError('no repr')\nprint('p')\nBad()"
    text = python(code, {})
    assert text.startswith("p\n<repr of Bad failed: RuntimeError: no repr>")


# --------------------------------------------------------------------------------------------
# Errors as text for the model
# --------------------------------------------------------------------------------------------


def test_error_is_a_short_traceback_with_the_codes_lines():
    text = python("def f(a):\n    return 1 / a\n\nf(0)", {})
    assert text.startswith("Traceback (most recent call last):")
    assert "f(0)" in text and "return 1 / a" in text  # the submitted lines are shown
    assert text.endswith("ZeroDivisionError: division by zero")
    assert "interp.py" not in text and os.path.join("nbtools", "interp") not in text  # none of the machinery


def test_frames_of_the_interpreters_own_files_are_not_shown():
    # The machinery spans several files (the stream routers, the Thread.start patch): none is shown.
    text = python("import sys\nsys.stdout.write(b'bytes')", {})
    assert text.splitlines()[-1] == "TypeError: write() argument must be str, not bytes"
    assert "capture.py" not in text and text.count("File ") == 1
    text = python("import threading\nt = threading.Thread(target=int)\nt.start(); t.join()\nt.start()", {})
    assert "process.py" not in text and "threading.py" in text
    assert text.endswith("RuntimeError: threads can only be started once")


def test_library_frames_are_counted_not_shown():
    text = python("import json\njson.loads('{bad')", {})
    assert "json.loads('{bad')" in text
    assert "frames in library code" in text or "frame in library code" in text
    assert text.splitlines()[-1].startswith("json.decoder.JSONDecodeError")


def test_chained_exception_is_one_line_not_a_second_traceback():
    text = python("try:\n    {}['key']\nexcept KeyError:\n    raise ValueError('no key')", {})
    assert text.count("Traceback") == 1
    assert text.endswith("  [raised while handling KeyError: 'key']\nValueError: no key")
    text = python("try:\n    {}['key']\nexcept KeyError:\n    raise ValueError('no key') from None", {})
    assert "KeyError" not in text


def test_deep_recursion_gives_a_short_traceback():
    # One formatted frame per level would hand the model ~1000 identical frames (75 kB).
    text = python("def down(n):\n    return down(n + 1)\ndown(0)", {})
    assert len(text) < 1000
    assert "[Previous line repeated" in text and text.endswith("RecursionError: maximum recursion depth exceeded")
    text = python("def ping(n):\n    return pong(n)\ndef pong(n):\n    return ping(n)\nping(0)", {})
    assert len(text) < 3000 and "more frames ...]" in text
    assert text.splitlines()[1:3] == ['  File "' + text.split('"')[1] + '", line 5, in <module>', "    ping(0)"]
    assert text.endswith("RecursionError: maximum recursion depth exceeded")


def test_printed_output_comes_before_the_error():
    text = python("print('step 1')\nraise ValueError('bad input')", {})
    assert text.startswith("step 1\nTraceback")
    assert text.endswith("ValueError: bad input")


def test_syntax_error():
    result = run_code("x = (1,\ny = 2", {})
    assert result.error is not None and "SyntaxError" in result.error
    assert result.value is None and isinstance(result.exception, SyntaxError)
    assert "line 1" in result.error
    assert python("def f(:\n    pass", {}).splitlines()[-1].startswith("SyntaxError")


def test_indentation_error_on_a_leading_space():
    assert "IndentationError" in python(" 1 + 1", {})


def test_system_exit_is_reported_not_raised():
    assert python("import sys\nsys.exit(3)", {}).endswith("SystemExit: 3")
    assert "SystemExit" in python("exit()", {"exit": sys.exit})


def test_bad_arguments_come_back_as_text_from_python():
    assert python("1", {}, timeout=-1).startswith("Error: timeout must be a positive number")
    assert python("1", {}, timeout=float("nan")).startswith("Error: timeout must be a positive")
    assert python(123, {}).startswith("Error: code must be a str")  # type: ignore[arg-type]


def test_bad_arguments_raise_from_run_code():
    with pytest.raises(ValueError, match="positive"):
        run_code("1", {}, timeout=0)
    with pytest.raises(TypeError, match="glb must be a dict"):
        run_code("1", [])  # type: ignore[arg-type]


def test_no_time_limit():
    assert run_code("sum(range(1000))", {}, timeout=None).value == 499500
    assert run_code("1", {}, timeout=float("inf")).value == 1


# --------------------------------------------------------------------------------------------
# Source in linecache: inspection of functions the code defines
# --------------------------------------------------------------------------------------------


def test_defined_functions_can_be_introspected():
    namespace: dict = {}
    python("def scale(x: float,  # the value\n          k: int = 2):\n    'Scale x by k.'\n    return x * k", namespace)
    source = inspect.getsource(namespace["scale"])
    assert source.startswith("def scale(x: float,")
    from nbtools import get_schema

    schema = get_schema(namespace["scale"])
    assert schema["description"] == "Scale x by k."
    assert schema["parameters"]["properties"]["x"] == {"type": "number", "description": "the value"}


def test_each_run_has_its_own_source_name():
    first, second = {}, {}
    python("def f():\n    return 1", first)
    python("def f():\n    return 2  # another body", second)
    assert "return 1" in inspect.getsource(first["f"])
    assert "another body" in inspect.getsource(second["f"])


def test_source_of_plain_expressions_is_not_kept():
    before = len(linecache.cache)
    for index in range(50):
        python(f"{index} + 1", {})
    assert len(linecache.cache) <= before + 1


# --------------------------------------------------------------------------------------------
# Output is bounded: the start and the end are kept, the middle is counted
# --------------------------------------------------------------------------------------------


def test_output_of_threads_the_code_starts_is_captured():
    code = ("import threading\nfrom concurrent.futures import ThreadPoolExecutor\n"
            "def work(item):\n    print('worked on', item)\n    return item * 2\n"
            "worker = threading.Thread(target=print, args=('from a thread',))\n"
            "worker.start(); worker.join()\n"
            "with ThreadPoolExecutor(2) as pool:\n    doubled = list(pool.map(work, [1, 2, 3]))\n"
            "doubled")
    result = run_code(code, {}, timeout=10)
    assert result.error is None and result.value == [2, 4, 6]
    lines = result.stdout.splitlines()
    assert lines[0] == "from a thread"
    assert sorted(lines[1:]) == ["worked on 1", "worked on 2", "worked on 3"]
    # outside a run a thread is started untouched
    outside = threading.Thread(target=lambda: None)
    outside.start()
    outside.join()
    assert "run" not in vars(outside)


@pytest.mark.parametrize("isolated", [False, True])
def test_many_threads_printing_at_once_lose_nothing(small_output_limit, isolated):
    # 4 threads x 50 lines of 'tN-MM\n' (6 characters): 1200 characters, of which 20 + 10 are kept
    # and the rest counted; the count must be exact even though the threads write concurrently.
    code = ("import threading\ndef chatter(name):\n    for number in range(50):\n"
            "        print(f't{name}-{number:02}')\n"
            "threads = [threading.Thread(target=chatter, args=(name,)) for name in range(4)]\n"
            "for thread in threads: thread.start()\nfor thread in threads: thread.join()")
    result = run_code(code, {}, timeout=10, isolated=isolated)
    assert result.error is None
    head, marker, tail = result.stdout.partition(
        "\n[... 1,170 characters of output not kept ...]\n")
    assert marker and len(head) == 20 and len(tail) == 10


def test_a_thread_that_outlives_the_run_prints_where_it_would_without_nbtools(capsys):
    namespace: dict = {}
    code = ("import threading\nrelease = threading.Event()\n"
            "def later():\n    release.wait(10)\n    print('after the run')\n"
            "straggler = threading.Thread(target=later)\nstraggler.start()")
    result = run_code(code, namespace, timeout=10)
    namespace["release"].set()
    namespace["straggler"].join(10)
    assert result.stdout == ""
    assert "after the run" in capsys.readouterr().out


def test_stdin_is_empty_for_the_code_and_untouched_for_everyone_else(monkeypatch):
    import io

    waiting = io.StringIO("the next protocol message\n")
    monkeypatch.setattr(sys, "stdin", waiting)
    text = python("answer = input('your name? ')", {}, timeout=10)
    assert text.startswith("your name? \nTraceback") and text.endswith("EOFError: EOF when reading a line")
    assert python("import sys\n[sys.stdin.read(), sys.stdin.readline(), sys.stdin.readlines(), list(sys.stdin)]",
                  {}, timeout=10) == ["", "", [], []]
    assert sys.stdin is waiting and waiting.readline() == "the next protocol message\n"  # nothing was taken


def test_input_in_a_process_whose_stdin_is_a_pipe_reads_nothing_from_it():
    # As on an MCP stdio server: the code's input() must not swallow what the client sends.
    script = ("from nbtools.interp import python\nimport sys\n"
              "print(python('input()', {}).splitlines()[-1])\nprint(sys.stdin.read().strip())")
    finished = subprocess.run([sys.executable, "-c", script], input="client message\n", capture_output=True,
                              text=True, timeout=60)
    assert finished.stdout.splitlines() == ["EOFError: EOF when reading a line", "client message"], finished.stderr


@pytest.fixture
def small_output_limit(monkeypatch):
    import nbtools.interp as interp

    monkeypatch.setattr(interp, "OUTPUT_HEAD", 20)
    monkeypatch.setattr(interp, "OUTPUT_TAIL", 10)


@pytest.mark.parametrize("isolated", [False, True])
def test_long_output_keeps_its_start_and_end_and_counts_the_rest(small_output_limit, isolated):
    # 30 lines of 'line NN\n' (8 characters each): 240 characters, 20 + 10 kept, 210 dropped.
    code = "for number in range(30):\n    print(f'line {number:02}')"
    result = run_code(code, {}, isolated=isolated, timeout=10)
    assert result.stdout == ("line 00\nline 01\nline"
                             "\n[... 210 characters of output not kept ...]\n"
                             "8\nline 29\n")
    assert result.output == result.stdout and result.stderr == ""


def test_dropped_output_is_counted_per_stream(small_output_limit):
    code = ("import sys\nprint('o' * 15)\nsys.stderr.write('e' * 15)\n"
            "print('O' * 40)\nsys.stderr.write('E' * 40)")
    result = run_code(code, {}, timeout=10)
    # Head: 16 stdout characters ('o' * 15 + newline) then 4 of stderr; the tail keeps 10 'E'.
    # Dropped: 11 'e' + 41 of stdout + 30 'E' = 82, of which 41 were stdout and 41 stderr.
    assert result.output == "o" * 15 + "\neeee" + "\n[... 82 characters of output not kept ...]\n" + "E" * 10
    assert result.stdout == "o" * 15 + "\n" + "\n[... 41 characters of output not kept ...]\n"
    assert result.stderr == "eeee" + "\n[... 41 characters of output not kept ...]\n" + "E" * 10


def test_one_write_longer_than_the_whole_limit(small_output_limit):
    result = run_code("print('x' * 100, end='')", {}, timeout=10)
    assert result.stdout == "x" * 20 + "\n[... 70 characters of output not kept ...]\n" + "x" * 10


def test_printing_until_the_timeout_keeps_memory_bounded(monkeypatch):
    # A run that prints as fast as it can for a while keeps the first lines and the last ones, within
    # the limits. Limits of 20,000 characters each, so that even a slow, loaded machine prints past
    # them within the time-out (with the real 500,000 each, a loaded CI machine sometimes did not).
    import nbtools.interp as interp

    monkeypatch.setattr(interp, "OUTPUT_HEAD", 20_000)
    monkeypatch.setattr(interp, "OUTPUT_TAIL", 20_000)

    # One f-string per line: `print('line', number)` writes its parts separately, and the time-out
    # may fall between them, leaving a last line cut short.
    code = "number = 0\nwhile True:\n    number += 1\n    print(f'line {number}')"
    namespace: dict = {}
    result = run_code(code, namespace, timeout=1.0)
    assert result.timed_out
    limit = interp.OUTPUT_HEAD + interp.OUTPUT_TAIL
    assert len(result.stdout) <= limit + 100
    assert result.stdout.startswith("line 1\nline 2\n")
    assert "characters of output not kept" in result.stdout
    last_printed = result.stdout.rstrip("\n").rsplit("\n", 1)[-1]
    assert last_printed in (f"line {namespace['number']}", f"line {namespace['number'] - 1}")
    text = python(code, {}, timeout=0.3)
    assert text.endswith("and was stopped") and len(text) <= limit + 1000


def test_displays_kept_are_bounded(monkeypatch):
    import nbtools.interp as interp
    from nbtools.interp.capture import Capture

    capture = Capture()
    monkeypatch.setattr(interp, "DISPLAYS_KEPT", 3)
    for number in range(5):
        capture.add_display({"text/plain": str(number)})
    assert [bundle["text/plain"] for bundle in capture.displays] == ["0", "1", "2"]


# --------------------------------------------------------------------------------------------
# Async: top-level await
# --------------------------------------------------------------------------------------------


async def test_top_level_await():
    namespace: dict = {}
    assert await python_async("import asyncio\nawait asyncio.sleep(0.01)\nanswer = 42\nanswer", namespace) == 42
    assert namespace["answer"] == 42
    assert await python_async("await asyncio.sleep(0, result='last')", namespace) == "last"


async def test_async_output_and_errors():
    assert await python_async("import asyncio\nprint('a')\nawait asyncio.sleep(0)\nprint('b')", {}) == "a\nb\n"
    text = await python_async("import asyncio\nawait asyncio.sleep(0)\n1/0", {})
    assert text.endswith("ZeroDivisionError: division by zero")


async def test_async_timeout_while_awaiting():
    result, elapsed = await _timed_async("import asyncio\nawait asyncio.sleep(10)", timeout=0.1)
    assert result.timed_out and elapsed < 1
    assert "asyncio.sleep(10)" in result.error


async def test_async_timeout_while_computing():
    result, elapsed = await _timed_async("import asyncio\nawait asyncio.sleep(0)\nwhile True: pass", timeout=0.1)
    assert result.timed_out and elapsed < 1


async def test_async_timeout_cannot_be_swallowed():
    code = "import asyncio\nwhile True:\n    try:\n        await asyncio.sleep(10)\n    except:\n        pass"
    result, elapsed = await _timed_async(code, timeout=0.1)
    assert result.timed_out and elapsed < 1


async def test_async_cancellation_from_outside_propagates():
    task = asyncio.ensure_future(python_async("import asyncio\nawait asyncio.sleep(10)", {}))
    await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_concurrent_async_runs_keep_their_output():
    code = "import asyncio\nfor i in range(5):\n    print(tag, i)\n    await asyncio.sleep(0.001)"
    first, second = await asyncio.gather(python_async(code, {"tag": "x"}), python_async(code, {"tag": "y"}))
    assert first == "".join(f"x {i}\n" for i in range(5))
    assert second == "".join(f"y {i}\n" for i in range(5))


async def _timed_async(code, timeout):
    from nbtools.interp import run_code_async

    started = time.monotonic()
    result = await run_code_async(code, {}, timeout=timeout)
    return result, time.monotonic() - started


# --------------------------------------------------------------------------------------------
# Isolated mode
# --------------------------------------------------------------------------------------------


def test_isolated_run_returns_value_and_output():
    result = run_code("print('child')\nsum(range(10))", {}, isolated=True, timeout=10)
    assert (result.value, result.stdout, result.error) == (45, "child\n", None)


def test_isolated_run_stops_a_loop_inside_c():
    result, elapsed = timed(run_code, "sum(range(10 ** 12))", {}, isolated=True, timeout=0.2)
    assert result.timed_out and elapsed < 2
    assert "killed" in result.error


def test_isolated_run_keeps_what_was_printed_before_the_kill():
    text = python("print('started')\nsum(range(10 ** 12))", {}, isolated=True, timeout=0.2)
    assert text == "started\nTimeoutError: the code did not finish within 0.2 s; its process was killed"


def test_isolated_python_loop_stops_itself_with_a_traceback():
    result, elapsed = timed(run_code, "print('a')\nwhile True:\n    pass", {}, isolated=True, timeout=0.1)
    assert result.timed_out and elapsed < 1 and result.output == "a\n"
    assert "while True:" in result.error and result.error.endswith("and was stopped")


def test_isolated_run_leaves_the_namespace_alone():
    namespace = {"x": 1}
    assert python("x = 99\nx", namespace, isolated=True) == 99
    assert namespace == {"x": 1}


def test_isolated_run_reports_errors_and_unpicklable_values():
    assert python("1/0", {}, isolated=True).endswith("ZeroDivisionError: division by zero")
    result = run_code("import threading\nthreading.Lock()", {}, isolated=True)
    assert repr(result.value).startswith("<unlocked _thread.lock object")


def test_isolated_value_that_can_be_neither_pickled_nor_shown():
    # Its broken __repr__ used to kill the child: "ended without a result (exit status 1)".
    class Opaque:
        def __reduce__(self):
            raise TypeError("not picklable")

        def __repr__(self):
            raise ValueError("no repr either")

    result = run_code("opaque", {"opaque": Opaque()}, isolated=True, timeout=10)
    assert result.error is None
    assert repr(result.value) == "<repr of Opaque failed: ValueError: no repr either>"
    interrupted = run_code("print('before')\nraise KeyboardInterrupt", {}, isolated=True, timeout=10)
    # the code's own KeyboardInterrupt is an error with its traceback, as in-process
    assert interrupted.error.endswith("raise KeyboardInterrupt\nKeyboardInterrupt")
    assert interrupted.output == "before\n"


def test_isolated_child_that_dies():
    result = run_code("import os\nprint('last words')\nos._exit(7)", {}, isolated=True)
    assert "ended without a result (exit status 7)" in result.error
    assert result.output == "last words\n" and not result.timed_out


# --------------------------------------------------------------------------------------------
# The tool's schema
# --------------------------------------------------------------------------------------------


def test_namespaces_are_hidden_from_the_model():
    assert set(python.__tool_exclude__) == {"glb", "loc", "isolated", "allow"}
    assert set(python_async.__tool_exclude__) == {"glb", "loc", "allow"}


def test_schema_exposes_code_and_timeout_only():
    from nbtools import get_schema

    schema = get_schema(python)
    assert schema["name"] == "python"
    assert set(schema["parameters"]["properties"]) == {"code", "timeout"}
    assert schema["parameters"]["required"] == ["code"]
    assert schema["parameters"]["properties"]["timeout"]["type"] == "number"
    assert "last expression" in schema["description"]
    assert set(get_schema(python_async)["parameters"]["properties"]) == {"code", "timeout"}


def test_python_as_a_registered_tool_called_with_json():
    from nbtools import Registry

    tools = Registry()
    tools.add(python)
    assert tools.call("python", '{"code": "sum(range(5))", "timeout": 0.5}') == 10


def test_import_is_light():
    code = ("import sys, nbtools.interp\n"
            "print(sorted(m for m in ('IPython', 'ipykernel', 'pydantic', 'ctypes') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# --------------------------------------------------------------------------------------------
# In a kernel: user_ns is the default namespace, display() is captured as text
# --------------------------------------------------------------------------------------------


@pytest.fixture
def kernel(real_kernel):
    """The session's shared kernel (tests/conftest.py) as a jupyter_client client; `parent` is its manager."""
    client = real_kernel.blocking()
    status, outputs = run_in_kernel(client, "from nbtools.interp import python")
    assert status == "ok", outputs
    return client


def test_kernel_user_ns_is_the_default_namespace(kernel):
    status, outputs = run_in_kernel(kernel, "x = 5\npython('x*2')")
    assert status == "ok"
    assert outputs == [("execute_result", {"data": {"text/plain": "10"}, "metadata": {},
                                           "execution_count": outputs[0][1]["execution_count"]})]
    status, outputs = run_in_kernel(kernel, "python('y = x + 1'); print(y)")
    assert outputs == [("stream", {"name": "stdout", "text": "6\n"})]


def test_kernel_display_output_is_captured_as_text(kernel):
    code = ("result = python('from IPython.display import display, Markdown\\n'\n"
            "                'print(1)\\ndisplay(Markdown(\"**bold**\"))\\ndisplay([1, 2])\\n3')\n"
            "print(repr(result))")
    status, outputs = run_in_kernel(kernel, code)
    assert status == "ok"
    assert outputs == [("stream", {"name": "stdout", "text": repr("1\n**bold**\n[1, 2]\n3") + "\n"})]


def test_kernel_streams_and_publisher_are_put_back(kernel):
    code = ("import sys, signal\npython('print(1)', timeout=1)\npython('while True: pass', timeout=0.05)\n"
            "print(type(sys.stdout).__name__, type(get_ipython().display_pub).__name__,\n"
            "      signal.getsignal(signal.SIGALRM), signal.getitimer(signal.ITIMER_REAL))")
    status, outputs = run_in_kernel(kernel, code)
    assert outputs == [("stream", {"name": "stdout",
                                   "text": "OutStream ZMQDisplayPublisher 0 (0.0, 0.0)\n"})]


def test_kernel_interrupt_stops_a_run_and_the_kernel_survives(kernel):
    results = []
    running = threading.Event()

    def note_start(kind, content):
        if kind == "stream" and "running" in content.get("text", ""):
            running.set()

    # An interrupt that arrives before the cell starts is ignored by ipykernel: wait for the cell's
    # own word that it runs, then a moment more so the interrupt lands inside python().
    code = "print('running', flush=True)\npython('import time\\ntime.sleep(30)', timeout=60)"
    worker = threading.Thread(target=lambda: results.append(run_in_kernel(kernel, code, note_start)))
    worker.start()
    assert running.wait(30), "the cell did not start"
    time.sleep(0.3)
    kernel.parent.interrupt_kernel()  # what the notebook's "interrupt" button does: SIGINT
    worker.join(30)
    status, outputs = results[0]
    assert status == "error" and outputs[-1][1]["ename"] == "KeyboardInterrupt"
    status, outputs = run_in_kernel(kernel, "python('40 + 2')")
    assert status == "ok" and outputs[0][1]["data"]["text/plain"] == "42"
