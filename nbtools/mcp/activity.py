"""What a server's clients are doing: one record per served call, and its view in a notebook.

`Activity` keeps the last `KEEP` calls of one server (client name, what was called, arguments,
start, elapsed time, and the result's text, the error or "cancelled") and tells its listeners when
one starts or ends. The server records every `tools/call`, `resources/read` and `prompts/get`
(`server.build_server(activity=...)`); `%tools --serve` shows `ActivityView` under its cell: an
`ipywidgets.HTML` table redrawn on the kernel's main thread (records change on the transport's
thread; the view hops to the kernel's loop), every second while a call runs. All text is
HTML-escaped: arguments and results come from the client and the tool.
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
    tool: str  # the tool's name, a resource's URI or a prompt's name (see `kind`)
    arguments: Any
    began: float = field(default_factory=time.monotonic)
    ended: float | None = None
    status: str = "running"  # running / ok / error / refused / cancelled; a task: working / input required /
    # completed / failed / cancelled
    outcome: str = ""
    kind: str = "tool"  # tool / resource / prompt / task
    note: str = ""  # what serving it cost beyond its result (a slow, cut or stopped preview)
    user: str | None = None  # the Jupyter user it came through the extension for (`access.proxied_user`)
    origin: str = ""  # who asks, as approvals name it (`access.origin_of`): "mcp:<client>@<user>"
    result: Any = field(default=None, repr=False)  # the MCP result sent, for watchers (`nbtools.jupyter.cells`)
    live: Any = field(default=None, repr=False)  # set by a watcher: told the call's output as it runs

    @property
    def elapsed(self) -> float:
        return (self.ended if self.ended is not None else time.monotonic()) - self.began


class Activity:
    """The recent calls of one server (see the module docs)."""

    def __init__(self) -> None:
        self.records: list[CallRecord] = []
        self._listeners: list[Callable[[], Any]] = []
        self._watchers: list[Callable[[CallRecord], Any]] = []

    def on_change(self, callback: Callable[[], Any]) -> None:
        self._listeners.append(callback)

    def watch(self, callback: Callable[[CallRecord], Any]) -> Callable[[], None]:
        """Call `callback(record)` when a call begins (before it runs) and when it ends, on the
        transport's thread; returns the function that stops it."""
        self._watchers.append(callback)
        return lambda: self._watchers.remove(callback) if callback in self._watchers else None

    def begin(self, client: str, tool: str, arguments: Any, kind: str = "tool", user: str | None = None,
              origin: str = "") -> CallRecord:
        record = CallRecord(client, tool, arguments, kind=kind, user=user, origin=origin)
        self.records.append(record)
        del self.records[:-KEEP]
        self._tell(record)
        return record

    def end(self, record: CallRecord, result: Any = None, *, cancelled: bool = False,
            error: BaseException | None = None, note: str = "") -> None:
        """`result`: the MCP result sent; `cancelled`: the request was cancelled and the call has ended;
        `error`: the request failed with a JSON-RPC error (or another exception); `note`: what it
        cost beyond that (shown before the result)."""
        if record.ended is not None:
            return
        record.ended = time.monotonic()
        record.note = note
        if cancelled:
            record.status, record.outcome = "cancelled", "cancelled by the client (or the server stopping)"
        elif error is not None:
            record.status, record.outcome = "error", str(error) or type(error).__name__
        else:
            record.status = _status(result)
            record.outcome = _result_text(result)
            record.result = result
        self._tell(record)

    def state(self, record: CallRecord, status: str, outcome: str = "") -> None:
        """A task's record moved to `status` (working, input required, completed, failed, cancelled)."""
        record.status, record.outcome = status, outcome
        if status in _ENDED:
            record.ended = time.monotonic()
        self._tell(record)

    @property
    def running(self) -> bool:
        return any(record.status in _GOING for record in self.records)

    def _tell(self, record: CallRecord) -> None:
        for watcher in list(self._watchers):
            try:
                watcher(record)
            except Exception:  # a broken watcher must never fail a call
                pass
        for callback in list(self._listeners):
            try:
                callback()
            except Exception:  # a broken view must never fail a call
                pass


def _status(result: Any) -> str:
    """ok, error, or refused (an error result whose nbtools record says nothing ran: `CallRefused`)."""
    if not getattr(result, "is_error", False):
        return "ok"
    from .toolresults import ERROR_META_KEY

    record = (getattr(result, "meta", None) or {}).get(ERROR_META_KEY)
    return "refused" if isinstance(record, dict) and record.get("refused") is True else "error"


_GOING = ("running", "working", "input required")
_ENDED = ("completed", "failed", "cancelled")
# A status's colour: JupyterLab's theme variable, at least 4.5:1 (WCAG AA) on both Light's white and
# Dark's #111 (info 7.4/5.4, success 7.9/4.6, error 5.0/5.1, dimmed 4.6/6.0), then a fallback for viewers
# without the theme (nbviewer, an HTML export: on white). The status is also its word, never colour alone.
_GOING_COLOUR = "var(--jp-info-color0, #006064)"
_DONE_COLOUR = "var(--jp-success-color0, #2a7a2a)"
_FAILED_COLOUR = "var(--jp-error-color1, #b3261e)"
_QUIET_COLOUR = "var(--jp-ui-font-color2, #666)"
_COLOURS = {"running": _GOING_COLOUR, "working": _GOING_COLOUR, "input required": _GOING_COLOUR, "ok": _DONE_COLOUR,
            "completed": _DONE_COLOUR, "error": _FAILED_COLOUR, "refused": _FAILED_COLOUR, "failed": _FAILED_COLOUR,
            "cancelled": _QUIET_COLOUR}


def wire_text(result: dict) -> str:
    """The text of a result in its wire form (a task's): its text blocks, others as `[type]`."""
    return " ".join(block.get("text") or f"[{block.get('type', 'content')}]"
                    for block in result.get("content") or () if isinstance(block, dict))


def _result_text(result: Any) -> str:
    if getattr(result, "result_type", None) == "input_required":
        return "waiting for the client's answers (" + ", ".join(getattr(result, "input_requests", None) or {}) + ")"
    parts = []
    for block in getattr(result, "content", None) or ():  # a tool's result
        parts.append(getattr(block, "text", None) or f"[{getattr(block, 'type', 'content')}]")
    for contents in getattr(result, "contents", None) or ():  # a resource's
        text = getattr(contents, "text", None)
        parts.append(text if text is not None else f"[{getattr(contents, 'mime_type', None) or 'blob'}]")
    for message in getattr(result, "messages", None) or ():  # a prompt's
        block = getattr(message, "content", None)
        parts.append(f"{getattr(message, 'role', '?')}: " +
                     (getattr(block, "text", None) or f"[{getattr(block, 'type', 'content')}]"))
    return " ".join(parts)


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= TEXT else text[:TEXT] + "…"


def render(activity: Activity) -> str:
    """The HTML table of the newest calls (every text escaped)."""
    if not activity.records:
        return "<i>MCP activity: no tool calls yet.</i>"
    rows = []
    shown = activity.records[-SHOWN:]
    users = any(record.user for record in shown)  # a user column when calls came through Jupyter
    for record in reversed(shown):
        colour = _COLOURS.get(record.status, _QUIET_COLOUR)
        rows.append("<tr>" + "".join(f"<td style='padding:0 8px;text-align:left'>{cell}</td>" for cell in (
            html.escape(_short(record.client)), *([html.escape(_short(record.user or ""))] if users else []),
            ("" if record.kind == "tool" else f"{record.kind} ") + f"<code>{html.escape(_short(record.tool))}</code>",
            f"<code>{html.escape(_short(record.arguments or {}))}</code>", f"{record.elapsed:.1f} s",
            f"<span style='color:{colour}'>{html.escape(record.status)}</span>",
            (f"<b>{html.escape(_short(record.note))}</b> " if record.note else "")
            + html.escape(_short(record.outcome)))) + "</tr>")
    head = "".join(f"<th style='padding:0 8px;text-align:left'>{name}</th>"
                   for name in ("client", *(("user",) if users else ()), "call", "arguments", "elapsed", "status",
                                "result"))
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
        if self._loop is not None and not _runs(self._loop):  # a record changed on the transport's thread
            if not self._loop.is_closed():
                try:
                    self._loop.call_soon_threadsafe(self.refresh)
                except RuntimeError:  # closed meanwhile
                    pass
            return
        self.widget.value = render(self.activity)
        if self.activity.running and not self._ticking and self._loop is not None and not self._loop.is_closed():
            self._ticking = True
            self._loop.call_later(1.0, self._tick)

    def _tick(self) -> None:
        self._ticking = False
        self.refresh()

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)


def _runs(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether this thread runs `loop` now."""
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
