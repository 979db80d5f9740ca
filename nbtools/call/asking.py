"""Asking before a destructive tool runs: the approval policies a call must pass, the answers
(bool or `Decision`), the record of each decision, the arguments as they will run.

`Asking` holds one call's questions; the sync and async paths of `invoke` drive it the same way,
so both follow the same rules.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from typing import Any

from ..errors import ApprovalInterrupt, CallRefused, ToolCallError
from ..policy import Decision, DecisionRecord, Layer, Limits, current_origin
from ..tool import Tool
from .plan import prepare
from ..shortening import short


def refused(tool: Tool, reason: str) -> ToolCallError:
    return CallRefused(tool.name, f"refused: {reason}")


SKIP: Any = object()  # `Asking.question`'s answer when nobody needs to be asked


class Asking:
    """The approval questions of one call: every policy in `layers` must allow it. The sync and
    async paths of `invoke` drive it the same way: for each layer, `question` (an answer, an
    awaitable of one, or `SKIP`), they wait for an awaitable (on failure: `failed`), then `settle`.
    Every answer goes into the registry's `decisions`; `positional`/`kwargs` are what will run
    (edited arguments replace them)."""

    __slots__ = ("tool", "limits", "positional", "kwargs", "raw", "origin", "layers", "shown", "source",
                 "name", "by")

    def __init__(self, tool: Tool, layers: list[Layer], limits: Limits, positional: tuple, kwargs: dict,
                 raw: Any):
        self.tool, self.layers, self.limits = tool, layers, limits
        self.positional, self.kwargs, self.raw = positional, kwargs, raw
        self.origin = current_origin()
        self.shown: dict = {}
        self.source: Any = None
        self.name, self.by = tool.name, "callback"

    def log(self, verdict: str, by: str, reason: str | None = None, edited: bool = False) -> None:
        if self.source is not None:
            self.source._memory.decisions.add(DecisionRecord(time.time(), self.tool.name, self.shown, self.origin,
                                                        verdict, by, reason, edited))

    def question(self, layer: Layer) -> Any:
        """Ask `layer`'s callback (or answer from what its registry remembers)."""
        tool, source = self.tool, layer.source
        self.source, self.name = source, layer.name
        self.shown = arguments_as_run(tool, self.positional, self.kwargs, self.raw)
        remembered = source._memory.remembered.get(layer.name) if source is not None else None
        if remembered is not None:
            self.log("approved" if remembered else "denied", "remembered")
            if not remembered:
                raise refused(tool, "the user chose to always deny this tool for this session; do not call it again")
            return SKIP
        approve = layer.approve
        if approve is None:
            return SKIP
        takes_origin, self.by = _traits(approve)
        try:
            return approve(tool, self.shown, origin=self.origin) if takes_origin else approve(tool, self.shown)
        except BaseException as error:
            self.failed(error)

    def failed(self, error: BaseException) -> None:
        """The callback (or the wait for its answer) raised `error`: record it and raise what the
        call raises (a refusal; a cancellation or interrupt goes on up as it is)."""
        if isinstance(error, TimeoutError):  # e.g. approval.ApprovalTimedOut: nobody clicked in time
            self.log("timed out", self.by, short(str(error), 200))
            raise approval_failed(self.tool, error) from error
        if isinstance(error, (asyncio.CancelledError, KeyboardInterrupt)) or not isinstance(error, Exception):
            self.log("client gave up" if self.origin.startswith("mcp:") else "interrupted", self.by)
            if isinstance(error, KeyboardInterrupt) and not isinstance(error, ApprovalInterrupt):
                raise ApprovalInterrupt(f"Interrupted while waiting for approval of {self.tool.name!r}: "
                                        "not run.") from None
            raise error
        self.log("failed", self.by, f"{type(error).__name__}: {short(str(error), 200)}")
        raise approval_failed(self.tool, error) from error

    def settle(self, answer: Any) -> None:
        """Apply the answer: a refusal raises; an edit replaces the arguments (validated again)."""
        tool, by = self.tool, self.by
        if answer is True:
            self.log("approved", by)
            return
        try:
            allow, edited, remember, reason = _read_answer(tool, answer)
        except ToolCallError as error:
            self.log("denied", by, error.problem)
            raise
        if remember and self.source is not None:
            self.source.remembered[self.name] = allow
        if not allow:
            self.log("denied", by, reason)
            tail = f"; their reason: {short(reason, 500)}" if reason else ""
            raise refused(tool, f"the user denied this call{tail}")
        if edited is not None:
            try:
                self.positional, self.kwargs, self.raw = prepare(tool, edited, self.limits)
            except ToolCallError as error:
                self.log("invalid edit", by, error.problem)
                raise refused(tool, f"the arguments as edited by the user are invalid"
                                    f"{f' (argument {error.argument!r})' if error.argument else ''}: "
                                    f"{error.problem}") from None
            self.shown = arguments_as_run(tool, self.positional, self.kwargs, self.raw)
        self.log("approved", by, edited=edited is not None)


def is_pending(answer: Any) -> bool:
    """Whether a callback's answer is still to be awaited."""
    return answer is not True and answer is not False and inspect.isawaitable(answer)


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


_TRAITS: dict[int, tuple[Any, bool, str]] = {}  # id(callback) -> (callback, takes origin, by)


def _traits(approve: Any) -> tuple[bool, str]:
    """(whether the callback accepts a keyword `origin`, who answers: "person" for a prompt, else
    "callback"), read once per callback, not per call; the few callbacks a session uses are kept,
    so their ids cannot be reused while remembered."""
    known = _TRAITS.get(id(approve))
    if known is not None and known[0] is approve:
        return known[1], known[2]
    try:
        parameters = inspect.signature(approve).parameters
        takes = "origin" in parameters and parameters["origin"].kind in (
            inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD) or any(
            each.kind is inspect.Parameter.VAR_KEYWORD for each in parameters.values())
    except (TypeError, ValueError):
        takes = False
    by = "person" if getattr(approve, "asks_a_person", False) is True else "callback"
    if len(_TRAITS) >= 64:
        _TRAITS.clear()
    _TRAITS[id(approve)] = (approve, takes, by)
    return takes, by


def arguments_as_run(tool_or_fn: Any, positional: tuple, kwargs: dict, raw: Any) -> dict:
    """The arguments as the call will pass them, by parameter name: converted values, defaults
    filled in (`{"folder": null}` shows the default folder the tool will use), `**kwargs` spread
    out; parameters the model never sends (excluded ones such as `python`'s `glb`, an injected
    ToolContext) left out. What an approval callback is shown: the call it approves, not the
    model's JSON. The function's parameters are read once per Tool (kept in its cache), not per call."""
    if isinstance(tool_or_fn, Tool):
        # the cache belongs to this Tool's function (a copy with another `fn` gets a fresh one);
        # it must not hold the function itself (spec caches are weak-keyed by it)
        shape = tool_or_fn._cache.get("parameters-as-run")
        if shape is None:
            shape = tool_or_fn._cache["parameters-as-run"] = _shape(tool_or_fn.fn, tool_or_fn.passing)
    else:
        shape = _shape(tool_or_fn, ())
    if shape is None:  # no signature to read (some builtins): what is passed
        return {**{str(index): value for index, value in enumerate(positional)}, **kwargs} if positional \
            else dict(kwargs) if kwargs or not isinstance(raw, dict) else dict(raw)
    template = shape[0]
    if template is not None and not positional:  # keyword parameters only: defaults, then what is passed
        shown = template.copy()
        shown.update(kwargs)
        return shown
    shape = shape[1]
    shown: dict = {}
    index, count = 0, len(positional)
    for name, kind, default, hidden in shape:
        if kind <= _POSITIONAL_OR_KEYWORD:
            if index < count:
                value, index = positional[index], index + 1
            elif name in kwargs:
                value = kwargs[name]
            elif default is _EMPTY:
                continue
            else:
                value = default
        elif kind == _VAR_POSITIONAL:
            value, index = tuple(positional[index:]), count
        elif kind == _KEYWORD_ONLY:
            if name in kwargs:
                value = kwargs[name]
            elif default is _EMPTY:
                continue
            else:
                value = default
        else:  # **kwargs: the keys no named parameter took, spread out
            if not hidden:
                named = {each[0] for each in shape}
                shown.update((key, item) for key, item in kwargs.items() if key not in named)
            continue
        if not hidden:
            shown[name] = value
    return shown


_EMPTY = inspect.Parameter.empty
_POSITIONAL_OR_KEYWORD = int(inspect.Parameter.POSITIONAL_OR_KEYWORD)
_VAR_POSITIONAL = int(inspect.Parameter.VAR_POSITIONAL)
_KEYWORD_ONLY = int(inspect.Parameter.KEYWORD_ONLY)
_VAR_KEYWORD = int(inspect.Parameter.VAR_KEYWORD)


def _shape(fn: Any, passing: tuple) -> tuple | None:
    """(template, parameters): per parameter of `fn` (name, kind as int, default, hidden: not sent by a
    model); template: for a function of keyword parameters only (no hidden, no *args), the
    parameters in order with their defaults (required ones are always passed), else None."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    sent = {name for name, _ in passing}
    shape = tuple((each.name, int(each.kind), each.default, bool(sent) and each.name not in sent and
                   each.kind is not inspect.Parameter.VAR_KEYWORD) for each in parameters)
    simple = all(kind in (_POSITIONAL_OR_KEYWORD, _KEYWORD_ONLY, _VAR_KEYWORD) and not hidden
                 for _, kind, _, hidden in shape)
    template = {name: default for name, kind, default, _ in shape if kind != _VAR_KEYWORD} if simple else None
    return template, shape


def approval_failed(tool: Tool, error: Exception) -> ToolCallError:
    if isinstance(error, TimeoutError):  # e.g. approval.ApprovalTimedOut: nobody clicked in time
        return refused(tool, f"nobody approved this call in time ({short(str(error), 200)}); "
                              "it did not run: ask the user before trying again")
    return refused(tool, f"the approval check failed ({type(error).__name__}: {short(str(error), 200)})")
