"""What one step of the agent loop did, as small immutable records, and its plain-text trace.

A step is one request to the model and the tool calls its reply asked for. The records carry
what a display needs: each call's name and arguments as the model sent them, the text the model
got back, whether it was an error, and the value the tool returned (rich values, such as
`nbtools.Image`, are shown as themselves by the notebook view).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..formats.turns import Usage
from ..shortening import short


# The records are frozen dataclasses whose __init__ writes the instance's dict (as `Usage` does):
# the generated one sets each field through object.__setattr__, 5x slower; the loop makes a Step
# and a CallRecord per call at every step.
@dataclass(frozen=True, init=False)
class CallRecord:
    """One tool call of a step. `value` is what the tool returned (None when it failed or was not run)."""

    id: str | None
    name: str
    arguments: Any
    text: str
    is_error: bool
    value: Any = field(default=None, repr=False, compare=False)

    def __init__(self, id: str | None, name: str, arguments: Any, text: str, is_error: bool,  # noqa: A002
                 value: Any = None):
        record = self.__dict__
        record["id"], record["name"], record["arguments"] = id, name, arguments
        record["text"], record["is_error"], record["value"] = text, is_error, value

    def arguments_text(self) -> str:
        """The arguments as compact JSON text (as sent, when the model sent text)."""
        if isinstance(self.arguments, str):
            return self.arguments
        try:
            return json.dumps(self.arguments, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            return repr(self.arguments)


@dataclass(frozen=True, init=False)
class Step:
    """One model request: its number (from 1), the reply's text, its tool calls and its usage."""

    number: int
    text: str
    calls: tuple[CallRecord, ...]
    usage: Usage

    def __init__(self, number: int, text: str, calls: tuple[CallRecord, ...], usage: Usage):
        record = self.__dict__
        record["number"], record["text"], record["calls"], record["usage"] = number, text, calls, usage


def one_line(text: str, limit: int = 200) -> str:
    """`text` on one line (runs of whitespace as one space), cut to `limit` (`shortening.short`)."""
    return short(" ".join(text.split()), limit)


def trace_lines(step: Step) -> list[str]:
    """The plain-text trace of a step (what `trace=print` prints): one line per call, then the text."""
    lines = []
    for call in step.calls:
        marker = "error" if call.is_error else "result"
        lines.append(f"[step {step.number}] {call.name}({one_line(call.arguments_text(), 120)}) "
                     f"-> {marker}: {one_line(call.text)}")
    if step.text and step.calls:
        lines.append(f"[step {step.number}] said: {one_line(step.text)}")
    return lines


__all__ = ["CallRecord", "Step", "Usage", "one_line", "trace_lines"]
