"""The panel, the `%tools` table and a decided approval in a real JupyterLab, in headless Chromium
(tests/browserlab.py; skipped, saying what is missing, without playwright, jupyterlab or chromium).

A 35-tool notebook is run in JupyterLab; checked: no button's text is cut ("schema" was "sche…"), nor
the filter's placeholder, destructive tools are marked in the `%tools` table, text contrast at least
4.5:1 (WCAG AA) in JupyterLab Light and Dark, the filter finds tools by name, group, hint and
description in any case, and a decided approval is still shown, as static output, after the notebook
is saved and reopened without its kernel.

A second notebook (the 35 tools, a long-named destructive one in a group of its own, two disabled)
is looked at 1,000 and 1,400 px wide in Light and Dark, a screenshot of each in the test's tmp_path:
every panel row ends its description before its "details" button, keeps the button inside the output
area and its checkbox, name, badges and button on one line; every text of the panel and the `%tools`
table, disabled tools' and the `destructive` chip included, is at least 4.5:1 against what is really
behind it (backgrounds and opacities composited); the table is no wider than its output area and no
cell cuts its text.

One JupyterLab serves both, one Chromium shows them (the `lab` and `browser` fixtures); each notebook
opens in a reset workspace.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import nbformat
import pytest

from browserlab import THEMES, TEXT_LAYERS, contrast, needs_browser, open_and_run, over, rgba, seen, shoot, view, written

pytestmark = needs_browser

GROUPS = [("notes", "--hints read-only"), ("files", "--hints destructive"), ("web", "--hints read-only open-world"),
          ("math", "--hints idempotent"), ("calendar", "")]


def tool_cells() -> list:
    """35 tools in five groups, one `%%tool` cell per group."""
    cells = []
    for group, hints in GROUPS:
        body = "\n".join(
            f"def {group}_action_{i}(query: str, include_history: bool = False, limit: int = 10) -> str:\n"
            f"    \"Do the {group} thing number {i}: a description long enough to wrap in a narrow notebook.\"\n"
            f"    return query\n" for i in range(7))
        cells.append(nbformat.v4.new_code_cell(f"%%tool --group {group} {hints}\n{body}"))
    return cells



def demo_notebook(folder: Path) -> Path:
    """35 tools in five groups, the panel, the table, one decided approval."""
    cells = [nbformat.v4.new_code_cell("%load_ext nbtools"), *tool_cells()]
    cells += [
        nbformat.v4.new_code_cell("from nbtools import registry\nregistry.disable('notes_action_1')\n"
                                  "import nbtools\nnbtools.panel()"),
        nbformat.v4.new_code_cell("%tools -g notes"),
        nbformat.v4.new_code_cell("%tools -g files"),
        nbformat.v4.new_code_cell(
            "import asyncio\nfrom nbtools.approval import ApprovalPrompt\nregistry.approve = prompt = ApprovalPrompt(timeout=120)\n"
            "pending = asyncio.ensure_future(registry.acall('files_action_1', {'query': 'report.txt'}))\n"
            "await asyncio.sleep(0.5)\nprompt.deny_button.click()\ntry:\n    await pending\n"
            "except Exception as error:\n    print(error)"),
    ]
    return written(folder / "demo.ipynb", cells)


# A tool with a long name and a long parameter list, in a group of its own (rows like it sat off their
# line in the panel, and the table cut its name and ran past the output area).
LONG_NAME = "archive_every_quarterly_report_into_cold_storage_and_notify_each_owner"
LONG_TOOL = (f"%%tool --group archive --hints destructive\n"
             f"def {LONG_NAME}(quarter: str, regions: list[str], keep_local_copies: bool = False,\n"
             f"        notification_template_name: str = 'quarterly-archive-notice-for-regional-owners',\n"
             f"        retention_policy_identifier: str = 'seven-years-then-delete-unless-under-legal-hold') -> str:\n"
             f"    \"Move every report of the quarter to cold storage, then tell each owner where it went and for how long.\"\n"
             f"    return quarter")


def layout_notebook(folder: Path) -> Path:
    """The 35 tools and the long one, two of them disabled (one destructive), the panel and the whole `%tools` table."""
    cells = [nbformat.v4.new_code_cell("%load_ext nbtools"), *tool_cells()]
    cells += [nbformat.v4.new_code_cell(LONG_TOOL),
              nbformat.v4.new_code_cell("from nbtools import registry\nregistry.disable('notes_action_1')\n"
                                        "registry.disable('files_action_2')\nimport nbtools\nnbtools.panel()"),
              nbformat.v4.new_code_cell("%tools")]
    return written(folder / "layout.ipynb", cells)


def test_panel_table_and_approval_in_jupyterlab(lab, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    try:
        _check_lab(page, lab.url(demo_notebook(lab.folder).name))
    finally:
        page.close()


def _check_lab(page, lab) -> None:
    """Everything the test checks, in `page` (closed by the caller, whatever happens)."""
    app = "window.jupyterapp"
    open_and_run(page, lab)
    page.wait_for_selector("text=Approval for", timeout=120_000)
    panel = page.locator(".widget-vbox:has(.widget-text)").first
    panel.wait_for(timeout=60_000)
    time.sleep(2)
    # 1. In both themes: no control cut short, text contrast at least 4.5:1.
    for theme in ("JupyterLab Light", "JupyterLab Dark"):
        page.evaluate(f"{app}.commands.execute('apputils:change-theme', {{theme: '{theme}'}})")
        time.sleep(3)
        cut = page.evaluate("() => [...document.querySelectorAll('.widget-toggle-button, .widget-button')]"
                            ".filter(b => b.scrollWidth > b.clientWidth + 1).map(b => b.textContent)")
        assert cut == [], f"{theme}: buttons cut short: {cut}"
        colours = page.evaluate("""() => {
            const background = getComputedStyle(document.querySelector('.jp-Notebook')).backgroundColor;
            const texts = [...document.querySelectorAll(
                '.widget-html-content span, .widget-html-content code, .widget-html-content div, .jp-RenderedHTMLCommon td')]
                .filter(e => e.textContent.trim() && !e.closest('[style*="opacity"]')
                             && !(e.getAttribute('style') || '').includes('background'));
            return {background, texts: texts.map(e => [getComputedStyle(e).color, e.textContent.slice(0, 40)])};
        }""")
        background = rgba(colours["background"])
        worst = min((contrast(over(rgba(colour), background), background), text) for colour, text in colours["texts"])
        assert worst[0] >= 4.5, f"{theme}: contrast {worst[0]:.2f} for {worst[1]!r}"
    # The filter's placeholder fits its box whole (it was cut to "…descriptior").
    width, room, placeholder = page.evaluate("""() => {
        const input = document.querySelector('.widget-text input');
        const style = getComputedStyle(input);
        const measure = document.createElement('canvas').getContext('2d');
        measure.font = style.font;
        return [measure.measureText(input.placeholder).width,
                input.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight),
                input.placeholder];
    }""")
    assert placeholder and width <= room, f"placeholder {placeholder!r} cut: {width:.0f}px in {room:.0f}px"
    # Destructive tools are marked in the %tools table (⚠ and the hint in red), read-only ones not.
    marked = page.evaluate("""() => [...document.querySelectorAll('.jp-RenderedHTMLCommon tr')]
        .filter(row => row.textContent.includes('_action_'))
        .map(row => [row.querySelector('td code').textContent, row.textContent.includes('⚠')])""")
    assert marked and all(flag == name.startswith("files_") for name, flag in marked), marked
    # 2. The filter: name, group, hint, description, any case; an empty result says how to clear.
    status = page.locator(".widget-vbox:has(.widget-text) >> text=/tools shown|No tool matches/").first
    box = page.locator(".widget-text input").first
    for text, shown in [("NOTES_ACTION", "7 of 35"), ("Calendar", "7 of 35"), ("DESTRUCTIVE", "7 of 35"),
                        ("Thing Number 3", "5 of 35"), ("zzz", "No tool matches 'zzz'")]:
        box.fill(text)
        for _ in range(40):  # the kernel answers the keystrokes in its own time
            if shown in (seen := status.text_content() or ""):
                break
            time.sleep(0.5)
        assert shown in seen, f"filter {text!r}: {seen!r}"
    assert "clear the Filter box" in status.text_content()
    box.fill("")
    # 3. Save, shut the kernel down, reopen: the decided approval is still there, as static output.
    page.evaluate(f"{app}.commands.execute('docmanager:save')")
    time.sleep(3)
    page.evaluate(f"{app}.commands.execute('kernelmenu:shutdown')")
    time.sleep(3)
    page.reload()
    page.wait_for_selector(".jp-Notebook", timeout=60_000)
    record = page.locator(".jp-OutputArea-output:has-text('Approval for')").first
    record.wait_for(timeout=60_000)
    assert "files_action_1" in record.text_content() and "Denied." in record.text_content()
    assert "report.txt" in record.text_content()



# -- the layout notebook at 1,000 and 1,400 px, in both themes ---------------------------------------

VIEWS = [(width, theme) for width in (1000, 1400) for theme in THEMES]


@pytest.fixture(scope="module")
def layout_page(lab, browser):
    """layout.ipynb run in one page (the tests below resize it and switch its theme)."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        open_and_run(page, lab.url(layout_notebook(lab.folder).name))
        page.wait_for_selector(f".jp-RenderedHTMLCommon td:has-text('{LONG_NAME}')", timeout=120_000)
        page.wait_for_function("document.querySelectorAll('.widget-checkbox').length >= 36", timeout=60_000)
        time.sleep(2)
        yield page
    finally:
        page.close()




# The two outputs: a Playwright selector (for screenshots) and a JavaScript expression (for measures).
PANEL_OUTPUT = ".jp-OutputArea-output:has(.widget-checkbox)"
TABLE_OUTPUT = f".jp-OutputArea-output:has(table):has-text('{LONG_NAME}')"
OUTPUTS = {PANEL_OUTPUT: f"document.querySelector('{PANEL_OUTPUT}')",
           TABLE_OUTPUT: "[...document.querySelectorAll('.jp-OutputArea-output:has(table)')]"
                         f".find(o => o.textContent.includes('{LONG_NAME}'))"}


def _summed_up(problems: list[str], folder: Path) -> str:
    """The first three problems of each kind (the words after the last colon, figures left out), and the counts."""
    kinds: dict[str, list[str]] = {}
    for problem in problems:
        kinds.setdefault(re.sub(r"[\d.]+px", "Npx", problem.rsplit(": ", 1)[-1]), []).append(problem)
    return "\n".join(["\n".join(found[:3]) + f"\n  ({len(found)} like these)" for found in kinds.values()]
                     + [f"screenshots in {folder}"])


def test_panel_rows_fit_their_width(layout_page, tmp_path):
    """At 1,000 and 1,400 px, in both themes: in every row the description ends before the "details"
    button, the button lies inside the output area, and the name, badges and description share one
    baseline (rows of a long name, or of a group of their own, sat 2 px off)."""
    page = layout_page
    problems = []
    for width, theme in VIEWS:
        view(page, width, theme)
        shoot(page, PANEL_OUTPUT, tmp_path / f"panel-{width}-{theme.split()[-1].lower()}.png")
        rows = page.evaluate("""() => {
            const output = """ + OUTPUTS[PANEL_OUTPUT] + """;
            const edge = output.getBoundingClientRect().right;
            const baseline = e => {  // where an empty inline-block sits: the element's first baseline
                const probe = document.createElement('span');
                probe.style.cssText = 'display:inline-block;width:0;height:0';
                e.prepend(probe);
                const y = probe.getBoundingClientRect().bottom;
                probe.remove();
                return y;
            };
            return [...output.querySelectorAll('.widget-hbox:has(> .widget-checkbox)')].map(line => {
                const name = line.querySelector('.widget-html-content code');
                const parts = [...line.querySelector('.widget-html-content > div').children];
                const button = line.querySelector('.widget-toggle-button').getBoundingClientRect();
                const text = parts[parts.length - 1].getBoundingClientRect();
                const box = line.querySelector('.widget-checkbox input').getBoundingClientRect();
                const rows = line.closest('.widget-vbox').parentElement;
                const baselines = parts.map(baseline);
                return {name: name.textContent.split('(')[0], textRight: text.right, buttonLeft: button.left,
                        buttonRight: button.right, edge: Math.min(edge, rows.getBoundingClientRect().left + rows.clientWidth),
                        baselines, controls: [baselines[0] - (box.top + box.bottom) / 2,
                                              baselines[0] - (button.top + button.bottom) / 2]};
            });
        }""")
        assert len(rows) == 36, f"{width}px {theme}: {len(rows)} rows"
        for row in rows:
            where = f"{width}px {theme}: {row['name']}"
            if row["textRight"] > row["buttonLeft"] + 0.5:
                problems.append(f"{where}: the description runs {row['textRight'] - row['buttonLeft']:.0f}px under the button")
            if row["buttonRight"] > row["edge"] + 0.5:
                problems.append(f"{where}: the button is cut {row['buttonRight'] - row['edge']:.0f}px at the edge")
            off = max(row["baselines"]) - min(row["baselines"])
            if off > 0.5:
                problems.append(f"{where}: name, badges and description {off:.1f}px off one line")
        # The checkbox and the button sit at the same height against the name's line in every row.
        for index, control in enumerate(("checkbox", "button")):
            heights = sorted((row["controls"][index], row["name"]) for row in rows)
            if heights[-1][0] - heights[0][0] > 1:
                problems.append(f"{width}px {theme}: the {control} is {heights[-1][0] - heights[0][0]:.1f}px higher "
                                f"against the name in {heights[-1][1]} than in {heights[0][1]}")
    assert not problems, _summed_up(problems, tmp_path)



def test_dimmed_and_warning_text_contrast_in_both_themes(layout_page, tmp_path):
    """Every text of the panel's rows and of the `%tools` table, disabled tools' and the `destructive`
    chip included, at least 4.5:1 (WCAG AA) against what is behind it, in Light and Dark."""
    page = layout_page
    low = {}
    for width, theme in VIEWS:
        view(page, width, theme)
        for selector, what in ((PANEL_OUTPUT, "panel"), (TABLE_OUTPUT, "table")):
            shoot(page, selector, tmp_path / f"{what}-{width}-{theme.split()[-1].lower()}.png")
            for text, colour, chain in page.evaluate_handle(OUTPUTS[selector]).evaluate(TEXT_LAYERS):
                ratio = contrast(*seen(colour, chain))
                if ratio < 4.5:
                    low.setdefault(f"{theme} {what}: {text!r}", round(ratio, 2))
    assert not low, f"contrast below 4.5:1 (screenshots in {tmp_path}): " + "; ".join(
        f"{where} {ratio}:1" for where, ratio in sorted(low.items(), key=lambda item: item[1])[:12])


def test_tools_table_fits_and_cuts_nothing(layout_page, tmp_path):
    """At 1,000 and 1,400 px, in both themes: the `%tools` table is no wider than its output area and
    no cell cuts its text (a long name and a long parameter list wrap)."""
    page = layout_page
    problems = []
    for width, theme in VIEWS:
        view(page, width, theme)
        shoot(page, TABLE_OUTPUT, tmp_path / f"table-{width}-{theme.split()[-1].lower()}.png")
        sizes = page.evaluate(f"""() => {{
            const output = {OUTPUTS[TABLE_OUTPUT]};
            const table = output.querySelector('table');
            const cut = [...table.querySelectorAll('td, th')]
                .filter(cell => cell.scrollWidth > cell.clientWidth + 1)
                .map(cell => [cell.textContent.trim().slice(0, 60), cell.scrollWidth - cell.clientWidth]);
            return {{room: output.clientWidth, table: table.getBoundingClientRect().width,
                    scrolls: output.scrollWidth - output.clientWidth, cut}};
        }}""")
        where = f"{width}px {theme}"
        if sizes["table"] > sizes["room"] + 1:
            problems.append(f"{where}: the table is {sizes['table'] - sizes['room']:.0f}px wider than its output area")
        if sizes["scrolls"] > 1:
            problems.append(f"{where}: the output scrolls {sizes['scrolls']}px sideways")
        problems += [f"{where}: {text!r} cut by {by}px" for text, by in sizes["cut"]]
    assert not problems, _summed_up(problems, tmp_path)
