"""One error hierarchy: `NbtoolsError` above every error nbtools raises on purpose."""

from __future__ import annotations

import pickle

import pytest

import nbtools
from nbtools.errors import NbtoolsError, NotebookError, SchemaError, TargetError, ToolCallError


def test_every_error_is_an_nbtools_error_and_keeps_its_standard_base():
    assert nbtools.NbtoolsError is NbtoolsError and "NbtoolsError" in nbtools.__all__
    for error in (SchemaError("f", "p", "why"), ToolCallError("t", "why"), TargetError("why"),
                  NotebookError("nb.ipynb", 2, "1/0", ZeroDivisionError("division by zero"))):
        assert isinstance(error, NbtoolsError)
    # code written before the hierarchy keeps catching what it caught
    with pytest.raises(TypeError, match="function 'f', parameter 'p': why"):
        raise SchemaError("f", "p", "why")
    assert not isinstance(ToolCallError("t", "why"), TypeError)


def test_the_command_line_errors_are_the_same_classes():
    from nbtools import cli

    assert cli.TargetError is TargetError and cli.NotebookError is NotebookError
    assert str(NotebookError("nb.ipynb", 2, "1/0", ZeroDivisionError("division by zero"))) == \
        "nb.ipynb, cell 2 failed: ZeroDivisionError: division by zero"


def test_tool_call_error_text_is_built_from_its_fields_once():
    error = ToolCallError("t", "expected an integer", "it's", {"type": "object"})
    assert str(error) == 'Error calling tool \'t\', argument "it\'s": expected an integer\n' \
                         'Parameters schema: {"type":"object"}'
    assert str(ToolCallError(None, "no name")) == "Error: no name"
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is ToolCallError and str(copy) == str(error)


def test_tool_call_error_record_round_trip():
    error = ToolCallError("t", "expected an integer", "points[2].x", {"type": "object"})
    assert error.record() == {"tool": "t", "problem": "expected an integer", "argument": "points[2].x",
                              "schema": {"type": "object"}}
    assert ToolCallError("t", "p").record() == {"tool": "t", "problem": "p"}
    rebuilt = ToolCallError.from_record(error.record(), "t")
    assert str(rebuilt) == str(error) and rebuilt.argument == "points[2].x"
    # the name comes from the caller; anything malformed is not a record
    assert ToolCallError.from_record({"tool": "other", "problem": "p"}, "t").tool == "t"
    for malformed in (None, "text", [], {}, {"problem": 1}, {"problem": "p", "argument": 3},
                      {"problem": "p", "schema": ["not", "a", "schema"]}):
        assert ToolCallError.from_record(malformed, "t") is None


def test_a_refusal_record_says_so_and_comes_back_a_refusal():
    from nbtools.errors import CallRefused

    refused = CallRefused("wipe", "refused: the user denied this call")
    assert refused.record() == {"tool": "wipe", "problem": "refused: the user denied this call", "refused": True}
    rebuilt = ToolCallError.from_record(refused.record(), "wipe")
    assert type(rebuilt) is CallRefused and str(rebuilt) == str(refused)
    assert type(ToolCallError.from_record({"problem": "p", "refused": "yes"}, "t")) is ToolCallError


# -- how the errors read in a cell (IPython shows `_render_traceback_` instead of a traceback) --------

def test_every_nbtools_error_reads_as_its_message_in_a_cell():
    from nbtools.errors import MagicError, NbtoolsError, SchemaError, TargetError, ToolCallError

    refused = ToolCallError("add", "expected an integer, got the string \"2\"", "a", {"type": "object"})
    assert refused._render_traceback_() == [
        "ToolCallError: Error calling tool 'add', argument 'a': expected an integer, got the string \"2\""]
    assert "Parameters schema" in str(refused)  # the model still gets the schema
    assert SchemaError("f", "x", "no type")._render_traceback_() == ["SchemaError: function 'f', parameter 'x': no type"]
    assert TargetError("'x': no such file")._render_traceback_() == ["TargetError: 'x': no such file"]
    assert MagicError("%tools: bad\nsecond line")._render_traceback_() == ["%tools: bad", "second line"]
    assert all(issubclass(kind, NbtoolsError) for kind in (SchemaError, TargetError, ToolCallError, MagicError))


def test_an_interrupt_is_a_keyboard_interrupt_that_reads_as_one_line():
    import pickle

    from nbtools.errors import Interrupted
    from nbtools.interp.result import RealInterrupt

    stop = Interrupted("tool 'slow'")
    assert isinstance(stop, KeyboardInterrupt) and not isinstance(stop, Exception)
    assert stop._render_traceback_() == ["KeyboardInterrupt: tool 'slow' was interrupted and did not finish"]
    assert pickle.loads(pickle.dumps(stop)).what == "tool 'slow'"
    assert RealInterrupt()._render_traceback_() == ["KeyboardInterrupt: the code was interrupted and did not finish"]


def test_a_persons_interrupt_of_a_tool_call_ends_it_with_interrupted(sigint_raises):
    import os
    import signal
    import threading
    import time

    from nbtools import Registry, Tool
    from nbtools.errors import Interrupted

    def slow() -> int:
        time.sleep(30)
        return 1

    for call in (lambda: Tool.from_function(slow).call({}), lambda: Registry([slow]).call("slow", {})):
        timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        with pytest.raises(Interrupted) as stopped:
            call()
        timer.join()
        assert stopped.value._render_traceback_() == ["KeyboardInterrupt: tool 'slow' was interrupted and did not finish"]
