"""The two errors people meet: a callable we cannot describe, and a tool call we refuse or that failed."""

from __future__ import annotations

import json
from typing import Any


class SchemaError(TypeError):
    """A callable, parameter or annotation that has no faithful tool definition.

    Fields: `function` (its name), `parameter` (or None), `reason` (what to change).
    """

    def __init__(self, function: str | None, parameter: str | None, reason: str):
        self.function = function
        self.parameter = parameter
        self.reason = reason
        where = []
        if function:
            where.append(f"function {function!r}")
        if parameter:
            where.append(f"parameter {parameter!r}")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {reason}" if prefix else reason)


class ToolCallError(Exception):
    """A tool call that was refused (unknown tool, bad arguments, denied) or that raised.

    Fields:
        tool: the tool name the model asked for.
        argument: the argument at fault, as a path like `points[2].x` (None when not about one).
        problem: what went wrong, in words a model can act on.
        schema: the tool's parameter schema (shown so the model can correct itself), or None.
    `str(error)` is the text for the model.
    """

    def __init__(self, tool: str | None, problem: str, argument: str | None = None,
                 schema: dict | None = None):
        self.tool = tool
        self.argument = argument
        self.problem = problem
        self.schema = schema
        super().__init__(self.text())

    # A schema longer than this is cut in the text (the `schema` field keeps all of it): the text
    # goes back into the model's context, where a huge schema costs more than it helps.
    MAX_SCHEMA_CHARS = 4000

    def text(self) -> str:
        """`Error calling tool 'name', argument 'path': problem`, then the parameters schema (compact JSON)."""
        head = f"Error calling tool {self.tool!r}" if self.tool else "Error"
        if self.argument:
            head += f", argument {self.argument!r}"
        lines = [f"{head}: {self.problem}"]
        if self.schema is not None:
            schema = json.dumps(self.schema, separators=(",", ":"), ensure_ascii=False, default=str)
            if len(schema) > self.MAX_SCHEMA_CHARS:
                schema = schema[: self.MAX_SCHEMA_CHARS] + f"... [schema cut: {len(schema)} characters]"
            lines.append("Parameters schema: " + schema)
        return "\n".join(lines)

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, (self.tool, self.problem, self.argument, self.schema))


__all__ = ["SchemaError", "ToolCallError"]
