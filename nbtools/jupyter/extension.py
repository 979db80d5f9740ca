"""Loading the extension into a Jupyter Server: its routes and the environment its kernels inherit.

Routes, under the server's base URL, all behind Jupyter's own authentication (`@web.authenticated`
+ `@authorized`, resource "nbtools"): `APIHandler` answers 403 to a request without a valid token,
never a login redirect; `Authorization: token T` and `Bearer T` both work and need no XSRF cookie.

* `GET nbtools/api/kernels`: every kernel of this server: id, kernel name, notebook path (or null),
  whether it serves, its tools, and the URL paths to reach it.
* `nbtools/mcp/kernels/<kernel_id>` and `nbtools/mcp/notebooks/<path>`: the MCP endpoint of that
  kernel (`proxy.McpProxy`).
* `nbtools/api/cells/<kernel_id>`: a serving kernel's own channel for `%tools --serve --cells`
  (`cellwriter.CellsHandler`): not Jupyter's authentication but the kernel's private cells token.
  A kernel that dies or is restarted with calls running has their cells ended by the server
  (`cellwriter.end_running`, from the kernel's restarter and jupyter_server's kernel action events).
The handlers are in `serving` (the listing, finding a serving kernel) and `proxy`.
"""

from __future__ import annotations

import json
import os
from typing import Any

from jupyter_server.utils import url_path_join

from . import registration
from .cellwriter import CellsHandler, watch_kernel_actions
from .proxy import McpProxy
from .serving import KernelsHandler


def load(serverapp: Any) -> None:
    """Add the routes, and tell every kernel this server starts where to register (`registration.ENV`)."""
    # Kernels inherit the server's environment (so do its terminals: `pid` tells a kernel the server
    # started, whose parent it is, from a process started in a terminal)
    os.environ[registration.ENV] = json.dumps({"runtime_dir": str(serverapp.runtime_dir),
                                               "base_url": serverapp.base_url,
                                               "root_dir": str(serverapp.root_dir), "pid": os.getpid(),
                                               "url": serverapp.connection_url})
    base = serverapp.base_url
    serverapp.web_app.add_handlers(".*$", [
        (url_path_join(base, "nbtools/api/kernels"), KernelsHandler),
        (url_path_join(base, "nbtools/mcp/(kernels)/([^/]+)"), McpProxy),
        (url_path_join(base, "nbtools/mcp/(notebooks)/(.+)"), McpProxy),
        (url_path_join(base, "nbtools/api/cells/([^/]+)"), CellsHandler),
    ])
    watch_kernel_actions(serverapp)  # cells of a kernel that died mid-call end (`cellwriter.end_running`)
    serverapp.log.info("nbtools: MCP endpoints at %snbtools/mcp/kernels/<id> and %snbtools/mcp/notebooks/<path> "
                       "for kernels that run `%%tools --serve`", base, base)
