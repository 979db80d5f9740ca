"""Schemas that combine others (`allOf`, a `$ref` beside other keywords), written as one schema.

Neither strict mode nor Gemini's OpenAPI subset carries `allOf` or keywords beside a `$ref`, so the
transforms ask here for one schema with the same meaning: the intersection of the parts. Where it
cannot be written faithfully (parts that disagree, a closed object another part adds keys to, a
recursive type that would have to be copied into itself) the answer is None, and the transform
refuses the schema by name; it never guesses. (`bundle`, which makes the references of embedded
resources root-relative, lives in `schema.bundle`, shared with the schema reader; re-exported here.)
"""

from __future__ import annotations

from typing import Any, Callable

from ..schema.bundle import bundle

__all__ = ["ANNOTATIONS", "is_annotation_only", "intersect", "bundle"]

# Keywords that describe and never constrain: different values of these never conflict.
ANNOTATIONS = frozenset({"description", "title", "default", "examples", "$comment", "deprecated", "readOnly",
                         "writeOnly", "$id", "$schema", "$anchor"})
_LOWER = frozenset({"minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties"})
_UPPER = frozenset({"maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties"})


def is_annotation_only(schema: Any) -> bool:
    return isinstance(schema, dict) and all(key in ANNOTATIONS for key in schema)


def intersect(parts: list[dict], resolve: Callable[[dict], dict | None]) -> tuple[dict | None, str]:
    """One schema accepting exactly what every part accepts, or (None, why not).

    `resolve(part)` returns a `$ref` part's target (None: it cannot be copied, e.g. recursive).
    Annotations of later parts win (the outer keywords describe the use of the type).
    """
    out: dict[str, Any] = {}
    pending = list(parts)
    while pending:
        part = pending.pop(0)
        if "$ref" in part:  # a reference beside constraints: its target and those constraints both hold
            target = resolve(part)
            if target is None:
                return None, f"the reference {part['$ref']!r} (a recursive type) cannot be combined with other keywords"
            pending[:0] = [target, {key: value for key, value in part.items() if key != "$ref"}]
            continue
        if "allOf" in part:
            inner, why = intersect([*part["allOf"], {k: v for k, v in part.items() if k != "allOf"}], resolve)
            if inner is None:
                return None, why
            part = inner
        for key, value in part.items():
            if key not in out or key in ANNOTATIONS:
                out[key] = value
                continue
            merged, why = _both(key, out[key], value, out, part)
            if why:
                return None, why
            out[key] = merged
    return out, ""


def _both(key: str, mine: Any, theirs: Any, out: dict, part: dict) -> tuple[Any, str]:
    """The value of `key` that means both `mine` and `theirs` (or a reason it cannot be written)."""
    if mine == theirs:
        return mine, ""
    if key == "type":
        first = {mine} if isinstance(mine, str) else set(mine)
        second = {theirs} if isinstance(theirs, str) else set(theirs)
        both = [kind for kind in ([mine] if isinstance(mine, str) else mine) if kind in second or
                (kind == "number" and "integer" in second)] + [kind for kind in second if kind == "integer"
                                                               and "number" in first]
        both = list(dict.fromkeys(both))
        if not both:
            return None, f"the parts allow no common type ({mine!r} and {theirs!r})"
        return both[0] if len(both) == 1 else both, ""
    if key == "required":
        return list(dict.fromkeys([*mine, *theirs])), ""
    if key == "enum":
        return [value for value in mine if value in theirs], ""
    if key in _LOWER:
        return max(mine, theirs), ""
    if key in _UPPER:
        return min(mine, theirs), ""
    if key == "properties":
        merged = dict(mine)
        for name, schema in theirs.items():
            merged[name] = schema if name not in merged or merged[name] == schema else \
                {"allOf": [merged[name], schema]}
        if out.get("additionalProperties") is False and set(theirs) - set(mine):
            return None, "a closed object (additionalProperties: false) cannot take the keys another part adds"
        if part.get("additionalProperties") is False and set(mine) - set(theirs):
            return None, "a closed object (additionalProperties: false) cannot take the keys another part adds"
        return merged, ""
    if key == "additionalProperties" and (mine is False or theirs is False):
        return False, ""
    return None, f"the parts disagree on {key} ({mine!r} and {theirs!r})"
