"""How a serving kernel tells the Jupyter Server extension where its MCP server listens (both sides).

The extension, when the server loads it, puts `ENV` in the server's environment, which every kernel
the server starts inherits: the server's runtime dir and base URL (JSON). `%tools --serve` in such a
kernel writes `nbtools-kernel-<kernel id>.json` into that runtime dir: the loopback port, a private
token made for the extension alone, the kernel's pid and the enabled tools' names. The file is made
owner-only (0600) before anything is written into it, and replaced whole (rename) when the tools
change; `%tools --stop` (or the server stopping) removes it. Nothing is reachable before that act.

The extension reads a file only when it belongs to its own user, no one else can read or write it,
and its pid is the pid of the kernel its kernel manager runs under that id: a file left by a kernel
that died, or planted under another kernel's id, names nothing. The private token stays in the
server process: it is sent to the kernel's port only (see `proxy`), never in a response or log line.

Standard library only: the kernel side imports this without jupyter_server.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

ENV = "NBTOOLS_JUPYTER_SERVER"
"""The environment variable the extension sets for the kernels its server starts."""
USER_HEADER = "X-Nbtools-Jupyter-User"
"""The request header carrying the Jupyter user's name (URL-quoted) to the kernel's server; the
kernel honours it only on requests that carry the private token."""
PREFIX = "nbtools-kernel-"


@dataclass(frozen=True)
class Registration:
    """A serving kernel as its file says: where its server listens and the token only the extension sends."""

    kernel_id: str
    port: int
    pid: int
    tools: tuple[str, ...] = ()
    token: str = field(default="", repr=False)
    cells_token: str = field(default="", repr=False)  # `%tools --serve --cells`: the kernel's token to the extension


def server_info() -> dict[str, str] | None:
    """In a kernel started by a server with the extension (its parent): {"runtime_dir", "base_url",
    "root_dir", "pid", "url"} ("url": where the server listens, for the kernel's own requests to the
    extension: `cells`); else None."""
    raw = os.environ.get(ENV)
    if not raw:
        return None
    try:
        info = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(info, dict) or not isinstance(info.get("runtime_dir"), str) \
            or not isinstance(info.get("base_url"), str):
        return None
    if info.get("pid") != os.getppid():  # inherited, not started by that server (a terminal's process)
        return None
    return info


def kernel_id_here() -> str | None:
    """This kernel's id, read from its connection file's name (`kernel-<id>.json`), or None."""
    try:
        from ipykernel.connect import get_connection_file

        name = Path(get_connection_file()).name
    except Exception:  # not in an ipykernel, or no connection file
        return None
    if not (name.startswith("kernel-") and name.endswith(".json")):
        return None
    return name[len("kernel-"):-len(".json")] or None


def file_for(runtime_dir: str | os.PathLike, kernel_id: str) -> Path:
    if not kernel_id or "/" in kernel_id or kernel_id.startswith("."):
        raise ValueError(f"not a kernel id: {kernel_id!r}")
    return Path(runtime_dir) / f"{PREFIX}{kernel_id}.json"


def write(runtime_dir: str | os.PathLike, kernel_id: str, port: int, token: str, tools: list[str],
          cells_token: str = "") -> Path:
    """Write (or replace) this kernel's registration, owner-only from its first byte; returns its path.
    `cells_token`: the token the kernel sends the extension with its cells' events (`cells`), if any."""
    path = file_for(runtime_dir, kernel_id)
    data = json.dumps({"kernel_id": kernel_id, "port": port, "pid": os.getpid(), "token": token,
                       "tools": list(tools), **({"cells_token": cells_token} if cells_token else {})})
    descriptor, temporary = tempfile.mkstemp(prefix=".nbtools-", dir=str(path.parent))  # mode 0600
    try:
        with os.fdopen(descriptor, "w") as handle:
            handle.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return path


def remove(path: str | os.PathLike) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def read(runtime_dir: str | os.PathLike, kernel_id: str) -> Registration | None:
    """The kernel's registration, if its file is there and safe to trust (see the module docs; the pid
    is checked by the caller, who knows the kernel's process)."""
    try:
        path = file_for(runtime_dir, kernel_id)
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except (OSError, ValueError):
        return None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode) or status.st_uid != os.getuid() or status.st_mode & 0o077:
            return None
        with os.fdopen(descriptor, "r") as handle:
            descriptor = -1
            data = json.loads(handle.read(1 << 20))
    except (OSError, ValueError):
        return None
    finally:
        if descriptor >= 0:
            os.close(descriptor)
    try:
        port, pid, token = data["port"], data["pid"], data["token"]
        tools = tuple(str(name) for name in data.get("tools", ()))
        cells_token = data.get("cells_token", "")
    except (KeyError, TypeError):
        return None
    if data.get("kernel_id") != kernel_id or not isinstance(port, int) or not 0 < port < 65536 \
            or not isinstance(pid, int) or not isinstance(token, str) or not token \
            or not isinstance(cells_token, str):
        return None
    return Registration(kernel_id, port, pid, tools, token, cells_token)


def url_paths(base_url: str, kernel_id: str, notebook: str | None) -> tuple[str, str | None]:
    """(the kernel's MCP path under the server, the notebook's, or None without a notebook)."""
    base = base_url if base_url.endswith("/") else base_url + "/"
    by_notebook = f"{base}nbtools/mcp/notebooks/{quote(notebook)}" if notebook else None
    return f"{base}nbtools/mcp/kernels/{kernel_id}", by_notebook


def notebook_here(root_dir: str | None) -> str | None:
    """The notebook's path under the server's root (its API path), from `JPY_SESSION_NAME` (absolute)."""
    session = os.environ.get("JPY_SESSION_NAME")
    if not session or not root_dir:
        return None
    try:
        relative = Path(session).resolve().relative_to(Path(root_dir).resolve())
    except (OSError, ValueError):  # outside the root, or already relative
        return session if not os.path.isabs(session) else None
    return relative.as_posix()


__all__ = ["ENV", "USER_HEADER", "Registration", "server_info", "kernel_id_here", "write", "remove", "read",
           "url_paths", "notebook_here"]
