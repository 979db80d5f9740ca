"""Run every benchmark section (`bench/bench_*.py`) and print one table of medians and ratios.

Each section module exposes `run() -> list[dict]` with keys name, ours_us, ref_name, ref_us, ratio,
target, ok. Targets are checked here, never in unit tests. Usage: `python bench/bench.py [section ...]`.
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent


def sections(wanted: list[str]) -> list[pathlib.Path]:
    """The section files to run (all when `wanted` is empty); ValueError naming an unknown section and
    the known ones (a typo used to run nothing and exit 0)."""
    found = sorted(HERE.glob("bench_*.py"))
    known = [path.stem.removeprefix("bench_") for path in found]
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise ValueError(f"unknown section{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
                         f"the sections are: {', '.join(known)}")
    if wanted:
        found = [path for path in found if path.stem.removeprefix("bench_") in wanted]
    return found


def load(path: pathlib.Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.2f}" if value < 100 else f"{value:.0f}"
    return "" if value is None else str(value)


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(HERE.parent))
    rows: list[dict] = []
    try:
        chosen = sections(argv)
    except ValueError as error:
        print(f"bench.py: {error}", file=sys.stderr)
        return 2
    for path in chosen:
        print(f"running {path.name} ...", file=sys.stderr, flush=True)
        for row in load(path).run():
            rows.append({"section": path.stem.removeprefix("bench_"), **row})
    header = ["section", "name", "ours_us", "ref_name", "ref_us", "ratio", "target", "ok"]
    table = [header] + [[fmt(row.get(key)) for key in header] for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for line in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths)))
    failed = [row for row in rows if row.get("ok") is False]
    print(f"\n{len(rows) - len(failed)} of {len(rows)} targets met")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
