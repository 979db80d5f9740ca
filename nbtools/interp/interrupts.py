"""A person's interrupt and the signal mask, around the outermost run on the main thread.

1. SIGINT: while a run is active on the main thread, a callable SIGINT handler (Python's default
   one, or whatever the kernel put there) is wrapped so that the `KeyboardInterrupt` it raises is
   a `result.RealInterrupt`. That is how a run tells a person's interrupt (it propagates and stops
   the cell) from `raise KeyboardInterrupt` in the model's code (an error, returned as text). A
   handler that is not callable (`SIG_IGN`, `SIG_DFL`) is left alone. The wrapped handler is
   `_on_sigint.__wrapped__` while wrapped: a served call's SIGINT handler (`mcp.stopping`) is
   still found there, so a client's cancellation interrupts a served `python()` run too.
2. The signal mask: code can block signals (`signal.pthread_sigmask(SIG_BLOCK, {SIGALRM})`).
   `_signal.pthread_sigmask` (which `signal.pthread_sigmask` calls, also after
   `importlib.reload(signal)`) is patched by `process.py` to call `note_mask` with the mask it
   replaced: the first change during a main-thread run remembers the mask as it was, and it is put
   back exactly when the outermost run ends. Reading the mask costs a system call, so a run that
   never calls it pays nothing. A mask changed another way (a reference to the C function taken
   before the patch) is caught by `timeouts.py`'s backstop: SIGALRM did not arrive, so it is
   unblocked at the end of that run. Either way `timeouts.py` unblocks SIGALRM before it restores
   the previous SIGALRM handler (`unblock_alarm`): a tick pending while blocked then reaches our
   handler, which ignores it, never a default disposition that would end the process. A blocked
   SIGINT is unblocked last, after the SIGINT handler is put back: a person's interrupt that waited
   meanwhile then propagates from the run as a plain `KeyboardInterrupt`.

`process.enter`/`process.leave` call `enter`/`leave` on the main thread; nothing here runs on
another thread (signal handlers and the mask of the main thread are only changed from it).
"""

from __future__ import annotations

import signal
import threading
from typing import Any

from .result import RealInterrupt

try:
    from _signal import getsignal as _get_handler, signal as _set_handler
except ImportError:  # pragma: no cover - other Python implementations
    _get_handler, _set_handler = signal.getsignal, signal.signal
try:
    from _signal import pthread_sigmask as _sigmask
except ImportError:  # pragma: no cover - no signal masks (Windows)
    _sigmask = None

_SIGINT = int(signal.SIGINT)
_SIGALRM = int(getattr(signal, "SIGALRM", 0))
_main_ident = threading.main_thread().ident
_default_int_handler = signal.default_int_handler

_depth = 0                        # main-thread runs active (nested runs count)
_saved_mask: Any = None           # the mask when the outermost one began
_previous_sigint: Any = None      # the SIGINT handler we wrapped, or None


def _on_sigint(signum: int, frame: Any) -> None:
    previous = _previous_sigint  # also `_on_sigint.__wrapped__` meanwhile (see `enter`)
    if previous is None or previous is _default_int_handler:
        raise RealInterrupt
    try:
        previous(signum, frame)
    except RealInterrupt:
        raise
    except KeyboardInterrupt as exc:
        raise RealInterrupt(*exc.args) from None


_on_sigint.__wrapped__ = None  # type: ignore[attr-defined]


def enter() -> None:
    """A run begins on the main thread."""
    global _depth, _previous_sigint
    _depth += 1
    if _depth > 1:
        return
    previous = _get_handler(_SIGINT)
    if callable(previous) and previous is not _on_sigint:
        # `__wrapped__` (functools' convention) names the handler ours calls: whoever checks which
        # handler SIGINT reaches (`mcp.stopping.cancel_served`, before it interrupts a served call)
        # still finds its own behind ours
        _previous_sigint = _on_sigint.__wrapped__ = previous  # type: ignore[attr-defined]
        _set_handler(_SIGINT, _on_sigint)


def leave() -> None:
    """A run ends on the main thread: when it was the outermost one, the mask and the SIGINT
    handler are put back as they were when it began."""
    global _depth, _saved_mask, _previous_sigint
    _depth -= 1
    if _depth:
        return
    previous, _previous_sigint = _previous_sigint, None
    _on_sigint.__wrapped__ = None  # type: ignore[attr-defined]
    if previous is not None:
        _set_handler(_SIGINT, previous)
    saved, _saved_mask = _saved_mask, None
    if saved is not None:
        _sigmask(signal.SIG_SETMASK, saved)


def note_mask(before: Any) -> None:
    """`_signal.pthread_sigmask` was called and replaced the mask `before` (process.py's patch)."""
    global _saved_mask
    if _depth and _saved_mask is None and threading.get_ident() == _main_ident:
        _saved_mask = before


def unblock_alarm() -> None:
    """Let SIGALRM through again (`timeouts.py` calls this before it restores the previous SIGALRM
    handler, when the mask was changed or SIGALRM did not arrive); the exact mask comes back in
    `leave`."""
    if _sigmask is not None:
        _sigmask(signal.SIG_UNBLOCK, (_SIGALRM,))
        _let_pending_signals_run()


def mask_changed() -> bool:
    return _saved_mask is not None


def _let_pending_signals_run() -> None:
    """Python runs signal handlers between bytecodes: calling this runs any now-pending one."""


def reset_after_fork() -> None:
    """In the child of a fork only the forking thread exists: it is the main one there."""
    global _depth, _saved_mask, _previous_sigint, _main_ident
    _depth, _saved_mask, _previous_sigint = 0, None, None
    _on_sigint.__wrapped__ = None  # type: ignore[attr-defined]
    _main_ident = threading.get_ident()
