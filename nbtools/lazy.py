"""Names a package serves from its modules when first asked for (a module `__getattr__`, PEP 562), so
importing the package stays light: `nbtools`, `nbtools.call`, `nbtools.formats`, `nbtools.interp`."""

from __future__ import annotations

import sys
from typing import Any, Callable, Mapping


def lazy_names(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """The `__getattr__` of `package`: `name` taken from its module `where[name]` (relative to the
    package), imported then and kept in the package's namespace (so asked for once)."""

    def __getattr__(name: str) -> Any:
        module_name = where.get(name)
        if module_name is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(f"{package}.{module_name}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
