"""Read-only JSON data: the cached schemas every caller shares, handed out without copying.

A schema is built once per function and returned on every later call (the warm path costs about a
microsecond; copying a large schema would cost tens). So the nested parts are frozen instead: a
`FrozenDict`/`FrozenList` is a real `dict`/`list` (json.dumps, equality, isinstance, SDKs all work),
whose changing methods raise a `TypeError` that says to copy first. `copy.copy`, `copy.deepcopy`
and pickling give plain, changeable data.
"""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["FrozenDict", "FrozenList", "freeze", "thaw"]

_SHARED = ("this schema is cached and shared by every later call, so it cannot be changed in place; "
           "change a copy (copy.deepcopy(schema)) instead")


def _refuse(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError(_SHARED)


class FrozenDict(dict):
    """A dict that refuses changes (see the module docstring)."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _refuse

    def __copy__(self) -> dict:
        return dict(self)

    def __deepcopy__(self, memo: dict) -> dict:
        return thaw(self)

    def __reduce__(self) -> tuple:
        return (dict, (thaw(self),))


class FrozenList(list):
    """A list that refuses changes (see the module docstring)."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = append = extend = insert = remove = pop = clear = \
        sort = reverse = _refuse

    def __copy__(self) -> list:
        return list(self)

    def __deepcopy__(self, memo: dict) -> list:
        return thaw(self)

    def __reduce__(self) -> tuple:
        return (list, (thaw(self),))


def freeze(value: Any) -> Any:
    """`value` (JSON data) with every dict and list frozen; parts frozen already are kept as they are."""
    kind = type(value)
    if kind is dict:
        return FrozenDict({key: freeze(item) for key, item in value.items()})
    if kind is list:
        return FrozenList([freeze(item) for item in value])
    return value  # scalars, and FrozenDict/FrozenList (frozen all the way down when made here)


def thaw(value: Any) -> Any:
    """A plain, changeable deep copy of JSON data (frozen or not)."""
    if isinstance(value, dict):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, list):
        return [thaw(item) for item in value]
    return value
