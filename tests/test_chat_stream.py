"""Chat(stream=True): each provider's streaming API, through the real SDK clients against the
recorded model on loopback, which answers with that API's server-sent events (text and tool-call
arguments in pieces). A streamed conversation must leave the same history, send the same requests
(checked with the SDKs' own request types) and count the same usage as the same one unstreamed."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from recorded_model import REPLIES, RecordedModel, sse_events  # noqa: E402
from test_chat import CALLS, PROVIDERS, _chat, _conversation, _no_nulls, _validate, add, delete_file  # noqa: E402

from nbtools import Registry  # noqa: E402


class RecordingView:
    """A step view that keeps what the loop showed (the notebook's is tested in a real kernel)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def status(self, text: str | None) -> None:
        self.events.append(("status", text))

    def text(self, piece: str) -> None:
        self.events.append(("text", piece))

    def step(self, step: Any) -> None:
        self.events.append(("step", step.number))

    def final(self, text: str, usage: Any) -> str:
        self.events.append(("final", text))
        return text


@pytest.fixture
def view(monkeypatch):
    from nbtools.chat import display

    recording = RecordingView()
    monkeypatch.setattr(display.StepView, "create", classmethod(lambda cls, force=False, remote_images=False: recording))
    return recording


def _registry() -> Registry:
    registry = Registry(approve=lambda tool, args: False)
    registry.add(add)
    registry.add(delete_file, hints="destructive")
    return registry


def _plain_json(value: Any) -> Any:
    return json.loads(json.dumps(value, default=repr))


def _converse(provider: str, stream: bool, asynchronous: bool) -> tuple[Any, list, list]:
    reply = REPLIES[provider]
    answers = [(200, reply(CALLS, text="Let me see." if provider != "responses" else None)),
               (200, reply(text="The sum is 5."))]
    with RecordedModel(answers) as model:
        chat = _chat(provider, model.url, _registry(), asynchronous=asynchronous, stream=stream)
        prompt = "Add 2 and 3, then delete notes.txt."
        text = asyncio.run(chat.acall(prompt)) if asynchronous else chat(prompt)
        assert text == "The sum is 5."
        assert model.streamed == (2 if stream else 0)
        return chat, model.requests, [request["body"] for request in model.requests]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_streamed_conversation_leaves_the_same_history(provider, asynchronous, view):
    plain, _, plain_bodies = _converse(provider, False, asynchronous)
    view.events.clear()
    streamed, requests, bodies = _converse(provider, True, asynchronous)
    assert _plain_json(streamed.messages) == _plain_json(plain.messages)
    assert streamed.usage == plain.usage and streamed.usage.steps == plain.usage.steps
    assert [(c.name, c.text) for c in streamed.steps[0].calls] == [(c.name, c.text) for c in plain.steps[0].calls]
    # the second request carries the same conversation, and the SDK's request types accept it
    _no_nulls(bodies[1])
    _validate(provider, bodies[1])
    assert _conversation(provider, bodies[1]) == _conversation(provider, plain_bodies[1])
    if provider == "gemini":
        assert all(":streamGenerateContent" in request["path"] for request in requests)
    else:
        assert all(body["stream"] is True for body in bodies)
    # the text reached the view in pieces, before the step it belongs to was shown
    pieces = [value for kind, value in view.events if kind == "text"]
    assert len(pieces) > 2 and "".join(pieces).endswith("The sum is 5.")
    kinds = [kind for kind, _ in view.events]
    assert kinds[-2:] == ["final", "status"] and kinds[-3] == "text", view.events[-6:]
    if provider != "responses":  # step 1's own text ("Let me see.") streamed before its calls were shown
        assert kinds.index("text") < kinds.index("step")
    statuses = [value for kind, value in view.events if kind == "status"]
    assert "step 1: running add, delete_file" in statuses and statuses[-1] is None
    assert "step 2: waiting for test-model" in statuses


def test_openai_usage_arrives_in_the_last_chunk_and_cache_reads_are_counted(view):
    reply = REPLIES["openai"](text="hi")
    reply["usage"]["prompt_tokens_details"]["cached_tokens"] = 64
    assert json.loads(sse_events("openai", reply)[-2].removeprefix("data: "))["choices"] == []
    with RecordedModel([(200, reply)]) as model:
        chat = _chat("openai", model.url, [], stream=True)
        assert chat("hello") == "hi"
        assert model.requests[0]["body"]["stream_options"] == {"include_usage": True}
    assert (chat.usage.input_tokens, chat.usage.output_tokens, chat.usage.cache_read_tokens) == (120, 40, 64)


def test_stream_is_chats_own_argument():
    import openai

    with pytest.raises(TypeError, match="stream=True"):
        from nbtools import Chat

        Chat(openai.OpenAI(api_key="x"), model="m", stream_options={"include_usage": False})
