"""`Chat`: the agent loop over a provider's own SDK client, provider-neutral.

One call, `chat(prompt)`:

1. append the prompt to the history (`chat.messages`, in the provider's own format);
2. send the history with the tools' definitions (rendered once per tool set, not per step);
3. append the model's reply to the history as that provider requires it echoed;
4. when the reply calls no tool, show and return its text;
5. otherwise run every call through the registry (`run_tool_calls`' path: approval, limits,
   confinement; a failing or refused call is an error result for the model), append the results
   and go back to 2.

`max_steps` bounds the requests of one call. When the reply to the last one still asks for
tools, those calls are not run: each gets an error result saying so (the history stays valid,
so `chat(...)` can go on), and `MaxStepsReached` is raised. Errors of the SDK (network, API
status) propagate unchanged. Provider shapes live in `nbtools.formats.turns`.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, Callable

from ..call.answers import arun_reply_calls, run_reply_calls
from ..errors import NbtoolsError
from ..formats import ToolResult, parse_reply, result_message
from ..formats import turns
from ..formats.turns import Usage
from ..registry import Registry, registry as default_registry
from .steps import CallRecord, Step, trace_lines


class MaxStepsReached(NbtoolsError):
    """The model was still calling tools when the loop had made `max_steps` requests.

    Fields: `max_steps`, `text` (what the last reply said besides its calls), `steps` (the Steps of
    this call). The unanswered calls were answered "not run" in the history, so calling the chat
    again continues the conversation.
    """

    def __init__(self, max_steps: int, text: str, steps: list[Step]):
        self.max_steps, self.text, self.steps = max_steps, text, steps
        names = ", ".join(call.name for call in steps[-1].calls) if steps else ""
        super().__init__(f"the model was still calling tools ({names}) after max_steps={max_steps} requests; "
                         "those calls were not run. Call the chat again to let it continue, or make "
                         "max_steps larger (Chat(..., max_steps=N))")


def _registry_of(tools: Any) -> Any:
    """The registry the loop's calls go through: the default one, a Registry or `select()` view as it
    is (its approval and limits hold), or a new Registry of a list of callables/Tools."""
    if tools is None:
        return default_registry
    if isinstance(tools, Registry) or (hasattr(tools, "schemas") and hasattr(tools, "resolve")):
        return tools
    if isinstance(tools, (list, tuple)):
        return Registry(tools)
    raise TypeError(f"tools=: expected a Registry, a registry.select() view or a list of callables/Tools; "
                    f"got a {type(tools).__name__}")


class Chat:
    """An agent loop over `client`, a provider's own SDK client (see the module docstring).

    Args:
        client: `openai.OpenAI`/`AsyncOpenAI`, `anthropic.Anthropic`/`AsyncAnthropic` or
            `google.genai.Client` (its `.aio` too). Told apart by class; no SDK is imported here.
        model: the model name, sent with every request.
        tools: a Registry, a `select()` view or a list of callables/Tools; None: `nbtools.registry`.
        system: the system prompt (OpenAI: the history's first message; Anthropic: `system=`;
            Gemini: `system_instruction`).
        max_steps: the most model requests one call makes (see `MaxStepsReached`).
        api: "responses" for OpenAI's Responses API (default: Chat Completions).
        strict: send strict tool definitions (OpenAI's and Anthropic's strict modes).
        trace: a callable given one line of text per tool call (`trace=print`); nothing is printed
            outside a notebook otherwise.
        show: show each step in the notebook (default: when running in one).
        record: a path: every exchange with the provider is written to this cassette file (no key or
            Authorization header), for `nbtools.replay(path)` to answer from offline. The first Chat
            of a process to record to a path starts the file afresh; later ones add to it, in order.
        **create_kwargs: forwarded to every create call (Anthropic needs `max_tokens`; for Gemini
            they go into the request's `config`). With the Responses API and `store=False`, pass
            `include=["reasoning.encrypted_content"]` too: reasoning items are echoed, and without
            stored responses the API can only read them from their encrypted content.

    Attributes: `messages` (the history, provider format), `usage` (tokens summed over every
    request), `steps` (the Steps of the last call).
    """

    def __init__(self, client: Any, *, model: str, tools: Any = None, system: str | None = None,
                 max_steps: int = 10, api: str | None = None, strict: bool = False,
                 trace: Callable[[str], Any] | None = None, show: bool | None = None, record: Any = None,
                 **create_kwargs: Any):
        if record is not None:  # the chat talks through a recording copy of the client (chat/cassette.py)
            from .cassette import recording

            client = recording(client, record)
        self.endpoint = turns.endpoint(client, api)
        if self.endpoint.dialect == "anthropic" and "max_tokens" not in create_kwargs:
            raise TypeError("Chat with an Anthropic client needs max_tokens= (the Messages API requires it), "
                            "e.g. Chat(client, model=..., max_tokens=1024)")
        if not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be a positive integer; got {max_steps!r}")
        self.client, self.model, self.system = client, model, system
        self.tools = _registry_of(tools)
        self.max_steps, self.strict, self.trace, self.show = max_steps, strict, trace, show
        self.create_kwargs = create_kwargs
        self.messages: list[Any] = turns.system_turns(self.endpoint.dialect, system)
        self.usage = Usage()
        self.steps: list[Step] = []
        self._cached: tuple[tuple, list[dict]] | None = None

    def __repr__(self) -> str:
        return (f"Chat({self.endpoint.dialect}, model={self.model!r}, {len(self.messages)} messages, "
                f"{self.usage.input_tokens} tokens in, {self.usage.output_tokens} out)")

    # -- the loop ----------------------------------------------------------------------------------
    def __call__(self, prompt: str) -> str:
        """Send `prompt`, run the model's tool calls until it answers; its final text."""
        if self.endpoint.is_async:
            raise TypeError("this client is asynchronous: use `await chat.acall(prompt)` (or give Chat the "
                            "synchronous client)")
        create = self._method(self.endpoint.method)
        view, definitions, start = self._begin(prompt)
        for number in range(1, self.max_steps + 1):
            reply = self._send(create, definitions, start)
            source, usage = self._receive(reply)
            if source is not None and number < self.max_steps:
                outcomes = run_reply_calls(source, self.tools)[1]
            else:
                outcomes = self._not_run(source)
            if not outcomes:
                return self._finish(reply, number, usage, view)
            self._answer(reply, number, usage, outcomes, view)
        raise self._gave_up()

    async def acall(self, prompt: str) -> str:
        """`chat(prompt)` for an event loop: awaits an async client (a sync one's requests run in a
        thread) and runs coroutine tools concurrently."""
        if self.endpoint.is_async:
            create = self._method(self.endpoint.method)
        elif self.endpoint.async_method is not None:
            create = self._method(self.endpoint.async_method)
        else:
            method = self._method(self.endpoint.method)

            async def create(**kwargs: Any) -> Any:
                return await asyncio.to_thread(functools.partial(method, **kwargs))
        view, definitions, start = self._begin(prompt)
        for number in range(1, self.max_steps + 1):
            reply = await self._asend(create, definitions, start)
            source, usage = self._receive(reply)
            if source is not None and number < self.max_steps:
                outcomes = (await arun_reply_calls(source, self.tools))[1]
            else:
                outcomes = self._not_run(source)
            if not outcomes:
                return self._finish(reply, number, usage, view)
            self._answer(reply, number, usage, outcomes, view)
        raise self._gave_up()

    # -- the steps the two loops share ---------------------------------------------------------------
    def _method(self, path: tuple[str, ...]) -> Callable[..., Any]:
        target = self.client
        for name in path:
            target = getattr(target, name)
        return target

    def _begin(self, prompt: str) -> tuple[Any, list[dict], int]:
        """Append the prompt; the step view (or None), the tool definitions and the history's length
        before the prompt (to take an unanswered prompt back when the first request fails)."""
        if not isinstance(prompt, str):
            raise TypeError(f"chat(prompt): the prompt is text; got a {type(prompt).__name__}")
        start = len(self.messages)
        self.messages.append(turns.user_turn(self.endpoint.dialect, prompt))
        self.steps = []
        view = None
        if self.show or self.show is None:
            from .display import StepView

            view = StepView.create(force=bool(self.show))
        return view, self._definitions(), start

    def _definitions(self) -> list[dict]:
        """The tools' definitions, rendered again only when the set of enabled tools changed."""
        key = tuple(self.tools.enabled())  # Tools are immutable records: the same ones render the same
        cached = self._cached
        if cached is None or len(key) != len(cached[0]) or any(a is not b for a, b in zip(key, cached[0])):
            self._cached = (key, self.tools.schemas(self.endpoint.fmt, strict=self.strict or None))
        return self._cached[1]  # type: ignore[index]

    def _request(self, definitions: list[dict]) -> dict:
        return turns.request(self.endpoint.dialect, self.model, self.messages, self.system, definitions,
                             self.create_kwargs)

    def _send(self, create: Callable[..., Any], definitions: list[dict], start: int) -> Any:
        try:
            return create(**self._request(definitions))
        except BaseException:
            self._take_back(start)
            raise

    async def _asend(self, create: Callable[..., Any], definitions: list[dict], start: int) -> Any:
        try:
            return await create(**self._request(definitions))
        except BaseException:
            self._take_back(start)
            raise

    def _take_back(self, start: int) -> None:
        # Only a prompt nothing answered yet: the history stays valid for the provider either way.
        if len(self.messages) == start + 1:
            del self.messages[start:]

    def _receive(self, reply: Any) -> tuple[Any, Usage]:
        """Record the reply (history, usage); where its tool calls are read from (the recorded turn:
        the SDK object is not dumped again; None when the reply had no content), and its usage."""
        dialect = self.endpoint.dialect
        recorded = turns.assistant_turns(dialect, reply)
        self.messages.extend(recorded)
        usage = turns.reply_usage(dialect, reply)
        self.usage = self.usage + usage
        return turns.calls_source(dialect, recorded), usage

    def _not_run(self, source: Any) -> list[tuple[Any, Any]]:
        """The last step's calls, answered "not run" (the history stays valid); [] when it has none."""
        requests = [] if source is None else parse_reply(source)[1]
        text = f"not run: the loop reached max_steps={self.max_steps} before this call; ask again to continue"
        return [(ToolResult(request, text, text, True), None) for request in requests]

    def _answer(self, reply: Any, number: int, usage: Usage, outcomes: list[tuple[Any, Any]], view: Any) -> None:
        """Append the results of one step's calls; record and show the step."""
        dialect = self.endpoint.dialect
        results = [result for result, _value in outcomes]
        self.messages.extend(turns.result_turns(dialect, result_message(dialect, results)))
        calls = tuple(CallRecord(result.request.id, result.request.name, result.request.arguments,
                                 result.content, result.is_error, value) for result, value in outcomes)
        self._record(Step(number, turns.reply_text(dialect, reply), calls, usage), view)

    def _record(self, step: Step, view: Any) -> None:
        self.steps.append(step)
        if self.trace is not None:
            for line in trace_lines(step):
                self.trace(line)
        if view is not None:
            view.step(step)

    def _finish(self, reply: Any, number: int, usage: Usage, view: Any) -> str:
        text = turns.reply_text(self.endpoint.dialect, reply)
        self.steps.append(Step(number, text, (), usage))
        if view is not None:
            view.final(text, self.usage)
        return text

    def _gave_up(self) -> MaxStepsReached:
        """`max_steps` reached with calls pending (answered "not run" by `_not_run`)."""
        error = MaxStepsReached(self.max_steps, self.steps[-1].text, list(self.steps))
        if self.trace is not None:
            self.trace(str(error))
        return error


__all__ = ["Chat", "MaxStepsReached"]
