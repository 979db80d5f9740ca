"""The approval prompt in a real kernel, clicked with the comm messages a browser sends: from a
synchronous `call_func` and `run_tool_calls` (the cell blocks; the clicks are handled on an
ipykernel 7 subshell), from `await`, and from a served call made by an MCP client in another
process. Approve, Deny with a reason, Edit, Always allow."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

SETUP = textwrap.dedent("""
    from nbtools import Registry
    from nbtools.approval import ApprovalPrompt
    ran = []
    def wipe(path: str, force: bool = False) -> str:
        "Delete everything under path."
        ran.append(path)
        return 'wiped ' + path
    guarded = Registry(approve=ApprovalPrompt(timeout=60))
    guarded.add(wipe, hints='destructive')
""")


def comm_msg(client, comm_id: str, data: dict) -> None:
    client.shell_channel.send(client.session.msg("comm_msg", {"comm_id": comm_id, "data": data}))


def click(client, comm_id: str) -> None:
    """Exactly what the browser sends when the person clicks a button."""
    comm_msg(client, comm_id, {"method": "custom", "content": {"event": "click"}})


def type_into(client, comm_id: str, value: str) -> None:
    """Exactly what the browser sends when the person types into a text box."""
    comm_msg(client, comm_id, {"method": "update", "state": {"value": value}, "buffer_paths": []})


def run_answering(kernel, code: str, answer, any_parent: bool = False) -> dict:
    """Run `code` in a cell; once its prompt is shown, `answer(client, controls)` plays the person
    (controls: description or model name -> comm id); with `any_parent`, a prompt shown under
    another cell counts too (a served call's). Returns what the cell printed, its errors,
    the reply's status and the prompt's last shown verdict."""
    client = kernel.blocking()
    request = client.execute(code)
    controls: dict[str, str] = {}
    printed, errors, answered = [], [], False
    while True:
        message = client.get_iopub_msg(timeout=60)
        kind, content = message["msg_type"], message["content"]
        if message["parent_header"].get("msg_id") != request and not (
                any_parent and kind in ("comm_open", "display_data")):
            continue
        if kind == "comm_open":
            state = content["data"]["state"]
            key = state.get("description") or (state.get("placeholder") if state["_model_name"] == "TextModel"
                                               else state["_model_name"])
            controls.setdefault(key, content["comm_id"])
        elif kind == "display_data" and "Approve" in controls and not answered:
            answered = True
            answer(client, controls)
        elif kind == "stream":
            printed.append(content["text"])
        elif kind == "error":
            errors.append(content)
        elif kind == "status" and content["execution_state"] == "idle":
            break
    reply = client.get_shell_msg(timeout=60)
    while reply["parent_header"].get("msg_id") != request:
        reply = client.get_shell_msg(timeout=60)
    return {"printed": "".join(printed), "errors": errors, "status": reply["content"]["status"],
            "answered": answered}


@pytest.fixture
def kernel(nbtools_kernel):
    nbtools_kernel.run(SETUP)
    yield nbtools_kernel
    # the session's kernel is shared: leave no names behind for the next test (`ran` is a common one)
    nbtools_kernel.run("for _name in ('ran', 'wipe', 'guarded', 'reply', 'model', 'chat', 'server', 'Registry', "
                       "'ApprovalPrompt', 'RecordedModel', 'openai_reply', 'make_client', 'Chat', 'call_func', "
                       "'run_tool_calls', 'nbmcp'):\n    globals().pop(_name, None)")


def test_sync_call_func_is_answered_through_a_subshell(kernel):
    outcome = run_answering(kernel, "from nbtools import call_func\n"
                                    "print(call_func('wipe', {'path': 'x'}, ns=guarded))",
                            lambda client, controls: click(client, controls["Approve"]))
    assert outcome["answered"] and outcome["status"] == "ok" and outcome["printed"] == "wiped x\n"
    assert kernel.value("[(d.verdict, d.by, d.origin, d.arguments) for d in guarded.decisions]") == \
        [["approved", "person", "call", {"path": "x", "force": False}]]
    assert kernel.value("guarded.approve.record.verdict") == "Approved."


def test_sync_deny_with_a_reason_shows_one_line(kernel):
    def deny(client, controls):
        type_into(client, controls["reason for the model (optional)"], "use the backup folder")
        click(client, controls["Deny"])

    outcome = run_answering(kernel, "guarded.call('wipe', {'path': 'x'})", deny)
    assert outcome["status"] == "error"
    (error,) = outcome["errors"]
    assert error["traceback"] == ["CallRefused: Error calling tool 'wipe': refused: the user denied this call; "
                                  "their reason: use the backup folder"]
    assert kernel.value("ran") == []


def test_run_tool_calls_edit_then_always_allow(kernel):
    kernel.run("""
        import json
        from nbtools import run_tool_calls
        reply = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                 "function": {"name": "wipe", "arguments": json.dumps({"path": "/data"})}}]}
    """)

    def edit(client, controls):
        click(client, controls["Edit"])
        type_into(client, controls["TextareaModel"], '{"path": 3}')  # invalid: the prompt stays open
        type_into(client, controls["TextareaModel"], '{"path": "/data/tmp"}')
        click(client, controls["Approve"])

    outcome = run_answering(kernel, "print(run_tool_calls(reply, ns=list(guarded))[0]['content'])", edit)
    assert outcome["printed"] == "wiped /data/tmp\n"
    assert kernel.value("[(d.verdict, d.edited, d.arguments) for d in guarded.decisions]") == \
        [["approved", True, {"path": "/data/tmp", "force": False}]]

    outcome = run_answering(kernel, "print(run_tool_calls(reply, ns=guarded)[0]['content'])",
                            lambda client, controls: click(client, controls["Always allow"]))
    assert outcome["printed"] == "wiped /data\n"
    outcome = run_answering(kernel, "print(guarded.call('wipe', {'path': 'again'}))", lambda *_: None)
    assert not outcome["answered"] and outcome["printed"] == "wiped again\n"  # remembered: no prompt
    kernel.run("%tools --forget")
    assert kernel.value("guarded.remembered") == {}


def test_await_is_answered_too(kernel):
    outcome = run_answering(kernel, "print(await guarded.acall('wipe', {'path': 'y'}))",
                            lambda client, controls: click(client, controls["Approve"]))
    assert outcome["printed"] == "wiped y\n"


SERVED = textwrap.dedent("""
    import nbtools.mcp as nbmcp
    server = nbmcp.start(guarded, port=0)
    print(server.url)
""")

CLIENT = textwrap.dedent("""
    import asyncio, json, os, sys
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp_types import Implementation

    async def main():
        headers = {"Authorization": "Bearer " + os.environ["NBTOOLS_MCP_TOKEN"]}
        async with create_mcp_http_client(headers=headers) as http:
            async with streamable_http_client(sys.argv[1], http_client=http) as (read, write, *_):
                async with ClientSession(read, write, client_info=Implementation(name="probe-client",
                                                                                  version="1")) as session:
                    await session.initialize()
                    result = await session.call_tool("wipe", {"path": "served"})
                    print(json.dumps({"error": result.is_error, "text": result.content[0].text}))

    asyncio.run(main())
""")


def test_a_served_call_names_the_mcp_client_and_is_answered(kernel, tmp_path):
    url = kernel.run(SERVED)[0]["text"].strip()
    script = tmp_path / "client.py"
    script.write_text(CLIENT)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    client_process = subprocess.Popen([sys.executable, str(script), url], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, env=env)
    try:
        # The served call runs on the kernel's main thread; its prompt shows under the next cell
        # that runs, so a cell waits there (as a person's notebook would be idle or running).
        outcome = run_answering(kernel, "import asyncio\nawait asyncio.sleep(0)\n"
                                        "while guarded.approve.widget is None or guarded.approve.record is None:\n"
                                        "    await asyncio.sleep(0.05)\n",
                                lambda client, controls: click(client, controls["Approve"]), any_parent=True)
        out, err = client_process.communicate(timeout=60)
    finally:
        client_process.kill()
    assert out.strip(), err
    assert json.loads(out.strip().splitlines()[-1]) == {"error": False, "text": "wiped served"}, err
    assert kernel.value("[(d.verdict, d.origin) for d in guarded.decisions]") == [["approved", "mcp:probe-client"]]
    assert outcome["answered"]
    assert kernel.value("guarded.approve.widget.children[0].value").count("The MCP client probe-client asks") == 1


CHAT_SETUP = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    from recorded_model import RecordedModel, openai_reply, make_client
    from nbtools import Chat
    model = RecordedModel([(200, openai_reply([("c1", "wipe", {{"path": "/data"}})])),
                           (200, openai_reply(text="done"))])
""")


@pytest.mark.parametrize("asynchronous", [False, True], ids=["chat", "await chat.acall"])
def test_a_chat_tool_call_is_answered_in_the_notebook(kernel, asynchronous):
    pytest.importorskip("openai")
    kernel.run(CHAT_SETUP.format(tests=str(ROOT / "tests")))
    kernel.run(f"chat = Chat(make_client('openai', model.url, {asynchronous}), model='test-model', tools=guarded)")
    code = "print(await chat.acall('clean up'))" if asynchronous else "print(chat('clean up'))"

    def deny(client, controls):
        type_into(client, controls["reason for the model (optional)"], "keep /data")
        click(client, controls["Deny"])

    outcome = run_answering(kernel, code, deny)
    try:
        assert outcome["answered"] and outcome["status"] == "ok" and outcome["printed"].endswith("done\n")
        sent = kernel.value("model.requests[1]['body']['messages'][-1]['content']")
        assert "the user denied this call; their reason: keep /data" in sent  # what the model read
        assert kernel.value("ran") == [] and kernel.value("guarded.decisions[-1].verdict") == "denied"
    finally:
        kernel.run("model.close()")


@pytest.mark.parametrize("code", ["guarded.call('wipe', {'path': 'x'})",
                                  "await guarded.acall('wipe', {'path': 'x'})"], ids=["sync", "await"])
def test_interrupting_the_kernel_while_a_prompt_waits_shows_one_line(new_kernel, code):
    kernel = new_kernel()
    kernel.run(SETUP)
    client = kernel.blocking()
    request = client.execute(code)
    errors, interrupted = [], False
    while True:
        message = client.get_iopub_msg(timeout=60)
        if message["parent_header"].get("msg_id") != request:
            continue
        kind, content = message["msg_type"], message["content"]
        if kind == "display_data" and not interrupted:
            kernel.manager.interrupt_kernel()
            interrupted = True
        elif kind == "error":
            errors.append(content)
        elif kind == "status" and content["execution_state"] == "idle":
            break
    (error,) = errors
    assert error["traceback"] == ["Interrupted while waiting for approval of 'wipe': not run."]
    assert kernel.value("guarded.approve.record.verdict") == "Interrupted: not run."
    assert kernel.value("[(d.verdict, d.by) for d in guarded.decisions]") == [["interrupted", "person"]]
    assert kernel.value("ran") == []


def test_a_served_call_whose_client_gave_up_never_runs(kernel, tmp_path):
    url = kernel.run(SERVED)[0]["text"].strip()
    script = tmp_path / "client.py"
    script.write_text(CLIENT.replace('session.call_tool("wipe", {"path": "served"})',
                                     'session.call_tool("wipe", {"path": "served"}, read_timeout_seconds=2)')
                      .replace("\nasyncio.run(main())", "\ntry:\n    asyncio.run(main())\n"
                               "except BaseException as error:\n    print('gave up:', type(error).__name__)"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(script), url], capture_output=True, text=True, env=env,
                          timeout=60)
    assert "gave up" in done.stdout, done.stdout + done.stderr
    # The person clicks Approve after the client left: nothing runs, the record says what happened.
    kernel.run("""
        import asyncio
        for _ in range(100):
            if guarded.approve.record is not None:
                break
            await asyncio.sleep(0.05)
        if guarded.approve.record is None:
            guarded.approve.approve_button.click()
            await asyncio.sleep(0.5)
    """)
    assert kernel.value("ran") == []
    assert kernel.value("guarded.approve.record.verdict") == "The MCP client probe-client gave up waiting: not run."
    assert kernel.value("[(d.verdict, d.origin) for d in guarded.decisions]") == [["client gave up", "mcp:probe-client"]]
