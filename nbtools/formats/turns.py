"""Conversation turns per provider: what the agent loop (`nbtools.chat`) sends and keeps.

The loop itself is provider-neutral; every shape it needs lives here, as pure functions of plain
data and SDK objects (read through `model_dump`, never imported):

| dialect   | client                            | request                                     | history kept                                  |
|-----------|-----------------------------------|---------------------------------------------|-----------------------------------------------|
| openai    | `openai.OpenAI`/`AsyncOpenAI`     | `chat.completions.create(model, messages, tools)` | system message first; the assistant message with its `tool_calls`, then one `role: tool` message per call |
| responses | the same, `api="responses"`       | `responses.create(model, input, tools)`     | system message first; every output item (`function_call`, reasoning, message) echoed before the `function_call_output` items |
| anthropic | `anthropic.Anthropic`/`AsyncAnthropic` | `messages.create(model, system, messages, tools, max_tokens)` | the assistant message with every content block, then one user message answering every `tool_use` |
| gemini    | `google.genai.Client` (`.aio`)    | `models.generate_content(model, contents, config)` | the model's Content whole (thought signatures included), then one user Content with every `function_response` (ids echoed) |

Echoed SDK objects are dumped without their None fields (`"tool_calls": null`, `"citations": null`
are refused by the APIs and by the SDKs' own request types); fields that exist only in responses
(OpenAI's message `annotations`) are left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Tuple

from .catalog import DIALECTS


@dataclass(frozen=True, init=False)
class Usage:
    """Tokens a model reported: `input_tokens` read (all input: cache reads and writes included),
    `output_tokens` written (reasoning/thinking included), `cache_read_tokens` and
    `cache_write_tokens` (the parts of the input read from / written to the provider's prompt cache,
    where it reports them). `cost` is filled in by the agent loop when it knows the model's prices
    (None: unknown). A total (`chat.usage`) keeps the usage of each step in `steps`.
    Records add up with `+` (their steps are concatenated)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost: float | None = None
    steps: tuple["Usage", ...] = field(default=(), repr=False, compare=False)

    def __init__(self, input_tokens: int = 0, output_tokens: int = 0, cache_read_tokens: int = 0,
                 cache_write_tokens: int = 0, cost: float | None = None, steps: tuple["Usage", ...] = ()):
        # Written to the instance's dict: a frozen dataclass's own __init__ sets each field through
        # object.__setattr__, about 2x the instructions (9.3K against 4.5K, valgrind), and the agent
        # loop makes one of these per reply.
        record = self.__dict__
        record["input_tokens"], record["output_tokens"] = input_tokens, output_tokens
        record["cache_read_tokens"], record["cache_write_tokens"] = cache_read_tokens, cache_write_tokens
        record["cost"], record["steps"] = cost, steps

    @property
    def tokens(self) -> int:
        """Input and output tokens together (what a token budget counts)."""
        return self.input_tokens + self.output_tokens

    def add_step(self, step: "Usage") -> "Usage":
        """These totals with `step`'s tokens and cost added and `step` kept in `steps`."""
        cost = None if self.cost is None and step.cost is None else (self.cost or 0.0) + (step.cost or 0.0)
        return Usage(self.input_tokens + step.input_tokens, self.output_tokens + step.output_tokens,
                     self.cache_read_tokens + step.cache_read_tokens,
                     self.cache_write_tokens + step.cache_write_tokens, cost, (*self.steps, step))

    def add_steps(self, steps: "list[Usage]") -> "Usage":
        """These totals with every one of `steps` added and kept in `steps`: one record however many
        steps (the agent loop sums a call's steps once, when the call ends)."""
        inputs, outputs, read, written, cost = (self.input_tokens, self.output_tokens, self.cache_read_tokens,
                                                self.cache_write_tokens, self.cost)
        for step in steps:
            inputs += step.input_tokens
            outputs += step.output_tokens
            read += step.cache_read_tokens
            written += step.cache_write_tokens
            if step.cost is not None:
                cost = (cost or 0.0) + step.cost
        return Usage(inputs, outputs, read, written, cost, (*self.steps, *steps))

    def __add__(self, other: "Usage") -> "Usage":
        cost = None if self.cost is None and other.cost is None else (self.cost or 0.0) + (other.cost or 0.0)
        return Usage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens,
                     self.cache_read_tokens + other.cache_read_tokens,
                     self.cache_write_tokens + other.cache_write_tokens, cost, self.steps + other.steps)


@dataclass(frozen=True)
class Endpoint:
    """Where a client's requests go: the dialect, the tool-definition format, the attribute path of
    the create function on the client, and whether that function returns an awaitable."""

    dialect: str
    fmt: str
    method: tuple[str, ...]
    is_async: bool
    async_method: tuple[str, ...] | None = None  # an awaitable twin on a synchronous client (Gemini's `aio`)
    stream_method: tuple[str, ...] | None = None  # where streamed replies come from, when not `method`


_METHODS = {"openai": ("chat", "completions", "create"), "responses": ("responses", "create"),
            "anthropic": ("messages", "create"), "gemini": ("models", "generate_content")}
_GEMINI_STREAM = ("models", "generate_content_stream")


def endpoint(client: Any, api: str | None = None) -> Endpoint:
    """The `Endpoint` of an SDK client, told from its class (the SDK is not imported).

    `api`: None, or "chat"/"responses" for OpenAI clients. Raises TypeError for a client of no
    supported SDK, ValueError for an `api` the client has not.
    """
    cls = type(client)
    module, name = cls.__module__ or "", cls.__name__
    root = module.split(".", 1)[0]
    if root == "openai":
        if api not in (None, "chat", "chat.completions", "responses"):
            raise ValueError(f"api={api!r}: an OpenAI client offers api='chat' (the default, Chat "
                             "Completions) or api='responses' (the Responses API)")
        dialect = "responses" if api == "responses" else "openai"
        return Endpoint(dialect, dialect, _METHODS[dialect], name.startswith("Async"))
    if api is not None:
        raise ValueError(f"api={api!r} is for OpenAI clients; a {module}.{name} has one API")
    if root == "anthropic":
        return Endpoint("anthropic", "anthropic", _METHODS["anthropic"], name.startswith("Async"))
    if module.startswith("google.genai"):
        if name == "AsyncClient":  # `client.aio`
            return Endpoint("gemini", "gemini", _METHODS["gemini"], True, None, _GEMINI_STREAM)
        return Endpoint("gemini", "gemini", _METHODS["gemini"], False, ("aio", *_METHODS["gemini"]), _GEMINI_STREAM)
    raise TypeError(f"Chat needs a provider SDK client: openai.OpenAI/AsyncOpenAI, anthropic.Anthropic/"
                    f"AsyncAnthropic or google.genai.Client; got a {module}.{name}")


def _plain(value: Any) -> Any:
    """An SDK object as plain data without its None fields; dicts and lists with theirs dropped too."""
    if value is None:  # (before getattr: a missing attribute costs an exception inside)
        return None
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return dump(exclude_none=True)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


# -- what is sent -----------------------------------------------------------------------------------
def user_turn(dialect: str, text: str) -> dict:
    """The user's prompt as one history entry."""
    if dialect == "gemini":
        return {"role": "user", "parts": [{"text": text}]}
    return {"role": "user", "content": text}


def system_turns(dialect: str, system: str | None) -> list[dict]:
    """History entries that open a conversation: OpenAI's system message (Anthropic and Gemini take
    the system prompt as a request parameter instead, see `request`)."""
    if system is None or dialect not in ("openai", "responses"):
        return []
    return [{"role": "system", "content": system}]


def request(dialect: str, model: str, history: list, system: str | None, tools: list[dict],
            options: dict, native: list[dict] = ()) -> dict:
    """The keyword arguments of one create call. `options` (the user's extra arguments) are
    forwarded; for Gemini they go into the `config` (merged into a `config=` the user gave).
    `native`: provider-hosted tools (see `native_tools`), sent after the function definitions."""
    if native:
        if dialect == "gemini":
            options = {**options, "config": {**(_plain(options.get("config")) or {}),
                                             "tools": [*(_plain(options.get("config")) or {}).get("tools", ()),
                                                       *native]}}
        else:
            tools = [*tools, *native]
    if dialect in ("openai", "responses", "anthropic"):
        kwargs = {"model": model, "input" if dialect == "responses" else "messages": history}
        if system is not None and dialect == "anthropic":
            kwargs["system"] = system
        if tools:
            kwargs["tools"] = tools
        kwargs.update(options)
        return kwargs
    if dialect == "gemini":
        config = {key: value for key, value in options.items() if key != "config"}
        if options.get("config") is not None:
            config = {**_plain(options["config"]), **config}
        if system is not None:
            config["system_instruction"] = system
        if tools:
            config["tools"] = [*config.get("tools", ()), {"function_declarations": tools}]
        return {"model": model, "contents": history, **({"config": config} if config else {})}
    raise ValueError(f"unknown dialect {dialect!r}; expected one of {', '.join(DIALECTS)}")


# -- what comes back --------------------------------------------------------------------------------
# A reply as the agent loop keeps it: (history entries, the SDK's usage record, where its calls are
# read from or None, its text); see `readers`.
Read = Tuple[list, Any, Any, str]
_OPENAI_KEPT = frozenset(("role", "content", "refusal", "tool_calls", "function_call", "audio", "name"))


def readers(dialect: str) -> tuple[Callable[[Any], Read], Callable[[dict], Read]]:
    """The functions reading a reply of `dialect`: an SDK reply, and a streamed reply put together
    by `formats.streamed` (OpenAI chat, Anthropic, Gemini: turns that are plain data without None
    fields already, recorded as they are, not copied again; Responses: the SDK's response). Picked
    once per Chat: the agent loop reads every reply. Each gives, in one pass:

    - the reply's history entries (what the next request must echo: its SDK objects dumped without
      their None fields);
    - its usage record as the SDK gave it (`usage_of` reads it; the loop does only when the usage
      is asked for);
    - where `parse_reply`/`run_tool_calls` read its calls from: the recorded entries (plain dicts:
      the SDK object is not dumped again); None when it asks for no function call (a final answer
      needs no dispatch at all);
    - its text ("" when it has none): the final answer when it called no tool.

    SDK attributes are read through `getattr`, so a field an older SDK lacks reads as absent."""
    try:
        return _READERS[dialect]
    except KeyError:
        raise ValueError(f"unknown dialect {dialect!r}; expected one of {', '.join(DIALECTS)}") from None


def _openai_reply(reply: Any) -> Read:
    choices = getattr(reply, "choices", None)
    if not choices:
        return [], getattr(reply, "usage", None), None, ""
    # Dumped whole and filtered here: pydantic's include= filter cost 0.7 us a message more (a
    # seventh of what the loop added to a step, bench/bench_chat.py).
    dumped = choices[0].message.model_dump(exclude_none=True)
    dumped.pop("annotations", None)  # only in responses
    turn = {"role": "assistant", **dumped}
    if not turn.keys() <= _OPENAI_KEPT:  # a field a newer SDK reads only from responses
        turn = {key: value for key, value in turn.items() if key in _OPENAI_KEPT}
    if isinstance(turn.get("audio"), dict):  # a previous audio answer is referred to by its id
        turn["audio"] = {"id": turn["audio"]["id"]}
    return _openai_read(turn, getattr(reply, "usage", None))


def _openai_streamed(reply: dict) -> Read:
    choices = reply.get("choices")  # the message has only what a request accepts
    if not choices:
        return [], reply.get("usage"), None, ""
    return _openai_read(choices[0]["message"], reply.get("usage"))


def _responses_reply(reply: Any) -> Read:
    return _responses_read([item.model_dump(exclude_none=True) for item in getattr(reply, "output", None) or ()],
                           getattr(reply, "usage", None))


def _anthropic_reply(reply: Any) -> Read:
    return _anthropic_read([block.model_dump(exclude_none=True) for block in getattr(reply, "content", None) or ()],
                           getattr(reply, "usage", None))


def _anthropic_streamed(reply: dict) -> Read:
    return _anthropic_read(reply.get("content") or [], reply.get("usage"))


def _gemini_reply(reply: Any) -> Read:
    candidates = getattr(reply, "candidates", None)
    content = getattr(candidates[0], "content", None) if candidates else None
    return _gemini_read(None if content is None else content.model_dump(exclude_none=True),
                        getattr(reply, "usage_metadata", None))


def _gemini_streamed(reply: dict) -> Read:
    candidates = reply.get("candidates")
    return _gemini_read(candidates[0].get("content") if candidates else None, reply.get("usage_metadata"))


def _openai_read(turn: dict, usage: Any) -> Read:
    source = turn if turn.get("tool_calls") or turn.get("function_call") else None
    return [turn], usage, source, turn.get("content") or turn.get("refusal") or ""


def _responses_read(items: list[dict], usage: Any) -> Read:
    calls, texts = False, []
    for item in items:
        kind = item.get("type")
        if kind == "function_call":
            calls = True
        elif kind == "message":
            for part in item.get("content") or ():
                kind = part.get("type")
                if kind == "output_text":
                    texts.append(part.get("text") or "")
                elif kind == "refusal":
                    texts.append(part.get("refusal") or "")
    return items, usage, {"object": "response", "output": items} if calls else None, "".join(texts)


def _anthropic_read(blocks: list[dict], usage: Any) -> Read:
    turn = {"role": "assistant", "content": blocks}
    calls, texts = False, []
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            texts.append(block.get("text") or "")
        elif kind == "tool_use":
            calls = True
    return [turn], usage, turn if calls else None, "".join(texts)


def _gemini_read(content: dict | None, usage: Any) -> Read:
    if content is None:
        return [], usage, None, ""
    content.setdefault("role", "model")
    calls, texts = False, []
    for part in content.get("parts") or ():
        if "function_call" in part or "functionCall" in part:
            calls = True
        elif part.get("text") and not part.get("thought"):
            texts.append(part["text"])
    return [content], usage, content if calls else None, "".join(texts)


_READERS = {"openai": (_openai_reply, _openai_streamed), "responses": (_responses_reply, _responses_reply),
            "anthropic": (_anthropic_reply, _anthropic_streamed), "gemini": (_gemini_reply, _gemini_streamed)}


def usage_of(dialect: str, usage: Any) -> Usage:
    """The tokens of a reply's usage record (the SDK's object; None: zeros)."""
    if usage is None:
        return Usage()
    if dialect == "openai":
        details = getattr(usage, "prompt_tokens_details", None)
        return Usage(getattr(usage, "prompt_tokens", None) or 0, getattr(usage, "completion_tokens", None) or 0,
                     0 if details is None else getattr(details, "cached_tokens", None) or 0)
    if dialect == "responses":
        details = getattr(usage, "input_tokens_details", None)
        return Usage(getattr(usage, "input_tokens", None) or 0, getattr(usage, "output_tokens", None) or 0,
                     0 if details is None else getattr(details, "cached_tokens", None) or 0)
    if dialect == "anthropic":
        read = getattr(usage, "cache_read_input_tokens", None) or 0
        written = getattr(usage, "cache_creation_input_tokens", None) or 0
        return Usage((getattr(usage, "input_tokens", None) or 0) + read + written,
                     getattr(usage, "output_tokens", None) or 0, read, written)
    return Usage((getattr(usage, "prompt_token_count", None) or 0)
                 + (getattr(usage, "tool_use_prompt_token_count", None) or 0),
                 (getattr(usage, "candidates_token_count", None) or 0)
                 + (getattr(usage, "thoughts_token_count", None) or 0),
                 getattr(usage, "cached_content_token_count", None) or 0)


def result_turns(dialect: str, message: Any) -> list:
    """`run_tool_calls`' answer as history entries (a list in the OpenAI dialects, one message else)."""
    if not message:
        return []
    return list(message) if dialect in ("openai", "responses") else [message]


def paused(dialect: str, reply: Any) -> bool:
    """Whether the provider paused a long turn (Anthropic's `pause_turn`, e.g. a server tool still
    running): the reply is not an answer, and the history is sent again as it is to let it go on."""
    return dialect == "anthropic" and _field(reply, "stop_reason") == "pause_turn"


# -- provider-hosted tools ------------------------------------------------------------------------------
# Words in a hosted tool's type that mean the provider runs code, a shell or a computer for the model.
DANGEROUS_NATIVE = ("code_execution", "code_interpreter", "shell", "computer", "bash")
# The same words as `_normal` spells them: a type is compared after normalising, so the REST API's
# `codeExecution`, `Code-Execution` or full-width letters name the same tool as `code_execution`.
_DANGEROUS = tuple(word.replace("_", "") for word in DANGEROUS_NATIVE)


def _normal(text: Any) -> str:
    """A tool type or key as compared: compatibility-normalised (full-width letters...), case-folded,
    letters and digits only."""
    import unicodedata

    return "".join(char for char in unicodedata.normalize("NFKC", str(text)).casefold() if char.isalnum())


def dangerous_kind(dialect: str, tool: dict) -> str | None:
    """The type (Gemini: the key) by which hosted tool `tool` runs code, a shell or a computer for the
    model, or None. Gemini names a hosted tool by its key (`{"code_execution": {}}`), the others by
    `type`; every spelling a provider may accept is read alike (`_normal`)."""
    kinds = list(tool) if dialect == "gemini" else [tool.get("type")]
    for kind in kinds:
        if kind is not None and any(word in _normal(kind) for word in _DANGEROUS):
            return str(kind)
    return None


def native_tools(dialect: str, tools: Any, allow_dangerous: bool) -> list[dict]:
    """Provider-hosted tools as they are sent (plain dicts, in the provider's own shape: Anthropic
    `{"type": "web_search_20250305", "name": "web_search"}`, Responses `{"type": "web_search"}`,
    Gemini `{"google_search": {}}`). Raises ValueError for an entry that is not such a tool, and for
    one that runs code, a shell or a computer unless `allow_dangerous`."""
    if tools is None:
        return []
    if not isinstance(tools, (list, tuple)):
        raise TypeError(f"native_tools=: expected a list of provider-hosted tool definitions; got a "
                        f"{type(tools).__name__}")
    kept = []
    for tool in map(_plain, tools):
        if not isinstance(tool, dict) or not tool:
            raise ValueError(f"native_tools=: each entry is a dict in the provider's own shape (e.g. "
                             f"{_NATIVE_EXAMPLES.get(dialect, '{...}')}); got {tool!r}")
        kind = str(tool.get("type") or "") if dialect != "gemini" else " ".join(map(str, tool))
        if not kind:
            raise ValueError(f"native_tools=: {tool!r} names no tool type; e.g. {_NATIVE_EXAMPLES.get(dialect)}")
        if not allow_dangerous:
            _refuse_dangerous(dialect, tool, "native_tools=")
        kept.append(tool)
    return kept


def check_hosted_options(dialect: str, options: dict, allow_dangerous: bool) -> None:
    """Raise ValueError, as `native_tools` does, for a tool that runs code, a shell or a computer
    given in the create call's other arguments (Gemini's `config={"tools": [...]}`, an SDK's
    `extra_body={"tools": [...]}`...): every list under a key spelled "tools", at any depth."""
    if allow_dangerous or not options:
        return
    pending: list[tuple[str, Any, int]] = [(name, value, 0) for name, value in options.items()]
    seen = 0
    while pending:
        where, value, depth = pending.pop()
        seen += 1
        if depth > 16 or seen > 10_000:  # arguments are a person's settings: a bound, not a limit met
            raise ValueError(f"{where}: too deeply nested or too large to check for hosted tools")
        value = _plain(value)
        if isinstance(value, dict):
            for key, item in value.items():
                if _normal(key) == "tools" and isinstance(item, (list, tuple)):
                    for tool in map(_plain, item):
                        if isinstance(tool, dict):
                            _refuse_dangerous(dialect, tool, f"{where}[{key!r}]")
                elif not isinstance(item, _SCALARS):
                    pending.append((f"{where}[{key!r}]", item, depth + 1))
        elif isinstance(value, (list, tuple)):
            pending.extend((f"{where}[{index}]", item, depth + 1) for index, item in enumerate(value)
                           if not isinstance(item, _SCALARS))


_SCALARS = (str, bytes, int, float, type(None))


def _refuse_dangerous(dialect: str, tool: dict, where: str) -> None:
    kind = dangerous_kind(dialect, tool)
    if kind is not None:
        raise ValueError(f"{where}: {kind!r} lets the provider run code, a shell or a computer for the model; "
                         "pass allow_dangerous_native_tools=True to Chat if that is what you want")


_NATIVE_EXAMPLES = {"anthropic": '{"type": "web_search_20250305", "name": "web_search"}',
                    "responses": '{"type": "web_search"}', "openai": '{"type": "web_search"} (Responses API)',
                    "gemini": '{"google_search": {}}'}


def _field(value: Any, name: str) -> Any:
    """`value.name` of an SDK object or `value[name]` of a dict (None when absent)."""
    if value is None:
        return None
    if isinstance(value, dict):
        return value.get(name)
    return getattr(value, name, None)


__all__ = ["Usage", "Endpoint", "endpoint", "user_turn", "system_turns", "request", "readers", "usage_of",
           "result_turns", "paused", "native_tools", "check_hosted_options", "dangerous_kind", "DANGEROUS_NATIVE"]
