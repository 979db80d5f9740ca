"""The Jupyter Server extension `nbtools.jupyter` (extra `[jupyter]`): a kernel serving MCP
(`%tools --serve`) reached through the server's own URL and authentication.

Enabled on install by `jupyter-config/jupyter_server_config.d/nbtools.json`. Its parts:
`extension` (loading), `serving` (the kernels listing, which kernel a URL names), `proxy` (the MCP endpoints,
streamed to the kernel's loopback server), `registration` (the file a serving kernel writes for the
extension; standard library only) and `reach` (the kernel's side of `%tools --serve`).

Importing this package loads no jupyter_server: the kernel side imports `registration` from here.
"""

from __future__ import annotations

from typing import Any

from .. import __version__  # what `jupyter server extension list` shows


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "nbtools.jupyter"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from .extension import load

    load(serverapp)


# the name older jupyter_server/notebook versions look for
load_jupyter_server_extension = _load_jupyter_server_extension
