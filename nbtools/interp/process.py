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
2d. Settings that outlive a run and could end the process later (the kernel dies after `python()`
   returned). From a run's context in this process (a forked child, such as `isolated=True`'s,
   passes everything through):
   - refused (RuntimeError): `resource.setrlimit`/`resource.prlimit` on this process lowering a
     limit or changing a hard one (a lowered hard limit cannot be raised again; a CPU limit below
     the CPU time used ends the process at once, a file size limit at its next large write;
     raising a soft limit passes); `faulthandler.dump_traceback_later(..., exit=True)` (it ends
     the process when it fires, run over or not); arming `ITIMER_PROF`/`ITIMER_VIRTUAL` while
     their signal has no handler (its default action ends the process).
   - put back when the last active run ends (`_Noted`): `sys.setrecursionlimit` (a limit above
     what the C stack holds turns a later deep recursion into a crash), `sys.setswitchinterval`,
     `faulthandler.dump_traceback_later` (cancelled) and `faulthandler.register` (unregistered);
     and, from a main-thread run, when the outermost one ends: the handler of every signal
     `signal.signal` changed (SIGINT through `interrupts`, SIGALRM under a deadline through
     `timeouts`), `signal.set_wakeup_fd`, and the interval timers armed where no deadline of ours
     keeps them (put back first, before the handlers, so a timer never fires into a default action).
   Not covered (no process-wide kill in them, or not reachable this way): `os.chdir`, `os.umask`,
   environment variables, the C functions reached through ctypes, a process's own `os.kill`.
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
            if _main_run():  # the handler there now comes back when the run ends
                _note_handler(original, signalnum)
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
            if which in _OTHER_TIMERS and _main_run():
                if seconds and not callable(signal.getsignal(_OTHER_TIMERS[which])):
                    raise RuntimeError(f"python(): signal.setitimer() would arm a timer whose signal "
                                       f"({signal.Signals(_OTHER_TIMERS[which]).name}) has no handler: its "
                                       "default action ends the whole process. Install a handler first")
                _note_timer(which)
            elif seconds and which in _OTHER_TIMERS:
                _code_timer("signal.setitimer()", _OTHER_TIMERS[which])
            return original(which, seconds, interval)
        timer = _code_timer("signal.setitimer()")
        if timer is None:
            if _main_run():  # a run without a deadline: the timer is the code's, put back when it ends
                _note_timer(which)
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
            if _main_run():
                _note_timer(timeouts.ITIMER_REAL)
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


# ------------------------------------------------------------------------------------------------
# Settings that outlive a run (manual 2d): refused, or noted and put back when the run ends
# ------------------------------------------------------------------------------------------------


class _Noted:
    """What runs changed that must be put back: key -> the function that puts it back (the first
    change of each wins: it saw the value from before the runs). `process` holds what any run may
    change (put back when the last active run ends); `main` what only a main-thread run can
    (signal handlers, wake-up fd, interval timers: put back when the outermost one ends)."""

    process: dict[Any, Callable[[], Any]] = {}
    main: dict[Any, Callable[[], Any]] = {}


_kernel_pid = os.getpid()  # the process whose settings the patches keep (not a forked child's)
_main_depth = 0            # main-thread runs active (nested ones count)


def _from_a_run(what: str) -> bool:
    """Whether the caller is a run's code (or a thread it started) in this process; raises when its
    run has ended (a thread of a timed-out run changing the process after its run returned)."""
    if current_capture.get() is None or os.getpid() != _kernel_pid:
        return False
    if active_capture() is None:
        raise RuntimeError(f"python(): {what} is not available after the run that started this code ended")
    return True


def _main_run() -> bool:
    return (threading.get_ident() == timeouts.main_ident and current_capture.get() is not None
            and active_capture() is not None and os.getpid() == _kernel_pid)


def _note(table: dict, key: Any, undo: Callable[[], Any]) -> None:
    with _lock:
        table.setdefault(key, undo)


def _restore(table: dict) -> None:
    """Put back what `table` noted, timers before handlers (`_ORDER`); failures are not the caller's."""
    noted = sorted(table.items(), key=lambda item: _ORDER.get(item[0][0], 9))
    table.clear()
    for _, undo in noted:
        try:
            undo()
        except Exception:  # e.g. a wake-up fd closed meanwhile: nothing to put back then
            pass


_ORDER = {"faulthandler.later": 0, "timer": 1, "faulthandler.register": 2, "signal": 3, "wakeup": 4}


def _limit_setter(original: Callable, *, with_pid: bool) -> Callable:
    """`resource.setrlimit` (`with_pid`: `resource.prlimit`): from a run, on this process, only
    raising a soft limit passes."""
    if with_pid:
        @functools.wraps(original)
        def prlimit(pid: int, resource_: int, *limits: Any) -> Any:
            if limits and pid in (0, os.getpid()) and _from_a_run("resource.prlimit()"):
                _check_limit("resource.prlimit()", resource_, limits[0])
            return original(pid, resource_, *limits)

        return prlimit

    @functools.wraps(original)
    def setrlimit(resource_: int, limits: Any) -> Any:
        if _from_a_run("resource.setrlimit()"):
            _check_limit("resource.setrlimit()", resource_, limits)
        return original(resource_, limits)

    return setrlimit


def _check_limit(what: str, resource_: int, limits: Any) -> None:
    import resource

    try:
        soft, hard = (int(each) for each in limits)
    except (TypeError, ValueError):
        return  # malformed: the function itself says so
    now_soft, now_hard = resource.getrlimit(resource_)

    def below(new: int, old: int) -> bool:
        return new != resource.RLIM_INFINITY and (old == resource.RLIM_INFINITY or new < old)

    if below(soft, now_soft) or hard != now_hard:
        name = next((key for key, value in vars(resource).items() if key.startswith("RLIMIT_") and value == resource_),
                    f"limit {resource_}")
        raise RuntimeError(f"python(): {what} may not lower a limit of this process or change a hard one "
                           f"({name}: {now_soft, now_hard} -> {soft, hard}): the process outlives "
                           "the run (a hard limit cannot be raised again; a CPU limit below the time used "
                           "ends it at once). Run the code with isolated=True to limit it there")


def _dump_later(original: Callable) -> Callable:
    @functools.wraps(original)
    def dump_traceback_later(timeout: float, *args: Any, **kwargs: Any) -> Any:
        if _from_a_run("faulthandler.dump_traceback_later()"):
            if kwargs.get("exit", args[2] if len(args) > 2 else False):  # (repeat, file, exit)
                raise RuntimeError("python(): faulthandler.dump_traceback_later(..., exit=True) would end the "
                                   "whole process when it fires, also after this run returned; time the work "
                                   "with time.monotonic(), or run it with isolated=True")
            import faulthandler

            _note(_Noted.process, ("faulthandler.later",), faulthandler.cancel_dump_traceback_later)
        return original(timeout, *args, **kwargs)

    return dump_traceback_later


def _fault_register(original: Callable) -> Callable:
    @functools.wraps(original)
    def register(signum: int, *args: Any, **kwargs: Any) -> Any:
        if _from_a_run("faulthandler.register()"):
            import faulthandler

            _note(_Noted.process, ("faulthandler.register", int(signum)),
                  functools.partial(faulthandler.unregister, signum))
        return original(signum, *args, **kwargs)

    return register


def _sys_setter(original: Callable, getter: Callable[[], Any], what: str) -> Callable:
    """`sys.setrecursionlimit`/`sys.setswitchinterval`: from a run, the value before its first
    change comes back when the last active run ends."""
    @functools.wraps(original)
    def setter(value: Any) -> Any:
        if _from_a_run(what):
            _note(_Noted.process, (what,), functools.partial(original, getter()))
        return original(value)

    return setter


def _wakeup_fd(original: Callable) -> Callable:
    @functools.wraps(original)
    def set_wakeup_fd(fd: int, **kwargs: Any) -> Any:
        before = original(fd, **kwargs)
        if _main_run():
            _note(_Noted.main, ("wakeup",), functools.partial(original, before))
        return before

    return set_wakeup_fd


def _note_handler(original: Callable, signalnum: Any) -> None:
    """A main-thread run changes the handler of `signalnum`: the one there now comes back when the
    outermost main-thread run ends (for SIGINT the handler there now is `interrupts`' wrapper, and
    `interrupts.leave` then puts the kernel's own back, after this)."""
    before = signal.getsignal(signalnum)
    if before is not None:  # None: a handler not set from Python, which cannot be put back
        _note(_Noted.main, ("signal", int(signalnum)), functools.partial(original, signalnum, before))


def _note_timer(which: int) -> None:
    """A main-thread run arms interval timer `which` where no deadline of ours keeps it: it is
    disarmed (its value before put back) when the outermost main-thread run ends."""
    before = _REAL_GETITIMER(which)
    _note(_Noted.main, ("timer", int(which)), functools.partial(_REAL_SETITIMER, which, *before))


_REAL_SETITIMER = getattr(signal, "setitimer", None)  # read at import: before our patches
_REAL_GETITIMER = getattr(signal, "getitimer", None)


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
    patches += _lasting_setting_patches()
    _patches = tuple(patches)
    if not _hooks_registered:
        _hooks_registered = True
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_after_fork_in_child)
        import atexit

        atexit.register(uninstall)


def _lasting_setting_patches() -> list[_Patch]:
    """The patches of manual 2d (settings that outlive a run)."""
    import faulthandler

    patches = [_Patch(sys, "setrecursionlimit", lambda original: _sys_setter(
                   original, sys.getrecursionlimit, "sys.setrecursionlimit()")),
               _Patch(sys, "setswitchinterval", lambda original: _sys_setter(
                   original, sys.getswitchinterval, "sys.setswitchinterval()")),
               _Patch(faulthandler, "dump_traceback_later", _dump_later)]
    if hasattr(faulthandler, "register"):
        patches.append(_Patch(faulthandler, "register", _fault_register))
    if hasattr(signal, "set_wakeup_fd"):
        patches.append(_Patch(signal, "set_wakeup_fd", _wakeup_fd))
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return patches
    patches.append(_Patch(resource, "setrlimit", lambda original: _limit_setter(original, with_pid=False)))
    if hasattr(resource, "prlimit"):
        patches.append(_Patch(resource, "prlimit", lambda original: _limit_setter(original, with_pid=True)))
    return patches


def _uninstall_locked() -> None:
    global _patches, _uninstall_pending
    _uninstall_pending = False
    patches, _patches = _patches, None
    for patch in reversed(patches or ()):
        patch.remove()


def _after_fork_in_child() -> None:
    global _lock, _main_depth
    _lock = threading.Lock()  # another thread may have held it at the fork
    _main_depth = 0
    _Noted.process.clear()  # the parent's to put back, not the child's: the child passes everything through
    _Noted.main.clear()
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
            global _main_depth
            _main_depth += 1
            interrupts.enter()


def leave() -> None:
    """A run ends: when it was the last active one, put the streams and the publisher back (and
    carry out an uninstall that was asked for meanwhile)."""
    global _users, _routed_shell, _publisher_before, _streams_before, _main_depth
    try:
        with _lock:
            _users -= 1
            if _users:
                return
            if _Noted.process:
                _restore(_Noted.process)
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
            _main_depth -= 1
            if not _main_depth and _Noted.main:
                _restore(_Noted.main)  # before interrupts: it puts the kernel's SIGINT handler back over ours
            interrupts.leave()
