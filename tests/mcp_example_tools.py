"""Example tools for the MCP and command-line tests and for `notebooks/05_mcp.ipynb`.

One of each kind a server must handle: read-only, destructive, a non-object return (wrapped as
`{"result": ...}` in MCP's structured output), a dataclass return (an object), one that raises, and
an async one. They live in their own `Registry` so importing this module never touches the
process-wide `nbtools.registry`; serve them with

    nbtools serve tests/mcp_example_tools.py:example_tools
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal

from nbtools import Registry, tool

example_tools = Registry()

# A tiny in-memory "database" the destructive tool can change, so a test can see the effect.
notes: dict[str, str] = {"shopping": "milk, eggs", "todo": "write tests"}


@dataclass
class Stats:
    """Summary statistics of a list of numbers."""

    count: int  # how many numbers
    mean: float  # their average
    largest: float  # the biggest one


@tool(hints=["read-only", "idempotent"], registry=example_tools)
def add(a: int,  # first addend
        b: int = 1,  # second addend
        ) -> int:  # the sum
    "Add two integers."
    return a + b


@tool(hints="read-only", registry=example_tools)
def read_note(title: str) -> str:
    "The text of the note called `title`."
    if title not in notes:
        raise KeyError(f"no note called {title!r}; notes: {', '.join(sorted(notes))}")
    return notes[title]


@tool(hints="destructive", registry=example_tools)
def delete_note(title: str) -> bool:
    "Delete the note called `title`; True if it existed."
    existed = notes.pop(title, None) is not None
    # A tool that prints: over stdio this must not reach the protocol stream (stdout).
    print(f"deleted note {title!r}" if existed else f"no note {title!r} to delete")
    return existed


@tool(hints="read-only", registry=example_tools)
def stats(numbers: list[float]) -> Stats:
    "Count, mean and largest of a non-empty list of numbers."
    return Stats(count=len(numbers), mean=sum(numbers) / len(numbers), largest=max(numbers))


@tool(registry=example_tools)
def divide(numerator: float, denominator: float) -> float:
    "Divide two numbers (raises on division by zero)."
    return numerator / denominator


@tool(hints=["read-only", "open-world"], registry=example_tools)
async def greet(name: str, style: Literal["plain", "loud"] = "plain") -> str:
    "Greet someone, after a short pause (an async tool)."
    await asyncio.sleep(0.01)
    text = f"Hello, {name}!"
    return text.upper() if style == "loud" else text
