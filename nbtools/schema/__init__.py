"""The intermediate form (`ir`) <-> JSON Schema (draft 2020-12); owns `$defs` naming.

`render.py`: ir -> JSON Schema, and `type_schema` (one Python type's schema). `read.py`: JSON Schema
-> ir (`schema_to_ir`), and a tool's parameters schema -> its arguments object (`arguments_object`).
"""

from __future__ import annotations

from .read import MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES, arguments_object, schema_to_ir
from .render import Renderer, render_schema, type_schema

__all__ = ["type_schema", "render_schema", "Renderer", "schema_to_ir", "arguments_object",
           "MAX_SCHEMA_DEPTH", "MAX_SCHEMA_NODES"]
