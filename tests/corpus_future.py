"""Corpus functions written under `from __future__ import annotations` (every annotation is a string).

Kept in its own module because the future import applies to a whole file.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Optional

import typing_extensions


@dataclasses.dataclass
class Box:
    """A box with a label."""

    label: str
    size: Optional[int] = None


def pack(box: Box, count: int = 1, tags: list[str] | None = None, *, fragile: bool = False) -> Box:
    return box


@dataclasses.dataclass
class Chain:
    """A linked list whose annotation names itself before the class exists."""

    value: int
    next: Chain | None = None


def walk(chain: Chain):
    return chain


class Options(typing.TypedDict, total=False):
    """Python 3.11 computes `__required_keys__` from the string annotations and misses `Required`."""

    verbose: bool
    level: typing.Required[int]


class Layout(typing_extensions.TypedDict):
    width: int
    height: typing_extensions.NotRequired[int]


def render(options: Options, layout: Layout):
    return options, layout
