"""What the `%tools` table and the tools panel both show, and how both match tool names.

- `glob_matches(name, pattern)` (the registry's rule, re-exported): the name equals the pattern or
  matches it as a case-sensitive glob (`math_*`, `calc.?`); `Registry.select`/`remove`, `%tools
  GLOB` and `%untool` use it.
- `name_matches(name, text)`: the same rule except that text without a wildcard matches anywhere in
  the name.
- `tool_matches(tool, text)`: the panel's filter box: any case, over the name, group, hints and
  description; text with a wildcard is a glob on the name or the group.
- `matching_tools`, `tool_table` (the `%tools` listing), `first_line`, `parameter_summary`, and the
  format words both offer (`format_named`).

This module imports no IPython or ipywidgets, and of nbtools only the registry (for its rule).
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .registry import Registry, glob_matches
from .shortening import short
from .formats.catalog import NEUTRAL

if TYPE_CHECKING:
    from .tool import Tool

_WILDCARDS = frozenset("*?[")


# -- matching names --------------------------------------------------------------------------------

def name_matches(name: str, text: str) -> bool:
    """The panel's filter: a glob on the tool name; text without wildcards matches anywhere in it."""
    text = text.strip()
    if not text:
        return True
    if not _WILDCARDS & set(text):
        return text in name
    return glob_matches(name, text)


def tool_matches(tool: Tool, text: str) -> bool:
    """The panel's filter: does `text` find this tool? Case never matters. Plain text is looked for
    in the name, the group, the hints and the description; text with a wildcard (`math_*`) is a
    glob on the name or the group. What people type is "Note" for `delete_note`, or "destructive"."""
    wanted = text.strip().lower()
    if not wanted:
        return True
    if _WILDCARDS & set(wanted):
        return any(glob_matches(field.lower(), wanted) for field in (tool.name, tool.group or ""))
    haystack = "\n".join((tool.name, tool.group or "", " ".join(sorted(tool.hints)), tool.description or ""))
    return wanted in haystack.lower()


SEARCHED = "name, group, hints and description, any case"  # what `tool_matches` looks at, for messages


def matching_tools(registry: Registry, pattern: str | None = None, group: str | None = None, *,
                   anywhere: bool = False) -> list[Tool]:
    """The registry's tools (enabled or not), in registration order, that `pattern` finds
    (`glob_matches` on the name; with `anywhere`, the panel's `tool_matches`) and, if given, in `group`."""
    if anywhere:
        return [tool for tool in registry
                if (pattern is None or tool_matches(tool, pattern)) and (group is None or tool.group == group)]
    return [tool for tool in registry
            if (pattern is None or glob_matches(tool.name, pattern)) and (group is None or tool.group == group)]


# -- short texts -----------------------------------------------------------------------------------

def first_line(text: str, limit: int = 72) -> str:
    """The first non-empty line of `text`, cut to `limit` characters (`shortening.short`)."""
    return short(next((part.strip() for part in text.splitlines() if part.strip()), ""), limit)


_CODE_SPAN = re.compile(r"((?<!`)`[^`\n]+`(?!`))")  # single backticks; a ``double`` run stays as typed


def code_spans_html(text: str) -> str:
    """`text` HTML-escaped, with its Markdown code spans (`x`) shown as <code>x</code> (escaped too):
    docstrings write names that way, and the backticks read as noise in a table."""
    return "".join(f"<code>{html.escape(part[1:-1])}</code>" if part.startswith("`") and len(part) > 2
                   else html.escape(part) for part in _CODE_SPAN.split(text))


def parameter_summary(parameters: dict) -> str:
    """`a, b=1, c?` from a parameters schema: defaults shown, other optional names marked `?`."""
    required = set(parameters.get("required", ()))
    parts = []
    for name, schema in parameters.get("properties", {}).items():
        if name in required:
            parts.append(name)
        elif isinstance(schema, dict) and "default" in schema:
            parts.append(f"{name}={json.dumps(schema['default'], ensure_ascii=False)}")
        else:
            parts.append(f"{name}?")
    return ", ".join(parts)


# -- format words ----------------------------------------------------------------------------------



def format_words() -> tuple[tuple[str, str | None], ...]:
    """(word, format passed to `Tool.schema`) for every format, the neutral one first."""
    from .formats import FORMATS

    return tuple((NEUTRAL if fmt is None else fmt, fmt) for fmt in FORMATS)


def format_named(word: str | None, strict: bool = False) -> str | None:
    """The `Tool.schema` format for `word` (any case; "neutral"/"none" is None).

    ValueError naming the option (`--fmt WORD: ...`, `--strict: ...`) and what is accepted, for an
    unknown word or `strict` with a format that has no strict mode. Front ends check it before
    rendering anything, so a typo fails even when no tool is registered yet.
    """
    from .formats import FORMATS, STRICT_FORMATS

    wanted = None if word is None else word.strip().lower()
    if wanted in (NEUTRAL, "none"):
        wanted = None
    if wanted not in FORMATS:
        raise ValueError(f"--fmt {word}: unknown format; use one of {', '.join(each for each, _ in format_words())}")
    if strict and wanted not in STRICT_FORMATS:
        raise ValueError(f"--strict: {word} has no strict mode; only {', '.join(sorted(STRICT_FORMATS))} have one")
    return wanted


# -- the %tools table ------------------------------------------------------------------------------

@dataclass(frozen=True)
class ToolRow:
    """One line of the `%tools` table (plain text; escaped when rendered as HTML)."""

    name: str
    enabled: bool
    group: str
    hints: tuple[str, ...]
    description: str
    parameters: str


def tool_row(tool: Tool, enabled: bool) -> ToolRow:
    return ToolRow(
        name=tool.name,
        enabled=enabled,
        group=tool.group or "",
        hints=tuple(sorted(tool.hints)),
        description=first_line(tool.description),
        parameters=parameter_summary(tool.parameters),
    )


_COLUMNS = ("name", "group", "hints", "description", "parameters")
_LEFT = "text-align:left;vertical-align:top"


def _parameter_parts(summary: str) -> list[str]:
    """`a, b="x, y", c?` split between parameters only (a default may hold a comma)."""
    parts, depth, current, quoted = [], 0, "", False
    for index, char in enumerate(summary):
        if char == '"' and (index == 0 or summary[index - 1] != "\\"):
            quoted = not quoted
        elif not quoted and char in "[{":
            depth += 1
        elif not quoted and char in "]}":
            depth -= 1
        if char == "," and not quoted and depth == 0 and summary[index + 1:index + 2] == " ":
            parts.append(current)
            current = ""
            continue
        current += char
    parts.append(current.strip())
    return [part.strip() for part in parts if part.strip()]


# White on the theme's error colour: 6.6:1 in JupyterLab Light, 5.1:1 in Dark (red text on the code
# background was 1.5:1 in Dark).
_DESTRUCTIVE_HTML = ("<code style='white-space:nowrap;background:var(--jp-error-color0,#b71c1c);color:white;"
                     "font-weight:bold' title='changes or deletes something; an approving registry asks first'>"
                     "destructive</code>")


def _breakable(text: str) -> str:
    """`text` escaped, with a line-break opportunity after each `_` and `.`: a long name or default
    wraps between its words (`overflow-wrap:anywhere` breaks what still does not fit)."""
    return html.escape(text).replace("_", "_<wbr>").replace(".", ".<wbr>")


@dataclass(frozen=True)
class ToolTable:
    """The `%tools` listing: HTML in a notebook, aligned text in a terminal.

    Fields:
        rows: one per tool, in registration order.
        empty_message: shown when there are no rows.
    """

    rows: tuple[ToolRow, ...]
    empty_message: str = "No tools registered."

    def _cells(self, row: ToolRow) -> tuple[str, ...]:
        name = row.name if row.enabled else f"{row.name} (disabled)"
        return (name, row.group, ", ".join(row.hints), row.description, row.parameters)

    def text(self) -> str:
        if not self.rows:
            return self.empty_message
        table = [_COLUMNS, *(self._cells(row) for row in self.rows)]
        widths = [max(len(line[column]) for line in table) for column in range(len(_COLUMNS))]
        lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in table]
        lines.insert(1, "  ".join("-" * width for width in widths))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        if not self.rows:
            return f"<p>{html.escape(self.empty_message)}</p>"
        # The name column asks for a quarter of the width: left to itself, it got 80px of a 548px table
        # and broke every name at every underscore.
        head = "".join(f"<th style='text-align:left{';width:25%' if column == 'name' else ''}'>{column}</th>"
                       for column in _COLUMNS)
        body = []
        for row in self.rows:
            # A disabled row says so and is in italics: dimmer text fell under 4.5:1 on the table's
            # shaded rows (an opacity of 0.55 was 3.5:1 in JupyterLab Light).
            style = "" if row.enabled else " style='font-style:italic' title='disabled'"
            # Nothing is cut, nothing runs past the output area: a long name and a long parameter
            # breaks between its words, or anywhere when a word is still too long.
            name = (f"<td style='{_LEFT};overflow-wrap:anywhere'><code>{_breakable(row.name)}</code>"
                    + ("" if row.enabled else " (disabled)") + "</td>")
            # Hints never break at their hyphen ("read-only"); parameters wrap between parameters first.
            # A destructive tool is marked where the eye goes first: its hint as a red chip, a ⚠ by the name.
            hints = " ".join(f"<code style='white-space:nowrap'>{html.escape(hint)}</code>" if hint != "destructive"
                             else _DESTRUCTIVE_HTML for hint in row.hints)
            if "destructive" in row.hints:
                name = name.replace("<code>", "<span title='destructive: changes or deletes something'>⚠</span> "
                                    "<code>", 1)
            parameters = ", ".join(f"<code style='overflow-wrap:anywhere'>{_breakable(part)}</code>"
                                   for part in _parameter_parts(row.parameters))
            cells = (html.escape(row.group), hints, code_spans_html(row.description), parameters)
            body.append(f"<tr{style}>{name}" + "".join(f"<td style='{_LEFT}'>{cell}</td>" for cell in cells)
                        + "</tr>")
        return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.text())

    def __repr__(self) -> str:
        return self.text()


def tool_table(registry: Registry, glob: str | None = None, group: str | None = None) -> ToolTable:
    """The `%tools` table of the registry's tools matching `glob` and `group` (disabled ones marked)."""
    tools = matching_tools(registry, glob, group)
    rows = tuple(tool_row(tool, registry.is_enabled(tool.name)) for tool in tools)
    if glob is None and group is None:
        return ToolTable(rows)
    wanted = " and ".join(part for part in (glob and f"name {glob!r}", group and f"group {group!r}") if part)
    total = len(registry)
    return ToolTable(rows, f"No tools match {wanted} (of {total} registered; `%tools` alone lists them all).")


__all__ = ["glob_matches", "name_matches", "tool_matches", "SEARCHED", "matching_tools", "first_line", "parameter_summary",
           "code_spans_html",
           "format_words", "format_named", "ToolRow", "tool_row", "ToolTable", "tool_table"]
