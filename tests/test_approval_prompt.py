"""The approval prompt, headless: clicks from Python and exactly as a browser sends them (comm
messages on a recording comm), the five answers, edits validated again, the static record, time-outs.
Real-kernel tests (synchronous calls answered through a subshell, MCP clients) are in
tests/test_approval_kernel.py."""

from __future__ import annotations

import asyncio
import re

import comm
import pytest
from comm.base_comm import BaseComm

import nbtools.approval as approval_module
from nbtools import Decision, Registry, ToolCallError
from nbtools.approval import ApprovalPrompt


class RecordingComm(BaseComm):
    """A comm that keeps every message the kernel would send to the browser."""

    sent: list[tuple[str, dict]] = []

    def publish_msg(self, msg_type, data=None, metadata=None, buffers=None, **keys):
        RecordingComm.sent.append((msg_type, data or {}))


@pytest.fixture(autouse=True)
def recording_comm(monkeypatch):
    RecordingComm.sent = []
    monkeypatch.setattr(comm, "create_comm", RecordingComm)
    # These tests play the browser themselves, so the prompt may show here (no subshell: no kernel).
    monkeypatch.setattr(approval_module, "_in_kernel", lambda: True)
    return RecordingComm.sent


def delete_file(path: str) -> str:
    """Delete a file (pretend)."""
    return f"deleted {path}"


def area(width: float, height: float = 1.0) -> float:
    return width * height


@pytest.fixture
def tools():
    local = Registry()
    local.add(area, hints="read-only")
    local.add(delete_file, hints="destructive")
    return local


def click(button) -> None:
    """What the browser sends when the person clicks `button`."""
    button.comm.handle_msg({"content": {"data": {"method": "custom", "content": {"event": "click"}}}, "buffers": []})


def type_into(widget, value: str) -> None:
    """What the browser sends when the person types `value` into a text box."""
    widget.comm.handle_msg({"content": {"data": {"method": "update", "state": {"value": value}}}, "buffers": []})


async def shown(prompt: ApprovalPrompt) -> None:
    while prompt.widget is None:
        await asyncio.sleep(0)


async def test_approve_and_deny_with_a_reason(tools):
    tool = tools.get("delete_file")
    prompt = ApprovalPrompt()
    decision = asyncio.create_task(prompt(tool, {"path": "<b>/tmp/x</b>"}, origin="chat:gpt-test"))
    await shown(prompt)
    question = prompt.widget.children[0].value
    assert "&lt;b&gt;/tmp/x&lt;/b&gt;" in question and "delete_file" in question
    assert "The model gpt-test (Chat) asks to run tool" in question and "Delete a file (pretend)." in question
    click(prompt.approve_button)
    assert await decision == Decision(True)
    assert all(button.disabled for button in (prompt.approve_button, prompt.deny_button, prompt.edit_button))
    assert "Approved." in prompt.widget.children[-1].value
    assert repr(prompt.widget) == "ApprovalBox(tool='delete_file')"  # what nbval compares

    prompt.widget = None
    decision = asyncio.create_task(prompt(tool, {"path": "/tmp/y"}))
    await shown(prompt)
    type_into(prompt.reason, "not that folder, use /tmp/old")
    click(prompt.deny_button)
    assert await decision == Decision(False, reason="not that folder, use /tmp/old")
    assert prompt.record.verdict == "Denied: not that folder, use /tmp/old"


async def test_an_invalid_edit_keeps_the_prompt_open_naming_the_argument(tools):
    prompt = ApprovalPrompt()
    decision = asyncio.create_task(prompt(tools.get("delete_file"), {"path": "/tmp/x"}))
    await shown(prompt)
    assert prompt.editor.layout.display == "none"
    click(prompt.edit_button)
    assert prompt.editor.layout.display is None and prompt.approve_button.description == "Approve edited"
    type_into(prompt.editor, '{"path": 5}')
    click(prompt.approve_button)
    await asyncio.sleep(0.01)
    assert not decision.done()  # still open, saying what is wrong
    assert "Invalid edit, argument &#x27;path&#x27;: expected a string" in prompt.widget.children[-1].value
    type_into(prompt.editor, '{"path": "/tmp/edited"}')
    click(prompt.approve_button)
    assert await decision == Decision(True, args={"path": "/tmp/edited"})
    assert prompt.record.verdict == "Approved with edited arguments."
    assert '"/tmp/edited"' in prompt.record.arguments


async def test_always_allow_and_always_deny_are_remembered_by_the_registry(tools):
    prompt = ApprovalPrompt()
    tools.approve = prompt
    call = asyncio.create_task(tools.acall("delete_file", {"path": "a"}))
    await shown(prompt)
    click(prompt.always_allow_button)
    assert await call == "deleted a"
    prompt.widget = None
    assert await tools.acall("delete_file", {"path": "b"}) == "deleted b"  # not asked again
    assert prompt.widget is None and tools.remembered == {"delete_file": True}
    assert [(r.verdict, r.by) for r in tools.decisions] == [("approved", "person"), ("approved", "remembered")]
    assert tools.forget() == ["delete_file"]
    call = asyncio.create_task(tools.select().acall("delete_file", {"path": "c"}))  # a view asks the same
    await shown(prompt)
    type_into(prompt.reason, "never")
    click(prompt.always_deny_button)
    with pytest.raises(ToolCallError, match="the user denied this call; their reason: never"):
        await call
    with pytest.raises(ToolCallError, match="always deny this tool"):
        tools.call("delete_file", {"path": "d"})
    assert [(r.verdict, r.by) for r in tools.decisions][-2:] == [("denied", "person"), ("denied", "remembered")]


async def test_the_prompt_shows_the_time_left_and_a_late_answer_reads_as_such(tools):
    prompt = ApprovalPrompt(timeout=30)
    decision = asyncio.create_task(prompt(tools.get("delete_file"), {"path": "/tmp/x"}))
    while prompt.widget is None or not prompt.widget.children[1].children[-1].value:
        await asyncio.sleep(0)
    assert re.search(r"denies by itself in (30|29) s", prompt.widget.children[1].children[-1].value)
    click(prompt.deny_button)
    assert await decision == Decision(False)

    prompt = ApprovalPrompt(timeout=0.05)
    with pytest.raises(approval_module.ApprovalTimedOut, match=r"no answer within 0.05 s \(the time ran out\)"):
        await prompt(tools.get("delete_file"), {"path": "/tmp/x"})
    assert prompt.record.verdict == "No answer within 0.05 s (the time ran out): not run."
    click(prompt.approve_button)  # a late click changes nothing
    assert prompt.approve_button.disabled
    tools.approve = ApprovalPrompt(timeout=0.05)
    text = await tools.acall("delete_file", {"path": "/tmp/x"}, raise_on_err=False)
    assert "refused: nobody approved this call in time" in text and "denied" not in text
    assert tools.decisions[-1].verdict == "timed out"


async def test_a_client_that_gave_up_is_recorded_as_such_and_the_call_never_runs(tools):
    ran = []
    prompt = ApprovalPrompt()
    guarded = Registry(approve=prompt)
    guarded.add(lambda path: ran.append(path), name="wipe", hints="destructive")
    from nbtools.policy import asking_as

    async def served():
        with asking_as("mcp:inspector"):
            return await guarded.acall("wipe", {"path": "x"})

    call = asyncio.create_task(served())
    await shown(prompt)
    call.cancel()  # the client gave up (the server cancels the request's task)
    with pytest.raises(asyncio.CancelledError):
        await call
    assert prompt.record.verdict == "The MCP client inspector gave up waiting: not run."
    assert "Interrupted" not in repr(prompt.record)
    click(prompt.approve_button)  # clicked later: nothing runs
    await asyncio.sleep(0.01)
    assert ran == [] and guarded.decisions[-1].verdict == "client gave up"
    assert guarded.decisions[-1].origin == "mcp:inspector"


async def test_a_client_stop_arriving_as_an_interrupt_reads_as_the_client_giving_up(tools, monkeypatch):
    # `mcp.stopping.cancel_served` stops a served call whose code holds the kernel's main thread with
    # SIGINT: the prompt's wait can end in KeyboardInterrupt, not a cancellation (seen under load)
    ran = []
    prompt = ApprovalPrompt()

    async def stopped(*args):
        raise KeyboardInterrupt("interrupted")

    monkeypatch.setattr(prompt, "_wait", stopped)
    guarded = Registry(approve=prompt)
    guarded.add(lambda path: ran.append(path), name="wipe", hints="destructive")
    from nbtools.policy import asking_as

    with asking_as("mcp:inspector"), pytest.raises(KeyboardInterrupt):
        await guarded.acall("wipe", {"path": "x"})
    assert prompt.record.verdict == "The MCP client inspector gave up waiting: not run."
    assert ran == [] and guarded.decisions[-1].verdict == "client gave up"


async def test_a_decided_prompt_is_replaced_by_a_static_record(tools, monkeypatch):
    updates = []

    class Handle:
        def update(self, value):
            updates.append(value)

    monkeypatch.setattr(approval_module, "_display", lambda widget: Handle())
    prompt = ApprovalPrompt()
    decision = asyncio.create_task(prompt(tools.get("delete_file"), {"path": "<b>/tmp/x</b>"}))
    await shown(prompt)
    click(prompt.deny_button)
    await decision
    (record,) = updates
    assert record == approval_module.ApprovalRecord("delete_file", '{\n  "path": "<b>/tmp/x</b>"\n}', "Denied.")
    assert repr(record).startswith("Approval for delete_file (A call in this notebook): Denied.")
    page = record._repr_html_()
    assert "Denied." in page and "&lt;b&gt;/tmp/x&lt;/b&gt;" in page and "<b>/tmp/x</b>" not in page


async def test_outside_a_kernel_the_prompt_refuses_at_once(tools, monkeypatch):
    monkeypatch.setattr(approval_module, "_in_kernel", lambda: False)  # a terminal or a script
    guarded = Registry([tools.get("delete_file")], approve=ApprovalPrompt(timeout=300))
    text = await guarded.acall("delete_file", {"path": "/tmp/x"}, raise_on_err=False)
    assert "refused: the approval check failed (RuntimeError: ApprovalPrompt needs a Jupyter kernel" in text
    assert not RecordingComm.sent  # no widget was shown


def test_a_plain_python_process_is_not_a_kernel():
    import subprocess
    import sys

    code = "import nbtools.approval as a; print(a._in_kernel(), a.answering_subshell())"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60).stdout == "False None\n"


async def test_an_interrupted_approval_leaves_no_live_buttons(tools):
    prompt = ApprovalPrompt()
    decision = asyncio.create_task(prompt(tools.get("delete_file"), {"path": "/tmp/x"}))
    await shown(prompt)
    decision.cancel()
    with pytest.raises(asyncio.CancelledError):
        await decision
    assert prompt.approve_button.disabled and prompt.always_allow_button.disabled
    assert prompt.record.verdict == "Interrupted: not run."


def test_a_denied_call_in_a_cell_shows_one_line():
    reg = Registry(approve=lambda tool, args: Decision(False, reason="no"))
    reg.add(delete_file, hints="destructive")
    with pytest.raises(ToolCallError) as denied:
        reg.call("delete_file", {"path": "x"})
    assert denied.value._render_traceback_() == [
        "CallRefused: Error calling tool 'delete_file': refused: the user denied this call; their reason: no"]
