"""Code mode: what a tool call costs from a model's code (Monty, `Registry.code_tool`) against the
same call made directly (`registry.call`).

Rows (wall-clock medians: the code runs in Monty's worker process, whose time CPU time here would
not see; both sides measured in one run, rounds interleaved):

- a tool call from code: (a run making 200 calls - the same run making none) / 200, against one
  direct `registry.call` with the same arguments: the cost of the crossing (the round trip to the
  worker, binding the call's arguments, the JSON form of the result, the call record), for information.
- a 20-call aggregation in one run (`sum(add(i) for i in range(20))`, the whole run: checkout,
  code, 20 calls, answer) against 20 direct `registry.call`s, for information: code mode saves
  model turns (a request each, seconds), not microseconds.

Run: `python bench/bench_codemode.py` (prints a table) or through `bench/bench.py`. Needs the
`[codemode]` extra; without it the section says so and has no rows.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_call import row  # noqa: E402


def add(a: int, b: int = 1) -> int:
    """Add two integers."""
    return a + b


def wall_us(functions: dict[str, Callable[[], Any]], repeat: int, rounds: int = 15, warm: int = 2) -> dict[str, float]:
    """Median wall-clock µs of one call of each function (each timed `repeat` times a round)."""
    samples: dict[str, list[float]] = {name: [] for name in functions}
    for fn in functions.values():
        for _ in range(warm):
            fn()
    for _ in range(rounds):
        for name, fn in functions.items():
            start = time.perf_counter_ns()
            for _ in range(repeat):
                fn()
            samples[name].append((time.perf_counter_ns() - start) / repeat / 1000)
    return {name: statistics.median(values) for name, values in samples.items()}


def run() -> list[dict]:
    try:
        import pydantic_monty  # noqa: F401
    except ImportError:
        print("bench_codemode: pydantic-monty is not installed (the [codemode] extra): no rows", file=sys.stderr)
        return []
    from nbtools import Registry

    registry = Registry([add])
    code_tool = registry.code_tool(max_tool_calls=1000)
    many = "for i in range(200):\n    add(i, b=2)"
    none = "for i in range(200):\n    i + 2"
    twenty = "sum(add(i) for i in range(20))"
    assert code_tool.call({"code": twenty})["value"] == sum(add(i) for i in range(20))
    assert len(code_tool.call({"code": many})["calls"]) == 200

    def direct_twenty() -> int:
        return sum(registry.call("add", {"a": i}) for i in range(20))

    runs = wall_us({"many": lambda: code_tool.call({"code": many}), "none": lambda: code_tool.call({"code": none}),
                    "twenty": lambda: code_tool.call({"code": twenty})}, repeat=3)
    direct = wall_us({"one": lambda: registry.call("add", {"a": 7, "b": 2}), "twenty": direct_twenty}, repeat=200)
    crossing = (runs["many"] - runs["none"]) / 200
    return [
        row("tool call from code (per call)", crossing, "direct registry.call", direct["one"], "info", None),
        row("20-call aggregation, one run", runs["twenty"], "20 direct registry.call", direct["twenty"], "info", None),
    ]


if __name__ == "__main__":
    for line in run():
        print(line)
