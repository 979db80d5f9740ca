"""Asking before a destructive tool runs: the approval policies a call must pass, the answers
(bool or `Decision`), the record of each decision, the arguments as they will run.

`approval(...)` is a generator shared by the sync and async paths of `invoke`: it yields the
awaitables a callback returns and gets their answers back, so both paths follow the same rules.
"""

from __future__ import annotations

import asyncio
import datetime
import inspect
import weakref
from typing import Any

from ..errors import CallRefused, ToolCallError
from ..policy import Decision, DecisionRecord, Layer, Limits, current_origin
from ..tool import Tool
from .plan import prepare
from .words import short


def refused(tool: Tool, reason: str) -> ToolCallError:
    return CallRefused(tool.name, f"refused: {reason}")


def approval(tool: Tool, asks: list[Layer], limits: Limits, positional: tuple, kwargs: dict, raw: Any) -> Any:
    """Ask every policy in `asks` (each must allow); returns the (positional, kwargs) to run, maybe
    edited. A generator: it yields the awaitables a callback returned and gets their answers back
    (or their exceptions thrown in), so the sync and async paths share every rule. Every answer goes
    into the registry's `decisions`."""
    origin = current_origin()
    for layer in asks:
        source, approve = layer.source, layer.approve
        shown = arguments_as_run(tool, positional, kwargs, raw)

        def log(verdict: str, by: str, reason: str | None = None, edited: bool = False) -> None:
            if source is not None:
                source.decisions.append(DecisionRecord(datetime.datetime.now().astimezone(), tool.name, shown,
                                                       origin, verdict, by, reason, edited))

        remembered = source.remembered.get(layer.name) if source is not None else None
        if remembered is not None:
            log("approved" if remembered else "denied", "remembered")
            if not remembered:
                raise refused(tool, "the user chose to always deny this tool for this session; do not call it again")
            continue
        if approve is None:
            continue
        by = "person" if getattr(approve, "asks_a_person", False) else "callback"
        try:
            answer = approve(tool, shown, origin=origin) if _takes_origin(approve) else approve(tool, shown)
            if inspect.isawaitable(answer):
                answer = yield answer
        except TimeoutError as error:  # e.g. approval.ApprovalTimedOut: nobody clicked in time
            log("timed out", by, short(str(error), 200))
            raise approval_failed(tool, error) from error
        except (asyncio.CancelledError, KeyboardInterrupt):
            gave_up = origin.startswith("mcp:")
            log("client gave up" if gave_up else "interrupted", by)
            raise
        except Exception as error:
            log("failed", by, f"{type(error).__name__}: {short(str(error), 200)}")
            raise approval_failed(tool, error) from error
        try:
            allow, edited, remember, reason = _read_answer(tool, answer)
        except ToolCallError as error:
            log("denied", by, error.problem)
            raise
        if remember and source is not None:
            source.remembered[layer.name] = allow
        if not allow:
            log("denied", by, reason)
            tail = f"; their reason: {short(reason, 500)}" if reason else ""
            raise refused(tool, f"the user denied this call{tail}")
        if edited is not None:
            try:
                positional, kwargs, raw = prepare(tool, edited, limits)
            except ToolCallError as error:
                log("invalid edit", by, error.problem)
                raise refused(tool, f"the arguments as edited by the user are invalid"
                                     f"{f' (argument {error.argument!r})' if error.argument else ''}: "
                                     f"{error.problem}") from None
            shown = arguments_as_run(tool, positional, kwargs, raw)
        log("approved", by, edited=edited is not None)
    return positional, kwargs


def _read_answer(tool: Tool, answer: Any) -> tuple[bool, Any, bool, str | None]:
    """(allow, edited arguments or None, remember, reason) of a callback's answer. Only a yes runs
    the tool: True (or 1, a numpy True) or an allowing Decision; a non-boolean answer such as "no"
    or a dict is a denial, not a truthy value (a callback that returns the wrong thing fails closed)."""
    if isinstance(answer, Decision):
        allow = answer.allow is True or (type(answer.allow).__name__ == "bool_" and answer.allow == 1)
        return allow, answer.args if allow else None, answer.remember == "tool", answer.reason
    if answer is True:
        return True, None, False, None
    if answer is False or answer is None:
        return False, None, False, None
    if isinstance(answer, int) or type(answer).__name__ in ("bool_", "bool"):
        return answer == 1, None, False, None
    raise refused(tool, f"the approval callback answered {short(repr(answer), 80)} instead of "
                         "True or False, which counts as a denial (or answer with a Decision)")


_ORIGIN_TAKERS: "weakref.WeakKeyDictionary[Any, bool]" = weakref.WeakKeyDictionary()


def _takes_origin(approve: Any) -> bool:
    """Whether the callback accepts a keyword `origin` (read once per callback, not per call)."""
    try:
        return _ORIGIN_TAKERS[approve]
    except (KeyError, TypeError):
        pass
    try:
        parameters = inspect.signature(approve).parameters
        takes = "origin" in parameters and parameters["origin"].kind in (
            inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD) or any(
            each.kind is inspect.Parameter.VAR_KEYWORD for each in parameters.values())
    except (TypeError, ValueError):
        takes = False
    try:
        _ORIGIN_TAKERS[approve] = takes
    except TypeError:  # not weak-referenceable (a bound method is made anew each time: cheap to redo)
        pass
    return takes


def arguments_as_run(tool_or_fn: Any, positional: tuple, kwargs: dict, raw: Any) -> dict:
    """The arguments as the call will pass them, by parameter name: converted values, defaults
    filled in (`{"folder": null}` shows the default folder the tool will use), `**kwargs` spread
    out; parameters the model never sends (excluded ones such as `python`'s `glb`, an injected
    ToolContext) left out. What an approval callback is shown: the call it approves, not the
    model's JSON. The signature is read once per Tool (kept in its cache), not per call."""
    if isinstance(tool_or_fn, Tool):
        # the cache belongs to this Tool's function (a copy with another `fn` gets a fresh one);
        # it must not hold the function itself (spec caches are weak-keyed by it)
        read = tool_or_fn._cache.get("signature-as-run")
        if read is None:
            signature = _signature(tool_or_fn.fn)
            sent = {name for name, _ in tool_or_fn.passing}
            hidden = frozenset(name for name in signature.parameters if name not in sent) \
                if signature is not None and sent else frozenset()
            read = tool_or_fn._cache["signature-as-run"] = (signature, hidden)
        signature, hidden = read
    else:
        signature, hidden = _signature(tool_or_fn), frozenset()
    try:
        if signature is None:
            raise TypeError
        bound = signature.bind(*positional, **kwargs)
    except TypeError:  # no signature to read (some builtins): what is passed
        return {**{str(index): value for index, value in enumerate(positional)}, **kwargs} if positional \
            else dict(kwargs) if kwargs or not isinstance(raw, dict) else dict(raw)
    bound.apply_defaults()
    shown: dict = {}
    for name, value in bound.arguments.items():
        if name in hidden:
            continue
        if signature.parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
            shown.update(value)
        else:
            shown[name] = value
    return shown


_UNREAD = object()


def _signature(fn: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def approval_failed(tool: Tool, error: Exception) -> ToolCallError:
    if isinstance(error, TimeoutError):  # e.g. approval.ApprovalTimedOut: nobody clicked in time
        return refused(tool, f"nobody approved this call in time ({short(str(error), 200)}); "
                              "it did not run: ask the user before trying again")
    return refused(tool, f"the approval check failed ({type(error).__name__}: {short(str(error), 200)})")
