"""The tools panel (ipywidgets).

`panel()` shows one row per registered tool: a checkbox that enables or disables it (disabled tools
are left out of `registry.schemas()` and refused by `call_func`), group and hint badges, the first
line of its description, and its schema on demand in any format. (The approval prompt is in
`nbtools.approval`.)

Everything a tool's author wrote (names, docstrings, groups) is HTML-escaped before it is shown.
This module imports ipywidgets at the top; `nbtools` imports it only when `panel` is first used.
"""

from __future__ import annotations

import html
import json
import weakref
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets

from .errors import SchemaError
from .formats.catalog import NEUTRAL
from .listing import (
    SEARCHED, code_spans_html, first_line, format_words, matching_tools, name_matches, parameter_summary,
)
from .registry import Registry
from .tool import Tool

# Formats offered by the schema picker: (label, fmt passed to Tool.schema), the words `%tools --fmt` takes.
FORMAT_CHOICES: tuple[tuple[str, str | None], ...] = format_words()

# Badges are white text on their own background, so they read alike on light and dark themes; the
# destructive one takes the theme's error colour (white on it is 6.6:1 in JupyterLab Light, 5.1:1 in Dark).
_WARNING = "var(--jp-error-color0,#b71c1c)"
_HINT_COLOURS = {"destructive": _WARNING, "read-only": "#1e6b34", "idempotent": "#44546a",
                 "open-world": "#7a4b00"}


def badge(text: str, colour: str) -> str:
    """A small coloured label; `text` is escaped here."""
    return (f"<span style='background:{colour};color:white;border-radius:3px;padding:0 4px;"
            f"margin-left:4px;font-size:85%;white-space:nowrap'>{html.escape(text)}</span>")


# One line per row, so the checkbox, the name and the button sit on the same line in every row:
# a name column (cut with an ellipsis, whole in its title) that gives way down to 8em, then badges,
# then the description taking what is left (cut too, whole in its title). The line is given no width
# of its own (width 0, at least all its container has): a nowrap description otherwise widened the
# HTML widget to its full length and ran under the "details" button. Colours are JupyterLab's theme
# variables, so the text keeps its contrast in light and dark themes; a disabled tool is dimmed with
# them too (an opacity of 0.55 took its description to 2.6:1 on JupyterLab Dark, 2.1:1 on Light).
_ONE_LINE = "overflow:hidden;text-overflow:ellipsis;white-space:nowrap"
_TEXT = "color:var(--jp-ui-font-color1)"
_QUIET = "color:var(--jp-ui-font-color2)"
_LINE = "display:flex;align-items:baseline;gap:6px;width:0;min-width:100%;overflow:hidden"


def tool_summary_html(tool: Tool, enabled: bool = True, show_group: bool = True) -> str:
    """Name and parameters, group and hint badges, and the description's first line (its Markdown
    `code` as <code>), all escaped; dimmed (and the description in italics) when the tool is disabled.
    `show_group=False` under a heading that already names the group. Cut parts are whole in its
    title and in `details_html` ("details")."""
    signature = f"{tool.name}({parameter_summary(tool.parameters)})"
    name = (f"<code style='flex:0 1 18em;min-width:8em;{_ONE_LINE};{_TEXT if enabled else _QUIET}' "
            f"title='{html.escape(signature)}{'' if enabled else ' (disabled)'}'>"
            f"<b>{html.escape(tool.name)}</b>({html.escape(parameter_summary(tool.parameters))})</code>")
    badges = ([badge(tool.group, "#3b5bdb")] if tool.group and show_group else []) + [
        badge(hint, _HINT_COLOURS.get(hint, "#44546a")) for hint in sorted(tool.hints)]
    description = first_line(tool.description, limit=300)
    about = (f"<span style='flex:1 1 0;min-width:0;{_ONE_LINE};{_QUIET}{'' if enabled else ';font-style:italic'}' "
             f"title='{html.escape(description)}'>{code_spans_html(description)}</span>") if description else ""
    return (f"<div style='{_LINE}'>{name}"
            f"<span style='flex:0 0 auto;white-space:nowrap'>{''.join(badges)}</span>{about}</div>")


def schema_html(tool: Tool, fmt: str | None) -> str:
    """The tool's definition in `fmt` as escaped, pretty-printed JSON (or the reason there is none)."""
    try:
        text = json.dumps(tool.schema(fmt), indent=2, ensure_ascii=False, default=str)
    except (SchemaError, KeyError, ValueError) as error:
        text = f"No {fmt or 'neutral'} definition: {error}"
    return f"<pre style='margin:2px 0 6px 24px;font-size:85%'>{html.escape(text)}</pre>"


def details_html(tool: Tool, fmt: str | None) -> str:
    """What a row's "details" shows: the whole signature and description (the row cuts both to one
    line), wrapping, then the definition in `fmt`."""
    signature = f"{tool.name}({parameter_summary(tool.parameters)})"
    description = "".join(f"<div>{code_spans_html(line)}</div>" for line in tool.description.strip().splitlines())
    return (f"<div style='margin:2px 0 0 24px;{_TEXT};overflow-wrap:anywhere'>"
            f"<code style='white-space:pre-wrap'>{html.escape(signature)}</code>"
            f"<div style='{_QUIET};margin-top:2px'>{description}</div></div>" + schema_html(tool, fmt))


@dataclass(frozen=True)
class ToolRowWidgets:
    """The widgets of one panel row.

    Fields:
        name: the tool's name.
        enabled: checkbox bound to `registry.enable(name, value)`.
        summary: HTML with the name, badges and description.
        schema_toggle: shows or hides `schema` (filled only when shown).
        schema: HTML with the tool's definition.
        box: the row as one widget.
    """

    name: str
    enabled: widgets.Checkbox
    summary: widgets.HTML
    schema_toggle: widgets.ToggleButton
    schema: widgets.HTML
    box: widgets.VBox


class ToolsPanel(widgets.VBox):
    """One row per tool of `registry`: enable/disable (one or all shown), badges, schema on demand,
    a filter over name, group, hints and description (any case), rows grouped by group and
    scrolling past about a dozen.

    The panel follows the registry (`Registry.on_change`): rows are rebuilt as soon as tools are
    added, replaced, removed, enabled or disabled elsewhere; Refresh re-reads it all. Closing the
    panel (or losing every reference to it) ends the subscription.
    """

    def __init__(self, registry: Registry, filter: str = "", group: str | None = None, **kwargs: Any):
        self.registry = registry
        self.group = group
        # The placeholder fits the box whole (a longer one was cut to "…descriptior"); the tooltip says the rest.
        self.filter_text = widgets.Text(value=filter, placeholder=FILTER_PLACEHOLDER, description="Filter",
                                        tooltip=f"searches {SEARCHED}; a glob (math_*) matches names and groups",
                                        continuous_update=True, layout=widgets.Layout(width="26em", flex="0 0 auto"))
        self.format_picker = widgets.Dropdown(options=[label for label, _ in FORMAT_CHOICES], value=NEUTRAL,
                                              description="Format", layout=widgets.Layout(width="14em"))
        self.refresh_button = widgets.Button(description="Refresh", tooltip="re-read the registry",
                                             layout=_BUTTON)
        self.enable_all = widgets.Button(description="Enable all", tooltip="enable every tool shown",
                                         layout=_BUTTON)
        self.disable_all = widgets.Button(description="Disable all", tooltip="disable every tool shown",
                                          layout=_BUTTON)
        self.status = widgets.HTML()
        self.rows: dict[str, ToolRowWidgets] = {}
        self._built_from: dict[str, Tool] = {}  # the Tool each row shows, to spot a redefinition
        self._headers: dict[str, widgets.HTML] = {}
        # Past about a dozen rows the list scrolls instead of making the output thousands of pixels tall.
        self._rows_box = widgets.VBox(layout=widgets.Layout(max_height="26em", overflow="auto"))
        self._seen: tuple = ()
        self._headed = False  # rows sit under group headings (so their group badge is left out)
        controls = widgets.HBox([self.filter_text, self.format_picker, self.refresh_button, self.enable_all,
                                 self.disable_all], layout=widgets.Layout(flex_flow="row wrap", align_items="center"))
        super().__init__(children=[controls, self._rows_box, self.status], **kwargs)
        self.filter_text.observe(lambda change: self.refresh(force=True), names="value")
        self.format_picker.observe(lambda change: self._rerender_open_schemas(), names="value")
        self.refresh_button.on_click(lambda button: self.refresh(force=True))
        self.enable_all.on_click(lambda button: self.set_all_shown(True))
        self.disable_all.on_click(lambda button: self.set_all_shown(False))
        self.refresh(force=True)
        self._unsubscribe = _follow_registry(self)

    def close(self) -> None:
        self._unsubscribe()
        super().close()

    @property
    def fmt(self) -> str | None:
        return dict(FORMAT_CHOICES)[self.format_picker.value]

    def visible_tools(self) -> list[Tool]:
        return matching_tools(self.registry, self.filter_text.value, self.group, anywhere=True)

    def set_all_shown(self, value: bool) -> None:
        """Enable (or disable) every tool the filter shows."""
        for tool in self.visible_tools():
            self.registry.enable(tool.name, value)
        self.refresh(force=True)

    def _registry_state(self) -> tuple:
        return tuple((tool.name, id(tool), self.registry.is_enabled(tool.name)) for tool in self.registry)

    def refresh(self, force: bool = False) -> None:
        """Bring the rows up to date with the registry (only when it changed, unless `force`).

        Only rows whose tool was added, replaced or removed are rebuilt; the others keep their
        widgets (an open schema stays open) and only their checkbox follows the registry. Every
        panel ever shown follows its registry until closed, so rebuilding
        all rows of all panels on every change made each new `%%tool` cell slower.
        """
        state = self._registry_state()
        if not force and state == self._seen:
            return
        self._seen = state
        rows: dict[str, ToolRowWidgets] = {}
        for tool in self.visible_tools():
            row = self.rows.get(tool.name)
            if row is not None and self._built_from.get(tool.name) is tool:
                enabled = self.registry.is_enabled(tool.name)
                if row.enabled.value != enabled:
                    row.enabled.value = enabled
                    row.summary.value = self._summary(tool, enabled)
            else:  # new, or redefined: a fresh row; a schema the person had open stays open
                reopen = row is not None and row.schema_toggle.value
                row = self._make_row(tool)
                self._built_from[tool.name] = tool
                if reopen:
                    row.schema_toggle.value = True
            rows[tool.name] = row
        kept = {id(row) for row in rows.values()}
        for name, row in self.rows.items():
            if id(row) not in kept:
                row.box.close()
                if name not in rows:
                    self._built_from.pop(name, None)
        self.rows = rows
        children = self._grouped_children()
        if list(self._rows_box.children) != children:
            self._rows_box.children = children
        self._update_status()

    def _grouped_children(self) -> list[widgets.Widget]:
        """The rows, grouped by group in order of first appearance, with a heading per group when
        the tools shown have more than one group (tools without one come under "no group")."""
        groups: dict[str, list[ToolRowWidgets]] = {}
        for name, row in self.rows.items():
            groups.setdefault(self._built_from[name].group or "", []).append(row)
        headed = len(groups) > 1
        if headed != self._headed:  # under a heading the group badge would repeat it
            self._headed = headed
            for name, row in self.rows.items():
                row.summary.value = self._summary(self._built_from[name], row.enabled.value)
        if not headed:
            return [row.box for row in self.rows.values()]
        children: list[widgets.Widget] = []
        for group, members in groups.items():
            text = (f"<div style='{_TEXT};font-weight:bold;margin-top:4px'>{html.escape(group or 'no group')}"
                    f" <span style='{_QUIET};font-weight:normal'>({len(members)})</span></div>")
            header = self._headers.get(group)
            if header is None:
                header = self._headers[group] = widgets.HTML(text, layout=widgets.Layout(flex="0 0 auto"))
            elif header.value != text:
                header.value = text
            children.append(header)
            children.extend(row.box for row in members)
        return children

    def _make_row(self, tool: Tool) -> ToolRowWidgets:
        enabled_now = self.registry.is_enabled(tool.name)
        # No visible label (the name is in the row), but a tooltip naming the tool: the checkbox's
        # accessible name, so a screen reader tells the rows apart.
        enabled = widgets.Checkbox(value=enabled_now, indent=False, tooltip=f"offer {tool.name} to the model",
                                   layout=widgets.Layout(width="28px", flex="0 0 auto"))
        summary = widgets.HTML(self._summary(tool, enabled_now), layout=widgets.Layout(flex="1 1 auto",
                                                                                          min_width="0"))
        toggle = widgets.ToggleButton(value=False, description="details",
                                      tooltip=f"the whole signature, description and definition of {tool.name}",
                                      layout=widgets.Layout(width="6.5em", flex="0 0 auto"))
        schema = widgets.HTML(layout=widgets.Layout(display="none"))
        line = widgets.HBox([enabled, summary, toggle], layout=widgets.Layout(align_items="center", width="100%"))
        # flex "0 0 auto": in the scrolling list a row keeps its height (rows shrank to overlap)
        row = ToolRowWidgets(tool.name, enabled, summary, toggle, schema,
                             widgets.VBox([line, schema], layout=widgets.Layout(flex="0 0 auto")))
        enabled.observe(lambda change: self._set_enabled(tool.name, change["new"]), names="value")
        toggle.observe(lambda change: self._show_schema(row, change["new"]), names="value")
        return row

    def _set_enabled(self, name: str, value: bool) -> None:
        if name not in self.registry:  # removed since the row was built
            self.refresh(force=True)
            return
        self.registry.enable(name, value)
        row, tool = self.rows.get(name), self.registry.get(name)
        if row is not None and tool is not None:
            row.summary.value = self._summary(tool, value)
        self._seen = self._registry_state()
        self._update_status()

    def _show_schema(self, row: ToolRowWidgets, shown: bool) -> None:
        tool = self.registry.get(row.name)
        if shown and tool is not None:
            row.schema.value = details_html(tool, self.fmt)
        row.schema.layout.display = None if shown and tool is not None else "none"

    def _rerender_open_schemas(self) -> None:
        for row in self.rows.values():
            if row.schema_toggle.value:
                self._show_schema(row, True)

    def _summary(self, tool: Tool, enabled: bool) -> str:
        return tool_summary_html(tool, enabled, show_group=not self._headed)

    def _ipython_display_(self) -> None:
        """The widget, then a separate plain output naming the tools: a saved notebook reopened
        without its kernel has no widget model, and JupyterLab then shows only "Error displaying
        widget: model not found" in the widget's place (never its text/plain)."""
        from IPython.display import display

        display(self._repr_mimebundle_(), raw=True)
        display(PanelRecord.of(self))

    def _update_status(self) -> None:
        total = len(self.registry)
        enabled = sum(1 for tool in self.registry if self.registry.is_enabled(tool.name))
        searched = self.filter_text.value.strip()
        if total == 0:
            text = "No tools registered yet: define some in a %%tool cell."
        elif not self.rows and searched:
            text = (f"No tool matches {searched!r} (searched {SEARCHED}"
                    f"{f' in group {self.group!r}' if self.group else ''}); clear the Filter box to see all {total}.")
        else:
            text = f"{len(self.rows)} of {total} tools shown; {enabled} enabled."
        self.status.value = f"<span style='{_QUIET}'>{html.escape(text)}</span>"

    def __repr__(self) -> str:
        # Stable text (no model ids), which is what nbval compares for a widget output.
        return f"ToolsPanel({len(self.rows)} of {len(self.registry)} tools shown: {', '.join(self.rows)})"


@dataclass(frozen=True)
class PanelRecord:
    """The plain output shown beside a panel: which tools it showed when displayed, enabled or not,
    and their hints; what a saved notebook still shows when the widget is gone. Static: a record
    updated by later cells would differ between a saved run and a re-run (nbval compares them)."""

    tools: tuple[tuple[str, bool, tuple[str, ...]], ...]  # (name, enabled, hints)
    total: int

    @classmethod
    def of(cls, shown: ToolsPanel) -> "PanelRecord":
        registry = shown.registry
        return cls(tuple((tool.name, registry.is_enabled(tool.name), tuple(sorted(tool.hints)))
                         for tool in (shown._built_from[name] for name in shown.rows)), len(registry))

    def _parts(self) -> list[tuple[str, str]]:
        return [(name, ", ".join(([] if enabled else ["disabled"]) + list(hints)))
                for name, enabled, hints in self.tools]

    def _repr_html_(self) -> str:
        names = ", ".join(f"<code>{html.escape(name)}</code>" + (f" ({html.escape(notes)})" if notes else "")
                          for name, notes in self._parts())
        return (f"<div style='{_QUIET};font-size:85%'>Tools panel, when shown: {len(self.tools)} of {self.total} "
                f"tools{': ' + names if names else ''}. <i>(Without its kernel the panel above cannot show; "
                f"<code>%tools</code> lists the tools.)</i></div>")

    def __repr__(self) -> str:
        names = ", ".join(name + (f" ({notes})" if notes else "") for name, notes in self._parts())
        return f"Tools panel, when shown: {len(self.tools)} of {self.total} tools" + (f": {names}" if names else "")


_BUTTON = widgets.Layout(width="auto", flex="0 0 auto")
FILTER_PLACEHOLDER = "name, hint, text or math_*"


def _follow_registry(shown: ToolsPanel) -> Any:
    """Refresh `shown` after every change of its registry; the registry holds it only weakly, so a
    panel nobody displays any more is collected (and unsubscribes). Returns the unsubscribe function."""
    ref = weakref.ref(shown)

    def changed() -> None:
        live = ref()
        if live is None or live.comm is None:  # collected or closed
            unsubscribe()
            return
        try:
            live.refresh()
        except Exception:  # a panel must never break the change that reached it
            pass

    unsubscribe = shown.registry.on_change(changed)
    return unsubscribe


def panel(registry: Registry | None = None, filter: str = "", group: str | None = None) -> ToolsPanel:
    """The tools panel for `registry` (default: `nbtools.registry`), optionally pre-filtered.

    `filter` is a glob on tool names (plain text matches anywhere in the name); `group` keeps one group.
    """
    if registry is None:
        from .registry import registry as default_registry

        registry = default_registry
    return ToolsPanel(registry, filter=filter, group=group)


def __getattr__(name: str) -> Any:
    """`nbtools.widgets.ApprovalPrompt` and its companions moved to `nbtools.approval`; old imports keep working."""
    if name in ("ApprovalPrompt", "ApprovalBox", "ApprovalRecord", "ApprovalTimedOut", "ApprovalInterrupted",
                "approval_question_html"):
        from . import approval

        return getattr(approval, name)
    raise AttributeError(f"module 'nbtools.widgets' has no attribute {name!r}")


__all__ = ["panel", "ToolsPanel", "ToolRowWidgets", "FORMAT_CHOICES",
           "tool_summary_html", "schema_html", "details_html", "name_matches", "PanelRecord", "FILTER_PLACEHOLDER"]
