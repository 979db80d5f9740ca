"""Long calls as MCP tasks served from a real kernel (`nbtools.mcp.start` in a cell, as `%tools --serve`):
a plain function running on the kernel's main thread, started as a task, left, fetched by a new
session, cancelled (and really stopped), hidden from other clients, expired after a short ttl, and
shown in the activity log. Clients: the plain JSON-RPC client of test_mcp_tasks.py (2025-11-25) and
`nbtools.mcp.connect` (2026-07-28)."""

from __future__ import annotations

import os
import time
from types import SimpleNamespace

import pytest

from test_mcp_tasks import PlainClient, wait_for, wait_gone

SETUP = """
import time, pathlib
import nbtools.mcp as nbmcp
from nbtools import ToolContext, tool

marks = []

@tool
def long_fit(seconds: float, marker: str = "") -> str:
    "A long plain function: runs on the kernel's main thread."
    marks.append(("started", seconds))
    if marker:
        pathlib.Path(marker).write_text("started")
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.05)
    marks.append(("finished", seconds))
    return f"fitted in {seconds} s"

@tool
async def ask_name(ctx: "ToolContext") -> str:
    "Asks the user's name (on the kernel's main thread)."
    answer = await ctx.elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}})
    return f"hello {answer.content['name']}"

server = nbmcp.start(port=0)
print(server.url)
"""


@pytest.fixture
def served(nbtools_kernel):
    url = nbtools_kernel.run(SETUP)[0]["text"].strip()
    return SimpleNamespace(kernel=nbtools_kernel, url=url, token=os.environ["NBTOOLS_MCP_TOKEN"])


def task_states(kernel) -> list:
    return kernel.value("[[r.tool, r.arguments, r.status] for r in server.activity.records if r.kind == 'task']")


def test_a_task_returns_at_once_a_new_session_fetches_it_and_others_cannot_see_it(served):
    first = PlainClient(served)
    task = first.request("tools/call", {"name": "long_fit", "arguments": {"seconds": 8}, "task": {}})["task"]
    assert task["status"] == "working"  # answered while the function runs on the kernel's main thread
    assert first.request("tasks/get", {"taskId": task["taskId"]})["status"] == "working"
    first.close()  # the client leaves

    stranger = PlainClient(served, name="someone-else")
    assert stranger.request("tasks/list")["tasks"] == []
    for method in ("tasks/get", "tasks/result", "tasks/cancel"):
        assert stranger.error(method, {"taskId": task["taskId"]})["code"] == -32602

    back = PlainClient(served)  # the same client, a new session
    assert [entry["taskId"] for entry in back.request("tasks/list")["tasks"]] == [task["taskId"]]
    result = back.request("tasks/result", {"taskId": task["taskId"]})
    assert result["content"][0]["text"] == "fitted in 8.0 s"
    assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task["taskId"]}
    assert served.kernel.value("marks") == [["started", 8.0], ["finished", 8.0]]
    assert task_states(served.kernel) == [["long_fit", {"seconds": 8}, "completed"]]


def test_tasks_cancel_stops_the_function_on_the_main_thread(served, tmp_path):
    marker = tmp_path / "started"
    client = PlainClient(served)
    task = client.request("tools/call", {"name": "long_fit", "arguments": {"seconds": 120, "marker": str(marker)},
                                         "task": {}})["task"]
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline:  # it holds the main thread now
        time.sleep(0.05)
    assert marker.exists(), "the task never started on the kernel"
    assert task_states_while_busy(client, task) == "working"
    cancelled = client.request("tasks/cancel", {"taskId": task["taskId"]})
    assert cancelled["status"] == "cancelled"
    began = time.monotonic()
    marks = served.kernel.value("marks")  # a cell: it runs once the main thread is free again
    took = time.monotonic() - began
    assert marks == [["started", 120.0]], "the function ran to its end"  # no "finished": it was stopped
    assert took < 90, f"the next cell waited {took:.1f} s: the function was not stopped"
    assert client.request("tasks/get", {"taskId": task["taskId"]})["status"] == "cancelled"
    assert task_states(served.kernel) == [["long_fit", {"seconds": 120, "marker": str(marker)}, "cancelled"]]
    assert served.kernel.value("2 + 2") == 4  # the kernel serves on


def task_states_while_busy(client: PlainClient, task: dict) -> str:
    """The task's status, read over MCP (the kernel cannot run a cell while the function runs)."""
    return client.request("tasks/get", {"taskId": task["taskId"]})["status"]


def test_a_short_ttl_expires(served):
    client = PlainClient(served)
    began = time.monotonic()
    task = client.request("tools/call", {"name": "long_fit", "arguments": {"seconds": 0},
                                         "task": {"ttl": 8000}})["task"]
    assert task["ttl"] == 8000
    assert wait_for(client, task["taskId"], {"completed"}, limit=6)["status"] == "completed"
    gone = wait_gone(client, task["taskId"])
    assert time.monotonic() - began >= 8.0, "the task was removed before its ttl ended"
    assert gone["code"] == -32602 and "expired" in gone["message"]


def test_the_nbtools_client_runs_a_kernel_call_as_a_task_at_2026(served):
    import nbtools.mcp as nbmcp

    with nbmcp.connect(served.url, token=served.token) as conn:
        assert conn.protocol_version == "2026-07-28"
        assert conn.call("long_fit", {"seconds": 1}, task=True) == "fitted in 1.0 s"
    states = task_states(served.kernel)
    assert states[-1] == ["long_fit", {"seconds": 1}, "completed"]
    activity = served.kernel.value("__import__('nbtools.mcp.activity').mcp.activity.render(server.activity)")
    assert "task <code>long_fit</code>" in activity and "completed" in activity


@pytest.mark.parametrize("protocol", ["2025-11-25", "2026-07-28"])
def test_a_kernel_tasks_question_reaches_the_client(served, protocol):
    import nbtools.mcp as nbmcp

    with nbmcp.connect(served.url, token=served.token, protocol=protocol, on_elicit=lambda _: {"name": "Kim"}) as conn:
        assert conn.call("ask_name", task=True) == "hello Kim"
    assert task_states(served.kernel)[-1] == ["ask_name", {}, "completed"]
