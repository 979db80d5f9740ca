"""Isolated mode (`isolated=True`): run the code in a forked child process that can be killed.

The child enforces the deadline itself like an in-process run (so Python code stops with a
traceback); a child still running `_KILL_GRACE` seconds later (a loop that stays inside C, such as
`sum(range(10**10))`, which nothing in-process can stop) is killed. The child's output reaches the
parent as it is written, so it survives the kill.
"""

from __future__ import annotations

import math
import os
import signal
import sys
import time
from typing import Callable, Mapping

from .capture import Capture, start_child_stream
from .result import ExecResult


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


def run_isolated(code: str, glb: dict, loc: Mapping | None, timeout: float | None,
                 run_in_child: Callable[..., ExecResult]) -> ExecResult:
    """Run `code` in a forked child with `run_in_child(code, glb, loc, timeout=timeout)` (the
    in-process runner) and return what it produced.

    Limits: POSIX only (fork). The child works on a copy of the namespace, so assignments,
    imports and definitions do not reach the caller; the value comes back pickled (or, when it
    cannot be pickled, as an object whose repr is the value's repr); the exception object is not
    returned (its text is). Only the forking thread exists in the child. Each run costs a fork
    (a few milliseconds, more with a big process).
    """
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
            stream = start_child_stream(writer)
            result = run_in_child(code, glb, loc, timeout=timeout)
            value = result.value
            try:
                pickle.dumps(value)
            except Exception:
                try:
                    value = _ReprOnly(repr(value))
                except Exception as exc:  # a broken __repr__ too: say so, as an in-process run does
                    value = _ReprOnly(f"<repr of {type(value).__name__} failed: "
                                      f"{type(exc).__name__}: {exc}>")
            stream.send(("result", value, result.error, result.timed_out, result.displays))
        except KeyboardInterrupt:  # the code raised it, or the child was interrupted with the kernel
            stream.send(("result", None, "KeyboardInterrupt", False, ()))
        except BaseException:
            status = 1
        finally:
            os._exit(status)
    os.close(writer)
    pending = bytearray()  # the start of a message whose end has not arrived yet
    capture = Capture()    # bounded like an in-process run's, however much the child prints
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
