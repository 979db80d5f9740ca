"""One node for "any of these" (`anyOf`, a `type` list, a tuple's item types...), in time linear in
the options: the one place the schema reader merges options, so a hostile schema's thousands of
options cannot make reading quadratic or exponential.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .. import ir

__all__ = ["union"]


def union(nodes: list[ir.Node]) -> ir.Node:
    """One node for "any of these": flattened, with duplicates removed; a single option stands alone.

    Duplicates are found without hashing whole nodes (a node's hash walks all of it, and the nodes
    of a schema whose definitions refer to each other twice per level share subtrees: their
    expanded size doubles per level) and without comparing every pair: options are grouped by a
    key of their top levels (`_shallow_key`), and compared with `==` (which stops at shared
    subtrees) only inside a group, and only with the group's first `_GROUP_COMPARED` members:
    beyond that a duplicate may stay, which changes nothing the union accepts.
    """
    if len(nodes) == 1 and not isinstance(nodes[0], (ir.Union, ir.AnyValue)):
        return nodes[0]  # the common case: one `type`
    if len(nodes) == 2 and type(nodes[1]) is ir.NoneValue and \
            not isinstance(nodes[0], (ir.Union, ir.AnyValue, ir.NoneValue)):
        return ir.Union(options=(nodes[0], nodes[1]))  # the next commonest: `["string", "null"]`
    flat: list[ir.Node] = []
    for node in nodes:
        if isinstance(node, ir.Union) and node.description is None and not node.constraints:
            flat.extend(node.options)
        else:
            flat.append(node)
    unique: list[ir.Node] = []
    groups: dict[Any, list[ir.Node]] = {}
    for node in flat:
        group = groups.setdefault(_shallow_key(node, _SHALLOW_DEPTH), [])
        if any(other is node or _same(node, other) for other in group):
            continue
        if len(group) < _GROUP_COMPARED:
            group.append(node)
        unique.append(node)
    if any(isinstance(node, ir.AnyValue) and node.description is None and not node.constraints
           for node in unique):
        return ir.AnyValue()
    if len(unique) == 1:
        return unique[0]
    return ir.Union(options=tuple(unique))


_SHALLOW_DEPTH = 4
_GROUP_COMPARED = 32
_COMPARED_FIELDS: dict[type, tuple[str, ...]] = {}


def _shallow_key(value: Any, depth: int) -> Any:
    """A hashable key that equal values share, reading `value` only `depth` levels deep (a tuple
    is a level: its length and first 8 items), so computing it costs little on any node."""
    if isinstance(value, (ir.Node, ir.Field)):
        if depth <= 0:
            return type(value)
        names = _COMPARED_FIELDS.get(type(value))
        if names is None:
            names = tuple(item.name for item in dataclasses.fields(value) if item.compare)
            _COMPARED_FIELDS[type(value)] = names
        return (type(value), *(_shallow_key(getattr(value, name), depth - 1) for name in names))
    if isinstance(value, tuple):
        if depth <= 0:
            return len(value)
        return (len(value), *(_shallow_key(item, depth - 1) for item in value[:8]))
    try:
        hash(value)
    except TypeError:  # a dict or list default
        return type(value)
    return value


def _same(left: ir.Node, right: ir.Node) -> bool:
    try:
        return left == right
    except Exception:  # unhashable/odd defaults inside fields: treat as different
        return False
