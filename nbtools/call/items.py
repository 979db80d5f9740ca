"""What a generator tool yields, read only as far as the model can be shown.

A tool that `yield`s its results gives the model a list. The result text is cut at the result-size
limit (`Limits.max_result_chars`) anyway, so reading stops once what was read fills it: an endless
generator ends there, and a generator of large chunks never holds more than about one limit's
worth (plus one item) in memory. The generator is then closed (its `finally` blocks run).
"""

from __future__ import annotations

import json
from typing import Any, AsyncIterator, Iterator

from ..values import to_json

__all__ = ["Items", "read_items", "aread_items"]


class Items(list):
    """The items a generator yielded, as a list; `cut` is True when reading stopped at the limit
    (the generator may have had more)."""

    cut: bool = False


def _size(item: Any) -> int:
    """Characters `item` takes in the result's JSON text (1 when it cannot be rendered: the
    rendering of the whole result then says so)."""
    try:
        data = to_json(item)
        return len(data) + 2 if isinstance(data, str) else len(json.dumps(data, ensure_ascii=False))
    except Exception:
        return 1


def read_items(generator: Iterator[Any], max_chars: int) -> Items:
    """The items of a (sync) generator, read until their JSON text passes `max_chars`; closed after."""
    items = Items()
    total = 2  # the brackets
    try:
        for item in generator:
            items.append(item)
            total += _size(item) + 2  # the item and its separator
            if total > max_chars or len(items) >= max_chars:
                items.cut = True
                break
    finally:
        close = getattr(generator, "close", None)
        if close is not None:
            close()
    return items


async def aread_items(generator: AsyncIterator[Any], max_chars: int) -> Items:
    """The items of an async generator, read until their JSON text passes `max_chars`; closed after."""
    items = Items()
    total = 2
    try:
        async for item in generator:
            items.append(item)
            total += _size(item) + 2
            if total > max_chars or len(items) >= max_chars:
                items.cut = True
                break
    finally:
        close = getattr(generator, "aclose", None)
        if close is not None:
            await close()
    return items
