"""`share(*names)`: kernel variables as MCP resources `kernel://variables/{name}`, kept up to date.

Each shared name is read when a client reads its resource (its value at that moment, never any other
variable: only the names shared are reachable), as a typed preview made under a deadline and cut to a
size (`previews.py`: text, a blob, JSON, a table's head as CSV, an image, else the `repr`).

In IPython a `post_run_cell` hook compares each shared name's object with the one seen before: when a
cell rebinds it (or deletes it), subscribed clients get `notifications/resources/updated`. A change made
inside the same object (`df.loc[0, "a"] = 1`) is not seen by that identity test; call
`nbtools.sharing.touch(name)` after one.
"""

from __future__ import annotations

import sys
from typing import Any

from .previews import MAX_TEXT, PREVIEW_SECONDS, TABLE_ROWS, preview
from .resources import Catalog, ResourceError, ServedResource, catalog_of

__all__ = ["share", "unshare", "touch", "preview", "SCHEME", "MAX_TEXT", "PREVIEW_SECONDS", "TABLE_ROWS"]

SCHEME = "kernel://variables/"
_MISSING = object()

# name -> (namespace, catalog, id of the object last seen), across every catalog
_SHARED: dict[tuple[int, str], tuple[dict, Catalog, int]] = {}
_hooked: Any = None  # the IPython shell whose post_run_cell hook is installed


def share(*names: str, registry: Any = None) -> list[str]:
    """Serve the kernel variables `names` as resources `kernel://variables/{name}` on every nbtools MCP
    server of `registry` (default: the default registry). Returns their URIs.

    In IPython the variables are the kernel's (`user_ns`); elsewhere the caller's module globals.
    """
    if not names:
        raise TypeError("share() needs the names of the variables to share, e.g. share('df', 'config')")
    namespace = _namespace(sys._getframe(1).f_globals)
    catalog = catalog_of(registry)
    uris = []
    for name in names:
        if not isinstance(name, str) or not name.isidentifier():
            raise TypeError(f"share(): {name!r} is not a variable name (pass names as strings: share('df'))")
        if name not in namespace:
            raise NameError(f"share(): no variable {name!r} is defined; define it first, then share it")
        uri = SCHEME + name
        entry = ServedResource(uri=uri, name=name, fn=_reader(namespace, name),
                               description=f"kernel variable {name} (a live preview of its current value)")
        catalog.add_resource(entry)
        _SHARED[(id(catalog), name)] = (namespace, catalog, id(namespace.get(name, _MISSING)))
        uris.append(uri)
    _install_hook()
    return uris


def unshare(*names: str, registry: Any = None) -> None:
    """Stop serving the variables `names`."""
    catalog = catalog_of(registry)
    for name in names:
        catalog.remove(SCHEME + name)
        _SHARED.pop((id(catalog), name), None)


def touch(name: str, registry: Any = None) -> None:
    """Tell subscribed clients that the shared variable `name` changed (after a change in place)."""
    catalog_of(registry).updated(SCHEME + name)


def _namespace(caller_globals: dict) -> dict:
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell.user_ns if shell is not None else caller_globals


def _reader(namespace: dict, name: str) -> Any:
    def read() -> Any:
        value = namespace.get(name, _MISSING)
        if value is _MISSING:
            raise ResourceError(f"the shared variable {name!r} is no longer defined in the kernel")
        return preview(value)

    read.__name__ = name
    return read


def _install_hook() -> None:
    global _hooked
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None or _hooked is shell:
        return
    shell.events.register("post_run_cell", _after_cell)
    _hooked = shell


def _after_cell(result: Any = None) -> None:
    """After each cell: every shared variable whose object changed is announced as updated."""
    for key, (namespace, catalog, seen) in list(_SHARED.items()):
        now = id(namespace.get(key[1], _MISSING))
        if now != seen:
            _SHARED[key] = (namespace, catalog, now)
            catalog.updated(SCHEME + key[1])
