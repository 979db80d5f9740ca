"""What `python()` gives the model for a run's value, made while the run's deadline still holds.

A value is the code's own object: showing it may run the code's methods (`__repr__`, `__str__`,
`model_dump`, a property) and may be huge (`[0] * 10**8`). Done after the run, by the caller, a
`__repr__` that never ends hangs the tool call and a huge value takes seconds to turn into JSON
before the result is cut. So `execute.py` calls these functions under the run's deadline, and they
return something bounded whose rendering runs no code of the run's and takes little time:

- `model_value`: the value itself when it is small plain data (exact `str`/`int`/`float`/`bool`/
  `None`, and `list`/`tuple`/`dict` of those, under `VALUE_CHARS` in all); a rich result (an image, a
  figure: `content.content_parts`) as content records; anything else its JSON form (`values.to_json`,
  which may call the object's methods), and when that is not small, the start of its JSON text.
- `bounded_repr`: the value's repr for a run that printed (the repr follows the printed text), at
  most `VALUE_CHARS` characters; built containers show their first items without building the whole
  repr first.
"""

from __future__ import annotations

import json
from typing import Any

from ..shortening import Bounded, Full

VALUE_CHARS = 200_000  # a value shown as text is cut to this many characters (the caller cuts further)
_MOST_DEPTH = 100      # plain data nested deeper is shown as text
_MOST_RICH_ITEMS = 1_000  # a longer list is not searched for pictures
_CONTAINERS = (list, tuple, dict, set, frozenset)

def _is_small_plain(value: Any, budget: int = VALUE_CHARS) -> bool:
    """Whether `value` is plain data (exact builtin types; dict keys str or int) of at most about
    `budget` characters: rendering it runs no code of the run's and takes little time."""
    kind = type(value)
    if kind is int:  # the common results first
        return value.bit_length() <= 4000
    if value is None or kind is float or kind is bool:
        return True
    if kind is str:
        return len(value) <= budget
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        kind = type(item)
        if kind is str:
            budget -= len(item) + 2
        elif kind is int:
            if item.bit_length() > 4000:  # ~1,200 digits: its decimal text is slow to make
                return False
            budget -= 1
        elif kind is float or kind is bool or item is None:
            budget -= 1
        elif kind is list or kind is tuple:
            if depth >= _MOST_DEPTH or len(item) > budget:
                return False
            budget -= len(item) + 2
            stack.extend((inner, depth + 1) for inner in item)
        elif kind is dict:
            if depth >= _MOST_DEPTH or len(item) > budget:
                return False
            budget -= len(item) + 2
            for key, inner in item.items():
                if type(key) is not str and type(key) is not int:
                    return False
                stack.append((key, depth + 1))
                stack.append((inner, depth + 1))
        else:
            return False
        if budget < 0:
            return False
    return True


def model_value(value: Any) -> Any:
    """What `python()` returns for the run's value when it printed nothing (see the module docstring)."""
    if _is_small_plain(value):
        return value
    if type(value) is str:
        return _cut_text(value)
    from ..content import Content, content_parts
    from ..values import to_json

    if type(value) in _CONTAINERS and len(value) > _MOST_RICH_ITEMS:
        # large: its JSON text item by item, never the whole of it (a list mixing pictures and text
        # is short; a long one's items are not looked at for pictures)
        return _bounded_data(value)
    parts = content_parts(value)
    if parts is not None:
        shown = [part if isinstance(part, Content) else _bounded_data(to_json(part)) for part in parts]
        return shown[0] if len(shown) == 1 and not isinstance(value, (list, tuple)) else shown
    return _bounded_data(to_json(value))


def _bounded_data(data: Any) -> Any:
    """JSON data from `to_json` as it is when small; else the start of its JSON text."""
    if _is_small_plain(data):
        return data
    if type(data) is str:  # an object shown by its str()
        return _cut_text(data)
    text, cut = _bounded_text(data, VALUE_CHARS, as_json=True)
    if cut:
        return text + f"\n[truncated: the value's JSON is longer than {VALUE_CHARS:,} characters; only its start is shown]"
    return text


def _cut_text(text: str) -> str:
    if len(text) <= VALUE_CHARS:
        return text
    return text[:VALUE_CHARS] + f"\n[truncated: {len(text) - VALUE_CHARS:,} more characters not shown]"


def bounded_repr(value: Any) -> str:
    """The value's repr, at most `VALUE_CHARS` characters (with a marker when cut)."""
    try:
        text, cut = _bounded_text(value, VALUE_CHARS, as_json=False)
    except Exception as exc:  # a broken __repr__ must not turn into an exception for the model
        return f"<repr of {type(value).__name__} failed: {type(exc).__name__}: {exc}>"
    if cut:
        return text + f"\n[truncated: the value's repr is longer than {VALUE_CHARS:,} characters; only its start is shown]"
    return text


def repr_start(value: Any, limit: int) -> tuple[str, bool]:
    """The value's repr, at most `limit` characters: (text, whether it was cut). Built-in containers
    are walked and left at the limit; another object's `__repr__` is called once (its exceptions
    propagate)."""
    return _bounded_text(value, limit, as_json=False)


def _bounded_text(value: Any, limit: int, *, as_json: bool) -> tuple[str, bool]:
    """The value's JSON text (`as_json`) or repr, built piece by piece until `limit` characters:
    (text, whether it was cut). Built-in containers are walked; anything else is one `repr` (or
    `json.dumps`) call, whose text is then cut."""
    from ..values import to_json

    out = Bounded(limit)
    write = out.write
    active: set[int] = set()

    def emit(item: Any) -> None:
        kind = type(item)
        if kind is int:
            write(int.__repr__(item))
            return
        if kind is float or kind is bool or item is None:
            write(json.dumps(item) if as_json else repr(item))
            return
        if kind is str:
            head = item[:out.room()]
            write(json.dumps(head, ensure_ascii=False) if as_json else repr(head))
            if len(head) < len(item):
                raise Full
            return
        if kind is list or kind is tuple or kind is dict or kind is set or kind is frozenset:
            if id(item) in active:
                write("null" if as_json else "[...]" if kind is list else "{...}")
                return
            active.add(id(item))
            empty_set = kind in (set, frozenset) and not item
            if kind is dict:
                open_, close = "{", "}"
            elif kind is list or as_json:
                open_, close = "[", "]"
            elif kind is tuple:
                open_, close = "(", ",)" if len(item) == 1 else ")"
            else:
                open_, close = (f"{kind.__name__}()", "") if empty_set else (
                    ("{", "}") if kind is set else ("frozenset({", "})"))
            write(open_)
            for index, inner in enumerate(item.items() if kind is dict else item):
                if index:
                    write(", ")
                if kind is dict:
                    key, inner = inner
                    emit(str(key) if as_json and type(key) is not str else key)
                    write(": ")
                emit(inner)
            write(close)
            active.discard(id(item))
            return
        if as_json:
            data = to_json(item)
            if type(data) in _CONTAINERS:
                emit(data)
                return
            text = json.dumps(data, ensure_ascii=False, default=str)
        else:
            text = repr(item)
        write(text[:out.room()])

    try:
        emit(value)
    except (Full, RecursionError):
        return out.text(True)
    return out.text(False)
