"""Isolated mode (`isolated=True`): run the code in a forked child process that can be killed.

The child enforces the deadline itself like an in-process run (so Python code stops with a
traceback); a child still running `_KILL_GRACE` seconds later (a loop that stays inside C, such as
`sum(range(10**10))`, which nothing in-process can stop) is killed. The child's output reaches the
parent as it is written, so it survives the kill.

The child sends data, never a pickle: messages are JSON (4 bytes of length, then the text), and
the parent only reads them. The code runs in the child and can write anything to the pipe; the
worst it can do is send a wrong answer or a malformed message (reported as an error), never run
code in the parent. So the value comes back as itself when it is JSON data (None, bool, int,
float, str, and lists and dicts with str keys of these), and otherwise as an object whose repr is
the value's repr (`_ReprOnly`): a tuple, a set, or a dataclass defined by the code
(`Point(x=1, y=2)`) come back as that text.
"""

from __future__ import annotations

import math
import os
import signal
import sys
import time
from typing import TYPE_CHECKING, Callable, Mapping

from . import timeouts
from .capture import Capture, start_child_stream
from .result import ExecResult

if TYPE_CHECKING:
    from .confine import Confinement


class _ReprOnly:
    """Stands for a value that could not be sent back from the child process: keeps its repr."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


_MOST_DEPTH = 100              # deeper containers come back as their repr
_LONGEST_MESSAGE = 256 << 20   # a message announced as longer than this is refused (bytes)


def _is_data(value: object, depth: int = 0) -> bool:
    """Whether `value` survives a JSON round trip unchanged (exact types: no subclasses)."""
    kind = type(value)
    if value is None or kind is str or kind is bool or kind is int or kind is float:
        return True
    if depth >= _MOST_DEPTH:
        return False
    if kind is list:
        return all(_is_data(item, depth + 1) for item in value)
    if kind is dict:
        return all(type(key) is str and _is_data(item, depth + 1) for key, item in value.items())
    return False


def _value_message(value: object) -> list:
    """The value as the child sends it: ["data", value] or ["repr", text]."""
    import json

    if _is_data(value):
        try:
            json.dumps(value)  # e.g. an int too long to convert to text
            return ["data", value]
        except (ValueError, TypeError, RecursionError):
            pass
    try:
        return ["repr", repr(value)]
    except Exception as exc:  # a broken __repr__ too: say so, as an in-process run does
        return ["repr", f"<repr of {type(value).__name__} failed: {type(exc).__name__}: {exc}>"]


# Seconds the child gets past the deadline to stop itself before it is killed. Its own timer starts
# after the fork, and it still has to format, pickle and send its traceback: on a loaded machine
# 50 ms proved too short (the child was killed while stopping on its own).
_KILL_GRACE = 0.5


def run_isolated(code: str, glb: dict, loc: Mapping | None, timeout: float | None,
                 run_in_child: Callable[..., ExecResult], confinement: Confinement | None = None) -> ExecResult:
    """Run `code` in a forked child with `run_in_child(code, glb, loc, timeout=timeout)` (the
    in-process runner) and return what it produced.

    Limits: POSIX only (fork). The child works on a copy of the namespace, so assignments,
    imports and definitions do not reach the caller; the value comes back as JSON data or, when it
    is anything else, as an object whose repr is the value's repr (see the module docstring); the
    exception object is not returned (its text is). Only the forking thread exists in the child. Each run costs a fork
    (a few milliseconds, more with a big process). With a `confinement` (`confine.py`, built by
    the caller, who closes it), the child restricts itself before anything of the code runs; if
    the kernel refuses that, the code does not run and the result says so.
    """
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
            timeouts.main_backstop = False  # this process is killed if it overruns
            stream = start_child_stream(writer)
            if confinement is not None:
                try:
                    confinement.enter(writer)
                except OSError as exc:
                    stream.send(["result", ["data", None], f"Error: the run could not be confined ({exc}); "
                                 "nothing was run", False, []])
                    raise
            result = run_in_child(code, glb, loc, timeout=timeout)
            stream.send(["result", _value_message(result.value), result.error, result.timed_out,
                         list(result.displays)])
        except KeyboardInterrupt:  # the child was interrupted with the kernel
            stream.send(["result", ["data", None], "KeyboardInterrupt", False, []])
        except BaseException:
            status = 1
        finally:
            os._exit(status)
    os.close(writer)
    pending = bytearray()  # the start of a message whose end has not arrived yet
    capture = Capture()    # bounded like an in-process run's, however much the child prints
    outcome = None
    killed = False
    malformed = None
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
                try:
                    for message in _take_messages(pending):
                        if message[0] == "chunk":
                            capture.add(message[1], message[2])
                        else:
                            outcome = message[1:]
                except ValueError as exc:
                    malformed = str(exc)
                    killed = True
                    break
                if outcome is not None:  # the child's last message: a process the code left behind
                    break                # (holding the pipe) does not hold the answer back
    finally:
        os.close(reader)
        if killed or outcome is not None or sys.exc_info()[0] is not None:
            _stop(pid, confinement is not None)
        _, status = os.waitpid(pid, 0)
    output = {"stdout": capture.text("stdout"), "stderr": capture.text("stderr"), "output": capture.text()}
    duration = time.perf_counter() - started
    if malformed is not None:
        return ExecResult(error=f"Error: the isolated process sent a malformed message ({malformed}); "
                                "it was stopped", duration=duration, **output)
    if outcome is None:
        if killed:
            error = (f"TimeoutError: the code did not finish within {timeout:g} s; "
                     "its process was killed")
        else:
            error = ("Error: the isolated process ended without a result "
                     f"(exit status {os.waitstatus_to_exitcode(status)})")
        return ExecResult(error=error, timed_out=killed, duration=duration, **output)
    (kind, value), error, timed_out, displays = outcome
    if kind == "repr":
        value = _ReprOnly(value)
    return ExecResult(value=value, error=error, timed_out=timed_out, duration=duration,
                      displays=tuple(displays), **output)


def _stop(pid: int, group: bool) -> None:
    """Kill the child (done or not: its answer is in), and with `group` (a confined child leads a
    process group of its own) whatever the code started that stayed in that group."""
    for kill, target in ((os.killpg, pid), (os.kill, pid)) if group else ((os.kill, pid),):
        try:
            kill(target, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _take_messages(pending: bytearray) -> list[list]:
    """The complete messages at the start of `pending` (4-byte length, then JSON), removed from
    it; an incomplete last message stays for the next read (and is dropped if none comes).
    Raises ValueError for anything that is not a message the child's runner sends."""
    import json

    messages = []
    position = 0
    while position + 4 <= len(pending):
        size = int.from_bytes(pending[position:position + 4], "big")
        if size > _LONGEST_MESSAGE:
            raise ValueError(f"a message of {size:,} bytes")
        if position + 4 + size > len(pending):
            break
        try:
            message = json.loads(bytes(pending[position + 4:position + 4 + size]))
        except (ValueError, RecursionError) as exc:
            raise ValueError(f"not JSON: {type(exc).__name__}") from None
        messages.append(_checked(message))
        position += 4 + size
    del pending[:position]
    return messages


def _checked(message: object) -> list:
    """`message` if it has the shape of a chunk or a result message (else ValueError)."""
    if type(message) is list and message:
        if (message[0] == "chunk" and len(message) == 3 and message[1] in ("stdout", "stderr")
                and type(message[2]) is str):
            return message
        if (message[0] == "result" and len(message) == 5 and type(message[1]) is list
                and len(message[1]) == 2 and message[1][0] in ("data", "repr")
                and (message[1][0] == "data" or type(message[1][1]) is str)
                and (message[2] is None or type(message[2]) is str) and type(message[3]) is bool
                and type(message[4]) is list and all(type(bundle) is dict for bundle in message[4])):
            return message
    raise ValueError("not a message of the isolated runner")
