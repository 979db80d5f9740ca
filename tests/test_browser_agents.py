"""What a person sees of an agent's work in a real JupyterLab, in headless Chromium
(tests/browserlab.py; skipped, saying what is missing, without playwright, jupyterlab or chromium).

A notebook serves its kernel with `%tools --serve --cells` (JupyterLab's real-time collaboration is
on, as jupyter-collaboration is installed): an MCP SDK client calls `add` and a `python()` run through
the server extension, and the person's open notebook shows each as a new cell at its end,
`python()`'s first printed line while the call still runs, then its whole output.

Another shows a destructive call's approval denied with a reason, one approved, a prompt still open
with an invalid edit's message, and an MCP activity log with a row in each status: every text of them
at least 4.5:1 against what is really behind it in Light and Dark, and in the same HTML outside
JupyterLab (no theme variables, as nbviewer shows it).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import nbformat

from browserlab import THEMES, TEXT_LAYERS, contrast, needs_browser, open_and_run, seen, shoot, view, written

pytestmark = needs_browser

# The agent notebook: two tools served with --cells (no approval policy: the calls run as they come).
AGENT_TOOLS = """import nbtools
from nbtools import python

def add(a: int, b: int) -> int:
    "Add two integers."
    return a + b"""


def agent_notebook(folder: Path) -> Path:
    cells = [nbformat.v4.new_code_cell("%load_ext nbtools"), nbformat.v4.new_code_cell(AGENT_TOOLS),
             nbformat.v4.new_code_cell("%tool add\n%tool python"),
             nbformat.v4.new_code_cell("%tools --serve --cells")]
    return written(folder / "agent.ipynb", cells)


# The colours notebook: approval prompts for a destructive tool (one denied with a reason, one approved,
# one still open showing an invalid edit's message) and an MCP activity log with a row in every status.
COLOUR_TOOLS = """import asyncio
from nbtools import Registry
from nbtools.approval import ApprovalPrompt

notes = Registry()

def delete_note(title: str) -> str:
    "Delete a note for good (no undo)."
    return f"deleted {title}"

notes.add(delete_note, hints="destructive")
notes.approve = prompt = ApprovalPrompt(timeout=3600)

async def ask(arguments, answer):
    \"Ask for `arguments`, then answer as a person would (`answer(prompt)` clicks).\"
    pending = asyncio.ensure_future(notes.acall("delete_note", arguments, raise_on_err=False))
    while prompt.widget is None or prompt.record is not None:
        await asyncio.sleep(0.05)
    answer(prompt)
    return pending"""

DENIED = """def deny(p):
    p.reason.value = "keep it; archive instead"
    p.deny_button.click()

print(await (await ask({"title": "ideas"}, deny)))"""

APPROVED = "print(await (await ask({'title': 'old drafts'}, lambda p: p.approve_button.click())))"

# Left open (the clock counts down from an hour): Edit, an argument of the wrong type, Approve -> the message.
INVALID_EDIT = """def invalid_edit(p):
    p.edit_button.click()
    p.editor.value = '{"title": 5}'
    p.approve_button.click()

still_open = await ask({"title": "shopping list"}, invalid_edit)"""

ACTIVITY_LOG = """from nbtools.errors import CallRefused, ToolCallError
from nbtools.mcp.activity import Activity, ActivityView
from nbtools.mcp.toolresults import error_result, success_result

log = Activity()
log.end(log.begin("claude-code", "add", {"a": 2, "b": 3}), success_result(None, 5, 10_000))
log.end(log.begin("claude-code", "lookup", {"name": "q3"}), error_result(ToolCallError("lookup", "no report named q3")))
log.end(log.begin("claude-code", "delete_note", {"title": "ideas"}),
        error_result(CallRefused("delete_note", "refused: the user denied this call")))
log.end(log.begin("claude-code", "python", {"code": "train()"}), cancelled=True)
log.end(log.begin("cursor", "notes://missing", None, kind="resource"), error=ValueError("no note named missing"))
for status, outcome in [("working", ""), ("input required", "waiting for the client's answers (name)"),
                        ("completed", "fitted in 2.0 s"), ("failed", "the fit diverged")]:
    log.state(log.begin("cursor", "long_fit", {"seconds": 2}, kind="task"), status, outcome)
log.begin("claude-code", "python", {"code": "fit()"})  # still running
ActivityView(log)"""
ACTIVITY_STATUSES = ("ok", "error", "refused", "cancelled", "working", "input required", "completed", "failed",
                     "running")


def colours_notebook(folder: Path) -> Path:
    return written(folder / "colours.ipynb", [nbformat.v4.new_code_cell(source) for source in (
        COLOUR_TOOLS, DENIED, APPROVED, INVALID_EDIT, ACTIVITY_LOG)])


# -- the agent's calls, appearing as cells in the open notebook --------------------------------------

def test_an_agents_calls_appear_as_cells_in_jupyterlab(lab, browser, tmp_path):
    """agent.ipynb open in JupyterLab, its kernel serving with `--cells`: an MCP client's `add` call
    appears at the notebook's end as the cell `add(a=2, b=3)` showing 5; a `python()` run appears as a
    cell of its code showing its first printed line while it still runs, then all its output.
    Screenshots of both moments in tmp_path."""
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    try:
        _check_agent_cells(page, lab.url(agent_notebook(lab.folder).name), tmp_path)
    finally:
        page.close()


def _call_tool(lab_url: str, name: str, arguments: dict):
    """One `tools/call` by the MCP SDK's client through the server extension, as an agent makes it
    (on a thread of its own: Playwright's sync API keeps an event loop running on this one)."""
    import anyio
    from test_jupyter_server import mcp_session

    url = lab_url.split("/lab/", 1)[0] + "/nbtools/mcp/notebooks/agent.ipynb"

    async def client():
        async with await mcp_session(url, "2025-11-25", {"Authorization": "token browser-test"}) as session:
            with anyio.fail_after(120):
                return await session.call_tool(name, arguments)
    answer: dict = {}
    caller = threading.Thread(target=lambda: answer.update(result=anyio.run(client)))
    caller.start()
    caller.join(150)
    assert "result" in answer, f"the MCP client's {name} call did not come back"
    return answer["result"]


# The text of the notebook's cells as the page shows them: (the input's lines, the outputs' text).
_SHOWN_CELLS = """() => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell')].map(cell => [
    [...cell.querySelectorAll('.jp-InputArea .cm-line')].map(line => line.textContent).join('\\n'),
    [...cell.querySelectorAll('.jp-OutputArea-output')].map(output => output.innerText).join('\\n')])"""


def _wait_for_cell(page, source: str, shown: str, what: str) -> str:
    """The outputs' text of the cell of `source` once it holds `shown` (the page scrolled to its end)."""
    deadline = time.monotonic() + 120
    cells: list = []
    while time.monotonic() < deadline:
        page.evaluate("() => { const cells = document.querySelectorAll('.jp-Notebook .jp-Cell');"
                      " cells[cells.length - 1].scrollIntoView({block: 'end'}); }")
        cells = page.evaluate(_SHOWN_CELLS)
        for text, outputs in cells:
            if text == source and shown in outputs:
                return outputs
        time.sleep(0.25)
    raise AssertionError(f"JupyterLab never showed {what}; its cells: {cells}")


def _check_agent_cells(page, url: str, folder: Path) -> None:
    open_and_run(page, url)
    page.wait_for_selector(".jp-OutputArea-output:has-text('written as a cell at the end of agent.ipynb')",
                           timeout=120_000)
    before = page.evaluate(_SHOWN_CELLS)
    assert len(before) == 4, before
    # 1. A tool call: the cell that repeats it, and its result.
    assert _call_tool(url, "add", {"a": 2, "b": 3}).structured_content == {"result": 5}
    assert _wait_for_cell(page, "add(a=2, b=3)", "5", "add's cell").strip() == "5"
    # 2. python(): its first line shown while it runs, the rest at its end.
    signal_file = folder / "go"
    code = (f"import pathlib, time\nprint('agent says hello')\nfor _ in range(2400):\n"
            f"    if pathlib.Path({str(signal_file)!r}).exists(): break\n    time.sleep(0.05)\n"
            "print('and goodbye')\n6 * 7")
    answer: dict = {}
    caller = threading.Thread(target=lambda: answer.update(result=_call_tool(url, "python", {"code": code})))
    caller.start()
    try:
        running = _wait_for_cell(page, code, "agent says hello", "python()'s first line while it runs")
        assert "and goodbye" not in running, running
        page.screenshot(path=str(folder / "agent-cell-running.png"))
    finally:
        signal_file.write_text("go")
        caller.join(150)
    assert "result" in answer and not answer["result"].is_error, answer
    done = _wait_for_cell(page, code, "42", "python()'s whole output")
    assert done.split() == ["agent", "says", "hello", "and", "goodbye", "42"], done
    page.screenshot(path=str(folder / "agent-cell-done.png"))
    shown = page.evaluate(_SHOWN_CELLS)
    assert [text for text, _ in shown] == [text for text, _ in before] + ["add(a=2, b=3)", code], shown



# -- the approval prompts and the MCP activity log, in both themes and outside JupyterLab ---------------

# nbtools' own HTML in the colours notebook (ipywidgets' buttons and text boxes are JupyterLab's to colour).
_OWN_HTML = (".jp-OutputArea-output .widget-html-content, .jp-OutputArea-output.jp-RenderedHTMLCommon, "
             ".jp-OutputArea-output .jp-RenderedHTMLCommon")


def _low_contrast(page, where: str, low: dict, measured: dict) -> None:
    """Every text of nbtools' HTML on `page` measured against what is behind it: the lowest ratio per
    text in `measured`, those under 4.5:1 in `low`."""
    layers = page.evaluate(f"() => [...document.querySelectorAll({_OWN_HTML!r})].flatMap({TEXT_LAYERS})")
    for text, colour, chain in layers:
        ratio = round(contrast(*seen(colour, chain)), 2)
        key = f"{where}: {text!r}"
        measured[key] = min(ratio, measured.get(key, ratio))
        if ratio < 4.5:
            low[key] = measured[key]


def test_approval_and_activity_colours_in_both_themes(lab, browser, tmp_path):
    """A denied and an approved destructive call's records, an open prompt showing an invalid edit's
    message beside the `destructive` badge, and an MCP activity log with a row in each status (ok,
    error, refused, cancelled, running; a task working, input required, completed, failed): every text
    at least 4.5:1 (WCAG AA) against what is really behind it in JupyterLab Light and Dark, and in the
    same HTML shown outside JupyterLab (no theme variables: nbviewer, a plain HTML export). The status
    is a word and the warning a badge's word, not colour alone. Screenshots in tmp_path."""
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    try:
        open_and_run(page, lab.url(colours_notebook(lab.folder).name))
        page.wait_for_selector(".jp-OutputArea-output .widget-html-content:has-text('input required')", timeout=120_000)
        page.wait_for_selector(".jp-OutputArea-output:has-text('Invalid edit')", timeout=60_000)
        page.wait_for_function("[...document.querySelectorAll('.jp-OutputArea-output')]"
                               ".filter(o => o.textContent.includes('Approval for')).length === 2", timeout=60_000)
        time.sleep(2)
        low: dict = {}
        measured: dict = {}
        for theme in THEMES:
            view(page, 1280, theme)
            name = theme.split()[-1].lower()
            shoot(page, ".jp-OutputArea-output:has-text('Approval for')", tmp_path / f"approvals-{name}.png")
            shoot(page, ".jp-OutputArea-output:has-text('input required')", tmp_path / f"activity-{name}.png")
            _low_contrast(page, theme, low, measured)
        # The same HTML outside JupyterLab: none of its variables defined, so each colour's fallback shows.
        shown = page.evaluate(f"() => [...document.querySelectorAll({_OWN_HTML!r})].map(e => e.innerHTML)")
        page.set_content("<!doctype html><body style='font-family:sans-serif'>" + "".join(
            f"<div class='jp-OutputArea-output jp-RenderedHTMLCommon'>{part}</div>" for part in shown) + "</body>")
        page.screenshot(path=str(tmp_path / "plain-html.png"), full_page=True)
        _low_contrast(page, "plain HTML", low, measured)
        (tmp_path / "contrast.json").write_text(json.dumps(measured, indent=1, ensure_ascii=False))  # every figure
        # Every part was measured, in each view: each status word, the badge, the message, both records.
        for where in (*THEMES, "plain HTML"):
            texts = {key.split(": ", 1)[1].strip("'\"") for key in measured if key.startswith(f"{where}: ")}
            wanted = {*ACTIVITY_STATUSES, "destructive", "Denied: keep it; archive instead", "Approved."}
            assert wanted <= texts, f"{where}: not measured: {wanted - texts}"
            assert any(text.startswith("Invalid edit, argument 'title'") for text in texts), (where, sorted(texts))
        assert not low, f"contrast below 4.5:1 (screenshots in {tmp_path}): " + "; ".join(
            f"{where} {ratio}:1" for where, ratio in sorted(low.items(), key=lambda item: item[1])[:16])
    finally:
        page.close()
