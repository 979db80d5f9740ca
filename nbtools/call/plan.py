"""The dispatch of one Tool: how its arguments object becomes one Python call, built once.

`CallPlan` is everything a call of the Tool needs, compiled once per (Tool, Limits) and kept in the
Tool's cache: the converters of its parameters (from the Tool's intermediate form, or its JSON
Schema read back when it has none), which checks the arguments need, how each parameter is passed
(keyword, positional-only, `*args`, `**kwargs`), and, built on first need, the approval's view of
the arguments (`view`, defaults filled) and the parameters schema as text for refusals.
`prepare` runs a plan on what a model sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable

from .. import ir
from ..context import current_context
from ..errors import SchemaError, ToolCallError, schema_text
from ..policy import DEFAULT_LIMITS, Limits
from ..records import Factory
from ..tool import Tool
from .jsontext import check_duplicates, check_limits, check_size, count_keys, decode_json, no_key_dropped, parse_arguments
from .convert import Compiler
from ..refusals import ConversionError, exception_text


class CallPlan:
    """How to turn a model's arguments into one Python call of a Tool's function.

    Fields:
        convert: `(arguments dict, "") -> converted values by parameter name` (raises ConversionError):
            `convert.Compiler.compile_arguments`, plus the defaults dispatch fills itself.
        flat: every parameter is a scalar, so the nesting scan can be skipped.
        closed: every parameter has a fixed type of bounded depth (no free-form values, no
            recursion), so the converters enforce every limit themselves and the scan is skipped.
        nested: for a closed plan, the parameters whose values may hold JSON objects (the keys
            the duplicate-key check counts beyond the top level); None when `**kwargs` may.
        keyword_only: every parameter is passed by keyword (no positional-only, no *args).
        positional: positional-only parameter names, in order.
        varargs: the name of the `*args` parameter (a JSON array), or None.
        before_varargs: parameters before `*args`, passed positionally when `*args` is non-empty.
        defaults: Python defaults of optional parameters (to fill positional gaps).
        context: the parameter that receives the `ToolContext` (never sent by the model), or None.
        limits: the limits it was compiled under.
        view: the approval's view of the arguments (see `call.asking.arguments_as_run`), read from
            the function's signature on first need; None until then.
        schema_text: the parameters schema as text, for refusals; None until the first refusal.
    A plan holds no function and no name: Tools built from one function share it (the Tool's cache
    is shared only by Tools with the same definition: `Tool.replace` and `dataclasses.replace`
    start a fresh one). A plain class with slots (a generated dataclass cost more to import than it
    saved writing), set once here.
    """

    __slots__ = ("convert", "flat", "closed", "nested", "keyword_only", "positional", "varargs", "before_varargs",
                 "defaults", "context", "limits", "view", "schema_text")

    def __init__(self, *, convert: Callable[[dict], dict], flat: bool, closed: bool,
                 nested: tuple[str, ...] | None, keyword_only: bool,
                 positional: tuple[str, ...], varargs: str | None, before_varargs: tuple[str, ...],
                 defaults: Mapping[str, Any], context: str | None = None, limits: Limits = DEFAULT_LIMITS):
        self.limits = limits
        self.view: Any = None
        self.schema_text: str | None = None
        self.convert = convert
        self.flat = flat
        self.closed = closed
        self.nested = nested
        self.keyword_only = keyword_only
        self.positional = positional
        self.varargs = varargs
        self.before_varargs = before_varargs
        self.defaults = defaults
        self.context = context

    def __repr__(self) -> str:
        return (f"CallPlan(positional={self.positional!r}, varargs={self.varargs!r}, "
                f"keyword_only={self.keyword_only}, context={self.context!r})")

    def arguments(self, converted: dict) -> tuple[tuple, dict]:
        """(positional, keyword) arguments for the call, from the converted values."""
        if self.keyword_only:
            return (), converted
        kwargs = dict(converted)
        varargs = self.varargs
        extra_positional: Any = ()
        if varargs is not None:
            extra_positional = kwargs.pop(varargs, ()) or ()
        if extra_positional:
            leading = self.before_varargs
        else:
            present = [index for index, name in enumerate(self.positional) if name in kwargs]
            leading = self.positional[: present[-1] + 1] if present else ()
        positional = []
        for name in leading:
            if name in kwargs:
                positional.append(kwargs.pop(name))
                continue
            default = self.defaults.get(name, ir.MISSING)
            if default is ir.MISSING:
                raise ConversionError(name, "this argument must be given when a later positional argument is")
            positional.append(default)
        positional.extend(extra_positional)
        return tuple(positional), kwargs


def call_plan(tool: Tool, limits: Limits = DEFAULT_LIMITS) -> CallPlan:
    """The CallPlan of `tool` under `limits`, kept in the Tool's cache (compiled on first use).
    The plan of the limits used last is `tool._cache["dispatch"]`: one lookup on every call."""
    cache = tool._cache
    plan = cache.get("dispatch")
    if plan is not None and plan.limits is limits:
        return plan
    by_limits = cache.setdefault("dispatch-by-limits", {})
    plan = by_limits.get(limits)
    if plan is None:
        plan = by_limits[limits] = _compile_plan(tool, limits)
    cache["dispatch"] = plan
    return plan


def _arguments_node(tool: Tool) -> ir.Object:
    """The arguments object of `tool`: its intermediate form, or else its parameters schema read back
    (a Tool built directly from a schema, with no `args`)."""
    if tool.args is not None:
        return tool.args
    from ..schema.params import arguments_object  # the schema reader, needed only for such Tools

    return arguments_object(tool.name, tool.parameters)  # SchemaError naming the tool when unreadable


def _compile_plan(tool: Tool, limits: Limits) -> CallPlan:
    args = _arguments_node(tool)
    try:
        convert = Compiler(limits).compile_arguments(args)  # convert's object converter, worded for a call
    except SchemaError as error:
        raise SchemaError(tool.name, error.parameter, error.reason) from None
    passing = tool.passing or tuple((item.name, "keyword") for item in args.fields)
    filled = _filled_defaults(args, passing)
    if filled:
        convert_given = convert

        def convert_and_fill(raw: dict, path: str) -> dict:
            out = convert_given(raw, path)
            for name, default in filled:
                if name not in out:  # the function's own default is a pydantic FieldInfo, or it has none
                    out[name] = default.factory() if isinstance(default, Factory) else default
            return out

        convert = convert_and_fill

    order = [name for name, kind in passing if kind not in ("varkw", "context", "default")]
    positional = tuple(name for name, kind in passing if kind == "positional")
    varargs = next((name for name, kind in passing if kind == "varargs"), None)
    before = tuple(order[: order.index(varargs)]) if varargs in order else ()
    return CallPlan(
        convert=convert,
        flat=args.extra is None and all(ir.is_scalar(item.type) for item in args.fields),
        closed=(args.extra is None or ir.static_depth(args.extra) is not None) and all(
            depth is not None and depth < limits.max_depth
            for depth in (ir.static_depth(item.type) for item in args.fields)),
        nested=None if args.extra is not None and _holds_objects(args.extra) else tuple(
            item.name for item in args.fields if _holds_objects(item.type)),
        keyword_only=not positional and varargs is None,
        positional=positional,
        varargs=varargs,
        before_varargs=before,
        defaults={item.name: item.default for item in args.fields if not item.required},
        context=next((name for name, kind in passing if kind == "context"), None),
        limits=limits,
    )


def _holds_objects(node: ir.Node) -> bool:
    """Whether a value of `node` may hold a JSON object at some depth (asked of closed types only:
    no references, no free-form values)."""
    return isinstance(node, (ir.Object, ir.Map)) or any(_holds_objects(part) for part in ir.children(node))


def _filled_defaults(args: ir.Object, passing: tuple[tuple[str, str], ...]) -> tuple[tuple[str, Any], ...]:
    """(name, default) of the optional parameters dispatch passes itself when left out: those marked
    "default" in `passing` (their Python default is a pydantic `Field(...)`, or an `Annotated` one)."""
    marked = {name for name, kind in passing if kind == "default"}
    return tuple((item.name, item.default) for item in args.fields if item.name in marked and not item.required)


def refusal(tool: Tool, problem: str, argument: str | None) -> ToolCallError:
    """The ToolCallError refusing a call of `tool`, with its parameters schema as text kept in its
    plan (a model that sent bad arguments tends to be refused more than once)."""
    plan = tool._cache.get("dispatch")
    text = plan.schema_text if plan is not None else None
    if text is None:
        text = schema_text(tool.parameters)
        if plan is not None:
            plan.schema_text = text
    return ToolCallError(tool.name, problem, argument, tool.parameters, schema_text=text)


def prepare(tool: Tool, inputs: Any, limits: Limits) -> tuple[tuple, dict, dict]:
    """Validate and convert: (positional, keyword, raw arguments). Raises ToolCallError."""
    try:
        plan = tool._cache.get("dispatch")  # call_plan's, read here without the call
        if plan is None or plan.limits is not limits:
            plan = call_plan(tool, limits)
        if type(inputs) is str and len(inputs) <= limits.max_bytes:
            # the common case, JSON text of an object: one decode; anything unusual (invalid JSON,
            # text after the object, not an object) goes the careful way, which says what is wrong
            try:
                raw, end = decode_json(inputs)
            except ValueError:
                end = -1
            if end == len(inputs) and type(raw) is dict:
                text = inputs
            else:
                raw, text = parse_arguments(inputs, limits)
        else:
            raw, text = parse_arguments(inputs, limits)
            if text is None:  # a dict: bounded by size before anything walks it in full
                check_size(raw, limits)
        convert = plan.convert  # a function in a slot: read as an attribute, then called (cheaper)
        if plan.flat:
            # scalar converters check their own limits; here only duplicate keys are in question
            if text is not None and not no_key_dropped(text, len(raw)):
                check_duplicates(raw, text, len(raw))
            converted = convert(raw, "")
        elif plan.closed:
            # converters check every limit of a closed type; once they accepted the value, its
            # depth is bounded, so counting its keys for the duplicate check cannot run away
            converted = convert(raw, "")
            if text is not None:
                nested = plan.nested
                if nested is None:
                    keys = count_keys(raw)
                else:  # only values that may hold objects are walked (not a list of strings)
                    keys = len(raw)
                    for name in nested:
                        value = raw.get(name)
                        if type(value) is dict or type(value) is list:
                            keys += count_keys(value)
                if not no_key_dropped(text, keys):
                    check_duplicates(raw, text, keys)
        else:
            check_limits(raw, text, limits)
            converted = convert(raw, "")
        if plan.context is not None:  # injected here, after validation: the model never sends it
            converted[plan.context] = current_context()
        if plan.keyword_only:
            return (), converted, raw
        positional, kwargs = plan.arguments(converted)
    except ConversionError as error:
        raise refusal(tool, error.problem, error.where() or None) from None
    except SchemaError as error:
        raise ToolCallError(tool.name, f"this tool cannot be called: {error}") from None
    except ToolCallError:
        raise
    except RecursionError:
        raise refusal(tool, f"the arguments are nested too deeply (the limit is {limits.max_depth} levels)",
                      None) from None
    except Exception as error:  # e.g. a pydantic validator raising KeyError: still an answer for the model
        raise refusal(tool, f"the arguments could not be converted: {exception_text(error)}", None) from error
    return positional, kwargs, raw
