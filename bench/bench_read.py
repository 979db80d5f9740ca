"""Schema reading: a Tool built from a schema someone else wrote (`Tool.from_schema`, as `connect()`
and `mk_tool` do), for plain JSON Schema and for Gemini's OpenAPI dialect (upper-case types,
`nullable`), which `formats.plainschema` makes plain first.

The schemas are the 23 bound methods of `bench_replay` rendered as "neutral" and "gemini-openapi".
Rows: microseconds per schema (the best of the passes), or with `--instructions` the instructions
one pass executes (valgrind's cachegrind, a child that reads nothing subtracted: deterministic on a
loaded machine).

Run: `python bench/bench_read.py [--instructions]`. Not a section of `bench.py`.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

PASSES = 30


def schemas(fmt: str) -> list[tuple[str, dict]]:
    import bench_replay

    from nbtools import get_schema

    rows = []
    for method in bench_replay.bound_methods():
        definition = get_schema(method, fmt)
        rows.append((definition["name"], definition["parameters"]))
    return rows


def read_all(rows: list[tuple[str, dict]]) -> None:
    from nbtools import Tool

    for name, parameters in rows:
        Tool.from_schema(name, "", parameters, None)


def child(fmt: str, passes: int) -> None:
    """Read the schemas of `fmt` once to warm up, then `passes` more times (run under valgrind)."""
    rows = schemas(fmt)
    read_all(rows)
    for _ in range(passes):
        read_all(rows)


def instructions(fmt: str, passes: int = 10) -> int:
    def count(n: int) -> int:
        out = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                              sys.executable, __file__, "--child", fmt, str(n)],
                             capture_output=True, text=True, check=True, timeout=600).stderr
        return int(re.search(r"I\s+refs:\s+([\d,]+)", out).group(1).replace(",", ""))
    return (count(passes) - count(0)) // passes


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        child(argv[1], int(argv[2]))
        return 0
    for label, fmt in (("plain JSON Schema", "neutral"), ("Gemini OpenAPI dialect", "gemini-openapi")):
        if "--instructions" in argv:
            if shutil.which("valgrind") is None:
                print("--instructions needs valgrind")
                return 1
            print(f"{label:24} {instructions(fmt):>12,} instructions per pass of 23 schemas")
            continue
        rows = schemas(fmt)
        read_all(rows)
        best = float("inf")
        for _ in range(PASSES):
            start = time.perf_counter()
            read_all(rows)
            best = min(best, time.perf_counter() - start)
        print(f"{label:24} {best * 1e6 / len(rows):8.1f} us per schema")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
