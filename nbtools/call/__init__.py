"""Dispatch: run a model's tool calls against the right Python functions, validated and confined.

The path of one call (every step happens before the function runs, except the last two):

1. **Resolve** the name in an explicit namespace (a Registry, a list of callables/Tools, or a dict),
   by exact key only: no attribute paths, no dunders, no globals, no builtins/classes/modules found
   in a dict. The Tool holds the object registered, so rebinding a name later changes nothing.
2. **Parse** the arguments: a dict, or JSON text (size limit, no NaN/Infinity, no duplicate keys).
3. **Check limits** (nesting depth, container sizes, string lengths, integer range).
4. **Convert** each argument to its declared Python type with a converter compiled once per Tool
   from the intermediate form (`ir`): a fixed list of conversions, never an arbitrary annotation
   called with model data. A JSON string is never turned into a number or a boolean.
5. **Approve** tools with the `destructive` hint (refuse, or ask a callback).
6. **Call**, awaiting coroutines; the tool's own exception becomes a `ToolCallError` whose text
   names the exception and the tool's line, chained from the original.
7. **Serialise** the result for the model (`result_text`) and, for a whole model reply, build the
   provider's tool-result message (`run_tool_calls`).

Conversion decisions (applied everywhere, also inside lists, dicts and nested objects):

* integer: JSON integers; a float with no fractional part (`5.0`) is accepted as `5`, because
  JSON Schema's "integer" means exactly that; `true`/`false` and `"5"` are refused.
* number: integers and floats (integers become floats). In a union, a JSON integer tries an `int`
  option first and a JSON float a `float` option first (`int | float` keeps `2.0` a float).
* string-borne types: `datetime`/`date`/`time` from ISO 8601 text, `timedelta` from an ISO 8601
  duration (`P1DT2H`, `PT0.5S`; years and months are refused: they have no fixed length), `UUID`,
  `Decimal` (written like a JSON number, finite), `Path` (no NUL), `bytes` from base64.
* `Literal`/`Enum`: exact JSON equality (`true` is not `1`; `1.0` equals `1`).
* mapping keys are JSON strings; for `int` keys the canonical decimal form (`"12"`, not `"012"`) is
  converted, the one place digits in a string become a number.
* `pattern` is matched in linear time (RE2); a pattern RE2 cannot run is not enforced, with a
  `PatternWarning` (see `keywords`).
* objects are closed unless the type says otherwise; missing optional parameters are not passed,
  so the function's own default applies. A null for an optional parameter that cannot be null
  means "left out" too (OpenAI's strict mode sends exactly that); for a required one it is refused.
* free-form values (`Any`, a bare `dict` or `list`) arrive as copies of what was sent: a tool that
  changes them leaves the model's reply (kept in a history or a log) and a caller's dict as sent.

Limits (`policy.Limits`, per registry): `max_bytes` bounds JSON text, and a dict's JSON size (a
bounded walk before anything converts it: 200 MB of shared strings is refused as fast as 1 MiB);
`max_depth`, `max_string`, `max_items` and `max_int` apply everywhere, before any conversion of
free-form values and during the conversion of typed ones.

The modules, in the order of the path: `jsontext` (parsing, limits, duplicate keys), `parsers`
(string-borne types), `scalars`, `keywords` and `convert` (the intermediate form -> converters),
`plan` (the dispatch of one Tool, built once and kept with it: converters, keyword split, the
approval's view of the arguments), `namespace` (resolving a name), `asking` (approval), `invoke`
(the call, the async bridge), `items` (generator results, read only up to the result-size limit)
and `answers` (text for the model, whole replies). The wording of refusals is `nbtools.refusals`;
the strict form (key/value pairs, OpenAI's null for a left-out field) is read back by the rules of
`nbtools.formats.readback`. Registries are read through `nbtools.policy`; this package never
imports the registry.
"""

from __future__ import annotations

from ..lazy import lazy_names

from .jsontext import parse_arguments
from .convert import compile_converter
from .namespace import mk_ns, resolve_tool
from .parsers import parse_duration
from .plan import CallPlan, call_plan
from .invoke import acall_tool, call_func, call_func_async, call_tool, run_awaitable
from .scalars import Converter
from ..refusals import ConversionError  # what a `compile_converter` converter raises

# Served from `answers` when first asked for: a call (`call_func`) needs none of the text for the
# model, nor the rich content it reads (`nbtools.content`).
_ANSWERS = dict.fromkeys(("run_tool_calls", "arun_tool_calls", "result_text", "rendered"), "answers")


__getattr__ = lazy_names(__name__, _ANSWERS)


__all__ = [
    "compile_converter", "Converter", "ConversionError", "CallPlan", "call_plan", "parse_arguments",
    "call_tool", "acall_tool", "mk_ns", "resolve_tool", "call_func", "call_func_async",
    "run_tool_calls", "arun_tool_calls", "result_text", "rendered", "run_awaitable", "parse_duration",
]


def __dir__() -> list[str]:
    return sorted({*globals(), *_ANSWERS})
