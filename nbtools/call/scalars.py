"""Converters of scalar nodes: `(json_value, path) -> python_value`, built once per node.

Decisions (see `nbtools.call` for all of them): an integer is a JSON integer or a float with no
fractional part, never `true` or `"5"`; a number accepts integers; strings convert only along the
fixed list of `parsers`; a Literal/Enum matches by JSON equality (`1.0` is `1`, `true` is not).
Each converter enforces the limits that apply to one value (integer range, string length).
"""

from __future__ import annotations

import math
from typing import Any, Callable

from .. import ir
from ..errors import SchemaError
from ..policy import Limits
from .parsers import PARSE_FAILURES, string_parser
from ..refusals import ConversionError, got, mismatch, unparsable

Converter = Callable[[Any, str], Any]
"""A compiled converter: `(json_value, path) -> python_value`; raises `ConversionError`."""


def passes_as_is(node: ir.Node) -> type | None:
    """`int`, `str` or `bool` when `node`'s converter returns a value of exactly that type unchanged
    once it is within the limits (an int within ±max_int, a str of at most max_string characters):
    a plain parameter with no constraints and no subclass to build. None otherwise.

    An object's converter checks such values itself instead of calling the converter (a call is
    about 1K instructions, most of what a plain value costs: bench/instructions.py `add`), with
    the same test as the converters' own first line; tests/test_convert.py checks they agree.
    """
    if node.constraints:
        return None
    kind = type(node)
    if kind is ir.Int and node.py is int:
        return int
    if kind is ir.Str and node.py is str:
        return str
    if kind is ir.Bool:
        return bool
    return None


def fresh(value: Any) -> Any:
    """A free-form JSON value with its own containers: a tool that changes what it was given
    (appends to a list it took as `Any`) must not change the model's reply kept in a history, an
    activity log or a decisions log. Depth is bounded by the limits scan that came before."""
    kind = type(value)
    if kind is dict:
        return {key: fresh(item) for key, item in value.items()}
    if kind is list:
        return [fresh(item) for item in value]
    return value


def any_value(node: ir.AnyValue, limits: Limits) -> Converter:
    def convert_any(value: Any, path: str) -> Any:
        # limits were checked by the scan of the whole arguments object
        return fresh(value) if type(value) is dict or type(value) is list else value

    return convert_any


def none_value(node: ir.NoneValue, limits: Limits) -> Converter:
    def convert_none(value: Any, path: str) -> None:
        if value is None:
            return None
        raise mismatch(node, value, path)

    return convert_none


def boolean(node: ir.Bool, limits: Limits) -> Converter:
    def convert_bool(value: Any, path: str) -> bool:
        if value is True or value is False:
            return value
        raise mismatch(node, value, path)

    return convert_bool


SMALL_INT = (1 << 30) - 1
"""The bound of the integers checked first: CPython compares ints of one 30-bit digit fast (a
specialised comparison), larger ones (2**63, the default max_int) through the generic path at
about 10x the cost; the few values beyond it take the full check."""


def integer(node: ir.Int, limits: Limits) -> Converter:
    low, high = -limits.max_int, limits.max_int
    small = min(high, SMALL_INT)
    negative_small = -small
    build = None if node.py is int else node.py  # an int subclass the author annotated

    def slow(value: Any, path: str) -> int:
        if isinstance(value, float) and value.is_integer() and low <= value <= high:
            value = int(value)  # JSON Schema: an integer is a number without a fractional part
        elif isinstance(value, int) and not isinstance(value, bool):
            value = int.__index__(value)  # an int subclass from a Python caller
        else:
            raise mismatch(node, value, path)
        if not low <= value <= high:
            raise ConversionError(path, f"expected an integer between {low} and {high}, got {got(value)}")
        return value if build is None else build(value)

    if build is None:
        def convert_int(value: Any, path: str) -> int:
            if type(value) is int and negative_small <= value <= small:
                return value
            return slow(value, path)

        return convert_int
    return slow


def number(node: ir.Float, limits: Limits) -> Converter:
    low, high = -limits.max_int, limits.max_int
    isfinite = math.isfinite
    to_float = node.py is not None  # a `float` parameter gets a float; a JSON `number` keeps ints ints

    def convert_float(value: Any, path: str) -> float:
        kind = type(value)
        if kind is float and isfinite(value):
            return value
        if kind is int and low <= value <= high:
            return float(value) if to_float else value
        if isinstance(value, int) and not isinstance(value, bool):
            if low <= value <= high:
                return float(value) if to_float else int(value)
            raise ConversionError(path, f"expected a number between {low} and {high}, got {got(value)}")
        if isinstance(value, float):
            if isfinite(value):
                return float(value)
            raise ConversionError(path, f"expected a finite number, got {got(value)}")
        raise mismatch(node, value, path)

    return convert_float


def string(node: ir.Str, limits: Limits) -> Converter:
    max_chars = limits.max_string
    py = node.py
    parse = None if py is str else string_parser(py)
    if py is not str and parse is None:
        raise SchemaError(None, None, f"no conversion from a JSON string to {getattr(py, '__name__', py)!r}")

    def text_of(value: Any, path: str) -> str:
        if isinstance(value, str) and not isinstance(value, bool):
            text = str.__str__(value)  # a str subclass from a Python caller, as a plain str
            if len(text) <= max_chars:
                return text
            raise ConversionError(path, f"the string is too long: {len(text)} characters, "
                                        f"the limit is {max_chars}")
        raise mismatch(node, value, path)

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
        except PARSE_FAILURES as error:
            reason = str(error).strip() or type(error).__name__
            raise unparsable(node, text, path, reason) from None

    return convert_parsed


# ==================================================================================================
# Literal and Enum: exact membership by JSON equality (1 == 1.0, true != 1)
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
        """What the function receives for `value`, or _NOT_FOUND."""
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


def literal(node: ir.Literal, limits: Limits) -> Converter:
    choices = _Choices()
    for value in node.values:
        choices.add(value, value)
    return _choice(node, choices)


def enum(node: ir.Enum, limits: Limits) -> Converter:
    allowed = _Choices()
    for value in node.values:
        allowed.add(value, value)
    if node.cls is None:
        return _choice(node, allowed)
    choices = _Choices()
    for member in node.cls:  # type: ignore[attr-defined]
        if allowed.find(member.value) is not _NOT_FOUND:
            choices.add(member.value, member)
    return _choice(node, choices)


def _choice(node: ir.Node, choices: _Choices) -> Converter:
    by_str, find = choices.by_str, choices.find

    def convert_choice(value: Any, path: str) -> Any:
        found = by_str.get(value, _NOT_FOUND) if type(value) is str else find(value)  # strings: most choices
        if found is _NOT_FOUND:
            raise mismatch(node, value, path)
        return found

    return convert_choice
