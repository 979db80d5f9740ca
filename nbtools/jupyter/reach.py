"""The kernel's side of `%tools --serve` under a Jupyter Server with the extension: register the
kernel's loopback server with the extension, keep its tool list current, unregister when it stops.

Standard library and nbtools only (no jupyter_server): this runs in the kernel.
"""

from __future__ import annotations

import secrets
import threading
from typing import Any

from . import registration


def proxy_token() -> str | None:
    """A fresh private token for the extension when this kernel was started by a server that has it
    (`registration.ENV` set and a kernel id known), else None: nothing to register with."""
    if registration.server_info() is None or registration.kernel_id_here() is None:
        return None
    return secrets.token_urlsafe(32)


def register(server: Any, token: str, *, cells: bool = False) -> str:
    """Register `server` (a `RunningServer` started with `proxy_token=token`) with the extension;
    returns the line `%tools --serve` prints: the URL paths to use through Jupyter. `cells`: also
    write each call as a cell into this kernel's notebook (`cells.enable`), with a token of its own."""
    info = registration.server_info()
    kernel_id = registration.kernel_id_here()
    if info is None or kernel_id is None:
        raise RuntimeError("not in a kernel started by a Jupyter Server with nbtools.jupyter")
    lock = threading.Lock()
    stopped = threading.Event()
    path = registration.file_for(info["runtime_dir"], kernel_id)
    cells_token = secrets.token_urlsafe(32) if cells else ""

    def write() -> None:  # at start, and whenever the registry changes (on whatever thread changed it)
        with lock:
            if not stopped.is_set():
                registration.write(info["runtime_dir"], kernel_id, server.port, token,
                                   [tool.name for tool in server.registry.enabled()], cells_token)

    write()
    unsubscribe = server.registry.on_change(write)

    def unregister() -> None:
        unsubscribe()
        with lock:
            stopped.set()
            registration.remove(path)

    server.on_stop.append(unregister)
    by_kernel, by_notebook = registration.url_paths(info["base_url"], kernel_id,
                                                    registration.notebook_here(info.get("root_dir")))
    where = f"{by_notebook} (or {by_kernel})" if by_notebook else by_kernel
    written = ""
    if cells:
        from .cells import enable

        written = enable(server, info, kernel_id, cells_token)
    return (f"\nThrough this Jupyter server: {where}, after the address you open Jupyter at, with your "
            "Jupyter token (`Authorization: token <Jupyter token>`) or, under JupyterHub, a Hub API token."
            + written)


__all__ = ["proxy_token", "register"]
