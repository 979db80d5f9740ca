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
