"""Dispatch: run a model's tool calls against the right Python functions, validated and confined.

The path of one call (every step happens before the function runs, except the last two):

1. **Resolve** the name in an explicit namespace (a Registry, a list of callables/Tools, or a dict),
   by exact key only: no attribute paths, no dunders, no globals, no builtins/classes/modules found
   in a dict. The Tool holds the object registered, so rebinding a name later changes nothing.
2. **Parse** the arguments: a dict, or JSON text (size limit, no NaN/Infinity, no duplicate keys).
3. **Check limits** (nesting depth, container sizes, string lengths, integer range).
4. **Convert** each argument to its declared Python type with a converter compiled once per Tool
   from the intermediate form (`ir`): a fixed list of conversions, never an arbitrary annotation
   called with model data. A JSON string is never turned into a number or a boolean.
5. **Approve** tools with the `destructive` hint (refuse, or ask a callback).
6. **Call**, awaiting coroutines; the tool's own exception becomes a `ToolCallError` whose text
   names the exception and the tool's line, chained from the original.
7. **Serialise** the result for the model (`result_text`) and, for a whole model reply, build the
   provider's tool-result message (`run_tool_calls`).

Conversion decisions (applied everywhere, also inside lists, dicts and nested objects):

* integer: JSON integers; a float with no fractional part (`5.0`) is accepted as `5`, because
  JSON Schema's "integer" means exactly that; `true`/`false` and `"5"` are refused.
* number: integers and floats (integers become floats). In a union, a JSON integer tries an `int`
  option first and a JSON float a `float` option first (`int | float` keeps `2.0` a float).
* string-borne types: `datetime`/`date`/`time` from ISO 8601 text, `timedelta` from an ISO 8601
  duration (`P1DT2H`, `PT0.5S`; years and months are refused: they have no fixed length), `UUID`,
  `Decimal` (written like a JSON number, finite), `Path` (no NUL), `bytes` from base64.
* `Literal`/`Enum`: exact JSON equality (`true` is not `1`; `1.0` equals `1`).
* mapping keys are JSON strings; for `int` keys the canonical decimal form (`"12"`, not `"012"`) is
  converted, the one place digits in a string become a number.
* objects are closed unless the type says otherwise; missing optional parameters are not passed,
  so the function's own default applies. A null for an optional parameter that cannot be null
  means "left out" too (OpenAI's strict mode sends exactly that); for a required one it is refused.

Limits (`registry.Limits`, per registry): `max_bytes` bounds JSON text, and a dict's JSON size when
the arguments hold free-form values (for fixed types every string and array is bounded anyway);
`max_depth`, `max_string`, `max_items` and `max_int` apply everywhere, before any conversion of
free-form values and during the conversion of typed ones.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import datetime as dt
import decimal
import functools
import inspect
import json
import linecache
import math
import os
import pathlib
import re
import sys
import threading
import types as pytypes
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Iterable

from . import ir
from .errors import SchemaError, ToolCallError
from .registry import DEFAULT_LIMITS, Limits, Registry
from .tool import Tool
from .values import to_json

# the module, not its `registry` attribute (nbtools/__init__ shadows the submodule's name)
_registry_module = sys.modules[Registry.__module__]

Converter = Callable[[Any, str], Any]
"""A compiled converter: `(json_value, path) -> python_value`; raises `ConversionError`."""

__all__ = [
    "compile_converter", "ConversionError", "CallPlan", "call_plan", "parse_arguments",
    "call_tool", "acall_tool", "mk_ns", "resolve_tool", "call_func", "call_func_async",
    "run_tool_calls", "arun_tool_calls", "result_text", "jsonable",
]


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


def _key_segment(key: Any) -> str:
    if isinstance(key, str) and key.isidentifier() and len(key) <= _KEY_MAX_CHARS:
        return "." + key
    return "[" + _key_text(key) + "]"


_KEY_MAX_CHARS = 80  # a key a model invented is quoted in error text up to this length


def _key_text(key: Any) -> str:
    """A key as JSON text for an error message, cut when long (keys can be as long as any string)."""
    if isinstance(key, str) and len(key) > _KEY_MAX_CHARS:
        key = key[: _KEY_MAX_CHARS - 3] + "..."
    return json.dumps(key, ensure_ascii=False)


# ==================================================================================================
# Words for types and values (error messages are read by a model that must correct its call)
# ==================================================================================================
_STRING_WORDS: dict[type, str] = {
    dt.datetime: 'an ISO 8601 date-time string (e.g. "2024-05-01T13:30:00")',
    dt.date: 'an ISO 8601 date string (e.g. "2024-05-01")',
    dt.time: 'an ISO 8601 time string (e.g. "13:30:00")',
    dt.timedelta: 'an ISO 8601 duration string (e.g. "PT1H30M" or "P2D")',
    uuid.UUID: 'a UUID string (e.g. "12345678-1234-5678-1234-567812345678")',
    decimal.Decimal: 'a decimal number written as a string (e.g. "12.50")',
    bytes: "a base64-encoded string",
    bytearray: "a base64-encoded string",
}


def describe(node: ir.Node) -> str:
    """What a node accepts, in words ("an integer", "one of "a", "b"", ...)."""
    if isinstance(node, ir.AnyValue):
        return "any JSON value"
    if isinstance(node, ir.NoneValue):
        return "null"
    if isinstance(node, ir.Bool):
        return "true or false"
    if isinstance(node, ir.Int):
        return "an integer"
    if isinstance(node, ir.Float):
        return "a number"
    if isinstance(node, ir.Str):
        if isinstance(node.py, type) and issubclass(node.py, pathlib.PurePath):
            return "a file path string"
        return _STRING_WORDS.get(node.py, "a string")
    if isinstance(node, (ir.Literal, ir.Enum)):
        values = [json.dumps(value, ensure_ascii=False) for value in node.values]
        if len(values) == 1:
            return values[0]
        shown = ", ".join(values[:20]) + (", ..." if len(values) > 20 else "")
        return f"one of {shown}"
    if isinstance(node, ir.Array):
        if isinstance(node.item, ir.AnyValue):
            return "an array"
        return f"an array of {_plural(describe(node.item))}"
    if isinstance(node, ir.Tuple):
        return f"an array of exactly {len(node.items)} items"
    if isinstance(node, ir.Map):
        return "an object"
    if isinstance(node, ir.Object):
        names = ", ".join(item.name for item in node.fields[:20])
        label = f" ({node.name})" if node.name else ""
        return f"an object{label} with keys {names}" if names else f"an object{label}"
    if isinstance(node, ir.Ref):
        target = node.target() if callable(node.target) else None
        kinds = ir.accepted_kinds(node) if target is not None else frozenset({"object"})
        word = "an object" if kinds == {"object"} else "an array" if kinds == {"array"} else "a value"
        return f"{word} ({node.name})" if node.name else word
    if isinstance(node, ir.Pydantic):
        return f"an object ({getattr(node.cls, '__name__', 'model')})"
    if isinstance(node, ir.Union):
        if not node.options:
            return "nothing (no value is allowed here)"
        words: list[str] = []
        for option in node.options:
            word = describe(option)
            if word not in words:
                words.append(word)
        return " or ".join(words)
    return "a value"


def _plural(words: str) -> str:
    """'an integer' -> 'integers' (good enough for the few shapes describe() produces)."""
    for article in ("an ", "a "):
        if words.startswith(article):
            rest = words[len(article):]
            head, _, tail = rest.partition(" ")
            return head + "s" + (" " + tail if tail else "")
    return words


def got(value: Any) -> str:
    """What arrived, in words, with a short excerpt of the value."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        text = str(value) if abs(value) < 10**30 else f"<{len(str(abs(value)))} digits>"
        return f"an integer ({text})"
    if isinstance(value, float):
        return f"a number ({value!r})" if math.isfinite(value) else f"the non-JSON number {value!r}"
    if isinstance(value, str):
        return f"a string ({json.dumps(_short(value, 60), ensure_ascii=False)})"
    if isinstance(value, (list, tuple)):
        return f"an array of {len(value)} item{'s' if len(value) != 1 else ''}"
    if isinstance(value, dict):
        keys = ", ".join(json.dumps(str(key), ensure_ascii=False) for key in list(value)[:8])
        return f"an object with keys {keys}" if keys else "an empty object"
    return f"a Python {type(value).__name__} (not a JSON value)"


_INT_TEXT = re.compile(r"\s*-?\d+\s*\Z")
# written so no two parts can match the same digits: `\d+\.?\d*` backtracks quadratically on a long
# run of digits followed by a non-digit, which a model can send in a megabyte string
_NUMBER_TEXT = re.compile(r"\s*-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\s*\Z")
_HINT_MAX_CHARS = 100  # longer strings are not near-misses worth advice (and the advice quotes them)


def _hint(node: ir.Node, value: Any) -> str:
    """Advice for the common near-misses (a number in quotes, JSON text inside a string, ...)."""
    if isinstance(value, str):
        if len(value) > _HINT_MAX_CHARS:
            return ""
        if isinstance(node, ir.Int) and _INT_TEXT.match(value):
            return f"; a string, not an integer: send {value.strip()} without quotes"
        if isinstance(node, (ir.Int, ir.Float)) and _NUMBER_TEXT.match(value):
            return f"; a string, not a number: send {value.strip()} without quotes"
        if isinstance(node, ir.Bool) and value.strip().lower() in ("true", "false"):
            return f"; send {value.strip().lower()} without quotes"
        if isinstance(node, ir.NoneValue) and value.strip().lower() in ("null", "none"):
            return "; send null without quotes"
        stripped = value.lstrip()
        if isinstance(node, (ir.Array, ir.Tuple)) and stripped.startswith("["):
            return "; send the array itself, not JSON text inside a string"
        if isinstance(node, (ir.Object, ir.Map, ir.Ref, ir.Pydantic)) and stripped.startswith("{"):
            return "; send the object itself, not JSON text inside a string"
    elif isinstance(node, ir.Str) and isinstance(value, (int, float)) and not isinstance(value, bool):
        return f'; put it in quotes: "{value}"'
    elif isinstance(node, ir.Union):
        for option in node.options:
            advice = _hint(option, value)
            if advice:
                return advice
    return ""


def _mismatch(node: ir.Node, value: Any, path: str) -> ConversionError:
    return ConversionError(path, f"expected {describe(node)}, got {got(value)}{_hint(node, value)}")


# ==================================================================================================
# String-borne conversions (a fixed list)
# ==================================================================================================
# the language of the schema's pattern, written to match in linear time (see _NUMBER_TEXT)
_DECIMAL_TEXT = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\Z")
_DECIMAL_MAX_EXPONENT = 4300  # the same bound Python puts on int <-> str digits


def _parse_decimal(text: str) -> decimal.Decimal:
    if not _DECIMAL_TEXT.match(text):
        raise ValueError("write it like a JSON number, e.g. 12.50 or -3e2")
    number = decimal.Decimal(text)
    if abs(number.adjusted()) > _DECIMAL_MAX_EXPONENT:
        raise ValueError(f"the exponent is beyond +-{_DECIMAL_MAX_EXPONENT}")
    return number


_DURATION = re.compile(
    r"(?P<sign>[-+])?P(?!\Z)"
    r"(?:(?P<years>\d+(?:[.,]\d+)?)Y)?(?:(?P<months>\d+(?:[.,]\d+)?)M)?"
    r"(?:(?P<weeks>\d+(?:[.,]\d+)?)W)?(?:(?P<days>\d+(?:[.,]\d+)?)D)?"
    r"(?:T(?!\Z)(?:(?P<hours>\d+(?:[.,]\d+)?)H)?(?:(?P<minutes>\d+(?:[.,]\d+)?)M)?"
    r"(?:(?P<seconds>\d+(?:[.,]\d+)?)S)?)?\Z"
)


def parse_duration(text: str) -> dt.timedelta:
    """An ISO 8601 duration (`P1DT2H30M`, `PT0.5S`, `P2W`, `-P1D`) as a timedelta.

    Years and months are refused: their length depends on the calendar, a timedelta has none.
    """
    match = _DURATION.match(text.strip().upper())
    if match is None:
        raise ValueError("not an ISO 8601 duration")
    parts = match.groupdict()
    if parts["years"] or parts["months"]:
        raise ValueError("years and months have no fixed length; use weeks, days, hours, minutes, seconds")

    def amount(name: str) -> float:
        raw = parts[name]
        return float(raw.replace(",", ".")) if raw else 0.0

    delta = dt.timedelta(weeks=amount("weeks"), days=amount("days"), hours=amount("hours"),
                         minutes=amount("minutes"), seconds=amount("seconds"))
    return -delta if parts["sign"] == "-" else delta


def _parse_base64(text: str) -> bytes:
    return base64.b64decode(text, validate=True)


def _parse_path(cls: type) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        if "\x00" in text:
            raise ValueError("a path cannot contain NUL characters")
        return cls(text)

    return parse


_STRING_PARSERS: dict[type, Callable[[str], Any]] = {
    dt.datetime: dt.datetime.fromisoformat,
    dt.date: dt.date.fromisoformat,
    dt.time: dt.time.fromisoformat,
    dt.timedelta: parse_duration,
    uuid.UUID: uuid.UUID,
    decimal.Decimal: _parse_decimal,
    bytes: _parse_base64,
    bytearray: lambda text: bytearray(_parse_base64(text)),
}
_PARSE_FAILURES = (ValueError, TypeError, OverflowError, ArithmeticError, binascii.Error)


# ==================================================================================================
# Exact-membership sets for Literal and Enum (JSON equality: 1 == 1.0, true != 1)
# ==================================================================================================
_NOT_FOUND = object()


class _Choices:
    """The allowed JSON scalars of a Literal/Enum, mapped to what the function receives."""

    __slots__ = ("by_str", "by_number", "by_bool", "null")

    def __init__(self) -> None:
        self.by_str: dict[str, Any] = {}
        self.by_number: dict[Any, Any] = {}
        self.by_bool: dict[bool, Any] = {}
        self.null: Any = _NOT_FOUND

    def add(self, json_value: Any, result: Any) -> None:
        if json_value is None:
            if self.null is _NOT_FOUND:
                self.null = result
        elif isinstance(json_value, bool):
            self.by_bool.setdefault(json_value, result)
        elif isinstance(json_value, (int, float)):
            self.by_number.setdefault(json_value, result)
        elif isinstance(json_value, str):
            self.by_str.setdefault(json_value, result)

    def find(self, value: Any) -> Any:
        kind = type(value)
        if kind is str:
            return self.by_str.get(value, _NOT_FOUND)
        if kind is bool:
            return self.by_bool.get(value, _NOT_FOUND)
        if kind is int or kind is float:
            return self.by_number.get(value, _NOT_FOUND)
        if value is None:
            return self.null
        return _NOT_FOUND


def _json_equal_key(value: Any) -> Any:
    """A hashable key under which equal JSON values collide (for uniqueItems)."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float)):
        return ("number", value)
    if isinstance(value, (str, type(None))):
        return ("scalar", value)
    return ("json", json.dumps(value, sort_keys=True, default=str))


# ==================================================================================================
# Constraint keywords (checked on the raw JSON value, after its type was accepted)
# ==================================================================================================
def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _multiple_of(value: Any, step: Any) -> bool:
    if isinstance(value, int) and isinstance(step, int):
        return value % step == 0
    try:  # decimal arithmetic so 0.3 is a multiple of 0.1
        return decimal.Decimal(repr(value)) % decimal.Decimal(repr(step)) == 0
    except (decimal.InvalidOperation, ValueError):
        return False


def _constraint_check(keyword: str, bound: Any) -> Callable[[Any], str | None] | None:
    """A check for one keyword returning a problem text (or None); None for keywords not enforced."""
    if keyword == "minimum":
        return lambda value: None if not _is_number(value) or value >= bound else f"must be >= {bound}, got {value}"
    if keyword == "maximum":
        return lambda value: None if not _is_number(value) or value <= bound else f"must be <= {bound}, got {value}"
    if keyword == "exclusiveMinimum" and _is_number(bound):
        return lambda value: None if not _is_number(value) or value > bound else f"must be > {bound}, got {value}"
    if keyword == "exclusiveMaximum" and _is_number(bound):
        return lambda value: None if not _is_number(value) or value < bound else f"must be < {bound}, got {value}"
    if keyword == "multipleOf" and _is_number(bound) and bound > 0:
        return lambda value: (None if not _is_number(value) or _multiple_of(value, bound)
                              else f"must be a multiple of {bound}, got {value}")
    if keyword == "minLength":
        return lambda value: (None if not isinstance(value, str) or len(value) >= bound
                              else f"must be at least {bound} characters long, got {len(value)}")
    if keyword == "maxLength":
        return lambda value: (None if not isinstance(value, str) or len(value) <= bound
                              else f"must be at most {bound} characters long, got {len(value)}")
    if keyword == "pattern" and isinstance(bound, str):
        try:
            compiled = re.compile(bound)
        except re.error:
            return None  # an ECMA-262 pattern Python cannot read: looser, never a crash
        return lambda value: (None if not isinstance(value, str) or compiled.search(value)
                              else f"must match the pattern {bound!r}, got {got(value)}")
    if keyword == "minItems":
        return lambda value: (None if not isinstance(value, (list, tuple)) or len(value) >= bound
                              else f"must have at least {bound} items, got {len(value)}")
    if keyword == "maxItems":
        return lambda value: (None if not isinstance(value, (list, tuple)) or len(value) <= bound
                              else f"must have at most {bound} items, got {len(value)}")
    if keyword == "uniqueItems" and bound is True:
        def unique(value: Any) -> str | None:
            if not isinstance(value, (list, tuple)):
                return None
            seen = set()
            for item in value:
                key = _json_equal_key(item)
                if key in seen:
                    return f"items must be unique; {json.dumps(item, default=str)[:60]} appears twice"
                seen.add(key)
            return None

        return unique
    if keyword == "minProperties":
        return lambda value: (None if not isinstance(value, dict) or len(value) >= bound
                              else f"must have at least {bound} keys, got {len(value)}")
    if keyword == "maxProperties":
        return lambda value: (None if not isinstance(value, dict) or len(value) <= bound
                              else f"must have at most {bound} keys, got {len(value)}")
    return None  # annotations (format, title, examples, ...) and keywords we do not enforce


def _with_constraints(convert: Converter, constraints: ir.Constraints) -> Converter:
    checks = [check for check in (_constraint_check(keyword, bound) for keyword, bound in constraints) if check]
    if not checks:
        return convert

    def constrained(value: Any, path: str) -> Any:
        result = convert(value, path)
        for check in checks:
            problem = check(value)
            if problem is not None:
                raise ConversionError(path, problem)
        return result

    return constrained


# ==================================================================================================
# Compiling nodes into converters
# ==================================================================================================
def _null_means_absent(fields: tuple[ir.Field, ...]) -> frozenset[str]:
    """Optional fields that cannot hold null: a null for them means "left out" (the default applies).

    That is what OpenAI's strict mode makes a model send for an optional property (see
    `formats.strict`); a null for a required field is still refused.
    """
    return frozenset(item.name for item in fields if not item.required and not ir.accepts_null(item.type))


def compile_converter(node: ir.Node, limits: Limits = DEFAULT_LIMITS) -> Converter:
    """A converter for `node`: `convert(json_value, path) -> python_value`.

    Raises `ConversionError` (with the path, what was expected and what arrived) for a value the
    node does not accept, and `SchemaError` at compile time for a node it cannot convert to.
    """
    return _Compiler(limits).compile(node)


class _Compiler:
    """Compiles nodes into closures; remembers Objects so recursive types (Ref) compile once."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.objects: dict[int, list[Converter | None]] = {}

    def compile(self, node: ir.Node) -> Converter:
        method = getattr(self, "_" + type(node).__name__.lower(), None)
        if method is None:
            raise SchemaError(None, None, f"no conversion for the intermediate node {type(node).__name__}")
        convert = method(node)
        return _with_constraints(convert, node.constraints) if node.constraints else convert

    # -- scalars -----------------------------------------------------------------------------------
    def _anyvalue(self, node: ir.AnyValue) -> Converter:
        def convert_any(value: Any, path: str) -> Any:
            return value  # limits were checked by the scan of the whole arguments object

        return convert_any

    def _nonevalue(self, node: ir.NoneValue) -> Converter:
        def convert_none(value: Any, path: str) -> None:
            if value is None:
                return None
            raise _mismatch(node, value, path)

        return convert_none

    def _bool(self, node: ir.Bool) -> Converter:
        def convert_bool(value: Any, path: str) -> bool:
            if value is True or value is False:
                return value
            raise _mismatch(node, value, path)

        return convert_bool

    def _int(self, node: ir.Int) -> Converter:
        low, high = -self.limits.max_int, self.limits.max_int
        build = None if node.py is int else node.py  # an int subclass the author annotated

        def slow(value: Any, path: str) -> int:
            if isinstance(value, float) and value.is_integer() and low <= value <= high:
                value = int(value)  # JSON Schema: an integer is a number without a fractional part
            elif isinstance(value, int) and not isinstance(value, bool):
                value = int.__index__(value)  # an int subclass from a Python caller
            else:
                raise _mismatch(node, value, path)
            if not low <= value <= high:
                raise ConversionError(path, f"expected an integer between {low} and {high}, got {got(value)}")
            return value if build is None else build(value)

        if build is None:
            def convert_int(value: Any, path: str) -> int:
                if type(value) is int and low <= value <= high:
                    return value
                return slow(value, path)

            return convert_int
        return slow

    def _float(self, node: ir.Float) -> Converter:
        low, high = -self.limits.max_int, self.limits.max_int
        isfinite = math.isfinite

        def convert_float(value: Any, path: str) -> float:
            kind = type(value)
            if kind is float and isfinite(value):
                return value
            if kind is int and low <= value <= high:
                return float(value)
            if isinstance(value, int) and not isinstance(value, bool):
                if low <= value <= high:
                    return float(value)
                raise ConversionError(path, f"expected a number between {low} and {high}, got {got(value)}")
            if isinstance(value, float):
                if isfinite(value):
                    return float(value)
                raise ConversionError(path, f"expected a finite number, got {got(value)}")
            raise _mismatch(node, value, path)

        return convert_float

    def _str(self, node: ir.Str) -> Converter:
        max_chars = self.limits.max_string
        py = node.py
        if py is str:
            parse = None
        elif isinstance(py, type) and issubclass(py, pathlib.PurePath):
            parse = _parse_path(py)
        else:
            parse = _STRING_PARSERS.get(py)
            if parse is None:
                raise SchemaError(None, None, f"no conversion from a JSON string to {getattr(py, '__name__', py)!r}")

        def text_of(value: Any, path: str) -> str:
            if isinstance(value, str) and not isinstance(value, bool):
                text = str.__str__(value)  # a str subclass from a Python caller, as a plain str
                if len(text) <= max_chars:
                    return text
                raise ConversionError(path, f"the string is too long: {len(text)} characters, "
                                            f"the limit is {max_chars}")
            raise _mismatch(node, value, path)

        if parse is None:
            def convert_str(value: Any, path: str) -> str:
                if type(value) is str and len(value) <= max_chars:
                    return value
                return text_of(value, path)

            return convert_str

        def convert_parsed(value: Any, path: str) -> Any:
            text = value if type(value) is str and len(value) <= max_chars else text_of(value, path)
            try:
                return parse(text)
            except _PARSE_FAILURES as error:
                reason = str(error).strip() or type(error).__name__
                raise ConversionError(path, f"expected {describe(node)}, got {got(value)} ({reason})") from None

        return convert_parsed

    def _literal(self, node: ir.Literal) -> Converter:
        choices = _Choices()
        for value in node.values:
            choices.add(value, value)
        return self._choice(node, choices)

    def _enum(self, node: ir.Enum) -> Converter:
        choices = _Choices()
        allowed = _Choices()
        for value in node.values:
            allowed.add(value, value)
        if node.cls is None:
            return self._choice(node, allowed)
        for member in node.cls:  # type: ignore[attr-defined]
            if allowed.find(member.value) is not _NOT_FOUND:
                choices.add(member.value, member)
        return self._choice(node, choices)

    def _choice(self, node: ir.Node, choices: _Choices) -> Converter:
        def convert_choice(value: Any, path: str) -> Any:
            found = choices.find(value)
            if found is _NOT_FOUND:
                raise _mismatch(node, value, path)
            return found

        return convert_choice

    # -- containers ----------------------------------------------------------------------------------
    def _array(self, node: ir.Array) -> Converter:
        max_items = self.limits.max_items
        item = self.compile(node.item)
        py = node.py
        identity = isinstance(node.item, ir.AnyValue) and not node.item.constraints

        def convert_array(value: Any, path: str) -> Any:
            if type(value) is not list and not isinstance(value, (list, tuple)):
                raise _mismatch(node, value, path)
            if len(value) > max_items:
                raise ConversionError(path, f"the array is too long: {len(value)} items, the limit is {max_items}")
            if identity:
                items = list(value)
            else:
                try:
                    items = [item(element, path) for element in value]
                except ConversionError:
                    _locate_item(item, value, path)
                    raise
            if py is list:
                return items
            try:
                return py(items)
            except TypeError as error:  # a set of unhashable values
                raise ConversionError(path, f"the items cannot form a {py.__name__}: {error}") from None

        return convert_array

    def _tuple(self, node: ir.Tuple) -> Converter:
        items = [self.compile(item) for item in node.items]
        count = len(items)

        def convert_tuple(value: Any, path: str) -> tuple:
            if not isinstance(value, (list, tuple)):
                raise _mismatch(node, value, path)
            if len(value) != count:
                raise ConversionError(path, f"expected an array of exactly {count} items, got {len(value)}")
            out = []
            for index, (convert, element) in enumerate(zip(items, value)):
                try:
                    out.append(convert(element, path))
                except ConversionError as error:
                    error.segments.append(f"[{index}]")
                    raise
            return tuple(out)

        return convert_tuple

    def _map(self, node: ir.Map) -> Converter:
        max_items = self.limits.max_items
        key_of = self._map_key(node.key)
        value_of = self.compile(node.value)

        def convert_map(value: Any, path: str) -> dict:
            if not isinstance(value, dict):
                raise _mismatch(node, value, path)
            if len(value) > max_items:
                raise ConversionError(path, f"the object has too many keys: {len(value)}, the limit is {max_items}")
            out = {}
            for key, item in value.items():
                try:
                    converted_key = key_of(key, path)
                    out[converted_key] = value_of(item, path)
                except ConversionError as error:
                    error.segments.append(_key_segment(key))
                    raise
            if len(out) != len(value):
                raise ConversionError(path, _collision(value, key_of, path))
            return out

        return convert_map

    def _map_key(self, node: ir.Node) -> Converter:
        """Keys arrive as JSON strings; Int keys (and int-valued Enum/Literal keys) convert from digits."""
        if isinstance(node, ir.Str):
            inner = self.compile(node)

            def string_key(key: Any, path: str) -> Any:
                try:
                    return inner(key, path)
                except ConversionError as error:
                    raise ConversionError(path, f"key: {error.problem}") from None

            return string_key
        if isinstance(node, (ir.Int, ir.Enum, ir.Literal)):
            inner = self.compile(node)
            numeric = isinstance(node, ir.Int) or any(
                isinstance(value, int) and not isinstance(value, bool) for value in node.values)
            stringy = not isinstance(node, ir.Int) and any(isinstance(value, str) for value in node.values)

            def scalar_key(key: Any, path: str) -> Any:
                if not isinstance(key, str):  # an int key from a Python caller
                    return inner(key, path)
                if stringy:
                    try:
                        return inner(key, path)
                    except ConversionError:
                        pass
                if numeric and _CANONICAL_INT.match(key):
                    try:
                        number = int(key)
                    except ValueError:  # beyond Python's int/str digit limit: far out of any range
                        raise ConversionError(path, f"key: expected {describe(node)} within "
                                                    f"+-{self.limits.max_int}, got <{len(key)} digits>") from None
                    try:
                        return inner(number, path)
                    except ConversionError as error:
                        raise ConversionError(path, f"key: {error.problem}") from None
                digits = " (integers written in decimal digits, e.g. \"12\")" if numeric else ""
                raise ConversionError(path, f"key: expected {describe(node)}{digits}, got {got(key)}")

            return scalar_key
        raise SchemaError(None, None, f"mapping keys of kind {type(node).__name__} have no JSON form")

    def _object(self, node: ir.Object) -> Converter:
        cell: list[Converter | None] = [None]
        self.objects[id(node)] = cell
        convert = self._object_body(node)
        cell[0] = convert
        return convert

    def _object_body(self, node: ir.Object) -> Converter:
        fields = {item.name: self.compile(item.type) for item in node.fields}
        required = tuple(item.name for item in node.fields if item.required)
        extra = self.compile(node.extra) if node.extra is not None else None
        build = _builder(node)
        field_count = len(fields)
        absent_if_null = _null_means_absent(node.fields)
        allowed = ", ".join(fields) or "(none)"
        max_items = self.limits.max_items

        def convert_object(value: Any, path: str) -> Any:
            if not isinstance(value, dict):
                raise _mismatch(node, value, path)
            if len(value) > max_items:
                raise ConversionError(path, f"the object has too many keys: {len(value)}, the limit is {max_items}")
            out = {}
            for key, item in value.items():
                if item is None and key in absent_if_null:
                    continue
                convert = fields.get(key)
                if convert is None:
                    if extra is None:
                        raise ConversionError(path, f"unexpected key {_key_text(key)}"
                                                    f"{_did_you_mean(key, fields)}; allowed keys: {allowed}")
                    if type(key) is not str:
                        raise ConversionError(path, f"object keys must be strings, got {got(key)}")
                    convert = extra
                try:
                    out[key] = convert(item, path)
                except ConversionError as error:
                    error.segments.append(_key_segment(key))
                    raise
            if len(out) != field_count or extra is not None:
                for name in required:
                    if name not in out:
                        error = ConversionError(path, "missing required key")
                        error.segments.append(_key_segment(name))
                        raise error
            return out if build is None else build(out, path)

        return convert_object

    def _ref(self, node: ir.Ref) -> Converter:
        target = node.target() if callable(node.target) else None
        if target is None:
            raise SchemaError(None, None, f"the recursive reference {node.name!r} has no target")
        cell = self.objects.get(id(target))
        if cell is None:
            if isinstance(target, ir.Object):
                return self.compile(target)  # registers its own cell before compiling its fields
            # a recursive definition that is not an object (`A = list[A] | int` from a schema): the
            # references met while compiling it use this cell, filled once it is compiled
            cell = [None]
            self.objects[id(target)] = cell
            cell[0] = self.compile(target)
            return cell[0]

        def convert_ref(value: Any, path: str) -> Any:
            return cell[0](value, path)  # type: ignore[misc]  # filled once the Object is compiled

        return convert_ref

    def _union(self, node: ir.Union) -> Converter:
        options = [(option, self.compile(option)) for option in node.options]
        by_kind: dict[str, tuple[tuple[ir.Node, Converter], ...]] = {}
        for kind in ir.JSON_KINDS:
            # a number tries the option of its own kind first: `int | float` keeps 2.0 a float and
            # `float | int` keeps 2 an int (the order stays the author's otherwise)
            inexact = ir.Float if kind == "integer" else ir.Int if kind == "number" else None
            by_kind[kind] = tuple(sorted(((option, convert) for option, convert in options
                                          if kind in ir.accepted_kinds(option)),
                                         key=lambda pair: type(pair[0]) is inexact))
        by_type = {cls: by_kind[kind] for cls, kind in ir.KIND_OF_TYPE.items()}

        def convert_union(value: Any, path: str) -> Any:
            candidates = by_type.get(type(value))
            if candidates is None:
                kind = ir.kind_of(value)
                candidates = by_kind[kind] if kind else ()
            if len(candidates) == 1:
                return candidates[0][1](value, path)
            failures: list[tuple[ir.Node, ConversionError]] = []
            for option, convert in candidates:
                try:
                    return convert(value, path)
                except ConversionError as error:
                    failures.append((option, error))
            if not failures:
                raise _mismatch(node, value, path)
            details = "; ".join(
                f"as {describe(option)}: {(error.where() + ': ') if error.segments else ''}{error.problem}"
                for option, error in failures)
            raise ConversionError(path, f"expected {describe(node)}, got {got(value)} ({details})")

        return convert_union

    def _pydantic(self, node: ir.Pydantic) -> Converter:
        cls = node.cls
        if cls is None or not hasattr(cls, "model_validate_json"):
            raise SchemaError(None, None, f"{cls!r} is not a pydantic v2 model")

        def convert_model(value: Any, path: str) -> Any:
            if not isinstance(value, dict):
                raise _mismatch(node, value, path)
            try:
                # JSON-mode strict validation: the same rules as ours (no "5" for an int, ISO text
                # for datetimes), with the model's own validators
                return cls.model_validate_json(json.dumps(value), strict=True)
            except Exception as error:
                if not hasattr(error, "errors"):
                    raise
                raise _pydantic_failure(error, path) from None

        return convert_model


def _pydantic_failure(error: Any, path: str) -> ConversionError:
    problems = error.errors(include_url=False)
    first = problems[0] if problems else {"loc": (), "msg": str(error)}
    failure = ConversionError(path, _pydantic_message(first))
    failure.segments = [f"[{step}]" if isinstance(step, int) else _key_segment(step)
                        for step in reversed(tuple(first.get("loc", ())))]
    if len(problems) > 1:
        more = "; ".join(
            f"{'.'.join(str(step) for step in item.get('loc', ())) or '(root)'}: {_pydantic_message(item)}"
            for item in problems[1:4])
        failure.problem += f" (also: {more}{'; ...' if len(problems) > 4 else ''})"
    return failure


def _pydantic_message(item: dict) -> str:
    message = str(item.get("msg", "invalid value"))
    if "input" in item and item.get("type") not in ("missing",):
        return f"{message}, got {got(item['input'])}"
    return message


def _builder(node: ir.Object) -> Callable[[dict, str], Any] | None:
    """How to build the Python value of an object from its converted keys (None: keep the dict)."""
    kind, cls = node.kind, node.cls
    if kind in ("dict", "typeddict") or cls is None:
        return None
    if kind == "pydantic":
        def build_model(values: dict, path: str) -> Any:
            try:
                return cls.model_validate(values)
            except Exception as error:
                if not hasattr(error, "errors"):
                    raise
                raise _pydantic_failure(error, path) from None

        return build_model
    if kind in ("dataclass", "namedtuple", "class"):
        # the class was annotated by the tool's author and described field by field: it is built
        # through its own __init__ from validated values only
        def build_instance(values: dict, path: str) -> Any:
            try:
                return cls(**values)
            except Exception as error:
                raise ConversionError(path, f"could not build {cls.__name__}: "
                                            f"{type(error).__name__}: {_short(str(error))}") from None

        return build_instance
    raise SchemaError(None, None, f"no conversion to objects of kind {kind!r}")


def _did_you_mean(key: Any, names: Iterable[str]) -> str:
    if not isinstance(key, str):
        return ""
    names = list(names)
    folded = [name for name in names if name.lower() == key.lower()]
    if folded:
        return f" (did you mean {folded[0]!r}?)"
    import difflib

    close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _locate_item(convert: Converter, items: Any, path: str) -> None:
    """After a list comprehension failed, find the failing index and add it to the error's path."""
    for index, element in enumerate(items):
        try:
            convert(element, path)
        except ConversionError as error:
            error.segments.append(f"[{index}]")
            raise


_CANONICAL_INT = re.compile(r"(0|-?[1-9]\d*)\Z")


def _collision(value: dict, key_of: Converter, path: str) -> str:
    seen: dict[Any, Any] = {}
    for key in value:
        converted = key_of(key, path)
        if converted in seen:
            return (f"keys {_key_text(seen[converted])} and {_key_text(key)} mean the same key "
                    f"{_short(repr(converted), _KEY_MAX_CHARS)}")
        seen[converted] = key
    return "two keys mean the same key"


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ==================================================================================================
# Parsing the arguments and checking limits (before any conversion)
# ==================================================================================================
class _NonFinite(ValueError):
    """NaN/Infinity in JSON text (Python's json accepts them; JSON does not)."""


def _refuse_constant(name: str) -> Any:
    raise _NonFinite(name)


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)
_decode = _DECODER.raw_decode
_scan_json = _DECODER.scan_once  # (text, index) -> (value, end); raises StopIteration on no value


class _Duplicate(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Duplicate(key)
            seen.add(key)
    return out


_STRICT_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, object_pairs_hook=_no_duplicates)


def parse_arguments(inputs: Any, limits: Limits = DEFAULT_LIMITS) -> tuple[dict, str | None]:
    """The arguments as a dict, and the JSON text they came from (None when given as a mapping).

    Accepts a dict (or any Mapping), JSON text (str/bytes) holding an object, or None / blank
    text (no arguments: providers send `""` for tools without parameters). Raises
    `ConversionError` for text over `limits.max_bytes`, invalid JSON, NaN/Infinity, or a value
    that is not an object. Duplicate keys are checked later (`_check_duplicates`), cheaply.
    """
    kind = type(inputs)
    if kind is dict:
        return inputs, None
    if kind is str:
        text = inputs
    elif inputs is None:
        return {}, None
    elif isinstance(inputs, (bytes, bytearray, memoryview)):
        if len(inputs) > limits.max_bytes:
            raise ConversionError("", f"the arguments are too large: {len(inputs)} bytes, the limit is {limits.max_bytes}")
        try:
            text = bytes(inputs).decode("utf-8")
        except UnicodeDecodeError as error:
            raise ConversionError("", f"the arguments are not UTF-8 text ({error.reason} at byte {error.start})") from None
    elif isinstance(inputs, str):
        text = str.__str__(inputs)
    elif isinstance(inputs, Mapping):
        return dict(inputs), None
    else:
        raise ConversionError("", f"the arguments must be a JSON object (a dict or JSON text), got {got(inputs)}")
    if len(text) > limits.max_bytes:
        raise ConversionError("", f"the arguments are too large: {len(text)} characters, the limit is {limits.max_bytes}")
    start = 0
    if text[:1] != "{":
        stripped = text.lstrip()
        if not stripped:
            return {}, None
        start = len(text) - len(stripped)
    try:
        value, end = _decode(text, start)
    except _NonFinite as error:
        raise ConversionError("", f"the arguments are not valid JSON: {error} is not a JSON number") from None
    except json.JSONDecodeError as error:
        raise ConversionError("", f"the arguments are not valid JSON: {error.msg} "
                                  f"(line {error.lineno}, column {error.colno})") from None
    except RecursionError:
        raise ConversionError("", f"the arguments are nested too deeply (the limit is {limits.max_depth} levels)") from None
    except ValueError:  # an integer beyond Python's int/str digit limit (thousands of digits)
        raise ConversionError("", f"the arguments hold an integer with too many digits; integers must lie "
                                  f"within +-{limits.max_int}") from None
    if end != len(text) and not text[end:].isspace():
        raise ConversionError("", f"the arguments are not valid JSON: extra data after the object "
                                  f"(character {end + 1})")
    if type(value) is not dict:
        raise ConversionError("", f"the arguments must be a JSON object like {{\"name\": value}}, got {got(value)}")
    return value, text


def _scan(container: Any, depth: int, limits: Limits, check_keys: bool) -> int:
    """Check a parsed container against the limits, recursively; returns how many keys its objects have.

    Checks nesting depth, container sizes, string lengths, the integer range and finite floats
    (values that are not JSON cannot come out of the JSON parser; dict inputs are checked for them
    by `_check_limits`). `check_keys`: also refuse non-string object keys (dicts from Python callers).
    Raises ConversionError, its path pointing at the offending value.
    """
    if depth > limits.max_depth:
        raise ConversionError("", f"nested too deeply: more than {limits.max_depth} levels of arrays/objects")
    if len(container) > limits.max_items:
        what = "object has too many keys" if isinstance(container, dict) else "array is too long"
        raise ConversionError("", f"the {what}: {len(container)}, the limit is {limits.max_items}")
    if isinstance(container, dict):
        keys = len(container)
        if check_keys:
            for key in container:
                if type(key) is not str:
                    raise ConversionError("", f"object keys must be strings, got {got(key)}")
        values: Iterable[Any] = container.values()
    else:
        keys = 0
        values = container
    max_string, max_int = limits.max_string, limits.max_int
    for item in values:
        kind = type(item)
        if kind is str:
            if len(item) > max_string:
                raise _inside(container, item, f"the string is too long: {len(item)} characters, "
                                               f"the limit is {max_string}")
        elif kind is int:
            if item > max_int or item < -max_int:
                raise _inside(container, item, f"expected an integer between {-max_int} and {max_int}, "
                                               f"got {got(item)}")
        elif kind is float:
            if item - item != 0.0:  # inf or nan: "1e400" parses as inf, dicts may hold anything
                raise _inside(container, item, f"expected a finite number, got {got(item)}")
        elif kind is dict or kind is list or isinstance(item, (dict, list, tuple)):
            try:
                keys += _scan(item, depth + 1, limits, check_keys)
            except ConversionError as error:
                error.segments.append(_segment_of(container, item))
                raise
        elif isinstance(item, str) and len(item) > max_string:
            raise _inside(container, item, f"the string is too long: {len(item)} characters, the limit is {max_string}")
        elif isinstance(item, int) and not isinstance(item, bool) and (item > max_int or item < -max_int):
            raise _inside(container, item, f"expected an integer between {-max_int} and {max_int}, got {got(item)}")
    return keys


def _segment_of(container: Any, item: Any) -> str:
    """The path step at which `item` sits in `container` (found by identity; only on failure)."""
    pairs = container.items() if isinstance(container, dict) else enumerate(container)
    for key, value in pairs:
        if value is item:
            return f"[{key}]" if isinstance(key, int) and not isinstance(container, dict) else _key_segment(key)
    return ""


def _inside(container: Any, item: Any, problem: str) -> ConversionError:
    error = ConversionError("", problem)
    error.segments.append(_segment_of(container, item))
    return error


def _string_colons(value: Any) -> int:
    """Colons inside the strings (keys and values) of a parsed JSON value."""
    kind = type(value)
    if kind is str:
        return value.count(":")
    if kind is dict:
        return sum(key.count(":") + _string_colons(item) for key, item in value.items())
    if kind is list:
        return sum(_string_colons(item) for item in value)
    return 0


def _count_keys(container: Any) -> int:
    """How many keys the objects in a parsed JSON value have (for the duplicate-key check)."""
    if type(container) is dict:
        count = len(container)
        items: Iterable[Any] = container.values()
    else:
        count = 0
        items = container
    for item in items:
        kind = type(item)
        if kind is dict or kind is list:
            count += _count_keys(item)
    return count


def _check_limits(raw: dict, text: str | None, limits: Limits) -> None:
    """Limits on the whole arguments object, and the duplicate-key check for JSON text.

    Duplicate keys: every key in JSON text is followed by exactly one structural colon, and any
    other colon sits inside a string. So when the text has as many colons as the parsed objects
    have keys, nothing was dropped; without backslash escapes, the colons inside strings can be
    subtracted exactly. Only when neither settles it is the text parsed again, pair by pair.
    """
    keys = _scan(raw, 1, limits, text is None)
    if text is None:  # a dict from a Python caller or an SDK: JSON data of bounded size?
        try:
            size = len(json.dumps(raw, allow_nan=False, ensure_ascii=False))
        except (TypeError, ValueError) as error:
            raise ConversionError("", f"the arguments hold a value that is not JSON data ({error})") from None
        if size > limits.max_bytes:
            raise ConversionError("", f"the arguments are too large: {size} characters as JSON, "
                                      f"the limit is {limits.max_bytes}")
        return
    colons = text.count(":")
    if colons == keys or ("\\" not in text and colons - _string_colons(raw) == keys):
        return
    try:
        _STRICT_DECODER.decode(text)
    except _Duplicate as duplicate:
        raise ConversionError("", f"the key {_key_text(duplicate.key)} appears twice in "
                                  "one object of the arguments JSON; send each key once") from None


# ==================================================================================================
# The call plan of one Tool: compiled once per (Tool, Limits), cached on the Tool
# ==================================================================================================
@dataclass(frozen=True)
class CallPlan:
    """How to turn a model's arguments into one Python call of a Tool's function.

    Fields:
        convert: the arguments dict -> converted values by parameter name (raises ConversionError).
        flat: every parameter is a scalar, so the nesting scan can be skipped.
        closed: every parameter has a fixed type of bounded depth (no free-form values, no
            recursion), so the converters enforce every limit themselves and the scan is skipped.
        keyword_only: every parameter is passed by keyword (no positional-only, no *args).
        positional: positional-only parameter names, in order.
        varargs: the name of the `*args` parameter (a JSON array), or None.
        before_varargs: parameters before `*args`, passed positionally when `*args` is non-empty.
        defaults: Python defaults of optional parameters (to fill positional gaps).
    A plan holds no function and no name: Tools built from one function share it.
    """

    convert: Callable[[dict], dict]
    flat: bool
    closed: bool
    keyword_only: bool
    positional: tuple[str, ...]
    varargs: str | None
    before_varargs: tuple[str, ...]
    defaults: Mapping[str, Any]

    def arguments(self, converted: dict) -> tuple[tuple, dict]:
        """(positional, keyword) arguments for the call, from the converted values."""
        if self.keyword_only:
            return (), converted
        kwargs = dict(converted)
        varargs = self.varargs
        extra_positional: Any = ()
        if varargs is not None:
            extra_positional = kwargs.pop(varargs, ()) or ()
        if extra_positional:
            leading = self.before_varargs
        else:
            present = [index for index, name in enumerate(self.positional) if name in kwargs]
            leading = self.positional[: present[-1] + 1] if present else ()
        positional = []
        for name in leading:
            if name in kwargs:
                positional.append(kwargs.pop(name))
                continue
            default = self.defaults.get(name, ir.MISSING)
            if default is ir.MISSING:
                raise ConversionError(name, "this argument must be given when a later positional argument is")
            positional.append(default)
        positional.extend(extra_positional)
        return tuple(positional), kwargs


def call_plan(tool: Tool, limits: Limits = DEFAULT_LIMITS) -> CallPlan:
    """The cached CallPlan of `tool` under `limits` (compiled on first use)."""
    cache = tool._cache
    entry = cache.get("converter")
    if entry is not None and entry[0] is limits:
        return entry[1]
    by_limits = cache.setdefault("converters", {})
    plan = by_limits.get(limits)
    if plan is None:
        plan = _compile_plan(tool, limits)
        by_limits[limits] = plan
    cache["converter"] = (limits, plan)
    return plan


def _arguments_node(tool: Tool) -> ir.Object:
    if tool.args is not None:
        return tool.args
    from .inverse import schema_to_ir

    try:
        node = schema_to_ir(tool.parameters)
    except ValueError as error:  # a schema too deep or too large to read
        raise SchemaError(tool.name, None, str(error)) from None
    if isinstance(node, ir.Ref) and callable(node.target):
        node = node.target()
    if isinstance(node, ir.Map):
        return ir.Object(fields=(), kind="dict", extra=node.value)
    if not isinstance(node, ir.Object):
        raise SchemaError(tool.name, None, "its parameters schema does not describe a JSON object")
    return node


def _compile_plan(tool: Tool, limits: Limits) -> CallPlan:
    args = _arguments_node(tool)
    compiler = _Compiler(limits)
    try:
        fields = {item.name: compiler.compile(item.type) for item in args.fields}
        extra = compiler.compile(args.extra) if args.extra is not None else None
    except SchemaError as error:
        raise SchemaError(tool.name, error.parameter, error.reason) from None
    required = tuple(item.name for item in args.fields if item.required)
    field_count = len(fields)
    absent_if_null = _null_means_absent(args.fields)
    if fields:
        takes = "this tool takes: " + ", ".join(fields) + (" (and other keys)" if extra is not None else "")
    else:
        takes = "this tool takes no arguments" if extra is None else "this tool takes any keys"

    def convert_arguments(raw: dict) -> dict:
        out = {}
        for key, value in raw.items():
            if value is None and key in absent_if_null:
                continue
            convert = fields.get(key)
            if convert is None:
                if extra is None:
                    raise ConversionError(_short(str(key), _KEY_MAX_CHARS),
                                          f"unexpected argument{_did_you_mean(key, fields)}; {takes}")
                if type(key) is not str:
                    raise ConversionError(str(key), f"argument names must be strings, got {got(key)}")
                convert = extra
            out[key] = convert(value, key)
        if len(out) != field_count or extra is not None:
            for name in required:
                if name not in out:
                    raise ConversionError(name, "missing required argument")
        return out

    convert = convert_arguments
    if args.constraints:
        root_checks = _with_constraints(lambda value, path: value, args.constraints)

        def convert_arguments_checked(raw: dict) -> dict:
            root_checks(raw, "")
            return convert_arguments(raw)

        convert = convert_arguments_checked

    passing = tool.passing or tuple((name, "keyword") for name in fields)
    order = [name for name, kind in passing if kind != "varkw"]
    positional = tuple(name for name, kind in passing if kind == "positional")
    varargs = next((name for name, kind in passing if kind == "varargs"), None)
    before = tuple(order[: order.index(varargs)]) if varargs in order else ()
    return CallPlan(
        convert=convert,
        flat=extra is None and all(ir.is_scalar(item.type) for item in args.fields),
        closed=(extra is None or ir.static_depth(args.extra) is not None) and all(
            depth is not None and depth < limits.max_depth
            for depth in (ir.static_depth(item.type) for item in args.fields)),
        keyword_only=not positional and varargs is None,
        positional=positional,
        varargs=varargs,
        before_varargs=before,
        defaults={item.name: item.default for item in args.fields if not item.required},
    )


def _prepare(tool: Tool, inputs: Any, limits: Limits) -> tuple[tuple, dict, dict]:
    """Validate and convert: (positional, keyword, raw arguments). Raises ToolCallError."""
    try:
        plan = call_plan(tool, limits)
        if type(inputs) is str and inputs.startswith("{") and len(inputs) <= limits.max_bytes:
            # the common case, JSON text of an object, parsed without the wrapper layers
            try:
                raw, end = _scan_json(inputs, 0)
            except Exception:  # invalid JSON and the like: the careful path says what is wrong
                raw, text = parse_arguments(inputs, limits)
            else:
                text = inputs
                if end != len(inputs):
                    raw, text = parse_arguments(inputs, limits)
        else:
            raw, text = parse_arguments(inputs, limits)
        if plan.flat:
            # scalar converters check their own limits; here only duplicate keys are in question
            if text is not None and text.count(":") != len(raw):
                _check_limits(raw, text, limits)
            converted = plan.convert(raw)
        elif plan.closed:
            # converters check every limit of a closed type; once they accepted the value, its
            # depth is bounded, so counting its keys for the duplicate check cannot run away
            converted = plan.convert(raw)
            if text is not None and text.count(":") != _count_keys(raw):
                _check_limits(raw, text, limits)
        else:
            _check_limits(raw, text, limits)
            converted = plan.convert(raw)
        if plan.keyword_only:
            return (), converted, raw
        positional, kwargs = plan.arguments(converted)
    except ConversionError as error:
        raise ToolCallError(tool.name, error.problem, error.where() or None, tool.parameters) from None
    except SchemaError as error:
        raise ToolCallError(tool.name, f"this tool cannot be called: {error}") from None
    return positional, kwargs, raw


# ==================================================================================================
# Running the function
# ==================================================================================================
_NBTOOLS_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_MACHINERY_DIRS = (_NBTOOLS_DIR, os.path.dirname(asyncio.__file__) + os.sep,
                   os.path.dirname(os.path.dirname(threading.__file__)) + os.sep + "concurrent" + os.sep,
                   threading.__file__)
_library_dirs: tuple[str, ...] | None = None


def _library_prefixes() -> tuple[str, ...]:
    global _library_dirs
    if _library_dirs is None:
        import sysconfig

        paths = sysconfig.get_paths()
        _library_dirs = tuple(sorted({os.path.abspath(paths[key]) + os.sep for key in ("stdlib", "purelib", "platlib")
                                      if key in paths}))
    return _library_dirs


def _trim_traceback(tb: pytypes.TracebackType | None) -> pytypes.TracebackType | None:
    """Drop the outer frames that belong to nbtools (and the asyncio/threading plumbing it used)."""
    current = tb
    while current is not None and current.tb_frame.f_code.co_filename.startswith(_MACHINERY_DIRS):
        current = current.tb_next
    if current is None and tb is not None:  # the tool itself lives in nbtools: keep its last frame
        current = tb
        while current.tb_next is not None:
            current = current.tb_next
    return current


def _frame_text(tb: pytypes.TracebackType | None) -> str:
    """The tool's line: the innermost frame outside the standard library and installed packages."""
    chosen = None
    libraries = _library_prefixes()
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if chosen is None or not os.path.abspath(filename).startswith(libraries):
            chosen = tb
        tb = tb.tb_next
    if chosen is None:
        return ""
    code = chosen.tb_frame.f_code
    line = linecache.getline(code.co_filename, chosen.tb_lineno).strip()
    return f"in {code.co_name}, line {chosen.tb_lineno}" + (f": {_short(line, 160)}" if line else "")


def _tool_failure(tool: Tool, error: Exception) -> ToolCallError:
    """The ToolCallError for an exception the tool raised (its traceback trimmed of nbtools frames)."""
    tb = _trim_traceback(error.__traceback__)
    error.__traceback__ = tb
    message = _short(str(error).strip(), 500)
    where = _frame_text(tb)
    problem = f"the tool raised {type(error).__name__}" + (f": {message}" if message else "")
    if where:
        problem += f" ({where})"
    return ToolCallError(tool.name, problem)


def _refused(tool: Tool, reason: str) -> ToolCallError:
    return ToolCallError(tool.name, f"refused: {reason}")


def _run_awaitable(awaitable: Awaitable[Any]) -> Any:
    """Wait for an awaitable from synchronous code.

    Without a running loop in this thread: `asyncio.run`. With one (a notebook cell), blocking it
    to wait would deadlock, so the awaitable runs on a private loop in a worker thread.
    """
    async def wait() -> Any:
        if inspect.isasyncgen(awaitable):
            return [item async for item in awaitable]  # type: ignore[attr-defined]
        return await awaitable

    try:
        asyncio.get_running_loop()
        running = True
    except RuntimeError:
        running = False
    if not running:
        # outside the `except` block: a tool's exception must not carry "no running event loop"
        # from here as its context (the traceback a person reads shows only the tool)
        return asyncio.run(wait())
    outcome: dict[str, Any] = {}

    def worker() -> None:
        try:
            outcome["value"] = asyncio.run(wait())
        except BaseException as error:  # handed to the waiting thread, which re-raises it
            outcome["error"] = error

    thread = threading.Thread(target=worker, name="nbtools-await", daemon=True)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def _begin(tool: Tool, inputs: Any, limits: Limits, approve: Any,
           refuse_destructive: bool) -> tuple[Callable, tuple, dict, Any]:
    """Everything before the call: the function, its converted arguments, and the approval answer
    (`True` when none is needed; maybe an awaitable, which `_call`/`_acall` each wait for their way)."""
    fn = tool.fn
    if fn is None:
        raise ToolCallError(tool.name, "this tool has no function to call (it is a definition only)")
    positional, kwargs, raw = _prepare(tool, inputs, limits)
    answer: Any = True
    if "destructive" in tool.hints:
        if refuse_destructive:
            raise _refused(tool, "this tool is marked destructive and this namespace does not run destructive tools")
        if approve is not None:
            try:
                answer = approve(tool, raw)
            except Exception as error:
                raise _approval_failed(tool, error) from error
    return fn, positional, kwargs, answer


def _approval_failed(tool: Tool, error: Exception) -> ToolCallError:
    return _refused(tool, f"the approval check failed ({type(error).__name__}: {_short(str(error), 200)})")


def _verdict(tool: Tool, answer: Any) -> None:
    """Only a yes runs the tool: True (or 1, a numpy True); a non-boolean answer such as "no" or
    a dict is a denial, not a truthy value (a callback that returns the wrong thing fails closed)."""
    if answer is True:
        return
    if answer is False or answer is None:
        raise _refused(tool, "the user denied this call")
    if isinstance(answer, int) or type(answer).__name__ in ("bool_", "bool"):
        if answer == 1:
            return
        raise _refused(tool, "the user denied this call")
    raise _refused(tool, f"the approval callback answered {_short(repr(answer), 80)} instead of "
                         "True or False, which counts as a denial")


_PLAIN_TYPES = frozenset((int, float, str, bool, type(None), dict, list, tuple))


def _call(tool: Tool, inputs: Any, limits: Limits, approve: Any, refuse_destructive: bool) -> Any:
    fn, positional, kwargs, answer = _begin(tool, inputs, limits, approve, refuse_destructive)
    if answer is not True:  # asked, and not a plain yes (the common case skips these checks)
        if inspect.isawaitable(answer):
            try:
                answer = _run_awaitable(answer)
            except Exception as error:
                raise _approval_failed(tool, error) from error
        _verdict(tool, answer)
    try:
        result = fn(*positional, **kwargs)
        if tool.is_async or (type(result) not in _PLAIN_TYPES
                             and (inspect.isawaitable(result) or inspect.isasyncgen(result))):
            result = _run_awaitable(result)
    except ToolCallError:
        raise
    except Exception as error:
        raise _tool_failure(tool, error) from error
    return result


async def _acall(tool: Tool, inputs: Any, limits: Limits, approve: Any, refuse_destructive: bool) -> Any:
    fn, positional, kwargs, answer = _begin(tool, inputs, limits, approve, refuse_destructive)
    if answer is not True:
        if inspect.isawaitable(answer):
            try:
                answer = await answer
            except Exception as error:
                raise _approval_failed(tool, error) from error
        _verdict(tool, answer)
    try:
        result = fn(*positional, **kwargs)
        if type(result) not in _PLAIN_TYPES:
            if inspect.isawaitable(result):
                result = await result
            elif inspect.isasyncgen(result):
                result = [item async for item in result]
    except ToolCallError:
        raise
    except Exception as error:
        raise _tool_failure(tool, error) from error
    return result


def call_tool(tool: Tool, args: Any = None, *, limits: Limits | None = None, approve: Any = None,
              refuse_destructive: bool = False, raise_on_err: bool = True) -> Any:
    """Validate and convert `args` (dict or JSON text) for `tool`, then call it; the result as is.

    A coroutine tool is run to completion (in a worker thread when this thread's loop is running).
    Bad arguments, a refusal and the tool's own exception raise `ToolCallError` (chained from the
    tool's exception), or with `raise_on_err=False` return its text. KeyboardInterrupt and
    SystemExit pass through untouched.
    """
    try:
        return _call(tool, args, limits or DEFAULT_LIMITS, approve, refuse_destructive)
    except ToolCallError as error:
        if raise_on_err:
            raise
        return str(error)


async def acall_tool(tool: Tool, args: Any = None, *, limits: Limits | None = None, approve: Any = None,
                     refuse_destructive: bool = False, raise_on_err: bool = True) -> Any:
    """Like `call_tool`, awaiting coroutine tools (and async approval callbacks) in this loop."""
    try:
        return await _acall(tool, args, limits or DEFAULT_LIMITS, approve, refuse_destructive)
    except ToolCallError as error:
        if raise_on_err:
            raise
        return str(error)


# ==================================================================================================
# Namespaces: where a name may resolve
# ==================================================================================================
_BUILTIN_CALLABLES = (pytypes.BuiltinFunctionType, pytypes.BuiltinMethodType, pytypes.WrapperDescriptorType,
                      pytypes.MethodWrapperType, pytypes.MethodDescriptorType, pytypes.ClassMethodDescriptorType)


def _not_a_tool(obj: Any) -> str | None:
    """Why an object found in a dict namespace is never called (None: it may be).

    Only Python-level functions, methods, partials of them, callable instances of Python classes
    and cache wrappers around functions qualify; classes, modules and builtins do not.
    """
    if isinstance(obj, Tool):
        return None
    if isinstance(obj, type):
        return "a class"
    if isinstance(obj, pytypes.ModuleType):
        return "a module"
    if isinstance(obj, _BUILTIN_CALLABLES):
        return "a builtin"
    if isinstance(obj, functools.partial):
        return _not_a_tool(obj.func)
    if isinstance(obj, pytypes.FunctionType):
        return None
    if isinstance(obj, pytypes.MethodType):
        return _not_a_tool(obj.__func__)
    if not callable(obj):
        return f"not callable (a {type(obj).__name__})"
    if isinstance(getattr(type(obj), "__call__", None), pytypes.FunctionType):
        return None  # an instance of a Python class with __call__
    wrapped = getattr(obj, "__wrapped__", None)
    if wrapped is not None and wrapped is not obj and isinstance(inspect.unwrap(obj), pytypes.FunctionType):
        return None  # functools.cache / lru_cache around a function
    return "a builtin"


def _refuse_globals(ns: Mapping) -> None:
    if "__builtins__" in ns:
        raise TypeError("this namespace dict holds __builtins__: it is a module's or the kernel's globals, "
                        "and a model must not reach everything in it. Register the tools instead "
                        "(nbtools.registry, @tool, %%tool) or pass a dict/list of just the tools")


_DICT_TOOLS: Any = None  # WeakKeyDictionary: callable -> {name: its Tool without `fn`}, for dict namespaces


def _tool_named(name: str, obj: Any) -> Tool:
    """The Tool of a callable found under `name` in a dict namespace.

    The cache keeps each Tool without its function (a weak-key entry whose value held the key
    would never die, keeping every callable ever passed in a dict alive, closures and the data
    they hold included); the Tool handed out gets the callable back and shares the cached one's
    renders and compiled call plans.
    """
    import weakref

    global _DICT_TOOLS
    if isinstance(obj, Tool):
        return obj
    if _DICT_TOOLS is None:
        _DICT_TOOLS = weakref.WeakKeyDictionary()
    try:
        by_name = _DICT_TOOLS.get(obj)
    except TypeError:  # not weak-referenceable / unhashable: build each time
        by_name = None
    template = by_name.get(name) if by_name is not None else None
    if template is None:
        built = Tool.from_function(obj)
        if built.name != name:
            built = Tool.from_function(obj, name=name)
        try:
            _DICT_TOOLS.setdefault(obj, {})[name] = built.replace(fn=None, _cache=built._cache)
        except TypeError:
            pass
        return built
    return _with_fn(template, obj)


def _with_fn(template: Tool, fn: Any) -> Tool:
    """A copy of `template` holding `fn` (and sharing its cache): what `replace` does, without
    its field-by-field rebuild, which would triple the cost of a call through a dict."""
    tool = object.__new__(Tool)
    tool.__dict__.update(template.__dict__)
    tool.__dict__["fn"] = fn
    return tool


def _wire_match(name: str, names: Iterable[str]) -> str | None:
    """The registered name whose provider-mapped form is `name` (dotted or long names only)."""
    from .formats import wire_names

    for candidate in names:
        if isinstance(candidate, str) and ("." in candidate or len(candidate) > 64 or not candidate.isidentifier()):
            if name in wire_names(candidate):
                return candidate
    return None


def _unknown(name: str, available: Iterable[str]) -> ToolCallError:
    names = sorted(str(item) for item in available)
    shown = ", ".join(names[:30]) + (", ..." if len(names) > 30 else "")
    tail = f"; available tools: {shown}" if names else "; no tools are available"
    return ToolCallError(name, f"no tool named {name!r}{_did_you_mean(name, names)}{tail}")


def _check_namespace(ns: Any) -> None:
    """Raise TypeError for something that is not a namespace (a programming error, not the model's)."""
    if ns is None or isinstance(ns, Registry):
        return
    if isinstance(ns, Mapping):
        _refuse_globals(ns)
        return
    if isinstance(ns, (list, tuple)):
        return
    raise TypeError(f"ns must be a Registry, a dict of name -> callable/Tool, or a list of callables/Tools; "
                    f"got {type(ns).__name__}")


def resolve_tool(name: Any, ns: Any = None) -> Tool:
    """The Tool `name` means in namespace `ns` (None: the default registry), by exact name.

    Raises ToolCallError for an unknown, disabled or refused name, TypeError for a value of `ns`
    that is not a namespace (or is a whole globals dict).
    """
    if ns is None:
        ns = _registry_module.registry
    elif type(ns) is dict:
        _refuse_globals(ns)
    elif not isinstance(ns, Registry):
        _check_namespace(ns)
    if type(name) is not str or not name:
        if not isinstance(name, str) or not name:
            raise ToolCallError(None, f"the tool name must be a non-empty string, got {got(name)}")
        name = str.__str__(name)
    if name.startswith("__") and name.endswith("__"):
        raise ToolCallError(name, "names with double underscores are never tools")
    if isinstance(ns, Registry):
        found = ns.resolve(name)
        if found is None:
            known = ns.get(name)
            if known is not None:
                raise ToolCallError(name, f"the tool {known.name!r} is disabled; it cannot be called now")
            raise _unknown(name, [tool.name for tool in ns.enabled()])
        return found
    if type(ns) is dict or isinstance(ns, Mapping):
        obj = ns.get(name)
        if type(obj) is Tool:
            return obj
        key = name if obj is not None or name in ns else _wire_match(name, ns.keys())
        if key is None:
            raise _unknown(name, [key for key, value in ns.items() if _not_a_tool(value) is None])
        obj = ns[key]
        reason = _not_a_tool(obj)
        if reason is not None:
            raise ToolCallError(name, f"{name!r} is {reason}, not a tool; classes, modules and builtins in a "
                                      "namespace dict are never called (register them explicitly as Tools)")
        return _tool_named(key, obj)
    tools = _list_tools(ns)
    found = tools.get(name)
    if found is None:
        key = _wire_match(name, tools)
        if key is None:
            raise _unknown(name, tools)
        found = tools[key]
    return found


def _list_tools(items: Iterable[Any]) -> dict[str, Tool]:
    tools: dict[str, Tool] = {}
    for item in items:
        built = item if isinstance(item, Tool) else Tool.from_function(item)
        if built.name in tools and tools[built.name] is not built and tools[built.name].fn is not built.fn:
            raise ValueError(f"two different tools are named {built.name!r} in this namespace list")
        tools[built.name] = built
    return tools


def mk_ns(fs: Any = None) -> dict[str, Tool]:
    """A namespace (name -> Tool) from a list of callables/Tools, a dict, or a Registry.

    The Tools hold the objects given now, so rebinding a name later changes nothing. A dict is
    taken by its keys (exact names); its classes, modules and builtins are left out (they are
    tools only when registered explicitly), and a globals dict (holding `__builtins__`) is refused.
    `None` means the default registry's enabled tools.
    """
    if fs is None:
        fs = _registry_module.registry
    if isinstance(fs, Registry):
        return {tool.name: tool for tool in fs.enabled()}
    if isinstance(fs, Mapping):
        _refuse_globals(fs)
        out: dict[str, Tool] = {}
        for key, value in fs.items():
            if not isinstance(key, str) or (key.startswith("__") and key.endswith("__")):
                continue
            if _not_a_tool(value) is None:
                out[key] = _tool_named(key, value)
        return out
    if callable(fs):  # a single callable or Tool
        fs = [fs]
    return _list_tools(fs)


def _settings(ns: Any, options: dict) -> tuple[Limits, Any, bool]:
    """(limits, approve, refuse_destructive): explicit options over the namespace's registry settings."""
    if isinstance(ns, Registry):
        limits, approve, refuse = ns.limits, ns.approve, ns.refuse_destructive
    else:
        limits, approve, refuse = DEFAULT_LIMITS, None, False
    if options:
        unknown = set(options) - {"limits", "approve", "refuse_destructive"}
        if unknown:
            raise TypeError(f"unknown call option(s): {', '.join(sorted(unknown))}; "
                            "expected limits, approve, refuse_destructive")
        limits = options.get("limits") or limits
        approve = options.get("approve", approve)
        refuse = bool(options.get("refuse_destructive", refuse))
    return limits, approve, refuse


def _as_called(error: ToolCallError, name: str) -> ToolCallError:
    """`error` naming the tool as the model called it (a provider-mapped name like `math__add`, or a
    dict key): the model knows the tool by that name, not by the registered `math.add`."""
    renamed = ToolCallError(name, error.problem, error.argument, error.schema)
    renamed.__cause__ = error.__cause__
    return renamed


def call_func(name: str, inputs: Any = None, ns: Any = None, raise_on_err: bool = True, **options: Any) -> Any:
    """Call tool `name` from namespace `ns` (None: the default registry) with `inputs` (dict or JSON).

    Returns what the function returned. Unknown names, bad arguments, refusals and the tool's own
    exceptions raise `ToolCallError`, or with `raise_on_err=False` return its text (for the model).
    `options`: `limits`, `approve`, `refuse_destructive` (default: the registry's settings).
    A bad `ns` (not a namespace, or a whole globals dict) raises TypeError: that is the caller's bug.
    """
    if ns is None:
        ns = _registry_module.registry
    limits, approve, refuse = _settings(ns, options)
    tool = None
    try:
        tool = resolve_tool(name, ns)
        return _call(tool, inputs, limits, approve, refuse)
    except ToolCallError as error:
        if tool is not None and error.tool == tool.name != name:
            error = _as_called(error, name)
            if raise_on_err:
                raise error from error.__cause__
        if raise_on_err:
            raise
        return str(error)


async def call_func_async(name: str, inputs: Any = None, ns: Any = None, raise_on_err: bool = True,
                          **options: Any) -> Any:
    """Like `call_func`, awaiting coroutine tools and async approval callbacks in the running loop."""
    if ns is None:
        ns = _registry_module.registry
    limits, approve, refuse = _settings(ns, options)
    tool = None
    try:
        tool = resolve_tool(name, ns)
        return await _acall(tool, inputs, limits, approve, refuse)
    except ToolCallError as error:
        if tool is not None and error.tool == tool.name != name:
            error = _as_called(error, name)
            if raise_on_err:
                raise error from error.__cause__
        if raise_on_err:
            raise
        return str(error)


# ==================================================================================================
# Results for the model
# ==================================================================================================
def jsonable(value: Any) -> Any:
    """`value` as plain JSON data (see `values.to_json`): dataclasses, NamedTuples and pydantic
    models become objects, Enums their values, datetimes/UUIDs/Decimals/Paths text, bytes base64,
    sets sorted lists; what JSON cannot hold becomes text ("NaN", "<cycle>", the object's `str()`)."""
    return to_json(value)


def result_text(value: Any, max_chars: int = DEFAULT_LIMITS.max_result_chars) -> str:
    """The text a model gets for a tool's return value.

    A `str` as it is; a value whose JSON form is text (a datetime, a Path, an object shown by its
    `str()`) as that text; anything else as JSON (see `jsonable`), `None` as `null`; a generator
    as the list of what it yields (at most `max_chars` items are read). Text longer than
    `max_chars` is cut, with a marker saying how much was left out.
    """
    return _rendered(value, max_chars)[1]


def _rendered(value: Any, max_chars: int) -> tuple[Any, str]:
    """(JSON data, text) of a result; when the text had to be cut, the data is the cut text too."""
    unread = False
    if type(value) is pytypes.GeneratorType:
        # A tool that `yield`s its results: the model gets them as a list. Each item takes at
        # least one character of the text, so more than `max_chars` items could not be shown
        # anyway; reading stops there, which also ends an endless generator.
        items = []
        for item in value:
            if len(items) == max_chars:
                unread = True
                break
            items.append(item)
        value.close()
        value = items
    if type(value) is str:
        data: Any = value
        text = value
    else:
        data = jsonable(value)
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    if unread:
        text = (text[:max_chars] + f"\n[truncated: the tool yielded more than {max_chars} items; "
                "the rest were not read]")
        data = text
    elif len(text) > max_chars:
        text = (text[:max_chars] + f"\n[truncated: {len(text) - max_chars} of {len(text)} characters "
                "not shown]")
        data = text
    return data, text


# ==================================================================================================
# A whole model reply: run every call, answer in the provider's format
# ==================================================================================================
def _result_for(request: Any, value: Any, error: BaseException | None, max_chars: int) -> Any:
    from .formats import ToolResult

    if error is not None:
        text = str(error) if isinstance(error, ToolCallError) else \
            str(ToolCallError(getattr(request, "name", None), f"internal error: {type(error).__name__}: {error}"))
        return ToolResult(request, text, text, True)
    data, text = _rendered(value, max_chars)
    return ToolResult(request, text, data, False)


async def _run_one_async(request: Any, ns: Any, max_chars: int) -> Any:
    try:
        value = await call_func_async(request.name, request.arguments, ns=ns)
    except Exception as error:  # a failing call is an answer for the model, not a lost batch
        return _result_for(request, None, error, max_chars)
    try:
        return _result_for(request, value, None, max_chars)
    except Exception as error:
        return _result_for(request, None, error, max_chars)


def _run_one(request: Any, ns: Any, max_chars: int) -> Any:
    try:
        value = call_func(request.name, request.arguments, ns=ns)
    except Exception as error:
        return _result_for(request, None, error, max_chars)
    try:
        return _result_for(request, value, None, max_chars)
    except Exception as error:
        return _result_for(request, None, error, max_chars)


def _is_async_call(request: Any, ns: Any) -> bool:
    try:
        return resolve_tool(request.name, ns).is_async
    except ToolCallError:
        return False


async def arun_tool_calls(reply: Any, ns: Any = None) -> Any:
    """Run every tool call in a model reply, coroutine tools concurrently; the tool-result message(s).

    `reply`: an OpenAI chat completion/message, an OpenAI Responses response/output list, an
    Anthropic message/content list or a Gemini response/content, as dicts or SDK objects. Each
    failing call becomes an error result (`is_error`) carrying the text for the model.
    """
    from .formats import parse_reply, result_message

    _check_namespace(ns)
    limits = _settings(ns, {})[0]
    dialect, requests = parse_reply(reply)
    results = await asyncio.gather(*(_run_one_async(request, ns, limits.max_result_chars) for request in requests))
    return result_message(dialect, list(results))


def run_tool_calls(reply: Any, ns: Any = None) -> Any:
    """Run every tool call in a model reply; returns the provider's tool-result message(s).

    A reply without tool calls returns `[]` (OpenAI chat, Responses) or None (Anthropic, Gemini):
    falsy either way, never an empty message the provider would refuse.

    Synchronous tools run one after another in this thread (so signal-based time-outs and the
    kernel's display keep working); coroutine tools then run concurrently on one event loop
    (a private loop in a worker thread when this thread's loop is running, as in a notebook cell).
    See `arun_tool_calls` for the accepted replies.
    """
    from .formats import parse_reply, result_message

    _check_namespace(ns)
    limits = _settings(ns, {})[0]
    dialect, requests = parse_reply(reply)
    results: list[Any] = [None] * len(requests)
    waiting = []
    for index, request in enumerate(requests):
        if _is_async_call(request, ns):
            waiting.append(index)
        else:
            results[index] = _run_one(request, ns, limits.max_result_chars)
    if waiting:
        async def run_waiting() -> list[Any]:
            return await asyncio.gather(*(_run_one_async(requests[index], ns, limits.max_result_chars)
                                          for index in waiting))

        for index, result in zip(waiting, _run_awaitable(run_waiting())):
            results[index] = result
    return result_message(dialect, results)
