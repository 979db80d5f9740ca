"""`Chat`: the agent loop over a provider's own SDK client, provider-neutral.

One call, `chat(prompt)`:

1. append the prompt to the history (`chat.messages`, in the provider's own format);
2. send the history with the tools' definitions (rendered once per tool set, not per step) and
   any provider-hosted tools (`native_tools`), streamed when `stream=True`;
3. append the model's reply to the history as that provider requires it echoed (hosted tools'
   blocks included, unchanged);
4. when the reply calls no tool, show and return its text (an Anthropic `pause_turn` is not an
   answer: the history is sent again as it is);
5. otherwise run every call through the registry (`run_tool_calls`' path: approval, limits,
   confinement; a failing or refused call is an error result for the model), append the results
   and go back to 2.

Every way a call can stop leaves `chat.messages` valid for the provider, so `chat(...)` can go on:
`max_steps` (`MaxStepsReached`) and `budget` (`BudgetExceeded`) answer the pending calls "not run";
a person's interrupt (`ChatInterrupted`, one line in a notebook) answers the calls that had not
finished "interrupted: not run", and one during a model request takes back an unanswered prompt.
Errors of the SDK (network, API status) propagate unchanged. Provider shapes live in
`nbtools.formats.turns` and `nbtools.formats.streamed`.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, Callable

from ..call.answers import arun_reply_calls, run_reply_calls
from ..errors import Interrupted, NbtoolsError
from ..formats import ToolResult, parse_reply, result_message
from ..formats import callers, streamed, turns
from ..formats.turns import Usage
from ..policy import asking_as
from ..registry import Registry, registry as default_registry
from .spend import _ACCOUNTS, _SPENT, Account, BudgetExceeded, TurnRefused, aturn, charge, check_budget, \
    check_prices, over, priced, used_up
from .steps import CallRecord, Step, trace_lines


_NOTHING = Usage()  # no usage besides the reply's (compared by identity: nothing to add)
INTERRUPTED = "interrupted: not run (the person stopped the chat before this call finished)"


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


class ChatInterrupted(Interrupted):
    """A person interrupted the chat (the kernel's stop button, Ctrl+C): an `errors.Interrupted`, so
    still a KeyboardInterrupt, shown as one line. Calls that had not finished were answered
    "interrupted: not run", so `chat.messages` stays valid and calling the chat again goes on.
    Fields: `steps` (the Steps of the interrupted call), `what`."""

    def __init__(self, message: str, steps: list[Step] | None = None):
        KeyboardInterrupt.__init__(self, message)
        self.what, self.steps = "the chat", list(steps or ())

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, (str(self), self.steps))


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


class _Run:
    """One call of the chat: its view (None outside a notebook), the create call's keyword arguments
    (the same at every step: the history is the list `chat.messages`, which grows in place), where
    its prompt sits in the history, the usage of its steps so far (handed to the chat's totals when
    the call ends: `Chat._end`), what it was doing (for an interrupt's message) and the budgets of
    the Chats running this one as a tool (`spend.Account`s; empty for a Chat not run by a tool)."""

    __slots__ = ("view", "kwargs", "start", "usages", "doing", "create", "accounts")

    def __init__(self, view: Any, kwargs: dict, start: int):
        self.view, self.kwargs, self.start = view, kwargs, start
        self.accounts: tuple = _ACCOUNTS.get()
        self.usages: list[Any] = []  # each step's usage, as `Chat._receive` keeps it (see `Chat._settled`)
        self.doing = "before the first request"
        self.create: Callable[..., Any] | None = None  # a synchronous client's create (or stream) function

    def status(self, text: str | None) -> None:
        if text is not None:
            self.doing = text
        if self.view is not None:
            self.view.status(text)


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
        stream: use the provider's streaming API; the text appears in the step view as it comes.
        prices: `{model: {"input", "output", "cache_read", "cache_write"}}` per million tokens, for
            `chat.cost` (see `nbtools.chat.spend`).
        budget: `{"tokens": N}` and/or `{"cost": X}`: the chat stops with `BudgetExceeded` once its
            usage reaches it (counted over the chat's life, sub-agents included).
        native_tools: provider-hosted tools in the provider's own shape (Anthropic web search,
            Responses `{"type": "web_search"}`, Gemini `{"google_search": {}}`...).
        allow_dangerous_native_tools: allow hosted tools that run code, a shell or a computer.
        remote_images: show images the model's Markdown links from the web (off: they are shown as
            links, so an answer cannot make the page fetch a URL carrying data out).
        record: a path: every exchange with the provider is written to this cassette file (no key or
            Authorization header), for `nbtools.replay(path)` to answer from offline. The first Chat
            of a process to record to a path starts the file afresh; later ones add to it, in order.
        **create_kwargs: forwarded to every create call (Anthropic needs `max_tokens`; for Gemini
            they go into the request's `config`). With the Responses API and `store=False`, pass
            `include=["reasoning.encrypted_content"]` too: reasoning items are echoed, and without
            stored responses the API can only read them from their encrypted content.

    A reply's tool call made by code the model wrote (provider-native programmatic calling: its
    `caller`) runs under the same policy, asked for by `chat:<model>/code`; the Anthropic
    code-execution container a reply used is kept in `container` and sent with the next request.

    Attributes: `messages` (the history, provider format), `usage` (tokens and cost summed over every
    request, each step's in `usage.steps`; a call's steps count once it ends, however it ends),
    `cost` (None without prices), `steps` (the Steps of the last call), `budget`.
    """

    def __init__(self, client: Any, *, model: str, tools: Any = None, system: str | None = None,
                 max_steps: int = 10, api: str | None = None, strict: bool = False,
                 trace: Callable[[str], Any] | None = None, show: bool | None = None, stream: bool = False,
                 prices: dict | None = None, budget: dict | None = None, native_tools: list | None = None,
                 allow_dangerous_native_tools: bool = False, remote_images: bool = False, record: Any = None,
                 **create_kwargs: Any):
        if record is not None:  # the chat talks through a recording copy of the client (chat/cassette.py)
            from .cassette import recording

            client = recording(client, record)
        self.endpoint = turns.endpoint(client, api)
        self._readers = turns.readers(self.endpoint.dialect)  # (an SDK reply's, a streamed reply's)
        if self.endpoint.dialect == "anthropic" and "max_tokens" not in create_kwargs:
            raise TypeError("Chat with an Anthropic client needs max_tokens= (the Messages API requires it), "
                            "e.g. Chat(client, model=..., max_tokens=1024)")
        if not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be a positive integer; got {max_steps!r}")
        if "stream" in create_kwargs or "stream_options" in create_kwargs:
            raise TypeError("Chat(stream=True) asks for streaming; stream_options are set by the loop")
        self.client, self.model, self.system = client, model, system
        self.tools = _registry_of(tools)
        self.max_steps, self.strict, self.trace, self.show = max_steps, strict, trace, show
        self.stream, self.remote_images = bool(stream), bool(remote_images)
        self.prices = check_prices(prices)
        self.budget = check_budget(budget, model, self.prices)
        self.native_tools = turns.native_tools(self.endpoint.dialect, native_tools, allow_dangerous_native_tools)
        # a hosted tool passed around `native_tools=` (Gemini's config, an SDK's extra_body) is held to the same opt-in
        turns.check_hosted_options(self.endpoint.dialect, create_kwargs, allow_dangerous_native_tools)
        self.create_kwargs = create_kwargs
        self.messages: list[Any] = turns.system_turns(self.endpoint.dialect, system)
        self.usage = Usage(cost=0.0 if model in self.prices else None)  # see the property
        self._steps: list[Step | tuple] = []  # see `steps`
        self._cached: tuple[list, list[dict]] | None = None
        # the id of the Anthropic code-execution container the last reply used, sent with the next
        # request (`container=`) so programmatic tool calls resume in it; None until one is used
        self.container: str | None = create_kwargs.pop("container", None)
        self._containers = self.endpoint.dialect == "anthropic"

    def __repr__(self) -> str:
        cost = f", cost {self.usage.cost:.4g}" if self.usage.cost is not None else ""
        return (f"Chat({self.endpoint.dialect}, model={self.model!r}, {len(self.messages)} messages, "
                f"{self.usage.input_tokens} tokens in, {self.usage.output_tokens} out{cost})")

    @property
    def steps(self) -> list[Step]:
        """The Steps of the last call. The loop keeps each as a plain tuple (number, text, outcomes,
        usage) unless a view or `trace` shows it at once; the records are made when first read."""
        steps = self._steps
        for index, step in enumerate(steps):
            if type(step) is tuple:
                number, text, outcomes, usage = step
                steps[index] = Step(number, text, tuple(
                    CallRecord(result.request.id, result.request.name, result.request.arguments, result.content,
                               result.is_error, value) for result, value in outcomes), self._settled(usage))
        return steps  # type: ignore[return-value]

    @steps.setter
    def steps(self, steps: list[Step]) -> None:
        self._steps = list(steps)

    @property
    def usage(self) -> Usage:
        """Tokens and cost summed over every request, each step's usage in `usage.steps`. The steps of
        finished calls wait in a list (as the SDKs reported them, see `_settled`) and are summed into one
        record when this is read."""
        if self._unsettled:
            self._usage, self._unsettled = self._usage.add_steps(list(map(self._settled, self._unsettled))), []
        return self._usage

    @usage.setter
    def usage(self, usage: Usage) -> None:
        self._usage, self._unsettled = usage, []

    @property
    def cost(self) -> float | None:
        """What the chat spent so far, from `prices=` (None when its model has no price)."""
        return self.usage.cost

    def as_tool(self, name: str | None = None, description: str | None = None) -> Any:
        """This chat as a Tool another Chat can call (see `nbtools.chat.subagent.as_tool`)."""
        from .subagent import as_tool

        return as_tool(self, name, description)

    # -- the loop ----------------------------------------------------------------------------------
    def __call__(self, prompt: str) -> str:
        """Send `prompt`, run the model's tool calls until it answers; its final text."""
        if self.endpoint.is_async:
            raise TypeError("this client is asynchronous: use `await chat.acall(prompt)` (or give Chat the "
                            "synchronous client)")
        run = self._begin(prompt)
        endpoint = self.endpoint
        run.create = self._method(endpoint.stream_method or endpoint.method if self.stream else endpoint.method)
        try:
            for number in range(1, self.max_steps + 1):
                if self.budget and over(self.budget, self._so_far(run)):  # sub-agents spend in tools
                    raise self._over_budget(run)
                if run.accounts:  # run by another Chat's tool: its budget holds for this request
                    reply, (source, usage, text) = self._exchange(run, number)
                else:
                    reply = self._send(run, number)
                    source, usage, text = self._receive(reply, run)
                if source is None:  # no call: the answer, or None after a pause (send again)
                    answer = self._without_calls(run, reply, number, usage, text)
                    if answer is not None:
                        return answer
                    continue
                stop = self._stop(run, number, usage)
                if stop is None:
                    outcomes, extra = self._run_calls(run, number, text, source, usage)
                else:
                    outcomes, extra = self._not_run(source, stop), _NOTHING
                answer = self._close_step(run, number, usage, text, outcomes, extra, stop)
                if answer is not None:
                    return answer
            raise self._gave_up()
        except ChatInterrupted:
            raise
        except KeyboardInterrupt:
            raise self._interrupted(run) from None
        finally:
            self._end(run)

    async def acall(self, prompt: str) -> str:
        """`chat(prompt)` for an event loop: awaits an async client (a sync one's requests run in a
        thread) and runs coroutine tools concurrently."""
        run = self._begin(prompt)
        try:
            for number in range(1, self.max_steps + 1):
                if self.budget and over(self.budget, self._so_far(run)):  # sub-agents spend in tools
                    raise self._over_budget(run)
                if run.accounts:
                    reply, (source, usage, text) = await self._aexchange(run, number)
                else:
                    reply = await self._asend(run, number)
                    source, usage, text = self._receive(reply, run)
                if source is None:  # no call: the answer, or None after a pause (send again)
                    answer = self._without_calls(run, reply, number, usage, text)
                    if answer is not None:
                        return answer
                    continue
                stop = self._stop(run, number, usage)
                if stop is None:
                    outcomes, extra = await self._arun_calls(run, number, text, source, usage)
                else:
                    outcomes, extra = self._not_run(source, stop), _NOTHING
                answer = self._close_step(run, number, usage, text, outcomes, extra, stop)
                if answer is not None:
                    return answer
            raise self._gave_up()
        except ChatInterrupted:
            raise
        except KeyboardInterrupt:
            raise self._interrupted(run) from None
        finally:
            self._end(run)

    def _without_calls(self, run: _Run, reply: Any, number: int, usage: Any, text: str) -> str | None:
        """A reply that called no tool (the part `__call__` and `acall` share): the final answer, or
        None when the provider paused the turn (Anthropic's pause_turn: the loop sends it again)."""
        if not turns.paused(self.endpoint.dialect, reply):
            return self._finish(run, text, number, usage)
        self._answer(run, text, number, usage, [])
        return None

    def _close_step(self, run: _Run, number: int, usage: Any, text: str, outcomes: list, extra: Usage,
                    stop: str | None) -> str | None:
        """Record a step whose reply called tools (the part `__call__` and `acall` share); None: go on
        with the next step (the text as the answer if no call could be read after all)."""
        if not outcomes:
            return self._finish(run, text, number, usage)
        self._answer(run, text, number, usage, outcomes, extra)
        if stop == "budget":
            raise self._over_budget(run)
        return None

    # -- requests ------------------------------------------------------------------------------------
    def _exchange(self, run: _Run, number: int) -> tuple[Any, tuple]:
        """`_send` and `_receive` for a Chat run by another Chat's tool: in the request's turn, refused
        when a budget of those Chats is used up (`spend.Account`), the reply counted in them at once."""
        lock = run.accounts[0].lock
        try:
            lock.acquire()
        except TurnRefused as error:  # it would wait for a request of its own thread's loop: not sent
            self._take_back(run.start)  # a prompt nothing answered: the history stays valid
            if self.trace is not None:
                self.trace(str(error))
            raise
        try:
            self._within_accounts(run)
            reply = self._send(run, number)
            received = self._receive(reply, run)
            charge(run.accounts, self._settled(received[1]))
        finally:
            lock.release()
        return reply, received

    async def _aexchange(self, run: _Run, number: int) -> tuple[Any, tuple]:
        async with aturn(run.accounts):
            self._within_accounts(run)
            reply = await self._asend(run, number)
            received = self._receive(reply, run)
            charge(run.accounts, self._settled(received[1]))
        return reply, received

    def _within_accounts(self, run: _Run) -> None:
        account = used_up(run.accounts)
        if account is not None:
            self._take_back(run.start)  # a prompt nothing answered: the history stays valid
            error = BudgetExceeded(account.budget, account.total(), caller=True)
            if self.trace is not None:
                self.trace(str(error))
            raise error

    def _accounts(self, run: _Run, usage: Any) -> Any:
        """The accounts the Chats this step's tools run must respect: the outer ones, and this chat's
        own budget with what it spent so far (`usage`: this step's reply)."""
        if not self.budget:
            return None
        return _ACCOUNTS.set((*run.accounts, Account(self.budget, self._so_far(run, usage))))

    def _method(self, path: tuple[str, ...]) -> Callable[..., Any]:
        target = self.client
        for name in path:
            target = getattr(target, name)
        return target

    def _request(self) -> dict:
        """The create call's keyword arguments for this call of the chat (see `_Run`)."""
        kwargs = turns.request(self.endpoint.dialect, self.model, self.messages, self.system, self._definitions(),
                               self.create_kwargs, self.native_tools)
        if self.container is not None:
            kwargs["container"] = self.container
        if self.stream:
            kwargs.update(streamed.stream_options(self.endpoint.dialect))
        return kwargs

    def _send(self, run: _Run, number: int) -> Any:
        run.status(f"step {number}: waiting for {self.model}")
        try:
            if not self.stream:
                return run.create(**run.kwargs)  # type: ignore[misc]
            return self._read_stream(run.create(**run.kwargs), run)  # type: ignore[misc]
        except BaseException:
            self._take_back(run.start)
            raise

    def _read_stream(self, stream: Any, run: _Run) -> Any:
        assembler = streamed.assembler(self.endpoint.dialect)
        feed, view = assembler.feed, run.view
        try:
            if view is None:
                for event in stream:
                    feed(event)
            else:
                for event in stream:
                    text = feed(event)
                    if text:
                        view.text(text)
        finally:
            close = getattr(stream, "close", None)
            if callable(close):
                close()
        return assembler.reply()

    async def _asend(self, run: _Run, number: int) -> Any:
        run.status(f"step {number}: waiting for {self.model}")
        endpoint = self.endpoint
        try:
            kwargs = run.kwargs
            if not endpoint.is_async and endpoint.async_method is None:  # a sync OpenAI/Anthropic client
                method = self._method(endpoint.method)
                if not self.stream:
                    return await asyncio.to_thread(functools.partial(method, **kwargs))
                return await asyncio.to_thread(lambda: self._read_stream(method(**kwargs), run))
            if self.stream:
                path = endpoint.stream_method or endpoint.method
                if not endpoint.is_async:
                    path = ("aio", *path)
                return await self._aread_stream(await self._method(path)(**kwargs), run)
            return await self._method(endpoint.method if endpoint.is_async else endpoint.async_method)(**kwargs)
        except BaseException:
            self._take_back(run.start)
            raise

    async def _aread_stream(self, stream: Any, run: _Run) -> Any:
        assembler = streamed.assembler(self.endpoint.dialect)
        view = run.view
        try:
            async for event in stream:
                text = assembler.feed(event)
                if text and view is not None:
                    view.text(text)
        finally:
            close = getattr(stream, "close", None) or getattr(stream, "aclose", None)
            if callable(close):
                done = close()
                if asyncio.iscoroutine(done):
                    await done
        return assembler.reply()

    def _take_back(self, start: int) -> None:
        # Only a prompt nothing answered yet: the history stays valid for the provider either way.
        if len(self.messages) == start + 1:
            del self.messages[start:]

    # -- tool calls ----------------------------------------------------------------------------------
    def _run_calls(self, run: _Run, number: int, text: str, source: Any, usage: Any) -> tuple[list, Usage]:
        """Run a step's calls; their outcomes and what sub-agents spent meanwhile. On an interrupt the
        step is recorded with the finished calls' results and "interrupted: not run" for the rest."""
        progress: dict[int, Any] = {}
        spent: list[Usage] = []
        token, accounts = _SPENT.set(spent), self._accounts(run, usage)
        try:
            if run.view is None:  # the names only for a person watching (an interrupt names them from the step)
                run.doing = f"step {number}: running its tool calls"
            else:
                self._status_calls(run, number, source)
            with asking_as(f"chat:{self.model}"):  # approvals name the model that asks
                return run_reply_calls(source, self.tools, progress)[1], self._collected(spent) if spent else _NOTHING
        except KeyboardInterrupt:
            self._answer(run, text, number, usage, self._unfinished(source, progress), self._collected(spent))
            raise
        finally:
            _SPENT.reset(token)
            if accounts is not None:
                _ACCOUNTS.reset(accounts)

    async def _arun_calls(self, run: _Run, number: int, text: str, source: Any,
                          usage: Any) -> tuple[list, Usage]:
        spent: list[Usage] = []
        token, accounts = _SPENT.set(spent), self._accounts(run, usage)
        try:
            if run.view is None:
                run.doing = f"step {number}: running its tool calls"
            else:
                self._status_calls(run, number, source)
            with asking_as(f"chat:{self.model}"):
                return (await arun_reply_calls(source, self.tools))[1], self._collected(spent) if spent else _NOTHING
        except (KeyboardInterrupt, asyncio.CancelledError):
            self._answer(run, text, number, usage, self._unfinished(source, {}), self._collected(spent))
            raise
        finally:
            _SPENT.reset(token)
            if accounts is not None:
                _ACCOUNTS.reset(accounts)

    def _status_calls(self, run: _Run, number: int, source: Any) -> None:
        names = ", ".join(request.name for request in parse_reply(source)[1])
        if names:
            run.status(f"step {number}: running {names}")

    def _collected(self, spent: list[Usage]) -> Usage:
        if not spent:
            return _NOTHING
        total = Usage()
        for usage in spent:
            total = total + usage
        return total

    def _unfinished(self, source: Any, progress: dict[int, Any]) -> list[tuple[Any, Any]]:
        requests = parse_reply(source)[1]
        return [progress.get(index) or (ToolResult(request, INTERRUPTED, INTERRUPTED, True), None)
                for index, request in enumerate(requests)]

    def _stop(self, run: _Run, number: int, usage: Any) -> str | None:
        """Why this step's calls must not run: "max_steps" on the last step, "budget" once it is used
        up (this reply's `usage` counted)."""
        if number >= self.max_steps:
            return "max_steps"
        return "budget" if self.budget and over(self.budget, self._so_far(run, usage)) else None

    def _not_run(self, source: Any, stop: str) -> list[tuple[Any, Any]]:
        """The last step's calls, answered "not run" (the history stays valid)."""
        requests = parse_reply(source)[1]
        if stop == "budget":
            text = f"not run: the chat's budget {self.budget} was used up before this call; ask again to continue"
        else:
            text = f"not run: the loop reached max_steps={self.max_steps} before this call; ask again to continue"
        return [(ToolResult(request, text, text, True), None) for request in requests]

    # -- records -------------------------------------------------------------------------------------
    def _begin(self, prompt: str) -> _Run:
        """Append the prompt; the run's view, request and the history's length before the prompt
        (to take an unanswered prompt back when the first request fails)."""
        if not isinstance(prompt, str):
            raise TypeError(f"chat(prompt): the prompt is text; got a {type(prompt).__name__}")
        if self.budget and over(self.budget, self.usage):
            raise self._over_budget(None)
        start = len(self.messages)
        self.messages.append(turns.user_turn(self.endpoint.dialect, prompt))
        self._steps = []
        view = None
        if self.show or self.show is None:
            from .display import StepView

            view = StepView.create(force=bool(self.show), remote_images=self.remote_images)
        return _Run(view, self._request(), start)

    def _definitions(self) -> list[dict]:
        """The tools' definitions, rendered again only when the set of enabled tools changed."""
        key = self.tools.enabled()  # Tools are immutable records: equal ones render the same
        cached = self._cached
        if cached is None or cached[0] != key:  # the same Tools: compared by identity, in C
            definitions = self.tools.schemas(self.endpoint.fmt, strict=self.strict or None)
            if self._containers and self.native_tools:  # allowed_callers name the code tool sent
                definitions = callers.match_code_version(definitions, self.native_tools)
            self._cached = (key, definitions)
        return self._cached[1]  # type: ignore[index]

    def _receive(self, reply: Any, run: _Run) -> tuple[Any, Any, str]:
        """Record the reply in the history; where its tool calls are read from (the recorded turn:
        the SDK object is not dumped again; None when the reply called no function), its usage as
        the SDK reported it with the model's price table (a `Usage` is made only when read: see
        `_settled`) and its text (read from the recorded turn too)."""
        read_reply, read_streamed = self._readers
        # a streamed reply put together as a plain dict (`formats.streamed`; an SDK's reply is its own type)
        recorded, usage, source, text = (read_streamed if type(reply) is dict else read_reply)(reply)
        self.messages.extend(recorded)
        if self._containers:  # Anthropic code execution: its container (the code's state) goes on
            container = callers.container_of(reply)
            if container is not None and container != self.container:
                self.container = run.kwargs["container"] = container
        table = self.prices.get(self.model)  # the prices as they are now: a later edit prices later steps
        return source, (usage, None if table is None else dict(table)), text

    def _settled(self, usage: Any) -> Usage:
        """A step's usage as a record. The loop keeps what `_receive` read (the SDK's usage object and
        the price table of the step's model) until the usage is read (`usage`, `steps`, a budget, a
        view): building a `Usage` per reply was a tenth of the loop's own work (bench/bench_chat.py)."""
        if type(usage) is Usage:
            return usage
        raw, table = usage
        return priced(turns.usage_of(self.endpoint.dialect, raw), table)

    def _answer(self, run: _Run, text: str, number: int, usage: Any, outcomes: list[tuple[Any, Any]],
                extra: Usage = _NOTHING) -> None:
        """Append the results of one step's calls; record the step (its usage: the reply's and what
        sub-agents spent during its tools) and show it."""
        dialect = self.endpoint.dialect
        results = [result for result, _value in outcomes]
        if results:
            self.messages.extend(turns.result_turns(dialect, result_message(dialect, results)))
        if extra is not _NOTHING:
            usage = self._settled(usage) + extra
        run.usages.append(usage)
        self._steps.append((number, text, outcomes, usage))
        if self.trace is not None or run.view is not None:
            step = self.steps[-1]
            if self.trace is not None:
                for line in trace_lines(step):
                    self.trace(line)
            if run.view is not None:
                run.view.step(step)

    def _so_far(self, run: _Run, *more: Usage) -> Usage:
        """The chat's usage with this call's steps so far (and `more`) added: what a budget counts."""
        return self.usage.add_steps([self._settled(usage) for usage in (*run.usages, *more)])

    def _finish(self, run: _Run, text: str, number: int, usage: Any) -> str:
        run.usages.append(usage)
        self._steps.append((number, text, (), usage))
        if run.view is not None:
            return run.view.final(text, self._so_far(run))
        return text

    def _end(self, run: _Run) -> None:
        """After a call, however it ended: its steps' usage handed to the chat's (see `usage`; a new
        list: a sub-agent's copy of this Chat may share the old one); the live status cleared; what
        it spent reported to the Chat whose tool this call runs in (a sub-agent), if any."""
        if run.usages:
            self._unsettled = [*self._unsettled, *run.usages]
        if run.view is not None:
            run.view.status(None)
        spent = _SPENT.get()
        if spent is not None:
            total = Usage().add_steps(list(map(self._settled, run.usages)))
            spent.append(Usage(total.input_tokens, total.output_tokens, total.cache_read_tokens,
                               total.cache_write_tokens, total.cost))

    def _interrupted(self, run: _Run) -> ChatInterrupted:
        stopped = [call.name for call in (self.steps[-1].calls if self.steps else ()) if call.text == INTERRUPTED]
        doing = f"step {self.steps[-1].number}: running {', '.join(stopped)}" if stopped else run.doing
        message = (f"the chat was interrupted ({doing}); every tool call in chat.messages is answered "
                   "('interrupted: not run' where it had not finished): call the chat again to go on")
        if self.trace is not None:
            self.trace(message)
        return ChatInterrupted(message, list(self.steps))

    def _over_budget(self, run: _Run | None) -> BudgetExceeded:
        usage = self.usage if run is None else self._so_far(run)
        error = BudgetExceeded(self.budget, usage, self.steps[-1].text if self.steps else "")
        if self.trace is not None:
            self.trace(str(error))
        return error

    def _gave_up(self) -> MaxStepsReached:
        """`max_steps` reached with calls pending (answered "not run" by `_not_run`)."""
        error = MaxStepsReached(self.max_steps, self.steps[-1].text if self.steps else "", list(self.steps))
        if self.trace is not None:
            self.trace(str(error))
        return error


__all__ = ["Chat", "MaxStepsReached", "ChatInterrupted", "BudgetExceeded", "INTERRUPTED"]
