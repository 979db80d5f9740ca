"""Provider-native programmatic tool calling and tool search (DESIGN.md "Code mode"): a Tool's
`callers` and `defer` rendered as each API has them, a reply's call made by the model's code
answered under the registry's policy (origin `<origin>/code`) with the blocks that API expects,
and Chat carrying Anthropic's code-execution container to the next request.

What the APIs accept is checked with the installed SDKs' own request types (extra keys refused),
and the Anthropic code-execution version expected is read from those types here, independently
of nbtools. Chat runs against a recorded model on loopback with the SDK clients
(tests/recorded_model.py)."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any, List, get_args, get_type_hints

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from recorded_model import RecordedModel, make_client  # noqa: E402

from nbtools import Chat, Registry, run_tool_calls, tool  # noqa: E402

pytest.importorskip("anthropic")
pytest.importorskip("openai")


def _literals(tp: Any) -> set[str]:
    found: set[str] = set()
    for arg in get_args(tp):
        found |= {arg} if isinstance(arg, str) else _literals(arg)
    return found


def _sdk_code_version() -> str:
    """The newest code-execution version the anthropic SDK accepts in `allowed_callers` and also
    names as a `tool_use` caller (its ServerToolCaller* records)."""
    import anthropic.types as types

    allowed = _literals(get_type_hints(types.ToolParam)["allowed_callers"])
    callers = set()
    for name in dir(types):
        if name.startswith("ServerToolCaller") and not name.endswith("Param"):
            callers |= _literals(getattr(types, name).model_fields["type"].annotation)
    both = sorted(version for version in allowed & callers if version.startswith("code_execution_"))
    assert both, "the installed anthropic SDK names no code-execution caller"
    return both[-1]


@functools.lru_cache(maxsize=None)
def _adapter(kind: str) -> Any:
    """The SDK's request type for `kind` (built once: slow)."""
    from pydantic import ConfigDict, TypeAdapter

    forbid = ConfigDict(extra="forbid")
    if kind == "anthropic-tools":
        from anthropic.types import ToolParam as Item
    elif kind == "anthropic-messages":
        from anthropic.types import MessageParam as Item
    elif kind == "responses-tools":
        from openai.types.responses import ToolParam as Item
    else:
        from openai.types.responses import ResponseInputItemParam as Item
    return TypeAdapter(List[Item], config=forbid)


class Asker:
    def __init__(self, answer: Any = True):
        self.origins: list[str] = []
        self.answer = answer

    def __call__(self, tool, args, *, origin):
        self.origins.append(origin)
        return self.answer


def _registry(asker: Asker | None = None) -> Registry:
    registry = Registry(approve=asker)

    @tool(registry=registry, callers=("code",), hints="destructive")
    def query(region: str) -> dict:
        """Sales of a region."""
        return {"region": region, "revenue": {"West": 120, "East": 80}.get(region, 0)}

    @tool(registry=registry, callers=("direct", "code"), defer=True)
    def lookup(name: str) -> str:
        """Look a name up."""
        return name.upper()

    @tool(registry=registry, callers="direct")
    def direct_only(x: int) -> int:
        """Only the model itself may call this."""
        return x

    @tool(registry=registry)
    def plain(x: int) -> int:
        """No callers said."""
        return x

    return registry


# -- rendering ----------------------------------------------------------------------------------------------
def test_anthropic_renders_allowed_callers_with_the_sdks_code_execution_version_and_defer_loading():
    version = _sdk_code_version()
    definitions = {definition["name"]: definition for definition in _registry().schemas("anthropic")}
    assert definitions["query"]["allowed_callers"] == [version]
    assert definitions["lookup"]["allowed_callers"] == ["direct", version]
    assert definitions["lookup"]["defer_loading"] is True
    assert definitions["direct_only"]["allowed_callers"] == ["direct"]
    assert "allowed_callers" not in definitions["plain"] and "defer_loading" not in definitions["plain"]
    assert "defer_loading" not in definitions["query"]
    _adapter("anthropic-tools").validate_python(list(definitions.values()))


def test_responses_renders_direct_and_programmatic_callers_and_defer_loading():
    definitions = {definition["name"]: definition for definition in _registry().schemas("responses")}
    assert definitions["query"]["allowed_callers"] == ["programmatic"]
    assert definitions["lookup"]["allowed_callers"] == ["direct", "programmatic"]
    assert definitions["lookup"]["defer_loading"] is True
    assert "allowed_callers" not in definitions["plain"]
    _adapter("responses-tools").validate_python(list(definitions.values()))


@pytest.mark.parametrize("fmt", ["openai", "gemini", "gemini-openapi", "mcp", None])
def test_apis_without_programmatic_calling_render_neither(fmt):
    text = json.dumps(_registry().schemas(fmt))
    assert "allowed_callers" not in text and "defer_loading" not in text and "programmatic" not in text


def test_unknown_callers_are_refused():
    with pytest.raises(ValueError, match="callers="):
        tool(lambda x: x, name="f", callers=("model",), registry=Registry())
    with pytest.raises(ValueError, match="callers="):
        tool(lambda x: x, name="f", callers=(), registry=Registry())


# -- a reply's calls made by code -------------------------------------------------------------------------------
def _anthropic_reply(container: str | None = "container_011CVXkq") -> dict:
    version = _sdk_code_version()
    return {
        "id": "msg_01Pqr", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
        "content": [
            {"type": "text", "text": "Let me add them up in code.", "citations": None},
            {"type": "server_tool_use", "id": "srvtoolu_01Abc", "name": "code_execution",
             "input": {"code": "rows = [await query(region=r) for r in ['West', 'East']]\nprint(rows)"},
             "caller": {"type": "direct"}},
            {"type": "tool_use", "id": "toolu_01Def", "name": "query", "input": {"region": "West"},
             "caller": {"type": version, "tool_id": "srvtoolu_01Abc"}}],
        "stop_reason": "tool_use", "stop_sequence": None,
        "container": None if container is None else {"id": container, "expires_at": "2026-11-28T10:00:00Z"},
        "usage": {"input_tokens": 500, "output_tokens": 90, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0}}


def _responses_reply() -> dict:
    return {
        "id": "resp_01", "object": "response", "created_at": 1764300000, "status": "completed", "model": "gpt-5",
        "output": [
            {"id": "prog_01", "type": "program", "call_id": "call_prog_1", "fingerprint": "fp-Zx9",
             "code": "const r = await tools.query({region: 'West'}); text(JSON.stringify(r));"},
            {"id": "fc_01", "type": "function_call", "status": "completed", "call_id": "call_q1", "name": "query",
             "arguments": json.dumps({"region": "West"}), "caller": {"type": "program", "caller_id": "call_prog_1"}}],
        "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "error": None, "incomplete_details": None,
        "instructions": None, "metadata": {}, "temperature": 1.0, "top_p": 1.0,
        "usage": {"input_tokens": 300, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 50,
                  "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 350}}


def test_run_tool_calls_answers_an_anthropic_call_from_code_under_the_policy():
    asker = Asker()
    registry = _registry(asker)
    answer = run_tool_calls(_anthropic_reply(), ns=registry)
    assert answer == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_01Def", "content": '{"region": "West", "revenue": 120}'}]}
    assert asker.origins == ["call/code"]  # asked once, as a call from code
    assert [(record.tool, record.origin, record.verdict) for record in registry.decisions] == [
        ("query", "call/code", "approved")]
    _adapter("anthropic-messages").validate_python([answer])


def test_run_tool_calls_answers_a_responses_call_from_a_program_echoing_its_caller():
    asker = Asker(answer=False)
    registry = _registry(asker)
    answer = run_tool_calls(_responses_reply(), ns=registry)
    assert answer == [{"type": "function_call_output", "call_id": "call_q1",
                       "output": "Error calling tool 'query': refused: the user denied this call",
                       "caller": {"type": "program", "caller_id": "call_prog_1"}}]
    assert asker.origins == ["call/code"] and registry.decisions[-1].verdict == "denied"
    _adapter("responses-input").validate_python(answer)


def test_a_call_from_code_to_a_tool_whose_callers_leave_out_code_is_refused():
    reply = _anthropic_reply()
    reply["content"][2] = {**reply["content"][2], "name": "direct_only", "input": {"x": 1}}
    answer = run_tool_calls(reply, ns=_registry())
    block = answer["content"][0]
    assert block["is_error"] is True and "may not be called from code" in block["content"]


def test_a_direct_call_is_asked_for_as_before():
    asker = Asker()
    registry = _registry(asker)
    registry.add(registry.get("query").fn, name="query_anyone", hints="destructive")  # no `callers`: anyone
    reply = _anthropic_reply()
    reply["content"][2] = {**reply["content"][2], "name": "query_anyone", "caller": {"type": "direct"}}
    answer = run_tool_calls(reply, ns=registry)
    assert asker.origins == ["call"] and "120" in answer["content"][0]["content"]


@pytest.mark.parametrize("caller", [None, {"type": "direct"}])
def test_a_direct_call_to_a_code_only_tool_is_refused(caller):
    # Review of issue 35: `callers=("code",)` refused nothing when the model called the tool itself.
    ran = []

    def double(x: int) -> int:
        """Double x."""
        ran.append(x)
        return 2 * x

    from nbtools import Tool

    registry = Registry()
    registry.add(Tool.from_function(double, callers=("code",)))
    reply = _anthropic_reply()
    reply["content"][2] = {"type": "tool_use", "id": "toolu_01Def", "name": "double", "input": {"x": 2},
                           **({} if caller is None else {"caller": caller})}
    block = run_tool_calls(reply, ns=registry)["content"][0]
    assert ran == [] and block["is_error"] is True
    assert "may only be called from code" in block["content"] and "code" in block["content"]
    assert run_tool_calls(_anthropic_reply(), ns=_registry())["content"][0].get("is_error") is None  # from code: runs
    # the person's own calls are not the model's: `callers` says what the model may do
    assert registry.call("double", {"x": 3}) == 6 and ran == [3]
    from nbtools import call_func

    assert call_func("double", {"x": 4}, ns=registry) == 8


# -- Chat ------------------------------------------------------------------------------------------------------
def _final_anthropic(container: str) -> dict:
    return {"id": "msg_02", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
            "content": [
                {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_01Abc",
                 "content": {"type": "code_execution_result", "stdout": "[120]\n", "stderr": "", "return_code": 0,
                             "content": []}},
                {"type": "text", "text": "West sold 120.", "citations": None}],
            "stop_reason": "end_turn", "stop_sequence": None,
            "container": {"id": container, "expires_at": "2026-11-28T10:00:00Z"},
            "usage": {"input_tokens": 700, "output_tokens": 20, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0}}


@pytest.mark.parametrize("stream", [False, True])
def test_chat_answers_anthropic_programmatic_calls_and_carries_the_container(stream):
    asker = Asker()
    registry = _registry(asker)
    version = _sdk_code_version()
    replies = [(200, _anthropic_reply()), (200, _final_anthropic("container_011CVXkq")),
               (200, _final_anthropic("container_011CVXkq"))]
    with RecordedModel(replies) as model:
        chat = Chat(make_client("anthropic", model.url), model="test-model", tools=registry, max_tokens=1024,
                    native_tools=[{"type": version, "name": "code_execution"}], allow_dangerous_native_tools=True,
                    show=False, stream=stream)
        assert chat("Which region sold most?") == "West sold 120."
        assert chat.container == "container_011CVXkq"
        chat("And the East?")
        first, second, third = (request["body"] for request in model.requests)
    assert "container" not in first
    assert second["container"] == "container_011CVXkq" and third["container"] == "container_011CVXkq"
    assert second["messages"][-1] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_01Def", "content": '{"region": "West", "revenue": 120}'}]}
    echoed = second["messages"][-2]["content"]
    assert [block["type"] for block in echoed] == ["text", "server_tool_use", "tool_use"]
    assert echoed[2]["caller"] == {"type": version, "tool_id": "srvtoolu_01Abc"}
    tools = {definition["name"]: definition for definition in first["tools"]}
    assert tools["query"]["allowed_callers"] == [version] and tools["code_execution"]["type"] == version
    assert asker.origins == ["chat:test-model/code"]
    assert registry.decisions[-1].origin == "chat:test-model/code"
    for body in (second, third):
        _adapter("anthropic-messages").validate_python(body["messages"])
        _adapter("anthropic-tools").validate_python([each for each in body["tools"] if "input_schema" in each])


def test_chat_names_the_code_execution_version_it_sends_in_allowed_callers():
    registry = _registry()
    with RecordedModel([(200, _final_anthropic("c1"))]) as model:
        chat = Chat(make_client("anthropic", model.url), model="test-model", tools=registry, max_tokens=1024,
                    native_tools=[{"type": "code_execution_20250825", "name": "code_execution"}],
                    allow_dangerous_native_tools=True, show=False)
        chat("hi")
        tools = {each["name"]: each for each in model.requests[0]["body"]["tools"]}
    assert tools["query"]["allowed_callers"] == ["code_execution_20250825"]
    assert tools["lookup"]["allowed_callers"] == ["direct", "code_execution_20250825"]


def test_chat_answers_responses_programmatic_calls_echoing_the_program():
    asker = Asker()
    registry = _registry(asker)
    final = {**_responses_reply(), "id": "resp_02", "output": [
        {"id": "po_01", "type": "program_output", "call_id": "call_prog_1", "result": "{\"revenue\": 120}",
         "status": "completed"},
        {"id": "msg_01", "type": "message", "status": "completed", "role": "assistant",
         "content": [{"type": "output_text", "text": "West sold 120.", "annotations": []}]}]}
    with RecordedModel([(200, _responses_reply()), (200, final)]) as model:
        chat = Chat(make_client("responses", model.url), model="gpt-5", tools=registry, api="responses",
                    native_tools=[{"type": "programmatic_tool_calling"}], show=False)
        assert chat("Which region sold most?") == "West sold 120."
        second = model.requests[1]["body"]
    items = second["input"]
    assert [item.get("type") for item in items[1:]] == ["program", "function_call", "function_call_output"]
    assert items[1]["fingerprint"] == "fp-Zx9"  # round-tripped as the API requires
    assert items[3] == {"type": "function_call_output", "call_id": "call_q1",
                        "output": '{"region": "West", "revenue": 120}',
                        "caller": {"type": "program", "caller_id": "call_prog_1"}}
    assert asker.origins == ["chat:gpt-5/code"]
    _adapter("responses-input").validate_python(items)


def test_callers_and_defer_on_every_way_a_tool_is_made():
    from nbtools import Tool

    def ping(x: int) -> int:
        """Ping."""
        return x

    made = [Tool.from_function(ping, callers="code", defer=True),
            Registry().add(ping, callers=["code"], defer=True),
            Tool.from_schema("ping", "Ping.", {"type": "object", "properties": {"x": {"type": "integer"}}},
                             lambda x: x, callers=("code",), defer=True),
            Tool.from_function(ping).replace(callers=("code",), defer=True)]
    for each in made:
        assert each.callers == ("code",) and each.defer is True
        definition = each.schema("responses")
        assert definition["allowed_callers"] == ["programmatic"] and definition["defer_loading"] is True
    assert Tool.from_function(ping).callers is None and Tool.from_function(ping).defer is False
    assert "allowed_callers" not in Tool.from_function(ping).schema("responses")


@pytest.mark.parametrize("asynchronous", [False, True])
def test_chat_refuses_the_models_own_call_to_a_code_only_tool(asynchronous):
    import asyncio

    asker = Asker()
    registry = _registry(asker)
    direct = _anthropic_reply()
    direct["content"][2] = {"type": "tool_use", "id": "toolu_01Def", "name": "query", "input": {"region": "West"}}
    with RecordedModel([(200, direct), (200, _final_anthropic("container_011CVXkq"))]) as model:
        chat = Chat(make_client("anthropic", model.url, asynchronous=asynchronous), model="test-model",
                    tools=registry, max_tokens=1024, show=False)
        asyncio.run(chat.acall("Sales?")) if asynchronous else chat("Sales?")
        answer = model.requests[1]["body"]["messages"][-1]["content"][0]
    assert answer["is_error"] is True and "may only be called from code" in answer["content"]
    assert asker.origins == [] and len(registry.decisions) == 0  # never asked: refused before
