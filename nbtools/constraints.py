"""Validation constraints: from `Annotated` metadata to the JSON Schema keyword each node carries.

`Annotated[int, Field(ge=1)]`, `Annotated[str, annotated_types.Len(1, 5)]`, `x: int = Field(3, le=9)`:
the metadata is read by duck typing (pydantic and annotated_types are never imported here) and each
bound is written with the keyword that means it for the node (`min_length` on a list is `minItems`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from . import ir

__all__ = ["metadata_constraints", "with_constraints"]

# annotated_types / pydantic metadata attribute -> JSON Schema keyword
_CONSTRAINT_ATTRS = {
    "gt": "exclusiveMinimum", "ge": "minimum", "lt": "exclusiveMaximum", "le": "maximum",
    "multiple_of": "multipleOf", "min_length": "minLength", "max_length": "maxLength",
    "pattern": "pattern",
}



def metadata_constraints(meta: Any) -> ir.Constraints:
    """The validation keywords one `Annotated` metadata object carries (pydantic `Field(ge=1)`,
    annotated_types `Gt(0)`, `Len(1, 5)`, ...), written as for a string or a number: `minLength`
    and `maxLength` stand for any length until `with_constraints` sees what they apply to."""
    found: dict[str, Any] = {}
    for item in [meta, *getattr(meta, "metadata", ())]:
        for attr, keyword in _CONSTRAINT_ATTRS.items():
            value = getattr(item, attr, None)
            if value is not None and not callable(value):
                found[keyword] = value
    return tuple(found.items())


# A length bound means characters for a string, items for an array, keys for an object.
_LENGTH_KEYWORDS = {"minLength": ("minItems", "minProperties"), "maxLength": ("maxItems", "maxProperties")}
_NUMBER_KEYWORDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})


def _constraint_for(node: ir.Node, keyword: str) -> str | None:
    """The keyword that carries `keyword` (written as for strings/numbers) on `node`, None when it
    says nothing about the values `node` accepts."""
    if isinstance(node, ir.AnyValue):
        return keyword
    if keyword in _NUMBER_KEYWORDS:
        numeric = isinstance(node, (ir.Int, ir.Float)) or isinstance(node, (ir.Literal, ir.Enum)) and any(
            isinstance(value, (int, float)) and not isinstance(value, bool) for value in node.values)
        return keyword if numeric else None
    if keyword in _LENGTH_KEYWORDS:
        items, keys = _LENGTH_KEYWORDS[keyword]
        if isinstance(node, (ir.Array, ir.Tuple)):
            return items
        if isinstance(node, (ir.Map, ir.Object, ir.Ref, ir.Pydantic)):
            return keys
        if isinstance(node, ir.Str) or isinstance(node, (ir.Literal, ir.Enum)) and any(
                isinstance(value, str) for value in node.values):
            return keyword
        return None
    if keyword == "pattern":
        return keyword if isinstance(node, (ir.Str, ir.Literal, ir.Enum)) else None
    return keyword


def with_constraints(node: ir.Node, constraints: ir.Constraints) -> ir.Node:
    """`node` with validation `constraints` added (later ones win), each written with the keyword
    that means it for this node (`min_length` on a list is `minItems`). On a union each goes to the
    options it applies to (`Annotated[int | None, Field(ge=1)]`: the integer must be >= 1), so that
    flattening the union with another cannot lose it and strict dialects never see it beside anyOf."""
    if not constraints:
        return node
    if isinstance(node, ir.Union):
        options = tuple(with_constraints(option, tuple(
            pair for pair in constraints if _constraint_for(option, pair[0]) is not None))
            for option in node.options)
        return dataclasses.replace(node, options=options)
    merged = dict(node.constraints)
    for keyword, value in constraints:
        target = _constraint_for(node, keyword)
        if target is not None:
            merged[target] = value
    if merged == dict(node.constraints):
        return node
    return dataclasses.replace(node, constraints=tuple(merged.items()))
