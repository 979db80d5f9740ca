"""Model replies in, result messages out: every provider, as dicts and as real SDK objects (offline)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from pydantic import TypeAdapter

from nbtools.formats import ToolCallRequest, ToolResult, parse_reply, result_message
from providers import anthropic_message, gemini_response, openai_completion, responses_response, sdk_reply

ADD_ARGS = {"a": 2, "b": 3}
MUL_ARGS = {"a": 4, "b": 5}

# -- OpenAI Chat Completions -----------------------------------------------------------------------

OPENAI_MESSAGE = {
    "role": "assistant", "content": None,
    "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": json.dumps(ADD_ARGS)}},
        {"id": "call_2", "type": "function", "function": {"name": "calc__mul", "arguments": json.dumps(MUL_ARGS)}},
    ],
}
OPENAI_COMPLETION = openai_completion(OPENAI_MESSAGE)
OPENAI_EXPECTED = [ToolCallRequest("call_1", "add", json.dumps(ADD_ARGS)),
                   ToolCallRequest("call_2", "calc__mul", json.dumps(MUL_ARGS))]


def openai_completion_object(data=OPENAI_COMPLETION):
    return sdk_reply("openai", data)


@pytest.mark.parametrize("make", [
    lambda: OPENAI_COMPLETION,
    lambda: OPENAI_MESSAGE,
    openai_completion_object,
    lambda: openai_completion_object().choices[0].message,
], ids=["completion-dict", "message-dict", "completion-sdk", "message-sdk"])
def test_openai_chat_replies(make):
    assert parse_reply(make()) == ("openai", OPENAI_EXPECTED)


def test_openai_reply_without_tool_calls():
    text_only = {**OPENAI_COMPLETION, "choices": [{"index": 0, "finish_reason": "stop",
                                                   "message": {"role": "assistant", "content": "Hello"}}]}
    assert parse_reply(text_only) == ("openai", [])
    assert parse_reply(openai_completion_object(text_only)) == ("openai", [])
    assert parse_reply({**OPENAI_COMPLETION, "choices": []}) == ("openai", [])


# -- OpenAI Responses ------------------------------------------------------------------------------

RESPONSES_OUTPUT = [
    {"type": "reasoning", "id": "rs_1", "summary": []},
    {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "add",
     "arguments": json.dumps(ADD_ARGS), "status": "completed"},
    {"type": "function_call", "id": "fc_2", "call_id": "call_b", "name": "calc__mul",
     "arguments": json.dumps(MUL_ARGS), "status": "completed"},
]
RESPONSE = responses_response(RESPONSES_OUTPUT)
RESPONSES_EXPECTED = [ToolCallRequest("call_a", "add", json.dumps(ADD_ARGS)),
                      ToolCallRequest("call_b", "calc__mul", json.dumps(MUL_ARGS))]


def response_object(data=RESPONSE):
    return sdk_reply("responses", data)


@pytest.mark.parametrize("make", [
    lambda: RESPONSE,
    lambda: RESPONSES_OUTPUT,
    response_object,
    lambda: response_object().output,
], ids=["response-dict", "output-dicts", "response-sdk", "output-sdk"])
def test_responses_replies(make):
    assert parse_reply(make()) == ("responses", RESPONSES_EXPECTED)


def test_responses_reply_with_only_a_message():
    message = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
               "content": [{"type": "output_text", "text": "Done.", "annotations": []}]}
    assert parse_reply({**RESPONSE, "output": [message]}) == ("responses", [])
    assert parse_reply(response_object({**RESPONSE, "output": [message]})) == ("responses", [])
    assert parse_reply([message]) == ("responses", [])


# -- Anthropic -------------------------------------------------------------------------------------

ANTHROPIC_CONTENT = [
    {"type": "text", "text": "Let me compute both."},
    {"type": "tool_use", "id": "toolu_1", "name": "add", "input": ADD_ARGS},
    {"type": "tool_use", "id": "toolu_2", "name": "calc__mul", "input": MUL_ARGS},
]
ANTHROPIC_MESSAGE = anthropic_message(ANTHROPIC_CONTENT)
ANTHROPIC_EXPECTED = [ToolCallRequest("toolu_1", "add", ADD_ARGS), ToolCallRequest("toolu_2", "calc__mul", MUL_ARGS)]


def anthropic_message_object(data=ANTHROPIC_MESSAGE):
    return sdk_reply("anthropic", data)


@pytest.mark.parametrize("make", [
    lambda: ANTHROPIC_MESSAGE,
    lambda: ANTHROPIC_CONTENT,
    anthropic_message_object,
    lambda: anthropic_message_object().content,
    lambda: {"role": "assistant", "content": ANTHROPIC_CONTENT},
], ids=["message-dict", "content-dicts", "message-sdk", "content-sdk", "assistant-param"])
def test_anthropic_replies(make):
    assert parse_reply(make()) == ("anthropic", ANTHROPIC_EXPECTED)


def test_anthropic_reply_without_tool_use():
    text_only = {**ANTHROPIC_MESSAGE, "content": [{"type": "text", "text": "Hi"}], "stop_reason": "end_turn"}
    assert parse_reply(text_only) == ("anthropic", [])
    assert parse_reply(anthropic_message_object(text_only)) == ("anthropic", [])
    assert parse_reply([{"type": "text", "text": "Hi"}]) == ("anthropic", [])


# -- Gemini ----------------------------------------------------------------------------------------

GEMINI_PARTS_REST = [  # what the REST API sends: camelCase
    {"text": "Computing."},
    {"functionCall": {"id": "fc-1", "name": "add", "args": ADD_ARGS}},
    {"functionCall": {"name": "calc.mul", "args": MUL_ARGS}},
]
GEMINI_RESPONSE_REST = gemini_response(GEMINI_PARTS_REST)
GEMINI_EXPECTED = [ToolCallRequest("fc-1", "add", ADD_ARGS), ToolCallRequest(None, "calc.mul", MUL_ARGS)]


def gemini_response_object(data=GEMINI_RESPONSE_REST):
    return sdk_reply("gemini", data)


def gemini_snake_case_dict():
    return gemini_response_object().model_dump(exclude_none=True)  # python-side names: function_call


@pytest.mark.parametrize("make", [
    lambda: GEMINI_RESPONSE_REST,
    lambda: GEMINI_RESPONSE_REST["candidates"][0]["content"],
    lambda: GEMINI_PARTS_REST,
    gemini_response_object,
    lambda: gemini_response_object().candidates[0],
    lambda: gemini_response_object().candidates[0].content,
    lambda: gemini_response_object().candidates[0].content.parts,
    gemini_snake_case_dict,
], ids=["response-rest", "content-rest", "parts-rest", "response-sdk", "candidate-sdk", "content-sdk",
        "parts-sdk", "response-snake-dict"])
def test_gemini_replies(make):
    assert parse_reply(make()) == ("gemini", GEMINI_EXPECTED)


def test_gemini_call_without_args_gets_an_empty_dict():
    assert parse_reply([{"functionCall": {"name": "ping"}}]) == ("gemini", [ToolCallRequest(None, "ping", {})])


def test_gemini_reply_without_calls():
    assert parse_reply({"candidates": []}) == ("gemini", [])
    assert parse_reply({"role": "model", "parts": [{"text": "Hi"}]}) == ("gemini", [])


# -- Unrecognised shapes ---------------------------------------------------------------------------

@pytest.mark.parametrize("reply,named", [
    (42, "builtins.int"),
    ({"foo": 1, "bar": 2}, "'foo', 'bar'"),
    ([{"weird": True}], "'weird'"),
    ("some text", "builtins.str"),
])
def test_unrecognised_reply_names_what_it_got(reply, named):
    with pytest.raises(ValueError, match="unrecognised model reply") as info:
        parse_reply(reply)
    assert named in str(info.value)


def test_empty_list_is_ambiguous():
    with pytest.raises(ValueError, match="empty list"):
        parse_reply([])


def test_requests_and_results_are_frozen():
    request = ToolCallRequest("id", "add", "{}")
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.name = "other"  # type: ignore[misc]


# -- Result messages -------------------------------------------------------------------------------

def results_for(requests: list[ToolCallRequest]) -> list[ToolResult]:
    """The first call succeeds with 5, the second fails."""
    ok = ToolResult(requests[0], "5", 5, False)
    failed = ToolResult(requests[1], "Error calling tool 'calc.mul': boom", "Error calling tool 'calc.mul': boom",
                        True)
    return [ok, failed]


def test_openai_result_messages_validate_in_the_sdk():
    from openai.types.chat import ChatCompletionMessageParam

    messages = result_message("openai", results_for(OPENAI_EXPECTED))
    assert messages == [
        {"role": "tool", "tool_call_id": "call_1", "content": "5"},
        {"role": "tool", "tool_call_id": "call_2", "content": "Error calling tool 'calc.mul': boom"},
    ]
    conversation = [{"role": "user", "content": "add and multiply"}, OPENAI_MESSAGE, *messages]
    TypeAdapter(list[ChatCompletionMessageParam]).validate_python(conversation)


def test_responses_result_items_validate_in_the_sdk():
    from openai.types.responses.response_input_item_param import FunctionCallOutput

    items = result_message("responses", results_for(RESPONSES_EXPECTED))
    assert items == [
        {"type": "function_call_output", "call_id": "call_a", "output": "5"},
        {"type": "function_call_output", "call_id": "call_b", "output": "Error calling tool 'calc.mul': boom"},
    ]
    TypeAdapter(list[FunctionCallOutput]).validate_python(items)


def test_anthropic_result_message_validates_in_the_sdk():
    from anthropic.types import MessageParam, ToolResultBlockParam

    message = result_message("anthropic", results_for(ANTHROPIC_EXPECTED))
    assert message == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "5"},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "Error calling tool 'calc.mul': boom",
         "is_error": True},
    ]}
    conversation = [{"role": "user", "content": "add and multiply"},
                    {"role": "assistant", "content": ANTHROPIC_CONTENT}, message]
    TypeAdapter(list[MessageParam]).validate_python(conversation)
    # MessageParam's content is an Iterable, which pydantic does not look inside: check each block.
    for block in message["content"]:
        TypeAdapter(ToolResultBlockParam).validate_python(block)


def test_gemini_result_content_validates_in_the_sdk():
    from google.genai.types import Content

    content = result_message("gemini", results_for(GEMINI_EXPECTED))
    assert content == {"role": "user", "parts": [
        {"function_response": {"name": "add", "id": "fc-1", "response": {"result": 5}}},
        {"function_response": {"name": "calc.mul",
                               "response": {"error": "Error calling tool 'calc.mul': boom"}}},
    ]}
    parsed = Content.model_validate(content)
    assert parsed.parts[0].function_response.response == {"result": 5}
    assert parsed.parts[1].function_response.id is None


def test_round_trip_through_each_dialect():
    """What parse_reply returns is what result_message needs: ids and names carry through."""
    for reply, dialect in ((OPENAI_COMPLETION, "openai"), (RESPONSE, "responses"),
                           (ANTHROPIC_MESSAGE, "anthropic"), (GEMINI_RESPONSE_REST, "gemini")):
        found, requests = parse_reply(reply)
        assert found == dialect
        answered = result_message(dialect, [ToolResult(request, "ok", "ok", False) for request in requests])
        text = json.dumps(answered)
        for request in requests:
            assert (request.id or request.name) in text


def test_unknown_dialect():
    with pytest.raises(ValueError, match="unknown reply dialect 'cohere'"):
        result_message("cohere", [])


def test_gemini_result_is_always_json_data():
    """A value that is not plain JSON (a Path, a dataclass) goes back as its serialised form."""
    import pathlib

    request = ToolCallRequest(None, "where", {})
    as_path = ToolResult(request, '"/tmp/x"', pathlib.Path("/tmp/x"), False)
    as_text = ToolResult(request, "Point(x=1) [truncated]", object(), False)
    parts = result_message("gemini", [as_path, as_text])["parts"]
    assert parts[0]["function_response"]["response"] == {"result": "/tmp/x"}
    assert parts[1]["function_response"]["response"] == {"result": "Point(x=1) [truncated]"}
    json.dumps(parts)


def test_deprecated_function_call_is_answered_with_a_function_message():
    from nbtools import run_tool_calls

    def add(a: int, b: int) -> int:
        return a + b

    message = {"role": "assistant", "content": None,
               "function_call": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}
    assert run_tool_calls(message, ns=[add]) == [{"role": "function", "name": "add", "content": "5"}]
    from openai.types.chat import ChatCompletionFunctionMessageParam  # the SDK's shape for the answer

    assert set(ChatCompletionFunctionMessageParam.__annotations__) == {"role", "name", "content"}
