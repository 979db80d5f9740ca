"""nbtools: the functions you write in a notebook, as tools a language model can call.

Importing this package is light: IPython, ipywidgets, pydantic and mcp are imported only when a
feature needs them. This module only re-exports; see DESIGN.md for the data path.
"""

from __future__ import annotations

from typing import Any

from .lazy import lazy_names

from .errors import NbtoolsError, SchemaError, ToolCallError
from .introspect import get_schema, tool, tools_from
from .policy import Decision
from .registry import Limits, Registry, registry
from .schema import type_schema
from .tool import HINTS, Tool

__version__ = "0.1.0"

# Names served lazily from their modules (keeps `import nbtools` fast and the modules independent).
_LAZY = {
    "mk_ns": "call", "call_func": "call", "call_func_async": "call",
    "run_tool_calls": "call", "arun_tool_calls": "call",
    "python": "interp", "python_async": "interp", "run_code": "interp", "ExecResult": "interp",
    "Allow": "interp.confine",
    "schema2sig": "inverse", "mk_tool": "inverse",
    "panel": "widgets", "ApprovalPrompt": "approval",
    "ToolContext": "context", "Elicitation": "context",
    "Image": "content", "Audio": "content", "Resource": "content", "ResourceLink": "content",
    "Chat": "chat",
    "resource": "resources", "prompt": "resources", "share": "sharing",
    "replay": "chat.cassette",
    "describe": "chat.describing",
}


__getattr__ = lazy_names(__name__, _LAZY)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


def load_ipython_extension(shell: Any) -> None:
    """`%load_ext nbtools`: register the `%%tool`, `%tool`, `%tools` and `%untool` magics."""
    from .magics import load_ipython_extension as load

    load(shell)


def unload_ipython_extension(shell: Any) -> None:
    """`%unload_ext nbtools`: remove the magics (registered tools stay in the registry)."""
    from .magics import unload_ipython_extension as unload

    unload(shell)


__all__ = [
    "Tool", "tool", "tools_from", "get_schema", "type_schema", "Registry", "registry", "Limits", "Decision",
    "NbtoolsError", "SchemaError", "ToolCallError", "HINTS", *_LAZY,
]
