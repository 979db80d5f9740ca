"""`connect()` against the reference MCP server `@modelcontextprotocol/server-everything` (stdio):
every content block kept, progress and log notifications surfaced, a tool needing task
augmentation named and left out, explicit false hints kept false, and the results rendered for
the providers by `run_tool_calls`. Skipped, saying how to install it, when the npm peers are absent.
"""

from __future__ import annotations

import base64
import threading
import warnings

import pytest

from nbtools import Registry, ToolCallError
from nbtools.call import run_tool_calls
from nbtools.content import Image, Resource, ResourceLink
from nbtools.mcp import connect
from nbtools.mcp.notify import LogMessage, Progress
from peers import NODE, SERVER_EVERYTHING, require_peers
from kernels import stderr_of, stdout_of

EVERYTHING = "mcp-servers/everything"  # the server's name in `initialize`


class Notices:
    """What the connection's callbacks received, and in which thread."""

    def __init__(self) -> None:
        self.progress: list[Progress] = []
        self.logs: list[LogMessage] = []
        self.threads: set[int] = set()
        self.logged = threading.Event()

    def on_progress(self, event: Progress) -> None:
        self.threads.add(threading.get_ident())
        self.progress.append(event)

    def on_log(self, message: LogMessage) -> None:
        self.logs.append(message)
        self.logged.set()


@pytest.fixture(scope="module")
def everything():
    require_peers()
    notices = Notices()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # on_elicit set: the client offers elicitation (a test below answers through it)
        connection = connect([str(NODE), str(SERVER_EVERYTHING), "stdio"], timeout=30,
                             on_progress=notices.on_progress, on_log=notices.on_log,
                             on_elicit=lambda question: None)
    connection.notices = notices
    connection.warned = [str(warning.message) for warning in caught]
    try:
        yield connection
    finally:
        connection.close()


def test_text_and_image_blocks_come_back_in_order(everything):
    value = everything.call("get-tiny-image")
    assert value[0] == "Here's the image you requested:" and value[2] == "The image above is the MCP logo."
    image = value[1]
    assert isinstance(image, Image) and image.mime == "image/png"
    assert image.data.startswith(b"\x89PNG\r\n\x1a\n") and len(image.data) > 1000
    # the Tool's function returns the same as Connection.call
    tool = next(tool for tool in everything if tool.name == "get-tiny-image")
    assert tool.fn() == value


def test_resource_links_are_kept(everything):
    value = everything.call("get-resource-links", {"count": 3})
    assert value[0] == "Here are 3 resource links to resources available in this server:"
    links = value[1:]
    assert [type(link) for link in links] == [ResourceLink] * 3
    assert [link.uri for link in links] == ["demo://resource/dynamic/blob/1", "demo://resource/dynamic/text/2",
                                            "demo://resource/dynamic/blob/3"]
    assert links[1].name == "Text Resource 2" and links[1].mime == "text/plain"
    assert links[1].description == "Resource 2: plaintext resource"


def test_embedded_resources_are_kept_with_their_text_or_bytes(everything):
    text = everything.call("get-resource-reference", {"resourceType": "Text", "resourceId": 1})
    assert [type(part) for part in text] == [str, Resource, str]
    assert text[1].uri == "demo://resource/dynamic/text/1" and text[1].mime == "text/plain"
    assert text[1].text.startswith("Resource 1: This is a plaintext resource") and text[1].blob is None
    blob = everything.call("get-resource-reference", {"resourceType": "Blob", "resourceId": 2})[1]
    assert blob.uri == "demo://resource/dynamic/blob/2" and blob.text is None
    assert blob.blob.startswith(b"Resource 2: This is a base64 blob")  # decoded bytes, not base64 text


def test_an_annotated_message_keeps_its_image(everything):
    value = everything.call("get-annotated-message", {"messageType": "success", "includeImage": True})
    assert value[0] == "Operation completed successfully"
    assert isinstance(value[1], Image) and value[1].mime == "image/png"
    assert everything.call("get-annotated-message", {"messageType": "debug"}) == \
        "Debug: Cache hit ratio 0.95, latency 150ms"  # text only: a str, as before


def test_structured_content_and_plain_text(everything):
    assert everything.call("get-structured-content", {"location": "Chicago"}) == \
        {"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82}
    assert everything.call("echo", {"message": "hi"}) == "Echo: hi"


def test_progress_reaches_the_callback_in_the_calling_thread(everything):
    notices = everything.notices
    notices.progress.clear()
    notices.threads.clear()
    value = everything.call("trigger-long-running-operation", {"duration": 0.4, "steps": 4})
    assert value == "Long running operation completed. Duration: 0.4 seconds, Steps: 4."
    assert notices.progress == [Progress("trigger-long-running-operation", step, 4.0, None) for step in (1, 2, 3, 4)]
    assert notices.threads == {threading.get_ident()}


def test_log_notifications_reach_the_callback(everything):
    notices = everything.notices
    notices.logs.clear()
    notices.logged.clear()
    assert everything.call("toggle-simulated-logging").startswith("Started simulated")
    try:
        assert notices.logged.wait(8), "no log notification within 8 s"  # one at once, then every 5 s
    finally:
        assert everything.call("toggle-simulated-logging").startswith("Stopped simulated")
    message = notices.logs[0]
    assert message.server == EVERYTHING
    assert message.level in ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
    assert isinstance(message.data, str) and "message" in message.data
    assert message.line() == f"[{EVERYTHING} {message.level}] {message.data}"


def test_a_tool_requiring_task_augmentation_runs_as_a_task(everything):
    """server-everything's `simulate-research-query` needs 2025-11-25 task augmentation: the client
    sends `task`, polls tasks/get as the server asks (1 s), then fetches tasks/result (about 4 s)."""
    assert "simulate-research-query" in [tool.name for tool in everything]
    assert "simulate-research-query" not in everything.skipped
    report = everything.call("simulate-research-query", {"topic": "tides"})
    assert report.startswith("# Research Report: tides") and "Stage 4: Generating report" in report
    # a tool listed without task support is not asked to run as one (2025-11-25: clients MUST NOT)
    with pytest.raises(ToolCallError) as refused:
        everything.call("echo", {"message": "hi"}, task=True)
    assert "does not run this tool as a task" in str(refused.value) and "without task=True" in str(refused.value)


def test_hints_set_to_false_stay_false(everything):
    hints = {tool.name: tool.hints for tool in everything}
    # server-everything sets all four annotations on these: true ones become hints, false ones
    # `not-<hint>` (kept, so MCP's defaults do not come back when the tool is rendered or served)
    assert hints["get-tiny-image"] == {"read-only", "idempotent", "not-destructive", "not-open-world"}
    assert hints["trigger-long-running-operation"] == {"read-only", "idempotent", "not-destructive", "not-open-world"}
    assert hints["gzip-file-as-resource"] == {"idempotent", "open-world", "not-read-only", "not-destructive"}
    tiny = next(tool for tool in everything if tool.name == "get-tiny-image")
    assert tiny.schema("mcp")["annotations"] == {"destructiveHint": False, "idempotentHint": True,
                                                 "openWorldHint": False, "readOnlyHint": True}


def test_remote_rich_results_reach_the_providers(everything):
    tools = Registry(everything)
    anthropic = [{"type": "tool_use", "id": "t1", "name": "get-tiny-image", "input": {}}]
    blocks = run_tool_calls(anthropic, ns=tools)["content"][0]["content"]
    assert [block["type"] for block in blocks] == ["text", "image", "text"]
    assert blocks[1]["source"]["media_type"] == "image/png"
    assert base64.b64decode(blocks[1]["source"]["data"]).startswith(b"\x89PNG")
    openai = {"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get-resource-links", "arguments": '{"count": 1}'}}]}
    text = run_tool_calls(openai, ns=tools)[0]["content"]
    assert text == ("Here are 1 resource links to resources available in this server:\n"
                    "[resource link demo://resource/dynamic/blob/1: Blob Resource 1]")


def test_in_a_notebook_progress_is_a_bar_and_log_lines_are_cell_output(real_kernel):
    require_peers()
    outputs = real_kernel.run(f"""
        import time as _time
        from nbtools.mcp import connect as _connect
        _everything = _connect([{str(NODE)!r}, {str(SERVER_EVERYTHING)!r}, "stdio"], timeout=30)
        try:
            _everything.call("toggle-simulated-logging")
            # 5.5 s: the server's timed log line (every 5 s) comes during this call
            _everything.call("trigger-long-running-operation", {{"duration": 5.5, "steps": 2}})
        finally:
            _everything.close()
        """)
    bars = [output for output in outputs if output["output_type"] == "display_data"
            and "application/vnd.jupyter.widget-view+json" in output["data"]]
    assert len(bars) == 1 and "FloatProgress" in bars[0]["data"]["text/plain"]
    assert f"[{EVERYTHING} " in stdout_of(outputs) + stderr_of(outputs)


REFUSING_SERVER = '''
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

app = MCPServer("refuser")


@app.tool()
def list_my_roots() -> str:
    """Needs the client's roots, which nbtools' client does not offer."""
    raise MCPError(-32601, "Method not found: roots/list")


app.run()
'''


def test_a_call_refused_with_method_not_found_says_a_protocol_feature_is_missing(tmp_path):
    import sys

    script = tmp_path / "refuser.py"
    script.write_text(REFUSING_SERVER)
    with connect([sys.executable, str(script)], timeout=30) as refuser:
        with pytest.raises(ToolCallError) as refused:
            refuser.call("list_my_roots")
    assert str(refused.value) == (
        "Error calling tool 'list_my_roots': the server refused the call as needing a protocol feature nbtools' "
        "MCP client does not offer (JSON-RPC -32601, method not found): Method not found: roots/list")


def test_outside_a_notebook_log_lines_go_to_logging_and_progress_is_not_shown(caplog, capsys):
    from nbtools.mcp.notify import default_sink

    on_progress, on_log = default_sink("slow")
    on_progress(Progress("slow", 1, 2, "half"))
    with caplog.at_level("DEBUG", logger="nbtools.mcp"):
        on_log(LogMessage("warning", {"disk": "full"}, "storage", "files"))
        on_log(LogMessage("debug", "detail"))
    assert [(record.levelname, record.getMessage()) for record in caplog.records] == [
        ("WARNING", "[files storage warning] {'disk': 'full'}"), ("DEBUG", "[debug] detail")]
    assert capsys.readouterr() == ("", "")  # nothing printed outside a notebook


def test_elicitation_is_answered_by_on_elicit_in_the_calling_thread(everything):
    # server-everything speaks the 2025-11-25 handshake only: auto mode fell back to it
    assert everything.protocol_version == "2025-11-25" and everything.transport == "stdio"
    asked: list = []

    def answer(question):
        asked.append((question, threading.get_ident()))
        return {**question.defaults(), "name": "Ada"}

    everything.on_elicit = answer
    try:
        accepted = everything.call("trigger-elicitation-request")
        everything.on_elicit = lambda question: None
        declined = everything.call("trigger-elicitation-request")
    finally:
        everything.on_elicit = None
    question, thread = asked[0]
    assert thread == threading.get_ident() and question.schema["required"] == ["name"]
    assert question.defaults()["integer"] == 42 and "name" not in question.defaults()
    assert "User provided the requested information" in accepted and '"name": "Ada"' in accepted
    assert '"integer": 42' in accepted
    assert "User declined" in declined
