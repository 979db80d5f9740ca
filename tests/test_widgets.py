"""The tools panel, headless: widget state, clicks from Python and from a
simulated browser, and the exact messages a browser would receive (recorded by a fake comm)."""

from __future__ import annotations

import json

import comm
import pytest
from comm.base_comm import BaseComm

from nbtools import Registry
from nbtools.widgets import ToolsPanel, name_matches, panel


class RecordingComm(BaseComm):
    """A comm that keeps every message the kernel would send to the browser."""

    sent: list[tuple[str, dict]] = []

    def publish_msg(self, msg_type, data=None, metadata=None, buffers=None, **keys):
        RecordingComm.sent.append((msg_type, data or {}))


@pytest.fixture(autouse=True)
def recording_comm(monkeypatch):
    RecordingComm.sent = []
    monkeypatch.setattr(comm, "create_comm", RecordingComm)
    return RecordingComm.sent


def from_browser(widget, **state):
    """Deliver a state update exactly as the browser sends it when the person changes a control."""
    widget.comm.handle_msg({"content": {"data": {"method": "update", "state": state}}, "buffers": []})


def area(width: float, height: float = 1.0) -> float:
    """Area of a rectangle <script>alert(1)</script>."""
    return width * height


def delete_file(path: str) -> str:
    """Delete a file (pretend)."""
    return f"deleted {path}"


async def remove_all(folder: str) -> str:
    """Remove a folder (pretend)."""
    return f"removed {folder}"


@pytest.fixture
def tools():
    local = Registry()
    local.add(area, group="geo<metry>", hints="read-only")
    local.add(delete_file, hints="destructive")
    return local


def test_one_row_per_tool_with_enabled_checkboxes(tools):
    shown = panel(tools)
    assert isinstance(shown, ToolsPanel)
    assert list(shown.rows) == ["area", "delete_file"]
    assert all(row.enabled.value for row in shown.rows.values())
    assert "2 of 2 tools shown; 2 enabled" in shown.status.value
    assert repr(shown) == "ToolsPanel(2 of 2 tools shown: area, delete_file)"


def test_user_text_is_escaped_and_badges_shown(tools):
    shown = panel(tools)
    summary = shown.rows["area"].summary.value
    assert "<script>" not in summary and "&lt;script&gt;" in summary
    assert "read-only" in summary
    assert "area</b>(width, height=1.0)" in summary
    # two groups: each has a heading (escaped), so the rows leave the group badge out
    headings = [child.value for child in shown._rows_box.children if not hasattr(child, "children")]
    assert any("geo&lt;metry&gt;" in heading for heading in headings)
    assert "geo&lt;metry&gt;" not in summary


def test_the_group_badge_shows_only_without_headings(tools):
    shown = panel(tools, group="geo<metry>")  # one group: no heading, so the badge names it
    assert "geo&lt;metry&gt;" in shown.rows["area"].summary.value
    shown = panel(tools)
    assert "geo&lt;metry&gt;" not in shown.rows["area"].summary.value
    tools.remove("delete_file")  # one group left: the headings go and the badge comes back
    assert "geo&lt;metry&gt;" in shown.rows["area"].summary.value


def test_markdown_code_in_descriptions_is_shown_as_code_and_escaped():
    def find(pattern: str) -> list:
        """Find files matching `pattern` (a glob like `*.py`), or `<b>` literally."""
        return []

    local = Registry([find])
    summary = panel(local).rows["find"].summary.value
    assert "<code>pattern</code>" in summary and "<code>*.py</code>" in summary
    assert "<code>&lt;b&gt;</code>" in summary and "`" not in summary.split("title=")[0]
    from nbtools.listing import tool_table
    table = tool_table(local)._repr_html_()
    assert "<code>pattern</code>" in table and "<code>&lt;b&gt;</code>" in table and "`" not in table


def test_details_show_the_whole_signature_and_description(recording_comm):
    def report(title: str, very_long_parameter_name_one: int = 1, very_long_parameter_name_two: str = "x",
               another_one: list[int] | None = None) -> str:
        """Make a report.

        The second paragraph, which the row leaves out."""
        return title

    shown = panel(Registry([report]))
    row = shown.rows["report"]
    row.schema_toggle.value = True  # what clicking "details" does
    details = row.schema.value
    assert ("report(title, very_long_parameter_name_one=1, very_long_parameter_name_two=&quot;x&quot;, "
            "another_one=null)") in details
    assert "The second paragraph, which the row leaves out." in details
    assert row.schema.layout.display is None
    assert row.schema_toggle.description == "details"


def test_the_panel_follows_the_registry_without_a_cell_or_a_click(tools):
    shown = panel(tools)
    tools.add(remove_all)
    assert "remove_all" in shown.rows  # Registry.on_change: no post-cell polling, no Refresh
    tools.enable("area", False)
    assert shown.rows["area"].enabled.value is False
    shown.close()
    tools.remove("remove_all")
    assert "remove_all" in shown.rows  # a closed panel no longer listens
    assert not tools._listeners


def test_browser_unchecking_disables_the_tool_everywhere(tools, recording_comm):
    shown = panel(tools)
    checkbox = shown.rows["delete_file"].enabled
    from_browser(checkbox, value=False)
    assert not tools.is_enabled("delete_file")
    assert [schema["name"] for schema in tools.schemas()] == ["area"]
    # The browser is told the new count in the status line.
    status_updates = [data["state"]["value"] for msg_type, data in recording_comm
                      if msg_type == "comm_msg" and "value" in data.get("state", {})
                      and "tools shown" in str(data["state"]["value"])]
    assert status_updates and "1 enabled" in status_updates[-1]
    from_browser(checkbox, value=True)
    assert tools.is_enabled("delete_file")


def test_checkbox_reflects_changes_made_elsewhere_after_refresh(tools):
    shown = panel(tools)
    tools.disable("area")
    shown.refresh_button.click()
    assert shown.rows["area"].enabled.value is False


def test_schema_is_rendered_only_on_demand_and_follows_the_format(tools, recording_comm):
    shown = panel(tools)
    row = shown.rows["area"]
    assert row.schema.value == "" and row.schema.layout.display == "none"
    from_browser(row.schema_toggle, value=True)
    assert row.schema.layout.display is None
    assert "&quot;width&quot;" in row.schema.value and "<script>" not in row.schema.value
    assert any(msg_type == "comm_msg" and "&quot;width&quot;" in str(data.get("state", {}).get("value", ""))
               for msg_type, data in recording_comm)
    # A dropdown's browser-side state is the selected index.
    from_browser(shown.format_picker, index=shown.format_picker.options.index("anthropic"))
    assert shown.format_picker.value == "anthropic"
    assert "input_schema" in row.schema.value
    from_browser(row.schema_toggle, value=False)
    assert row.schema.layout.display == "none"


def test_glob_filter_and_plain_text_filter(tools):
    shown = panel(tools)
    from_browser(shown.filter_text, value="del*")
    assert list(shown.rows) == ["delete_file"]
    shown.filter_text.value = "rea"  # no wildcard: matches inside the name
    assert list(shown.rows) == ["area"]
    shown.filter_text.value = "nothing*"
    assert shown.rows == {} and ("No tool matches &#x27;nothing*&#x27; (searched name, group, hints and description, "
                                 "any case); clear the Filter box to see all 2.") in shown.status.value
    assert list(panel(tools, filter="a*").rows) == ["area"]
    assert list(panel(tools, group="geo<metry>").rows) == ["area"]


@pytest.mark.parametrize("text, found", [
    ("AREA", ["area"]),                 # name, any case
    ("GEO<M", ["area"]),                # group
    ("Destructive", ["delete_file"]),   # hint
    ("pretend", ["delete_file"]),       # description
    ("RECTANGLE", ["area"]),            # description, any case
    ("Geo*", ["area"]),                 # a glob on the group
    ("*_FILE", ["delete_file"]),        # a glob on the name, any case
])
def test_the_filter_searches_name_group_hints_and_description_in_any_case(tools, text, found):
    shown = panel(tools)
    from_browser(shown.filter_text, value=text)
    assert list(shown.rows) == found


def test_panel_layout_never_truncates_controls_and_scrolls(tools):
    for index in range(35):
        def fn(x: int) -> int:
            return x
        tools.add(fn, name=f"tool_number_{index}_with_a_rather_long_name", group=f"g{index % 3}",
                  description="A description long enough to wrap " * 4)
    shown = panel(tools)
    row = shown.rows["area"]
    # the schema button keeps its width (it used to shrink to "sche…" whenever a description wrapped)
    assert row.schema_toggle.layout.flex == "0 0 auto" and row.schema_toggle.layout.width == "6.5em"
    assert row.enabled.layout.flex == "0 0 auto"
    assert row.box.layout.flex == "0 0 auto"  # in the scrolling list rows keep their height (they overlapped)
    line = row.box.children[0]
    assert line.layout.align_items == "center"  # checkbox on the text line
    # names aligned (one 18em column, giving way only where the row is narrower than name and badges)
    assert "white-space:nowrap" in row.summary.value and "flex:0 1 18em;min-width:8em" in row.summary.value
    # the line takes its container's width, never its text's (a long description ran under the button)
    assert "width:0;min-width:100%;overflow:hidden" in row.summary.value
    assert shown._rows_box.layout.max_height and shown._rows_box.layout.overflow == "auto"  # scrolls
    headings = [child.value for child in shown._rows_box.children if child not in [r.box for r in shown.rows.values()]]
    assert len(headings) == 5 and "geo&lt;metry&gt;" in headings[0] and "no group" in headings[1]
    # every checkbox has an accessible name of its own (no visible label: its tooltip)
    tooltips = [r.enabled.tooltip for r in shown.rows.values()]
    assert len(set(tooltips)) == len(tooltips) == 37 and "area" in tooltips[0]


def test_colours_follow_the_jupyterlab_theme(tools):
    shown = panel(tools)
    html_parts = [shown.status.value] + [row.summary.value for row in shown.rows.values()]
    assert all("#555" not in part for part in html_parts)
    assert "var(--jp-ui-font-color2)" in shown.status.value
    assert "var(--jp-ui-font-color1)" in shown.rows["area"].summary.value


def test_enable_and_disable_all_shown_and_disabled_rows_are_dimmed(tools):
    shown = panel(tools)
    shown.filter_text.value = "area"
    shown.disable_all.click()
    assert not tools.is_enabled("area") and tools.is_enabled("delete_file")  # only the tools shown
    shown.filter_text.value = ""

    def dimmed(name: str) -> bool:  # the theme's dimmed colour on the name, the description in italics
        summary = shown.rows[name].summary.value
        assert "opacity" not in summary  # it took the text under 4.5:1 (tests/test_browser.py measures it)
        name_style = summary.split("<code style='", 1)[1].split("'", 1)[0]
        return "var(--jp-ui-font-color2)" in name_style and "font-style:italic" in summary

    assert dimmed("area") and not dimmed("delete_file")
    shown.enable_all.click()
    assert tools.is_enabled("area") and not dimmed("area")
    from_browser(shown.rows["delete_file"].enabled, value=False)  # a click dims its row at once
    assert dimmed("delete_file")


def test_name_matches():
    assert name_matches("math_add", "math_*") and name_matches("math_add", "add")
    assert not name_matches("math_add", "str_*") and name_matches("x", "  ")


def test_new_tools_appear_after_refresh_and_removed_ones_go(tools):
    shown = panel(tools)
    tools.add(remove_all, hints="destructive")
    tools.remove("area")
    shown.refresh()
    assert list(shown.rows) == ["delete_file", "remove_all"]


def test_an_open_schema_stays_open_when_the_registry_changes(tools):
    shown = panel(tools)
    shown.rows["area"].schema_toggle.value = True

    def area(side: float) -> float:
        """Area of a square."""
        return side * side

    with pytest.warns(UserWarning, match="replaced the earlier one"):
        tools.add(area)  # redefined in a later cell: the rows are rebuilt
    shown.refresh()
    row = shown.rows["area"]
    assert row.schema_toggle.value and row.schema.layout.display is None
    assert "side" in row.schema.value and "width" not in row.schema.value
    assert not shown.rows["delete_file"].schema_toggle.value


def test_refresh_rebuilds_only_the_rows_whose_tool_changed(tools, recording_comm):
    # Every panel shown follows its registry: rebuilding all its rows on every change made each
    # new %%tool cell slower with every panel ever displayed.
    shown = panel(tools)
    area_row, delete_row = shown.rows["area"], shown.rows["delete_file"]
    recording_comm.clear()
    tools.add(remove_all, hints="destructive")
    tools.disable("area")
    shown.refresh()
    assert shown.rows["area"] is area_row and shown.rows["delete_file"] is delete_row
    assert area_row.enabled.value is False  # follows the registry without a new row
    opened = sum(1 for msg_type, data in recording_comm if msg_type == "comm_open")
    assert 0 < opened < 30  # one row's widgets (with their layouts and styles), not every row's
    assert list(shown.rows) == ["area", "delete_file", "remove_all"]
    tools.remove("delete_file")
    shown.refresh()
    assert list(shown.rows) == ["area", "remove_all"] and delete_row.box.comm is None  # closed


def test_clicking_a_row_of_a_tool_removed_meanwhile_rebuilds(tools):
    shown = panel(tools)
    checkbox = shown.rows["area"].enabled
    tools.remove("area")
    from_browser(checkbox, value=False)
    assert list(shown.rows) == ["delete_file"]


def test_empty_registry_says_how_to_add_tools():
    shown = panel(Registry())
    assert shown.rows == {} and "%%tool" in shown.status.value


def test_panel_is_not_imported_by_nbtools():
    import subprocess
    import sys

    code = "import nbtools, sys; print(any(m in sys.modules for m in ('ipywidgets', 'IPython', 'nbtools.widgets')))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


def test_schema_json_is_valid_inside_the_pre(tools):
    import html

    row = panel(tools).rows["area"]
    row.schema_toggle.value = True
    body = row.schema.value.split("<pre", 1)[1].split(">", 1)[1].rsplit("</pre>", 1)[0]
    assert json.loads(html.unescape(body))["name"] == "area"
