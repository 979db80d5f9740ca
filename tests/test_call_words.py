"""Refusal wording for strings with a `format`: the model read `format: "regex"` (or date, uuid, ...) in
the schema, so the refusal names that format and the parser's reason, never "expected a string, got a
string"."""

from __future__ import annotations

import datetime as dt
import json
import pathlib
import re
import uuid

import pytest

from nbtools import call_func
from nbtools.errors import ToolCallError
from nbtools.tool import Tool


def refusal(annotation: object, value: object) -> ToolCallError:
    def f(value):  # the annotation is set below, so one helper serves every type
        return value

    f.__annotations__ = {"value": annotation}
    with pytest.raises(ToolCallError) as info:
        call_func("f", {"value": value}, [f])
    assert info.value.argument == "value"
    return info.value


def test_an_invalid_regular_expression_says_so_with_the_re_error():
    error = refusal(re.Pattern, "(unclosed")
    try:
        re.compile("(unclosed")
    except re.error as expected:
        reason = str(expected)
    assert error.problem == ('expected a valid regular expression (format "regex", e.g. "^[a-z]+$"), '
                             f'got a string ("(unclosed"): {reason}')
    assert "expected a string" not in error.problem
    # a wrong kind of value names the format too
    assert refusal(re.Pattern, 5).problem.startswith('expected a valid regular expression (format "regex"')


@pytest.mark.parametrize("annotation, value, words, fmt, reason", [
    (dt.date, "2024-13-01", "an ISO 8601 date string", "date", "month must be in 1..12"),
    (dt.datetime, "next tuesday", "an ISO 8601 date-time string", "date-time", "Invalid isoformat string"),
    (dt.time, "25:00", "an ISO 8601 time string", "time", "hour must be in 0..23"),
    (dt.timedelta, "P1Y", "an ISO 8601 duration string", "duration", "years and months have no fixed length"),
    (uuid.UUID, "not-a-uuid", "a UUID string", "uuid", "badly formed hexadecimal UUID string"),
    (pathlib.Path, "a\x00b", "a file path string", "path", "NUL"),
])
def test_each_converted_format_is_named_with_the_reason(annotation, value, words, fmt, reason):
    problem = refusal(annotation, value).problem
    assert problem.startswith(f'expected {words} (format "{fmt}"'), problem
    assert f"got a string ({json.dumps(value)}): " in problem
    assert reason in problem.split("): ", 1)[1]
    # a value of the wrong JSON kind names the format as well (here an integer, and null for Optional)
    assert f'(format "{fmt}"' in refusal(annotation, 7).problem
    assert f'(format "{fmt}"' in refusal(annotation | None, 7).problem


def test_a_schema_read_string_format_is_named():
    tool = Tool.from_schema("mail", "", {"type": "object", "required": ["to"],
                                         "properties": {"to": {"type": "string", "format": "email"}}},
                            lambda **kw: kw)
    with pytest.raises(ToolCallError, match=r'expected a string \(format "email"\), got an integer \(1\)'):
        tool.call({"to": 1})
    # no format: the plain words, unchanged
    assert refusal(str, None).problem == "expected a string, got null"
