"""MCP tasks under attack: another client reaching for a task whose id it learned, and one client
starting tasks without end. `nbtools serve` runs as a child process with limits on its memory
(`RLIMIT_AS`) and open files; every wait has a deadline, so a regression fails instead of hanging.
"""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from test_mcp_tasks import PlainClient

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX rlimits")

ROOT = Path(__file__).resolve().parent.parent
MEMORY_LIMIT = 2 << 30
FILE_LIMIT = 1024
DEADLINE = 60
TOKEN = "tok-task-attacks"

TOOLS = textwrap.dedent("""
    import asyncio

    async def nap(seconds: float) -> str:
        'Sleeps, then answers.'
        await asyncio.sleep(seconds)
        return f"napped {seconds} s"

    __all__ = ["nap"]
""")


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    resource.setrlimit(resource.RLIMIT_NOFILE, (FILE_LIMIT, FILE_LIMIT))


@pytest.fixture
def served(tmp_path):
    (tmp_path / "task_attack_tools.py").write_text(TOOLS)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    process = subprocess.Popen([sys.executable, "-m", "nbtools.cli", "serve", str(tmp_path / "task_attack_tools.py"),
                                "--http", "0", "--token", TOKEN], stderr=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, text=True, env=env, preexec_fn=_limits)
    try:
        url, deadline = None, time.monotonic() + DEADLINE
        while url is None and time.monotonic() < deadline:
            line = process.stderr.readline()
            if not line:
                break
            found = re.search(r"serving MCP at (http://\S+)", line)
            url = found.group(1) if found else None
        assert url, "the server did not start"
        yield SimpleNamespace(url=url, token=TOKEN, process=process)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


def test_a_task_id_is_not_a_key_another_client_can_use(served):
    victim = PlainClient(served, name="victim")
    task = victim.request("tools/call", {"name": "nap", "arguments": {"seconds": 2}, "task": {}})["task"]
    thief = PlainClient(served, name="thief")
    for method, params in (("tasks/get", {}), ("tasks/result", {}), ("tasks/cancel", {}),
                           ("tasks/list", None)):
        if params is None:
            assert thief.request(method)["tasks"] == []
            continue
        refused = thief.error(method, {"taskId": task["taskId"]})
        assert refused["code"] == -32602 and "no task" in refused["message"]
    assert victim.request("tasks/result", {"taskId": task["taskId"]})["content"][0]["text"] == "napped 2.0 s"
    assert served.process.poll() is None


def test_one_client_cannot_start_tasks_without_end(served):
    from nbtools.mcp.tasks import MAX_RUNNING_PER_CLIENT

    flooder = PlainClient(served, name="flooder")
    started, refused = [], None
    for _ in range(MAX_RUNNING_PER_CLIENT + 5):
        answer = flooder.call("tools/call", {"name": "nap", "arguments": {"seconds": 600}, "task": {}})
        if "error" in answer:
            refused = answer["error"]
            break
        started.append(answer["result"]["task"]["taskId"])
    assert refused is not None, f"{len(started)} tasks of 600 s started by one client, none refused"
    assert len(started) == MAX_RUNNING_PER_CLIENT
    assert "unfinished tasks" in refused["message"] and "tasks/cancel" in refused["message"]
    # another client is served meanwhile, and the flooder again once it cancels one
    other = PlainClient(served, name="other")
    task = other.request("tools/call", {"name": "nap", "arguments": {"seconds": 0}, "task": {}})["task"]
    assert other.request("tasks/result", {"taskId": task["taskId"]})["content"][0]["text"] == "napped 0.0 s"
    flooder.request("tasks/cancel", {"taskId": started[0]})
    assert "task" in flooder.request("tools/call", {"name": "nap", "arguments": {"seconds": 600}, "task": {}})
    assert served.process.poll() is None


def test_finished_tasks_kept_for_a_day_do_not_lock_others_out(served):
    """One token holder fills the server with finished tasks kept for a day, under ten client names it
    chose; a new task is still admitted: the oldest finished tasks make room (the flooder's, never
    fetched), and the newest are kept."""
    from nbtools.mcp.tasks import MAX_TASKS

    names = 10
    flooders = [PlainClient(served, name=f"flood-{n}") for n in range(names)]
    first = last = None
    for index in range(MAX_TASKS):
        answer = flooders[index % names].call("tools/call", {"name": "nap", "arguments": {"seconds": 0},
                                                             "task": {"ttl": 86_400_000}})
        assert "result" in answer, f"task {index} of the flood was refused: {answer}"
        first = first or answer["result"]["task"]["taskId"]
        last = answer["result"]["task"]["taskId"]
    innocent = PlainClient(served, name="innocent")
    answer = innocent.call("tools/call", {"name": "nap", "arguments": {"seconds": 0}, "task": {}})
    assert "result" in answer, f"a new client was locked out by {MAX_TASKS} finished tasks: {answer['error']}"
    task = answer["result"]["task"]
    assert innocent.request("tasks/result", {"taskId": task["taskId"]})["content"][0]["text"] == "napped 0.0 s"
    gone = flooders[0].error("tasks/get", {"taskId": first})
    assert gone["code"] == -32602 and "make room" in gone["message"]
    kept = flooders[(MAX_TASKS - 1) % names].request("tasks/result", {"taskId": last})
    assert kept["content"][0]["text"] == "napped 0.0 s"
    assert served.process.poll() is None
