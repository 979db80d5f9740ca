"""The `python` code-interpreter tool: per-call cost against the floor, and time-out precision.

- `python('1+1')` with its time-out armed (the default 3600 s: a SIGALRM timer set and restored,
  output captured, namespace looked up) against the floor of what any last-expression evaluator
  must do: `ast.parse` + `compile` of the last expression + `eval`. Measured in the same run,
  interleaved in blocks so drift hits both alike. Target: at most 1.5x the floor.
- The same for a two-statement cell (`x = 6` then `x * 7`), whose floor also compiles and runs the
  statement (no target: reported).
- Time-out overshoot (how late after the deadline the call returns) for a Python loop on the main
  thread (SIGALRM timer; target median <= 5 ms), for `time.sleep` there, and for a Python loop in a
  worker thread (watchdog thread; target median <= 50 ms).
- Time-out overshoot under attack: SIGALRM blocked by the code (the watchdog's backstop; target
  median <= 200 ms), and `contextlib.suppress(BaseException)` in a loop (escalation; target
  median <= 50 ms).
- Isolated mode (forked child) per call, against the in-process call (reported).
- A restricted run (`python('1+1', allow=Allow())`: Landlock ruleset and seccomp program built in
  the parent, three syscalls in the child, its folder made and removed) against an unrestricted
  `isolated=True` run. Target: at most 2x (DESIGN.md "What model code may touch").

Run: `python bench/bench_interp.py` (prints a table) or through `bench/bench.py`.
"""

from __future__ import annotations

import ast
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nbtools.interp import python, run_code  # noqa: E402


def _floor_expression(namespace: dict) -> Callable[[], object]:
    def floor() -> object:
        tree = ast.parse("1+1")
        return eval(compile(ast.Expression(tree.body[-1].value), "<floor>", "eval"), namespace)
    return floor


def _floor_cell(namespace: dict) -> Callable[[], object]:
    source = "x = 6\nx * 7"

    def floor() -> object:
        tree = ast.parse(source)
        last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, "<floor>", "exec"), namespace)
        return eval(compile(last, "<floor>", "eval"), namespace)
    return floor


def _per_call_us(ours: Callable[[], object], ref: Callable[[], object], blocks: int = 300,
                 block: int = 100) -> tuple[float, float]:
    """Median microseconds per call of `ours` and `ref`, timed in alternating blocks."""
    ours_samples, ref_samples = [], []
    for _ in range(20):  # warm up
        ours(), ref()
    for _ in range(blocks):
        for fn, samples in ((ours, ours_samples), (ref, ref_samples)):
            started = time.perf_counter_ns()
            for _ in range(block):
                fn()
            samples.append((time.perf_counter_ns() - started) / block / 1000)
    return statistics.median(ours_samples), statistics.median(ref_samples)


def _overshoot_ms(code: str, timeout: float, repeats: int, in_thread: bool) -> float:
    """Median milliseconds between the deadline and the call's return."""
    late = []

    def once() -> None:
        started = time.monotonic()
        result = run_code(code, {}, timeout=timeout)
        elapsed = time.monotonic() - started
        assert result.timed_out, result
        late.append((elapsed - timeout) * 1000)

    for _ in range(repeats):
        if in_thread:
            worker = threading.Thread(target=once)
            worker.start()
            worker.join()
        else:
            once()
    return statistics.median(late)


def _row(name: str, ours_us: float, ref_name: str, ref_us: float | None, target: str,
         ok: bool | None) -> dict:
    ratio = ours_us / ref_us if ref_us else None
    return {"name": name, "ours_us": ours_us, "ref_name": ref_name, "ref_us": ref_us,
            "ratio": ratio, "target": target, "ok": ok}


def run() -> list[dict]:
    rows = []
    namespace: dict = {}
    ours, floor = _per_call_us(lambda: python("1+1"), _floor_expression(namespace))
    rows.append(_row("python('1+1'), timeout armed", ours, "parse+compile+eval", floor,
                     "<= 1.5x floor", ours <= 1.5 * floor))

    cell_ns: dict = {}
    ours, floor = _per_call_us(lambda: python("x = 6\nx * 7", cell_ns), _floor_cell({}), blocks=150)
    rows.append(_row("python('x = 6; x * 7') (2 lines)", ours, "parse+compile+exec+eval", floor,
                     "reported", None))

    late = _overshoot_ms("while True: pass", 0.02, 30, in_thread=False)
    rows.append(_row("overshoot, loop, main thread", late * 1000, "target 5 ms", 5000.0,
                     "median <= 5 ms", late <= 5))
    late = _overshoot_ms("import time\ntime.sleep(10)", 0.02, 30, in_thread=False)
    rows.append(_row("overshoot, time.sleep, main thread", late * 1000, "target 5 ms", 5000.0,
                     "median <= 5 ms", late <= 5))
    late = _overshoot_ms("while True: pass", 0.02, 15, in_thread=True)
    rows.append(_row("overshoot, loop, worker thread", late * 1000, "target 50 ms", 50000.0,
                     "median <= 50 ms", late <= 50))

    # Attacks (issue 11): SIGALRM blocked (the watchdog's backstop, BACKSTOP = 100 ms late by
    # design), and a time-out swallowed in a loop (escalation by the trace function).
    blocked = "import signal\nsignal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})\nwhile True: pass"
    late = _overshoot_ms(blocked, 0.02, 10, in_thread=False)
    rows.append(_row("overshoot, SIGALRM blocked (backstop)", late * 1000, "target 200 ms", 200000.0,
                     "median <= 200 ms", late <= 200))
    swallowing = "import contextlib\nwhile True:\n    with contextlib.suppress(BaseException):\n        while True: pass"
    late = _overshoot_ms(swallowing, 0.02, 10, in_thread=False)
    rows.append(_row("overshoot, suppress(BaseException) loop", late * 1000, "target 50 ms", 50000.0,
                     "median <= 50 ms", late <= 50))

    ours, plain = _per_call_us(lambda: run_code("1+1", namespace, isolated=True),
                               lambda: run_code("1+1", namespace), blocks=10, block=5)
    rows.append(_row("run_code('1+1', isolated=True)", ours, "in-process run_code", plain,
                     "reported", None))

    from nbtools.interp.confine import Allow, missing

    if missing() is None:
        restricted, isolated = _per_call_us(lambda: python("1+1", namespace, allow=Allow()),
                                            lambda: python("1+1", namespace, isolated=True), blocks=20, block=5)
        rows.append(_row("python('1+1', allow=Allow())", restricted, "isolated=True", isolated,
                         "<= 2x isolated", restricted <= 2 * isolated))
    else:
        print(f"restricted run not measured: {missing()}", file=sys.stderr)
    return rows


def main() -> None:
    rows = run()
    header = ["name", "ours_us", "ref_name", "ref_us", "ratio", "target", "ok"]

    def cell(value: object) -> str:
        if isinstance(value, float):
            return f"{value:.2f}" if value < 100 else f"{value:.0f}"
        return "" if value is None else str(value)

    table = [header] + [[cell(row[key]) for key in header] for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for line in table:
        print("  ".join(text.ljust(width) for text, width in zip(line, widths)))


if __name__ == "__main__":
    main()
