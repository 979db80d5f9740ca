"""Every error nbtools raises on purpose, under one base class, and the text for the model built once.

    NbtoolsError
    ├── SchemaError      a callable, parameter or schema with no faithful tool definition (also a TypeError)
    ├── ToolCallError    a tool call refused (unknown tool, bad arguments, denied) or that failed
    │   └── CallRefused  refused by the approval policy (denied, no answer in time, disabled, destructive)
    ├── TargetError      a TARGET of the `nbtools` command that cannot be found or loaded
    ├── NotebookError    a notebook cell that failed while the notebook ran to collect its tools
    ├── CassetteError    a cassette (`Chat(record=)`, `replay`) that cannot be read or written
    │   └── CassetteMismatch   a replayed request that differs from the recorded one
    ├── DescriptionError a model's descriptions (`describe`) refused, or a pin file that does not fit
    └── MagicError       a `%%tool`/`%tools` magic that failed for a reason its message gives in full
    Interrupted          a person's interrupt that ended a call (`call_func`, `python()`); a
                         KeyboardInterrupt, so `except Exception` never swallows it
    ApprovalInterrupt    a person's interrupt while a call waited for approval (also a KeyboardInterrupt)

`except NbtoolsError` catches all of them; each keeps the standard base class code already catches
(`except TypeError` for a SchemaError, `except Exception` for the rest).

In a notebook each of them reads as one or two lines (IPython shows `_render_traceback_` instead of
a traceback): these are expected outcomes whose message says what happened and what to do, and 25
to 60 lines of nbtools' internals above it only hid that. `error.__traceback__` keeps the frames.

A ToolCallError's text ("Error calling tool 'name', argument 'path': problem", then the schema) is
written only by `ToolCallError.text`. Where an error crosses a process boundary (an MCP server's
error result) it travels as `record()` and is rebuilt with `from_record`, never parsed back out of
its text.
"""

from __future__ import annotations

import json
from typing import Any

from .shortening import short


class ShortDisplay:
    """Shown by IPython as `Name: message` (a line per message line) instead of a traceback."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {line}" if index == 0 else line
                for index, line in enumerate(str(self).splitlines() or [""])]


class NbtoolsError(ShortDisplay, Exception):
    """Base class of the errors nbtools raises on purpose (see the module docs for the family)."""


class SchemaError(NbtoolsError, TypeError):
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


class ToolCallError(NbtoolsError):
    """A tool call that was refused (unknown tool, bad arguments, denied) or that raised.

    Fields:
        tool: the tool name the model asked for.
        argument: the argument at fault, as a path like `points[2].x` (None when not about one).
        problem: what went wrong, in words a model can act on.
        schema: the tool's parameter schema (shown so the model can correct itself), or None.
    `str(error)` is the text for the model.
    """

    def __init__(self, tool: str | None, problem: str, argument: str | None = None,
                 schema: dict | None = None, *, schema_text: str | None = None):
        self.tool = tool
        self.argument = argument
        self.problem = problem
        self.schema = schema
        # `schema` as the text shows it, when the caller has it already (dispatch keeps it with the
        # Tool: dumping the schema again for every refusal was a third of the refusal's cost)
        self._schema_text = schema_text
        super().__init__(self.text())

    # A schema longer than this is cut in the text (the `schema` field keeps all of it): the text
    # goes back into the model's context, where a huge schema costs more than it helps.
    MAX_SCHEMA_CHARS = 4000
    # Likewise the tool name and argument path as quoted (both may come from the model) and the
    # problem (which may quote values and list options): the whole text stays a few thousand characters.
    MAX_NAME_CHARS = 200
    MAX_PROBLEM_CHARS = 2000

    def text(self) -> str:
        """`Error calling tool 'name', argument 'path': problem`, then the parameters schema (compact
        JSON); each part cut to its MAX_*_CHARS with a marker."""
        head = f"Error calling tool {short(repr(self.tool), self.MAX_NAME_CHARS)}" if self.tool else "Error"
        if self.argument:
            head += f", argument {short(repr(self.argument), self.MAX_NAME_CHARS)}"
        lines = [f"{head}: {short(str(self.problem), self.MAX_PROBLEM_CHARS)}"]
        if self.schema is not None:
            lines.append("Parameters schema: " + (self._schema_text or schema_text(self.schema, self.MAX_SCHEMA_CHARS)))
        return "\n".join(lines)

    def record(self) -> dict[str, Any]:
        """The fields as JSON data (`tool`, `problem`, and `argument`/`schema` when set), for `from_record`."""
        record: dict[str, Any] = {"tool": self.tool, "problem": self.problem}
        if self.argument is not None:
            record["argument"] = self.argument
        if self.schema is not None:
            record["schema"] = self.schema
        if isinstance(self, CallRefused):  # nothing ran: a client (or a notebook's agent cell) says "refused"
            record["refused"] = True
        return record

    @classmethod
    def from_record(cls, record: Any, tool: str | None) -> "ToolCallError | None":
        """The error `record()` described, named after `tool` (the name the caller used); None when
        `record` is not such a record (it may come from another process, so every field is checked)."""
        if not isinstance(record, dict):
            return None
        problem, argument, schema = record.get("problem"), record.get("argument"), record.get("schema")
        if (not isinstance(problem, str) or not isinstance(argument, (str, type(None)))
                or not isinstance(schema, (dict, type(None)))):
            return None
        made = CallRefused if record.get("refused") is True and cls is ToolCallError else cls
        return made(tool, problem, argument, schema)

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, (self.tool, self.problem, self.argument, self.schema))

    def _render_traceback_(self) -> list[str]:
        """The first line of the text, without the schema (it is for the model; `error.schema` has it)."""
        return [f"{type(self).__name__}: {self.text().splitlines()[0]}"]


class CallRefused(ToolCallError):
    """A call the approval policy refused: denied, not answered in time, a disabled or refused
    destructive tool. Nothing ran; in a cell IPython shows its whole text (one or two lines: the
    reason a person gave is part of it)."""

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self.text()}"]


class ApprovalInterrupt(KeyboardInterrupt):
    """A person interrupted the kernel while a call waited for approval: the call did not run.
    Still a KeyboardInterrupt (the run stops), shown by IPython as its one line."""

    by_signal = True  # an enclosing tool call stops too, as it would for the signal itself

    def _render_traceback_(self) -> list[str]:
        return [str(self)]


def schema_text(schema: dict, limit: int = ToolCallError.MAX_SCHEMA_CHARS) -> str:
    """A parameters schema as a refusal shows it: compact JSON, cut to `limit` characters with a marker."""
    text = json.dumps(schema, separators=(",", ":"), ensure_ascii=False, default=str)
    if len(text) > limit:
        text = text[:limit] + f"... [schema cut: {len(text)} characters]"
    return text


class TargetError(NbtoolsError):
    """A TARGET of the `nbtools` command that cannot be found or loaded; the message says which and why."""


class NotebookError(NbtoolsError):
    """A notebook cell that failed while the notebook ran to collect its tools.

    Fields: `path` (the notebook), `cell` (its 1-based position among all cells, as Jupyter shows
    them), `source` (the cell's code), `error` (the exception), `output` (what the cell printed,
    traceback included).
    """

    def __init__(self, path: str, cell: int, source: str, error: BaseException | None, output: str = ""):
        self.path = path
        self.cell = cell
        self.source = source
        self.error = error
        self.output = output
        what = f"{type(error).__name__}: {error}" if error is not None else "the cell failed"
        super().__init__(f"{path}, cell {cell} failed: {what}")


class CassetteError(NbtoolsError):
    """A cassette that cannot be read, written or replayed (the message names the file and what to do)."""


class CassetteMismatch(CassetteError):
    """A request sent to a `replay` client that differs from the one recorded at that point.

    Fields: `path` (the cassette), `index` (the exchange, from 1), `where` (what differs: `method`,
    `path`, `query`, or a place in the JSON body such as `messages[3].content`), `recorded`, `sent`.
    Raised through the SDK as the SDK's own error type too (`openai.OpenAIError`...), so the SDK
    passes it on unchanged instead of reporting a connection error.
    """

    def __init__(self, path: str, index: int, where: str, recorded: Any, sent: Any, note: str = ""):
        self.path, self.index, self.where, self.recorded, self.sent = path, index, where, recorded, sent
        super().__init__(
            f"request {index} differs from the recording in {path} at {where}: recorded {short(repr(recorded), 300)}, "
            f"sent {short(repr(sent), 300)}{note}. If the change is intended, record the cassette again "
            "(Chat(..., record=PATH) with the real client)")


class DescriptionError(NbtoolsError, ValueError):
    """Descriptions that cannot be used: a model's answer that is not the JSON asked for or names a tool
    or parameter that does not exist (nothing is changed), or a pin file that no longer fits the tools."""


class MagicError(NbtoolsError):
    """A magic that failed for a reason the message says in full: shown as the message alone (it
    starts with the magic's name), and the cell still ends with an error status (nbclient and
    `nbconvert --execute` stop there)."""

    def _render_traceback_(self) -> list[str]:
        return str(self).splitlines() or [""]


class Interrupted(ShortDisplay, KeyboardInterrupt):
    """A person interrupted the kernel (or pressed Ctrl+C) while a call ran: the call did not finish.

    Still a KeyboardInterrupt (the run stops; `except Exception` does not catch it), shown as one
    line instead of a traceback through nbtools. Field: `what` (what was running, e.g. "tool 'add'").
    `by_signal`: an enclosing tool call stops too, as it would for the signal itself.
    """

    by_signal = True

    def __init__(self, what: str = "the code"):
        self.what = what
        super().__init__(f"{what} was interrupted and did not finish")

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, (self.what,))

    def _render_traceback_(self) -> list[str]:
        return [f"KeyboardInterrupt: {self}"]


__all__ = ["NbtoolsError", "SchemaError", "ToolCallError", "CallRefused", "ApprovalInterrupt", "TargetError",
           "NotebookError", "CassetteError", "CassetteMismatch", "DescriptionError", "MagicError", "Interrupted",
           "ShortDisplay"]
