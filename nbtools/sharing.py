"""`share(*names)`: kernel variables as MCP resources `kernel://variables/{name}`, kept up to date.

Each shared name is read when a client reads its resource (its value at that moment, never any other
variable: only the names shared are reachable), as a typed preview:

* `str` -> text; `bytes` -> a blob; a JSON value (dict, list, number, bool, None) -> `application/json`;
* a table (anything with `head()` and `to_csv()`, e.g. a pandas or polars DataFrame) -> its first
  `TABLE_ROWS` rows as `text/csv`;
* an image (PIL image, matplotlib figure, `IPython.display.Image`, `nbtools.Image`) -> the image;
* anything else -> its `repr`, cut at `MAX_TEXT` characters.

In IPython a `post_run_cell` hook compares each shared name's object with the one seen before: when a
cell rebinds it (or deletes it), subscribed clients get `notifications/resources/updated`. A change made
inside the same object (`df.loc[0, "a"] = 1`) is not seen by that identity test; call
`nbtools.sharing.touch(name)` after one.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from .resources import Catalog, ResourceError, ServedResource, catalog_of

__all__ = ["share", "unshare", "touch", "preview", "SCHEME"]

SCHEME = "kernel://variables/"
TABLE_ROWS = 20
MAX_TEXT = 100_000
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


def preview(value: Any) -> Any:
    """What a client reads for `value`: str, bytes, an `Image`, or a `Resource`-like record (see the module docs)."""
    from .content import Image, Resource, as_content

    if isinstance(value, (str, bytes)):
        return value
    rich = as_content(value)
    if isinstance(rich, Image):
        return rich
    if _is_table(value):
        text = value.head(TABLE_ROWS).to_csv()
        return Resource("table", text=text if isinstance(text, str) else str(text), mime="text/csv")
    if value is None or isinstance(value, (bool, int, float, dict, list, tuple)):
        try:
            return Resource("json", text=json.dumps(value, allow_nan=False), mime="application/json")
        except (TypeError, ValueError):
            pass  # not plain JSON (a set inside, NaN, objects): its repr
    text = repr(value)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + f"... [{len(text) - MAX_TEXT} more characters]"


def _is_table(value: Any) -> bool:
    return (not isinstance(value, type) and callable(getattr(value, "head", None))
            and callable(getattr(value, "to_csv", None)))


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
