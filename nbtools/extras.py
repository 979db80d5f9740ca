"""Optional dependencies (pip "extras"): say exactly what to install when one is missing.

A plain `pip install nbtools-llm` leaves out the MCP SDK; `nbtools serve`, `%tools --serve` and
`nbtools.mcp.connect()` need it. Without this check they ended in a bare
`ModuleNotFoundError: No module named 'mcp'` that named neither the extra nor the command.
"""

from __future__ import annotations

import importlib.util

# extra name -> (the module it provides, what it brings), as pyproject.toml declares them
EXTRAS: dict[str, tuple[str, str]] = {
    "mcp": ("mcp", "the MCP SDK: `nbtools serve`, `%tools --serve`, `nbtools.mcp.connect()`"),
}


class MissingExtra(ModuleNotFoundError):
    """A feature needs an optional dependency that is not installed; the message says what to install."""


def install_line(extra: str) -> str:
    return f"pip install 'nbtools-llm[{extra}]'"


def require_extra(extra: str, feature: str) -> None:
    """Raise MissingExtra naming `feature` and the install command when `extra`'s module is absent."""
    module, _ = EXTRAS[extra]
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken or None entry in sys.modules
        found = False
    if not found:
        raise MissingExtra(f"{feature} needs the {module!r} package, which a plain install leaves out; "
                           f"install it with: {install_line(extra)}", name=module)


__all__ = ["EXTRAS", "MissingExtra", "install_line", "require_extra"]
