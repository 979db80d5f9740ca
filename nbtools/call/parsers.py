"""String-borne values: the fixed list of Python types a JSON string converts to, and their parsers.

Each parser takes the text and returns the value or raises one of `PARSE_FAILURES` with a reason a
model can act on. Nothing outside this list is ever built from a string a model sent. The modules
of those types (datetime, decimal, uuid, pathlib) are imported when a tool takes one of them, not
with nbtools: a parameter of such a type means its module is already loaded.
"""

from __future__ import annotations

import base64
import binascii
import re
import sys
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    import datetime as dt
    import decimal

# the language of the schema's pattern, written to match in linear time (no two parts can match the
# same digits, which would backtrack quadratically on a long run of digits)
# (patterns are compiled by `re` on first use and kept in its cache: none is needed to import nbtools)
_DECIMAL_TEXT = r"(?a)[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\Z"  # (?a): ASCII, digits are 0-9 only
_DECIMAL_MAX_EXPONENT = 4300  # the same bound Python puts on int <-> str digits


def parse_decimal(text: str) -> decimal.Decimal:
    """A finite Decimal written like a JSON number (`12.50`, `-3e2`), exponent within +-4300."""
    if not re.match(_DECIMAL_TEXT, text):
        raise ValueError("write it like a JSON number, e.g. 12.50 or -3e2")
    from decimal import Decimal  # loaded already: a Decimal parameter was declared

    number = Decimal(text)
    if abs(number.adjusted()) > _DECIMAL_MAX_EXPONENT:
        raise ValueError(f"the exponent is beyond +-{_DECIMAL_MAX_EXPONENT}")
    return number


_DURATION = (
    r"(?a)(?P<sign>[-+])?P(?!\Z)"
    r"(?:(?P<years>\d+(?:[.,]\d+)?)Y)?(?:(?P<months>\d+(?:[.,]\d+)?)M)?"
    r"(?:(?P<weeks>\d+(?:[.,]\d+)?)W)?(?:(?P<days>\d+(?:[.,]\d+)?)D)?"
    r"(?:T(?!\Z)(?:(?P<hours>\d+(?:[.,]\d+)?)H)?(?:(?P<minutes>\d+(?:[.,]\d+)?)M)?"
    r"(?:(?P<seconds>\d+(?:[.,]\d+)?)S)?)?\Z"  # (?a): ISO 8601 digits are 0-9
)


def parse_duration(text: str) -> dt.timedelta:
    """An ISO 8601 duration (`P1DT2H30M`, `PT0.5S`, `P2W`, `-P1D`) as a timedelta.

    Years and months are refused: their length depends on the calendar, a timedelta has none.
    """
    match = re.match(_DURATION, text.strip().upper())
    if match is None:
        raise ValueError("not an ISO 8601 duration")
    parts = match.groupdict()
    if parts["years"] or parts["months"]:
        raise ValueError("years and months have no fixed length; use weeks, days, hours, minutes, seconds")

    def amount(name: str) -> float:
        raw = parts[name]
        return float(raw.replace(",", ".")) if raw else 0.0

    from datetime import timedelta

    delta = timedelta(weeks=amount("weeks"), days=amount("days"), hours=amount("hours"),
                         minutes=amount("minutes"), seconds=amount("seconds"))
    return -delta if parts["sign"] == "-" else delta


def parse_base64(text: str) -> bytes:
    """Bytes from strict base64 (characters outside the alphabet are refused, not skipped)."""
    return base64.b64decode(text, validate=True)


def path_parser(cls: type) -> Callable[[str], Any]:
    """A parser building `cls` (a PurePath subclass) from text without NUL characters."""
    def parse(text: str) -> Any:
        if "\x00" in text:
            raise ValueError("a path cannot contain NUL characters")
        return cls(text)

    return parse


def parse_pattern(text: str) -> re.Pattern:
    """A regular expression from its text (`re.Pattern` parameters); a bad one is a ValueError."""
    try:
        return re.compile(text)
    except re.error as error:
        raise ValueError(str(error)) from None  # the words say "a valid regular expression" already


_STRING_PARSERS: dict[type, Callable[[str], Any]] = {}  # filled on first need (see the module's text)
STRING_TYPE_MODULES = frozenset(("datetime", "uuid", "decimal", "builtins", "re"))
"""The modules of the types in the table (looked up exactly: a subclass is not in it)."""


def _string_parsers() -> dict[type, Callable[[str], Any]]:
    if not _STRING_PARSERS:
        import datetime as dt
        import decimal
        import uuid

        _STRING_PARSERS.update({
            dt.datetime: dt.datetime.fromisoformat,
            dt.date: dt.date.fromisoformat,
            dt.time: dt.time.fromisoformat,
            dt.timedelta: parse_duration,
            uuid.UUID: uuid.UUID,
            decimal.Decimal: parse_decimal,
            bytes: parse_base64,
            bytearray: lambda text: bytearray(parse_base64(text)),
            re.Pattern: parse_pattern,
        })
    return _STRING_PARSERS


PARSE_FAILURES = (ValueError, TypeError, OverflowError, ArithmeticError, binascii.Error)
"""What a parser raises for text it refuses."""


def string_parser(py: Any) -> Callable[[str], Any] | None:
    """The parser for strings declared as `py`; None for a type no string converts to."""
    if py is None or py is str:
        return None
    pathlib = sys.modules.get("pathlib")  # a Path type exists only once pathlib is imported
    if pathlib is not None and isinstance(py, type) and issubclass(py, pathlib.PurePath):
        return path_parser(py)
    if getattr(py, "__module__", None) not in STRING_TYPE_MODULES:
        return None
    return _string_parsers().get(py)
