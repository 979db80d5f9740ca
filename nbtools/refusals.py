"""The wording of refusals: error messages are read by a model that must correct its call.

`ConversionError` carries where (a path) and what (the problem) out of the converters; the dispatch
boundary turns it into a `ToolCallError`. The rest says what a node accepts (`describe`), what
arrived (`got`), and gives advice for the common near-misses (`hint`, `did_you_mean`).

Used by dispatch (`call/`) and by the strict form's read-back (`formats.readback`); it imports only
`ir`, so both can.
"""

from __future__ import annotations

import functools
import json
import math
import re
import sys
from typing import Any, Callable, Iterable

from . import ir
from .shortening import short


# ==================================================================================================
# The internal error: where (path) and what (problem), turned into a ToolCallError at the boundary
# ==================================================================================================
class ConversionError(ValueError):
    """A value a converter refused.

    Fields: `path` (where the converter was called, e.g. the parameter name), `problem` (what was
    expected and what arrived, for a model to read), `segments` (path steps added, innermost first,
    while the error travels out of nested containers; building paths only on failure keeps the
    successful path free of string work).
    """

    def __init__(self, path: str, problem: str):
        super().__init__(problem)
        self.path = path
        self.problem = problem
        self.segments: list[str] = []

    def where(self) -> str:
        """The full argument path, like `points[2].x`."""
        full = self.path + "".join(reversed(self.segments))
        return full[1:] if full.startswith(".") else full


KEY_MAX_CHARS = 80  # a key a model invented is quoted in error text up to this length


def key_segment(key: Any) -> str:
    """The path step of an object key: `.name`, or `["odd key"]`."""
    if isinstance(key, str) and key.isidentifier() and len(key) <= KEY_MAX_CHARS:
        return "." + key
    return "[" + key_text(key) + "]"


def key_text(key: Any) -> str:
    """A key as JSON text for an error message, cut when long (keys can be as long as any string)."""
    if isinstance(key, str) and len(key) > KEY_MAX_CHARS:
        key = key[: KEY_MAX_CHARS - 3] + "..."
    return json.dumps(key, ensure_ascii=False)


def exception_text(error: BaseException, limit: int = 300) -> str:
    """`TypeName: message` of an exception, cut to `limit`; safe when its `str()` itself fails."""
    try:
        message = str(error)
    except Exception:
        message = "<its message could not be shown>"
    name = type(error).__name__
    return short(f"{name}: {message}" if message else name, limit)


# ==================================================================================================
# What a node accepts, in words: one entry per node class
# ==================================================================================================
# Strings that convert to a Python type: the words, and an example of a good one. Built on first
# need: datetime, uuid and decimal cost more to import than this whole module, and only tools with
# such parameters (which imported them already) ever need these words.
_STRING_WORDS: dict[type, tuple[str, str | None]] = {}


def _string_words(py: type) -> tuple[str, str | None] | None:
    if getattr(py, "__module__", None) not in ("datetime", "uuid", "decimal", "builtins", "re"):
        return None  # not one of the types below (they are looked up exactly)
    if not _STRING_WORDS:
        import datetime as dt
        import decimal
        import uuid

        _STRING_WORDS.update({
            dt.datetime: ("an ISO 8601 date-time string", '"2024-05-01T13:30:00"'),
            dt.date: ("an ISO 8601 date string", '"2024-05-01"'),
            dt.time: ("an ISO 8601 time string", '"13:30:00"'),
            dt.timedelta: ("an ISO 8601 duration string", '"PT1H30M" or "P2D"'),
            uuid.UUID: ("a UUID string", '"12345678-1234-5678-1234-567812345678"'),
            decimal.Decimal: ("a decimal number written as a string", '"12.50"'),
            bytes: ("a base64-encoded string", None),
            bytearray: ("a base64-encoded string", None),
            re.Pattern: ("a valid regular expression", '"^[a-z]+$"'),
        })
    return _STRING_WORDS.get(py)


def _describe_str(node: ir.Str) -> str:
    """The string's kind in words, naming its `format` (what the schema the model read says), with
    an example when the text must parse: 'an ISO 8601 date string (format "date", e.g. ...)'."""
    py = node.py
    words, example = "a string", None
    if py is not None and py is not str:
        pathlib = sys.modules.get("pathlib")  # a Path type exists only once pathlib is imported
        if pathlib is not None and isinstance(py, type) and issubclass(py, pathlib.PurePath):
            words = "a file path string"
        else:
            words, example = _string_words(py) or (words, example)
    notes = [f"format {json.dumps(short(node.format, 60), ensure_ascii=False)}"] if node.format else []
    if example:
        notes.append(f"e.g. {example}")
    return f"{words} ({', '.join(notes)})" if notes else words


def _describe_choices(node: ir.Literal | ir.Enum) -> str:
    values = [json.dumps(value, ensure_ascii=False) for value in node.values]
    if len(values) == 1:
        return values[0]
    shown = ", ".join(values[:20]) + (", ..." if len(values) > 20 else "")
    return f"one of {shown}"


def _describe_array(node: ir.Array) -> str:
    return "an array" if isinstance(node.item, ir.AnyValue) else f"an array of {plural(describe(node.item))}"


def _describe_object(node: ir.Object) -> str:
    names = ", ".join(item.name for item in node.fields[:20])
    label = f" ({node.name})" if node.name else ""
    return f"an object{label} with keys {names}" if names else f"an object{label}"


def _describe_ref(node: ir.Ref) -> str:
    kinds = ir.accepted_kinds(node) if ir.target_of(node) is not None else frozenset({"object"})
    word = "an object" if kinds == {"object"} else "an array" if kinds == {"array"} else "a value"
    return f"{word} ({node.name})" if node.name else word


def _describe_union(node: ir.Union) -> str:
    if not node.options:
        return "nothing (no value is allowed here)"
    words: list[str] = []
    for option in node.options:
        word = describe(option)
        if word not in words:
            words.append(word)
    return " or ".join(words)


_DESCRIBE: dict[type, Callable[[Any], str]] = {
    ir.AnyValue: lambda node: "any JSON value",
    ir.NoneValue: lambda node: "null",
    ir.Bool: lambda node: "true or false",
    ir.Int: lambda node: "an integer",
    ir.Float: lambda node: "a number",
    ir.Str: _describe_str,
    ir.Literal: _describe_choices,
    ir.Enum: _describe_choices,
    ir.Array: _describe_array,
    ir.Tuple: lambda node: f"an array of exactly {len(node.items)} items",
    ir.Map: lambda node: "an object",
    ir.Object: _describe_object,
    ir.Ref: _describe_ref,
    ir.Pydantic: lambda node: f"an object ({getattr(node.cls, '__name__', 'model')})",
    ir.Union: _describe_union,
}


def describe(node: ir.Node) -> str:
    """What a node accepts, in words ("an integer", "one of "a", "b"", ...)."""
    words = _DESCRIBE.get(type(node))
    return words(node) if words is not None else "a value"


def plural(words: str) -> str:
    """'an integer' -> 'integers' (good enough for the few shapes describe() produces)."""
    for article in ("an ", "a "):
        if words.startswith(article):
            rest = words[len(article):]
            head, _, tail = rest.partition(" ")
            return head + "s" + (" " + tail if tail else "")
    return words


# ==================================================================================================
# What arrived, and advice
# ==================================================================================================
def got(value: Any) -> str:
    """What arrived, in words, with a short excerpt of the value."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        value = int.__index__(value)  # an int subclass's own __str__/__abs__ are not called
        # str() of an integer over 4,300 digits raises; the bit length says how long it is
        text = str(value) if abs(value) < 10**30 else f"<about {int(value.bit_length() * 0.30103) + 1} digits>"
        return f"an integer ({text})"
    if isinstance(value, float):
        return f"a number ({value!r})" if math.isfinite(value) else f"the non-JSON number {value!r}"
    if isinstance(value, str):
        return f"a string ({json.dumps(short(value, 60), ensure_ascii=False)})"
    if isinstance(value, (list, tuple)):
        return f"an array of {len(value)} item{'s' if len(value) != 1 else ''}"
    if isinstance(value, dict):
        keys = ", ".join(json.dumps(short(str(key), 60), ensure_ascii=False) for key in list(value)[:8])
        return f"an object with keys {keys}" if keys else "an empty object"
    return f"a Python {type(value).__name__} (not a JSON value)"


_INT_TEXT = r"\s*-?\d+\s*\Z"  # compiled by `re` on first use (a refusal), not on import
# written so no two parts can match the same digits: `\d+\.?\d*` backtracks quadratically on a long
# run of digits followed by a non-digit, which a model can send in a megabyte string
_NUMBER_TEXT = r"\s*-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\s*\Z"
_HINT_MAX_CHARS = 100  # longer strings are not near-misses worth advice (and the advice quotes them)


def _number_in_quotes(text: str) -> str:
    return f"; a string, not a number: send {text.strip()} without quotes" if re.match(_NUMBER_TEXT, text) else ""


def _integer_in_quotes(text: str) -> str:
    if re.match(_INT_TEXT, text):
        return f"; a string, not an integer: send {text.strip()} without quotes"
    return _number_in_quotes(text)


def _boolean_in_quotes(text: str) -> str:
    return f"; send {text.strip().lower()} without quotes" if text.strip().lower() in ("true", "false") else ""


def _null_in_quotes(text: str) -> str:
    return "; send null without quotes" if text.strip().lower() in ("null", "none") else ""


def _array_as_text(text: str) -> str:
    return "; send the array itself, not JSON text inside a string" if text.lstrip().startswith("[") else ""


def _object_as_text(text: str) -> str:
    return "; send the object itself, not JSON text inside a string" if text.lstrip().startswith("{") else ""


# advice when a string arrived for a node of this class
_STRING_HINTS: dict[type, Callable[[str], str]] = {
    ir.Int: _integer_in_quotes, ir.Float: _number_in_quotes, ir.Bool: _boolean_in_quotes,
    ir.NoneValue: _null_in_quotes, ir.Array: _array_as_text, ir.Tuple: _array_as_text,
    ir.Object: _object_as_text, ir.Map: _object_as_text, ir.Ref: _object_as_text, ir.Pydantic: _object_as_text,
}


def hint(node: ir.Node, value: Any) -> str:
    """Advice for the common near-misses (a number in quotes, JSON text inside a string, ...)."""
    if isinstance(value, str):
        advise = _STRING_HINTS.get(type(node))
        return advise(value) if advise is not None and len(value) <= _HINT_MAX_CHARS else ""
    if isinstance(node, ir.Str):
        is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
        return f'; put it in quotes: "{value}"' if is_number else ""
    if isinstance(node, ir.Union):
        for option in node.options:
            advice = hint(option, value)
            if advice:
                return advice
    return ""


def mismatch(node: ir.Node, value: Any, path: str) -> ConversionError:
    """The error for a value of the wrong kind: what was expected, what arrived, and advice."""
    return ConversionError(path, f"expected {describe(node)}, got {got(value)}{hint(node, value)}")


def unparsable(node: ir.Str, value: str, path: str, reason: str) -> ConversionError:
    """The error for a string that does not parse as its node's type: what was expected (naming the
    format), what arrived, and the parser's reason (e.g. the regular expression's own error)."""
    return ConversionError(path, f"expected {describe(node)}, got {got(value)}: {reason}")


def did_you_mean(key: Any, names: Iterable[str]) -> str:
    """` (did you mean 'name'?)` for a key close to one of `names` (case-insensitively equal first).

    Remembered for the last few hundred (key, names): a model that got a name wrong tends to
    send the same wrong name again, and difflib costs tens of microseconds per candidate list."""
    if not isinstance(key, str):
        return ""
    return _closest(str.__str__(key), tuple(names))


@functools.lru_cache(maxsize=512)
def _closest(key: str, names: tuple[str, ...]) -> str:
    lowered = key.lower()
    folded = [name for name in names if name.lower() == lowered]
    if folded:
        return f" (did you mean {folded[0]!r}?)"
    import difflib  # only when a model got a name wrong

    close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
