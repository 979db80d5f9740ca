"""`ToolContext`: what a running tool can reach besides its arguments (progress, log, sample, elicit).

A parameter annotated `ToolContext` (or `ToolContext | None`) is injected by dispatch: it is never in
the tool's schema and never sent by the model. Which context a call gets depends on where it runs:

* served over MCP (`nbtools serve`, `%tools --serve`): `nbtools.mcp.served.ServedContext`, which
  sends progress and log notifications to the client and asks it for sampling and elicitation;
* in a Jupyter kernel (a call from a cell, `run_tool_calls`, a `Chat`): `NotebookContext`, where
  progress is a progress bar and log lines are the cell's output;
* anywhere else: the quiet `ToolContext` itself (progress ignored, log lines to the `logging` logger
  "nbtools.tools").

The current context lives in a `contextvars.ContextVar`, so concurrent calls (asyncio tasks, worker
threads started with a copied context) each see their own. This module imports nothing heavy: the
notebook context imports ipywidgets only when a progress bar is first shown.
"""

from __future__ import annotations

import contextvars
import logging
import typing
from dataclasses import dataclass
from typing import Any

from .errors import NbtoolsError

__all__ = ["ToolContext", "NotebookContext", "Elicitation", "ContextUnavailable", "LOG_LEVELS",
           "current_context", "use_context", "is_context_annotation"]

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
"""MCP's log levels (RFC 5424 names), least severe first."""

_PY_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "notice": logging.INFO, "warning": logging.WARNING,
              "error": logging.ERROR, "critical": logging.CRITICAL, "alert": logging.CRITICAL,
              "emergency": logging.CRITICAL}

_logger = logging.getLogger("nbtools.tools")


class ContextUnavailable(NbtoolsError, RuntimeError):
    """A tool asked its context for something this place of running cannot give (e.g. sampling
    outside an MCP server whose client offers it). The message says what and what to do."""


@dataclass(frozen=True)
class Elicitation:
    """The user's answer to `ctx.elicit`: `action` is "accept", "decline" or "cancel"; `content` the
    values given (a dict matching the requested schema) when accepted, else None."""

    action: str
    content: dict | None = None

    @property
    def accepted(self) -> bool:
        return self.action == "accept"


def check_level(level: str) -> str:
    """`level` if it is one of `LOG_LEVELS` (case-insensitive), else a ValueError listing them."""
    normal = str(level).lower()
    if normal not in LOG_LEVELS:
        raise ValueError(f"unknown log level {level!r}; use one of {', '.join(LOG_LEVELS)}")
    return normal


class ToolContext:
    """What a running tool can reach: report progress, log, ask the model (sample) or the user (elicit).

    Declare a parameter `ctx: ToolContext` (any name) and nbtools passes the right one for where the
    call runs (see the module docs). This base class is the quiet context used where nobody watches:
    progress is ignored, log lines go to the `logging` logger "nbtools.tools", and `sample`/`elicit`
    raise `ContextUnavailable`.
    """

    where = "outside a notebook or an MCP server"

    def progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress: `done` out of `total` (None: unknown total), with an optional message."""

    def log(self, message: Any, level: str = "info") -> None:
        """Log a message at `level` ("debug", "info", "notice", "warning", "error", ...)."""
        _logger.log(_PY_LEVELS[check_level(level)], "%s", message)

    async def sample(self, messages: Any, *, max_tokens: int = 1000, system: str | None = None,
                     temperature: float | None = None, key: str | None = None) -> Any:
        """Ask the client's language model: `messages` is a text (one user message) or a list of
        `{"role": "user"|"assistant", "content": text}`. Returns the reply's text (or an Image/Audio).
        `key` names the question in an input-required result (MCP 2026-07-28)."""
        raise ContextUnavailable(f"ctx.sample() needs an MCP client that offers sampling; this call runs "
                                 f"{self.where}. Serve the tool (`nbtools serve`) to a client with sampling, "
                                 "or call your model's API directly here.")

    async def elicit(self, message: str, schema: dict, *, key: str | None = None) -> Elicitation:
        """Ask the user for values matching `schema` (a flat JSON Schema object of primitive fields).
        `key` names the question in an input-required result (MCP 2026-07-28)."""
        raise ContextUnavailable(f"ctx.elicit() needs an MCP client that offers elicitation; this call runs "
                                 f"{self.where}. Serve the tool to a client with elicitation, or give the "
                                 "values as arguments.")

    async def roots(self, *, key: str | None = None) -> list[dict]:
        """The MCP client's roots (`[{"uri", "name"}]`): the folders it lets the server work in."""
        raise ContextUnavailable(f"ctx.roots() needs an MCP client that offers roots; this call runs {self.where}.")

    @property
    def cancelled(self) -> bool:
        """True once the caller cancelled this call (served calls only): a long tool may check it and stop."""
        return False

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.where})"


class NotebookContext(ToolContext):
    """The context of a call made in a Jupyter kernel: a progress bar, and log lines in the cell's output."""

    where = "in a notebook"

    def __init__(self) -> None:
        self._bar: Any = None
        self._label: Any = None

    def progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
        # 1. The bar is made on first use (ipywidgets only then), shown in the running cell's output.
        if self._bar is None:
            try:
                import ipywidgets
                from IPython.display import display
            except ImportError:  # no widgets: a line of text
                print(f"progress: {done}" + (f"/{total}" if total is not None else "") +
                      (f" {message}" if message else ""))
                return
            self._bar = ipywidgets.FloatProgress(value=0.0, min=0.0, max=1.0)
            self._label = ipywidgets.Label()
            display(ipywidgets.HBox([self._bar, self._label]))
        # 2. Known total: a fraction; unknown: the bar shows activity and the label the count.
        if total:
            self._bar.max = float(total)
            self._bar.value = float(min(done, total))
        else:
            self._bar.bar_style = "info"
            self._bar.value = self._bar.max
        self._label.value = f"{done:g}" + (f"/{total:g}" if total else "") + (f" {message}" if message else "")

    def log(self, message: Any, level: str = "info") -> None:
        level = check_level(level)
        print(message if level == "info" else f"[{level}] {message}")


_CURRENT: contextvars.ContextVar[ToolContext | None] = contextvars.ContextVar("nbtools_tool_context", default=None)
_QUIET = ToolContext()


def current_context() -> ToolContext:
    """The context for a call starting now: the one set by `use_context` (a server), else a notebook's
    (in a Jupyter kernel), else the quiet one."""
    chosen = _CURRENT.get()
    if chosen is not None:
        return chosen
    import sys

    ipython = sys.modules.get("IPython")
    if ipython is not None:
        shell = ipython.get_ipython()
        if shell is not None and getattr(shell, "kernel", None) is not None:
            return NotebookContext()
    return _QUIET


def use_context(context: ToolContext | None) -> contextvars.Token:
    """Make `context` the one calls in this task/thread get; undo with `_CURRENT.reset(token)`."""
    return _CURRENT.set(context)


def reset_context(token: contextvars.Token) -> None:
    _CURRENT.reset(token)


def is_context_annotation(annotation: Any) -> bool:
    """Whether a parameter annotated so receives the ToolContext: `ToolContext` (or a subclass),
    `ToolContext | None`, `Optional[ToolContext]`, or `Annotated[...]` of those."""
    if isinstance(annotation, type):
        return issubclass(annotation, ToolContext)
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return is_context_annotation(typing.get_args(annotation)[0])
    if origin is typing.Union or type(annotation).__name__ == "UnionType":
        members = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return len(members) == 1 and is_context_annotation(members[0])
    return False
