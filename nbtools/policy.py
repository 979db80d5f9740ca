"""What dispatch needs from a registry, defined below both: the `Limits` on what a model may send,
the `ToolSource` interface (lookup by name, approval policy) and which source `ns=None` means.

`nbtools.call` reads registries only through this module and never imports `nbtools.registry`;
`Registry` implements `ToolSource` and, when its module is imported, installs the process-wide
`registry` as the default here. So the registry can run calls and dispatch can default to the
registry without the two modules importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from .tool import Tool


@dataclass(frozen=True)
class Limits:
    """Limits on what a model may send (checked before anything runs).

    Fields:
        max_bytes: size of the argument JSON text (also bounds any single string or list).
        max_depth: nesting depth of arrays/objects.
        max_string: longest string, in characters.
        max_items: longest array / largest object, in elements.
        max_int: integers must lie within ±max_int.
        max_result_chars: results longer than this are cut, with a marker saying so.
    """

    max_bytes: int = 1 << 20
    max_depth: int = 64
    max_string: int = 1 << 20
    max_items: int = 1 << 20
    max_int: int = 2**63
    max_result_chars: int = 100_000


DEFAULT_LIMITS = Limits()


class ToolSource:
    """A namespace with a policy: what `nbtools.call` reads from a registry.

    Policy (read live on every call): `limits` (what a model may send), `approve`
    (`callback(tool, args) -> bool`, or an awaitable bool, consulted before a `destructive` tool
    runs; None: no question asked) and `refuse_destructive` (refuse `destructive` tools outright).

    A source made with `parent=` (a `select()` view) reads its parent's policy live, so setting
    `approve` on the parent later still holds for the view; a setting made on the view itself wins
    for `limits` and `approve`, and `refuse_destructive` holds when either sets it.

    The policy travels with the Tools a source hands out (`bind`): `source.get(name).call(...)`,
    `list(source)`, `mk_ns(source)` and `run_tool_calls(reply, ns=list(source))` ask the same
    questions as `source.call(...)`.
    """

    def __init__(self, *, limits: Limits | None = None, approve: Callable[..., Any] | None = None,
                 refuse_destructive: bool = False, parent: "ToolSource | None" = None):
        self._parent = parent
        self._limits = limits
        self._approve = approve
        self._refuse_destructive = bool(refuse_destructive)

    @property
    def limits(self) -> Limits:
        if self._limits is not None:
            return self._limits
        return self._parent.limits if self._parent is not None else DEFAULT_LIMITS

    @limits.setter
    def limits(self, value: Limits | None) -> None:
        self._limits = value

    @property
    def approve(self) -> Callable[..., Any] | None:
        if self._approve is not None:
            return self._approve
        return self._parent.approve if self._parent is not None else None

    @approve.setter
    def approve(self, value: Callable[..., Any] | None) -> None:
        self._approve = value

    @property
    def refuse_destructive(self) -> bool:
        return self._refuse_destructive or (self._parent is not None and self._parent.refuse_destructive)

    @refuse_destructive.setter
    def refuse_destructive(self, value: bool) -> None:
        self._refuse_destructive = bool(value)

    def policy(self) -> tuple[Limits, Callable[..., Any] | None, bool]:
        """(limits, approve, refuse_destructive) as they hold now: what dispatch reads per call."""
        if self._parent is None:  # the common case, without the properties' indirection
            return self._limits or DEFAULT_LIMITS, self._approve, self._refuse_destructive
        return self.limits, self.approve, self.refuse_destructive

    def resolve(self, name: str) -> Tool | None:
        """The Tool a model's call named (exact name, or a provider-mapped form of it), or None
        when it is unknown or disabled."""
        raise NotImplementedError

    def get(self, name: str, default: Any = None) -> Tool | None:
        """The Tool registered under `name`, enabled or not (`default` when there is none)."""
        raise NotImplementedError

    def enabled(self) -> list[Tool]:
        """The Tools a model may call, in order."""
        raise NotImplementedError


def bind(tool: Tool, source: ToolSource) -> Tool:
    """A copy of `tool` that carries `source`'s policy wherever it goes (sharing its render and
    call-plan cache). The Tool given stays as it was: it may belong to other sources too."""
    bound = object.__new__(type(tool))
    bound.__dict__.update(tool.__dict__)
    bound.__dict__["_source"] = source
    bound.__dict__["_origin"] = tool.__dict__.get("_origin", tool)
    return bound


def source_of(tool: Tool) -> ToolSource | None:
    """The source whose policy `tool` carries (None: a Tool not handed out by a registry)."""
    return tool.__dict__.get("_source")


def origin_of(tool: Tool) -> Tool:
    """The Tool that `bind` copied (`tool` itself when it is not a bound copy)."""
    return tool.__dict__.get("_origin", tool)


_default: list[ToolSource] = []  # one element once nbtools.registry is imported (nbtools/__init__ does)


def set_default(source: ToolSource) -> None:
    """Make `source` the namespace that `ns=None` means in every dispatch function."""
    _default[:] = [source]


def default() -> ToolSource:
    """The namespace `ns=None` means: the process-wide `nbtools.registry`."""
    return _default[0]


__all__ = ["Limits", "DEFAULT_LIMITS", "ToolSource", "bind", "source_of", "origin_of", "set_default", "default"]
