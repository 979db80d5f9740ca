"""Optional dependencies (pip "extras"): say exactly what to install when one is missing.

A plain install leaves out the MCP SDK; `nbtools serve`, `%tools --serve` and
`nbtools.mcp.connect()` need it. Without this check they ended in a bare
`ModuleNotFoundError: No module named 'mcp'` that named neither the extra nor the command.

The command recommended is one that works where nbtools came from: `pip install -e 'CLONE[mcp]'`
for an install from a clone (pip records the folder), else the extra's own requirements
(`pip install 'mcp>=2.3,<2.4'`, read from the installed metadata). `pip install 'nbtools-llm[mcp]'`
is not recommended: the distribution is not on PyPI yet, and `pip install nbtools` installs an
unrelated package (g2nb's) that owns the import name `nbtools` too.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from urllib.parse import unquote, urlparse

DISTRIBUTION = "nbtools-llm"  # the name in pyproject.toml, kept for publishing on PyPI

# extra name -> (the module it provides, what it brings, its requirements as pyproject.toml declares them)
EXTRAS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "mcp": ("mcp", "the MCP SDK: `nbtools serve`, `%tools --serve`, `nbtools.mcp.connect()`",
            ("mcp>=2.3,<2.4", "mcp-types>=2.3,<2.4", "jsonschema>=4.21", "anyio>=4.9", "httpx2>=2.10", "uvicorn>=0.31.1", "h11>=0.14")),
    "codemode": ("pydantic_monty", "Monty, the interpreter `Registry.code_tool` runs a model's code in",
                 ("pydantic-monty>=1.4,<1.5",)),
}


class MissingExtra(ModuleNotFoundError):
    """A feature needs an optional dependency that is not installed; the message says what to install."""


def install_line(extra: str) -> str:
    """The pip command that installs `extra` for the nbtools running here (see the module docs)."""
    clone = _installed_from_folder()
    if clone is not None:
        folder, editable = clone
        return f"pip install {'-e ' if editable else ''}'{folder}[{extra}]'"
    return "pip install " + " ".join(f"'{requirement}'" for requirement in _requirements(extra))


def _installed_from_folder() -> tuple[str, bool] | None:
    """(the clone's folder, editable) when pip installed nbtools from a local folder that is still there."""
    from importlib import metadata

    try:
        recorded = metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
        url = json.loads(recorded or "null") or {}
    except (metadata.PackageNotFoundError, ValueError, OSError):
        return None
    parsed = urlparse(url.get("url", "")) if isinstance(url, dict) else None
    if parsed is None or parsed.scheme != "file":
        return None
    folder = Path(unquote(parsed.path))
    if not (folder / "pyproject.toml").is_file():
        return None
    return str(folder), bool((url.get("dir_info") or {}).get("editable"))


def _requirements(extra: str) -> tuple[str, ...]:
    """The extra's requirements from the installed metadata (what pip would install), else EXTRAS'."""
    from importlib import metadata

    try:
        declared = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        declared = []
    marker = f"extra == '{extra}'"
    found = tuple(line.split(";", 1)[0].strip() for line in declared
                  if ";" in line and line.split(";", 1)[1].strip().replace('"', "'") == marker)
    return found or EXTRAS[extra][2]


def require_extra(extra: str, feature: str) -> None:
    """Raise MissingExtra naming `feature` and the install command when `extra`'s module is absent."""
    module = EXTRAS[extra][0]
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken or None entry in sys.modules
        found = False
    if not found:
        raise MissingExtra(f"{feature} needs the {module!r} package, which a plain install leaves out; "
                           f"install it with: {install_line(extra)}", name=module)


__all__ = ["EXTRAS", "DISTRIBUTION", "MissingExtra", "install_line", "require_extra"]
