"""Bounded output capture, and the routers that send a run's output to its capture.

`sys.stdout`/`sys.stderr` (and, inside IPython, the shell's display publisher) are replaced by
routers while runs are active (`process.py` puts them in and takes them out). A router sends text
from a context whose current capture (a `ContextVar`) is set to that capture, and everything else
to the original stream. So concurrent runs in threads or tasks never see each other's output, and
restoring never races. A run keeps the first `OUTPUT_HEAD` and last `OUTPUT_TAIL` characters of
its output and counts what it left out between, so memory stays bounded. `sys.stdin` reads
end-of-file for the code: nobody can answer a model's code, and on an MCP stdio server stdin is
the protocol.

This module changes nothing outside itself: the routers are objects; `process.py` installs them.
"""

from __future__ import annotations

import collections
import contextvars
import os
import sys
import threading
from typing import Any

# What one run keeps of its output: the first and the last characters, with a marker saying how
# much was left out in between. Code that prints in a loop until its time-out must not fill the
# kernel's memory; a person or a model reads the start (what happened) and the end (where it was).
# Setting `nbtools.interp.OUTPUT_HEAD` (etc.) sets these: the package forwards the three names.
OUTPUT_HEAD = 500_000   # characters kept from the start of a run's output
OUTPUT_TAIL = 500_000   # characters kept from its end
DISPLAYS_KEPT = 1_000   # rich display() bundles kept (their text form is in the output either way)
# Pieces: a write joins the previous piece of the same stream while that piece is shorter than
# `_JOIN_BELOW` characters, and the kept head and tail each hold at most `PIECES_KEPT` pieces (past
# that, output counts as left out). So memory is bounded in bytes and in objects whatever the write
# pattern: a million one-character writes, or `print(end='')` in a loop, are not a million objects.
_JOIN_BELOW = 256
PIECES_KEPT = 10_000


_ADD_LOCK = threading.Lock()  # threads the code started may write at the same time


class Capture:
    """The output of one run: chunks of (stream, text) in order, and display bundles.

    `chunks` holds the first `OUTPUT_HEAD` characters; after that only the last `OUTPUT_TAIL`
    characters are kept (in `tail`), and `dropped` counts, per stream, what fell out between."""

    # No __slots__: the class attributes below are the defaults, so a run (most print nothing, or
    # little) pays only for the attributes it changes.
    size = 0
    tail: collections.deque[tuple[str, str]] | None = None
    tail_size = 0
    dropped: dict[str, int] | None = None
    closed = False
    threads: list[Any] | None = None  # `started.Started` records of the threads the run started
    stopped = 0.0  # the run timed out (its time-out in seconds): its threads are being stopped
    live: Any = None  # `live_output` when the run began: told each write and display as it happens

    def __init__(self) -> None:
        self.chunks: list[tuple[str, str]] = []
        self.displays: list[dict] = []
        live = live_output.get()
        if live is not None:
            self.live = live

    def add(self, stream: str, text: str) -> None:
        if not text:
            return  # an empty write changes nothing (and must not cost a piece)
        with _ADD_LOCK:
            size = self.size
            chunks = self.chunks
            if size + len(text) <= OUTPUT_HEAD and len(chunks) < PIECES_KEPT:  # the common case
                if chunks:
                    last_stream, last = chunks[-1]
                    if last_stream == stream and len(last) < _JOIN_BELOW:
                        chunks[-1] = (stream, last + text)
                        self.size = size + len(text)
                        return
                chunks.append((stream, text))
                self.size = size + len(text)
                return
            self._add_beyond_head(stream, text)

    def _add_beyond_head(self, stream: str, text: str) -> None:
        size = self.size
        if size < OUTPUT_HEAD and len(self.chunks) < PIECES_KEPT:
            room = OUTPUT_HEAD - size
            self.chunks.append((stream, text[:room]))
            self.size = size + min(room, len(text))
            text = text[room:]
            if not text:
                return
        self.size = OUTPUT_HEAD  # the head is closed: all later output goes to the tail
        if self.tail is None:
            self.tail = collections.deque()
            self.dropped = {}
        tail = self.tail
        if len(text) > OUTPUT_TAIL:
            self.dropped[stream] = self.dropped.get(stream, 0) + len(text) - OUTPUT_TAIL
            text = text[len(text) - OUTPUT_TAIL:]
        if tail and tail[-1][0] == stream and len(tail[-1][1]) < _JOIN_BELOW:
            tail[-1] = (stream, tail[-1][1] + text)
        else:
            tail.append((stream, text))
        self.tail_size += len(text)
        while len(tail) > PIECES_KEPT:
            first_stream, first = tail.popleft()
            self.tail_size -= len(first)
            self.dropped[first_stream] = self.dropped.get(first_stream, 0) + len(first)
        while self.tail_size > OUTPUT_TAIL:
            first_stream, first = tail[0]
            excess = self.tail_size - OUTPUT_TAIL
            cut = min(excess, len(first))
            if cut == len(first):
                tail.popleft()
            else:
                tail[0] = (first_stream, first[cut:])
            self.tail_size -= cut
            self.dropped[first_stream] = self.dropped.get(first_stream, 0) + cut

    def add_thread(self, record: Any) -> Any:
        with _ADD_LOCK:
            if self.threads is None:
                self.threads = []
            self.threads.append(record)
        return record

    def add_display(self, bundle: dict) -> None:
        if len(self.displays) < DISPLAYS_KEPT:
            self.displays.append(bundle)

    def text(self, stream: str | None = None) -> str:
        head = "".join(text for name, text in self.chunks if stream is None or name == stream)[:OUTPUT_HEAD]
        if self.tail is None:
            return head
        dropped = sum(self.dropped.values()) if stream is None else self.dropped.get(stream, 0)
        tail = "".join(text for name, text in self.tail if stream is None or name == stream)
        if len(tail) > OUTPUT_TAIL:
            # a time-out raised inside `add` (signals and the watchdog can interrupt any bytecode)
            # may leave one piece untrimmed: the bound holds when the text is read, whatever happened
            dropped += len(tail) - OUTPUT_TAIL
            tail = tail[len(tail) - OUTPUT_TAIL:]
        if not dropped:
            return head + tail
        return f"{head}\n[... {dropped:,} characters of output not kept ...]\n{tail}"


# ------------------------------------------------------------------------------------------------
# In the child process of an isolated run: output goes to the parent as it is written
# ------------------------------------------------------------------------------------------------


class ChildStream:
    """In an isolated run's child process: sends the output of the child's run to the parent as
    it is written, so what was printed survives the child being killed."""

    __slots__ = ("capture", "writer", "lock")

    def __init__(self, writer: int) -> None:
        self.capture: Capture | None = None  # the child's outermost run (nested runs are not sent)
        self.writer = writer
        self.lock = threading.Lock()  # threads the code starts print too; messages must not interleave

    def send(self, message: list) -> None:
        """One message to the parent: 4 bytes of length, then JSON (data, never a pickle: the
        parent must not run code the child chose)."""
        import json

        payload = json.dumps(message, default=str).encode()
        view = memoryview(len(payload).to_bytes(4, "big") + payload)
        with self.lock:
            while view:
                view = view[os.write(self.writer, view):]


_child_stream: ChildStream | None = None  # set only in the child process of an isolated run


def start_child_stream(writer: int) -> ChildStream:
    """In a freshly forked child: from now on the outermost run's output also goes to `writer`."""
    global _child_stream
    _child_stream = ChildStream(writer)
    return _child_stream


def claim_for_child(capture: Capture) -> None:
    """In an isolated run's child, the first run to begin is the one whose output is sent."""
    if _child_stream is not None and _child_stream.capture is None:
        _child_stream.capture = capture


# ------------------------------------------------------------------------------------------------
# Routers: which run's capture receives a write
# ------------------------------------------------------------------------------------------------


current_capture: contextvars.ContextVar[Capture | None] = contextvars.ContextVar(
    "nbtools_interp_capture", default=None)

live_output: contextvars.ContextVar[Any] = contextvars.ContextVar("nbtools_interp_live_output", default=None)
"""Set around a served call whose cell is written as it runs (`%tools --serve --cells`): a run that
begins in that context calls it with ("stream", name, text) per write and ("display", bundle) per
`display()`, on the thread that wrote; it must not raise and must not block."""


def _tell_live(capture: Capture, *event: Any) -> None:
    try:
        capture.live(*event)
    except Exception:  # a broken listener must never break the run
        pass


def active_capture() -> Capture | None:
    """The capture of the run whose context this is, if that run is still going."""
    capture = current_capture.get()
    return None if capture is None or capture.closed else capture


class StreamRouter:
    """Stands in for sys.stdout/sys.stderr while runs are active: writes from a run's context go
    to its capture, all others to the stream that was there before."""

    def __init__(self, name: str, original: Any) -> None:
        self._name = name
        self._original = original

    def write(self, text: str) -> int:
        capture = active_capture()
        if capture is None:
            return self._original.write(text)
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if text:
            capture.add(self._name, text)
            if capture.live is not None:
                _tell_live(capture, "stream", self._name, text)
            if _child_stream is not None and _child_stream.capture is capture:
                _child_stream.send(["chunk", self._name, text])
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if active_capture() is None:
            self._original.flush()

    def isatty(self) -> bool:
        return False if active_capture() is not None else self._original.isatty()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._original, name)


class DisplayRouter:
    """Stands in for an IPython shell's `display_pub`: `display()` calls from a run's context are
    captured (as bundles, and as text in the output), all others are published as before."""

    __slots__ = ("_original",)

    def __init__(self, original: Any) -> None:
        object.__setattr__(self, "_original", original)

    def publish(self, data: dict, metadata: dict | None = None, *args: Any, **kwargs: Any) -> None:
        capture = active_capture()
        if capture is None:
            return self._original.publish(data, metadata, *args, **kwargs)
        capture.add_display(dict(data))
        if capture.live is not None:
            _tell_live(capture, "display", dict(data))
        text = bundle_text(data)
        text = text if text.endswith("\n") else text + "\n"
        capture.add("stdout", text)
        if _child_stream is not None and _child_stream.capture is capture:
            _child_stream.send(["chunk", "stdout", text])

    def clear_output(self, wait: bool = False) -> None:
        if active_capture() is None:
            self._original.clear_output(wait)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._original, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._original, name, value)


def bundle_text(data: dict) -> str:
    """A display bundle as text for the model: the plain text unless it is only a placeholder."""
    plain = data.get("text/plain")
    if isinstance(plain, str) and not (plain.startswith("<") and plain.rstrip().endswith(">")):
        return plain
    for mime in ("text/markdown", "text/latex", "text/html", "application/json"):
        if mime in data:
            content = data[mime]
            if not isinstance(content, str):
                import json

                content = json.dumps(content, default=str)
            return content
    others = [mime for mime in data if mime != "text/plain"]
    if others:
        return f"[display: {', '.join(others)}]"
    return plain if isinstance(plain, str) else ""


class StdinRouter:
    """Stands in for sys.stdin while runs are active: a run's code reads end-of-file (`input()`
    raises EOFError), all others read the stream that was there before. Nobody can type answers to
    a model's code, and on an MCP stdio server stdin carries the protocol: a read there would steal
    the client's next message. (In a kernel `input()` asks the notebook instead; that is left as is.)"""

    def __init__(self, original: Any) -> None:
        self._original = original

    def read(self, size: int | None = -1) -> str:
        return "" if active_capture() is not None else self._original.read(size)

    def readline(self, size: int | None = -1) -> str:
        return "" if active_capture() is not None else self._original.readline(size)

    def readlines(self, hint: int = -1) -> list[str]:
        return [] if active_capture() is not None else self._original.readlines(hint)

    def __iter__(self) -> Any:
        return iter(()) if active_capture() is not None else iter(self._original)

    def close(self) -> None:
        # `exit()` outside IPython (site's Quitter) closes stdin before raising SystemExit: the
        # code must not close the process's real stdin (an MCP stdio server's protocol).
        if active_capture() is None:
            self._original.close()

    def fileno(self) -> int:
        # Without a file descriptor `input()` reads through `readline` above, even on a terminal.
        if active_capture() is not None:
            import io

            raise io.UnsupportedOperation("stdin is empty while python() runs code")
        return self._original.fileno()

    def isatty(self) -> bool:
        return False if active_capture() is not None else self._original.isatty()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._original, name)


def ipython_shell() -> Any:
    """The running IPython shell, or None; never imports IPython."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    return get() if get is not None else None
