"""What a client reads for a shared kernel variable (`sharing.share`): a typed preview, made under a
deadline and cut to a size.

A shared value is the person's object: previewing it may run its code (`__repr__`, a table's
`to_csv`, a figure's `savefig`) and it may be huge (`list(range(10**8))`, a wide table, a long text).
A read runs on the kernel's main thread, so an endless `__repr__` held the kernel for good and a huge
value went out whole. So every preview

* runs under a deadline of `PREVIEW_SECONDS` (`interp.timeouts`: SIGALRM on the main thread, the
  watchdog elsewhere; a handler that swallows the time-out is escalated): past it, the reader gets
  one line saying the preview was stopped;
* is built piece by piece up to `MAX_TEXT` characters (JSON and `repr` of built-in containers walk
  the value and stop at the limit, never building the whole text first); a text, JSON or CSV longer
  than that is cut, sent as `text/plain` (no longer valid JSON or CSV) with a last line saying so;
  bytes and images over `MAX_BYTES` are not sent (a line says so);
* tells the request's context what it cost (`note`: a slow preview's time, a cut, a stop), which the
  server writes into its activity log.

Types: `str` -> text; `bytes` -> a blob; a JSON value (dict, list, tuple, number, bool, None) ->
`application/json`; a table (anything with `head()` and `to_csv()`, e.g. a pandas or polars
DataFrame) -> its first `TABLE_ROWS` rows and `TABLE_COLUMNS` columns as `text/csv`; an image (PIL,
matplotlib, `IPython.display.Image`, `nbtools.Image`) -> the image; anything else -> its `repr`.
"""

from __future__ import annotations

import math
import time
from typing import Any

from .shortening import Bounded, Full

__all__ = ["preview", "PREVIEW_SECONDS", "MAX_TEXT", "MAX_BYTES", "TABLE_ROWS", "TABLE_COLUMNS"]

PREVIEW_SECONDS = 2.0  # a preview still being made after this is stopped
MAX_TEXT = 100_000  # characters of text, JSON, CSV or repr sent
MAX_BYTES = 8 << 20  # bytes of a blob or image sent
TABLE_ROWS = 20
TABLE_COLUMNS = 50
SLOW = 0.25  # a preview taking longer than this (seconds) is noted in the activity log
_MOST_DEPTH = 100  # JSON nested deeper is shown by its repr
_MOST_INT_BITS = 14_000  # a larger int has more decimal digits than Python converts by default (4,300)


class _NotJson(Exception):
    """The value holds something JSON has no form for (a set, NaN, an object, a cycle)."""


def preview(value: Any, *, seconds: float = PREVIEW_SECONDS) -> Any:
    """What a client reads for `value`: str, bytes, an `Image`, or a `Resource` (text with its MIME
    type), made within `seconds` and cut to `MAX_TEXT` characters (see the module docs)."""
    from .interp.result import TimeoutInterrupt
    from .interp.timeouts import call_with_deadline

    started = time.monotonic()
    try:
        made, cut = call_with_deadline(seconds, _typed, value)
    except TimeoutInterrupt:
        _note(f"preview stopped at its {seconds:g} s deadline")
        return (f"[no preview: the preview of this {_type_name(value)} stopped at its {seconds:g} s deadline "
                "(its repr, JSON, table or image took longer); share a smaller or simpler value]")
    took = time.monotonic() - started
    if took >= SLOW:
        _note(f"preview took {took:.1f} s")
    if cut is True:
        _note(f"preview cut to {MAX_TEXT:,} characters")
    elif cut:
        _note(cut)
    return made


def _typed(value: Any) -> tuple[Any, Any]:
    """(the preview, what was cut: None, True for a text cut, or a line saying what was left out)."""
    from .content import Image, Resource, as_content

    if isinstance(value, str):
        return _cut(str.__str__(value), "text")
    if isinstance(value, (bytes, bytearray)):
        return _blob(bytes(value) if len(value) <= MAX_BYTES else None, len(value), "bytes")
    rich = as_content(value)
    if isinstance(rich, Image):
        return _blob(rich if len(rich.data) <= MAX_BYTES else None, len(rich.data), "image")
    if _is_table(value):
        return _table(value)
    if value is None or isinstance(value, (bool, int, float, dict, list, tuple)):
        try:
            # small (the usual case): `json.dumps` in C, ~15x faster; else piece by piece to the limit
            text, cut = _json_dumps(value) if _json_size(value, MAX_TEXT) <= MAX_TEXT else _json_text(value, MAX_TEXT)
        except _NotJson:
            pass  # not plain JSON (a set inside, NaN, objects): its repr
        else:
            if cut:
                return _marked(text, "JSON"), True
            return Resource("json", text=text, mime="application/json"), None
    return _repr_text(value)


def _json_dumps(value: Any) -> tuple[str, bool]:
    import json

    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        raise _NotJson from None
    return (text[:MAX_TEXT], True) if len(text) > MAX_TEXT else (text, False)


def _json_size(value: Any, budget: int) -> int:
    """About how long `value`'s JSON text is (escapes aside), counted only until it passes `budget`
    (then `budget + 1`): nothing is built, so a huge value costs no more than a small one."""
    size = 0
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            size += len(item) + 2
        elif isinstance(item, (list, tuple, dict)):
            if depth >= _MOST_DEPTH:
                raise _NotJson
            size += 2 + 2 * len(item)
            if size > budget:
                return budget + 1
            if isinstance(item, dict):
                for key, inner in dict.items(item):
                    stack.append((key, depth + 1))
                    stack.append((inner, depth + 1))
            else:
                stack.extend((inner, depth + 1) for inner in item)
        elif isinstance(item, int) and not isinstance(item, bool):
            size += item.bit_length() // 3 + 2  # a decimal digit holds ~3.3 bits
        else:
            size += 5  # None, a bool, a float (its repr: up to ~24), or what is not JSON: json.dumps says
        if size > budget:
            return budget + 1
    return size


def _blob(made: Any, size: int, what: str) -> tuple[Any, Any]:
    if made is not None:
        return made, None
    line = f"[no preview: the {what} is {size:,} bytes, more than the {MAX_BYTES:,} a preview sends]"
    return line, f"{what} of {size:,} bytes not sent"


def _cut(text: str, what: str) -> tuple[str, bool]:
    if len(text) <= MAX_TEXT:
        return text, False
    return _marked(text[:MAX_TEXT], what), True


def _marked(start: str, what: str) -> str:
    return start + f"\n[cut: the value's {what} is longer than {MAX_TEXT:,} characters; only its start is shown]"


def _repr_text(value: Any) -> tuple[str, bool]:
    from .interp.shown import repr_start

    try:
        text, cut = repr_start(value, MAX_TEXT)
    except Exception as error:  # a broken __repr__: say so, as text
        return f"<repr of {_type_name(value)} failed: {type(error).__name__}: {error}>"[:MAX_TEXT], False
    return (_marked(text, "repr"), True) if cut else (text, False)


def _is_table(value: Any) -> bool:
    return (not isinstance(value, type) and callable(getattr(value, "head", None))
            and callable(getattr(value, "to_csv", None)))


def _table(value: Any) -> tuple[Any, Any]:
    """The first rows and columns as CSV (cut at a line when still too long: then plain text)."""
    from .content import Resource

    head = value.head(TABLE_ROWS)
    columns = getattr(head, "columns", None)
    try:
        wide = columns is not None and len(columns) > TABLE_COLUMNS
    except TypeError:
        wide = False
    if wide:
        if hasattr(head, "iloc"):  # pandas
            head = head.iloc[:, :TABLE_COLUMNS]
        elif callable(getattr(head, "select", None)):  # polars
            head = head.select(list(columns)[:TABLE_COLUMNS])
    text = head.to_csv()
    text = text if isinstance(text, str) else str(text)
    if len(text) <= MAX_TEXT:
        return Resource("table", text=text, mime="text/csv"), (f"preview shows the first {TABLE_COLUMNS} columns"
                                                               if wide else None)
    start = text[:MAX_TEXT]
    line_end = start.rfind("\n")
    return _marked(start[:line_end + 1] if line_end > 0 else start, "CSV"), True


def _json_text(value: Any, limit: int) -> tuple[str, bool]:
    """`json.dumps(value, allow_nan=False)`'s text, built piece by piece up to `limit` characters:
    (text, whether it was cut). `_NotJson` when the part read holds what JSON cannot carry."""
    import json

    out = Bounded(limit)
    write = out.write
    open_ids: set[int] = set()

    def emit(item: Any, depth: int) -> None:
        if item is None or item is True or item is False:
            write("null" if item is None else "true" if item else "false")
        elif isinstance(item, str):
            head = str.__getitem__(item, slice(0, out.room()))
            write(json.dumps(head, ensure_ascii=False))
            if len(head) < len(item):
                raise Full
        elif isinstance(item, int):
            if item.bit_length() > _MOST_INT_BITS:
                raise _NotJson
            write(int.__repr__(item))
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise _NotJson
            write(float.__repr__(item))
        elif isinstance(item, (list, tuple, dict)):
            if depth >= _MOST_DEPTH or id(item) in open_ids:
                raise _NotJson
            open_ids.add(id(item))
            is_dict = isinstance(item, dict)
            write("{" if is_dict else "[")
            for index, inner in enumerate(dict.items(item) if is_dict else item):
                if index:
                    write(", ")
                if is_dict:
                    key, inner = inner
                    emit(_json_key(key), depth + 1)
                    write(": ")
                emit(inner, depth + 1)
            write("}" if is_dict else "]")
            open_ids.discard(id(item))
        else:
            raise _NotJson

    try:
        emit(value, 0)
    except Full:
        return out.text(True)
    return out.text(False)


def _json_key(key: Any) -> str:
    """A dict key as `json.dumps` writes it (str, or a number, bool or None as text)."""
    if isinstance(key, str):
        return key
    if key is None or key is True or key is False:
        return "null" if key is None else "true" if key else "false"
    if isinstance(key, int) and key.bit_length() <= _MOST_INT_BITS:
        return int.__repr__(key)
    if isinstance(key, float) and math.isfinite(key):
        return float.__repr__(key)
    raise _NotJson


def _type_name(value: Any) -> str:
    """The class's own name (read through `type`'s descriptor: a metaclass cannot make it run code)."""
    return type.__dict__["__name__"].__get__(type(value))


def _note(text: str) -> None:
    """Tell the request being served what this preview cost (its activity log shows it)."""
    from .context import current_context

    try:
        context = current_context()
    except Exception:  # no request: a preview made directly
        return
    note = getattr(context, "note", None)
    if callable(note):
        note(text)
