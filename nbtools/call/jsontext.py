"""The arguments object a model sent: parsed (a dict, or JSON text), then checked against the limits.

JSON text is parsed with NaN/Infinity refused; the size, nesting depth, container sizes, string
lengths and integer range are checked (`check_limits`) before free-form values are converted; and
duplicate keys in the text, which a plain parse would silently merge, are refused. The duplicate
check is cheap in the common case (see `check_limits`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Iterable

from ..policy import DEFAULT_LIMITS, Limits
from ..refusals import ConversionError, got, key_segment, key_text


class _NonFinite(ValueError):
    """NaN/Infinity in JSON text (Python's json accepts them; JSON does not)."""


def _refuse_constant(name: str) -> Any:
    raise _NonFinite(name)


# (text, index) -> (value, end): the documented `JSONDecoder.raw_decode`, NaN/Infinity refused
decode_json = json.JSONDecoder(parse_constant=_refuse_constant).raw_decode


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
    that is not an object. Duplicate keys are checked later (`check_limits`), cheaply.
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
        value, end = decode_json(text, start)
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
    by `check_limits`). `check_keys`: also refuse non-string object keys (dicts from Python callers).
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
            return f"[{key}]" if isinstance(key, int) and not isinstance(container, dict) else key_segment(key)
    return ""


def _inside(container: Any, item: Any, problem: str) -> ConversionError:
    error = ConversionError("", problem)
    error.segments.append(_segment_of(container, item))
    return error


def check_size(raw: dict, limits: Limits) -> None:
    """Refuse arguments given as a dict (or Mapping) whose JSON form would be over `limits.max_bytes`
    characters, before anything converts them.

    Adds up a lower bound of the JSON size (strings and keys with their quotes, containers'
    brackets and separators, one character per other value) and stops as soon as it passes the
    limit: 200 MB of strings costs as little to refuse as 1 MiB. A string, container or nesting
    over its own limit counts as nothing here: the exact checks that follow refuse it by name.
    """
    total = _json_size(raw, 1, limits, 0)
    if total > limits.max_bytes:
        raise ConversionError("", f"the arguments are too large: over {limits.max_bytes} characters as JSON, "
                                  f"the limit is {limits.max_bytes}")


def _json_size(container: Any, depth: int, limits: Limits, total: int) -> int:
    """`total` plus a lower bound of `container`'s JSON size; stops early (returning more than
    `limits.max_bytes`) once the sum passes it."""
    count = len(container)
    if count > limits.max_items or depth > limits.max_depth:
        return total
    total += 2 + count  # brackets and separators
    if type(container) is dict or (type(container) is not list and isinstance(container, Mapping)):
        for key in container:
            if type(key) is str:
                total += len(key) + 3  # "key":
        values: Iterable[Any] = container.values()
    else:
        values = container
    budget = limits.max_bytes
    for item in values:
        kind = type(item)
        if kind is int or kind is float or kind is bool or item is None:
            continue  # the one character the separator count gave it
        if kind is str or isinstance(item, str):
            if len(item) <= limits.max_string:
                total += len(item)
        elif kind is dict or kind is list or isinstance(item, (Mapping, list, tuple)):
            total = _json_size(item, depth + 1, limits, total)
        if total > budget:
            return total
    return total


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


def count_keys(container: Any) -> int:
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
            count += count_keys(item)
    return count


def no_key_dropped(text: str, keys: int) -> bool:
    """True when JSON `text`, parsed into objects holding `keys` keys in all, certainly held no key twice.

    Why a count settles it: every key in JSON text is followed by exactly one structural colon,
    and every other colon sits inside a string. Parsing keeps one entry per distinct key of an
    object, so `colons >= structural colons >= keys`, and the second is an equality exactly when
    no key was repeated (a repeated key has its colon but no entry of its own). So `colons == keys`
    proves no duplicate; anything else only means "look properly" (`check_limits` does).
    """
    return text.count(":") == keys


def check_limits(raw: dict, text: str | None, limits: Limits) -> None:
    """Limits on the whole arguments object, and the duplicate-key check for JSON text.

    Duplicate keys: settled by counting colons when it can be (`no_key_dropped`; without backslash
    escapes the colons inside strings can be subtracted exactly too); otherwise the text is parsed
    again, pair by pair.
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
    if no_key_dropped(text, keys) or ("\\" not in text and no_key_dropped(text, keys + _string_colons(raw))):
        return
    try:
        _STRICT_DECODER.decode(text)
    except _Duplicate as duplicate:
        raise ConversionError("", f"the key {key_text(duplicate.key)} appears twice in "
                                  "one object of the arguments JSON; send each key once") from None
