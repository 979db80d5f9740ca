"""Importing nbtools against the standard-library floor it cannot avoid.

Rows (each a fresh interpreter, timed inside the child around the import statement only, so
interpreter start-up is not counted; the statements alternate so drift hits all alike; medians):

Times are the child's CPU time (waiting for a core on a loaded machine is not counted).

- `import nbtools` against `import json, ast, inspect, typing, asyncio` (what the data path needs
  from the standard library): target <= 1.3x.
- `from nbtools import get_schema, call_func, python` (a schema, a call, the interpreter tool)
  against the same floor plus `dataclasses` (which reading a user's dataclass parameters needs):
  target <= 1.3x.

Measured 2026-11-26 (2-core shared VM, load 1.3-2.6; before and after alternated, same session):
row 2 went from 1.26-1.30x (6 runs) to 1.12-1.21x (6 runs), 1.28x -> 1.16x in instructions
(`bench/instructions.py`'s count); row 1 0.60x -> 0.56x. What moved: `python` no longer imports
the interpreter (`interp/pytool.py`), `Tool`/`Spec` without generated dataclass code, `call.answers`
and `content` served lazily.

Run: `python bench/bench_import.py` (prints a table) or through `bench/bench.py`.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLOOR = "import json, ast, inspect, typing, asyncio"
OURS = "import nbtools"
FLOOR_USED = "import json, ast, inspect, typing, asyncio, dataclasses"
OURS_USED = "from nbtools import get_schema, call_func, python"
# CPU time, not wall time: on a shared machine a child waits for a core more than it imports
PROBE = ("import time; t = time.process_time(); {stmt}; print((time.process_time() - t) * 1e6)")


def _child_us(stmt: str) -> float:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    # an installed package has its bytecode cached: without this, a PYTHONDONTWRITEBYTECODE set in
    # the environment makes every child compile nbtools from source (3x the import's cost)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    # -I would drop PYTHONPATH; -s keeps user site-packages out
    out = subprocess.run([sys.executable, "-s", "-c", PROBE.format(stmt=stmt)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return float(out.strip().splitlines()[-1])


def run(rounds: int = 25) -> list[dict]:
    _child_us(OURS_USED)  # compile and cache bytecode once
    pairs = [("import nbtools", OURS, FLOOR), ("import get_schema, call_func, python", OURS_USED, FLOOR_USED)]
    samples: dict[str, list[float]] = {stmt: [] for _, ours, floor in pairs for stmt in (ours, floor)}
    for _ in range(rounds):
        for stmt in samples:
            samples[stmt].append(_child_us(stmt))
    rows = []
    for name, ours, floor in pairs:
        ours_us, floor_us = statistics.median(samples[ours]), statistics.median(samples[floor])
        ratio = ours_us / floor_us
        rows.append({"name": name, "ours_us": ours_us, "ref_name": floor.removeprefix("import "),
                     "ref_us": floor_us, "ratio": ratio, "target": "<= 1.3x", "ok": ratio <= 1.3})
    return rows


if __name__ == "__main__":
    for row in run():
        print(row)
