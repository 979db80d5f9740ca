"""Streamed model replies: each provider's stream events put back together into the reply the
same request would have returned without streaming (so the agent loop records the same history).

| dialect   | streaming call                                         | what is put together |
|-----------|--------------------------------------------------------|----------------------|
| openai    | `chat.completions.create(stream=True, stream_options={"include_usage": True})` | chunks: the message's text, refusal and tool calls (`tool_calls[i]` by `index`: id and name once, arguments in pieces), finish reason, usage (last chunk, no choices) |
| responses | `responses.create(stream=True)`                        | nothing: `response.completed` (or `.incomplete`/`.failed`) carries the whole response; text comes from `response.output_text.delta` |
| anthropic | `messages.create(stream=True)`                         | `message_start`'s message; each block from `content_block_start`, with `text_delta`, `input_json_delta` (the input as JSON pieces), `thinking_delta`, `signature_delta`, `citations_delta`; `message_delta`'s stop reason and usage |
| gemini    | `models.generate_content_stream(...)`                  | every chunk's parts in order (text pieces of the same kind joined), the last usage and finish reason |

An `Assembler` is fed one event at a time (`feed` returns the text the event adds, for a live
view) and gives the reply (`reply()`), which `turns` reads like an SDK reply: for OpenAI chat,
Anthropic and Gemini a `dict` (exactly: the agent loop tells it from an SDK reply by its type)
whose turns are plain data without None fields (recorded as they are, not copied again; a usage
may stay the SDK's object), the SDK's own response for Responses. Events are the SDKs' objects,
read by attribute; nothing is imported here.
"""

from __future__ import annotations

import json
from typing import Any

from .turns import _field, _plain


class Assembler:
    """Puts one streamed reply together (see the module docstring). Subclasses per dialect."""

    def feed(self, event: Any) -> str:
        raise NotImplementedError

    def reply(self) -> Any:
        raise NotImplementedError


class OpenAIChunks(Assembler):
    def __init__(self) -> None:
        self.text: list[str] = []
        self.refusal: list[str] = []
        self.calls: dict[int, dict] = {}
        self.finish: Any = None
        self.usage: Any = None

    def feed(self, chunk: Any) -> str:
        choices = chunk.choices
        if not choices:  # the usage chunk (stream_options include_usage) has no choices
            self.usage = chunk.usage or self.usage  # the SDK's object: only the message is recorded
            return ""
        choice = choices[0]
        if choice.finish_reason:
            self.finish = choice.finish_reason
            self.usage = chunk.usage or self.usage
        delta = choice.delta
        if delta is None:
            return ""
        if delta.tool_calls:
            for piece in delta.tool_calls:
                call = self.calls.get(piece.index or 0)
                if call is None:
                    call = self.calls[piece.index or 0] = {"id": None, "name": [], "arguments": []}
                call["id"] = piece.id or call["id"]
                function = piece.function
                if function is not None:
                    call["name"].append(function.name or "")
                    call["arguments"].append(function.arguments or "")
        if delta.refusal:
            self.refusal.append(delta.refusal)
        text = delta.content
        if text:
            self.text.append(text)
            return text
        return ""

    def reply(self) -> dict:
        message: dict[str, Any] = {"role": "assistant"}
        if self.text:
            message["content"] = "".join(self.text)
        if self.refusal:
            message["refusal"] = "".join(self.refusal)
        if self.calls:
            message["tool_calls"] = [{**({"id": call["id"]} if call["id"] is not None else {}), "type": "function",
                                      "function": {"name": "".join(call["name"]),
                                                   "arguments": "".join(call["arguments"])}}
                                     for _index, call in sorted(self.calls.items())]
        choice: dict[str, Any] = {"index": 0, "message": message}
        if self.finish is not None:
            choice["finish_reason"] = self.finish
        return {"object": "chat.completion", "choices": [choice],
                **({"usage": self.usage} if self.usage is not None else {})}


class ResponsesEvents(Assembler):
    # reply(): the SDK's response, as `response.completed` carries it
    _FINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})

    def __init__(self) -> None:
        self.response: Any = None

    def feed(self, event: Any) -> str:
        kind = event.type
        if kind == "response.output_text.delta":
            return event.delta or ""
        if kind in self._FINAL:
            self.response = event.response
        elif kind == "error":
            raise RuntimeError(f"the Responses stream ended with an error: {_field(event, 'message')} "
                               f"(code {_field(event, 'code')})")
        return ""

    def reply(self) -> Any:
        if self.response is None:
            raise RuntimeError("the Responses stream ended without its response.completed event; "
                               "the reply is incomplete (try again, or without stream=True)")
        return self.response


_ANTHROPIC_COUNTS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


class _MergedUsage:
    """message_start's usage with the counts message_delta's carries, read like the SDK's record
    (`turns.usage_of`). Merged when read: the loop reads a reply's usage only when asked for it,
    and merging at every reply was a seventh of a streamed Anthropic step's own work."""

    __slots__ = ("start", "delta")

    def __init__(self, start: Any, delta: Any):
        self.start, self.delta = start, delta

    def __getattr__(self, name: str) -> Any:
        if name not in _ANTHROPIC_COUNTS:
            raise AttributeError(name)
        value = getattr(self.delta, name, None)
        return getattr(self.start, name, None) if value is None else value


class AnthropicEvents(Assembler):
    def __init__(self) -> None:
        self.message: dict = {}  # what the loop reads besides the blocks: stop reason and usage
        self.blocks: list[dict] = []
        self.json: dict[int, list[str]] = {}

    def feed(self, event: Any) -> str:
        kind = event.type
        if kind == "content_block_delta":
            index, delta = event.index, event.delta
            block, what = self.blocks[index], delta.type
            if what == "text_delta":
                text = delta.text or ""
                block["text"] = block.get("text", "") + text
                return text
            if what == "input_json_delta":
                self.json.setdefault(index, []).append(delta.partial_json or "")
            elif what == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + (_field(delta, "thinking") or "")
            elif what == "signature_delta":
                block["signature"] = _field(delta, "signature")
            elif what == "citations_delta":
                block.setdefault("citations", []).append(_plain(_field(delta, "citation")))
        elif kind == "content_block_start":
            self.blocks.append(event.content_block.model_dump(exclude_none=True))
        elif kind == "content_block_stop":
            index = event.index
            pieces = self.json.pop(index, None)
            if pieces is not None:
                text = "".join(pieces)
                self.blocks[index]["input"] = json.loads(text) if text.strip() else {}
        elif kind == "message_start":  # the message's id, model... are not needed: only what is read
            message = event.message
            self.message = {"type": "message", "role": "assistant", "usage": message.usage}
            if message.stop_reason is not None:
                self.message["stop_reason"] = message.stop_reason
            if getattr(message, "container", None) is not None:  # code execution's (see `callers`)
                self.message["container"] = _plain(message.container)
        elif kind == "message_delta":
            if event.delta.stop_reason is not None:
                self.message["stop_reason"] = event.delta.stop_reason
            if getattr(event.delta, "container", None) is not None:
                self.message["container"] = _plain(event.delta.container)
            if event.usage is not None:  # the counts it has replace message_start's
                self.message["usage"] = _MergedUsage(self.message.get("usage"), event.usage)
        elif kind == "error":
            error = _plain(_field(event, "error")) or {}
            raise RuntimeError(f"the Anthropic stream ended with an error: {error.get('type')}: {error.get('message')}")
        return ""

    def reply(self) -> dict:
        return {**self.message, "content": self.blocks}


_TEXT_PART = frozenset(("text", "thought", "thought_signature"))  # a text part's keys
_OPEN_TEXT_PART = frozenset(("text", "thought"))  # ... when no signature closed it yet


class GeminiChunks(Assembler):
    def __init__(self) -> None:
        self.parts: list[dict] = []
        self.usage: Any = None
        self.finish: Any = None
        self.role = "model"

    def feed(self, chunk: Any) -> str:
        self.usage = chunk.usage_metadata or self.usage  # a running total: the last one counts
        candidates = chunk.candidates
        if not candidates:
            return ""
        self.finish = candidates[0].finish_reason or self.finish
        content = candidates[0].content
        if content is None:
            return ""
        self.role = content.role or self.role
        added = ""
        parts = self.parts
        for part in content.parts or ():
            part = part.model_dump(exclude_none=True)
            text = part.get("text")
            if not isinstance(text, str):  # a call, a file...: a part of its own
                parts.append(part)
                continue
            previous = parts[-1] if parts else None
            if (previous is not None and isinstance(previous.get("text"), str)
                    and part.keys() <= _TEXT_PART and previous.keys() <= _OPEN_TEXT_PART
                    and bool(part.get("thought")) == bool(previous.get("thought"))):
                previous["text"] += text  # a piece of the same text part (one a signature closed is not)
                if "thought_signature" in part:
                    previous["thought_signature"] = part["thought_signature"]
            else:
                parts.append(part)
            if not part.get("thought"):
                added += text
        return added

    def reply(self) -> dict:
        candidate: dict[str, Any] = {"content": {"role": self.role, "parts": self.parts}}
        if self.finish is not None:
            candidate["finish_reason"] = self.finish
        # the usage stays the SDK's object: only the content is recorded (turns reads either)
        return {"candidates": [candidate], **({"usage_metadata": self.usage} if self.usage is not None else {})}


_ASSEMBLERS = {"openai": OpenAIChunks, "responses": ResponsesEvents, "anthropic": AnthropicEvents,
               "gemini": GeminiChunks}


def assembler(dialect: str) -> Assembler:
    """A new `Assembler` for one streamed reply of `dialect`."""
    return _ASSEMBLERS[dialect]()


def stream_options(dialect: str) -> dict:
    """The create call's extra arguments that ask for a stream (none for Gemini: it has its own call)."""
    if dialect == "openai":
        return {"stream": True, "stream_options": {"include_usage": True}}
    if dialect in ("responses", "anthropic"):
        return {"stream": True}
    return {}


__all__ = ["Assembler", "assembler", "stream_options"]
