"""Model replies read back: the tool calls in a reply of any supported provider, and the message
that carries their results back to that provider.

Replies may be dicts or SDK objects (read through `model_dump()`; the SDKs are never imported).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable

from .callers import answer_fields, caller_of
from .catalog import DIALECTS


@dataclass(frozen=True)
class ToolCallRequest:
    """One tool call a model asked for.

    Fields:
        id: the provider's call id (tool_call_id, call_id, tool_use id, Gemini function_call.id),
            None when the provider sent none (older Gemini models).
        name: the tool name as the model sent it (possibly a provider-mapped form, see `wire_name`).
        arguments: as sent: JSON text (OpenAI) or a dict (Anthropic, Gemini).
        caller: None when the model called the tool itself; the caller as the reply gave it when
            code the model wrote called it (provider-native programmatic calling, see `callers`).
    """

    id: str | None
    name: str
    arguments: Any
    caller: dict | None = None


@dataclass(frozen=True)
class ToolResult:
    """The outcome of one tool call, ready to go back to the model.

    Fields:
        request: the call this answers.
        content: text for the model (the serialised result, or the error text).
        value: the result as a JSON-able value (Gemini's `{"result": value}`); the error text on failure.
        is_error: whether the call was refused or failed.
        parts: for a rich result (an image, audio, a resource, or a list mixing them with text; see
            `content.content_parts`), its parts in order, each a `str` or an `nbtools.content`
            record; `content` is then their text with each record described. Empty otherwise.
    """

    request: ToolCallRequest
    content: str
    value: Any
    is_error: bool
    parts: tuple = ()


_RESPONSES_ITEM_TYPES = frozenset({
    "message", "function_call", "function_call_output", "reasoning", "web_search_call",
    "file_search_call", "computer_call", "code_interpreter_call", "image_generation_call",
    "local_shell_call", "mcp_call", "mcp_list_tools", "mcp_approval_request", "custom_tool_call",
    "shell_call", "apply_patch_call", "compaction", "program", "program_output", "tool_search_call",
    "tool_search_output", "additional_tools"})
_ANTHROPIC_BLOCK_TYPES = frozenset({
    "text", "tool_use", "thinking", "redacted_thinking", "server_tool_use", "web_search_tool_result",
    "web_fetch_tool_result", "code_execution_tool_result", "bash_code_execution_tool_result",
    "text_editor_code_execution_tool_result", "mcp_tool_use", "mcp_tool_result",
    "container_upload", "tool_result", "image", "document", "search_result"})
_GEMINI_PART_KEYS = frozenset({"text", "function_call", "functionCall", "function_response",
                               "functionResponse", "inline_data", "inlineData", "file_data", "fileData",
                               "executable_code", "executableCode", "code_execution_result",
                               "codeExecutionResult", "thought", "thought_signature", "thoughtSignature"})


def _plain(value: Any) -> Any:
    """An SDK (pydantic) object as plain data; anything else unchanged."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return dump()
    return value


def _describe(value: Any, nested: bool = False) -> str:
    """What `value` is, in a few words (one level of a list looked into, keys cut)."""
    if isinstance(value, dict):
        keys = ", ".join(repr(key)[:60] for key in list(value)[:8])
        return f"a dict with keys {keys}" if keys else "an empty dict"
    if isinstance(value, list):
        first = f" (first: {_describe(_plain(value[0]), True)})" if value and not nested else ""
        return f"a list of {len(value)} items{first}"
    return f"a {type(value).__module__}.{type(value).__qualname__}"


def _unrecognised(reply: Any) -> ValueError:
    return ValueError(
        f"unrecognised model reply: got {_describe(reply)}; expected an OpenAI chat completion or its "
        "message, an OpenAI Responses response or its output list, an Anthropic message or its content "
        "list, or a Gemini response, content or parts list (dicts or SDK objects)")


def parse_reply(reply: Any) -> tuple[str, list[ToolCallRequest]]:
    """The provider dialect of `reply` and the tool calls in it (in order; parallel calls included).

    The dialect is "openai", "responses", "anthropic" or "gemini". A reply without tool calls gives
    an empty list; a shape none of them has, or one of theirs with a part of the wrong kind (a
    `function` that is not an object, a `content` that is not a list...), raises `ValueError`
    naming what was received. Nothing in a reply is walked recursively.
    """
    try:
        return _parse_reply(reply)
    except ValueError:
        raise
    except Exception as error:  # AttributeError, TypeError...: a part of the wrong kind somewhere
        raise ValueError(f"malformed model reply ({type(error).__name__}: {str(error)[:200]}); got "
                         f"{_describe(_plain(reply))}; expected an OpenAI, Anthropic or Gemini reply as the "
                         "SDK or its JSON gives it") from None


def _parse_reply(reply: Any) -> tuple[str, list[ToolCallRequest]]:
    data = _plain(reply)
    if isinstance(data, list):
        return _parse_list([_plain(item) for item in data], reply)
    if not isinstance(data, dict):
        raise _unrecognised(reply)
    if isinstance(data.get("choices"), list):  # chat completion
        choices = data["choices"]
        if not choices:
            return "openai", []
        first = _plain(choices[0])
        message = first.get("message") if isinstance(first, dict) else None
        if not isinstance(message, dict):
            raise _unrecognised(reply)
        return "openai", _openai_calls(message)
    if isinstance(data.get("output"), list) and (data.get("object") == "response" or "output_text" in data
                                                 or all(isinstance(item, dict) and "type" in item
                                                        for item in data["output"])):
        return "responses", _responses_calls(data["output"])
    if "candidates" in data:  # Gemini GenerateContentResponse
        candidates = data.get("candidates") or []
        if not candidates:
            return "gemini", []
        content = _plain(candidates[0]).get("content") or {}
        return "gemini", _gemini_calls(_plain(content).get("parts") or [])
    if isinstance(data.get("content"), dict) and "parts" in data["content"]:  # a Gemini candidate
        return "gemini", _gemini_calls(data["content"].get("parts") or [])
    if "parts" in data and (data.get("parts") is None or isinstance(data["parts"], list)):  # Gemini Content
        return "gemini", _gemini_calls(data.get("parts") or [])
    if data.get("type") == "message" and isinstance(data.get("content"), list):  # Anthropic Message
        return "anthropic", _anthropic_calls(data["content"])
    if "role" in data and ("tool_calls" in data or "function_call" in data
                           or data.get("content") is None or isinstance(data.get("content"), str)):
        return "openai", _openai_calls(data)
    if data.get("role") == "assistant" and isinstance(data.get("content"), list):
        # An assistant message with content blocks: Anthropic's (OpenAI's content is text).
        return "anthropic", _anthropic_calls(data["content"])
    raise _unrecognised(reply)


def _parse_list(items: list, reply: Any) -> tuple[str, list[ToolCallRequest]]:
    if not items:
        raise ValueError("unrecognised model reply: an empty list does not say which provider it comes "
                         "from; pass the whole response or message instead")
    if all(isinstance(item, dict) for item in items):
        types = {item.get("type") for item in items}
        if types <= _RESPONSES_ITEM_TYPES:
            return "responses", _responses_calls(items)
        if types <= _ANTHROPIC_BLOCK_TYPES:
            return "anthropic", _anthropic_calls(items)
        if all(item.get("type") is None and (set(item) & _GEMINI_PART_KEYS) for item in items):
            return "gemini", _gemini_calls(items)
    raise _unrecognised(reply)


def _openai_calls(message: dict) -> list[ToolCallRequest]:
    calls = []
    for call in message.get("tool_calls") or ():
        call = _plain(call)
        if not isinstance(call, dict):
            raise ValueError(f"malformed OpenAI reply: a tool call is {_describe(call)}, expected an object")
        if call.get("type", "function") != "function":
            continue  # custom/grammar tools are not ours to run
        function = _plain(call.get("function")) or {}
        if not isinstance(function, dict):
            raise ValueError(f"malformed OpenAI reply: the tool call's \"function\" is {_describe(function)}, "
                             "expected an object with \"name\" and \"arguments\"")
        calls.append(ToolCallRequest(call.get("id"), function.get("name", ""), function.get("arguments")))
    legacy = _plain(message.get("function_call"))
    if not calls and isinstance(legacy, dict):  # the deprecated single function_call
        calls.append(ToolCallRequest(None, legacy.get("name", ""), legacy.get("arguments")))
    return calls


def _responses_calls(items: Iterable[Any]) -> list[ToolCallRequest]:
    return _typed_calls(items, "function_call", "call_id", "arguments", "responses")


def _anthropic_calls(blocks: Iterable[Any]) -> list[ToolCallRequest]:
    return _typed_calls(blocks, "tool_use", "id", "input", "anthropic")


def _typed_calls(items: Iterable[Any], kind: str, id_key: str, arguments_key: str,
                 dialect: str) -> list[ToolCallRequest]:
    """The calls among `items` (dicts or SDK objects) whose "type" is `kind`."""
    calls = []
    for item in map(_plain, items):
        if isinstance(item, dict) and item.get("type") == kind:
            caller = caller_of(dialect, item) if item.get("caller") is not None else None
            calls.append(ToolCallRequest(item.get(id_key), item.get("name", ""), item.get(arguments_key), caller))
    return calls


def _gemini_calls(parts: Iterable[Any]) -> list[ToolCallRequest]:
    calls = []
    for part in parts:
        part = _plain(part)
        if not isinstance(part, dict):
            continue
        call = _plain(part.get("function_call") or part.get("functionCall"))
        if isinstance(call, dict):
            args = call.get("args")
            calls.append(ToolCallRequest(call.get("id") or None, call.get("name") or "",
                                         {} if args is None else args))
    return calls


def _json_value(result: ToolResult) -> Any:
    """The result as JSON data for Gemini's `{"result": ...}`: `value` when it is plain JSON, else the
    parsed `content` text (the serialised value), else that text itself."""
    try:
        json.dumps(result.value, allow_nan=False)
        return result.value
    except (TypeError, ValueError):
        pass
    try:
        return json.loads(result.content)
    except ValueError:
        return result.content


# The image types Anthropic accepts in an image block; others are described in text.
ANTHROPIC_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})


def anthropic_result_content(result: ToolResult) -> Any:
    """A `tool_result`'s content: its text, or, when the result has an image Anthropic accepts, a list
    of text and image blocks in the result's order (other records described in text)."""
    from ..content import Image, describe

    def is_image(part: Any) -> bool:
        return isinstance(part, Image) and part.mime in ANTHROPIC_IMAGE_TYPES

    if result.is_error or not any(is_image(part) for part in result.parts):
        return result.content
    blocks: list[dict[str, Any]] = []
    texts: list[str] = []
    for part in result.parts:
        if is_image(part):
            if texts:  # consecutive text parts make one text block
                blocks.append({"type": "text", "text": "\n".join(texts)})
                texts = []
            blocks.append({"type": "image", "source": {"type": "base64", "media_type": part.mime,
                                                       "data": part.base64()}})
        else:
            text = part if isinstance(part, str) else describe(part)
            if text:  # Anthropic refuses empty text blocks
                texts.append(text)
    if texts:
        blocks.append({"type": "text", "text": "\n".join(texts)})
    return blocks


def result_message(dialect: str, results: list[ToolResult]) -> Any:
    """What carries `results` back to the model, in `dialect`'s shape.

    openai: a list of `{"role": "tool", "tool_call_id", "content"}` messages (`{"role": "function",
    "name", "content"}` for the deprecated `function_call`, which has no id); responses: a list of
    `{"type": "function_call_output", "call_id", "output"}` items (with the call's `caller` when code
    the model wrote made it); anthropic: one user message of
    `tool_result` blocks (`is_error: true` only on failures; a result with an image carries image and
    text blocks, see `anthropic_result_content`); gemini: one user content of
    `function_response` parts with `response` `{"result": value}` or `{"error": text}` (no `id` when
    the call had none). Rich results reach the dialects other than anthropic as text that says what
    was produced (`content.describe`: "[image produced: image/png, 1234 bytes]"). A reply without tool calls gets `[]` in the list dialects and None in the
    message dialects: Anthropic and Gemini reject an empty user message, and either way the result
    is falsy, so `while results := run_tool_calls(reply): ...` ends when the model stops calling.
    """
    if not results and dialect in ("anthropic", "gemini"):
        return None
    if dialect == "openai":
        # a call without an id came from the deprecated `function_call`, answered by a `function` message
        return [{"role": "tool", "tool_call_id": result.request.id, "content": result.content}
                if result.request.id is not None else
                {"role": "function", "name": result.request.name, "content": result.content}
                for result in results]
    if dialect == "responses":
        return [{"type": "function_call_output", "call_id": result.request.id, "output": result.content,
                 **answer_fields(dialect, result.request.caller)} for result in results]
    if dialect == "anthropic":
        blocks = []
        for result in results:
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": result.request.id,
                                     "content": anthropic_result_content(result)}
            if result.is_error:
                block["is_error"] = True
            blocks.append(block)
        return {"role": "user", "content": blocks}
    if dialect == "gemini":
        parts = []
        for result in results:
            response = {"error": result.content} if result.is_error else {"result": _json_value(result)}
            function_response: dict[str, Any] = {"name": result.request.name}
            if result.request.id is not None:
                function_response["id"] = result.request.id
            function_response["response"] = response
            parts.append({"function_response": function_response})
        return {"role": "user", "parts": parts}
    raise ValueError(f"unknown reply dialect {dialect!r}; expected one of {', '.join(DIALECTS)}")


__all__ = ["ToolCallRequest", "ToolResult", "parse_reply", "result_message"]
