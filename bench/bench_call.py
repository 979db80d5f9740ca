"""Dispatch: a model's call, from JSON text to the function's result, against the floor and pydantic.

Rows (all from the JSON text a model sends, measured in one run, batches interleaved):

- `add(a: int, b: int)` from `'{"a": 1, "b": 2}'` through `call_func` (registry lookup, parse,
  limits, duplicate-key check, validation, conversion, call) against the floor `json.loads` plus a
  direct call: target <= 1.5x.
- the same against `pydantic.validate_call` (`json.loads`, then the validated call): target faster.
- a nested dataclass argument (a Segment of two Points and a label) through `call_func`, against
  the floor of `json.loads`, building the dataclasses by hand and calling: target <= 4x.
- the nested call against `pydantic.validate_call` on the same function (for information).
- a call from a dict (what Anthropic and Gemini SDKs hand over) and a refused call (for information).

Run: `python bench/bench_call.py` (prints a table) or through `bench/bench.py`.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ADD_TEXT = '{"a": 1, "b": 2}'
SEGMENT_TEXT = '{"seg": {"start": {"x": 0, "y": 0.5}, "end": {"x": 3.5, "y": 4}, "label": "diagonal"}}'


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@dataclasses.dataclass
class Point:
    x: float
    y: float


@dataclasses.dataclass
class Segment:
    start: Point
    end: Point
    label: str = ""


def length(seg: Segment) -> float:
    """The length of a segment."""
    return ((seg.end.x - seg.start.x) ** 2 + (seg.end.y - seg.start.y) ** 2) ** 0.5


def per_call_us(functions: dict[str, Callable[[], Any]], calls: int = 2000, rounds: int = 41, *,
                warm: int = 200, collector: bool = False) -> dict[str, float]:
    """Median µs per call of each function (CPU time); rounds interleave the functions so drift hits
    all alike. The collector is off while timing, unless `collector` (then it runs as it would, after
    a collection before each batch: what a function allocates costs collections)."""
    samples: dict[str, list[float]] = {name: [] for name in functions}
    for fn in functions.values():  # warm caches (compiled converters, pydantic validators)
        for _ in range(warm):
            fn()
    gc_was_enabled = gc.isenabled()
    if not collector:
        gc.disable()
    try:
        for _ in range(rounds):
            for name, fn in functions.items():
                if collector:
                    gc.collect()
                start = time.process_time_ns()
                for _ in range(calls):
                    fn()
                samples[name].append((time.process_time_ns() - start) / calls / 1000)
    finally:
        if gc_was_enabled:
            gc.enable()
    return {name: statistics.median(values) for name, values in samples.items()}


def row(name: str, ours: float, ref_name: str, ref: float, target: str, limit: float | None) -> dict:
    ratio = ours / ref
    return {"name": name, "ours_us": ours, "ref_name": ref_name, "ref_us": ref, "ratio": ratio,
            "target": target, "ok": None if limit is None else ratio <= limit}


def run() -> list[dict]:
    import pydantic

    from nbtools import Registry
    from nbtools.call import call_func

    registry = Registry([add, length])
    loads = json.loads
    add_validated = pydantic.validate_call(add)
    length_validated = pydantic.validate_call(length)
    assert call_func("add", ADD_TEXT, ns=registry) == add(**loads(ADD_TEXT)) == add_validated(**loads(ADD_TEXT))
    assert call_func("length", SEGMENT_TEXT, ns=registry) == length_validated(**loads(SEGMENT_TEXT))
    add_dict = {"a": 1, "b": 2}

    def floor_segment() -> float:
        data = loads(SEGMENT_TEXT)["seg"]
        return length(Segment(Point(**data["start"]), Point(**data["end"]), data["label"]))

    times = per_call_us({
        "ours_add": lambda: call_func("add", ADD_TEXT, ns=registry),
        "floor_add": lambda: add(**loads(ADD_TEXT)),
        "pydantic_add": lambda: add_validated(**loads(ADD_TEXT)),
        "ours_segment": lambda: call_func("length", SEGMENT_TEXT, ns=registry),
        "floor_segment": floor_segment,
        "pydantic_segment": lambda: length_validated(**loads(SEGMENT_TEXT)),
        "ours_add_dict": lambda: call_func("add", add_dict, ns=registry),
        "floor_add_dict": lambda: add(**add_dict),
        "ours_refused": lambda: call_func("add", '{"a": "1", "b": 2}', ns=registry, raise_on_err=False),
    })
    return [
        row("add from JSON text", times["ours_add"], "json.loads + call", times["floor_add"], "<= 1.5x", 1.5),
        row("add from JSON text", times["ours_add"], "pydantic.validate_call", times["pydantic_add"], "< 1x", 1.0),
        row("nested dataclass arg", times["ours_segment"], "json.loads + build + call", times["floor_segment"],
            "<= 4x", 4.0),
        row("nested dataclass arg", times["ours_segment"], "pydantic.validate_call", times["pydantic_segment"],
            "info", None),
        row("add from a dict", times["ours_add_dict"], "direct call", times["floor_add_dict"], "info", None),
        row("refused ('5' for int)", times["ours_refused"], "json.loads + call", times["floor_add"], "info", None),
    ]


def main() -> int:
    rows = run()
    header = ["name", "ours_us", "ref_name", "ref_us", "ratio", "target", "ok"]
    table = [header] + [[f"{value:.2f}" if isinstance(value, float) else str(value) for value in
                         (item[key] for key in header)] for item in rows]
    widths = [max(len(line[index]) for line in table) for index in range(len(header))]
    for line in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths)))
    return 0 if all(item["ok"] is not False for item in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
