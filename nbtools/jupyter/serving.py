"""Which kernels of the server serve MCP: the handlers' shared base (finding a serving kernel from
its id, checking its registration against the kernel the server runs) and `GET nbtools/api/kernels`.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

from . import registration
from .registration import Registration

AUTH_RESOURCE = "nbtools"
NOT_SERVING = -32001  # the JSON-RPC error code of a 404 (a server-defined code: MCP names none for it)


class NbtoolsHandler(APIHandler):
    """What the listing and the proxy share: the auth resource and finding serving kernels."""

    auth_resource = AUTH_RESOURCE

    @property
    def runtime_dir(self) -> str:
        return str(self.settings["serverapp"].runtime_dir)

    def registration_of(self, kernel_id: str) -> Registration | str:
        """The kernel's registration, or why there is none (the text of a 404)."""
        manager = self.settings["kernel_manager"]
        if kernel_id not in manager:
            return (f"no kernel {kernel_id} runs on this Jupyter server "
                    f"(GET {url_path_join(self.base_url, 'nbtools/api/kernels')} lists them)")
        found = registration.read(self.runtime_dir, kernel_id)
        pid = kernel_pid(manager.get_kernel(kernel_id))
        if pid is None:
            return (f"kernel {kernel_id} does not run on this server's host (a gateway or remote kernel): "
                    "nbtools reaches only kernels the server runs itself")
        if found is None or not is_same_or_child(found.pid, pid):
            return (f"kernel {kernel_id} does not serve MCP: run `%load_ext nbtools` and then "
                    "`%tools --serve` in its notebook")
        return found

    async def sessions(self) -> list[dict]:
        manager = self.settings.get("session_manager")
        return list(await manager.list_sessions()) if manager is not None else []

    def json_rpc_error(self, status: int, message: str, request_id: Any = None) -> None:
        """Answer `status` with a JSON-RPC error body an MCP client shows as is."""
        self.set_status(status)
        self.finish(json.dumps({"jsonrpc": "2.0", "id": request_id,
                                "error": {"code": NOT_SERVING, "message": message}}))


class KernelsHandler(NbtoolsHandler):
    """`GET nbtools/api/kernels`: the server's kernels and which of them serve MCP."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        manager = self.settings["kernel_manager"]
        notebooks = {session["kernel"]["id"]: session.get("path") for session in await self.sessions()
                     if session.get("kernel")}
        listed = []
        for kernel_id in manager.list_kernel_ids():
            found = self.registration_of(kernel_id)
            serving = isinstance(found, Registration)
            notebook = notebooks.get(kernel_id)
            by_kernel, by_notebook = registration.url_paths(self.base_url, kernel_id, notebook)
            listed.append({"kernel_id": kernel_id, "name": getattr(manager.get_kernel(kernel_id), "kernel_name", None),
                           "notebook": notebook, "serving": serving,
                           "tools": list(found.tools) if serving else [],
                           "url": by_kernel, "notebook_url": by_notebook})
        self.finish(json.dumps(listed))


def kernel_pid(kernel: Any) -> int | None:
    """The pid of a kernel the server runs on its own host, else None."""
    provisioner = getattr(kernel, "provisioner", None)
    pid = getattr(provisioner, "pid", None)
    if pid is None:
        pid = getattr(getattr(provisioner, "process", None), "pid", None)
    return pid if isinstance(pid, int) else None


def is_same_or_child(pid: int, ancestor: int) -> bool:
    """Whether `pid` is `ancestor` or runs under it (a kernel started through a wrapper); on Linux
    the parents are read from /proc, elsewhere only the same pid counts."""
    seen = 0
    while pid > 1 and seen < 32:
        if pid == ancestor:
            return True
        if not sys.platform.startswith("linux"):
            return False
        try:
            with open(f"/proc/{pid}/stat") as handle:
                pid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
        seen += 1
    return False
