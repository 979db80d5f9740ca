"""Approval: the cost of the policy check on a call, with an approver that answers at once.

Rows (from the JSON text a model sends, measured in one run, batches interleaved):

- a `destructive` tool through `call_func(ns=registry)` whose registry has an approve callback
  answering True at once (the policy layers, the arguments as they will run, the decision record)
  against the same tool in a registry without a policy: target <= 1.2x.
- the same through a Tool taken from the registry and copied (`tool.replace(...).call`), for information.
- a `read-only` tool in the approving registry (no question asked), for information.

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


def run() -> list[dict]:
    from nbtools import Registry
    from nbtools.call import call_func

    plain = Registry()
    plain.add(wipe, hints="destructive")
    approving = Registry(approve=lambda tool, args: True)
    approving.add(wipe, hints="destructive")
    approving.add(wipe, name="peek", hints="read-only")
    copied = approving.get("wipe").replace(description="a copy")
    assert call_func("wipe", TEXT, ns=approving) == call_func("wipe", TEXT, ns=plain) == copied.call(TEXT)

    # The audit log grows by one record per approved call and bounds itself (`Decisions.MAX`: a
    # bounded deque, the oldest record dropped as a new one comes): the row measures a long
    # session's steady state, as the call without a policy is measured (clearing the log in the
    # timed call cost ~5 % of it).
    times = per_call_us({
        "approved": lambda: call_func("wipe", TEXT, ns=approving),
        "no_policy": lambda: call_func("wipe", TEXT, ns=plain),
        "copy": lambda: copied.call(TEXT),
        "not_asked": lambda: call_func("peek", TEXT, ns=approving),
    }, calls=1000, rounds=31)
    return [
        row("destructive call, approver says yes", times["approved"], "no policy", times["no_policy"], "<= 1.2x", 1.2),
        row("copied Tool, approver says yes", times["copy"], "no policy", times["no_policy"], "info", None),
        row("read-only tool, approving registry", times["not_asked"], "no policy", times["no_policy"], "info", None),
    ]


def main() -> int:
    rows = run()
    for item in rows:
        print(f"{item['name']:40} {item['ours_us']:7.2f} us  vs {item['ref_name']:10} {item['ref_us']:7.2f} us  "
              f"ratio {item['ratio']:.2f}  target {item['target']}  ok {item['ok']}")
    return 0 if all(item["ok"] is not False for item in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
