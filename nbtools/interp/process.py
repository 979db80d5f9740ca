"""Every change `python()` makes to the process outside its own objects, and how each is undone.

This module is the only place in nbtools that replaces anything process-wide. The manual:

Lasting patches: put in by `install()` (lazily, when the first run begins), taken out by
`uninstall()` (at interpreter exit, on `%unload_ext nbtools`, or when called).

1. `threading.Thread.start`: a thread started by a run's code writes into that run's output, as
   the code's own prints do (threads do not inherit context variables before Python 3.14), and is
   recorded in the run's capture, so a run that times out stops it (`started.py`); a thread of a
   timed-out run cannot start another. Outside a run, and for a thread that prints after its run
   ended, it only calls the start it replaced.
2. `signal.signal`, `signal.getsignal`, `signal.setitimer`, `signal.getitimer`, `signal.alarm`
   (where the platform has interval timers): while a run on the main thread is active, our SIGALRM
   handler and timer enforce its deadline, and code that installs its own handler or timer (a
   model guarding its work with `signal.alarm(5)` is common) would silently disarm the time-out.
   So for that run's duration these functions keep the code's SIGALRM handler and timer beside
   ours (`timeouts.code_timer`); the code sees its own settings, and they end with the run. From a
   run's context anywhere else (a run off the main thread, such as a served call; a thread or task
   the code started) `alarm` and `setitimer` are refused with RuntimeError: no handler of ours is
   there, and the signal's default action would end the process (SIGVTALRM/SIGPROF timers too,
   unless the code installed a handler). Every other call (other signals, `signal.signal` off the
   main thread, outside any run) is passed through.
2b. `_signal.pthread_sigmask` (what `signal.pthread_sigmask` calls, also after
   `importlib.reload(signal)`): passed through, and the mask it replaced is told to
   `interrupts.note_mask`, so a mask the code changes is put back when the run ends.
2c. `_thread.interrupt_main`: refused (RuntimeError) from a run's context, a thread it started
   included: it would raise a person's interrupt in the main thread, in the caller of `python()`
   or long after the run returned.
3. An at-fork hook (`os.register_at_fork`, registered once at the first install): in the child of
   a fork only the forking thread exists, so the child gets a fresh lock here, no watchdog thread
   and no main-thread runs in `timeouts`. The `os` module cannot unregister a hook; after
   `uninstall()` it stays registered and still only resets this package's own state.
4. An `atexit` call of `uninstall()` (registered once at the first install; harmless when
   nothing is installed any more).

Per-run changes: made when the first of the runs active at a time begins, undone exactly when the
last of them ends (not by `uninstall()`: there is nothing left to undo then).

5. `sys.stdout`, `sys.stderr`, `sys.stdin` become routers (`capture.py`): output from a run's
   context goes to its capture, everything else to the stream that was there; the code reads
   end-of-file from stdin. The streams that were there before are put back, also when the code
   replaced them (`sys.stdout = sys.__stdout__` in a kernel would send every later cell's output
   to the terminal; an unclosed `sys.stdout = open(...)` would swallow it).
6. Inside IPython, the shell's `display_pub` becomes a router that captures a run's `display()`
   calls; the publisher that was there is put back.
7. Inside IPython, the shell's `ask_exit` (what `exit()`/`quit()` call in a kernel: it asks the
   kernel to shut down a moment later, and returns None, so the model would see success) is
   shadowed by an instance attribute that raises `SystemExit` in a run's code instead, which comes
   back as text like `sys.exit()`; everyone else's calls go to the shell's own method. The
   attribute is removed again.
8. On the main thread (`interrupts.py`): the SIGINT handler is wrapped so a person's interrupt can
   be told from the code's own `raise KeyboardInterrupt`, and the signal mask is put back as it was
   (so `pthread_sigmask(SIG_BLOCK, {SIGALRM})` in the code never outlives the run).
(9. Not here either, being part of enforcing a deadline: when a run keeps swallowing its
   time-out, `timeouts._escalate` sets its thread's trace and profile functions, and puts back
   the ones that were there when the run ends.)
(10. Not here, because it is how a deadline is enforced rather than a patch: for the outermost run
   on the main thread `timeouts.py` installs its SIGALRM handler and arms the real interval timer,
   and restores the previous handler and timer exactly when that run ends.)

How patches are put in and taken out:
- The function or attribute being replaced is read when `install()` runs, not when nbtools is
  imported: a wrapper another library put there before is what our patch passes through to.
- `uninstall()` puts back only what is still ours: where another library has wrapped over our
  patch since, its wrapper stays (it keeps calling ours, which passes through and still works).
  Each install makes fresh replacements that remember their own originals, so installing again
  over such a wrapper never forms a loop (two of ours in one chain do the same thing twice:
  harmless).
- `uninstall()` may be called any time, any number of times. While a run is active (in any
  thread) it is deferred: the patches are taken out when the last active run ends. A run that
  begins after that installs them again.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import threading
from typing import Any, Callable

from .result import TimeoutInterrupt

from . import interrupts, started, timeouts
from .capture import DisplayRouter, StdinRouter, StreamRouter, active_capture, current_capture

_lock = threading.Lock()
_users = 0                # runs active right now (all threads); routing is in place while > 0
_patches: tuple[_Patch, ...] | None = None  # what install() put in; None when not installed
_uninstall_pending = False  # uninstall() was called while runs were active
_hooks_registered = False   # the at-fork hook and the atexit call (both once per process)


class _Patch:
    """One attribute we replaced: where, what was there, and what we put there."""

    __slots__ = ("owner", "name", "original", "replacement")

    def __init__(self, owner: Any, name: str, make: Callable[[Any], Any]) -> None:
        self.owner, self.name = owner, name
        self.original = getattr(owner, name)  # read now: a wrapper someone put in before us stays
        self.replacement = make(self.original)
        setattr(owner, name, self.replacement)

    def remove(self) -> None:
        """Put the original back if the attribute is still ours; leave someone else's wrapper."""
        if vars(self.owner).get(self.name) is self.replacement:
            setattr(self.owner, self.name, self.original)


# ------------------------------------------------------------------------------------------------
# The replacements (each made per install, around the original it replaces)
# ------------------------------------------------------------------------------------------------


def _thread_start(original: Callable) -> Callable:
    @functools.wraps(original)
    def start(self: threading.Thread, *args: Any, **kwargs: Any) -> Any:
        capture = active_capture()
        if capture is None:
            started.refuse_start(current_capture.get())  # a thread of a timed-out run
        else:
            run = self.run
            record = capture.add_thread(started.Started())

            def run_in_capture() -> None:
                current_capture.set(capture)
                if not started.begins(record):
                    return  # its run timed out before it began
                try:
                    run()
                except TimeoutInterrupt:
                    if not record.stopped:
                        raise
                    # stopped because its run timed out: nothing to report on stderr
                finally:
                    started.ends(record)

            self.run = run_in_capture  # type: ignore[method-assign]
        return original(self, *args, **kwargs)

    return start


def _interrupt_main(original: Callable) -> Callable:
    @functools.wraps(original)
    def interrupt_main(*args: Any, **kwargs: Any) -> Any:
        if current_capture.get() is not None:  # a run's code, or a thread or task it started
            raise RuntimeError("python(): the code may not interrupt the main thread "
                               "(_thread.interrupt_main): that is how a person stops the kernel")
        return original(*args, **kwargs)

    return interrupt_main


# The code's SIGALRM settings live in `timeouts.code_timer` while a main-thread run is active
# (None otherwise: then every call is passed through).


def _signal_signal(original: Callable) -> Callable:
    @functools.wraps(original)
    def signal_(signalnum: Any, handler: Any) -> Any:
        timer = timeouts.code_timer
        if timer is None or signalnum != timeouts.SIGALRM or threading.get_ident() != timeouts.main_ident:
            return original(signalnum, handler)
        return timeouts.code_signal(timer, handler)

    return signal_


def _signal_getsignal(original: Callable) -> Callable:
    @functools.wraps(original)
    def getsignal(signalnum: Any) -> Any:
        timer = timeouts.code_timer
        if timer is None or signalnum != timeouts.SIGALRM:
            return original(signalnum)
        return timeouts.code_getsignal(timer)

    return getsignal


def _signal_setitimer(original: Callable) -> Callable:
    @functools.wraps(original)
    def setitimer(which: Any, seconds: float, interval: float = 0.0) -> tuple[float, float]:
        if which != timeouts.ITIMER_REAL:
            if seconds and which in _OTHER_TIMERS:
                _code_timer("signal.setitimer()", _OTHER_TIMERS[which])
            return original(which, seconds, interval)
        timer = _code_timer("signal.setitimer()")
        if timer is None:
            return original(which, seconds, interval)
        return timeouts.code_setitimer(timer, seconds, interval)

    return setitimer


def _signal_getitimer(original: Callable) -> Callable:
    @functools.wraps(original)
    def getitimer(which: Any) -> tuple[float, float]:
        timer = timeouts.code_timer
        if timer is None or which != timeouts.ITIMER_REAL:
            return original(which)
        return timeouts.code_getitimer(timer)

    return getitimer


def _signal_alarm(original: Callable) -> Callable:
    @functools.wraps(original)
    def alarm(seconds: int) -> int:
        timer = _code_timer("signal.alarm()")
        if timer is None:
            return original(seconds)
        return timeouts.code_alarm(timer, seconds)

    return alarm


def _code_timer(what: str, signum: int | None = None) -> Any:
    """The code's SIGALRM timer (`timeouts.code_timer`) for a call from a main-thread run; None for
    a call from outside any run (passed through). From any other run's context (off the main
    thread, where our handler cannot keep it; or after its run ended) the real timer would fire
    the default handler, which ends the process (the kernel, the MCP server): refused."""
    if current_capture.get() is None:
        return None
    if threading.get_ident() == timeouts.main_ident and active_capture() is not None:
        return timeouts.code_timer  # None: no deadline armed, the real functions serve
    if signum is not None and callable(signal.getsignal(signum)):
        return None  # the code's own handler for SIGVTALRM/SIGPROF is there: the timer is harmless
    raise RuntimeError(f"python(): {what} is not available here: the code runs off the main thread "
                       "(or after its run ended), where the timer's signal would stop the whole "
                       "process. Time the work with time.monotonic() instead.")


def _sigmask(original: Callable) -> Callable:
    @functools.wraps(original)
    def pthread_sigmask(how: Any, mask: Any) -> Any:
        before = original(how, mask)
        interrupts.note_mask(before)
        return before

    return pthread_sigmask


# The other interval timers, and the signal each sends (whose default action ends the process too).
_OTHER_TIMERS = {getattr(signal, timer): getattr(signal, signum)
                 for timer, signum in (("ITIMER_VIRTUAL", "SIGVTALRM"), ("ITIMER_PROF", "SIGPROF"))
                 if hasattr(signal, timer) and hasattr(signal, signum)}

_SIGNAL_REPLACEMENTS = {"signal": _signal_signal, "getsignal": _signal_getsignal,
                        "setitimer": _signal_setitimer, "getitimer": _signal_getitimer,
                        "alarm": _signal_alarm}


# ------------------------------------------------------------------------------------------------
# install / uninstall
# ------------------------------------------------------------------------------------------------


def install() -> None:
    """Put the lasting patches in (nothing happens if they are in); cancels a deferred uninstall.

    Runs call this themselves when they begin; calling it by hand is never needed."""
    global _uninstall_pending
    with _lock:
        _uninstall_pending = False
        _install_locked()


def uninstall() -> None:
    """Take the lasting patches out, leaving any wrapper someone else put over one of them.

    Safe at any time and idempotent. While a run is active (in any thread) this is deferred until
    the last active run ends; a later run installs the patches again."""
    global _uninstall_pending
    with _lock:
        if _users:
            _uninstall_pending = True
        else:
            _uninstall_locked()


def installed() -> bool:
    """Whether the lasting patches are in (a deferred uninstall has not happened yet)."""
    return _patches is not None


def _install_locked() -> None:
    global _patches, _hooks_registered
    if _patches is not None:
        return
    patches = [_Patch(threading.Thread, "start", _thread_start)]
    if timeouts.HAS_TIMER:
        patches += [_Patch(signal, name, make) for name, make in _SIGNAL_REPLACEMENTS.items()
                    if hasattr(signal, name)]
    import _signal

    if hasattr(_signal, "pthread_sigmask"):
        patches.append(_Patch(_signal, "pthread_sigmask", _sigmask))
    import _thread

    patches.append(_Patch(_thread, "interrupt_main", _interrupt_main))
    _patches = tuple(patches)
    if not _hooks_registered:
        _hooks_registered = True
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_after_fork_in_child)
        import atexit

        atexit.register(uninstall)


def _uninstall_locked() -> None:
    global _patches, _uninstall_pending
    _uninstall_pending = False
    patches, _patches = _patches, None
    for patch in reversed(patches or ()):
        patch.remove()


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.Lock()  # another thread may have held it at the fork
    timeouts.reset_after_fork()
    interrupts.reset_after_fork()


# ------------------------------------------------------------------------------------------------
# Per-run routing of the standard streams and IPython's display publisher
# ------------------------------------------------------------------------------------------------

# (stream, its router) for each standard stream: a router is reused while the stream under it
# stays the same.
_stdout_pair: tuple[Any, Any] = (None, None)
_stderr_pair: tuple[Any, Any] = (None, None)
_stdin_pair: tuple[Any, Any] = (None, None)
_routed_shell: Any = None      # the shell whose display_pub (and ask_exit) we replaced
_publisher_before: Any = None  # and the publisher that was there
# sys.stdout/stderr/stdin when the first active run began
_streams_before: tuple[Any, Any, Any] = (None, None, None)


def _guarded_ask_exit(original: Callable) -> Callable:
    @functools.wraps(original)
    def ask_exit(*args: Any, **kwargs: Any) -> Any:
        if active_capture() is not None:
            raise SystemExit("exit()/quit() would shut the kernel down; python() does not allow it")
        return original(*args, **kwargs)

    ask_exit.__nbtools_guard__ = True  # type: ignore[attr-defined]
    return ask_exit


def enter(shell: Any) -> None:
    """A run begins: install the lasting patches if needed, route the streams (and `shell`'s
    display publisher) if this is the first active run."""
    global _users, _routed_shell, _publisher_before, _streams_before
    global _stdout_pair, _stderr_pair, _stdin_pair
    with _lock:
        if not _users:
            if _patches is None:
                _install_locked()
            stdout, stderr, stdin = sys.stdout, sys.stderr, sys.stdin
            _streams_before = (stdout, stderr, stdin)
            if stdin is not None and type(stdin) is not StdinRouter:
                if _stdin_pair[0] is not stdin:
                    _stdin_pair = (stdin, StdinRouter(stdin))
                sys.stdin = _stdin_pair[1]
            if type(stdout) is not StreamRouter:
                if _stdout_pair[0] is not stdout:
                    _stdout_pair = (stdout, StreamRouter("stdout", stdout))
                sys.stdout = _stdout_pair[1]
            if type(stderr) is not StreamRouter:
                if _stderr_pair[0] is not stderr:
                    _stderr_pair = (stderr, StreamRouter("stderr", stderr))
                sys.stderr = _stderr_pair[1]
        if shell is not None and _routed_shell is None:
            publisher = getattr(shell, "display_pub", None)
            if publisher is not None and type(publisher) is not DisplayRouter:
                shell.display_pub = DisplayRouter(publisher)
                _routed_shell, _publisher_before = shell, publisher
                if "ask_exit" not in vars(shell) and hasattr(shell, "ask_exit"):
                    shell.ask_exit = _guarded_ask_exit(shell.ask_exit)
        _users += 1
        if threading.get_ident() == timeouts.main_ident:
            interrupts.enter()


def leave() -> None:
    """A run ends: when it was the last active one, put the streams and the publisher back (and
    carry out an uninstall that was asked for meanwhile)."""
    global _users, _routed_shell, _publisher_before, _streams_before
    try:
        with _lock:
            _users -= 1
            if _users:
                return
            sys.stdout, sys.stderr, sys.stdin = _streams_before
            _streams_before = (None, None, None)
            if _routed_shell is not None:
                shell, publisher = _routed_shell, _publisher_before
                _routed_shell = _publisher_before = None
                if type(getattr(shell, "display_pub", None)) is DisplayRouter:
                    shell.display_pub = publisher
                if getattr(vars(shell).get("ask_exit"), "__nbtools_guard__", False):
                    del shell.ask_exit
            if _uninstall_pending:
                _uninstall_locked()
    finally:
        # Last: putting the mask back may deliver a person's interrupt that waited while the code
        # blocked SIGINT; it propagates from here, after everything else is back in place.
        if threading.get_ident() == timeouts.main_ident:
            interrupts.leave()
