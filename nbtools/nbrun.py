"""Running code that is not ours inside the `nbtools` command, without it touching what is ours.

`notebook_tools` runs a notebook's code cells in an embedded IPython shell and collects the tools they
register. The guards it runs them under serve the command's other targets too: stdout belongs to the
JSON `nbtools schema` prints and to the stdio protocol of `nbtools serve` (`stdout_to_stderr`), stdin
to that protocol (`stdin_from_devnull`), and a target's folder goes on `sys.path` without hiding the
modules nbtools itself imports (`on_sys_path`).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
from pathlib import Path
from typing import Any, Iterator

from .errors import NotebookError, TargetError
from .registry import Registry


# Cells the run leaves out: nbclient's `skip-execution`, and `nbtools-skip` for cells that need a
# live front end (clicking an approval prompt) and define no tools, so Jupyter still runs them.
SKIP_TAGS = frozenset({"skip-execution", "nbtools-skip"})


def notebook_tools(path: str | os.PathLike, *, progress: Any = None) -> Registry:
    """Run a notebook's code cells in an embedded IPython shell and return the tools it registered.

    The shell has the nbtools extension loaded and runs in the notebook's folder. The result is a
    new Registry holding the enabled tools the run added to (or redefined in) `nbtools.registry`,
    with that registry's approval and limits. Raises NotebookError for the first failing cell.
    Not for use inside IPython itself (the notebook would run in your own session).
    """
    # 1. A Python notebook's cells, read as JSON (nothing runs yet).
    notebook = Path(path)
    if not notebook.is_file():
        raise TargetError(f"{str(path)!r}: no such notebook")
    try:
        document = json.loads(notebook.read_text(encoding="utf-8"))
    except ValueError as error:
        raise TargetError(f"{str(path)!r} is not a Jupyter notebook: it is not JSON ({error})") from None
    cells = document.get("cells") if isinstance(document, dict) else None
    if not isinstance(cells, list):
        raise TargetError(f"{str(path)!r} is not a Jupyter notebook: a notebook is a JSON object with a "
                          "\"cells\" list (and \"metadata\", \"nbformat\"); this one has none")
    language = (document.get("metadata", {}).get("kernelspec", {}) or {}).get("language", "python")
    if language != "python":
        raise TargetError(f"{str(path)!r} is a {language} notebook; nbtools runs Python notebooks")

    # 2. An embedded shell of our own (never the person's running session).
    from IPython.core.getipython import get_ipython

    if get_ipython() is not None:
        raise TargetError("notebook_tools() runs a notebook in an embedded IPython shell and cannot run inside "
                          "IPython; run `nbtools schema NOTEBOOK` or `nbtools serve NOTEBOOK` in a terminal")
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    from .registry import registry as default_registry

    # 3. Every code cell in order, in the notebook's folder, with stdout and stdin kept for the command.
    code_cells = [(index, cell) for index, cell in enumerate(cells, 1) if cell.get("cell_type") == "code"]
    _say(progress, f"running {path} ({len(code_cells)} code cells)")
    before = {tool.name: tool for tool in default_registry}
    folder = notebook.resolve().parent
    shell = InteractiveShell.instance(colors="nocolor")
    with stdout_to_stderr(), stdin_from_devnull(), contextlib.chdir(folder), on_sys_path(str(folder)):
        shell.run_line_magic("load_ext", "nbtools")
        for index, cell in code_cells:
            source = cell.get("source", "")
            source = "".join(source) if isinstance(source, list) else str(source)
            tags = (cell.get("metadata") or {}).get("tags") or []
            if SKIP_TAGS & set(tags) or not source.strip():
                continue
            # One number per cell everywhere: the error says "cell N" and IPython's traceback "In[N]".
            shell.execution_count = index
            with capture_output() as captured:
                result = shell.run_cell(source, store_history=True, cell_id=cell.get("id"))
            if not result.success and "raises-exception" not in tags:
                error = result.error_before_exec or result.error_in_exec
                raise NotebookError(str(path), index, source, error, captured.stdout + captured.stderr)
    # 4. The enabled tools the run added or redefined, under the default registry's policy.
    found = Registry(approve=default_registry.approve, refuse_destructive=default_registry.refuse_destructive,
                     limits=default_registry.limits)
    for tool in default_registry.enabled():
        if before.get(tool.name) is not tool:
            found.add(tool)
    return found


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send everything written to stdout (Python's and file descriptor 1's) to stderr meanwhile.

    stdout belongs to the JSON that `schema` prints and to the stdio protocol of `serve`; `!cmd`
    lines and C extensions write to fd 1 directly, so the descriptor is redirected too.
    """
    sys.stdout.flush()
    try:
        saved_fd = os.dup(1)
    except OSError:  # no usable fd 1 (embedded interpreters): Python-level redirect only
        saved_fd = None
    try:
        if saved_fd is not None:
            os.dup2(2, 1)
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stderr.flush()
        if saved_fd is not None:
            os.dup2(saved_fd, 1)
            os.close(saved_fd)


@contextlib.contextmanager
def stdin_from_devnull() -> Iterator[None]:
    """Give the notebook's code an empty stdin meanwhile (`input()` raises EOFError, `!cat` reads nothing).

    Under `nbtools serve` stdin is the stdio protocol: the client's first messages are already
    waiting there, and a cell that read them would leave the server without its `initialize`.
    (Jupyter gives notebooks no stdin either when they run unattended.)
    """
    devnull = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - closed below
    try:
        saved_fd = os.dup(0)
    except OSError:  # no usable fd 0: Python-level redirect only
        saved_fd = None
    saved_stdin = sys.stdin
    try:
        if saved_fd is not None:
            os.dup2(devnull.fileno(), 0)
        sys.stdin = devnull
        yield
    finally:
        sys.stdin = saved_stdin
        if saved_fd is not None:
            os.dup2(saved_fd, 0)
            os.close(saved_fd)
        devnull.close()


@contextlib.contextmanager
def on_sys_path(folder: str) -> Iterator[None]:
    """Put `folder` first on sys.path meanwhile (as `python file.py` and Jupyter do), then last.

    Kept afterwards, because tools may import sibling modules lazily when they are called; but
    moved to the end, so a file there called `mcp.py` or `uvicorn.py` cannot hide the modules that
    serving imports next.
    """
    _load_nbtools_internals()  # before the folder can hide a module they import (a `uuid.py` there)
    if folder in sys.path:
        sys.path.remove(folder)
    sys.path.insert(0, folder)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(folder)
        sys.path.append(folder)


def _load_nbtools_internals() -> None:
    importlib.import_module("nbtools.introspect")
    importlib.import_module("nbtools.formats")
    importlib.import_module("nbtools.call")


def _say(progress: Any, message: str) -> None:
    if progress is not None:
        progress(message)
