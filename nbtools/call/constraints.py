"""JSON Schema validation keywords (`minimum`, `maxLength`, `pattern`, `uniqueItems`, ...) as checks
on the raw JSON value, run after its converter accepted the value's kind.

Keywords that only annotate (`format`, `title`, `examples`, ...) and those not enforced are skipped;
a `pattern` Python cannot read (ECMA-262 only) is skipped too: looser validation, never a crash.
"""

from __future__ import annotations

import decimal
import json
import re
from typing import Any, Callable

from .. import ir
from .scalars import Converter
from .words import ConversionError, got


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
        try:
            compiled = re.compile(bound)
        except re.error:
            return None  # an ECMA-262 pattern Python cannot read: looser, never a crash
        return lambda value: (None if not isinstance(value, str) or compiled.search(value)
                              else f"must match the pattern {bound!r}, got {got(value)}")
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
