"""nbtools.Chat beyond one round trip: interrupts, usage and cost, budgets, a Chat as a tool of
another, provider-hosted tools. The real SDK clients talk to the recorded model on loopback
(tests/recorded_model.py); every history left behind is sent once more and checked with the SDK's
own request types, as the API would check it."""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
from pathlib import Path
from typing import List

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from recorded_model import REPLIES, RecordedModel, make_client  # noqa: E402
from test_chat import PROVIDERS, _chat, _conversation, _no_nulls, _validate, add  # noqa: E402

from nbtools import Chat  # noqa: E402
from nbtools.chat import BudgetExceeded, ChatInterrupted  # noqa: E402
from nbtools.chat.loop import INTERRUPTED  # noqa: E402

STEP_USAGE = {"openai": (120, 40, 0, 0), "responses": (150, 60, 0, 0), "anthropic": (500, 70, 100, 0),
              "gemini": (90, 42, 0, 0)}  # input (all), output, cache read, cache write of one recorded reply


def _tokens(usage) -> tuple[int, int, int, int]:
    return usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens


def _accepted(provider: str, model: RecordedModel) -> None:
    """The last request the model got is one the API accepts (SDK request types, no nulls;
    Anthropic's hosted tools checked with its union of tool types)."""
    body = dict(model.requests[-1]["body"])
    _no_nulls(body)
    if provider == "anthropic" and any("input_schema" not in tool for tool in body.get("tools", [])):
        from anthropic.types import ToolUnionParam
        from pydantic import TypeAdapter

        TypeAdapter(List[ToolUnionParam]).validate_python(body.pop("tools"))
        body["tools"] = []
    _validate(provider, body)


def _answered(provider: str, messages: list) -> dict:
    """Each tool call id in the history → the text of its answer (None when unanswered)."""
    calls: dict = {}
    for message in messages:
        if provider == "openai":
            for call in message.get("tool_calls") or []:
                calls[call["id"]] = None
            if message.get("role") == "tool":
                calls[message["tool_call_id"]] = message["content"]
        elif provider == "responses":
            if message.get("type") == "function_call":
                calls[message["call_id"]] = None
            if message.get("type") == "function_call_output":
                calls[message["call_id"]] = message["output"]
        elif provider == "anthropic":
            for block in message["content"] if isinstance(message["content"], list) else []:
                if block.get("type") == "tool_use":
                    calls[block["id"]] = None
                if block.get("type") == "tool_result":
                    calls[block["tool_use_id"]] = block["content"]
        else:
            for part in message.get("parts") or []:
                call = part.get("function_call") or part.get("functionCall")
                answer = part.get("function_response") or part.get("functionResponse")
                if call:
                    calls[call["id"]] = None
                if answer:
                    calls[answer["id"]] = str(answer["response"])
    return calls


# -- interrupts -------------------------------------------------------------------------------------
@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_interrupt_during_a_tool_leaves_every_call_answered(provider, sigint_raises):
    ran = []

    def slow(n: int) -> int:
        """Work slowly."""
        ran.append(n)
        signal.raise_signal(signal.SIGINT)  # the person presses stop while this runs
        return n

    reply = REPLIES[provider]
    calls = [("call_1", "add", {"a": 2, "b": 3}), ("call_2", "slow", {"n": 1}), ("call_3", "add", {"a": 1, "b": 1})]
    with RecordedModel([(200, reply(calls)), (200, reply(text="Stopped, as you asked."))]) as model:
        chat = _chat(provider, model.url, [add, slow])
        with pytest.raises(KeyboardInterrupt) as caught:
            chat("Add, work, add.")
        assert isinstance(caught.value, ChatInterrupted) and ran == [1] and len(model.requests) == 1
        line, = caught.value._render_traceback_()
        assert line.startswith("KeyboardInterrupt: the chat was interrupted (step 1: running slow, add)")
        answers = _answered(provider, chat.messages)
        assert list(answers) == ["call_1", "call_2", "call_3"]
        assert "5" in answers["call_1"] and INTERRUPTED in answers["call_2"] and INTERRUPTED in answers["call_3"]
        assert [(c.name, c.is_error) for c in chat.steps[0].calls] == [("add", False), ("slow", True), ("add", True)]
        assert chat("Go on.") == "Stopped, as you asked."  # the next request is accepted
        _accepted(provider, model)
        sent = _conversation(provider, model.requests[-1]["body"])
        assert len(sent) > 3 and sent[-1] == _conversation(provider, {"input": [chat.messages[len(sent) - 1]],
                                                                         "messages": [chat.messages[len(sent) - 1]],
                                                                         "contents": [sent[-1]]})[0]


def _interrupt_when(model: RecordedModel, requests: int) -> threading.Thread:
    """A thread that sends this process SIGINT (handled in the main thread, as a person's stop
    button) once the model holds request number `requests`."""
    def watch() -> None:
        while len(model.requests) < requests:
            threading.Event().wait(0.01)
        # to the main thread itself, as the kernel's stop button does: its blocking read is cut short
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("step", [1, 2])
def test_an_interrupt_while_waiting_for_the_model_keeps_a_valid_history(provider, step, sigint_raises):
    reply = REPLIES[provider]
    with RecordedModel([(200, reply([("call_1", "add", {"a": 2, "b": 3})])), (200, reply(text="5."))]) as model:
        chat = _chat(provider, model.url, [add])
        before = list(chat.messages)
        model.hold, model.hold_after = threading.Event(), step - 1
        watcher = _interrupt_when(model, step)
        try:
            with pytest.raises(ChatInterrupted, match=rf"step {step}: waiting for test-model"):
                chat("Add 2 and 3.")
        finally:
            watcher.join()
            model.hold.set()
            model.hold = None
        if step == 1:
            assert chat.messages == before  # the prompt nothing answered was taken back
        else:  # step 1's call and its answer stay: the history ends with the result
            assert list(_answered(provider, chat.messages).values()) == [
                {"gemini": "{'result': 5}"}.get(provider, "5")]
        model.replies = [(200, reply(text="Done."))]
        assert chat("Well?") == "Done."
        _accepted(provider, model)


def test_an_interrupt_in_an_async_chat_answers_the_pending_calls():
    async def slow() -> int:
        """Wait."""
        await asyncio.sleep(60)
        return 1

    reply = REPLIES["anthropic"]
    with RecordedModel([(200, reply([("call_1", "slow", {})])), (200, reply(text="ok"))]) as model:
        chat = _chat("anthropic", model.url, [slow], asynchronous=True)

        async def main() -> None:
            task = asyncio.ensure_future(chat.acall("wait"))
            while len(model.requests) < 1 or not chat.messages[-1]["role"] == "assistant":
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert _answered("anthropic", chat.messages) == {"call_1": INTERRUPTED}
            assert await chat.acall("go on") == "ok"

        asyncio.run(main())
        _accepted("anthropic", model)


# -- usage, cost, budget ----------------------------------------------------------------------------
@pytest.mark.parametrize("provider", PROVIDERS)
def test_usage_per_step_and_in_total_with_cache_tokens(provider):
    reply = REPLIES[provider]
    first = reply([("call_1", "add", {"a": 2, "b": 3})])
    if provider == "anthropic":
        first["usage"]["cache_creation_input_tokens"] = 30
    if provider == "gemini":
        first["usageMetadata"]["cachedContentTokenCount"] = 50
    if provider == "openai":
        first["usage"]["prompt_tokens_details"]["cached_tokens"] = 64
    if provider == "responses":
        first["usage"]["input_tokens_details"]["cached_tokens"] = 128
    with RecordedModel([(200, first), (200, reply(text="5"))]) as model:
        chat = _chat(provider, model.url, [add])
        chat("add")
    second = STEP_USAGE[provider]
    one = {"openai": (120, 40, 64, 0), "responses": (150, 60, 128, 0), "anthropic": (530, 70, 100, 30),
           "gemini": (90, 42, 50, 0)}[provider]
    assert [_tokens(step) for step in chat.usage.steps] == [one, second]
    assert [_tokens(step.usage) for step in chat.steps] == [one, second]
    assert _tokens(chat.usage) == tuple(a + b for a, b in zip(one, second))
    assert chat.cost is None and chat.usage.tokens == one[0] + one[1] + second[0] + second[1]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_usage_read_mid_call_after_an_interrupt_and_after_the_model_changes(provider, stream, sigint_raises):
    # The loop keeps each step's usage as the SDK reported it, with the price table of the step's
    # model, and makes the records when they are read: read from a tool while the call runs, after
    # an interrupt, and after the chat's model (and so its price) changed, they are the same.
    prices = {"test-model": {"input": 1.0, "output": 2.0}, "other": {"input": 100.0, "output": 100.0}}
    tokens = STEP_USAGE[provider]
    step_cost = ((tokens[0] - tokens[2] - tokens[3]) * 1.0 + tokens[2] * 1.0 + tokens[1] * 2.0) / 1e6
    seen = []

    def peek() -> int:
        """Look at the chat."""
        seen.append(([(step.number, _tokens(step.usage), step.usage.cost) for step in chat.steps],
                     _tokens(chat.usage), chat.cost))
        if len(seen) == 3:
            signal.raise_signal(signal.SIGINT)  # the person presses stop during the second call's tool
        return len(seen)

    reply = REPLIES[provider]
    peeking = reply([("call_1", "peek", {})])
    with RecordedModel([(200, peeking), (200, peeking), (200, reply(text="Seen.")), (200, peeking)]) as model:
        chat = _chat(provider, model.url, [peek], prices=prices, stream=stream)
        assert chat("peek twice") == "Seen."
        one = (1, tokens, pytest.approx(step_cost))
        # step 1's tool sees no step of this call yet, step 2's sees step 1; the chat's total counts
        # a call's steps once it ends
        assert seen == [([], (0, 0, 0, 0), 0.0), ([one], (0, 0, 0, 0), 0.0)]
        assert [_tokens(step) for step in chat.usage.steps] == [tokens] * 3
        assert chat.cost == pytest.approx(3 * step_cost)
        with pytest.raises(ChatInterrupted):
            chat("peek again")
    chat.model = "other"  # before anything reads the interrupted step: it keeps its own model's price
    assert seen[2] == ([], tuple(3 * count for count in tokens), pytest.approx(3 * step_cost))
    assert [step.usage.cost for step in chat.steps] == [pytest.approx(step_cost)]  # the interrupted step
    assert len(chat.usage.steps) == 4 and chat.cost == pytest.approx(4 * step_cost)


def test_step_and_usage_records_stay_frozen_values():
    # Usage, Step and CallRecord fill their fields without the dataclass' own __init__ (a speed
    # choice, see formats/turns.Usage): what a frozen dataclass promises must still hold.
    import dataclasses
    import pickle

    from nbtools.chat.steps import CallRecord, Step
    from nbtools.formats.turns import Usage

    one, two = Usage(10, 2, 4, 0), Usage(5, 1, cost=0.5)
    total = Usage().add_step(one).add_step(two)
    assert (total.input_tokens, total.output_tokens, total.cache_read_tokens, total.cost) == (15, 3, 4, 0.5)
    assert total.steps == (one, two) and total == one + two and total.tokens == 18
    assert Usage(1, 2, steps=(one,)) == Usage(1, 2) and hash(Usage(1, 2, steps=(one,))) == hash(Usage(1, 2))
    call = CallRecord("c1", "add", {"a": 1}, "3", False, value=3)
    assert call == CallRecord("c1", "add", {"a": 1}, "3", False) and "value" not in repr(call)
    step = Step(1, "hi", (call,), one)
    for record, name in ((one, "input_tokens"), (call, "text"), (step, "text")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(record, name, 0)
        assert pickle.loads(pickle.dumps(record)) == record
    assert dataclasses.replace(step, number=2) == Step(2, "hi", (call,), one)
    assert dataclasses.replace(one, cost=1.0).cost == 1.0 and one.cost is None
    assert [field.name for field in dataclasses.fields(Usage)] == ["input_tokens", "output_tokens",
                                                                   "cache_read_tokens", "cache_write_tokens",
                                                                   "cost", "steps"]


def test_prices_give_the_cost_with_cache_prices():
    prices = {"test-model": {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75}}
    reply = REPLIES["anthropic"]
    first = reply([("call_1", "add", {"a": 2, "b": 3})])
    first["usage"]["cache_creation_input_tokens"] = 1000
    with RecordedModel([(200, first), (200, reply(text="5"))]) as model:
        chat = _chat("anthropic", model.url, [add], prices=prices)
        chat("add")
    # step 1: 400 uncached, 100 read, 1000 written, 70 out; step 2: 400 uncached, 100 read, 70 out
    one = (400 * 3 + 100 * 0.3 + 1000 * 3.75 + 70 * 15) / 1e6
    two = (400 * 3 + 100 * 0.3 + 70 * 15) / 1e6
    assert [step.cost for step in chat.usage.steps] == pytest.approx([one, two])
    assert chat.cost == pytest.approx(one + two) and "cost" in repr(chat)


def test_bad_prices_and_budgets_are_named():
    import openai

    client = openai.OpenAI(api_key="x")
    with pytest.raises(ValueError, match="'input' and 'output'"):
        Chat(client, model="m", prices={"m": {"input": 1}})
    with pytest.raises(ValueError, match="needs the model's prices"):
        Chat(client, model="m", budget={"cost": 1.0})
    with pytest.raises(ValueError, match="budget="):
        Chat(client, model="m", budget={"dollars": 1})
    with pytest.raises(ValueError, match=">= 0"):
        Chat(client, model="m", prices={"m": {"input": -1, "output": 1}})


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_token_budget_stops_the_loop_like_max_steps(provider):
    runs = []

    def count() -> int:
        """Count."""
        runs.append(1)
        return len(runs)

    reply = REPLIES[provider]
    limit = sum(STEP_USAGE[provider][:2]) + 1  # the second reply passes it
    with RecordedModel([(200, reply([("call_1", "count", {})]))]) as model:
        chat = _chat(provider, model.url, [count], budget={"tokens": limit})
        with pytest.raises(BudgetExceeded, match="budget") as caught:
            chat("count")
        assert len(model.requests) == 2 and runs == [1]  # the second reply's call was not run
        assert caught.value.usage.tokens == 2 * (limit - 1)
        assert "not run: the chat's budget" in chat.steps[-1].calls[0].text
        with pytest.raises(BudgetExceeded):  # used up: no request is made
            chat("again")
        assert len(model.requests) == 2
        chat.budget = {"tokens": 10 * limit}
        model.replies = [(200, reply(text="Counted."))]
        assert chat("go on") == "Counted."
        _accepted(provider, model)


def test_a_cost_budget():
    reply = REPLIES["openai"]
    with RecordedModel([(200, reply([("call_1", "add", {"a": 1, "b": 2})]))]) as model:
        chat = _chat("openai", model.url, [add], prices={"test-model": {"input": 1000, "output": 1000}},
                     budget={"cost": 0.2})  # one reply: 160 tokens = 0.16; two: 0.32
        with pytest.raises(BudgetExceeded):
            chat("add")
        assert len(model.requests) == 2 and chat.cost == pytest.approx(0.32)


# -- a Chat as a tool ---------------------------------------------------------------------------------
def test_a_chat_used_as_a_tool_adds_its_usage_and_cost_to_the_callers():
    prices = {"test-model": {"input": 1.0, "output": 2.0}}
    with RecordedModel([(200, REPLIES["anthropic"]([("t1", "add", {"a": 2, "b": 3})])),
                        (200, REPLIES["anthropic"](text="It is 5."))]) as inner, \
            RecordedModel([(200, REPLIES["openai"]([("call_1", "mathematician", {"task": "What is 2+3?"})])),
                           (200, REPLIES["openai"](text="The mathematician says 5."))]) as outer:
        sub = _chat("anthropic", inner.url, [add], prices=prices)
        tool = sub.as_tool(name="mathematician", description="Does arithmetic.")
        assert tool.parameters["required"] == ["task"] and tool.parameters["properties"]["task"]["type"] == "string"
        main = _chat("openai", outer.url, [tool], prices=prices)
        assert main("Ask the mathematician.") == "The mathematician says 5."
        assert main.steps[0].calls[0].text == "It is 5."
        definition = outer.requests[0]["body"]["tools"][0]["function"]
        assert definition["name"] == "mathematician" and definition["description"].startswith("Does arithmetic.")
    sub_tokens = (1000, 140, 200, 0)
    assert _tokens(sub.usage) == sub_tokens
    assert _tokens(main.usage) == (240 + 1000, 80 + 140, 200, 0)
    # the step that ran the sub-agent carries its tokens; the totals are the steps' sums
    assert _tokens(main.usage.steps[0]) == (120 + 1000, 40 + 140, 200, 0)
    assert main.cost == pytest.approx(sum(step.cost for step in main.usage.steps))
    assert main.cost == pytest.approx(((240 + 1000 - 200) * 1 + 200 * 1 + (80 + 140) * 2) / 1e6)
    # the sub-agent started from its own history: its request held only the task
    assert inner.requests[0]["body"]["messages"] == [{"role": "user", "content": "What is 2+3?"}]


def test_a_sub_agents_tokens_count_in_the_callers_budget():
    with RecordedModel([(200, REPLIES["anthropic"](text="done"))]) as inner, \
            RecordedModel([(200, REPLIES["openai"]([("call_1", "helper", {"task": "x"})]))]) as outer:
        sub = _chat("anthropic", inner.url, [])
        main = _chat("openai", outer.url, [sub.as_tool(name="helper")], budget={"tokens": 300})
        with pytest.raises(BudgetExceeded):
            main("go")  # 160 of its own, then 570 of the helper's: no second request
        assert len(outer.requests) == 1 and main.usage.tokens == 160 + 570


def _three_helper_calls(provider: str = "openai") -> dict:
    return REPLIES[provider]([(f"call_{n}", "helper", {"task": f"part {n}"}) for n in (1, 2, 3)])


def test_a_budget_holds_across_the_sub_agent_calls_of_one_reply():
    # Issue 37: each sub-agent call of one reply started from the same spent amount, so three of
    # them spent 3 x 570 tokens under a 300-token budget. Each request is checked against the
    # budgets of the Chats running it as a tool; the calls after the budget is used up are not run.
    with RecordedModel([(200, REPLIES["anthropic"](text="done"))]) as inner, \
            RecordedModel([(200, _three_helper_calls())]) as outer:
        sub = _chat("anthropic", inner.url, [])
        main = _chat("openai", outer.url, [sub.as_tool(name="helper")], budget={"tokens": 300})
        with pytest.raises(BudgetExceeded):
            main("go")
        assert len(inner.requests) == 1 and len(outer.requests) == 1
        assert main.usage.tokens == 160 + 570  # one helper request past the budget's check, no more
        texts = [call.text for call in main.steps[-1].calls]
        assert texts[0] == "done" and all("not run" in text and "300" in text for text in texts[1:]), texts
        assert all(answer is not None for answer in _answered("openai", main.messages).values())


@pytest.mark.parametrize("caller", ["async", "sync"])
def test_a_budget_holds_across_parallel_sub_agent_calls(caller):
    # The three async sub-agent calls run concurrently (from a sync Chat too: on one loop): without
    # a turn per request all three sent their request before any reply counted.
    with RecordedModel([(200, REPLIES["gemini"](text="sub answer"))]) as inner, \
            RecordedModel([(200, _three_helper_calls())]) as outer:
        sub = _chat("gemini", inner.url, [], asynchronous=True)
        main = _chat("openai", outer.url, [sub.as_tool(name="helper")], asynchronous=caller == "async",
                     budget={"tokens": 200})
        with pytest.raises(BudgetExceeded):
            asyncio.run(main.acall("go")) if caller == "async" else main("go")
        assert len(inner.requests) == 1
        assert main.usage.tokens == 160 + 132
        texts = sorted(call.text for call in main.steps[-1].calls)
        assert texts[-1] == "sub answer" and all("not run" in text for text in texts[:-1]), texts


def test_a_budget_holds_for_a_sync_sub_agent_beside_an_async_one_on_a_running_loop():
    # Review of issue 37: a synchronous sub-agent on a thread whose event loop runs (every cell of a
    # kernel) took the turn only if it was free, and otherwise sent its request without it: under an
    # async Chat, beside an async sub-agent whose request was in flight, both passed the budget. Its
    # thread cannot wait for a request of its own loop (it would stop that loop), so its request is
    # not run, and the budget is passed by at most one request. Run in a thread of its own whose
    # loop runs the cell, as in a kernel.
    calls = REPLIES["openai"]([("call_1", "fast", {"task": "a"}), ("call_2", "slow", {"task": "b"})])
    with RecordedModel([(200, REPLIES["gemini"](text="sub answer"))]) as inner, \
            RecordedModel([(200, calls)]) as outer:
        fast = _chat("gemini", inner.url, [], asynchronous=True).as_tool(name="fast")
        slow = _chat("gemini", inner.url, []).as_tool(name="slow")
        assert fast.is_async and not slow.is_async
        main = _chat("openai", outer.url, [fast, slow], asynchronous=True, budget={"tokens": 200})
        failure: list = []

        def kernel() -> None:
            async def cell() -> None:
                with pytest.raises(BudgetExceeded):
                    await main.acall("go")

            try:
                asyncio.run(cell())
            except BaseException as error:  # shown by the main thread
                failure.append(error)

        thread = threading.Thread(target=kernel)
        thread.start()
        thread.join(120)
        assert not thread.is_alive() and not failure, failure
        assert len(inner.requests) == 1 and main.usage.tokens == 160 + 132
        texts = {call.name: call.text for call in main.steps[-1].calls}
        assert texts["fast"] == "sub answer"
        assert "not run" in texts["slow"] and "event loop" in texts["slow"], texts


def test_a_sub_agents_own_budget_holds_across_its_parallel_runs():
    with RecordedModel([(200, REPLIES["gemini"](text="sub answer"))]) as inner, \
            RecordedModel([(200, _three_helper_calls()), (200, REPLIES["openai"](text="ok"))]) as outer:
        sub = _chat("gemini", inner.url, [], asynchronous=True, budget={"tokens": 100})
        main = _chat("openai", outer.url, [sub.as_tool(name="helper")], asynchronous=True)
        assert asyncio.run(main.acall("go")) == "ok"
        assert len(inner.requests) == 1 and sub.usage.tokens == 132
        texts = sorted(call.text for call in main.steps[0].calls)
        assert texts[-1] == "sub answer" and all("not run" in text and "100" in text for text in texts[:-1]), texts


def test_an_async_sub_agent_is_an_async_tool():
    with RecordedModel([(200, REPLIES["gemini"](text="sub answer"))]) as inner, \
            RecordedModel([(200, REPLIES["openai"]([("call_1", "ask_test_model", {"task": "x"})])),
                           (200, REPLIES["openai"](text="ok"))]) as outer:
        sub = _chat("gemini", inner.url, [], asynchronous=True)
        tool = sub.as_tool()
        assert tool.is_async and tool.name == "ask_test_model"
        main = _chat("openai", outer.url, [tool], asynchronous=True)
        assert asyncio.run(main.acall("go")) == "ok"
        assert main.steps[0].calls[0].text == "sub answer"
        assert main.usage.tokens == 2 * 160 + 132


# -- provider-hosted tools -------------------------------------------------------------------------
def _anthropic_search_reply(stop: str = "end_turn") -> dict:
    reply = REPLIES["anthropic"](text="Paris has 2.1 million people.")
    reply["content"] = [
        {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "Paris population"},
         "caller": None},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "caller": None, "content": [
            {"type": "web_search_result", "url": "https://example.org/paris", "title": "Paris",
             "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUtODgxNC1kNjNjNTk1ZWI3Y2YS",
             "page_age": "April 30, 2025"}]},
        *reply["content"]]
    reply["stop_reason"] = stop
    reply["usage"]["server_tool_use"] = {"web_search_requests": 1}
    return reply


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_anthropic_web_search_blocks_are_kept_and_sent_back(stream):
    native = [{"type": "web_search_20250305", "name": "web_search", "max_uses": 3}]
    with RecordedModel([(200, _anthropic_search_reply()), (200, REPLIES["anthropic"](text="You're welcome."))]) as model:
        chat = _chat("anthropic", model.url, [add], native_tools=native, stream=stream)
        assert chat("How many people live in Paris?") == "Paris has 2.1 million people."
        assert model.requests[0]["body"]["tools"][-1] == native[0]
        kept = chat.messages[-1]["content"]
        assert [block["type"] for block in kept] == ["server_tool_use", "web_search_tool_result", "text"]
        assert kept[1]["content"][0]["encrypted_content"].startswith("EqgfCioI")  # unchanged
        chat("Thanks!")
        _accepted("anthropic", model)
        assert model.requests[-1]["body"]["messages"][1] == chat.messages[1]


def test_anthropic_pause_turn_is_continued_not_taken_for_the_answer():
    native = [{"type": "web_search_20250305", "name": "web_search"}]
    paused = _anthropic_search_reply("pause_turn")
    paused["content"] = paused["content"][:2]
    with RecordedModel([(200, paused), (200, REPLIES["anthropic"](text="Paris has 2.1 million people."))]) as model:
        chat = _chat("anthropic", model.url, [], native_tools=native)
        assert chat("How many people live in Paris?") == "Paris has 2.1 million people."
        assert len(model.requests) == 2 and [step.number for step in chat.steps] == [1, 2]
        resent = model.requests[1]["body"]["messages"]
        assert resent[-1]["role"] == "assistant" and resent[-1]["content"][0]["type"] == "server_tool_use"
        _accepted("anthropic", model)


def test_responses_web_search_items_are_kept_and_sent_back():
    reply = REPLIES["responses"](text="Paris has 2.1 million people.")
    reply["output"].insert(1, {"id": "ws_0a1", "type": "web_search_call", "status": "completed",
                               "action": {"type": "search", "query": "Paris population"}})
    with RecordedModel([(200, reply), (200, REPLIES["responses"](text="Welcome."))]) as model:
        chat = _chat("responses", model.url, [add], native_tools=[{"type": "web_search"}])
        chat("How many people live in Paris?")
        assert model.requests[0]["body"]["tools"][-1] == {"type": "web_search"}
        assert any(item.get("type") == "web_search_call" for item in chat.messages)
        chat("Thanks!")
        _accepted("responses", model)
        sent = [item for item in model.requests[-1]["body"]["input"] if item.get("type") == "web_search_call"]
        assert sent == [reply["output"][1]]


def test_gemini_search_grounding_is_sent_and_the_history_goes_on():
    reply = REPLIES["gemini"](text="Paris has 2.1 million people.")
    reply["candidates"][0]["groundingMetadata"] = {
        "webSearchQueries": ["Paris population"],
        "groundingChunks": [{"web": {"uri": "https://example.org/paris", "title": "example.org"}}]}
    with RecordedModel([(200, reply), (200, REPLIES["gemini"](text="Welcome."))]) as model:
        chat = _chat("gemini", model.url, [add], native_tools=[{"google_search": {}}])
        chat("How many people live in Paris?")
        tools = model.requests[0]["body"]["tools"]
        assert {"googleSearch": {}} in tools and any("functionDeclarations" in tool for tool in tools)
        chat("Thanks!")
        _accepted("gemini", model)


@pytest.mark.parametrize("provider, native", [
    ("anthropic", {"type": "code_execution_20250825", "name": "code_execution"}),
    ("anthropic", {"type": "computer_20250124", "name": "computer", "display_width_px": 1024,
                   "display_height_px": 768}),
    ("responses", {"type": "code_interpreter", "container": {"type": "auto"}}),
    ("responses", {"type": "local_shell"}),
    ("gemini", {"code_execution": {}})])
def test_dangerous_hosted_tools_need_the_loud_opt_in(provider, native):
    with RecordedModel([(200, REPLIES[provider](text="ok"))]) as model:
        with pytest.raises(ValueError, match="allow_dangerous_native_tools=True"):
            _chat(provider, model.url, [], native_tools=[native])
        chat = _chat(provider, model.url, [], native_tools=[native], allow_dangerous_native_tools=True)
        assert chat("hi") == "ok"
        assert len(model.requests) == 1  # only the allowed chat made a request


@pytest.mark.parametrize("provider, settings", [
    # another spelling of the same hosted tool: the REST API's camelCase, other case and separators
    ("gemini", {"native_tools": [{"codeExecution": {}}]}),
    ("gemini", {"native_tools": [{"google_search": {}, "CODE-EXECUTION": {}}]}),
    ("anthropic", {"native_tools": [{"type": "Code-Execution-20250825", "name": "code_execution"}]}),
    ("anthropic", {"native_tools": [{"type": "ｃｏｄｅ＿ｅｘｅｃｕｔｉｏｎ_20250825", "name": "x"}]}),  # full-width letters
    ("responses", {"native_tools": [{"type": "codeInterpreter", "container": {"type": "auto"}}]}),
    ("responses", {"native_tools": [{"type": "Local Shell"}]}),
    # the same tool passed around native_tools=, through the create call's other arguments
    ("gemini", {"config": {"tools": [{"code_execution": {}}]}}),
    ("gemini", {"config": {"tools": [{"codeExecution": {}}]}}),
    ("responses", {"extra_body": {"tools": [{"type": "code_interpreter", "container": {"type": "auto"}}]}}),
    ("anthropic", {"extra_body": {"tools": [{"type": "bash_20250124", "name": "bash"}]}}),
])
def test_a_dangerous_hosted_tool_needs_the_opt_in_whatever_its_spelling_or_route(provider, settings):
    with RecordedModel([(200, REPLIES[provider](text="ok"))]) as model:
        with pytest.raises(ValueError, match="allow_dangerous_native_tools=True"):
            _chat(provider, model.url, [], **settings)
        _chat(provider, model.url, [], allow_dangerous_native_tools=True, **settings)  # the opt-in still works
        assert model.requests == []


def test_native_tools_must_be_the_providers_shapes():
    with pytest.raises(ValueError, match="google_search"):
        Chat(make_client("gemini", "http://127.0.0.1:9"), model="m", native_tools=["google_search"])


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_finished_calls_cost_keeps_its_price_when_the_price_table_is_edited_later(provider):
    # a step's usage is priced when read (lazily): the prices it is read with are those of its reply
    prices = {"test-model": {"input": 1.0, "output": 2.0}}
    with RecordedModel([(200, REPLIES[provider](text="Hi."))]) as model:
        chat = _chat(provider, model.url, [add], prices=prices)
        assert chat("hello") == "Hi."
    chat.prices["test-model"]["input"] = 1000.0  # a new price, from now on
    assert chat.cost == pytest.approx(chat.steps[0].usage.cost)
    assert chat.cost == pytest.approx((chat.usage.input_tokens * 1.0 + chat.usage.output_tokens * 2.0) / 1e6)
