"""The `python(code, timeout)` code-interpreter tool: run a model's code, return what it computed.

How a run goes:

1. Compile. A single expression compiles straight in `eval` mode (the common `x * 7` case, and the
   cheapest). Anything else is parsed once; when the last statement is an expression that is not
   silenced by a trailing `;` (IPython's rule, comments allowed after it), it is split off and
   compiled in `eval` mode, so its value comes back without assigning any name in the namespace.
   Handlers that catch everything (bare `except:`, `BaseException`, also in a tuple or `except*`)
   get a handler in front of them that re-raises the time-out and `KeyboardInterrupt`; the class
   is put into the code object's constants after compilation, so no name is needed for it. The source is registered in `linecache` so tracebacks
   show its lines and `inspect.getsource` works on functions it defines.
2. Capture. `sys.stdout`/`sys.stderr` (and, inside IPython, the shell's display publisher) are
   replaced by routers that send text to the capture of the run whose context is current (a
   `ContextVar`), and everything else to the original stream. So concurrent runs in threads or
   tasks never see each other's output, and restoring never races. Threads the code starts write
   into its run too (`Thread.start` hands them the run's capture). A run keeps the first and last
   500k characters of its output and counts what it left out between, so memory stays bounded.
   `sys.stdin` reads end-of-file for the code (outside a kernel `input()` raises EOFError): nobody
   can answer a model's code, and on an MCP stdio server stdin is the protocol.
3. Time-out. On the main thread a `SIGALRM` interval timer (sub-second, interrupts `time.sleep`,
   regex backtracking and huge integer powers); off it, one shared watchdog thread that raises the
   time-out in the late thread with `PyThreadState_SetAsyncExc` (Python code only: a C call such as
   `time.sleep` finishes first). The time-out is `TimeoutInterrupt`, a `BaseException`, so
   `except Exception:` cannot swallow it; if the code swallows it anyway it is raised again every
   few milliseconds. Nested runs keep the outer deadline. The previous `SIGALRM` handler and timer
   are restored exactly (a timer someone else had armed keeps running, with its remaining time).
   Code that sets its own `SIGALRM` handler or timer (`signal.alarm`) during a run gets them,
   kept beside ours, so it cannot disarm the time-out; they end with the run.
4. Isolated mode (`isolated=True`): the code runs in a forked child process, which stops Python
   code at the deadline itself and is killed shortly after if it is still running. This is the only
   way to stop a loop that stays inside C (`sum(range(10**10))`). Its output reaches the parent as
   it is written, so it survives the kill.

`run_code` returns the structured `ExecResult`; `python` is the model-facing tool that formats it.
"""

from __future__ import annotations

import ast
import collections
import contextvars
import itertools
import linecache
import math
import os
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from types import CodeType
from typing import Any, Mapping

__all__ = [
    "ExecResult",
    "TimeoutInterrupt",
    "run_code",
    "run_code_async",
    "python",
    "python_async",
]


class TimeoutInterrupt(BaseException):
    """Raised inside submitted code whose time is up.

    A `BaseException` (like `KeyboardInterrupt`) so that `except Exception:` in the submitted code
    cannot swallow it; bare `except:` handlers are rewritten to let it through.
    """


@dataclass(frozen=True, slots=True)
class ExecResult:
    """What one run of submitted code produced.

    Fields:
        value: the last expression's value (None when the code ends with a statement, with a `;`,
            or did not finish).
        stdout: text printed to `sys.stdout` (plus the text form of rich `display()` output).
        stderr: text printed to `sys.stderr` (warnings included).
        output: everything printed or displayed, interleaved in the order it happened.
            Each of these three keeps the first `OUTPUT_HEAD` and the last `OUTPUT_TAIL`
            characters of a run's output, with a line counting what was left out between them,
            so code printing in a loop until its time-out cannot exhaust the kernel's memory.
        error: a short traceback showing the submitted code's lines when the code raised, could
            not be compiled, or timed out; None on success.
        timed_out: whether the run was stopped at its deadline.
        duration: wall-clock seconds the run took (compilation and clean-up included).
        displays: the raw mime bundles of rich `display()` calls (inside IPython only).
        exception: the exception the code raised (None on success; not kept in isolated mode).
    """

    value: Any = None
    stdout: str = ""
    stderr: str = ""
    output: str = ""
    error: str | None = None
    timed_out: bool = False
    duration: float = 0.0
    displays: tuple[dict, ...] = ()
    exception: BaseException | None = field(default=None, repr=False, compare=False)

    def for_model(self) -> Any:
        """The tool result `python` returns: the value itself when nothing was printed; otherwise
        one string with the printed text, then the value's repr (if any) on a last line; the
        printed text and the error text when the code failed or timed out."""
        if self.error is not None:
            return _join_lines(self.output, self.error)
        if not self.output:
            return self.value
        if self.value is None:
            return self.output
        try:
            shown = repr(self.value)
        except Exception as exc:  # a broken __repr__ must not turn into an exception for the model
            shown = f"<repr of {type(self.value).__name__} failed: {type(exc).__name__}: {exc}>"
        return _join_lines(self.output, shown)


def _join_lines(first: str, second: str) -> str:
    if not first:
        return second
    return first + ("" if first.endswith("\n") else "\n") + second


# ------------------------------------------------------------------------------------------------
# Compilation
# ------------------------------------------------------------------------------------------------

_filenames = itertools.count(1)
# Stands for the guard's exception classes in the AST (an AST constant must be a literal); replaced
# by the real tuple in the compiled code objects. Random so no user constant can collide with it.
_GUARD_SENTINEL = "\x00nbtools-guard-" + os.urandom(8).hex()
_GUARDED = (TimeoutInterrupt, KeyboardInterrupt)


# Code ready to run: `body` (exec mode) then `last` (eval mode: the value); either may be None.
_Compiled = tuple[CodeType | None, CodeType | None]


def _compile(source: str, filename: str, flags: int = 0) -> _Compiled:
    # dont_inherit: this module's `from __future__ import annotations` must not leak into user code.
    stripped = source.strip()
    if stripped and "\n" not in stripped:
        try:  # one line that is a single expression: the cheapest path, no AST round trip
            return None, compile(source, filename, "eval", flags, True)
        except SyntaxError:
            pass  # a statement (or a real syntax error, reported by the full parse below)
    tree = compile(source, filename, "exec", flags | ast.PyCF_ONLY_AST, True)
    guarded = "except" in source and _guard_bare_excepts(tree)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr) and not _silenced(source, tree.body[-1]):
        expression = ast.Expression(tree.body.pop().value)
        last = compile(expression, filename, "eval", flags, True)
    body = compile(tree, filename, "exec", flags, True) if tree.body else None
    if guarded:
        body = body and _swap_sentinel(body)
        last = last and _swap_sentinel(last)
    return body, last


def _silenced(source: str, statement: ast.Expr) -> bool:
    """IPython's rule: a `;` right after the last expression (comments may follow) hides its value."""
    if ";" not in source:
        return False
    lines = source.split("\n")
    # Column offsets count UTF-8 bytes, not characters.
    line = lines[statement.end_lineno - 1].encode()[statement.end_col_offset:].decode(errors="replace")
    for char in itertools.chain(line, "\n", *lines[statement.end_lineno:]):
        if char in " \t\r\n\f\\)":
            continue
        return char == ";"
    return False


def _guard_bare_excepts(tree: ast.AST) -> bool:
    """Put `except <guard>: raise` before every handler that would catch `BaseException`."""
    changed = False
    for node in ast.walk(tree):
        if not isinstance(node, _TRY_NODES):
            continue
        handlers: list[ast.ExceptHandler] = []
        for handler in node.handlers:
            if _catches_all(handler.type):
                guard = ast.ExceptHandler(type=ast.Constant(_GUARD_SENTINEL), name=None,
                                          body=[ast.Raise(exc=None, cause=None)])
                ast.copy_location(guard, handler)
                ast.fix_missing_locations(guard)
                handlers.append(guard)
                changed = True
            handlers.append(handler)
        node.handlers = handlers
    return changed


# `try` and (3.11+) `try`/`except*`: in the latter a bare `raise` re-raises the matched sub-group.
_TRY_NODES = (ast.Try, ast.TryStar) if hasattr(ast, "TryStar") else (ast.Try,)


def _catches_all(kind: ast.expr | None) -> bool:
    """Whether a handler's class expression is bare or names `BaseException` (also inside a tuple,
    or as `builtins.BaseException`): such a handler would catch the time-out."""
    if kind is None:
        return True
    if isinstance(kind, ast.Tuple):
        return any(_catches_all(element) for element in kind.elts)
    if isinstance(kind, ast.Name):
        return kind.id == "BaseException"
    return isinstance(kind, ast.Attribute) and kind.attr == "BaseException"


def _swap_sentinel(code: CodeType) -> CodeType:
    consts = tuple(
        _GUARDED if type(const) is str and const == _GUARD_SENTINEL
        else _swap_sentinel(const) if isinstance(const, CodeType)
        else const
        for const in code.co_consts
    )
    return code.replace(co_consts=consts)


def _defines_code(compiled: _Compiled) -> bool:
    """Whether the code creates functions, classes or lambdas whose source must stay findable."""
    for code in compiled:
        if code is not None:
            for const in code.co_consts:
                if type(const) is CodeType:
                    return True
    return False


# ------------------------------------------------------------------------------------------------
# Output capture
# ------------------------------------------------------------------------------------------------


# What one run keeps of its output: the first and the last characters, with a marker saying how
# much was left out in between. Code that prints in a loop until its time-out must not fill the
# kernel's memory; a person or a model reads the start (what happened) and the end (where it was).
OUTPUT_HEAD = 500_000   # characters kept from the start of a run's output
OUTPUT_TAIL = 500_000   # characters kept from its end
DISPLAYS_KEPT = 1_000   # rich display() bundles kept (their text form is in the output either way)


_BEYOND_HEAD_LOCK = threading.Lock()  # only output past the kept head takes it (rare)


class _Capture:
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

    def __init__(self) -> None:
        self.chunks: list[tuple[str, str]] = []
        self.displays: list[dict] = []

    def add(self, stream: str, text: str) -> None:
        size = self.size
        if size + len(text) <= OUTPUT_HEAD:  # the common case
            self.chunks.append((stream, text))
            self.size = size + len(text)
            return
        with _BEYOND_HEAD_LOCK:  # threads the code started may write at the same time
            self._add_beyond_head(stream, text)

    def _add_beyond_head(self, stream: str, text: str) -> None:
        size = self.size
        if size < OUTPUT_HEAD:
            room = OUTPUT_HEAD - size
            self.chunks.append((stream, text[:room]))
            self.size = OUTPUT_HEAD
            text = text[room:]
        if self.tail is None:
            self.tail = collections.deque()
            self.dropped = {}
        tail = self.tail
        if len(text) > OUTPUT_TAIL:
            self.dropped[stream] = self.dropped.get(stream, 0) + len(text) - OUTPUT_TAIL
            text = text[len(text) - OUTPUT_TAIL:]
        tail.append((stream, text))
        self.tail_size += len(text)
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

    def add_display(self, bundle: dict) -> None:
        if len(self.displays) < DISPLAYS_KEPT:
            self.displays.append(bundle)

    def text(self, stream: str | None = None) -> str:
        head = "".join(text for name, text in self.chunks if stream is None or name == stream)
        if self.tail is None:
            return head
        dropped = sum(self.dropped.values()) if stream is None else self.dropped.get(stream, 0)
        tail = "".join(text for name, text in self.tail if stream is None or name == stream)
        if not dropped:
            return head + tail
        return f"{head}\n[... {dropped:,} characters of output not kept ...]\n{tail}"


class _ChildStream:
    """In an isolated run's child process: sends the output of the child's run to the parent as
    it is written, so what was printed survives the child being killed."""

    __slots__ = ("capture", "writer", "lock")

    def __init__(self, writer: int) -> None:
        self.capture: _Capture | None = None  # the child's outermost run (nested runs are not sent)
        self.writer = writer
        self.lock = threading.Lock()  # threads the code starts print too; messages must not interleave

    def send(self, message: tuple) -> None:
        import pickle

        payload = pickle.dumps(message)
        view = memoryview(len(payload).to_bytes(4, "big") + payload)
        with self.lock:
            while view:
                view = view[os.write(self.writer, view):]


_child_stream: _ChildStream | None = None  # set only in the child process of an isolated run


_current_capture: contextvars.ContextVar[_Capture | None] = contextvars.ContextVar(
    "nbtools_interp_capture", default=None)
_routing_lock = threading.Lock()
_routing_users = 0


def _active_capture() -> _Capture | None:
    capture = _current_capture.get()
    return None if capture is None or capture.closed else capture


class _StreamRouter:
    """Stands in for sys.stdout/sys.stderr while runs are active: writes from a run's context go
    to its capture, all others to the stream that was there before."""

    def __init__(self, name: str, original: Any) -> None:
        self._name = name
        self._original = original

    def write(self, text: str) -> int:
        capture = _active_capture()
        if capture is None:
            return self._original.write(text)
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        capture.add(self._name, text)
        if _child_stream is not None and _child_stream.capture is capture:
            _child_stream.send(("chunk", self._name, text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if _active_capture() is None:
            self._original.flush()

    def isatty(self) -> bool:
        return False if _active_capture() is not None else self._original.isatty()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._original, name)


class _DisplayRouter:
    """Stands in for an IPython shell's `display_pub`: `display()` calls from a run's context are
    captured (as bundles, and as text in the output), all others are published as before."""

    __slots__ = ("_original",)

    def __init__(self, original: Any) -> None:
        object.__setattr__(self, "_original", original)

    def publish(self, data: dict, metadata: dict | None = None, *args: Any, **kwargs: Any) -> None:
        capture = _active_capture()
        if capture is None:
            return self._original.publish(data, metadata, *args, **kwargs)
        capture.add_display(dict(data))
        text = _bundle_text(data)
        text = text if text.endswith("\n") else text + "\n"
        capture.add("stdout", text)
        if _child_stream is not None and _child_stream.capture is capture:
            _child_stream.send(("chunk", "stdout", text))

    def clear_output(self, wait: bool = False) -> None:
        if _active_capture() is None:
            self._original.clear_output(wait)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._original, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._original, name, value)


def _bundle_text(data: dict) -> str:
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


def _ipython_shell() -> Any:
    """The running IPython shell, or None; never imports IPython."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    return get() if get is not None else None


class _StdinRouter:
    """Stands in for sys.stdin while runs are active: a run's code reads end-of-file (`input()`
    raises EOFError), all others read the stream that was there before. Nobody can type answers to
    a model's code, and on an MCP stdio server stdin carries the protocol: a read there would steal
    the client's next message. (In a kernel `input()` asks the notebook instead; that is left as is.)"""

    def __init__(self, original: Any) -> None:
        self._original = original

    def read(self, size: int | None = -1) -> str:
        return "" if _active_capture() is not None else self._original.read(size)

    def readline(self, size: int | None = -1) -> str:
        return "" if _active_capture() is not None else self._original.readline(size)

    def readlines(self, hint: int = -1) -> list[str]:
        return [] if _active_capture() is not None else self._original.readlines(hint)

    def __iter__(self) -> Any:
        return iter(()) if _active_capture() is not None else iter(self._original)

    def fileno(self) -> int:
        # Without a file descriptor `input()` reads through `readline` above, even on a terminal.
        if _active_capture() is not None:
            import io

            raise io.UnsupportedOperation("stdin is empty while python() runs code")
        return self._original.fileno()

    def isatty(self) -> bool:
        return False if _active_capture() is not None else self._original.isatty()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._original, name)


_stdout_router = _StreamRouter("stdout", None)  # reused while the stream under it stays the same
_stderr_router = _StreamRouter("stderr", None)
_stdin_router = _StdinRouter(None)
_routed_shell: Any = None  # the shell whose display_pub we replaced
# sys.stdout/stderr/stdin when the first active run began
_streams_before: tuple[Any, Any, Any] = (None, None, None)


_thread_start = threading.Thread.start


def _start_inheriting_capture(self: threading.Thread) -> None:
    """`Thread.start` once a run has happened: a thread started by a run's code writes into that
    run's output, as the code's own prints do (threads do not inherit context variables before
    Python 3.14). What such a thread prints after the run has ended, and every thread started
    outside a run, behaves exactly as without nbtools."""
    capture = _active_capture()
    if capture is not None:
        run = self.run

        def run_in_capture() -> None:
            _current_capture.set(capture)
            run()

        self.run = run_in_capture  # type: ignore[method-assign]
    _thread_start(self)


def _start_routing(shell: Any) -> None:
    global _routing_users, _routed_shell, _stdout_router, _stderr_router, _stdin_router, _streams_before
    with _routing_lock:
        if not _routing_users:
            # Installed at the first run and kept (outside runs it only starts the thread):
            # swapping it in and out for every run cost a twentieth of a tiny run.
            if threading.Thread.start is _thread_start:
                threading.Thread.start = _start_inheriting_capture  # type: ignore[method-assign]
            stdout, stderr, stdin = sys.stdout, sys.stderr, sys.stdin
            _streams_before = (stdout, stderr, stdin)
            if stdin is not None and type(stdin) is not _StdinRouter:
                if _stdin_router._original is not stdin:
                    _stdin_router = _StdinRouter(stdin)
                sys.stdin = _stdin_router
            if type(stdout) is not _StreamRouter:
                if _stdout_router._original is not stdout:
                    _stdout_router = _StreamRouter("stdout", stdout)
                sys.stdout = _stdout_router
            if type(stderr) is not _StreamRouter:
                if _stderr_router._original is not stderr:
                    _stderr_router = _StreamRouter("stderr", stderr)
                sys.stderr = _stderr_router
        if shell is not None and _routed_shell is None:
            publisher = getattr(shell, "display_pub", None)
            if publisher is not None and type(publisher) is not _DisplayRouter:
                shell.display_pub = _DisplayRouter(publisher)
                _routed_shell = shell
        _routing_users += 1


def _stop_routing() -> None:
    global _routing_users, _routed_shell, _streams_before
    with _routing_lock:
        _routing_users -= 1
        if _routing_users:
            return
        # Put back the streams that were there before the runs, also when the code replaced them
        # (`sys.stdout = sys.__stdout__` in a kernel would send every later cell's output to the
        # terminal; an unclosed `sys.stdout = open(...)` would swallow it).
        sys.stdout, sys.stderr, sys.stdin = _streams_before
        _streams_before = (None, None, None)
        if _routed_shell is not None:
            shell, _routed_shell = _routed_shell, None
            if type(getattr(shell, "display_pub", None)) is _DisplayRouter:
                shell.display_pub = object.__getattribute__(shell.display_pub, "_original")


# ------------------------------------------------------------------------------------------------
# Time-outs
# ------------------------------------------------------------------------------------------------

_REPEAT = 0.01    # a swallowed time-out is raised again this often (seconds)
_RETRY = 0.0005   # a time-out due while our own bookkeeping runs is retried this soon
_SLACK = 1e-4     # timer and clock may disagree by a few microseconds
_LONGEST_TIMER = 1e6  # setitimer overflows on absurd values; the handler re-arms when it fires early


class _Run:
    """One deadline being enforced. `active` is true only while the submitted code itself runs,
    so a time-out is never raised inside this module's bookkeeping; `fired` records that the
    time-out was raised for this run (which tells nested runs whose time-out it is)."""

    __slots__ = ("timeout", "deadline", "fired", "active", "thread_id", "on_main")

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.fired = False
        self.active = False
        self.thread_id = 0
        self.on_main = False


class _ForeignTimer:
    """An interval timer that someone else had armed before our outermost run, with its handler."""

    __slots__ = ("handler", "deadline", "interval")

    def __init__(self, handler: Any, deadline: float, interval: float) -> None:
        self.handler = handler
        self.deadline = deadline
        self.interval = interval


_main_runs: list[_Run] = []        # active runs on the main thread, outermost first
_previous_handler: Any = None      # SIGALRM handler to restore when the outermost run ends
_foreign: _ForeignTimer | None = None


def _on_alarm(signum: int, frame: Any) -> None:
    global _foreign
    runs = _main_runs
    if not runs:
        return  # a tick that arrived after our last run ended
    now = time.monotonic()
    due = next((run for run in runs if run.deadline <= now + _SLACK), None)
    if due is not None:
        if runs[-1].active:
            due.fired = True
            due.deadline = now + _REPEAT
            _rearm(now)
            raise TimeoutInterrupt(f"the code ran for more than {due.timeout:g} s")
        # Inside our own set-up or clean-up (or a suspended async run): try again in a moment.
        _set_timer(_ITIMER_REAL, _RETRY)
        return
    foreign = _foreign
    if foreign is not None and foreign.deadline <= now + _SLACK:
        foreign.deadline = now + foreign.interval if foreign.interval else math.inf
        _rearm(now)
        if callable(foreign.handler):
            foreign.handler(signum, frame)
        return
    own = _code_alarm
    if own is not None and own.deadline <= now + _SLACK:
        if not runs[-1].active:  # the code's handler runs in the code, never in our clean-up
            _set_timer(_ITIMER_REAL, _RETRY)
            return
        own.deadline = now + own.interval if own.interval else math.inf
        _rearm(now)
        if callable(own.handler):  # SIG_DFL would kill the process; a run never does that
            own.handler(signum, frame)
        return
    _rearm(now)


def _next_deadline(skip: _Run | None = None) -> float:
    soonest = _foreign.deadline if _foreign is not None else math.inf
    if _code_alarm is not None and _code_alarm.deadline < soonest:
        soonest = _code_alarm.deadline
    for run in _main_runs:
        if run is not skip and run.deadline < soonest:
            soonest = run.deadline
    return soonest


def _rearm(now: float, skip: _Run | None = None) -> None:
    soonest = _next_deadline(skip)
    if soonest < math.inf:
        _set_timer(_ITIMER_REAL, min(max(soonest - now, 1e-6), _LONGEST_TIMER))


def _arm_main(run: _Run) -> bool:
    """Enforce `run` with SIGALRM. False when signals cannot be used here (caller falls back)."""
    global _previous_handler, _foreign
    runs = _main_runs
    remaining = run.deadline - time.monotonic()
    remaining = _LONGEST_TIMER if remaining > _LONGEST_TIMER else 1e-6 if remaining < 1e-6 else remaining
    if runs:  # nested: our handler is installed; make sure the timer fires by this deadline
        soonest = _next_deadline()
        runs.append(run)
        if run.deadline < soonest:
            _set_timer(_ITIMER_REAL, remaining)
        return True
    if _get_handler(_SIGALRM) is None:
        return False  # a handler installed from C: Python could not put it back afterwards
    runs.append(run)
    try:
        previous = _set_handler(_SIGALRM, _on_alarm)
    except ValueError:  # not the main thread of the main interpreter after all
        runs.pop()
        return False
    _previous_handler = previous
    _virtualise_sigalrm(previous)
    delay, interval = _set_timer(_ITIMER_REAL, remaining)
    if delay:  # someone else's timer was running: keep honouring it, restore it afterwards
        _foreign = _ForeignTimer(previous, time.monotonic() + delay, interval)
        if delay < remaining:
            _set_timer(_ITIMER_REAL, delay)
    return True


def _disarm_main(run: _Run) -> None:
    global _previous_handler, _foreign
    runs = _main_runs
    if len(runs) > 1:
        # Nested: re-arm for the remaining runs first, leave the stack last, so an outer time-out
        # arriving meanwhile is deferred (this run is inactive), not raised inside this clean-up.
        _rearm(time.monotonic(), skip=run)
        runs.remove(run)
        return
    runs.clear()  # from here on a late tick is ignored by _on_alarm
    _set_timer(_ITIMER_REAL, 0)
    _restore_sigalrm_functions()
    _set_handler(_SIGALRM, _previous_handler)
    foreign = _foreign
    if foreign is not None:
        _foreign = None
        if foreign.deadline < math.inf:
            _set_timer(_ITIMER_REAL,
                       min(max(foreign.deadline - time.monotonic(), 1e-6), _LONGEST_TIMER),
                       foreign.interval)
    _previous_handler = None


# While a run on the main thread is active, our handler owns SIGALRM and the real timer. Code that
# installs its own (a model guarding its work with `signal.alarm(5)` is common) would silently
# disarm the time-out and could then run forever. So for the run's duration the signal module's
# SIGALRM functions are replaced by ones that keep the code's handler and timer beside ours
# (`_code_alarm`, fired by `_on_alarm`); the code sees its own settings, and they end with the
# outermost run, which puts back the handler and timer that were there before it. Outside runs
# the replacements call the functions the signal module had when nbtools was imported.
_code_alarm: _ForeignTimer | None = None


def _handler_for_code(handler: Any) -> Any:
    """A handler as `signal.getsignal` shows it (SIG_DFL/SIG_IGN as `signal.Handlers`)."""
    return signal.Handlers(handler) if isinstance(handler, int) else handler


def _code_timer_state(timer: _ForeignTimer) -> tuple[float, float]:
    if timer.deadline == math.inf:
        return 0.0, 0.0
    return max(timer.deadline - time.monotonic(), 1e-6), timer.interval


def _run_signal(signalnum: Any, handler: Any) -> Any:
    timer = _code_alarm
    if timer is None or signalnum != _SIGALRM or _get_ident() != _main_ident:
        return _SIGNAL_ORIGINALS["signal"](signalnum, handler)
    if not callable(handler) and handler not in (signal.SIG_DFL, signal.SIG_IGN):
        raise TypeError("signal handler must be signal.SIG_IGN, signal.SIG_DFL, or a callable object")
    previous, timer.handler = timer.handler, handler
    return _handler_for_code(previous)


def _run_getsignal(signalnum: Any) -> Any:
    timer = _code_alarm
    if timer is None or signalnum != _SIGALRM:
        return _SIGNAL_ORIGINALS["getsignal"](signalnum)
    return _handler_for_code(timer.handler)


def _run_setitimer(which: Any, seconds: float, interval: float = 0.0) -> tuple[float, float]:
    timer = _code_alarm
    if timer is None or which != _ITIMER_REAL:
        return _SIGNAL_ORIGINALS["setitimer"](which, seconds, interval)
    seconds, interval = float(seconds), float(interval)
    if seconds < 0 or interval < 0:
        raise signal.ItimerError(22, "Invalid argument")
    previous = _code_timer_state(timer)
    now = time.monotonic()
    timer.deadline = now + seconds if seconds > 0 else math.inf
    timer.interval = interval if seconds > 0 else 0.0
    _rearm(now)
    return previous


def _run_getitimer(which: Any) -> tuple[float, float]:
    timer = _code_alarm
    if timer is None or which != _ITIMER_REAL:
        return _SIGNAL_ORIGINALS["getitimer"](which)
    return _code_timer_state(timer)


def _run_alarm(seconds: int) -> int:
    import operator

    timer = _code_alarm
    if timer is None:
        return _SIGNAL_ORIGINALS["alarm"](seconds)
    remaining, _ = _run_setitimer(_ITIMER_REAL, operator.index(seconds))
    return max(round(remaining), 1) if remaining else 0


# Calls that are not about the code's SIGALRM go to the functions the module had at import.
_SIGNAL_ORIGINALS = {name: getattr(signal, name, None)
                     for name in ("signal", "getsignal", "setitimer", "getitimer", "alarm")}
_RUN_SIGNAL_FUNCTIONS = {"signal": _run_signal, "getsignal": _run_getsignal,
                         "setitimer": _run_setitimer, "getitimer": _run_getitimer, "alarm": _run_alarm}


_own_alarm = _ForeignTimer(None, math.inf, 0.0)  # reused: _code_alarm while a run is active


def _virtualise_sigalrm(handler: Any) -> None:
    # Once per outermost run on the main thread (hot path): the replacements are put into the
    # signal module at the first run and stay (they pass every call through while no run is
    # active); putting them in and back for every run would cost a tenth of a tiny run.
    global _code_alarm
    timer = _own_alarm
    timer.handler, timer.deadline, timer.interval = handler, math.inf, 0.0
    _code_alarm = timer
    namespace = signal.__dict__
    if namespace.get("alarm") is not _run_alarm:
        namespace.update(_RUN_SIGNAL_FUNCTIONS)


def _restore_sigalrm_functions() -> None:
    global _code_alarm
    _code_alarm = None  # the replacements now pass every call through


class _Watchdog:
    """One thread that raises the time-out in threads whose runs are late (threads cannot use
    signals). It exits after a while without work and is started again when needed."""

    IDLE_EXIT = 5.0

    def __init__(self) -> None:
        self.condition = threading.Condition(threading.Lock())
        self.runs: list[_Run] = []
        self.thread: threading.Thread | None = None
        self.raise_in: Any = None

    def add(self, run: _Run) -> None:
        if self.raise_in is None:
            self.raise_in = _async_raiser()
        with self.condition:
            self.runs.append(run)
            if self.thread is None:
                self.thread = threading.Thread(target=self._watch, name="nbtools-interp-watchdog",
                                               daemon=True)
                self.thread.start()
            else:
                self.condition.notify()

    def remove(self, run: _Run) -> None:
        """Stop watching `run`; drop a time-out that was raised for it but not yet delivered."""
        while True:
            try:
                with self.condition:
                    run.active = False
                    if run in self.runs:
                        self.runs.remove(run)
                if run.fired:
                    self.raise_in(run.thread_id, None)
                return
            except TimeoutInterrupt:
                continue  # delivered during this clean-up: the run is over; finish cleaning up

    def _watch(self) -> None:
        with self.condition:
            while True:
                now = time.monotonic()
                soonest = math.inf
                for run in self.runs:
                    if run.deadline <= now:
                        if run.active:
                            run.fired = True
                            self.raise_in(run.thread_id, TimeoutInterrupt)
                        run.deadline = now + _REPEAT
                    soonest = min(soonest, run.deadline)
                if soonest == math.inf:
                    if not self.condition.wait(self.IDLE_EXIT) and not self.runs:
                        self.thread = None
                        return
                else:
                    self.condition.wait(soonest - now)


def _async_raiser() -> Any:
    import ctypes

    set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc

    def raise_in(thread_id: int, exception_type: type[BaseException] | None) -> None:
        # None clears a pending exception (NULL pointer).
        set_async_exc(ctypes.c_ulong(thread_id),
                      ctypes.py_object(exception_type) if exception_type is not None else None)

    return raise_in


_watchdog = _Watchdog()


def _arm(run: _Run) -> None:
    thread_id = run.thread_id = _get_ident()
    if thread_id == _main_ident and _arm_main(run):
        run.on_main = True
    else:
        _watchdog.add(run)


def _disarm(run: _Run) -> None:
    run.active = False
    if run.on_main:
        run.on_main = False
        _disarm_main(run)
    else:
        _watchdog.remove(run)


# The C functions behind `signal.signal`/`getsignal` skip the enum conversions (~2 us a call).
try:
    from _signal import getsignal as _get_handler, signal as _set_handler
except ImportError:  # pragma: no cover - other Python implementations
    _get_handler, _set_handler = signal.getsignal, signal.signal
_get_ident = threading.get_ident
if hasattr(signal, "setitimer") and hasattr(signal, "SIGALRM"):
    _set_timer = signal.setitimer
    _ITIMER_REAL = signal.ITIMER_REAL
    _SIGALRM = int(signal.SIGALRM)
    _main_ident: int | None = threading.main_thread().ident
else:  # no interval timers (Windows): the watchdog serves every thread
    _main_ident = None


def _reset_after_fork() -> None:
    # The child of a fork has only the forking thread: fresh locks, no watchdog, no runs.
    global _routing_lock, _watchdog, _main_ident
    _routing_lock = threading.Lock()
    _watchdog = _Watchdog()
    _main_runs.clear()
    if _main_ident is not None:
        _main_ident = threading.get_ident()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


def _check_timeout(timeout: Any) -> float | None:
    """The time limit in seconds (None: no limit). Raises ValueError with the reason."""
    if type(timeout) is int or type(timeout) is float:
        if 0 < timeout < math.inf:
            return timeout
    if timeout is None:
        return None
    import numbers

    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real):
        raise ValueError(f"timeout must be a number of seconds, got {timeout!r}")
    if not timeout > 0:  # also refuses NaN
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    return None if timeout == math.inf else float(timeout)


# ------------------------------------------------------------------------------------------------
# Errors as text
# ------------------------------------------------------------------------------------------------


def _format_error(exc: BaseException, filename: str, timed_out: bool, timeout: float | None) -> str:
    """A short traceback: the submitted code's frames, plus the frame that raised if elsewhere."""
    if isinstance(exc, SyntaxError) and exc.filename == filename:
        return "".join(traceback.format_exception_only(type(exc), exc)).rstrip("\n")
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next  # drop this module's frames above the submitted code
    stack = [frame for frame in traceback.extract_tb(tb) if frame.filename != __file__]
    if timed_out:  # where the submitted code was when it was stopped; library internals are noise
        stack = [frame for frame in stack if frame.filename == filename] or stack[-1:]
    lines = _short_stack(stack, filename)
    if lines:
        lines.insert(0, "Traceback (most recent call last):\n")
    if timed_out:
        lines.append(f"TimeoutError: the code did not finish within {timeout:g} s and was stopped\n")
    else:
        cause = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
        if cause is not None:  # one line instead of a second traceback
            cause_text = "".join(traceback.format_exception_only(type(cause), cause)).strip()
            lines.append(f"  [raised while handling {cause_text.splitlines()[-1]}]\n")
        lines.extend(traceback.format_exception_only(type(exc), exc))
    return "".join(lines).rstrip("\n")


_MOST_FRAMES = 20  # a longer traceback (deep recursion) keeps its first and last frames only


def _short_stack(stack: list[traceback.FrameSummary], filename: str) -> list[str]:
    """Formatted frames of the submitted code and the innermost frame; library frames in between
    are counted, not shown. Runs of one repeated line (recursion) are folded into one line, as
    Python does, and a stack still too deep keeps only its ends: a model reads all of it."""
    lines: list[str] = []
    kept: list[traceback.FrameSummary] = []
    skipped = 0

    def flush() -> None:
        # One StackSummary per run of kept frames, so repeats fold ("Previous line repeated").
        if kept:
            lines.extend(traceback.StackSummary.from_list(kept).format())
            kept.clear()

    for index, frame in enumerate(stack):
        if frame.filename == filename or index == len(stack) - 1:
            if skipped:
                flush()
                plural = "s" if skipped > 1 else ""
                lines.append(f"  [... {skipped} frame{plural} in library code ...]\n")
                skipped = 0
            kept.append(frame)
        else:
            skipped += 1
    flush()
    if len(lines) > _MOST_FRAMES:
        half = _MOST_FRAMES // 2
        lines[half:-half] = [f"  [... {len(lines) - 2 * half} more frames ...]\n"]
    return lines


# ------------------------------------------------------------------------------------------------
# Running
# ------------------------------------------------------------------------------------------------

_INTERNAL_MODULES = ("nbtools", "threading", "asyncio", "concurrent", "contextvars", "functools")


def _default_namespace(frame: Any) -> tuple[dict, Mapping | None]:
    """The kernel's user namespace inside IPython, else the globals of the first frame from
    `frame` outwards that is outside nbtools (and outside the thread/async machinery)."""
    shell = _ipython_shell() if "IPython" in sys.modules else None
    if shell is not None:
        globals_ns, locals_ns = shell.user_global_ns, shell.user_ns
        return globals_ns, (None if locals_ns is globals_ns else locals_ns)
    while frame is not None:
        name = frame.f_globals.get("__name__") or ""
        if name.partition(".")[0] not in _INTERNAL_MODULES:
            return frame.f_globals, None
        frame = frame.f_back
    return sys.modules["__main__"].__dict__, None


def _namespaces(glb: Any, loc: Any, caller: Any) -> tuple[dict, Mapping | None]:
    if glb is None:
        glb, default_loc = _default_namespace(caller)
        if loc is None:
            loc = default_loc
    if not isinstance(glb, dict):
        raise TypeError(f"glb must be a dict (the globals the code runs in), got {type(glb).__name__}")
    if loc is not None and not isinstance(loc, Mapping):
        raise TypeError(f"loc must be a mapping (the code's local namespace), got {type(loc).__name__}")
    return glb, loc


def _leaf(group: BaseExceptionGroup, kind: type[BaseException]) -> BaseException | None:
    """The first exception of class `kind` inside `group` (however deeply nested), or None."""
    for inner in group.exceptions:
        found = _leaf(inner, kind) if isinstance(inner, BaseExceptionGroup) else inner
        if isinstance(found, kind):
            return found
    return None


class _Execution:
    """Set-up and tear-down shared by the sync and async runners (capture, linecache, names)."""

    # Defaults as class attributes: a run only pays for the attributes it changes.
    compiled: _Compiled | None = None
    run: _Run | None = None
    value: Any = None
    exception: BaseException | None = None
    timed_out = False
    keep_lines = False  # keep the source in linecache even though nothing defined there survives

    def __init__(self, source: str, glb: dict, loc: Mapping | None, timeout: float | None) -> None:
        if not isinstance(source, str):
            raise TypeError(f"code must be a str of Python source, got {type(source).__name__}")
        self.source = source
        self.glb = glb
        self.loc = loc
        self.timeout = timeout
        self.filename = f"<python-input-{next(_filenames)}>"

    def begin(self) -> None:
        self.started = time.perf_counter()
        linecache.cache[self.filename] = (len(self.source), None,
                                          self.source.splitlines(True), self.filename)
        self.added_builtins = "__builtins__" not in self.glb
        self.capture = _Capture()
        if _child_stream is not None and _child_stream.capture is None:
            _child_stream.capture = self.capture
        self.shell = _ipython_shell() if "IPython" in sys.modules else None
        _start_routing(self.shell)
        self.token = _current_capture.set(self.capture)

    def compile(self, flags: int = 0) -> bool:
        try:
            self.compiled = _compile(self.source, self.filename, flags)
            return True
        except (SyntaxError, ValueError) as exc:  # ValueError: NUL bytes in the source
            self.exception = exc
            return False

    def caught(self, exc: BaseException) -> None:
        """Record an exception from the code; re-raise what must not become a tool result."""
        if isinstance(exc, BaseExceptionGroup):  # `except*` wraps what it lets through in a group
            exc = _leaf(exc, KeyboardInterrupt) or _leaf(exc, TimeoutInterrupt) or exc
        if isinstance(exc, KeyboardInterrupt):
            self.keep_lines = True  # the traceback a person sees shows these lines
            raise exc  # a person interrupting the kernel
        if isinstance(exc, TimeoutInterrupt):
            if self.run is None or not self.run.fired:
                self.keep_lines = True  # the enclosing run's traceback passes through this code
                raise exc  # an enclosing run's deadline: let it unwind to that run
            self.timed_out = True
        self.exception = exc

    def finish(self) -> ExecResult:
        capture = self.capture
        capture.closed = True
        _current_capture.reset(self.token)
        _stop_routing()
        if self.added_builtins:
            self.glb.pop("__builtins__", None)  # exec() put it there; the namespace stays as given
        error = None
        if self.exception is not None:
            error = _format_error(self.exception, self.filename, self.timed_out, self.timeout)
        elif not self.keep_lines and (self.compiled is None or not _defines_code(self.compiled)):
            linecache.cache.pop(self.filename, None)  # nothing can ask for these lines later
        duration = time.perf_counter() - self.started
        if not capture.chunks:  # the common case, kept cheap
            value = None if self.exception is not None else self.value
            return ExecResult(value, "", "", "", error, self.timed_out, duration, (), self.exception)
        return ExecResult(
            value=None if self.exception is not None else self.value,
            stdout=capture.text("stdout"),
            stderr=capture.text("stderr"),
            output=capture.text(),
            error=error,
            timed_out=self.timed_out,
            duration=duration,
            displays=tuple(capture.displays),
            exception=self.exception,
        )


def run_code(code: str, glb: dict | None = None, loc: Mapping | None = None,
             timeout: float | None = 3600, *, isolated: bool = False) -> ExecResult:
    """Run `code` and return an `ExecResult` (value, output, error, timed_out, duration).

    `glb`/`loc` are the namespaces (default: the kernel's `user_ns` inside IPython, else the
    caller's globals); nothing but what the code itself assigns is added to them. `timeout` is in
    seconds (fractions allowed; None for no limit). `isolated=True` runs the code in a forked child
    process, killed if it overruns the deadline (see `_run_isolated` for its limits). Exceptions from
    the code are returned in the result, except `KeyboardInterrupt`, which propagates.
    """
    limit = _check_timeout(timeout)
    glb, loc = _namespaces(glb, loc, sys._getframe(1) if glb is None else None)
    if isolated:
        return _run_isolated(code, glb, loc, limit)
    execution = _Execution(code, glb, loc, limit)
    execution.begin()
    try:
        if execution.compile():
            _execute(execution)
    finally:
        result = execution.finish()
    return result


def _execute(execution: _Execution) -> None:
    compiled = execution.compiled
    glb, loc = execution.glb, execution.loc
    run = None
    if execution.timeout is not None:
        run = execution.run = _Run(execution.timeout)
        _arm(run)
    try:
        try:
            if run is not None:
                run.active = True
            body, last = compiled
            if body is not None:
                exec(body, glb, loc)
            if last is not None:
                execution.value = eval(last, glb, loc)
        finally:
            if run is not None:
                run.active = False
    except BaseException as exc:
        execution.caught(exc)
    finally:
        if run is not None:
            _disarm(run)


# ------------------------------------------------------------------------------------------------
# Async: top-level await
# ------------------------------------------------------------------------------------------------


async def run_code_async(code: str, glb: dict | None = None, loc: Mapping | None = None,
                         timeout: float | None = 3600) -> ExecResult:
    """Like `run_code`, but the code may use top-level `await`; awaited.

    The deadline covers the whole run: while the code is suspended in an `await`, the task is
    woken and the time-out raised at that `await`; while it computes, the same timer as
    `run_code` interrupts it.
    """
    limit = _check_timeout(timeout)
    glb, loc = _namespaces(glb, loc, sys._getframe(1) if glb is None else None)
    execution = _Execution(code, glb, loc, limit)
    execution.begin()
    try:
        if execution.compile(ast.PyCF_ALLOW_TOP_LEVEL_AWAIT):
            await _execute_async(execution)
    finally:
        result = execution.finish()
    return result


async def _execute_async(execution: _Execution) -> None:
    import asyncio

    compiled = execution.compiled
    glb, loc = execution.glb, execution.loc
    run = execution.run = _Run(execution.timeout) if execution.timeout is not None else None
    task = asyncio.current_task()
    waker = _Waker(run, task) if run is not None and task is not None else None
    try:
        body, last = compiled
        for code in compiled:
            if code is None:
                continue
            outcome = _stepped_call(lambda code=code: eval(code, glb, loc), run)
            if code.co_flags & _CO_COROUTINE:
                outcome = await _Stepper(outcome, run, task)
            if code is last:
                execution.value = outcome
    except asyncio.CancelledError as exc:
        if task is not None and task.cancelling():
            raise  # the task running this code is being cancelled from outside
        execution.caught(exc)
    except BaseException as exc:
        execution.caught(exc)
    finally:
        if waker is not None:
            waker.stop()


_CO_COROUTINE = 0x0080  # inspect.CO_COROUTINE, without importing inspect


class _Waker:
    """Wakes a run suspended in an `await` at its deadline (and again every few milliseconds if
    the code swallows the time-out) by cancelling its task; `_Stepper` turns that cancellation
    into `TimeoutInterrupt`."""

    __slots__ = ("run", "task", "handle")

    def __init__(self, run: _Run, task: Any) -> None:
        self.run, self.task = run, task
        self.handle = task.get_loop().call_later(run.timeout, self._wake)

    def _wake(self) -> None:
        self.run.fired = True
        self.task.cancel()
        self.handle = self.task.get_loop().call_later(_REPEAT, self._wake)

    def stop(self) -> None:
        self.handle.cancel()


def _stepped_call(step: Any, run: _Run | None) -> Any:
    """Call `step()` (a slice of the code's own work) under the run's deadline."""
    if run is None:
        return step()
    _arm(run)
    try:
        run.active = True
        try:
            return step()
        finally:
            run.active = False
    finally:
        _disarm(run)


class _Stepper:
    """Awaits the code's coroutine one step at a time, each step under the deadline, and turns
    the deadline's task cancellation into `TimeoutInterrupt` at the code's `await`."""

    __slots__ = ("coroutine", "run", "task")

    def __init__(self, coroutine: Any, run: _Run | None, task: Any) -> None:
        self.coroutine, self.run, self.task = coroutine, run, task

    def __await__(self) -> Any:
        import asyncio

        coroutine, run = self.coroutine, self.run
        to_send: Any = None
        to_throw: BaseException | None = None
        while True:
            try:
                if to_throw is not None:
                    exc, to_throw = to_throw, None
                    yielded = _stepped_call(lambda: coroutine.throw(exc), run)
                else:
                    yielded = _stepped_call(lambda: coroutine.send(to_send), run)
            except StopIteration as stop:
                return stop.value
            except TimeoutInterrupt:
                coroutine.close()
                raise
            try:
                to_send = yield yielded
            except GeneratorExit:
                coroutine.close()
                raise
            except BaseException as exc:
                if (isinstance(exc, asyncio.CancelledError) and run is not None and run.fired
                        and self.task is not None):
                    self.task.uncancel()  # our own wake-up call, not a cancellation from outside
                    exc = TimeoutInterrupt(f"the code ran for more than {run.timeout:g} s")
                to_throw, to_send = exc, None


# ------------------------------------------------------------------------------------------------
# Isolated mode
# ------------------------------------------------------------------------------------------------


class _ReprOnly:
    """Stands for a value that could not be sent back from the child process: keeps its repr."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


# Seconds the child gets past the deadline to stop itself before it is killed. Its own timer starts
# after the fork, and it still has to format, pickle and send its traceback: on a loaded machine
# 50 ms proved too short (the child was killed while stopping on its own).
_KILL_GRACE = 0.5


def _run_isolated(code: str, glb: dict, loc: Mapping | None, timeout: float | None) -> ExecResult:
    """Run in a forked child process.

    The child enforces the deadline itself like an in-process run (so Python code stops with a
    traceback); a child still running `_KILL_GRACE` seconds later (a loop inside C) is killed.
    Output is sent to the parent as it is written, so it survives the kill.

    Limits: POSIX only (fork). The child works on a copy of the namespace, so assignments,
    imports and definitions do not reach the caller; the value comes back pickled (or, when it
    cannot be pickled, as an object whose repr is the value's repr); the exception object is not
    returned (its text is). Only the forking thread exists in the child. Each run costs a fork
    (a few milliseconds, more with a big process).
    """
    global _child_stream
    import pickle
    import select

    if not hasattr(os, "fork"):
        raise RuntimeError("isolated=True needs os.fork (POSIX); it is not available on this platform")
    started = time.perf_counter()
    kill_at = time.monotonic() + timeout + _KILL_GRACE if timeout is not None else math.inf
    reader, writer = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: run, send the result, leave without running any clean-up of the parent's
        status = 0
        try:
            os.close(reader)
            _child_stream = _ChildStream(writer)
            result = run_code(code, glb, loc, timeout=timeout)
            value = result.value
            try:
                pickle.dumps(value)
            except Exception:
                try:
                    value = _ReprOnly(repr(value))
                except Exception as exc:  # a broken __repr__ too: say so, as an in-process run does
                    value = _ReprOnly(f"<repr of {type(value).__name__} failed: "
                                      f"{type(exc).__name__}: {exc}>")
            _child_stream.send(("result", value, result.error, result.timed_out, result.displays))
        except KeyboardInterrupt:  # the code raised it, or the child was interrupted with the kernel
            _child_stream.send(("result", None, "KeyboardInterrupt", False, ()))
        except BaseException:
            status = 1
        finally:
            os._exit(status)
    os.close(writer)
    pending = bytearray()  # the start of a message whose end has not arrived yet
    capture = _Capture()   # bounded like an in-process run's, however much the child prints
    outcome = None
    killed = False
    try:
        while True:
            remaining = kill_at - time.monotonic()
            if remaining <= 0:
                killed = True
                break
            ready, _, _ = select.select([reader], [], [], None if remaining == math.inf else remaining)
            if ready:
                data = os.read(reader, 1 << 16)
                if not data:
                    break
                pending += data
                for message in _take_messages(pending):
                    if message[0] == "chunk":
                        capture.add(message[1], message[2])
                    else:
                        outcome = message[1:]
    finally:
        os.close(reader)
        if killed or sys.exc_info()[0] is not None:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _, status = os.waitpid(pid, 0)
    output = {"stdout": capture.text("stdout"), "stderr": capture.text("stderr"), "output": capture.text()}
    duration = time.perf_counter() - started
    if outcome is None:
        if killed:
            error = (f"TimeoutError: the code did not finish within {timeout:g} s; "
                     "its process was killed")
        else:
            error = ("Error: the isolated process ended without a result "
                     f"(exit status {os.waitstatus_to_exitcode(status)})")
        return ExecResult(error=error, timed_out=killed, duration=duration, **output)
    value, error, timed_out, displays = outcome
    return ExecResult(value=value, error=error, timed_out=timed_out, duration=duration,
                      displays=displays, **output)


def _take_messages(pending: bytearray) -> list[tuple]:
    """The complete messages at the start of `pending` (4-byte length, then a pickle), removed
    from it; an incomplete last message stays for the next read (and is dropped if none comes)."""
    import pickle

    messages = []
    position = 0
    while position + 4 <= len(pending):
        size = int.from_bytes(pending[position:position + 4], "big")
        if position + 4 + size > len(pending):
            break
        messages.append(pickle.loads(pending[position + 4:position + 4 + size]))
        position += 4 + size
    del pending[:position]
    return messages


# ------------------------------------------------------------------------------------------------
# The model-facing tools
# ------------------------------------------------------------------------------------------------


# `python` and `python_async` have no return annotation on purpose: the tool description would
# gain a useless "Returns: Any"; the docstring says what comes back.


def python(
    code: str,  # Python source code to run
    glb: dict | None = None,
    loc: Mapping | None = None,
    timeout: float = 3600,  # seconds before the run is stopped (fractions allowed)
    *,
    isolated: bool = False,
):
    """Run Python code in the current session and return its result.

    Variables, imports and functions persist from one call to the next. Returns the value of the
    last expression (end the code with `;` to return nothing); if the code printed anything, the
    printed text followed by that value's repr on a final line. Errors come back as a short
    traceback; code still running after `timeout` seconds is stopped and reported as a time-out."""
    if glb is None:
        glb, default_loc = _default_namespace(sys._getframe(1))
        loc = default_loc if loc is None else loc
    try:
        result = run_code(code, glb, loc, timeout, isolated=isolated)
    except (TypeError, ValueError, RuntimeError) as exc:  # bad arguments: tell the model, do not raise
        return f"Error: {exc}"
    return result.for_model()


async def python_async(
    code: str,  # Python source code to run; top-level `await` is allowed
    glb: dict | None = None,
    loc: Mapping | None = None,
    timeout: float = 3600,  # seconds before the run is stopped (fractions allowed)
):
    """Run Python code in the current session (top-level `await` allowed) and return its result.

    Variables, imports and functions persist from one call to the next. Returns the value of the
    last expression (end the code with `;` to return nothing); if the code printed anything, the
    printed text followed by that value's repr on a final line. Errors come back as a short
    traceback; code still running after `timeout` seconds is stopped and reported as a time-out."""
    if glb is None:
        glb, default_loc = _default_namespace(sys._getframe(1))
        loc = default_loc if loc is None else loc
    try:
        result = await run_code_async(code, glb, loc, timeout)
    except (TypeError, ValueError) as exc:
        return f"Error: {exc}"
    return result.for_model()


# Namespaces and process isolation are the caller's business, not the model's.
python.__tool_exclude__ = ("glb", "loc", "isolated")  # type: ignore[attr-defined]
python_async.__tool_exclude__ = ("glb", "loc")  # type: ignore[attr-defined]
