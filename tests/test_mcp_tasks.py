"""Long calls as MCP tasks, at protocol 2025-11-25, by that revision's text (the conformance suite has no
scenario for it): a plain JSON-RPC client over HTTP (urllib, nothing of the SDK's client) against
`nbtools.mcp.start` on loopback. The 2026-07-28 extension is scored by tests/test_conformance.py; the
client side (`conn.call(..., task=True)`) and a kernel's tasks are tested in test_mcp_tasks_kernel.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time

import urllib.request

import pytest

from nbtools import Registry, ToolContext, tool

VERSION = "2025-11-25"


class PlainClient:
    """One 2025-11-25 session: initialize, then JSON-RPC requests (answers as JSON or one SSE event)."""

    def __init__(self, server, name: str = "plain-client") -> None:
        self.url = server.url
        self.token = server.token
        self.ids = 0
        self.session = None
        self.initialized = self.request("initialize", {"protocolVersion": VERSION, "capabilities": {},
                                                       "clientInfo": {"name": name, "version": "1"}})
        self.notify("notifications/initialized")

    def _post(self, body: dict) -> tuple[dict, str]:
        """POST one message: (the answer's headers, lowercased names; its body)."""
        headers = {"MCP-Protocol-Version": VERSION, "Authorization": f"Bearer {self.token}",
                   "Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        request = urllib.request.Request(self.url, data=json.dumps(body).encode(), headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=60) as response:
            return {key.lower(): value for key, value in response.headers.items()}, response.read().decode()

    def notify(self, method: str, params: dict | None = None) -> None:
        self._post({"jsonrpc": "2.0", "method": method, **({"params": params} if params else {})})

    def call(self, method: str, params: dict | None = None) -> dict:
        """The whole JSON-RPC answer (`result` or `error`)."""
        self.ids += 1
        headers, text = self._post({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params or {}})
        self.session = headers.get("mcp-session-id", self.session)
        if headers.get("content-type", "").startswith("text/event-stream"):
            for line in text.splitlines():
                if line.startswith("data:"):
                    message = json.loads(line[5:])
                    if message.get("id") == self.ids:
                        return message
            raise AssertionError(f"no answer to {method} in {text!r}")
        return json.loads(text)

    def request(self, method: str, params: dict | None = None) -> dict:
        answer = self.call(method, params)
        assert "result" in answer, answer
        return answer["result"]

    def error(self, method: str, params: dict | None = None) -> dict:
        answer = self.call(method, params)
        assert "error" in answer, answer
        return answer["error"]

    def listen(self) -> list:
        """Open the session's GET stream (server-sent messages outside any request) and collect its
        messages into the returned list, from a daemon thread."""
        import threading

        heard: list = []
        headers = {"MCP-Protocol-Version": VERSION, "Authorization": f"Bearer {self.token}",
                   "Accept": "text/event-stream", "Mcp-Session-Id": self.session}
        stream = urllib.request.urlopen(urllib.request.Request(self.url, headers=headers, method="GET"), timeout=60)

        def read() -> None:
            with contextlib.suppress(Exception), stream:
                for line in stream:
                    if line.startswith(b"data:"):
                        heard.append(json.loads(line[5:]))

        threading.Thread(target=read, daemon=True).start()
        return heard

    def close(self) -> None:
        """End the session (DELETE), as a client that leaves does."""
        if self.session:
            headers = {"MCP-Protocol-Version": VERSION, "Authorization": f"Bearer {self.token}",
                       "Mcp-Session-Id": self.session}
            with contextlib.suppress(OSError):
                urllib.request.urlopen(urllib.request.Request(self.url, headers=headers, method="DELETE"),
                                       timeout=30).close()
            self.session = None


@pytest.fixture(scope="module")
def server():
    import nbtools.mcp as nbmcp

    tools = Registry()

    @tool(registry=tools)
    async def slow(seconds: float, label: str = "") -> str:
        "Sleeps, then answers."
        await asyncio.sleep(seconds)
        return f"slept {seconds} s {label}"

    @tool(registry=tools, task="required")
    async def only_task() -> str:
        "Runs only as a task."
        return "done as a task"

    @tool(registry=tools)
    def plain(x: int) -> int:
        "A plain function: in a worker thread, never a task."
        return x + 1

    @tool(registry=tools)
    async def ask_name(ctx: ToolContext) -> str:
        "Asks the user's name."
        answer = await ctx.elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}})
        return f"hello {answer.content['name']}"

    @tool(registry=tools)
    async def counted(ctx: ToolContext) -> str:
        "Reports progress 1, 2, 3 of 3."
        for step in (1, 2, 3):
            ctx.progress(step, 3, f"step {step}")
            await asyncio.sleep(0.05)
        return "counted"

    @tool(registry=tools)
    async def broken() -> str:
        "Always fails."
        raise RuntimeError("broken on purpose")

    running = nbmcp.start(tools, port=0, token="tasks-test-token")
    yield running
    running.stop()


@pytest.fixture
def client(server):
    made = PlainClient(server)
    yield made
    made.close()


def wait_for(client: PlainClient, task_id: str, statuses: set[str], limit: float = 30.0) -> dict:
    deadline = time.monotonic() + limit
    while True:
        task = client.request("tasks/get", {"taskId": task_id})
        if task["status"] in statuses or time.monotonic() > deadline:
            return task
        time.sleep(task.get("pollInterval", 500) / 1000)


def test_capabilities_and_each_tools_task_support(client):
    assert client.initialized["capabilities"]["tasks"] == {"list": {}, "cancel": {},
                                                           "requests": {"tools": {"call": {}}}}
    listed = {entry["name"]: entry.get("execution") for entry in client.request("tools/list")["tools"]}
    assert listed == {"slow": {"taskSupport": "optional"}, "only_task": {"taskSupport": "required"},
                      "plain": None, "broken": {"taskSupport": "optional"},
                      "ask_name": {"taskSupport": "optional"},
                      "counted": {"taskSupport": "optional"}}  # absent means forbidden


def test_a_task_answers_at_once_then_polls_then_gives_the_result(client):
    created = client.request("tools/call", {"name": "slow", "arguments": {"seconds": 1.5, "label": "a"},
                                            "task": {"ttl": 60000}})
    task = created["task"]  # "working": it came back before the call ended
    assert task["status"] == "working" and task["ttl"] == 60000 and task["pollInterval"] > 0
    assert task["createdAt"].endswith("Z") and task["lastUpdatedAt"].endswith("Z")
    assert client.request("tasks/get", {"taskId": task["taskId"]})["status"] == "working"
    # tasks/result blocks until the task has ended, then answers what the call would have answered
    result = client.request("tasks/result", {"taskId": task["taskId"]})
    assert result["content"] == [{"type": "text", "text": "slept 1.5 s a"}]
    assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task["taskId"]}
    done = client.request("tasks/get", {"taskId": task["taskId"]})
    assert done["status"] == "completed" and "result" not in done
    assert task["taskId"] in [entry["taskId"] for entry in client.request("tasks/list")["tasks"]]


def test_required_and_forbidden_answer_method_not_found(client):
    required = client.error("tools/call", {"name": "only_task", "arguments": {}})
    assert required["code"] == -32601 and "runs only as a task" in required["message"]
    forbidden = client.error("tools/call", {"name": "plain", "arguments": {"x": 1}, "task": {}})
    assert forbidden["code"] == -32601 and "does not run as a task" in forbidden["message"]
    assert client.request("tools/call", {"name": "plain", "arguments": {"x": 1}})["content"][0]["text"] == "2"
    task = client.request("tools/call", {"name": "only_task", "arguments": {}, "task": {}})["task"]
    assert client.request("tasks/result", {"taskId": task["taskId"]})["content"][0]["text"] == "done as a task"


def test_a_tool_error_is_a_failed_task_whose_result_is_the_error_result(client):
    task = client.request("tools/call", {"name": "broken", "arguments": {}, "task": {}})["task"]
    result = client.request("tasks/result", {"taskId": task["taskId"]})
    assert result["isError"] is True and "broken on purpose" in result["content"][0]["text"]
    assert client.request("tasks/get", {"taskId": task["taskId"]})["status"] == "failed"


def test_cancel_stops_the_task_and_a_finished_task_cannot_be_cancelled(client):
    task = client.request("tools/call", {"name": "slow", "arguments": {"seconds": 60}, "task": {}})["task"]
    cancelled = client.request("tasks/cancel", {"taskId": task["taskId"]})
    assert cancelled["taskId"] == task["taskId"] and cancelled["status"] == "cancelled"
    assert client.request("tasks/get", {"taskId": task["taskId"]})["status"] == "cancelled"
    again = client.error("tasks/cancel", {"taskId": task["taskId"]})
    assert again["code"] == -32602 and "already ended (cancelled)" in again["message"]
    assert client.error("tasks/result", {"taskId": task["taskId"]})["code"] == -32602


def test_unknown_task_ids_and_bad_cursors_are_invalid_params(client):
    for method in ("tasks/get", "tasks/result", "tasks/cancel"):
        assert client.error(method, {"taskId": "no-such-task"})["code"] == -32602
    assert client.error("tasks/list", {"cursor": "not-a-cursor"})["code"] == -32602
    assert client.error("tasks/update", {"taskId": "x", "inputResponses": {}})["code"] == -32601


def test_another_client_cannot_see_get_fetch_or_cancel_a_task(server, client):
    task = client.request("tools/call", {"name": "slow", "arguments": {"seconds": 3}, "task": {}})["task"]
    other = PlainClient(server, name="another-client")
    try:
        assert task["taskId"] not in [entry["taskId"] for entry in other.request("tasks/list")["tasks"]]
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            refused = other.error(method, {"taskId": task["taskId"]})
            assert refused["code"] == -32602 and "no task" in refused["message"]
    finally:
        other.close()
    assert client.request("tasks/get", {"taskId": task["taskId"]})["status"] == "working"  # not cancelled
    # the same client name in a new session (it left and came back) fetches it
    back = PlainClient(server)
    try:
        assert back.request("tasks/result", {"taskId": task["taskId"]})["content"][0]["text"] == "slept 3.0 s "
    finally:
        back.close()


def wait_gone(client: PlainClient, task_id: str, limit: float = 60.0) -> dict:
    """Poll tasks/get until the task is no more (its -32602 error), or `limit` seconds pass."""
    deadline = time.monotonic() + limit
    while True:
        answer = client.call("tasks/get", {"taskId": task_id})
        if "error" in answer:
            return answer["error"]
        assert time.monotonic() < deadline, f"task {task_id} still there after {limit} s: {answer['result']}"
        time.sleep(0.2)


def test_a_short_ttl_expires_and_a_long_one_is_shortened_and_said_so(client):
    began = time.monotonic()
    task = client.request("tools/call", {"name": "slow", "arguments": {"seconds": 0}, "task": {"ttl": 3000}})["task"]
    assert task["ttl"] == 3000
    assert wait_for(client, task["taskId"], {"completed"}, limit=2)["status"] == "completed"
    gone = wait_gone(client, task["taskId"])
    assert time.monotonic() - began >= 3.0, "the task was removed before its ttl ended"
    assert gone["code"] == -32602 and "expired" in gone["message"]
    long = client.request("tools/call", {"name": "slow", "arguments": {"seconds": 0},
                                         "task": {"ttl": 10 ** 12}})["task"]
    assert long["ttl"] == 24 * 3600 * 1000 and "ttl shortened" in long["statusMessage"]


def test_the_activity_log_shows_task_states(server, client):
    task = client.request("tools/call", {"name": "slow", "arguments": {"seconds": 60, "label": "logged"},
                                         "task": {}})["task"]
    record = next(record for record in reversed(server.activity.records) if record.kind == "task"
                  and record.arguments == {"seconds": 60, "label": "logged"})
    assert record.status == "working" and record.client == "plain-client"
    client.request("tasks/cancel", {"taskId": task["taskId"]})
    assert record.status == "cancelled" and record.ended is not None
    finished = client.request("tools/call", {"name": "slow", "arguments": {"seconds": 0, "label": "ok"},
                                             "task": {}})["task"]
    client.request("tasks/result", {"taskId": finished["taskId"]})
    record = next(record for record in reversed(server.activity.records) if record.kind == "task"
                  and record.arguments == {"seconds": 0, "label": "ok"})
    assert record.status == "completed" and record.outcome == "slept 0.0 s ok"
    from nbtools.mcp.activity import render

    assert "completed" in render(server.activity) and "cancelled" in render(server.activity)


@pytest.mark.parametrize("protocol", ["2026-07-28", "2025-11-25"])
def test_the_nbtools_client_runs_calls_as_tasks(server, protocol):
    """`conn.call(name, args, task=True)` at either revision; a task-required tool runs as one unasked."""
    import nbtools.mcp as nbmcp
    from nbtools.errors import ToolCallError

    with nbmcp.connect(server.url, token=server.token, protocol=protocol, on_elicit=lambda _: {"name": "Bo"}) as conn:
        assert conn.call("slow", {"seconds": 0.5, "label": protocol}, task=True) == f"slept 0.5 s {protocol}"
        # its question: at 2026-07-28 in the task's inputRequests, answered with tasks/update
        assert conn.call("ask_name", task=True) == "hello Bo"
        assert conn.call("only_task") == "done as a task"
        with pytest.raises(ToolCallError) as failed:
            conn.call("broken", task=True)
        assert "broken on purpose" in str(failed.value)
    tasks = [record for record in server.activity.records if record.kind == "task"
             and record.arguments == {"seconds": 0.5, "label": protocol}]
    assert [record.status for record in tasks] == ["completed"]


def test_status_notifications_reach_the_creating_session(client):
    heard = client.listen()
    task = client.request("tools/call", {"name": "slow", "arguments": {"seconds": 0.2}, "task": {}})["task"]
    client.request("tasks/result", {"taskId": task["taskId"]})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(message.get("method") == "notifications/tasks/status"
                                                  for message in heard):
        time.sleep(0.05)
    statuses = [message["params"] for message in heard if message.get("method") == "notifications/tasks/status"]
    assert statuses and statuses[-1]["taskId"] == task["taskId"] and statuses[-1]["status"] == "completed"
    assert set(statuses[-1]) >= {"taskId", "status", "createdAt", "lastUpdatedAt", "ttl", "pollInterval"}


def test_a_tasks_progress_token_stays_valid_after_its_request_was_answered(client):
    heard = client.listen()
    task = client.request("tools/call", {"name": "counted", "arguments": {}, "task": {},
                                         "_meta": {"progressToken": "tok-7"}})["task"]
    assert client.request("tasks/result", {"taskId": task["taskId"]})["content"][0]["text"] == "counted"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len([m for m in heard if m.get("method") == "notifications/progress"]) < 3:
        time.sleep(0.05)
    progress = [message["params"] for message in heard if message.get("method") == "notifications/progress"]
    assert [(note["progressToken"], note["progress"], note["total"], note["message"]) for note in progress] == \
        [("tok-7", 1.0, 3.0, "step 1"), ("tok-7", 2.0, 3.0, "step 2"), ("tok-7", 3.0, 3.0, "step 3")]
    assert progress[0]["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task["taskId"]}


def test_a_question_inside_a_2025_task_goes_to_the_client_and_the_task_waits_for_it(server):
    """The tool's ctx.elicit reaches the client on the session's stream, tagged with the task; the task is
    input_required until the answer (nbtools' client answers through `on_elicit`)."""
    import nbtools.mcp as nbmcp

    seen = []

    def on_elicit(question):
        record = next(record for record in reversed(server.activity.records) if record.tool == "ask_name")
        seen.append((question.message, record.status))
        return {"name": "Ann"}

    with nbmcp.connect(server.url, token=server.token, protocol="2025-11-25", on_elicit=on_elicit) as conn:
        assert conn.call("ask_name", task=True) == "hello Ann"
    assert seen == [("Your name?", "input required")]
    record = next(record for record in reversed(server.activity.records) if record.tool == "ask_name")
    assert (record.kind, record.status) == ("task", "completed")


def test_room_is_made_by_dropping_finished_tasks_fetched_and_own_first(monkeypatch):
    from nbtools.mcp import tasks

    monkeypatch.setattr(tasks, "MAX_TASKS", 4)
    monkeypatch.setattr(tasks, "MAX_KEPT_PER_TOKEN", 3)
    store = tasks.TaskStore()
    mine, theirs = ("tok-a", "one"), ("tok-b", "two")
    old_theirs = store.create(theirs, "t", {}, modern=False)
    fetched_theirs = store.create(theirs, "t", {}, modern=False)
    old_mine = store.create(mine, "t", {}, modern=False)
    new_mine = store.create(mine, "t", {}, modern=False)
    for task in (old_theirs, fetched_theirs, old_mine, new_mine):
        store.change(task, "completed")
    fetched_theirs.fetched = True
    store.create(mine, "t", {}, modern=False)  # full: the fetched one goes, though it is not the oldest
    assert fetched_theirs.task_id not in store.tasks and old_theirs.task_id in store.tasks
    store.create(mine, "t", {}, modern=False)  # full again: my own oldest goes before theirs
    assert old_mine.task_id not in store.tasks and old_theirs.task_id in store.tasks
    store.create(mine, "t", {}, modern=False)  # my token keeps 3 at most: my oldest finished goes
    assert new_mine.task_id not in store.tasks and old_theirs.task_id in store.tasks
    with pytest.raises(Exception, match="this token already has 3 unfinished tasks"):
        store.create(mine, "t", {}, modern=False)  # all three of mine still run: nothing to drop
    third = store.create(("tok-c", "three"), "t", {}, modern=False)  # another token: their finished one goes
    assert old_theirs.task_id not in store.tasks and third.task_id in store.tasks
    with pytest.raises(Exception, match="already runs 4 unfinished tasks"):
        store.create(("tok-d", "four"), "t", {}, modern=False)


def test_an_sdk_without_the_private_request_path_gets_one_clear_line(server, monkeypatch):
    """Task requests use SDK internals (`ClientSession._stamp`): an SDK without them is named, not a crash
    deep in the call; the [mcp] extra pins the SDK version they were written against."""
    import tomllib
    from pathlib import Path

    from packaging.requirements import Requirement

    import nbtools.mcp as nbmcp
    from nbtools.errors import ToolCallError

    with nbmcp.connect(server.url, token=server.token, protocol=VERSION) as conn:
        monkeypatch.delattr(conn._link.client.session, "_stamp")
        with pytest.raises(ToolCallError, match=r"needs ClientSession\._stamp, private to the MCP SDK.*mcp>=2\.3,<2\.4"):
            conn.call("slow", {"seconds": 0}, task=True)
        monkeypatch.undo()  # the SDK as installed: the same task call runs
        assert conn.call("slow", {"seconds": 0}, task=True) == "slept 0.0 s "
    extra = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
    pins = [Requirement(line) for line in extra["project"]["optional-dependencies"]["mcp"]]
    sdk = next(pin for pin in pins if pin.name == "mcp")
    assert sdk.specifier.contains("2.3.0") and not sdk.specifier.contains("2.4.0")
