"""Results for the model: a tool's return value as text (and JSON data), and whole model replies.

`run_tool_calls` takes a provider's reply, runs every tool call in it through `call_func` (the
namespace's approval and limits included) and answers in that provider's tool-result format
(`formats` reads the reply and writes the answer). A failing call is an error result for the
model; it never loses the other calls' results. A call that code the model wrote made (its
`caller`: provider-native programmatic calling) goes through the same path, asked for by
`<origin>/code` (`call/code`, `chat:<model>/code`). A call by a caller the tool's `callers` leave
out is refused before anything is asked: the model's own call to a code-only tool, or a call from
code to a direct-only one (`callers` says what the model may do; the person's own `registry.call`
and `call_func` are not checked).
"""

from __future__ import annotations

import asyncio
import json
import types
from typing import Any

from ..content import Content, content_parts, describe
from ..errors import CallRefused, ToolCallError
from ..policy import DEFAULT_LIMITS, asking_as, current_origin
from ..values import to_json
from .items import Items, read_items
from .namespace import check_namespace, resolve_tool, settings
from .invoke import call_func, call_func_async, run_awaitable
from ..refusals import exception_text
from ..shortening import middle


def result_text(value: Any, max_chars: int = DEFAULT_LIMITS.max_result_chars) -> str:
    """The text a model gets for a tool's return value.

    A `str` as it is; a value whose JSON form is text (a datetime, a Path, an object shown by its
    `str()`) as that text; anything else as JSON (see `values.to_json`), `None` as `null`; a generator
    as the list of what it yields, read only until that list's text passes `max_chars` (see
    `items`). Text longer than `max_chars` is cut in the middle (its start and its last quarter
    kept: an error stands at the end), with a marker saying how much was left out.
    Raises ToolCallError when the value cannot be rendered (its `str()` raised, say).
    """
    return rendered(value, max_chars)[1]


def rendered(value: Any, max_chars: int, name: str | None = None) -> tuple[Any, str]:
    """(JSON data, text) of a result; when the text had to be cut, the data is the cut text too.

    Raises ToolCallError (naming tool `name`) when the value cannot be rendered: the tool ran, and
    the model is told so rather than getting an internal error.
    """
    try:
        return _rendered(value, max_chars)
    except ToolCallError:
        raise
    except Exception as error:
        raise ToolCallError(name, "the tool ran, but its result could not be rendered as text "
                                  f"({exception_text(error)})") from error


def _rendered(value: Any, max_chars: int) -> tuple[Any, str]:
    if type(value) is types.GeneratorType:
        value = read_items(value, max_chars)
    if type(value) is str:
        data: Any = value
        text = value
    else:
        data = to_json(value)
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    if isinstance(value, Items) and value.cut:
        text = (text[:max_chars] + f"\n[truncated: reading stopped after {len(value)} items, at the result "
                f"size limit of {max_chars} characters; the tool may have yielded more]")
        data = text
    elif len(text) > max_chars:  # its start and last quarter (`shortening.middle`): printed output must not hide an error
        text = data = middle(text, max_chars, max_chars // 4,
                             f"\n[truncated: {len(text) - max_chars} of {len(text)} characters not shown]")
    return data, text


# ==================================================================================================
# A whole model reply: run every call, answer in the provider's format
# ==================================================================================================
def _result_for(request: Any, value: Any, error: BaseException | None, max_chars: int) -> Any:
    from ..formats import ToolResult

    name = getattr(request, "name", None)
    if error is None:
        try:
            parts = rich_parts(value, max_chars)
            if parts is not None:
                joined = "\n".join(part if isinstance(part, str) else describe(part) for part in parts)
                text = rendered(joined, max_chars, name)[1]
                return ToolResult(request, text, text, False, parts)
            data, text = rendered(value, max_chars, name)
            return ToolResult(request, text, data, False)
        except ToolCallError as failure:
            error = failure
    text = str(error) if isinstance(error, ToolCallError) else \
        str(ToolCallError(name, f"internal error: {exception_text(error)}"))
    return ToolResult(request, text, text, True)


_PLAIN = frozenset({str, int, float, bool, type(None), dict})


def rich_parts(value: Any, max_chars: int) -> tuple | None:
    """A rich result (see `content.content_parts`: an image, a PIL image, a matplotlib figure, ...,
    or a list mixing such with other values) as `str` and content records in order; None otherwise.

    Items that are neither become their text (`result_text`), each cut at `max_chars`.
    """
    kind = type(value)
    if kind in _PLAIN or (kind in (list, tuple) and all(type(item) in _PLAIN for item in value)):
        return None  # the common results, decided without looking for rich objects
    parts = content_parts(value)
    if parts is None:
        return None
    return tuple(part if isinstance(part, Content) else rendered(part, max_chars)[1] for part in parts)


def _from_code(request: Any, ns: Any) -> asking_as:
    """A call that code the model wrote made (a reply's call with a `caller`: provider-native
    programmatic calling) runs as a direct call does, asked for by `<origin>/code`; a tool whose
    `callers` leave out "code" is refused (the provider should not have let the code call it)."""
    tool = resolve_tool(request.name, ns)
    if tool.callers is not None and "code" not in tool.callers:
        raise CallRefused(request.name, "refused: this tool may not be called from code (its callers are "
                                        f"{', '.join(tool.callers)}); call it directly")
    return asking_as(f"{current_origin()}/code")


def _direct(request: Any, ns: Any) -> None:
    """The model's own call (a reply's call without a `caller`): refused when the tool's `callers`
    leave out "direct" (a tool offered only to the model's code). `callers` is about what the model
    may do: the person's own calls (`registry.call`, `call_func`) are not checked."""
    try:
        tool = resolve_tool(request.name, ns)
    except ToolCallError:  # an unknown name: `call_func` says so
        return
    if tool.callers is not None and "direct" not in tool.callers:
        raise CallRefused(request.name, "refused: this tool may only be called from code (its callers are "
                                        f"{', '.join(tool.callers)}); call it from the code you run, not directly")


async def _run_one_async(request: Any, ns: Any, max_chars: int) -> tuple[Any, Any]:
    try:
        if getattr(request, "caller", None) is not None:
            with _from_code(request, ns):
                value = await call_func_async(request.name, request.arguments, ns=ns)
        else:
            _direct(request, ns)
            value = await call_func_async(request.name, request.arguments, ns=ns)
    except Exception as error:  # a failing call is an answer for the model, not a lost batch
        return _result_for(request, None, error, max_chars), None
    try:
        return _result_for(request, value, None, max_chars), value
    except Exception as error:
        return _result_for(request, None, error, max_chars), None


def _run_one(request: Any, ns: Any, max_chars: int) -> tuple[Any, Any]:
    try:
        if getattr(request, "caller", None) is not None:
            with _from_code(request, ns):
                value = call_func(request.name, request.arguments, ns=ns)
        else:
            _direct(request, ns)
            value = call_func(request.name, request.arguments, ns=ns)
    except Exception as error:
        return _result_for(request, None, error, max_chars), None
    try:
        return _result_for(request, value, None, max_chars), value
    except Exception as error:
        return _result_for(request, None, error, max_chars), None


def _is_async_call(request: Any, ns: Any) -> bool:
    try:
        return resolve_tool(request.name, ns).is_async
    except ToolCallError:
        return False


async def arun_tool_calls(reply: Any, ns: Any = None) -> Any:
    """Run every tool call in a model reply, coroutine tools concurrently; the tool-result message(s).

    `reply`: an OpenAI chat completion/message, an OpenAI Responses response/output list, an
    Anthropic message/content list or a Gemini response/content, as dicts or SDK objects. Each
    failing call becomes an error result (`is_error`) carrying the text for the model.
    """
    from ..formats import result_message

    dialect, outcomes = await arun_reply_calls(reply, ns)
    return result_message(dialect, [result for result, _value in outcomes])


async def arun_reply_calls(reply: Any, ns: Any = None) -> tuple[str, list[tuple[Any, Any]]]:
    """`arun_tool_calls` before its message is built: the reply's dialect and, per call in order,
    (its `formats.ToolResult`, what the tool returned or None when it failed), for a caller that
    also shows the values (the agent loop's step display)."""
    from ..formats import parse_reply

    check_namespace(ns)
    limits = settings(ns, {})[0]
    dialect, requests = parse_reply(reply)
    outcomes = await asyncio.gather(*(_run_one_async(request, ns, limits.max_result_chars) for request in requests))
    return dialect, list(outcomes)


def run_tool_calls(reply: Any, ns: Any = None) -> Any:
    """Run every tool call in a model reply; returns the provider's tool-result message(s).

    A reply without tool calls returns `[]` (OpenAI chat, Responses) or None (Anthropic, Gemini):
    falsy either way, never an empty message the provider would refuse.

    Synchronous tools run one after another in this thread (so signal-based time-outs and the
    kernel's display keep working); coroutine tools then run concurrently on one event loop
    (a private loop in a worker thread when this thread's loop is running, as in a notebook cell).
    See `arun_tool_calls` for the accepted replies.
    """
    from ..formats import result_message

    dialect, outcomes = run_reply_calls(reply, ns)
    return result_message(dialect, [result for result, _value in outcomes])


def run_reply_calls(reply: Any, ns: Any = None, progress: dict | None = None) -> tuple[str, list[tuple[Any, Any]]]:
    """`run_tool_calls` before its message is built (see `arun_reply_calls`). `progress`, when
    given, gets each finished call's outcome under its index as it finishes (what an interrupted
    caller still knows)."""
    from ..formats import parse_reply

    check_namespace(ns)
    limits = settings(ns, {})[0]
    dialect, requests = parse_reply(reply)
    outcomes: list[Any] = [None] * len(requests)
    waiting = []
    for index, request in enumerate(requests):
        if _is_async_call(request, ns):
            waiting.append(index)
        else:
            outcomes[index] = _run_one(request, ns, limits.max_result_chars)
            if progress is not None:
                progress[index] = outcomes[index]
    if waiting:
        async def run_waiting() -> list[Any]:
            return await asyncio.gather(*(_run_one_async(requests[index], ns, limits.max_result_chars)
                                          for index in waiting))

        for index, outcome in zip(waiting, run_awaitable(run_waiting())):
            outcomes[index] = outcome
    return dialect, outcomes
