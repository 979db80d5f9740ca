"""JSON Schema validation keywords (`minimum`, `maxLength`, `pattern`, `uniqueItems`, ...) as checks
on the raw JSON value, run after its converter accepted the value's kind.

Keywords that only annotate (`format`, `title`, `examples`, ...) and those not enforced are skipped.

`pattern` is matched with RE2 (`google-re2`, imported when the first pattern is compiled), whose time
is linear in the input: a pattern from a schema meets text from a model, and Python's backtracking
`re` takes seconds on 27 characters of `^(a+)+$`. RE2 reads the ECMA-262 subset JSON Schema
recommends (its digit, word and end-of-text classes mean what ECMA-262 says, unlike Python's). A pattern RE2 refuses
(lookaround, backreferences: no linear-time engine can run them) is not enforced: validation is
looser, the tool (or the remote server) still sees the value, and a `PatternWarning` says so when
the tool's converter is compiled. We never fall back to `re`: no input bound makes it safe.
"""

from __future__ import annotations

import json
import warnings
from typing import Any, Callable

from .. import ir
from .scalars import Converter
from ..shortening import short
from ..refusals import ConversionError, got


class PatternWarning(UserWarning):
    """A `pattern` that is not enforced because RE2 cannot run it in linear time."""


def compile_pattern(pattern: str) -> Callable[[str], Any] | None:
    """A linear-time `search` for an ECMA-262 `pattern`, or None (with a PatternWarning) when RE2
    refuses it (lookaround, backreferences, invalid syntax)."""
    import re2  # google-re2: loaded with the first pattern, so `import nbtools` stays light

    options = re2.Options()
    options.log_errors = False  # RE2 would print every refused pattern to stderr
    try:
        return re2.compile(pattern, options).search
    except Exception as error:  # re2.error; its message is bytes
        reason = error.args[0].decode("utf-8", "replace") if error.args and isinstance(error.args[0], bytes) \
            else str(error)
        warnings.warn(f"the pattern {short(repr(pattern), 200)} is not enforced: the linear-time engine RE2 "
                      f"refuses it ({short(reason, 200)}; lookaround and backreferences have no linear-time "
                      "form); the tool receives values without this check", PatternWarning, stacklevel=2)
        return None


def _json_equal_key(value: Any) -> Any:
    """A hashable key under which equal JSON values collide (for uniqueItems)."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float)):
        return ("number", value)
    if isinstance(value, (str, type(None))):
        return ("scalar", value)
    return ("json", json.dumps(value, sort_keys=True, default=str))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _multiple_of(value: Any, step: Any) -> bool:
    if isinstance(value, int) and isinstance(step, int):
        return value % step == 0
    import decimal  # only for a float multipleOf, rare enough not to load it with nbtools

    try:  # decimal arithmetic so 0.3 is a multiple of 0.1
        return decimal.Decimal(repr(value)) % decimal.Decimal(repr(step)) == 0
    except (decimal.InvalidOperation, ValueError):
        return False


def _constraint_check(keyword: str, bound: Any) -> Callable[[Any], str | None] | None:
    """A check for one keyword returning a problem text (or None); None for keywords not enforced."""
    if keyword == "minimum":
        return lambda value: None if not _is_number(value) or value >= bound else f"must be >= {bound}, got {value}"
    if keyword == "maximum":
        return lambda value: None if not _is_number(value) or value <= bound else f"must be <= {bound}, got {value}"
    if keyword == "exclusiveMinimum" and _is_number(bound):
        return lambda value: None if not _is_number(value) or value > bound else f"must be > {bound}, got {value}"
    if keyword == "exclusiveMaximum" and _is_number(bound):
        return lambda value: None if not _is_number(value) or value < bound else f"must be < {bound}, got {value}"
    if keyword == "multipleOf" and _is_number(bound) and bound > 0:
        return lambda value: (None if not _is_number(value) or _multiple_of(value, bound)
                              else f"must be a multiple of {bound}, got {value}")
    if keyword == "minLength":
        return lambda value: (None if not isinstance(value, str) or len(value) >= bound
                              else f"must be at least {bound} characters long, got {len(value)}")
    if keyword == "maxLength":
        return lambda value: (None if not isinstance(value, str) or len(value) <= bound
                              else f"must be at most {bound} characters long, got {len(value)}")
    if keyword == "pattern" and isinstance(bound, str):
        search = compile_pattern(bound)
        if search is None:
            return None  # refused by RE2: looser, never slow (see the module docs)
        shown = short(repr(bound), 200)
        return lambda value: (None if not isinstance(value, str) or search(value)
                              else f"must match the pattern {shown}, got {got(value)}")
    if keyword == "minItems":
        return lambda value: (None if not isinstance(value, (list, tuple)) or len(value) >= bound
                              else f"must have at least {bound} items, got {len(value)}")
    if keyword == "maxItems":
        return lambda value: (None if not isinstance(value, (list, tuple)) or len(value) <= bound
                              else f"must have at most {bound} items, got {len(value)}")
    if keyword == "uniqueItems" and bound is True:
        def unique(value: Any) -> str | None:
            if not isinstance(value, (list, tuple)):
                return None
            seen = set()
            for item in value:
                key = _json_equal_key(item)
                if key in seen:
                    return f"items must be unique; {json.dumps(item, default=str)[:60]} appears twice"
                seen.add(key)
            return None

        return unique
    if keyword == "minProperties":
        return lambda value: (None if not isinstance(value, dict) or len(value) >= bound
                              else f"must have at least {bound} keys, got {len(value)}")
    if keyword == "maxProperties":
        return lambda value: (None if not isinstance(value, dict) or len(value) <= bound
                              else f"must have at most {bound} keys, got {len(value)}")
    return None  # annotations (format, title, examples, ...) and keywords we do not enforce


def with_constraints(convert: Converter, constraints: ir.Constraints) -> Converter:
    """`convert`, then the checks of `constraints` on the same value (`convert` itself when none applies)."""
    checks = [check for check in (_constraint_check(keyword, bound) for keyword, bound in constraints) if check]
    if not checks:
        return convert

    def constrained(value: Any, path: str) -> Any:
        result = convert(value, path)
        for check in checks:
            problem = check(value)
            if problem is not None:
                raise ConversionError(path, problem)
        return result

    return constrained
