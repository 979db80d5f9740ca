"""A real JupyterLab in Debian's headless Chromium, for the browser tests (tests/test_browser*.py).

Needs the `playwright` and `jupyterlab` Python packages and Debian's `chromium` (`apt-get install -y
chromium`); `needs_browser` skips a test module without them, saying what is missing.

- `running_lab(folder)`: `jupyter lab` on a free loopback port, serving `folder` (the notebooks a test
  writes there with `written`), its settings (the theme) and workspaces kept in that folder, JupyterLab's
  news question answered "Never" (it covered screenshots); yields a `Lab`. Real-time collaboration is
  on when jupyter-collaboration is installed, as `[dev]` installs it.
- `chromium()`: one headless Chromium; Playwright's sync API drives one page at a time.
- `open_and_run(page, url)`, `view(page, width, theme)`, `shoot(page, selector, path)`: open a notebook
  and run it; resize and switch theme; a screenshot with an output scrolled to the top.
- Colour: `contrast` (WCAG ratio), `rgba`, `over`, `background`, and `TEXT_LAYERS` (a JavaScript
  function collecting each text's colour and the backgrounds and opacities behind it) with `seen`
  (what reaches the screen of both), so a ratio is measured against what is really behind a text.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
MISSING = [name for name in ("playwright", "jupyterlab") if importlib.util.find_spec(name) is None]
if CHROMIUM is None:
    MISSING.append("Debian's chromium (apt-get install -y chromium)")
needs_browser = pytest.mark.skipif(bool(MISSING), reason=f"browser test needs {', '.join(MISSING)}")

THEMES = ("JupyterLab Light", "JupyterLab Dark")
TOKEN = "browser-test"


def written(path: Path, cells: list) -> Path:
    """`cells` written as the notebook `path`, for a Python 3 kernel."""
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, path)
    return path


@dataclass(frozen=True)
class Lab:
    """A running JupyterLab: the folder it serves and its address."""

    folder: Path
    base: str  # http://127.0.0.1:<port>

    def url(self, notebook: str) -> str:
        """The address that opens `notebook` (a path in `folder`) in JupyterLab, token included."""
        return f"{self.base}/lab/tree/{notebook}?token={TOKEN}"


@contextlib.contextmanager
def running_lab(folder: Path) -> Iterator[Lab]:
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
                               "--ip=127.0.0.1", f"--IdentityProvider.token={TOKEN}",
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
        yield Lab(folder, f"http://127.0.0.1:{port}")
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


@contextlib.contextmanager
def chromium() -> Iterator:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


def open_and_run(page, url: str) -> None:
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


def view(page, width: int, theme: str) -> None:
    """Resize the page to `width` and switch to `theme`; return once the theme's styles apply."""
    page.set_viewport_size({"width": width, "height": 1000})
    if page.evaluate("document.body.dataset.jpThemeName") != theme:
        page.evaluate(f"window.jupyterapp.commands.execute('apputils:change-theme', {{theme: '{theme}'}})")
        page.wait_for_function(f"document.body.dataset.jpThemeName === '{theme}'", timeout=30_000)
    time.sleep(1.5)  # the theme's stylesheet and the notebook's relayout


def shoot(page, selector: str, path: Path) -> None:
    """A screenshot of the page with the output `selector` finds scrolled to the top (the notebook
    scrolls inside the page: an element's own screenshot of a tall output comes out garbled)."""
    page.locator(selector).first.evaluate("e => e.scrollIntoView({block: 'start'})")
    time.sleep(0.5)
    page.screenshot(path=str(path))


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


def background(layers: list[str]) -> list[float]:
    """The colour behind an element: its ancestors' backgrounds (nearest first) composited, white below all."""
    colour = [255.0, 255.0, 255.0]
    for layer in reversed(layers):
        colour = over(rgba(layer), colour)
    return colour


# Every element holding text under an element, with its colour, and the background colour and opacity
# of it and of each of its ancestors (outermost first): what `seen` composites.
TEXT_LAYERS = """output => [...output.querySelectorAll('*')]
        .filter(e => [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()))
        .map(e => {
            const chain = [];
            for (let a = e; a; a = a.parentElement) {
                const style = getComputedStyle(a);
                chain.unshift([style.backgroundColor, parseFloat(style.opacity)]);
            }
            return [e.textContent.trim().slice(0, 50), getComputedStyle(e).color, chain];
        })"""


def seen(colour: str, chain: list) -> tuple[list[float], list[float]]:
    """The text's colour and the colour behind it as they reach the screen: each element's background
    painted over what is behind it, and each element's opacity mixing all it paints with that backdrop."""
    def paint(index: int, backdrop: list[float]) -> tuple[list[float], list[float]]:
        layer, opacity = chain[index]
        ground = over(rgba(layer), backdrop)
        text, behind = (over(rgba(colour), ground), ground) if index == len(chain) - 1 else paint(index + 1, ground)
        mix = lambda c: [opacity * c[i] + (1 - opacity) * backdrop[i] for i in range(3)]  # noqa: E731
        return mix(text), mix(behind)
    return paint(0, [255.0, 255.0, 255.0])
