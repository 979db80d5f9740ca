"""The notebook view of the agent loop: each step as it happens, the final answer as Markdown.

While the loop waits for the model or runs a tool, one live status line says so (updated in place,
cleared at the end); with `stream=True` the model's text appears as it comes, in one output updated
in place that becomes the step's text. The model's text is shown as inert Markdown
(`safetext.safe_markdown`: no HTML of its own, no image fetched unless `remote_images`). The final
answer is shown once: `chat(...)` returns it as an `Answer` (a `str`) that does not show itself
again when it is the cell's value. Colours are JupyterLab's theme variables (light and dark).

Each tool call is shown with its arguments and its result (folded in a `<details>` element when
long); images a tool returned (`nbtools.Image`, or what `nbtools.content` converts: PIL images,
matplotlib figures) are shown as images. Every object displayed has a plain-text form too, so a
notebook's stored outputs read (and compare) as text. IPython is imported only when a view is made
inside a running kernel.
"""

from __future__ import annotations

import html
import sys
from typing import Any

from ..content import Image, as_content, content_parts, describe
from .safetext import safe_markdown
from .steps import CallRecord, Step, Usage

FOLD_CHARS = 400  # results longer than this (or than FOLD_LINES lines) are folded
FOLD_LINES = 6


def in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (IPython already loaded, a kernel attached)."""
    if "IPython" not in sys.modules:
        return False
    from IPython import get_ipython

    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


class _Shown:
    """An output with an HTML form and a plain-text form (what nbval compares)."""

    def __init__(self, text: str, html_text: str):
        self._text, self._html = text, html_text

    def __repr__(self) -> str:
        return self._text

    def _repr_html_(self) -> str:
        return self._html


class _Markdown:
    """Model text: inert Markdown in the notebook, the text itself as the plain form."""

    def __init__(self, text: str, remote_images: bool = False):
        self.text, self.remote_images = text, remote_images

    def __repr__(self) -> str:
        return self.text

    def _repr_markdown_(self) -> str:
        return safe_markdown(self.text, self.remote_images)


class Answer(str):
    """The final answer `chat(...)` returns in a notebook: a `str`, shown (as inert Markdown) only
    where it was not shown already. The step view showed it during the cell that made it, so as
    that cell's last value it shows nothing more; in any later cell it shows as usual."""

    _shown_in: Any = None
    remote_images: bool = False

    def _ipython_display_(self) -> None:
        if self._shown_in is not None and self._shown_in == _execution_count():
            return
        from IPython.display import display

        display(_Markdown(str(self), self.remote_images))


def _execution_count() -> Any:
    """Which cell execution is running: the kernel's execute request id (unique even where cells run
    without counting, as nbval runs them), else IPython's cell number; None outside IPython."""
    if "IPython" not in sys.modules:
        return None
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        return None
    header = getattr(shell, "parent_header", None)
    request = header.get("msg_id") if isinstance(header, dict) else None
    return request if request else shell.execution_count


# Theme colours (JupyterLab's CSS variables, with a fallback outside JupyterLab) and text that breaks
# only between words (JupyterLab's output <pre> breaks anywhere: word-break: break-all).
_ERROR_COLOUR = "var(--jp-error-color1, #d32f2f)"
_MUTED_COLOUR = "var(--jp-ui-font-color2, #757575)"
_BORDER = "var(--jp-border-color1, #bdbdbd)"
_EMPTY = _Shown("", "")
_WRAP = "white-space: pre-wrap; word-break: normal; overflow-wrap: break-word"


def _folded(text: str) -> str:
    body = f"<pre style='{_WRAP}; margin: 0'>{html.escape(text)}</pre>"
    if len(text) <= FOLD_CHARS and text.count("\n") < FOLD_LINES:
        return body
    summary = html.escape(" ".join(text[:80].split())) + f"… ({len(text)} characters)"
    return f"<details><summary>{summary}</summary>{body}</details>"


def call_output(step: Step, call: CallRecord) -> _Shown:
    """One call of a step: name, arguments, result (an error marked as one). A rich result is
    summed up by its parts (the records themselves are displayed after it, see `rich_items`)."""
    arguments = call.arguments_text()
    label = "error" if call.is_error else "result"
    parts = None if call.is_error or call.value is None else content_parts(call.value)
    result = call.text if parts is None else "\n".join(
        describe(item) if as_content(item) is not None else str(item) for item in parts)
    text = f"step {step.number} · {call.name}({arguments})\n{label}: {result}"
    colour = _ERROR_COLOUR if call.is_error else "inherit"
    markup = (f"<div class='nbtools-step' style='border-left: 3px solid {_BORDER}; padding-left: 8px; "
              f"margin: 4px 0; {_WRAP}'>"
              f"<b>step {step.number}</b> · <code>{html.escape(call.name)}</code>"
              f"(<code>{html.escape(arguments)}</code>)"
              f"<div style='color: {colour}'>{label}:</div>{_folded(result)}</div>")
    return _Shown(text, markup)


def rich_items(call: CallRecord) -> list[Any]:
    """The content records a call's value holds, converted (a PIL image or a matplotlib figure
    becomes an `nbtools.Image`)."""
    if call.is_error or call.value is None:
        return []
    return [record for record in map(as_content, content_parts(call.value) or []) if record is not None]


class StepView:
    """Displays steps as they happen in the running notebook cell, with a live status line and the
    streamed text updated in place (`display_id`s)."""

    def __init__(self, display: Any, remote_images: bool = False, update: Any = None):
        self._display, self._update = display, update
        self.remote_images = remote_images
        self._status: Any = None  # the status line's display id, once shown
        self._live: Any = None  # the streamed text's display id, while a reply streams
        self._text: list[str] = []
        self._ids = 0

    @classmethod
    def create(cls, force: bool = False, remote_images: bool = False) -> "StepView | None":
        """A view in a running kernel (or wherever IPython is when `force`); None outside one."""
        if not (in_notebook() or force and "IPython" in sys.modules):
            return None
        from IPython.display import display, update_display

        return cls(display, remote_images, update_display)

    def _new_id(self) -> str:
        import uuid

        return f"nbtools-chat-{uuid.uuid4().hex}"

    # The status line and the streamed text are transient: each starts as an empty output and is
    # only ever updated, ending empty. A saved notebook keeps an empty output where they were, and a
    # re-run compared with it (nbval, which ignores updates) sees the same empty output.
    def _transient(self, shown: Any, display_id: Any) -> Any:
        if display_id is None:
            display_id = self._new_id()
            self._display(_EMPTY, display_id=display_id)
        self._update(shown, display_id=display_id)
        return display_id

    def status(self, text: str | None) -> None:
        """Show what the loop is doing now (None: the status line is emptied)."""
        if self._update is None or (text is None and self._status is None):
            return
        shown = _EMPTY if text is None else _Shown(
            f"… {text}", f"<div style='color: {_MUTED_COLOUR}; font-style: italic'>… {html.escape(text)}</div>")
        self._status = self._transient(shown, self._status)

    def text(self, piece: str) -> None:
        """A piece of the model's text as it streams: shown with what came before, in place."""
        if self._update is None:
            return
        self._text.append(piece)
        self._live = self._transient(_Markdown("".join(self._text), self.remote_images), self._live)

    def _settle_text(self) -> None:
        """End a streamed reply: its transient output is emptied (the text is shown as a step's)."""
        live, self._live, self._text = self._live, None, []
        if live is not None:
            self._update(_EMPTY, display_id=live)

    def step(self, step: Step) -> None:
        self._settle_text()
        for call in step.calls:
            self._display(call_output(step, call))
            for item in rich_items(call):
                if isinstance(item, Image):  # shown as the picture (its text form: "Image(image/png, N bytes)")
                    self._display(item)
        if step.text:
            self._display(_Markdown(step.text, self.remote_images))

    def final(self, text: str, usage: Usage) -> Answer:
        """Show the final answer (once); the `Answer` the chat returns."""
        self._settle_text()
        self._display(_Markdown(text, self.remote_images))
        answer = Answer(text)
        answer._shown_in = _execution_count()
        answer.remote_images = self.remote_images
        return answer


__all__ = ["StepView", "Answer", "in_notebook", "call_output", "rich_items"]
