"""nbtools.Chat: the agent loop, driven through each provider's real SDK client against a recorded
model on loopback (tests/recorded_model.py). The second request the server receives must carry the
assistant turn and the tool results exactly as that API requires; the SDKs' own request types
validate them (extra keys refused at the top of each message, as the APIs refuse them)."""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import sys
from pathlib import Path
from typing import Any, List

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from recorded_model import REPLIES, SIGNATURE, RecordedModel, error_body, make_client  # noqa: E402

from nbtools import Registry  # noqa: E402
from nbtools.chat import Chat, MaxStepsReached  # noqa: E402
from nbtools.content import Image  # noqa: E402

PROVIDERS = ["openai", "responses", "anthropic", "gemini"]
CALLS = [("call_1", "add", {"a": 2, "b": 3}), ("call_2", "delete_file", {"path": "notes.txt"})]
DENIED = "refused: the user denied this call"


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


@pytest.fixture
def tools():
    asked = []

    def approve(tool, args):
        asked.append((tool.name, args))
        return False

    registry = Registry(approve=approve)
    registry.add(add)
    registry.add(delete_file, hints="destructive")
    registry.asked = asked
    return registry


def _chat(provider: str, url: str, tools: Any, asynchronous: bool = False, **kwargs: Any) -> Chat:
    if provider == "anthropic":
        kwargs.setdefault("max_tokens", 1024)
    if provider == "responses":
        kwargs["api"] = "responses"
    return Chat(make_client(provider, url, asynchronous), model="test-model", tools=tools,
                system="Be brief.", **kwargs)


def _no_nulls(value: Any, where: str = "body") -> None:
    """The APIs (and the SDKs' param types) refuse `null` where a field is optional: none may be sent."""
    if isinstance(value, dict):
        for key, item in value.items():
            assert item is not None, f"{where}.{key} is null"
            _no_nulls(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _no_nulls(item, f"{where}[{index}]")


@functools.lru_cache(maxsize=None)
def _adapters(provider: str) -> tuple[Any, Any]:
    """The SDK's request types for the conversation and the tool definitions (built once: slow)."""
    from pydantic import ConfigDict, TypeAdapter

    forbid = ConfigDict(extra="forbid")
    if provider == "openai":
        from openai.types.chat import ChatCompletionMessageParam as Message
        from openai.types.chat import ChatCompletionToolUnionParam as Definition
    elif provider == "responses":
        from openai.types.responses import ResponseInputItemParam as Message
        from openai.types.responses import ToolParam as Definition
    else:
        from anthropic.types import MessageParam as Message
        from anthropic.types import ToolParam as Definition
    return TypeAdapter(List[Message], config=forbid), TypeAdapter(List[Definition], config=forbid)


def _validate(provider: str, body: dict) -> None:
    """The request's conversation, checked with the SDK's own request types."""
    if provider == "gemini":
        from google.genai import types

        for content in body["contents"]:
            types.Content.model_validate_json(json.dumps(content))  # the model forbids extra keys
        types.Tool.model_validate_json(json.dumps(body["tools"][0]))
        return
    messages, definitions = _adapters(provider)
    messages.validate_python(_conversation(provider, body))
    definitions.validate_python(body["tools"])


def _expected_turns(provider: str) -> list:
    """What the second request must carry after the prompt: the model's turn, then the results."""
    add_args, delete_args = json.dumps(CALLS[0][2]), json.dumps(CALLS[1][2])
    denied = f"Error calling tool 'delete_file': {DENIED}"
    if provider == "openai":
        return [{"role": "assistant", "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": add_args}},
                    {"id": "call_2", "type": "function", "function": {"name": "delete_file", "arguments": delete_args}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "5"},
                {"role": "tool", "tool_call_id": "call_2", "content": denied}]
    if provider == "responses":
        return [{"id": "rs_0a1", "type": "reasoning", "summary": []},
                {"id": "fc_0b0", "type": "function_call", "status": "completed", "call_id": "call_1", "name": "add",
                 "arguments": add_args},
                {"id": "fc_0b1", "type": "function_call", "status": "completed", "call_id": "call_2",
                 "name": "delete_file", "arguments": delete_args},
                {"type": "function_call_output", "call_id": "call_1", "output": "5"},
                {"type": "function_call_output", "call_id": "call_2", "output": denied}]
    if provider == "anthropic":
        return [{"role": "assistant", "content": [
                    {"type": "tool_use", "id": "call_1", "name": "add", "input": CALLS[0][2]},
                    {"type": "tool_use", "id": "call_2", "name": "delete_file", "input": CALLS[1][2]}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_1", "content": "5"},
                    {"type": "tool_result", "tool_use_id": "call_2", "content": denied, "is_error": True}]}]
    return [{"role": "model", "parts": [
                {"functionCall": {"id": "call_1", "name": "add", "args": CALLS[0][2]}, "thoughtSignature": SIGNATURE},
                {"functionCall": {"id": "call_2", "name": "delete_file", "args": CALLS[1][2]}}]},
            {"role": "user", "parts": [
                {"functionResponse": {"id": "call_1", "name": "add", "response": {"result": 5}}},
                {"functionResponse": {"id": "call_2", "name": "delete_file", "response": {"error": denied}}}]}]


def _conversation(provider: str, body: dict) -> list:
    return body["contents"] if provider == "gemini" else body["input"] if provider == "responses" else body["messages"]


def _prompt_turns(provider: str, prompt: str) -> list:
    if provider == "gemini":
        return [{"role": "user", "parts": [{"text": prompt}]}]
    system = [{"role": "system", "content": "Be brief."}] if provider in ("openai", "responses") else []
    return [*system, {"role": "user", "content": prompt}]


def _check_round_trip(provider: str, model: RecordedModel, chat: Chat, text: str, tools: Registry) -> None:
    assert text == "The sum is 5."
    assert len(model.requests) == 2
    second = model.requests[1]["body"]
    _no_nulls(second)
    _validate(provider, second)
    assert _conversation(provider, second) == _prompt_turns(provider, "Add 2 and 3, then delete notes.txt.") \
        + _expected_turns(provider)
    # the approval callback saw the destructive call; its refusal reached the model as a result
    assert tools.asked == [("delete_file", {"path": "notes.txt"})]
    # the same tool definitions went out both times, and where each API wants its system prompt
    first = model.requests[0]["body"]
    assert first["tools"] == second["tools"] and _tool_names(provider, second) == ["add", "delete_file"]
    if provider == "anthropic":
        assert second["system"] == "Be brief." and second["max_tokens"] == 1024
    if provider == "gemini":
        assert second["systemInstruction"]["parts"] == [{"text": "Be brief."}]
        signature = second["contents"][1]["parts"][0]["thoughtSignature"]
        assert base64.b64decode(signature) == base64.b64decode(SIGNATURE)  # survives, byte for byte
    # the history is what was sent, plus the final answer
    assert len(chat.messages) >= len(_conversation(provider, second)) + 1
    assert [step.number for step in chat.steps] == [1, 2]
    assert [(call.name, call.is_error) for call in chat.steps[0].calls] == [("add", False), ("delete_file", True)]
    assert chat.steps[0].calls[0].value == 5


def _tool_names(provider: str, body: dict) -> list[str]:
    if provider == "gemini":
        return [declaration["name"] for declaration in body["tools"][0]["functionDeclarations"]]
    return [definition["function"]["name"] if provider == "openai" else definition["name"]
            for definition in body["tools"]]


def _usage(provider: str) -> tuple[int, int]:
    """Tokens the two recorded replies report, as the loop sums them (input incl. cache; output incl.
    reasoning)."""
    return {"openai": (240, 80), "responses": (300, 120), "anthropic": (1000, 140), "gemini": (180, 84)}[provider]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_two_parallel_calls_then_the_final_text(provider, tools, capsys):
    reply = REPLIES[provider]
    with RecordedModel([(200, reply(CALLS)), (200, reply(text="The sum is 5."))]) as model:
        chat = _chat(provider, model.url, tools)
        text = chat("Add 2 and 3, then delete notes.txt.")
        _check_round_trip(provider, model, chat, text, tools)
        assert (chat.usage.input_tokens, chat.usage.output_tokens) == _usage(provider)
    assert capsys.readouterr() == ("", "")  # outside a notebook nothing is printed unless asked


@pytest.mark.parametrize("provider", PROVIDERS)
def test_async_clients(provider, tools):
    reply = REPLIES[provider]
    with RecordedModel([(200, reply(CALLS)), (200, reply(text="The sum is 5."))]) as model:
        chat = _chat(provider, model.url, tools, asynchronous=True)
        with pytest.raises(TypeError, match="acall"):
            chat("Add 2 and 3, then delete notes.txt.")
        assert len(chat.messages) == len(_prompt_turns(provider, "")) - 1  # nothing was kept
        text = asyncio.run(chat.acall("Add 2 and 3, then delete notes.txt."))
        _check_round_trip(provider, model, chat, text, tools)


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_acall_with_a_synchronous_client(provider, tools):
    reply = REPLIES[provider]
    with RecordedModel([(200, reply(CALLS)), (200, reply(text="The sum is 5."))]) as model:
        chat = _chat(provider, model.url, tools)
        text = asyncio.run(chat.acall("Add 2 and 3, then delete notes.txt."))
        _check_round_trip(provider, model, chat, text, tools)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_second_prompt_continues_the_conversation(provider, tools):
    reply = REPLIES[provider]
    with RecordedModel([(200, reply(CALLS)), (200, reply(text="The sum is 5.")),
                        (200, reply(text="Done."))]) as model:
        chat = _chat(provider, model.url, tools)
        chat("Add 2 and 3, then delete notes.txt.")
        kept = list(chat.messages)
        assert chat("Thanks!") == "Done."
        third = _conversation(provider, model.requests[2]["body"])
        _no_nulls(model.requests[2]["body"])
        _validate(provider, model.requests[2]["body"])
        assert third[:-1] == json.loads(json.dumps(_conversation(provider, model.requests[1]["body"]))) + third[
            len(_conversation(provider, model.requests[1]["body"])):-1]
        assert len(third) == len(kept) + 1 and third[-1] == _prompt_turns(provider, "Thanks!")[-1]
        assert [step.number for step in chat.steps] == [1]  # steps of the last call only


@pytest.mark.parametrize("provider", PROVIDERS)
def test_max_steps_stops_a_model_that_never_stops(provider, tools):
    runs = []

    def count() -> int:
        """Count."""
        runs.append(1)
        return len(runs)

    registry = Registry([count])
    reply = REPLIES[provider]
    with RecordedModel([(200, reply([("call_1", "count", {})]))]) as model:  # the same reply forever
        chat = _chat(provider, model.url, registry, max_steps=3)
        with pytest.raises(MaxStepsReached, match="max_steps=3") as caught:
            chat("Count forever.")
        assert len(model.requests) == 3 and len(runs) == 2  # the last step's call was not run
        assert caught.value.max_steps == 3 and len(caught.value.steps) == 3
        last = caught.value.steps[-1].calls[0]
        assert last.is_error and "not run" in last.text
        # the unanswered call was answered in the history, which the API accepts to go on
        model.replies = [(200, reply(text="Stopped."))]
        assert chat("Stop now.") == "Stopped."
        body = model.requests[-1]["body"]
        _no_nulls(body)
        _validate(provider, body)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_api_errors_propagate_unchanged(provider, tools):
    with RecordedModel([error_body(provider)]) as model:
        chat = _chat(provider, model.url, tools)
        before = list(chat.messages)
        with pytest.raises(Exception) as caught:
            chat("Hello")
        module = type(caught.value).__module__
        assert module.split(".")[0] in ("openai", "anthropic", "google"), type(caught.value)
        assert getattr(caught.value, "status_code", getattr(caught.value, "code", None)) == 400
        assert chat.messages == before  # the unanswered prompt was taken back: a retry does not repeat it


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_tool_error_goes_back_to_the_model(provider):
    def divide(a: float, b: float) -> float:
        """Divide."""
        return a / b

    reply = REPLIES[provider]
    with RecordedModel([(200, reply([("call_1", "divide", {"a": 1, "b": 0}), ("call_2", "divide", {"a": "x"})])),
                        (200, reply(text="Cannot divide by zero."))]) as model:
        chat = _chat(provider, model.url, [divide])
        assert chat("1/0?") == "Cannot divide by zero."
        texts = [call.text for call in chat.steps[0].calls]
        assert "ZeroDivisionError" in texts[0] and "argument 'a'" in texts[1]
        assert all(call.is_error for call in chat.steps[0].calls)


def test_strict_definitions_when_asked(tools):
    reply = REPLIES["openai"]
    with RecordedModel([(200, reply(text="ok"))]) as model:
        _chat("openai", model.url, tools, strict=True)("hi")
        definitions = model.requests[0]["body"]["tools"]
        assert all(definition["function"]["strict"] is True for definition in definitions)


def test_trace_prints_each_call_and_create_kwargs_are_forwarded(tools):
    lines: list[str] = []
    reply = REPLIES["openai"]
    with RecordedModel([(200, reply(CALLS)), (200, reply(text="The sum is 5."))]) as model:
        chat = _chat("openai", model.url, tools, trace=lines.append, temperature=0.25)
        chat("Add 2 and 3, then delete notes.txt.")
        assert all(request["body"]["temperature"] == 0.25 for request in model.requests)
    assert lines[0] == '[step 1] add({"a": 2, "b": 3}) -> result: 5'
    assert lines[1].startswith('[step 1] delete_file({"path": "notes.txt"}) -> error:') and DENIED in lines[1]


def test_tool_definitions_are_rendered_once_per_tool_set(tools, monkeypatch):
    rendered = []
    original = Registry.schemas

    def counting(self, *args, **kwargs):
        rendered.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Registry, "schemas", counting)
    reply = REPLIES["anthropic"]
    with RecordedModel([(200, reply(CALLS)), (200, reply(CALLS)), (200, reply(text="done"))]) as model:
        chat = _chat("anthropic", model.url, tools)
        chat("go")
        assert len(rendered) == 1
        tools.add(lambda: 1, name="one")  # a new tool is seen by the next call
        model.replies.append((200, reply(text="again")))
        chat("again")
        assert len(rendered) == 2 and len(model.requests[-1]["body"]["tools"]) == 3


def test_select_views_and_lists_of_callables_are_tool_sets(tools):
    reply = REPLIES["openai"]
    with RecordedModel([(200, reply(CALLS)), (200, reply(text="The sum is 5."))]) as model:
        view = tools.select(deny="delete_*")
        chat = _chat("openai", model.url, view)
        chat("go")
        assert [d["function"]["name"] for d in model.requests[0]["body"]["tools"]] == ["add"]
        # a tool outside the view is not reachable, whatever the model asks
        assert chat.steps[0].calls[1].is_error and "delete_file" in chat.steps[0].calls[1].text
        assert tools.asked == []


def test_the_default_registry_is_used_when_no_tools_are_given():
    from nbtools import registry

    with RecordedModel([(200, REPLIES["openai"](text="hi"))]) as model:
        Chat(make_client("openai", model.url), model="m")("hello")
        body = model.requests[0]["body"]
        assert ("tools" in body) == bool(registry.enabled())


def test_clients_are_told_apart_without_importing_sdks_and_bad_arguments_are_named():
    class Fake:
        pass

    with pytest.raises(TypeError, match="openai.OpenAI"):
        Chat(Fake(), model="m")
    import anthropic

    with pytest.raises(TypeError, match="max_tokens"):
        Chat(anthropic.Anthropic(api_key="x"), model="m")
    with pytest.raises(ValueError, match="OpenAI clients"):
        Chat(anthropic.Anthropic(api_key="x"), model="m", api="responses", max_tokens=5)
    with pytest.raises(ValueError, match="max_steps"):
        Chat(anthropic.Anthropic(api_key="x"), model="m", max_steps=0, max_tokens=5)


def test_import_nbtools_chat_imports_no_sdk():
    import subprocess

    code = ("import sys, nbtools; nbtools.Chat; "
            "print([m for m in ('openai', 'anthropic', 'google.genai', 'IPython', 'pydantic') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_the_step_view_shows_calls_folds_long_results_and_shows_images():
    from nbtools.chat.display import StepView
    from nbtools.chat.steps import CallRecord, Step, Usage

    png = Image(b"\x89PNG\r\n\x1a\n0000", "image/png")
    shown: list[Any] = []
    view = StepView(shown.append)
    long = "x" * 1000
    step = Step(1, "", (CallRecord("c1", "plot", {"n": 1}, "[image produced: image/png, 12 bytes]", False, png),
                        CallRecord("c2", "dump", {}, long, False, long)), Usage(1, 2))
    view.step(step)
    view.final("**Done**", Usage(1, 2))
    assert repr(shown[0]).startswith('step 1 · plot({"n": 1})')
    assert shown[1] is png  # the image itself, displayed as image/png
    assert "<details>" not in shown[0]._repr_html_() and "<details>" in shown[2]._repr_html_()
    assert shown[-1]._repr_markdown_() == "**Done**"


def test_a_rich_result_reaches_the_view_as_an_image():
    png = Image(b"\x89PNG\r\n\x1a\nabcd", "image/png")

    def plot() -> Image:
        """Plot."""
        return png

    from nbtools.chat.display import rich_items

    with RecordedModel([(200, REPLIES["openai"]([("call_1", "plot", {})])),
                        (200, REPLIES["openai"](text="here"))]) as model:
        chat = _chat("openai", model.url, [plot])
        chat("plot")
        assert rich_items(chat.steps[0].calls[0]) == [png]


def test_run_reply_calls_gives_each_result_with_the_value_run_tool_calls_sends():
    from nbtools import run_tool_calls
    from nbtools.call.answers import arun_reply_calls, run_reply_calls
    from nbtools.formats import result_message

    reply = REPLIES["anthropic"]([("t1", "add", {"a": 1, "b": 2}), ("t2", "add", {"a": "x", "b": 2})])
    registry = Registry([add])
    dialect, outcomes = run_reply_calls(reply, registry)
    assert dialect == "anthropic" and [value for _result, value in outcomes] == [3, None]
    assert [result.is_error for result, _value in outcomes] == [False, True]
    assert result_message(dialect, [result for result, _value in outcomes]) == run_tool_calls(reply, registry)
    assert asyncio.run(arun_reply_calls(reply, registry))[1][0][1] == 3


@pytest.mark.parametrize("asynchronous", [False, True])
def test_approvals_inside_a_chat_name_the_model_that_asks(asynchronous):
    origins = []

    def approve(tool, args, *, origin):
        origins.append(origin)
        return False

    guarded = Registry(approve=approve)
    guarded.add(delete_file, hints="destructive")
    reply = REPLIES["openai"]
    calls = [("call_1", "delete_file", {"path": "notes.txt"})]
    with RecordedModel([(200, reply(calls)), (200, reply(text="Not deleted."))]) as model:
        chat = _chat("openai", model.url, guarded, asynchronous=asynchronous)
        prompt = "Delete notes.txt."
        asyncio.run(chat.acall(prompt)) if asynchronous else chat(prompt)
    assert origins == ["chat:test-model"]
    assert [(d.tool, d.origin, d.verdict) for d in guarded.decisions] == [
        ("delete_file", "chat:test-model", "denied")]
