"""Cassettes: `Chat(..., record=PATH)` against the recorded model on loopback through each provider's real
SDK client (sync and async), then `nbtools.replay(PATH)` with that server stopped; a diverging run named
clearly; no key, token or Authorization header in the file; a streamed (SSE) response recorded as its
text and replayed."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from recorded_model import REPLIES, RecordedModel  # noqa: E402

import nbtools  # noqa: E402
from nbtools import Registry  # noqa: E402
from nbtools.chat import Chat  # noqa: E402
from nbtools.chat import cassette as cassettes  # noqa: E402
from nbtools.errors import CassetteError, CassetteMismatch  # noqa: E402

PROVIDERS = ["openai", "responses", "anthropic", "gemini"]
SECRET = "sk-proj-Zq8SECRETvalue0123456789"  # the API key every client here is given


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.fixture(autouse=True)
def fresh_cassettes():
    """Each test starts its cassettes afresh (a process keeps adding to a path it already records)."""
    cassettes._OPEN.clear()
    yield
    cassettes._OPEN.clear()


def client_for(provider: str, url: str, asynchronous: bool = False, **options: Any) -> Any:
    """The provider's real SDK client at `url`, holding SECRET as its key."""
    if provider in ("openai", "responses"):
        import openai

        cls = openai.AsyncOpenAI if asynchronous else openai.OpenAI
        return cls(api_key=SECRET, base_url=f"{url}/v1", max_retries=0, **options)
    if provider == "anthropic":
        import anthropic

        cls = anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic
        return cls(api_key=SECRET, base_url=url, max_retries=0, **options)
    from google import genai

    client = genai.Client(api_key=SECRET, http_options={"base_url": url})
    return client.aio if asynchronous else client


def chat_for(provider: str, client: Any, **kwargs: Any) -> Chat:
    if provider == "anthropic":
        kwargs["max_tokens"] = 256
    if provider == "responses":
        kwargs["api"] = "responses"
    return Chat(client, model="test-model", tools=Registry([add]), system="Be brief.", show=False, **kwargs)


def run(chat: Chat, prompts: list[str], asynchronous: bool) -> list[str]:
    """The answers to `prompts`, in order (async: in one event loop, as an async client's connections need)."""
    if not asynchronous:
        return [chat(prompt) for prompt in prompts]

    async def each() -> list[str]:
        return [await chat.acall(prompt) for prompt in prompts]

    return asyncio.run(each())


def script(provider: str) -> list[tuple[int, dict]]:
    reply = REPLIES[provider]
    return [(200, reply([("call_1", "add", {"a": 2, "b": 3})])), (200, reply(text="It is 5.")),
            (200, reply(text="You are welcome."))]


def record(provider: str, path: Path, asynchronous: bool) -> tuple[Chat, RecordedModel]:
    """Two prompts (three requests) recorded against the recorded model, which is then stopped."""
    model = RecordedModel(script(provider))
    try:
        chat = chat_for(provider, client_for(provider, model.url, asynchronous), record=path)
        assert run(chat, ["Add 2 and 3.", "Thanks!"], asynchronous) == ["It is 5.", "You are welcome."]
    finally:
        model.close()
    return chat, model


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_recorded_run_replays_offline(provider, asynchronous, tmp_path):
    path = tmp_path / "run.json"
    recorded, model = record(provider, path, asynchronous)
    data = json.loads(path.read_text())
    assert [exchange["request"]["json"] for exchange in data["exchanges"]] == [r["body"] for r in model.requests]
    assert [exchange["response"]["json"] for exchange in data["exchanges"]] == [body for _, body in script(provider)]

    client = nbtools.replay(path)  # the server is stopped: only the cassette can answer
    assert type(client).__module__.split(".")[0] == type(client_for(provider, "http://x", asynchronous)
                                                          ).__module__.split(".")[0]
    assert type(client).__name__.startswith("Async") == asynchronous
    replayed = chat_for(provider, client)
    assert run(replayed, ["Add 2 and 3.", "Thanks!"], asynchronous) == ["It is 5.", "You are welcome."]
    assert [call.text for call in replayed.steps[0].calls] == []  # the last prompt's one step: the answer
    assert replayed.messages == recorded.messages
    assert replayed.usage == recorded.usage


@pytest.mark.parametrize("provider", PROVIDERS)
def test_no_key_or_authorization_header_is_recorded(provider, tmp_path):
    path = tmp_path / "run.json"
    record(provider, path, False)
    text = path.read_text()
    assert SECRET not in text
    assert SECRET[8:20] not in text
    for header in ("authorization", "x-api-key", "x-goog-api-key", "bearer"):
        assert header not in text.lower()


def test_a_key_in_the_query_or_the_body_is_left_out(tmp_path):
    path = tmp_path / "run.json"
    model = RecordedModel([(200, REPLIES["openai"](text="noted"))])
    try:
        client = client_for("openai", model.url, default_query={"api_key": SECRET, "mode": "x"})
        chat = chat_for("openai", client, record=path)
        chat(f"my key is {SECRET}, keep it")
    finally:
        model.close()
    assert SECRET in json.dumps(model.requests[0]["body"])  # it was sent...
    text = path.read_text()
    assert SECRET not in text  # ...and not recorded
    request = json.loads(text)["exchanges"][0]["request"]
    assert request["query"] == [["mode", "x"]]
    assert request["json"]["messages"][1]["content"] == "my key is [redacted], keep it"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_diverging_run_names_the_first_difference(provider, tmp_path):
    path = tmp_path / "run.json"
    record(provider, path, False)
    replayed = chat_for(provider, nbtools.replay(path))
    with pytest.raises(CassetteMismatch) as caught:
        replayed("Add 2 and 4.")
    error = caught.value
    where = {"openai": "messages[1].content", "responses": "input[1].content", "anthropic": "messages[0].content",
             "gemini": "contents[0].parts[0].text"}[provider]
    assert (error.index, error.where, error.recorded, error.sent) == (1, where, "Add 2 and 3.", "Add 2 and 4.")
    assert str(error).startswith(f"request 1 differs from the recording in {path} at {where}: "
                                 "recorded 'Add 2 and 3.', sent 'Add 2 and 4.'")
    if provider != "gemini":  # the SDK's own error type too, so the SDK did not turn it into "Connection error"
        sdk = __import__("anthropic" if provider == "anthropic" else "openai")
        assert isinstance(error, sdk.AnthropicError if provider == "anthropic" else sdk.OpenAIError)


def test_a_changed_tool_and_a_request_past_the_end_are_named(tmp_path):
    path = tmp_path / "run.json"
    record("openai", path, False)

    # the notebook changed the tool since the recording
    def add(a: int, b: int = 1) -> int:
        """Add two integers."""
        return a + b

    changed = Chat(nbtools.replay(path), model="test-model", tools=Registry([add]), system="Be brief.", show=False)
    with pytest.raises(CassetteMismatch, match=r"at tools\[0\]\.function\.parameters\.properties\.b\.default: "
                                               r"recorded \(absent\), sent 1\."):
        changed("Add 2 and 3.")

    longer = chat_for("openai", nbtools.replay(path))
    longer("Add 2 and 3.")
    longer("Thanks!")
    with pytest.raises(CassetteMismatch, match="the run made more requests than were recorded") as caught:
        longer("And again?")
    assert caught.value.index == 4


def test_the_chats_of_one_session_share_a_cassette_and_the_next_session_starts_it_afresh(tmp_path):
    path = tmp_path / "run.json"
    model = RecordedModel([(200, REPLIES["openai"](text="one")), (200, REPLIES["openai"](text="two"))])
    try:
        chat_for("openai", client_for("openai", model.url), record=path)("first")
        chat_for("openai", client_for("openai", model.url), record=path)("second")
        assert len(json.loads(path.read_text())["exchanges"]) == 2
        client = nbtools.replay(path)  # one replay client answers both chats, in order
        assert chat_for("openai", client)("first") == "one"
        assert chat_for("openai", client)("second") == "two"
        with pytest.raises(CassetteError, match="already records a openai client|record the anthropic chat"):
            chat_for("anthropic", client_for("anthropic", model.url), record=path)
        cassettes._OPEN.clear()  # a new session
        chat_for("openai", client_for("openai", model.url), record=path)("again")
        assert len(json.loads(path.read_text())["exchanges"]) == 1
    finally:
        model.close()


def test_replay_refuses_a_missing_or_foreign_file(tmp_path):
    with pytest.raises(CassetteError, match="no cassette at .*record one first"):
        nbtools.replay(tmp_path / "none.json")
    (tmp_path / "other.json").write_text('{"interactions": []}')
    with pytest.raises(CassetteError, match="is not an nbtools cassette"):
        nbtools.replay(tmp_path / "other.json")
    (tmp_path / "broken.json").write_text('{"format": "nbtools-cassette/1", "sdk": "openai", "exchanges": [{}]}')
    with pytest.raises(CassetteError, match="'exchanges' must be a list of"):
        nbtools.replay(tmp_path / "broken.json")


def test_an_error_status_is_recorded_and_replayed(tmp_path):
    import openai

    path = tmp_path / "run.json"
    model = RecordedModel([(400, {"error": {"message": "bad request", "type": "invalid_request_error"}})])
    try:
        with pytest.raises(openai.BadRequestError):
            chat_for("openai", client_for("openai", model.url), record=path)("hi")
    finally:
        model.close()
    with pytest.raises(openai.BadRequestError, match="bad request"):
        chat_for("openai", nbtools.replay(path))("hi")


# -- streaming: a response sent as server-sent events ----------------------------------------------------
def chunk(delta: dict, finish: str | None = None) -> dict:
    return {"id": "chatcmpl-s1", "object": "chat.completion.chunk", "created": 1763900000, "model": "gpt-4.1-mini",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


EVENTS = [chunk({"role": "assistant", "content": ""}), chunk({"content": "Hel"}), chunk({"content": "lo!"}),
          chunk({}, "stop")]


class StreamingModel:
    """Answers every POST with EVENTS as server-sent events, written one by one."""

    def __init__(self):
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for event in EVENTS:
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.close_connection = True

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_streamed_response_is_recorded_as_its_events_and_replayed(tmp_path):
    path = tmp_path / "stream.json"
    server = StreamingModel()
    try:
        client = cassettes.recording(client_for("openai", server.url), path)
        stream = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], stream=True)
        live = [part.choices[0].delta.content for part in stream]
    finally:
        server.close()
    assert "".join(filter(None, live)) == "Hello!"
    response = json.loads(path.read_text())["exchanges"][0]["response"]
    assert response["headers"] == {"content-type": "text/event-stream"}
    assert response["text"].startswith("data: {") and response["text"].endswith("data: [DONE]\n\n")

    async def replayed() -> list:
        client = nbtools.replay(path, asynchronous=True)
        stream = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}],
                                                      stream=True)
        return [part.choices[0].delta.content async for part in stream]

    assert asyncio.run(replayed()) == live


def test_notebook_06_replays_the_cassettes_record_06_makes(tmp_path):
    """The committed cassettes are what notebooks/record_06.py records (nbval checks the notebook
    against them), so re-recording after a change to the notebook's chats is one command."""
    import importlib.util

    notebooks = Path(__file__).parent.parent / "notebooks"
    spec = importlib.util.spec_from_file_location("record_06", notebooks / "record_06.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(tmp_path)
    for name in ("06_chat.cassette.json", "06_chat.anthropic.cassette.json"):
        assert json.loads((tmp_path / name).read_text()) == json.loads((notebooks / name).read_text()), name


def test_a_retried_request_replays_as_it_was_recorded(tmp_path):
    """The SDK retried a 500 while recording: both attempts are in the cassette, and the replay client
    (with the SDK's default retries) goes through the same two."""
    path = tmp_path / "run.json"
    model = RecordedModel([(500, {"error": {"message": "overloaded", "type": "server_error"}}),
                           (200, REPLIES["openai"](text="fine"))])
    try:
        chat = chat_for("openai", client_for("openai", model.url).copy(max_retries=1), record=path)
        assert chat("hi") == "fine"
    finally:
        model.close()
    exchanges = json.loads(path.read_text())["exchanges"]
    assert [exchange["response"]["status"] for exchange in exchanges] == [500, 200]
    assert chat_for("openai", nbtools.replay(path))("hi") == "fine"


def test_an_exchange_the_recording_never_finished_is_named(tmp_path):
    import openai

    path = tmp_path / "run.json"
    record("openai", path, False)
    data = json.loads(path.read_text())
    data["exchanges"][0]["response"] = None  # the recording stopped before the answer came
    path.write_text(json.dumps(data))
    with pytest.raises(CassetteError, match="exchange 1 has no response") as caught:
        chat_for("openai", nbtools.replay(path))("Add 2 and 3.")
    assert isinstance(caught.value, openai.OpenAIError)  # passed on by the SDK, not "Connection error"


def test_a_beta_header_is_recorded_and_compared(tmp_path):
    path = tmp_path / "run.json"
    model = RecordedModel([(200, REPLIES["anthropic"](text="ok"))])
    try:
        client = client_for("anthropic", model.url, default_headers={"anthropic-beta": "web-search-2025-03-05"})
        chat_for("anthropic", client, record=path)("hi")
    finally:
        model.close()
    assert json.loads(path.read_text())["exchanges"][0]["request"]["headers"] == {
        "anthropic-beta": "web-search-2025-03-05"}
    with pytest.raises(CassetteMismatch, match="at headers: recorded {'anthropic-beta': 'web-search-2025-03-05'}, "
                                               "sent None"):
        chat_for("anthropic", nbtools.replay(path))("hi")
    replayed = nbtools.replay(path).with_options(default_headers={"anthropic-beta": "web-search-2025-03-05"})
    assert chat_for("anthropic", replayed)("hi") == "ok"


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_streamed_chat_replays_offline(provider, asynchronous, tmp_path):
    """`Chat(stream=True)`: the responses are recorded as the server-sent events they were, and a
    streamed replay leaves the same history."""
    import inspect

    if "stream" not in inspect.signature(Chat).parameters:
        pytest.skip("Chat(stream=True) comes with the chat loop's branch")
    path = tmp_path / "run.json"
    model = RecordedModel(script(provider))
    try:
        chat = chat_for(provider, client_for(provider, model.url, asynchronous), record=path, stream=True)
        assert run(chat, ["Add 2 and 3.", "Thanks!"], asynchronous) == ["It is 5.", "You are welcome."]
    finally:
        model.close()
    assert model.streamed == 3
    responses = [exchange["response"] for exchange in json.loads(path.read_text())["exchanges"]]
    assert all(response["headers"]["content-type"].startswith("text/event-stream") for response in responses)
    assert all("text" in response and "json" not in response for response in responses)
    replayed = chat_for(provider, nbtools.replay(path), stream=True)
    assert run(replayed, ["Add 2 and 3.", "Thanks!"], asynchronous) == ["It is 5.", "You are welcome."]
    assert replayed.messages == chat.messages
