"""`import nbtools` against the standard-library floor it cannot avoid.

The floor is importing `json, ast, inspect, typing, asyncio` (what the data path needs from the
standard library) in a fresh interpreter; ours is `import nbtools` in a fresh interpreter. Each is
timed inside the child around the import statement only (interpreter start-up is not counted), the
two alternate so drift hits both alike, and the medians are compared. Target: at most 1.3x.

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
PROBE = ("import time; t = time.perf_counter(); {stmt}; print((time.perf_counter() - t) * 1e6)")


def _child_us(stmt: str) -> float:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    # -I would drop PYTHONPATH; -s and no bytecode writing keep runs alike (cached .pyc are used)
    out = subprocess.run([sys.executable, "-s", "-c", PROBE.format(stmt=stmt)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return float(out.strip().splitlines()[-1])


def run(rounds: int = 25) -> list[dict]:
    _child_us(OURS)  # compile and cache bytecode once
    floor, ours = [], []
    for _ in range(rounds):
        floor.append(_child_us(FLOOR))
        ours.append(_child_us(OURS))
    floor_us, ours_us = statistics.median(floor), statistics.median(ours)
    ratio = ours_us / floor_us
    return [{"name": "import nbtools", "ours_us": ours_us, "ref_name": "import json, ast, inspect, typing, asyncio",
             "ref_us": floor_us, "ratio": ratio, "target": "<= 1.3x", "ok": ratio <= 1.3}]


if __name__ == "__main__":
    for row in run():
        print(row)
