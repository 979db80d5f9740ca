"""Python values -> plain JSON data: the one conversion behind schema defaults and tool results.

`types.json_default` needs a default's *faithful* JSON form or nothing (`ir.MISSING`, so the schema
leaves the default out rather than show something the function would not receive); a tool's result
(`call.result_text`, MCP's structured content) needs *some* JSON for any value a tool returns (text
stands in for what JSON cannot hold). Both convert the same families the same way; only what
happens to a value with no JSON form differs, which is the `strict` switch.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
import math
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import datetime as dt

from . import ir

__all__ = ["to_json", "duration_text"]

_MAX_DEPTH = 200
_FLOAT_WORDS = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


class _NoJSONForm(Exception):
    """Raised in strict mode at the first part of a value that JSON cannot hold faithfully."""


def to_json(value: Any, *, strict: bool = False) -> Any:
    """`value` as plain JSON data. Dataclasses, NamedTuples and pydantic models become objects,
    Enums their values, datetimes/UUIDs/Decimals/Paths text, timedeltas ISO 8601 durations, bytes
    base64, sets sorted lists, numpy values their `tolist()`.

    What has no JSON form (a non-finite float, a cycle, nesting deeper than 200, a mapping key
    that is not a string or an integer, any other object): with `strict`, the whole value is
    `ir.MISSING`; otherwise text stands in for that part ("NaN", "<cycle>", the object's `str()`).
    """
    try:
        return _convert(value, strict, set(), 0)
    except _NoJSONForm:
        return ir.MISSING


def _stand_in(text: str, strict: bool) -> str:
    if strict:
        raise _NoJSONForm
    return text


def _convert(value: Any, strict: bool, active: set[int], depth: int) -> Any:
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:  # the common case first
        return value
    if kind is float:
        return value if math.isfinite(value) else _stand_in(_FLOAT_WORDS.get(repr(value), repr(value)), strict)
    if depth > _MAX_DEPTH:
        return _stand_in("<nested too deeply>", strict)
    if isinstance(value, enum.Enum):
        return _convert(value.value, strict, active, depth + 1)
    if isinstance(value, str):  # subclasses of the scalars, as the plain scalars
        return str.__str__(value)
    if isinstance(value, int):
        return int.__index__(value)
    if isinstance(value, float):
        return _convert(float(value), strict, active, depth)
    text = _string_borne(value)
    if text is not None:
        return text
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    marker = id(value)
    if marker in active:
        return _stand_in("<cycle>", strict)
    active.add(marker)
    try:
        return _convert_container(value, strict, active, depth)
    finally:
        active.discard(marker)


def _string_borne(value: Any) -> str | None:
    """The text of a datetime, date, time, timedelta, UUID, Decimal or path; None for anything else.
    Their modules are not imported for this: a value of one of their types means it is loaded."""
    modules = sys.modules
    dt = modules.get("datetime")
    if dt is not None:
        if isinstance(value, (dt.datetime, dt.date, dt.time)):
            return value.isoformat()
        if isinstance(value, dt.timedelta):
            return duration_text(value)
    for name, attribute in (("uuid", "UUID"), ("decimal", "Decimal"), ("pathlib", "PurePath")):
        module = modules.get(name)
        if module is not None and isinstance(value, getattr(module, attribute)):
            return str(value)
    return None


def _convert_container(value: Any, strict: bool, active: set[int], depth: int) -> Any:
    if isinstance(value, Mapping):
        return {_key(key, strict): _convert(item, strict, active, depth + 1) for key, item in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # NamedTuple: an object of its fields
        return {name: _convert(item, strict, active, depth + 1) for name, item in zip(value._fields, value)}
    if isinstance(value, (list, tuple)):
        return [_convert(item, strict, active, depth + 1) for item in value]
    if isinstance(value, (set, frozenset)):
        items = [_convert(item, strict, active, depth + 1) for item in value]
        try:
            return sorted(items)
        except TypeError:  # mixed kinds: still a stable order
            return sorted(items, key=lambda item: json.dumps(item, sort_keys=True, default=str))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {item.name: _convert(getattr(value, item.name), strict, active, depth + 1)
                for item in dataclasses.fields(value)}
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump) and hasattr(type(value), "model_fields"):  # pydantic, without importing it
        return model_dump(mode="json", by_alias=True)  # aliases both ways, as parameters (and FastAPI)
    if type(value).__module__.split(".")[0] == "numpy" and hasattr(value, "tolist"):
        return _convert(value.tolist(), strict, active, depth + 1)
    return _stand_in(str(value), strict)


def _key(key: Any, strict: bool) -> str:
    """A mapping key as a JSON object key: strings and integers as written; in strict mode
    nothing else (JSON would turn `None`, `True` or `1.5` into text the function never used)."""
    if isinstance(key, str):
        return str.__str__(key)
    if isinstance(key, enum.Enum):
        return _key(key.value, strict)
    if isinstance(key, int) and not isinstance(key, bool):
        return str(int.__index__(key))
    if strict:
        raise _NoJSONForm
    if key is None or isinstance(key, (bool, float)):
        return json.dumps(key)
    converted = _convert(key, False, set(), 0)
    return converted if isinstance(converted, str) else json.dumps(converted, sort_keys=True)


def duration_text(value: dt.timedelta) -> str:
    """ISO 8601 duration of a timedelta (`P1DT2H3M4.5S`), what JSON Schema's `duration` format means."""
    total = value.total_seconds()
    sign = "-" if total < 0 else ""
    total = abs(total)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    out = f"{sign}P"
    if days:
        out += f"{int(days)}D"
    time_part = ""
    if hours:
        time_part += f"{int(hours)}H"
    if minutes:
        time_part += f"{int(minutes)}M"
    if seconds or not (days or hours or minutes):
        time_part += (f"{seconds:.6f}".rstrip("0").rstrip(".") if seconds != int(seconds) else str(int(seconds))) + "S"
    return out + ("T" + time_part if time_part else "")
