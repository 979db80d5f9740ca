"""What a server's clients are doing: one record per served tool call, and its view in a notebook.

`Activity` keeps the last `KEEP` calls of one server (client name, tool, arguments, start, elapsed
time, and the result's text, the error or "cancelled") and tells its listeners when one starts or
ends. The server records every `tools/call` (`server.build_server(activity=...)`); `%tools --serve`
shows `ActivityView` under its cell: an `ipywidgets.HTML` table redrawn on the kernel's main thread
(where served calls run), every second while a call runs. All text is HTML-escaped: arguments and
results come from the client and the tool.
"""

from __future__ import annotations

import asyncio
import html
import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Activity", "CallRecord", "ActivityView"]

KEEP = 50  # records kept per server
SHOWN = 12  # rows shown (newest first)
TEXT = 200  # characters of arguments or result shown per cell


@dataclass
class CallRecord:
    client: str
    tool: str
    arguments: Any
    began: float = field(default_factory=time.monotonic)
    ended: float | None = None
    status: str = "running"  # running / ok / error / cancelled
    outcome: str = ""

    @property
    def elapsed(self) -> float:
        return (self.ended if self.ended is not None else time.monotonic()) - self.began


class Activity:
    """The recent calls of one server (see the module docs)."""

    def __init__(self) -> None:
        self.records: list[CallRecord] = []
        self._listeners: list[Callable[[], Any]] = []

    def on_change(self, callback: Callable[[], Any]) -> None:
        self._listeners.append(callback)

    def begin(self, client: str, tool: str, arguments: Any) -> CallRecord:
        record = CallRecord(client, tool, arguments)
        self.records.append(record)
        del self.records[:-KEEP]
        self._tell()
        return record

    def end(self, record: CallRecord, result: Any = None, *, cancelled: bool = False) -> None:
        record.ended = time.monotonic()
        if cancelled:
            record.status, record.outcome = "cancelled", "cancelled by the client (or the server stopping)"
        else:
            record.status = "error" if getattr(result, "is_error", False) else "ok"
            record.outcome = _result_text(result)
        self._tell()

    @property
    def running(self) -> bool:
        return any(record.status == "running" for record in self.records)

    def _tell(self) -> None:
        for callback in list(self._listeners):
            try:
                callback()
            except Exception:  # a broken view must never fail a call
                pass


def _result_text(result: Any) -> str:
    if getattr(result, "result_type", None) == "input_required":
        return "waiting for the client's answers (" + ", ".join(getattr(result, "input_requests", None) or {}) + ")"
    parts = []
    for block in getattr(result, "content", None) or ():
        parts.append(getattr(block, "text", None) or f"[{getattr(block, 'type', 'content')}]")
    return " ".join(parts)


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= TEXT else text[:TEXT] + "…"


def render(activity: Activity) -> str:
    """The HTML table of the newest calls (every text escaped)."""
    if not activity.records:
        return "<i>MCP activity: no tool calls yet.</i>"
    rows = []
    for record in reversed(activity.records[-SHOWN:]):
        colour = {"running": "#b58900", "ok": "#2a7a2a", "error": "#b00020", "cancelled": "#666"}[record.status]
        rows.append("<tr>" + "".join(f"<td style='padding:0 8px;text-align:left'>{cell}</td>" for cell in (
            html.escape(_short(record.client)), f"<code>{html.escape(_short(record.tool))}</code>",
            f"<code>{html.escape(_short(record.arguments or {}))}</code>", f"{record.elapsed:.1f} s",
            f"<span style='color:{colour}'>{html.escape(record.status)}</span>",
            html.escape(_short(record.outcome)))) + "</tr>")
    head = "".join(f"<th style='padding:0 8px;text-align:left'>{name}</th>"
                   for name in ("client", "tool", "arguments", "elapsed", "status", "result"))
    return f"<table style='font-size:90%'><tr>{head}</tr>{''.join(rows)}</table>"


class ActivityView:
    """An `ipywidgets.HTML` showing `activity`, redrawn when a call starts or ends and every second
    while one runs (on `loop`: the kernel's, whose main thread runs the served calls)."""

    def __init__(self, activity: Activity, loop: asyncio.AbstractEventLoop | None = None) -> None:
        import ipywidgets

        self.activity = activity
        self.widget = ipywidgets.HTML(render(activity))
        self._loop = loop
        self._ticking = False
        activity.on_change(self.refresh)

    def refresh(self) -> None:
        self.widget.value = render(self.activity)
        if self.activity.running and not self._ticking and self._loop is not None and not self._loop.is_closed():
            self._ticking = True
            self._loop.call_later(1.0, self._tick)

    def _tick(self) -> None:
        self._ticking = False
        self.refresh()

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)
