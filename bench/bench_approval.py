"""Approval: the cost of the policy check on a call, with an approver that answers at once.

Rows (from the JSON text a model sends, measured in one run, batches interleaved):

- a `destructive` tool through `call_func(ns=registry)` whose registry has an approve callback
  answering True at once (the policy layers, the arguments as they will run, the decision record)
  against the same tool in a registry without a policy: target <= 1.2x.
- the same through a Tool taken from the registry and copied (`tool.replace(...).call`), for information.
- a `read-only` tool in the approving registry (no question asked), for information.
- the floor of any approval, for information: the same call without a policy, whose function asks
  and records by hand what an approval must (the arguments with defaults, a copy of them for the
  callback, the callback, the wall-clock time, who asks, a bounded log keeping the arguments).
  The 1.2x target is measured against the call without a policy; this row says what any design
  spends. 2026-11-26: by hand 1.27-1.28x in CPU time (1.14x in instructions, bench/instructions.py),
  `approved` 1.23-1.28x (1.18x): the approval path is at the floor of asking and recording in
  CPU time; the time the instruction counts do not show is the log keeping one dict per decision
  (a skeleton keeping None instead measured ~0.05x less).

Run: `python bench/bench_approval.py` (prints a table) or through `bench/bench.py`.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_call import per_call_us, row  # noqa: E402

TEXT = '{"folder": "/data/tmp", "depth": 2}'


def wipe(folder: str, depth: int = 1, force: bool = False) -> str:
    """Pretend to delete a folder."""
    return folder


def _asked_by_hand(approve, log):
    """`wipe` asking `approve` and recording the decision by hand, as a tool without a policy."""
    import time
    from contextvars import ContextVar

    origin = ContextVar("origin", default="call")
    now, who = time.time, origin.get

    def wipe(folder: str, depth: int = 1, force: bool = False) -> str:
        """Pretend to delete a folder."""
        arguments = {"folder": folder, "depth": depth, "force": force}
        asking = who()
        if approve(wipe, dict(arguments)) is not True:
            raise PermissionError("denied")
        log.extend((now(), "wipe", arguments, asking, None, "approved"))
        return folder

    return wipe


def run() -> list[dict]:
    from collections import deque

    from nbtools import Registry
    from nbtools.policy import Decisions
    from nbtools.call import call_func

    plain = Registry()
    plain.add(wipe, hints="destructive")
    approving = Registry(approve=lambda tool, args: True)
    approving.add(wipe, hints="destructive")
    approving.add(wipe, name="peek", hints="read-only")
    copied = approving.get("wipe").replace(description="a copy")
    floor = Registry()
    floor.add(_asked_by_hand(lambda tool, args: True, deque(maxlen=Decisions.MAX * 6)), hints="destructive")
    assert call_func("wipe", TEXT, ns=approving) == call_func("wipe", TEXT, ns=plain) == copied.call(TEXT) \
        == call_func("wipe", TEXT, ns=floor)

    # The audit log grows by one record per approved call and bounds itself (`Decisions.MAX`: a
    # bounded deque, the oldest record dropped as a new one comes): the row measures a long
    # session's steady state, as the call without a policy is measured (clearing the log in the
    # timed call cost ~5 % of it).
    times = per_call_us({
        "approved": lambda: call_func("wipe", TEXT, ns=approving),
        "no_policy": lambda: call_func("wipe", TEXT, ns=plain),
        "copy": lambda: copied.call(TEXT),
        "not_asked": lambda: call_func("peek", TEXT, ns=approving),
        "by_hand": lambda: call_func("wipe", TEXT, ns=floor),
    }, calls=1000, rounds=31)
    return [
        row("destructive call, approver says yes", times["approved"], "no policy", times["no_policy"], "<= 1.2x", 1.2),
        row("copied Tool, approver says yes", times["copy"], "no policy", times["no_policy"], "info", None),
        row("read-only tool, approving registry", times["not_asked"], "no policy", times["no_policy"], "info", None),
        row("floor: asked and recorded by hand", times["by_hand"], "no policy", times["no_policy"], "info", None),
    ]


def main() -> int:
    rows = run()
    for item in rows:
        print(f"{item['name']:40} {item['ours_us']:7.2f} us  vs {item['ref_name']:10} {item['ref_us']:7.2f} us  "
              f"ratio {item['ratio']:.2f}  target {item['target']}  ok {item['ok']}")
    return 0 if all(item["ok"] is not False for item in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
