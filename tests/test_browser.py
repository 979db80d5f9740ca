"""The panel, the table and the approval prompt in a real JupyterLab, in headless Chromium.

Needs the `playwright` and `jupyterlab` Python packages and Debian's `chromium` (`apt-get install -y
chromium`); without them every test here is skipped with a message saying what is missing. A
35-tool notebook is run in JupyterLab; checked: no button's text is cut ("schema" was "sche…"), nor the
filter's placeholder, destructive tools are marked in the `%tools` table, text
contrast at least 4.5:1 (WCAG AA) in JupyterLab Light and Dark, the filter finds tools by name,
group, hint and description in any case, and a decided approval is still shown, as static output,
after the notebook is saved and reopened without its kernel.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
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


def demo_notebook(folder: Path) -> Path:
    """35 tools in five groups, the panel, the table, one decided approval."""
    cells = [nbformat.v4.new_code_cell("%load_ext nbtools")]
    for group, hints in GROUPS:
        body = "\n".join(
            f"def {group}_action_{i}(query: str, include_history: bool = False, limit: int = 10) -> str:\n"
            f"    \"Do the {group} thing number {i}: a description long enough to wrap in a narrow notebook.\"\n"
            f"    return query\n" for i in range(7))
        cells.append(nbformat.v4.new_code_cell(f"%%tool --group {group} {hints}\n{body}"))
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
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = folder / "demo.ipynb"
    nbformat.write(notebook, path)
    return path


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
def lab(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lab")
    demo_notebook(folder)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    server = subprocess.Popen([sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}",
                               "--ip=127.0.0.1", "--IdentityProvider.token=browser-test",
                               "--LabApp.expose_app_in_browser=True", f"--ServerApp.root_dir={folder}", "--allow-root"],
                              env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)  # its own process group: the kernels it starts go with it
    try:
        for _ in range(240):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/lab/tree/demo.ipynb?token=browser-test"
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


def test_panel_table_and_approval_in_jupyterlab(lab):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            _check_lab(browser, lab)
        finally:
            browser.close()


def _check_lab(browser, lab) -> None:
    """Everything the test checks, in one page of `browser` (closed by the caller, whatever happens)."""
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    app = "window.jupyterapp"
    page.goto(lab)
    page.wait_for_function(f"{app} && {app}.shell.currentWidget && {app}.shell.currentWidget.sessionContext"
                           " && {app}.shell.currentWidget.sessionContext.session"
                           " && {app}.shell.currentWidget.sessionContext.session.kernel".replace("{app}", app),
                           timeout=120_000)
    time.sleep(2)
    page.evaluate(f"{app}.commands.execute('notebook:run-all-cells')")
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
