"""Deterministic figures for a loaded machine: instructions per call, counted by valgrind.

Wall and CPU times on a shared machine move by 20 % from one run to the next; the number of
instructions a call executes does not. Each variant runs in a child under
`valgrind --tool=cachegrind --cache-sim=no` after the same set-up (every variant prepared and
warmed); a child that runs no calls gives the set-up's count, so (count - set-up) / calls is the
cost of one call. Also the import rows of `bench_import` as instructions (a child that imports
against one that does only `pass`), and the agent loop's own work per conversation of two steps
(bench_chat's `loops`: `Chat` against the hand-written loop, per provider, plain and streamed;
variants `chat` (all of them) or `chat:openai`, `chat:gemini:stream`...), and serving (variant
`serve`: bench_serve's two servers, `nbtools serve` and the SDK's MCPServer, each run under callgrind
with instrumentation switched on only while the client makes its calls, sequential then 20 at once).

Run: `python bench/instructions.py [variant ...]` (needs valgrind; takes minutes). Not a section
of `bench.py`: it is slow, and the timed sections are the figures of record.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PASSES = 40  # of each variant: 28 replayed calls, or 20 calls of `add` / bench_approval's `wipe`

CHILD = r"""
import json, sys
sys.path[:0] = [{root!r}, {here!r}]
import pydantic
import bench_replay as b
import bench_call as c
import bench_approval as a
from nbtools import Registry
from nbtools.call import call_func
methods = b.bound_methods()
registry = Registry(methods)
plain, approving = Registry(), Registry(approve=lambda tool, args: True)
for method in methods:
    plain.add(method, hints="destructive")
    approving.add(method, hints="destructive")
validated = {{m.__name__: pydantic.validate_call(m) for m in methods}}
loads = json.loads
adds = Registry([c.add])
wipes, wipes_asked = Registry(), Registry(approve=lambda tool, args: True)
wipes.add(a.wipe, hints="destructive")
wipes_asked.add(a.wipe, hints="destructive")
from collections import deque
from nbtools.policy import Decisions
wipes_by_hand = Registry()
wipes_by_hand.add(a._asked_by_hand(lambda tool, args: True, deque(maxlen=Decisions.MAX * 6)), hints="destructive")
add_validated = pydantic.validate_call(c.add)

def ours():
    for name, text in b.CALLS: call_func(name, text, ns=registry)
    return len(b.CALLS)
def theirs():
    for name, text in b.CALLS: validated[name](**loads(text))
    return len(b.CALLS)
def ours_refused():
    for name, text in b.REFUSED: call_func(name, text, ns=registry, raise_on_err=False)
    return len(b.REFUSED)
def theirs_refused():
    for name, text in b.REFUSED:
        try: validated[name](**loads(text))
        except pydantic.ValidationError as error: str(error)
    return len(b.REFUSED)
def approved():
    getattr(approving, "decisions", []).clear()
    for name, text in b.CALLS: call_func(name, text, ns=approving)
    return len(b.CALLS)
def no_policy():
    for name, text in b.CALLS: call_func(name, text, ns=plain)
    return len(b.CALLS)
def add():
    for _ in range(20): call_func("add", c.ADD_TEXT, ns=adds)
    return 20
def add_floor():
    for _ in range(20): c.add(**loads(c.ADD_TEXT))
    return 20
def add_pydantic():
    for _ in range(20): add_validated(**loads(c.ADD_TEXT))
    return 20
def wipe_approved():
    for _ in range(20): call_func("wipe", a.TEXT, ns=wipes_asked)
    return 20
def wipe_no_policy():
    for _ in range(20): call_func("wipe", a.TEXT, ns=wipes)
    return 20
def wipe_by_hand():
    for _ in range(20): call_func("wipe", a.TEXT, ns=wipes_by_hand)
    return 20
variants = dict(wipe_approved=wipe_approved, wipe_no_policy=wipe_no_policy, wipe_by_hand=wipe_by_hand,
                ours=ours, pydantic=theirs, ours_refused=ours_refused, pydantic_refused=theirs_refused,
                approved=approved, no_policy=no_policy, add=add, add_floor=add_floor, add_pydantic=add_pydantic)
for run in variants.values():
    run(); run()
import gc
gc.collect()
gc.freeze()  # the set-up's objects out of the collector's way, as in CHAT_CHILD: a variant that keeps
# an object per call (the decisions log) triggers a collection that would count the set-up's leftovers
chosen = {chosen!r}
calls = 0
if chosen:
    for _ in range({passes}):
        calls += variants[chosen]()
print(calls)
"""

# The agent loop: one child per provider builds both loops (plain and streamed) and warms them;
# the chosen one then runs `passes` conversations.
CHAT_CHILD = r"""
import sys
sys.path[:0] = [{root!r}, {here!r}, {tests!r}]
import bench_chat
made = {{}}
for stream in (False, True):
    hand, ours = bench_chat.loops({provider!r}, stream)
    made[("hand", stream)], made[("chat", stream)] = hand, ours
for run in made.values():
    run(); run()
import gc
gc.collect()
gc.freeze()  # the set-up's objects out of the collector's way: a full collection mid-run would count them
chosen = {chosen!r}
calls = 0
if chosen:
    for _ in range({passes}):
        made[chosen]()
        calls += 1
print(calls)
"""
CHAT_PASSES = 100

PAIRS = [("ours", "pydantic"), ("ours_refused", "pydantic_refused"), ("approved", "no_policy"),
         ("wipe_approved", "wipe_no_policy"), ("wipe_by_hand", "wipe_no_policy"),
         ("add", "add_floor"), ("add", "add_pydantic")]
IMPORTS = [("from nbtools import get_schema, call_func, python", "import json, ast, inspect, typing, asyncio, dataclasses"),
           ("import nbtools", "import json, ast, inspect, typing, asyncio")]


def _count(code: str) -> tuple[int, str]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONHASHSEED"] = "0"  # the same dict and set layouts in every child: a random seed moves
    # the set-up's count by hundreds of thousands of instructions, a few thousand per call
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)  # bytecode cached
    done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                           sys.executable, "-s", "-c", code], env=env, check=True, capture_output=True, text=True)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if found is None:
        raise RuntimeError(f"valgrind printed no instruction count:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", "")), done.stdout.strip()


def chat_counts(wanted: set[str]) -> dict[str, float]:
    """Instructions per two-step conversation: `chat:<provider>[:stream]` and `hand:...` (the hand loop)."""
    per_call: dict[str, float] = {}
    for provider in ("openai", "responses", "anthropic", "gemini"):
        chosen = [stream for stream in (False, True)
                  if {"chat", f"chat:{provider}", f"chat:{provider}:{'stream' if stream else 'plain'}"} & wanted]
        if not chosen:
            continue
        child = dict(root=str(ROOT), here=str(HERE), tests=str(ROOT / "tests"), provider=provider)
        setup, _ = _count(CHAT_CHILD.format(**child, chosen=None, passes=0))
        for stream in chosen:
            mode = "stream" if stream else "plain"
            for loop in ("chat", "hand"):
                total, calls = _count(CHAT_CHILD.format(**child, chosen=(loop, stream), passes=CHAT_PASSES))
                per_call[f"{loop}:{provider}:{mode}"] = (total - setup) / int(calls)
            ratio = per_call[f"chat:{provider}:{mode}"] / per_call[f"hand:{provider}:{mode}"]
            print(f"chat:{provider}:{mode:6} {per_call[f'chat:{provider}:{mode}']:12,.0f} vs hand loop "
                  f"{per_call[f'hand:{provider}:{mode}']:12,.0f} instructions per conversation: {ratio:.2f}x",
                  flush=True)
    return per_call


SERVE_SEQUENTIAL = 100
SERVE_BATCHES = 5  # of bench_serve.CONCURRENT calls in flight at once


def _callgrind(pid: int, *options: str) -> None:
    subprocess.run(["callgrind_control", *options, str(pid)], check=True, capture_output=True, timeout=600)


def _window_count(out_dir: Path, pid: int) -> int:
    """Instructions counted since the last zeroing: dump them and read the newest dump's total."""
    before = set(out_dir.iterdir())
    _callgrind(pid, "-d")
    (dumped,) = set(out_dir.iterdir()) - before
    text = dumped.read_text(errors="replace")
    found = re.search(r"^totals:\s+(\d+)", text, re.M)  # (its `summary:` line reads 0 after a -z)
    if found is None:
        raise RuntimeError(f"no total in callgrind dump {dumped}")
    return int(found.group(1))


def serve_counts(kinds: tuple[str, ...] = ("nbtools", "sdk")) -> dict[str, float]:
    """Server instructions per tools/call: `<kind>:sequential` and `<kind>:concurrent` for nbtools and sdk.

    Only the server process is counted (all its threads), from the first measured call to the last;
    both servers run uvicorn, whose 0.1 s tick adds a little in proportion to the (slow) wall time."""
    import asyncio
    import tempfile

    import bench_serve

    async def drive(url: str, pid: int, out_dir: Path) -> dict[str, int]:
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        counts = {}
        async with streamable_http_client(url) as (read_stream, write_stream):
            async with ClientSession(read_stream, write_stream) as session:
                await session.initialize()
                for _ in range(10):  # warm up both ends
                    await session.call_tool("add", {"a": 2, "b": 3})
                for mode in ("sequential", "concurrent"):
                    _callgrind(pid, "-z")
                    _callgrind(pid, "-i", "on")
                    if mode == "sequential":
                        for index in range(SERVE_SEQUENTIAL):
                            await session.call_tool("add", {"a": index, "b": 1})
                    else:
                        for _ in range(SERVE_BATCHES):
                            await asyncio.gather(*(session.call_tool("add", {"a": index, "b": 1})
                                                   for index in range(bench_serve.CONCURRENT)))
                    _callgrind(pid, "-i", "off")
                    counts[mode] = _window_count(out_dir, pid)
        return counts

    per_call: dict[str, float] = {}
    for kind in kinds:
        with tempfile.TemporaryDirectory() as folder:
            out_dir = Path(folder)
            prefix = ("valgrind", "--tool=callgrind", "--instr-atstart=no",
                      f"--callgrind-out-file={out_dir}/callgrind.out.%p")
            with bench_serve.server(kind, prefix) as (url, pid):
                counts = asyncio.run(drive(url, pid, out_dir))
        print(f"serve:{kind}: {counts}", flush=True)
        per_call[f"{kind}:sequential"] = counts["sequential"] / SERVE_SEQUENTIAL
        per_call[f"{kind}:concurrent"] = counts["concurrent"] / (SERVE_BATCHES * bench_serve.CONCURRENT)
    for mode in ("sequential", "concurrent") if len(kinds) == 2 else ():
        ours, ref = per_call[f"nbtools:{mode}"], per_call[f"sdk:{mode}"]
        print(f"serve:{mode:10} nbtools {ours:12,.0f} vs MCPServer {ref:12,.0f} instructions per call: "
              f"{ours / ref:.2f}x", flush=True)
    return per_call


def main(argv: list[str]) -> int:
    if shutil.which("valgrind") is None:
        print("instructions.py: valgrind is not installed", file=sys.stderr)
        return 2
    wanted = set(argv)
    serving = {"serve", "serve:nbtools", "serve:sdk"} & wanted
    if serving:
        sys.path.insert(0, str(HERE))
        counts = serve_counts(("nbtools", "sdk") if "serve" in serving else (serving.pop().split(":")[1],))
        print(json.dumps({name: round(value) for name, value in counts.items()}))
        wanted -= {"serve", "serve:nbtools", "serve:sdk"}
        if not wanted:
            return 0
    chat_wanted = {name for name in wanted if name.startswith("chat")}
    if chat_wanted:
        counts = chat_counts(chat_wanted)
        print(json.dumps({name: round(value) for name, value in counts.items()}))
        wanted -= chat_wanted
        if not wanted:
            return 0
    per_call: dict[str, float] = {}
    setup, _ = _count(CHILD.format(root=str(ROOT), here=str(HERE), chosen="", passes=0))
    for name in dict.fromkeys(name for pair in PAIRS for name in pair):
        if wanted and name not in wanted:
            continue
        total, calls = _count(CHILD.format(root=str(ROOT), here=str(HERE), chosen=name, passes=PASSES))
        per_call[name] = (total - setup) / int(calls)
        print(f"{name:18} {per_call[name]:12,.0f} instructions per call", flush=True)
    for ours, ref in PAIRS:
        if ours in per_call and ref in per_call:
            print(f"{ours} / {ref}: {per_call[ours] / per_call[ref]:.2f}x")
    if not wanted or "import" in wanted:
        empty, _ = _count("pass")
        for ours, floor in IMPORTS:
            mine, _ = _count(ours)
            theirs, _ = _count(floor)
            print(f"{ours!r}: {mine - empty:,} vs {floor!r}: {theirs - empty:,} -> "
                  f"{(mine - empty) / (theirs - empty):.2f}x")
    print(json.dumps({name: round(value) for name, value in per_call.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
