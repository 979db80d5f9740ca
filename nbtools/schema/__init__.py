"""The intermediate form (`ir`) <-> JSON Schema (draft 2020-12); owns `$defs` naming.

`render.py`: ir -> JSON Schema, and `type_schema` (one Python type's schema); re-exported here.
`read.py`: JSON Schema -> ir (`schema_to_ir`; `unions.py` merges options in linear time).
`params.py`: a tool's parameters schema -> its arguments object (`arguments_object`). The
reading side is imported by those who read schemas (`Tool.from_schema`, the inverse, dispatch),
not by `import nbtools`.
"""

from __future__ import annotations

from .render import Renderer, render_schema, type_schema

__all__ = ["type_schema", "render_schema", "Renderer"]
