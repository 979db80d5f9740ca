"""Serving speed: `nbtools serve --http` against the `mcp` SDK's own high-level server (MCPServer).

The same `add(a: int, b: int) -> int` (plus 199 copies named `add_1`...`add_199`, so `tools/list`
has 200 tools) is served by both, each in its own process over streamable HTTP on 127.0.0.1, and
driven by the same client (`mcp.ClientSession` over `streamable_http_client`) in the same run, in
alternating rounds so machine load hits both alike. Rows (lower is better; target: ratio <= 1.0):

- call latency: median of sequential `tools/call add` round trips;
- server CPU per call: the server process's user+system CPU time (`/proc/PID/stat`) over the
  sequential calls, divided by their number (what serving costs the kernel or machine);
- 20 concurrent calls: wall time of 20 calls in flight at once, per call (inverse throughput);
- tools/list (200 tools): median round trip.

Run: `python bench/bench_serve.py [rounds]` (prints a table) or through `bench/bench.py serve`.
`python bench/bench_serve.py --serve sdk PORT` is how the SDK server is started (internal).
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

COPIES = 200
SEQUENTIAL = 300
CONCURRENT = 20
BATCHES = 8
LISTS = 25


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def nbtools_tools():
    """The registry `nbtools serve bench/bench_serve.py:TOOLS` serves."""
    from nbtools import Registry, Tool

    tools = Registry([add])
    for index in range(1, COPIES):
        tools.add(Tool.from_function(add, name=f"add_{index}"))
    return tools


def serve_sdk(port: int) -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("sdk-bench")
    server.add_tool(add)
    for index in range(1, COPIES):
        server.add_tool(add, name=f"add_{index}")
    server.run(transport="streamable-http", host="127.0.0.1", port=port)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` so far (Linux `/proc`)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def server(kind: str, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, int]]:
    """Start one server process (under `prefix`, e.g. a valgrind command line); yield its URL and
    process id; stop it."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if kind == "nbtools":
        helped = subprocess.run([sys.executable, "-m", "nbtools.cli", "serve", "--help"], capture_output=True,
                                text=True, env=env)
        command = [*prefix, sys.executable, "-m", "nbtools.cli", "serve", f"{__file__}:TOOLS", "--http", "0"]
        if "--no-token" in helped.stdout:
            command.append("--no-token")
        process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   text=True)
        url = None
        while url is None:
            line = process.stderr.readline()
            if not line:
                raise RuntimeError("nbtools serve did not start")
            match = re.search(r"serving MCP at (http://\S+)", line)
            url = match.group(1) if match else None
    else:
        port = _free_port()
        process = subprocess.Popen([*prefix, sys.executable, __file__, "--serve", "sdk", str(port)], env=env, cwd=ROOT,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}/mcp"
        deadline = time.monotonic() + (600 if prefix else 60)
        while True:  # wait until it accepts connections
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the SDK server did not start") from None
                time.sleep(0.05)
    try:
        yield url, process.pid
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


async def measure(url: str, pid: int) -> dict[str, float]:
    """Seconds per operation for each row, against the server at `url`."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url) as (read_stream, write_stream):
        async with ClientSession(read_stream, write_stream) as session:
            await session.initialize()
            listed = await session.list_tools()
            assert len(listed.tools) == COPIES, len(listed.tools)
            for _ in range(20):  # warm up both ends
                result = await session.call_tool("add", {"a": 2, "b": 3})
            assert result.content[0].text == "5", result
            latencies = []
            cpu_before = cpu_seconds(pid)
            for index in range(SEQUENTIAL):
                began = time.perf_counter()
                await session.call_tool("add", {"a": index, "b": 1})
                latencies.append(time.perf_counter() - began)
            cpu_per_call = (cpu_seconds(pid) - cpu_before) / SEQUENTIAL
            batches = []
            for _ in range(BATCHES):
                began = time.perf_counter()
                results = await asyncio.gather(*(session.call_tool("add", {"a": index, "b": 1})
                                                 for index in range(CONCURRENT)))
                batches.append((time.perf_counter() - began) / CONCURRENT)
                assert [result.content[0].text for result in results] == [str(i + 1) for i in range(CONCURRENT)]
            lists = []
            for _ in range(LISTS):
                began = time.perf_counter()
                await session.list_tools()
                lists.append(time.perf_counter() - began)
    return {"call latency": statistics.median(latencies), "server CPU per call": cpu_per_call,
            f"{CONCURRENT} concurrent calls (per call)": statistics.median(batches),
            f"tools/list ({COPIES} tools)": statistics.median(lists)}


def run(rounds: int = 3) -> list[dict]:
    samples: dict[str, dict[str, list[float]]] = {"nbtools": {}, "sdk": {}}
    for _ in range(rounds):
        for kind in ("nbtools", "sdk"):
            with server(kind) as (url, pid):
                for row, seconds in asyncio.run(measure(url, pid)).items():
                    samples[kind].setdefault(row, []).append(seconds)
    rows = []
    for row in samples["nbtools"]:
        ours = statistics.median(samples["nbtools"][row]) * 1e6
        ref = statistics.median(samples["sdk"][row]) * 1e6
        ratio = ours / ref
        rows.append({"name": row, "ours_us": ours, "ref_name": "mcp MCPServer", "ref_us": ref, "ratio": ratio,
                     "target": "<= 1.0", "ok": ratio <= 1.0})
    return rows


TOOLS = None
if __name__ != "__main__" and os.environ.get("NBTOOLS_BENCH_SERVE_TOOLS", "1") == "1":
    # loaded as `nbtools serve bench/bench_serve.py:TOOLS`, or imported by bench.py (cheap enough)
    TOOLS = nbtools_tools()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve_sdk(int(sys.argv[3]))
        raise SystemExit(0)
    for line in run(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
        print(f"{line['name']:<32} nbtools {line['ours_us']:9.0f} us   SDK {line['ref_us']:9.0f} us   "
              f"ratio {line['ratio']:.2f}  {'ok' if line['ok'] else 'OVER TARGET'}")
