"""The call plan of one Tool: how its arguments object becomes one Python call.

Compiled once per (Tool, Limits) and cached on the Tool: the converters of its parameters (from
the Tool's intermediate form, or its JSON Schema read back when it has none), which checks the
arguments need, and how each parameter is passed (keyword, positional-only, `*args`, `**kwargs`).
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
from .jsontext import check_limits, check_size, count_keys, decode_json, no_key_dropped, parse_arguments
from .keywords import with_constraints
from .convert import Compiler
from ..formats.readback import null_means_absent, pairs_object
from ..shortening import short
from ..refusals import KEY_MAX_CHARS, ConversionError, did_you_mean, exception_text, got


class CallPlan:
    """How to turn a model's arguments into one Python call of a Tool's function.

    Fields:
        convert: the arguments dict -> converted values by parameter name (raises ConversionError).
        flat: every parameter is a scalar, so the nesting scan can be skipped.
        closed: every parameter has a fixed type of bounded depth (no free-form values, no
            recursion), so the converters enforce every limit themselves and the scan is skipped.
        keyword_only: every parameter is passed by keyword (no positional-only, no *args).
        positional: positional-only parameter names, in order.
        varargs: the name of the `*args` parameter (a JSON array), or None.
        before_varargs: parameters before `*args`, passed positionally when `*args` is non-empty.
        defaults: Python defaults of optional parameters (to fill positional gaps).
        context: the parameter that receives the `ToolContext` (never sent by the model), or None.
    A plan holds no function and no name: Tools built from one function share it. A plain class
    with slots (a generated dataclass cost more to import than it saved writing), set once here.
    """

    __slots__ = ("convert", "flat", "closed", "keyword_only", "positional", "varargs", "before_varargs",
                 "defaults", "context")

    def __init__(self, *, convert: Callable[[dict], dict], flat: bool, closed: bool, keyword_only: bool,
                 positional: tuple[str, ...], varargs: str | None, before_varargs: tuple[str, ...],
                 defaults: Mapping[str, Any], context: str | None = None):
        self.convert = convert
        self.flat = flat
        self.closed = closed
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
    """The cached CallPlan of `tool` under `limits` (compiled on first use)."""
    cache = tool._cache
    entry = cache.get("converter")
    if entry is not None and entry[0] is limits:
        return entry[1]
    by_limits = cache.setdefault("converters", {})
    plan = by_limits.get(limits)
    if plan is None:
        plan = _compile_plan(tool, limits)
        by_limits[limits] = plan
    cache["converter"] = (limits, plan)
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
    compiler = Compiler(limits)
    try:
        fields = {item.name: compiler.compile(item.type) for item in args.fields}
        extra = compiler.compile(args.extra) if args.extra is not None else None
    except SchemaError as error:
        raise SchemaError(tool.name, error.parameter, error.reason) from None
    required = tuple(item.name for item in args.fields if item.required)
    field_count = len(fields)
    absent_if_null = null_means_absent(args.fields)
    if fields:
        takes = "this tool takes: " + ", ".join(fields) + (" (and other keys)" if extra is not None else "")
    else:
        takes = "this tool takes no arguments" if extra is None else "this tool takes any keys"

    pairs_key = _pairs_property(fields) if extra is not None else None

    def convert_arguments(raw: dict) -> dict:
        out = {}
        pairs = None
        for key, value in raw.items():
            if value is None and key in absent_if_null:
                continue
            convert = fields.get(key)
            if convert is None:
                if extra is None:
                    raise ConversionError(short(str(key), KEY_MAX_CHARS),
                                          f"unexpected argument{did_you_mean(key, fields)}; {takes}")
                if type(key) is not str:
                    raise ConversionError(str(key), f"argument names must be strings, got {got(key)}")
                if key == pairs_key:  # **kwargs in strict form, unpacked once the named ones are in
                    pairs = value
                    continue
                convert = extra
            out[key] = convert(value, key)
        if pairs is not None:
            _add_pairs(out, pairs, pairs_key, fields, extra, limits.max_items)  # type: ignore[arg-type]
        if len(out) != field_count or extra is not None:
            for name in required:
                if name not in out:
                    raise ConversionError(name, "missing required argument")
        return out

    convert = convert_arguments
    passing = tool.passing or tuple((name, "keyword") for name in fields)
    filled = _filled_defaults(args, passing)
    if filled:
        convert_given = convert

        def convert_and_fill(raw: dict) -> dict:
            out = convert_given(raw)
            for name, default in filled:
                if name not in out:  # the function's own default is a pydantic FieldInfo, or it has none
                    out[name] = default.factory() if isinstance(default, Factory) else default
            return out

        convert = convert_and_fill
    if args.constraints:
        root_checks = with_constraints(lambda value, path: value, args.constraints)

        convert_unchecked = convert

        def convert_arguments_checked(raw: dict) -> dict:
            root_checks(raw, "")
            return convert_unchecked(raw)

        convert = convert_arguments_checked

    order = [name for name, kind in passing if kind not in ("varkw", "context", "default")]
    positional = tuple(name for name, kind in passing if kind == "positional")
    varargs = next((name for name, kind in passing if kind == "varargs"), None)
    before = tuple(order[: order.index(varargs)]) if varargs in order else ()
    return CallPlan(
        convert=convert,
        flat=extra is None and all(ir.is_scalar(item.type) for item in args.fields),
        closed=(extra is None or ir.static_depth(args.extra) is not None) and all(
            depth is not None and depth < limits.max_depth
            for depth in (ir.static_depth(item.type) for item in args.fields)),
        keyword_only=not positional and varargs is None,
        positional=positional,
        varargs=varargs,
        before_varargs=before,
        defaults={item.name: item.default for item in args.fields if not item.required},
        context=next((name for name, kind in passing if kind == "context"), None),
    )


def _filled_defaults(args: ir.Object, passing: tuple[tuple[str, str], ...]) -> tuple[tuple[str, Any], ...]:
    """(name, default) of the optional parameters dispatch passes itself when left out: those marked
    "default" in `passing` (their Python default is a pydantic `Field(...)`, or an `Annotated` one)."""
    marked = {name for name, kind in passing if kind == "default"}
    return tuple((item.name, item.default) for item in args.fields if item.name in marked and not item.required)


def _pairs_property(fields: Mapping[str, Any]) -> str | None:
    """The property carrying `**kwargs` as key/value pairs in strict mode (None when a field has its name)."""
    from ..formats.strict import PAIRS_PROPERTY  # only tools with **kwargs ask, once per plan

    return None if PAIRS_PROPERTY in fields else PAIRS_PROPERTY


def _add_pairs(out: dict, pairs: Any, where: str, fields: Mapping[str, Any], extra: Any, max_items: int) -> None:
    """Extra keyword arguments sent as `[{"key", "value"}, ...]` (strict mode), converted into `out`."""
    for key, value in pairs_object(pairs if isinstance(pairs, list) else _not_pairs(pairs, where),
                                   where, max_items).items():
        if type(key) is not str:
            raise ConversionError(where, f"argument names must be strings, got {got(key)}")
        if key in fields or key in out:
            raise ConversionError(where, f"the key {key!r} is given twice (also as a named argument or "
                                         "an extra key); each argument at most once")
        out[key] = extra(value, key)


def _not_pairs(value: Any, where: str) -> list:
    raise ConversionError(where, f'expected an array of {{"key": ..., "value": ...}} pairs, got {got(value)}')


def refusal(tool: Tool, problem: str, argument: str | None) -> ToolCallError:
    """The ToolCallError refusing a call of `tool`, with its parameters schema as text kept in the
    Tool's cache (a model that sent bad arguments tends to be refused more than once)."""
    text = tool._cache.get("schema-text")
    if text is None:
        text = tool._cache["schema-text"] = schema_text(tool.parameters)
    return ToolCallError(tool.name, problem, argument, tool.parameters, schema_text=text)


def prepare(tool: Tool, inputs: Any, limits: Limits) -> tuple[tuple, dict, dict]:
    """Validate and convert: (positional, keyword, raw arguments). Raises ToolCallError."""
    try:
        entry = tool._cache.get("converter")  # call_plan's cache, read here without the call
        plan = entry[1] if entry is not None and entry[0] is limits else call_plan(tool, limits)
        if type(inputs) is str and inputs.startswith("{") and len(inputs) <= limits.max_bytes:
            # the common case, JSON text of an object: one decode; anything unusual (invalid JSON,
            # text after the object) goes the careful way, which says what is wrong
            try:
                raw, end = decode_json(inputs)
            except ValueError:
                end = -1
            if end == len(inputs):
                text = inputs
            else:
                raw, text = parse_arguments(inputs, limits)
        else:
            raw, text = parse_arguments(inputs, limits)
            if text is None:  # a dict: bounded by size before anything walks it in full
                check_size(raw, limits)
        if plan.flat:
            # scalar converters check their own limits; here only duplicate keys are in question
            if text is not None and not no_key_dropped(text, len(raw)):
                check_limits(raw, text, limits)
            converted = plan.convert(raw)
        elif plan.closed:
            # converters check every limit of a closed type; once they accepted the value, its
            # depth is bounded, so counting its keys for the duplicate check cannot run away
            converted = plan.convert(raw)
            if text is not None and not no_key_dropped(text, count_keys(raw)):
                check_limits(raw, text, limits)
        else:
            check_limits(raw, text, limits)
            converted = plan.convert(raw)
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
