"""The notebook view of the agent loop: each step as it happens, the final answer as Markdown.

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


class _Answer:
    """The final answer: Markdown in the notebook, its text as the plain form."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text

    def _repr_markdown_(self) -> str:
        return self.text


def _folded(text: str) -> str:
    body = f"<pre style='white-space: pre-wrap; margin: 0'>{html.escape(text)}</pre>"
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
    colour = "#b00020" if call.is_error else "inherit"
    markup = (f"<div class='nbtools-step' style='border-left: 3px solid #888; padding-left: 8px; margin: 4px 0'>"
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
    """Displays steps as they happen in the running notebook cell."""

    def __init__(self, display: Any):
        self._display = display

    @classmethod
    def create(cls, force: bool = False) -> "StepView | None":
        """A view in a running kernel (or wherever IPython is when `force`); None outside one."""
        if not (in_notebook() or force and "IPython" in sys.modules):
            return None
        from IPython.display import display

        return cls(display)

    def step(self, step: Step) -> None:
        for call in step.calls:
            self._display(call_output(step, call))
            for item in rich_items(call):
                if isinstance(item, Image):  # shown as the picture (its text form: "Image(image/png, N bytes)")
                    self._display(item)
        if step.text:
            self._display(_Answer(step.text))

    def final(self, text: str, usage: Usage) -> None:
        self._display(_Answer(text))


__all__ = ["StepView", "in_notebook", "call_output", "rich_items"]
