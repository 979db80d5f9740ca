"""What the Jupyter Server extension adds: a served `add` called through `nbtools/mcp/kernels/<id>`
against the same call straight to the kernel's own port.

A real `jupyter server` (tests/jupyterserver.py starts it as the tests do) opens a notebook kernel
that runs `%tools --serve`; one client (`mcp.ClientSession` over `streamable_http_client`) calls
`add` through each URL, in alternating rounds so machine load hits both alike. Rows (lower is better):

- call latency: median of sequential `tools/call add` round trips, through Jupyter vs direct;
- CPU per call: user+system CPU (`/proc/PID/stat`) of the kernel and the Jupyter server together
  over the sequential calls, divided by their number, both ways (what the proxy costs the machine;
  the server works for direct calls too: it follows every message the kernel publishes, such as the
  activity log's widget updates).

Target: ratio <= 1.5 (the proxy should add little next to the MCP server in the kernel).
Run: `python bench/bench_jupyter.py [rounds]` or `python bench/bench.py jupyter`.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

SEQUENTIAL = 200
TARGET = 1.5


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def measure(url: str, headers: dict, pids: list[int]) -> tuple[float, float]:
    """(median latency, CPU per call of `pids` together) of sequential `add` calls at `url`."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with streamable_http_client(url, http_client=create_mcp_http_client(headers=headers)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for _ in range(20):  # warm up every hop
                result = await session.call_tool("add", {"a": 2, "b": 3})
            assert result.structured_content == {"result": 5}, result
            latencies = []
            before = sum(cpu_seconds(pid) for pid in pids)
            for index in range(SEQUENTIAL):
                began = time.perf_counter()
                await session.call_tool("add", {"a": index, "b": 1})
                latencies.append(time.perf_counter() - began)
            cpu = (sum(cpu_seconds(pid) for pid in pids) - before) / SEQUENTIAL
    return statistics.median(latencies), cpu


def run(rounds: int = 3) -> list[dict]:
    from jupyterserver import JupyterServer

    server = JupyterServer(Path(tempfile.mkdtemp(prefix="nbtools-bench-jupyter-")))
    try:
        kernel = server.notebook_kernel("bench.ipynb")
        kernel.run("%load_ext nbtools\nimport os, nbtools.mcp")
        kernel.run("%%tool\ndef add(a: int, b: int) -> int:\n    'Add.'\n    return a + b")
        kernel.run("%tools --serve")
        kernel_pid = kernel.value("os.getpid()")
        direct_url, direct_token = kernel.value("[nbtools.mcp.running_servers()[0].url, "
                                                "nbtools.mcp.running_servers()[0].token]")
        proxied_url = f"{server.url}nbtools/mcp/kernels/{kernel.kernel_id}"
        samples: dict[str, list[tuple[float, float]]] = {"jupyter": [], "direct": []}
        for _ in range(rounds):
            samples["jupyter"].append(asyncio.run(measure(
                proxied_url, {"Authorization": f"token {server.token}"}, [kernel_pid, server.process.pid])))
            samples["direct"].append(asyncio.run(measure(
                direct_url, {"Authorization": f"Bearer {direct_token}"}, [kernel_pid, server.process.pid])))
    finally:
        server.stop()
    rows = []
    for index, name in enumerate(("call latency", "CPU per call (kernel + server)")):
        ours = statistics.median(sample[index] for sample in samples["jupyter"]) * 1e6
        ref = statistics.median(sample[index] for sample in samples["direct"]) * 1e6
        ratio = ours / ref if ref else float("inf")
        rows.append({"name": f"through Jupyter: {name}", "ours_us": ours, "ref_name": "kernel's own port",
                     "ref_us": ref, "ratio": ratio, "target": f"<= {TARGET}", "ok": ratio <= TARGET})
    return rows


if __name__ == "__main__":
    for line in run(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
        print(json.dumps(line))
