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
from ..policy import _ORIGIN, _WITNESS, Decision, Layer, Limits, ToolSource, _atomic, immutable, layers_of, \
    snapshot, snapshots, yes_or_no
from ..tool import Tool
from .plan import prepare
from ..shortening import short


def refused(tool: Tool, reason: str) -> ToolCallError:
    return CallRefused(tool.name, f"refused: {reason}")


SKIP: Any = object()  # `Asking.question`'s answer when nobody needs to be asked
_NOT_ASKED: Any = object()  # `Asking.answer` until `approval` hands over an answer it got

DESTRUCTIVE_REFUSED = "this tool is marked destructive and this namespace does not run destructive tools"


class Asking:
    """The approval questions of one call: every policy in `layers` must allow it. The sync and
    async paths of `invoke` drive it the same way: for each layer, `question` (an answer, an
    awaitable of one, or `SKIP`), they wait for an awaitable (on failure: `failed`), then `settle`.
    Every answer goes into the registry's `decisions`; `positional`/`kwargs` are what will run
    (edited arguments replace them)."""

    __slots__ = ("tool", "limits", "positional", "kwargs", "raw", "origin", "layers", "shown", "source",
                 "name", "by", "answer")

    def __init__(self, tool: Tool, layers: list[Layer], limits: Limits, positional: tuple, kwargs: dict,
                 raw: Any):
        self.tool, self.layers, self.limits = tool, layers, limits
        self.positional, self.kwargs, self.raw = positional, kwargs, raw
        self.origin = _ORIGIN.get()
        self.shown: dict = {}
        self.source: Any = None
        self.name, self.by = tool.name, "callback"
        self.answer: Any = _NOT_ASKED

    def log(self, verdict: str, by: str, reason: str | None = None, edited: bool = False) -> None:
        if self.source is not None:
            fields = (time.time(), self.tool.name, self.shown, self.origin, None, (verdict, by, reason, edited))
            self.source._memory.decisions.record(fields)
            seen = _witness()
            if seen is not None:
                seen.append(fields)

    def question(self, layer: Layer) -> Any:
        """Ask `layer`'s callback (or answer from what its registry remembers)."""
        if self.answer is not _NOT_ASKED:  # asked already by `approval`
            answer, self.answer = self.answer, _NOT_ASKED
            return answer
        tool, source = self.tool, layer.source
        self.source, self.name = source, layer.name
        shown = arguments_as_run(tool, self.positional, self.kwargs, self.raw)
        self.shown = _kept(shown)
        remembered = source._memory.remembered.get(layer.name) if source is not None else None
        if remembered is not None:
            self.log("approved" if remembered else "denied", "remembered")
            if not remembered:
                raise refused(tool, "the user chose to always deny this tool for this session; do not call it again")
            return SKIP
        approve = layer.approve
        if approve is None:
            return SKIP
        _, takes_origin, self.by, _ = _asker(approve, source)
        given = snapshot(shown, marked=False)  # the callback's own: an edit in place changes neither the call nor its record
        try:
            return approve(tool, given, origin=self.origin) if takes_origin else approve(tool, given)
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
            # what the caller gave and the model never sends (`python`'s `allow`) stays as it was
            kept = {name: self.kwargs[name] for name in getattr(tool.fn, "__tool_shown__", ()) if name in self.kwargs}
            try:
                self.positional, self.kwargs, self.raw = prepare(tool, edited, self.limits)
                self.kwargs.update(kept)
            except ToolCallError as error:
                self.log("invalid edit", by, error.problem)
                raise refused(tool, f"the arguments as edited by the user are invalid"
                                    f"{f' (argument {error.argument!r})' if error.argument else ''}: "
                                    f"{error.problem}") from None
            self.shown = _kept(arguments_as_run(tool, self.positional, self.kwargs, self.raw))
        self.log("approved", by, edited=edited is not None)


class _Unset:
    def __repr__(self) -> str:
        return "<the registry's setting>"


_UNSET: Any = _Unset()  # a call option not given: the registry's setting holds


def approval(tool: Tool, limits: Limits, rules: tuple, positional: tuple, kwargs: dict, raw: Any) -> Asking | None:
    """The approval a destructive tool's call still needs: None (run it), else the `Asking` that
    `invoke` drives. `rules`: (the registry the Tool came from, whether that registry looked it
    up itself, the explicit `approve` and `refuse_destructive` or `_UNSET`; see `invoke._policies`).
    Every policy the tool carries must allow the call (`policy.layers_of`: the stricter wins).

    The common case is settled here in one step: one registry (not a view, nothing added from
    elsewhere) that looked the tool up itself, with its own settings. A callback that answers a
    plain yes at once is recorded here as `Asking.settle` records it. Its cost is kept low
    (bench/instructions.py wipe_approved against wipe_no_policy): the callback's traits are read
    once (`_asker`); for keyword parameters the log keeps the call's own keyword arguments and
    the plan's defaults (merged when read) and the callback gets them merged, one dict it may
    edit; the record is one `extend` of a bounded deque (`Decisions`). Only arguments holding
    more than scalars (a list, a dict, an object) are copied deeply: for the log and again for
    the callback, both in one pass (`policy.snapshots`), so neither the tool nor the callback
    rewrites the record."""
    first, checked, approve, refuse = rules
    if not (checked and first._parent is None and not first._upstream and approve is _UNSET
            and refuse is _UNSET):
        return _layered(tool, limits, rules, positional, kwargs, raw)
    if first._refuse_destructive:
        raise refused(tool, DESTRUCTIVE_REFUSED)
    memory, callback = first._memory, first._approve
    if tool.name in memory.remembered:  # an earlier Always allow / deny: `Asking.question` answers
        return Asking(tool, [Layer(first, tool.name, callback, False)], limits, positional, kwargs, raw)
    if callback is None:  # nobody to ask
        return None
    asker = first._asker  # (callback, whether it takes `origin=`, by, the outcome "approved by" it): once per callback
    if asker[0] is not callback:
        asker = _asker(callback, first)
    view = tool._cache["dispatch"].view  # the plan `prepare` just used: its view of the arguments
    if view is not None and view[0] is not None and not positional:
        # keyword parameters only: the log keeps the call's keyword arguments and the defaults,
        # merged when read; the callback gets them merged, its own copy to edit
        defaults, kept = view[0], kwargs
        given = defaults | kwargs
        # a list, a dict...: the log keeps a snapshot (no need to look when the schema admits only
        # values that cannot change: `_immutable_arguments`, read once per Tool)
        if not view[2]:  # (copying at once costs about what looking through the values first did)
            defaults = None
            kept, given = snapshots(given)
    else:
        shown = arguments_as_run(tool, positional, kwargs, raw)
        defaults, kept = None, _kept(shown)
        given = snapshot(shown, marked=False)  # the callback's own: an edit in place changes neither the call nor its record
    origin = _origin()
    try:
        answer = callback(tool, given, origin=origin) if asker[1] else callback(tool, given)
    except BaseException as error:
        _asked(tool, first, limits, positional, kwargs, raw, kept, defaults, origin, asker).failed(error)
    if answer is True:
        fields = (_now(), tool.name, kept, origin, defaults, asker[3])
        memory.decisions.record(fields)
        seen = _witness()
        if seen is not None:  # a caller that shows this call's own decision (code mode)
            seen.append(fields)
        return None
    asking = _asked(tool, first, limits, positional, kwargs, raw, kept, defaults, origin, asker)
    asking.answer = answer
    return asking


def _layered(tool: Tool, limits: Limits, rules: tuple, positional: tuple, kwargs: dict, raw: Any) -> Asking | None:
    """`approval` for every other case: the policy layers the tool carries, each asked in turn."""
    first, checked, approve, refuse = rules
    layers = layers_of(tool, first) if first is not None else [Layer(None, tool.name, None, False)]
    if approve is not _UNSET or refuse is not _UNSET:  # explicit options replace the first layer's settings
        head = layers[0]
        layers[0] = Layer(head.source, head.name, head.approve if approve is _UNSET else approve,
                          head.refuse_destructive if refuse is _UNSET else bool(refuse))
    asks = []
    for layer in layers:
        if layer.source is not None and layer is not layers[0] and layer.source.is_disabled(layer.name):
            raise refused(tool, f"the tool {layer.name!r} is disabled in its registry; it cannot be called now")
        if layer.refuse_destructive:
            raise refused(tool, DESTRUCTIVE_REFUSED)
        if layer.approve is not None or (layer.source is not None and layer.name in layer.source.remembered):
            asks.append(layer)
    if not asks:
        return None
    return Asking(tool, asks, limits, positional, kwargs, raw)


def _asked(tool: Tool, source: ToolSource, limits: Limits, positional: tuple, kwargs: dict, raw: Any, kept: dict,
           defaults: dict | None, origin: str, asker: tuple) -> Asking:
    """The `Asking` of a call whose one registry's callback `approval` asked already."""
    asking = Asking(tool, [Layer(source, tool.name, asker[0], False)], limits, positional, kwargs, raw)
    asking.shown = kept if defaults is None else defaults | kept
    asking.source, asking.origin, asking.by = source, origin, asker[2]
    return asking


def _kept(arguments: dict) -> dict:
    """What the log keeps of `arguments`: a snapshot (`policy.snapshot`), since a tool that consumes
    or mutates its arguments, or a callback editing a nested value in place, must not rewrite what
    the log says ran."""
    return snapshot(arguments)


def with_python_allow(tool: Tool, first: ToolSource | None, kwargs: dict) -> dict:
    """`kwargs` of a `python`/`python_async` call with `allow` set to the policy the registries it
    came through give (`Registry.python_allow`, the stricter of all; the caller's own `allow` can
    only narrow it). Applied before the approval, which then shows it, and again after an edit."""
    policy = None
    for layer in layers_of(tool, first) if first is not None else ():
        own = getattr(layer.source, "python_allow", None)
        if own is not None:
            policy = own if policy is None else policy.narrowed(own)
    if policy is None:
        return kwargs
    given = kwargs.get("allow")
    return {**kwargs, "allow": policy if given is None else policy.narrowed(given)}


# bound once: `_ORIGIN.get()` built a bound method on every call (~500 instructions of the fast path)
_origin, _now, _witness = _ORIGIN.get, time.time, _WITNESS.get


def is_pending(answer: Any) -> bool:
    """Whether a callback's answer is still to be awaited."""
    return answer is not True and answer is not False and inspect.isawaitable(answer)


def _read_answer(tool: Tool, answer: Any) -> tuple[bool, Any, bool, str | None]:
    """(allow, edited arguments or None, remember, reason) of a callback's answer. One rule for a
    yes, plain or in a Decision (`policy.yes_or_no`): True or 1 (numpy's too) runs the tool, False,
    0 or None refuses it; any other answer ("no", 2, a dict) is a refusal saying what came back,
    not a truthy value (a callback that returns the wrong thing fails closed)."""
    if isinstance(answer, Decision):  # its `allow` is a bool already (checked when it was made)
        allow = answer.allow
        return allow, answer.args if allow else None, answer.remember == "tool", answer.reason
    verdict = False if answer is None else yes_or_no(answer)
    if verdict is None:
        raise refused(tool, f"the approval callback answered {short(repr(answer), 80)} instead of "
                             "True or False, which counts as a denial (or answer with a Decision)")
    return verdict, None, False, None


def _asker(approve: Any, source: ToolSource | None) -> tuple[Any, bool, str, tuple]:
    """(the callback, whether it accepts a keyword `origin`, who answers: "person" for a prompt,
    else "callback", the outcome of a plain yes as `Decisions.record` takes it), read once per
    callback and kept by the registry it asks for (`source._asker`, until its callback changes):
    no module-level cache keeping callbacks (and a prompt's widgets) alive after their registry."""
    if source is not None and source._asker[0] is approve:
        return source._asker
    try:
        parameters = inspect.signature(approve).parameters
        takes = "origin" in parameters and parameters["origin"].kind in (
            inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD) or any(
            each.kind is inspect.Parameter.VAR_KEYWORD for each in parameters.values())
    except (TypeError, ValueError):
        takes = False
    by = "person" if getattr(approve, "asks_a_person", False) is True else "callback"
    known = (approve, takes, by, ("approved", by, None, False))
    if source is not None:
        source._asker = known
    return known


def arguments_as_run(tool: Tool, positional: tuple, kwargs: dict, raw: Any) -> dict:
    """The arguments as the call will pass them, by parameter name: converted values, defaults
    filled in (`{"folder": null}` shows the default folder the tool will use), `**kwargs` spread
    out; parameters the model never sends (excluded ones such as `python`'s `glb`, an injected
    ToolContext) left out. What an approval callback is shown: the call it approves, not the
    model's JSON. The function's parameters are read once per Tool, kept in its plan (`CallPlan.view`;
    it must not hold the function itself: spec caches are weak-keyed by it)."""
    plan = tool._cache.get("dispatch")  # the plan `prepare` just used
    shape = plan.view if plan is not None else None
    if shape is None:
        shape = _shape(tool.fn, tool.passing)
        shape = (*shape, shape[0] is not None and _immutable_arguments(tool, shape[0]))
        if plan is not None:
            plan.view = shape
    template, shape, _ = shape
    if shape is None:  # no signature to read (some builtins): what is passed
        return {**{str(index): value for index, value in enumerate(positional)}, **kwargs} if positional \
            else dict(kwargs) if kwargs or not isinstance(raw, dict) else dict(raw)
    if template is not None and not positional:  # keyword parameters only: defaults, then what is passed
        return template | kwargs
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
            elif default is _EMPTY or hidden == "given":
                continue
            else:
                value = default
        else:  # **kwargs: the keys no named parameter took, spread out
            if not hidden:
                named = {each[0] for each in shape}
                shown.update((key, item) for key, item in kwargs.items() if key not in named)
            continue
        if hidden is not True:
            shown[name] = value
    return shown


_EMPTY = inspect.Parameter.empty
_POSITIONAL_OR_KEYWORD = int(inspect.Parameter.POSITIONAL_OR_KEYWORD)
_VAR_POSITIONAL = int(inspect.Parameter.VAR_POSITIONAL)
_KEYWORD_ONLY = int(inspect.Parameter.KEYWORD_ONLY)
_VAR_KEYWORD = int(inspect.Parameter.VAR_KEYWORD)


def _shape(fn: Any, passing: tuple) -> tuple:
    """(template, parameters): per parameter of `fn` (name, kind as int, default, hidden: not sent by a
    model), None when `fn` has no signature to read; template: for a function of keyword
    parameters only (no hidden, no *args), the parameters in order with their defaults (required
    ones are always passed), else None."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None, None
    sent = {name for name, kind in passing if kind != "context"}  # an injected ToolContext is not sent
    context = {name for name, kind in passing if kind == "context"}
    shown = getattr(fn, "__tool_shown__", ())  # not sent, shown when passed (`python`'s `allow`)
    shape = tuple((each.name, int(each.kind), each.default, "given" if each.name in shown else each.name in context or (
                   bool(sent) and each.name not in sent and each.kind is not inspect.Parameter.VAR_KEYWORD))
                  for each in parameters)
    simple = all(kind in (_POSITIONAL_OR_KEYWORD, _KEYWORD_ONLY, _VAR_KEYWORD) and not hidden
                 for _, kind, _, hidden in shape)
    template = {name: default for name, kind, default, _ in shape if kind != _VAR_KEYWORD} if simple else None
    return template, shape


_SCALAR_TYPES = frozenset({"string", "integer", "number", "boolean", "null"})
# keywords that do not change what a scalar converts to (anything else: assume it may be an object)
_SCALAR_KEYWORDS = frozenset({"type", "enum", "const", "default", "description", "title", "format", "minLength",
                              "maxLength", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                              "multipleOf", "examples", "deprecated", "anyOf", "oneOf"})


def _immutable_arguments(tool: Tool, template: dict) -> bool:
    """Whether every argument of `tool` is a value that cannot change in place: its schema admits
    only scalars (converted at most to dates, paths, UUIDs, decimals, enum members: immutable) and
    its defaults are scalars. Then neither the log nor the callback needs a copy."""
    parameters = tool.parameters
    if parameters.get("additionalProperties", False) is not False or "$defs" in parameters:
        return False
    return (all(_scalar_schema(each) for each in (parameters.get("properties") or {}).values())
            and all(immutable(each) for each in template.values() if each is not _EMPTY))  # (required: always passed)


def _scalar_schema(schema: Any, depth: int = 0) -> bool:
    if not isinstance(schema, dict) or depth > 4 or not _SCALAR_KEYWORDS.issuperset(schema):
        return False
    for key in ("anyOf", "oneOf"):
        if key in schema and not all(_scalar_schema(each, depth + 1) for each in schema[key]):
            return False
    kind = schema.get("type")
    if kind is None:
        values = schema["enum"] if "enum" in schema else [schema["const"]] if "const" in schema else None
        if values is None:
            return "anyOf" in schema or "oneOf" in schema
        return _atomic(map(type, values))
    return all(each in _SCALAR_TYPES for each in ([kind] if isinstance(kind, str) else kind))


def approval_failed(tool: Tool, error: Exception) -> ToolCallError:
    if isinstance(error, TimeoutError):  # e.g. approval.ApprovalTimedOut: nobody clicked in time
        return refused(tool, f"nobody approved this call in time ({short(str(error), 200)}); "
                              "it did not run: ask the user before trying again")
    return refused(tool, f"the approval check failed ({type(error).__name__}: {short(str(error), 200)})")
