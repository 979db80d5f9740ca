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

    Attributes (set by `__init__`): `limits` (what a model may send), `approve`
    (`callback(tool, args) -> bool`, or an awaitable bool, consulted before a `destructive` tool
    runs; None: no question asked) and `refuse_destructive` (refuse `destructive` tools outright).
    """

    limits: Limits
    approve: Callable[..., Any] | None
    refuse_destructive: bool

    def __init__(self, *, limits: Limits | None = None, approve: Callable[..., Any] | None = None,
                 refuse_destructive: bool = False):
        self.limits = limits or DEFAULT_LIMITS
        self.approve = approve
        self.refuse_destructive = refuse_destructive

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


_default: list[ToolSource] = []  # one element once nbtools.registry is imported (nbtools/__init__ does)


def set_default(source: ToolSource) -> None:
    """Make `source` the namespace that `ns=None` means in every dispatch function."""
    _default[:] = [source]


def default() -> ToolSource:
    """The namespace `ns=None` means: the process-wide `nbtools.registry`."""
    return _default[0]


__all__ = ["Limits", "DEFAULT_LIMITS", "ToolSource", "set_default", "default"]
