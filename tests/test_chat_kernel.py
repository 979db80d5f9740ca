"""Chat in a real Jupyter kernel, against the recorded model on loopback: the live status and the
streamed text reach the step view (display messages updated in place), the final answer is shown
once, and the kernel's interrupt button during a tool ends the cell with one line and leaves a
history the next request is accepted with."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from recorded_model import REPLIES, RecordedModel  # noqa: E402
from test_chat import _no_nulls, _validate  # noqa: E402

from nbtools.chat.loop import INTERRUPTED  # noqa: E402


def _run(client, code: str, on_output=None) -> tuple[str, list]:
    """Run `code`; (status, [(msg_type, content)]) of every output message, updates included."""
    messages = []

    def keep(message: dict) -> None:
        kind = message["msg_type"]
        if kind in ("stream", "execute_result", "display_data", "update_display_data", "error"):
            messages.append((kind, message["content"]))
            if on_output is not None:
                on_output(kind, message["content"])

    reply = client.execute_interactive(code, output_hook=keep, timeout=60)
    return reply["content"]["status"], messages


def test_status_streamed_text_interrupt_mid_tool_and_the_answer_once(new_kernel):
    kernel = new_kernel()
    client = kernel.blocking()
    reply = REPLIES["openai"]
    with RecordedModel([(200, reply([("call_1", "slow", {"n": 1})], text="Let me work on it.")),
                        (200, reply(text="**Done**, after the interruption."))]) as model:
        status, outputs = _run(client, f"""
import time, openai
from nbtools import Chat

def slow(n: int) -> int:
    \"\"\"Work slowly.\"\"\"
    print("slow started", flush=True)
    time.sleep(60)
    return n

chat = Chat(openai.OpenAI(api_key="sk-test", base_url="{model.url}/v1", max_retries=0), model="test-model",
            tools=[slow], stream=True)
""")
        assert status == "ok", outputs

        def interrupt(kind: str, content: dict) -> None:
            if kind == "stream" and "slow started" in content.get("text", ""):
                kernel.manager.interrupt_kernel()

        status, outputs = _run(client, 'chat("Work slowly, please.")', interrupt)
        assert status == "error"
        errors = [content for kind, content in outputs if kind == "error"]
        assert len(errors) == 1 and len(errors[0]["traceback"]) == 1, errors
        assert errors[0]["traceback"][0].startswith("KeyboardInterrupt: the chat was interrupted (step 1: running slow)")
        # the live status, updated in place: waiting for the model, then running the tool
        shown = [(kind, content) for kind, content in outputs if kind in ("display_data", "update_display_data")]
        status_id = shown[0][1]["transient"]["display_id"]
        statuses = [content["data"]["text/plain"] for kind, content in shown
                    if content.get("transient", {}).get("display_id") == status_id]
        # (transient outputs: shown empty, updated, emptied at the end; a saved notebook keeps "")
        assert statuses == ["", "… step 1: waiting for test-model", "… step 1: running slow", ""], statuses
        # the text came in pieces, each update showing what came so far, then the step showed it
        texts = [content["data"]["text/plain"] for kind, content in shown
                 if content.get("transient", {}).get("display_id") not in (None, status_id)]
        assert len(texts) >= 5 and texts[0] == texts[-1] == "" and texts[-2] == "Let me work on it."
        assert texts[-2].startswith(texts[1]) and texts[1] != texts[-2]
        assert "Let me work on it." in [content["data"]["text/plain"] for kind, content in shown
                                        if "display_id" not in content.get("transient", {})]

        status, outputs = _run(client, 'chat("Go on.")')
        assert status == "ok", outputs
        sent = model.requests[-1]["body"]
        _no_nulls(sent)
        _validate("openai", sent)
        assert sent["messages"][-2] == {"role": "tool", "tool_call_id": "call_1", "content": INTERRUPTED}
        # the answer is shown once (the step view's output), not again as the cell's value
        answers = [content for kind, content in outputs
                   if kind in ("display_data", "update_display_data", "execute_result")
                   and "Done" in content["data"].get("text/plain", "")]
        assert [kind for kind, content in outputs if kind == "execute_result"] == []
        assert len([a for a in answers if "display_id" not in a.get("transient", {})]) == 1
        assert answers[-1]["data"]["text/markdown"] == "**Done**, after the interruption."
        # in a later cell the answer shows as any value does
        status, outputs = _run(client, "chat.steps[-1].text == _ and _")
        assert status == "ok" and [kind for kind, _ in outputs] == ["display_data"]
        assert outputs[0][1]["data"]["text/markdown"] == "**Done**, after the interruption."
