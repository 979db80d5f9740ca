"""Schema generation: nbtools against pydantic's TypeAdapter and fastcore's get_schema, in one run.

Three shapes (small: 2 parameters; medium: 6 parameters and a Google docstring; large: 12
parameters with a nested dataclass, a TypedDict, an Enum, a tuple, a dict of lists and docments
comments), measured:

- cold: every round execs the shape's source again, so the function *and its classes* are new
  objects and every cache starts empty (nbtools' per-function and per-class caches, pydantic's
  schema building). Exec'ing is not timed; the source is registered in `linecache` so comments and
  `inspect.getsource` work for everyone. nbtools extracts every description (docstring sections,
  comments); pydantic's `TypeAdapter(fn).json_schema()` describes the arguments without them;
  fastcore's `get_schema` reads comments and docstrings like nbtools does.
- warm: the same function again (nbtools caches per function object; pydantic's warm path is a
  prebuilt adapter's `json_schema()`).
- registry: `registry.schemas("openai")` over 200 registered tools, warm, against the floor of
  copying 200 cached dicts.

Run: `python bench/bench_schema.py` (prints a table) or through `bench/bench.py`.
"""

from __future__ import annotations

import gc
import itertools
import linecache
import statistics
import sys
import textwrap
import time
import types
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SMALL = '''
def small(a: int, b: str = "x") -> int:
    """Repeat a word a number of times."""
    return a
'''

MEDIUM = '''
def medium(query: str, limit: int = 10, offset: int = 0, sort: str = "relevance",
           exact: bool = False, tags: list[str] | None = None) -> list[str]:
    """Search the catalogue for matching titles.

    Results come back best first.

    Args:
        query: words to look for
        limit: how many results to return
        offset: how many results to skip
        sort: "relevance" or "date"
        exact: match whole words only
        tags: only titles carrying all of these tags

    Returns:
        the matching titles
    """
    return []
'''

LARGE = '''
import dataclasses
import datetime
import enum
from typing import Optional
from typing_extensions import TypedDict


class Priority(enum.Enum):
    LOW = "low"
    HIGH = "high"


@dataclasses.dataclass
class Address:
    """Where a parcel goes."""

    street: str         # street and number
    city: str           # city name
    postcode: str = ""  # postal code, if known


@dataclasses.dataclass
class Customer:
    name: str            # full name
    address: Address     # where to ship
    tags: list[str] = dataclasses.field(default_factory=list)  # loyalty tags


class Options(TypedDict, total=False):
    gift: bool  # wrap as a gift
    note: str   # message on the card


def large(
    customer: Customer,                       # who orders
    items: dict[str, list[int]],              # item code -> quantity per box
    priority: Priority,                       # how urgent
    window: tuple[int, int],                  # delivery window, first and last hour
    options: Options,                         # extras
    coupon: Optional[str] = None,             # discount code
    when: Optional[datetime.datetime] = None, # ship date, default today
    weight: float = 0.0,                      # total weight in kg
    fragile: bool = False,                    # handle with care
    insured: bool = True,                     # add insurance
    boxes: int = 1,                           # number of boxes
    notes: Optional[list[str]] = None,        # free-text notes for the courier
) -> str:  # the tracking number
    """Create a shipment."""
    return ""
'''

SHAPES = {"small": (SMALL, "small"), "medium": (MEDIUM, "medium"), "large": (LARGE, "large")}
_counter = itertools.count()


class FreshSource:
    """Compiles a shape's source once; each `fresh()` execs it into new objects (untimed)."""

    def __init__(self, source: str, name: str):
        self.source = textwrap.dedent(source)
        self.name = name
        self.lines = self.source.splitlines(keepends=True)

    def fresh(self) -> tuple[Callable[..., Any], str]:
        """A new function (and new classes) from the source, as a module named in `sys.modules`
        (dataclasses and pydantic look their module up); `forget(key)` removes it again."""
        key = f"bench_schema_{self.name}_{next(_counter)}"
        filename = f"<{key}>"
        linecache.cache[filename] = (len(self.source), None, self.lines, filename)
        module = types.ModuleType(key)
        module.__file__ = filename
        sys.modules[key] = module
        exec(compile(self.source, filename, "exec"), module.__dict__)  # noqa: S102 - our own source
        return getattr(module, self.name), key


def forget(key: str) -> None:
    linecache.cache.pop(f"<{key}>", None)
    sys.modules.pop(key, None)


def _median_us(samples_ns: list[int]) -> float:
    return statistics.median(samples_ns) / 1000.0


def time_cold(shape: FreshSource, run: Callable[[Callable[..., Any]], Any], rounds: int) -> float:
    """Median µs of `run(fn)` on a freshly exec'd function (and classes) each round."""
    samples = []
    for _ in range(rounds):
        fn, key = shape.fresh()
        start = time.perf_counter_ns()
        run(fn)
        samples.append(time.perf_counter_ns() - start)
        del fn
        forget(key)
    return _median_us(samples)


def time_warm(run: Callable[[], Any], repeats: int, inner: int = 20) -> float:
    """Median µs per call of `run()` (batches of `inner` calls, so timer overhead stays small)."""
    run()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        for _ in range(inner):
            run()
        samples.append((time.perf_counter_ns() - start) // inner)
    return _median_us(samples)


def _row(name: str, ours: float, ref_name: str, ref: float | None, target: str, ok: bool) -> dict:
    ratio = ours / ref if ref else None
    return {"name": name, "ours_us": round(ours, 2), "ref_name": ref_name,
            "ref_us": None if ref is None else round(ref, 2),
            "ratio": None if ratio is None else round(ratio, 2), "target": target, "ok": ok}


def _check_descriptions(shape: str, fn: Callable[..., Any]) -> None:
    """The cold path being timed really extracts every description (else the comparison is unfair)."""
    from nbtools import get_schema

    definition = get_schema(fn)
    properties = definition["parameters"]["properties"]
    missing = [key for key, value in properties.items() if "description" not in value]
    if shape != "small" and missing:
        raise AssertionError(f"{shape}: parameters without description: {missing}")
    if shape == "large":
        customer = definition["parameters"]["$defs"]["Customer"] if "$defs" in definition["parameters"] \
            else properties["customer"]
        assert customer["properties"]["name"]["description"] == "full name", customer
        assert definition["description"].endswith("Returns: str - the tracking number"), definition


def run(rounds: int = 300, repeats: int = 300) -> list[dict]:
    import fastcore.funccall
    import pydantic

    from nbtools import Registry, get_schema

    rows: list[dict] = []
    gc_was_enabled = gc.isenabled()
    for shape_name, (source, fn_name) in SHAPES.items():
        shape = FreshSource(source, fn_name)
        fn, _ = shape.fresh()
        _check_descriptions(shape_name, fn)
        gc.disable()  # collections land in random rounds otherwise; we collect between batches
        try:
            ours_cold = time_cold(shape, lambda f: get_schema(f), rounds)
            gc.collect()
            pydantic_cold = time_cold(shape, lambda f: pydantic.TypeAdapter(f).json_schema(), rounds)
            gc.collect()
            try:
                fastcore_cold: float | None = time_cold(shape, lambda f: fastcore.funccall.get_schema(f), rounds)
            except Exception as error:  # fastcore cannot describe some shapes (reported, not fatal)
                print(f"fastcore.get_schema failed on {shape_name}: {error!r}", file=sys.stderr)
                fastcore_cold = None
            gc.collect()
            ours_warm = time_warm(lambda: get_schema(fn), repeats)
            adapter = pydantic.TypeAdapter(fn)
            pydantic_warm = time_warm(adapter.json_schema, repeats)
        finally:
            if gc_was_enabled:
                gc.enable()
        rows.append(_row(f"{shape_name} cold", ours_cold, "pydantic TypeAdapter(fn).json_schema()",
                         pydantic_cold, "<= 1.0x pydantic", ours_cold <= pydantic_cold))
        rows.append(_row(f"{shape_name} cold", ours_cold, "fastcore get_schema(fn)", fastcore_cold,
                         "peer (no target)", True))
        rows.append(_row(f"{shape_name} warm", ours_warm, "pydantic adapter.json_schema()", pydantic_warm,
                         "<= 5 us", ours_warm <= 5.0))

    # a registry of 200 tools (fresh copies of the three shapes), rendered warm for OpenAI
    registry = Registry()
    keep_alive = []
    for index in range(200):
        shape_name = ("small", "medium", "large")[index % 3]
        fn, _ = FreshSource(*SHAPES[shape_name]).fresh()
        keep_alive.append(fn)
        registry.add(fn, name=f"{shape_name}_{index}")
    registry.schemas("openai")
    cached = registry.schemas("openai")
    ours_registry = time_warm(lambda: registry.schemas("openai"), repeats // 3, inner=5)
    floor = time_warm(lambda: [dict(item) for item in cached], repeats // 3, inner=5)
    rows.append(_row("registry.schemas('openai') x200 warm", ours_registry, "floor: copy 200 dicts", floor,
                     "<= 2000 us", ours_registry <= 2000.0))
    return rows


def main() -> int:
    rows = run()
    header = ["name", "ours_us", "ref_name", "ref_us", "ratio", "target", "ok"]
    table = [header] + [["" if row[key] is None else str(row[key]) for key in header] for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for line in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths)))
    return 0 if all(row["ok"] for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
