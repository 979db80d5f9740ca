"""What a remote MCP server reports while `connect()`'s tools run: progress and log notifications.

`Progress` and `LogMessage` are what the `on_progress` / `on_log` callbacks of `connect()` receive.
Without callbacks the notifications are shown where the call runs (`default_sink`): in a Jupyter
kernel a progress bar (ipywidgets, imported only when the first progress arrives) and log lines in
the calling cell's output; elsewhere the log lines go to the `logging` logger "nbtools.mcp" and
progress is not shown.
"""

from __future__ import annotations

import concurrent.futures
import logging
import sys
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Progress", "LogMessage", "Elicitation", "NotebookSink", "default_sink", "log_to_logging", "PY_LEVELS"]

PY_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "notice": logging.INFO, "warning": logging.WARNING,
             "error": logging.ERROR, "critical": logging.CRITICAL, "alert": logging.CRITICAL,
             "emergency": logging.CRITICAL}
"""MCP log levels (RFC 5424 names) -> Python `logging` levels."""

_logger = logging.getLogger("nbtools.mcp")


@dataclass(frozen=True)
class Progress:
    """A progress notification for a call: `progress` of `total` (None: unknown), with `message`."""

    tool: str
    progress: float
    total: float | None = None
    message: str | None = None


@dataclass(frozen=True)
class LogMessage:
    """A log notification (`notifications/message`): `level` is an MCP level ("info", "warning", ...),
    `data` the logged value (usually text), `logger` the server's logger name, `server` its name."""

    level: str
    data: Any
    logger: str | None = None
    server: str = ""

    def line(self) -> str:
        """One line for a person: `[server level] data` (the logger name too when given)."""
        source = " ".join(part for part in (self.server, self.logger) if part)
        data = self.data if isinstance(self.data, str) else repr(self.data)
        return f"[{source} {self.level}] {data}" if source else f"[{self.level}] {data}"


@dataclass
class Elicitation:
    """A server's question during a call (`elicitation/create`), for `connect(on_elicit=...)`.

    `message` is what to ask; `schema` the JSON Schema of the answer (form mode: a flat object of
    strings, numbers, booleans and enums, possibly with defaults); `url` the page to open (URL mode,
    then `schema` is empty). The callback returns a dict (accept, with that content), None
    (decline) or False (cancel).
    """

    message: str
    schema: dict
    url: str | None = None
    reply: "concurrent.futures.Future[Any]" = field(default_factory=concurrent.futures.Future, repr=False,
                                                    compare=False)

    def answer_with(self, on_elicit: Callable[["Elicitation"], Any] | None) -> None:
        """Ask `on_elicit` (none: decline) and settle `reply`; a failing or wrong answer cancels, saying why."""
        try:
            answer = on_elicit(self) if on_elicit is not None else None
            if not (answer is None or answer is False or answer is True or isinstance(answer, dict)):
                raise TypeError(f"on_elicit must return a dict (accept), None (decline) or False (cancel), "
                                f"not {type(answer).__name__}")
            self.reply.set_result({} if answer is True else answer)
        except Exception as error:
            warnings.warn(f"on_elicit failed ({type(error).__name__}: {error}); the request is cancelled",
                          stacklevel=2)
            self.reply.set_result(False)

    def defaults(self) -> dict:
        """The answer made of the schema's defaults (SEP-1034): what accepting without edits sends."""
        properties = self.schema.get("properties") if isinstance(self.schema, dict) else None
        return {name: spec["default"] for name, spec in (properties or {}).items()
                if isinstance(spec, dict) and "default" in spec}


def elicit_result(answer: dict | bool | None) -> Any:
    """The MCP `ElicitResult` for an `on_elicit` answer: dict accept, None decline, False cancel."""
    import mcp_types as types

    if answer is None:
        return types.ElicitResult(action="decline")
    if answer is False:
        return types.ElicitResult(action="cancel")
    return types.ElicitResult(action="accept", content=answer if isinstance(answer, dict) else None)


def log_to_logging(message: LogMessage) -> None:
    """Send a remote log line to the `logging` logger "nbtools.mcp" at the matching level."""
    _logger.log(PY_LEVELS.get(message.level, logging.INFO), "%s", message.line())


class NotebookSink:
    """Shows one call's notifications in the running cell: a progress bar and log lines.

    Runs in the calling thread (the cell's), so the bar and the lines land in that cell's output.
    """

    def __init__(self, tool: str):
        self.tool = tool
        self._bar: Any = None
        self._label: Any = None

    def progress(self, event: Progress) -> None:
        # 1. The bar is made on first progress, so a call that reports none shows nothing.
        if self._bar is None:
            try:
                import ipywidgets
                from IPython.display import display
            except ImportError:  # no widgets: a line of text
                print(_progress_text(event))
                return
            self._bar = ipywidgets.FloatProgress(value=0.0, min=0.0, max=1.0, description=self.tool[:20])
            self._label = ipywidgets.Label()
            display(ipywidgets.HBox([self._bar, self._label]))
        # 2. Known total: the fraction; unknown: a full "info" bar, the count in the label.
        if event.total:
            self._bar.max = float(event.total)
            self._bar.value = float(min(event.progress, event.total))
        else:
            self._bar.bar_style = "info"
            self._bar.value = self._bar.max
        self._label.value = _progress_text(event)

    def log(self, message: LogMessage) -> None:
        stream = sys.stderr if PY_LEVELS.get(message.level, logging.INFO) >= logging.WARNING else sys.stdout
        print(message.line(), file=stream)


def _progress_text(event: Progress) -> str:
    text = f"{event.progress:g}" + (f"/{event.total:g}" if event.total else "")
    return text + (f" {event.message}" if event.message else "")


def default_sink(tool: str) -> tuple[Callable[[Progress], None], Callable[[LogMessage], None]]:
    """(on_progress, on_log) for a call made here without callbacks: the notebook's bar and output
    in a Jupyter kernel, else no progress and log lines to `logging`."""
    if in_kernel():
        sink = NotebookSink(tool)
        return sink.progress, sink.log
    return _ignore, log_to_logging


def _ignore(event: Progress) -> None:
    return None


def in_kernel() -> bool:
    """Whether this runs in a Jupyter kernel (where a cell's output can show widgets)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and getattr(shell, "kernel", None) is not None


def show(event: Progress | LogMessage, on_progress: Callable[[Progress], Any],
          on_log: Callable[[LogMessage], Any]) -> None:
    """Hand a notification to the callback for its kind."""
    deliver(on_progress if isinstance(event, Progress) else on_log, event)


def deliver(callback: Callable[[Any], Any], event: Any) -> None:
    """Hand a notification to its callback; a failing callback warns instead of losing the call."""
    try:
        callback(event)
    except Exception as error:  # the call's result matters more than showing its progress
        warnings.warn(f"MCP notification callback {callback!r} failed: {type(error).__name__}: {error}",
                      stacklevel=2)
