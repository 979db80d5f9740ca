"""Deadlines: stop submitted code that runs too long, without ever killing the process.

- On the main thread: a `SIGALRM` interval timer (sub-second; interrupts `time.sleep`, regex
  backtracking and huge integer powers). For the outermost run our handler is installed and the
  timer armed; when that run ends the previous handler and timer are restored exactly (a timer
  someone else had armed keeps running, with its remaining time, and fires its own handler
  meanwhile). Nested runs keep the outer deadline: the timer is always set for the soonest one.
- Off the main thread: one shared watchdog thread raises the time-out in the late thread with
  `PyThreadState_SetAsyncExc` (Python code only: a C call such as `time.sleep` finishes first).
- In an `await`: `Waker` cancels the run's task at the deadline (the runner turns that into the
  time-out at the code's `await`).

The time-out is `TimeoutInterrupt` (as `result.Deadline`), a `BaseException`; if the code swallows
it anyway it is raised again every `REPEAT` seconds, and from then on escalated (`_escalate`): a
trace function raises it at the code's next bytecode, and a profile function turns that tracing
back on at every call or return, so a handler that swallows it (`contextlib.suppress(BaseException)`,
an `__exit__` returning True, `return` in a `finally`) cannot run far enough to loop. The run's
thread's trace and profile functions are put back when the run ends. On the main thread the watchdog is the backstop: when SIGALRM has
not stopped a run `BACKSTOP` seconds after its deadline (the code blocked the signal, replaced the
handler or cancelled the timer through `_signal`, reloaded the signal module), the watchdog raises
the time-out in the main thread the way it does in other threads. What no in-process means stops:
a single C call that does not return (`time.sleep` with SIGALRM blocked, `os.system('sleep 9')`):
the run returns when that call returns, reported as timed out. While a main-thread run is active the code's own `SIGALRM` handler
and timer are kept beside ours in `code_timer` (the `code_*` functions below are what the signal
module's functions do for the code then; `process.py` puts them in front of the signal module), so
code calling `signal.alarm(0)` cannot disarm the time-out; they end with the run.

Our own calls use `_signal`'s C functions directly: they never go through the replaced ones.
"""

from __future__ import annotations

import math
import os
import signal
import sys
import threading
import time
from typing import Any

from . import interrupts
from .result import Deadline, TimeoutInterrupt

REPEAT = 0.01     # a swallowed time-out is raised again this often (seconds)
BACKSTOP = 0.1    # main thread: the watchdog steps in when SIGALRM has not stopped a run by then
_RETRY = 0.0005   # a time-out due while our own bookkeeping runs is retried this soon
_SLACK = 1e-4     # timer and clock may disagree by a few microseconds
_LONGEST_TIMER = 1e6  # setitimer overflows on absurd values; the handler re-arms when it fires early


class Run:
    """One deadline being enforced. `active` is true only while the submitted code itself runs,
    so a time-out is never raised inside the runner's bookkeeping; `fired` records that the
    time-out was raised for this run (which tells nested runs whose time-out it is)."""

    # No __slots__: the class attributes below are the defaults, so a run pays only for the two
    # attributes every run sets (most runs end before anything else changes).
    fired = False
    active = False
    thread_id = 0
    on_main = False
    watch_at = math.inf   # when the watchdog acts (the deadline, or the main-thread backstop)
    watched = False       # known to the watchdog
    async_fired = False   # the watchdog raised the time-out in the run's thread
    tracing = False       # escalated: our trace function is installed in the run's thread
    repeat = REPEAT       # a swallowed time-out is raised again this often (`started.py`: slower)
    saved_trace: Any = None  # the trace and profile functions that were there before

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout


class _ForeignTimer:
    """An interval timer with its handler that is not ours: someone else's, armed before our
    outermost run, or the code's own (`code_timer`)."""

    __slots__ = ("handler", "deadline", "interval")

    def __init__(self, handler: Any, deadline: float, interval: float) -> None:
        self.handler = handler
        self.deadline = deadline
        self.interval = interval


# The C functions behind the signal module: never the replacements `process.py` installs, and
# `signal.signal`/`getsignal` without the enum conversions (~2 us a call).
try:
    from _signal import getsignal as _get_handler, signal as _set_handler
except ImportError:  # pragma: no cover - other Python implementations
    _get_handler, _set_handler = signal.getsignal, signal.signal
_get_ident = threading.get_ident
HAS_TIMER = hasattr(signal, "setitimer") and hasattr(signal, "SIGALRM")
if HAS_TIMER:
    try:
        from _signal import setitimer as _set_timer
    except ImportError:  # pragma: no cover - other Python implementations
        _set_timer = signal.setitimer
    ITIMER_REAL = signal.ITIMER_REAL
    SIGALRM = int(signal.SIGALRM)
    main_ident: int | None = threading.main_thread().ident
else:  # no interval timers (Windows): the watchdog serves every thread
    main_ident = None


# ------------------------------------------------------------------------------------------------
# The main thread: SIGALRM
# ------------------------------------------------------------------------------------------------

_main_runs: list[Run] = []         # active runs on the main thread, outermost first
_previous_handler: Any = None      # SIGALRM handler to restore when the outermost run ends
_foreign: _ForeignTimer | None = None
# The code's own SIGALRM handler and timer while a main-thread run is active (None otherwise).
code_timer: _ForeignTimer | None = None
_own_alarm = _ForeignTimer(None, math.inf, 0.0)  # reused: code_timer while a run is active


def _on_alarm(signum: int, frame: Any) -> None:
    runs = _main_runs
    if not runs:
        return  # a tick that arrived after our last run ended
    now = time.monotonic()
    due = next((run for run in runs if run.deadline <= now + _SLACK), None)
    if due is not None:
        if runs[-1].active:
            if due.fired:  # raised before and swallowed: every bytecode raises it from now on
                _escalate(due, frame)
            due.fired = True
            due.deadline = now + REPEAT
            _rearm(now)
            raise Deadline(f"the code ran for more than {due.timeout:g} s")
        # Inside our own set-up or clean-up (or a suspended async run): try again in a moment.
        _set_timer(ITIMER_REAL, _RETRY)
        return
    foreign = _foreign
    if foreign is not None and foreign.deadline <= now + _SLACK:
        foreign.deadline = now + foreign.interval if foreign.interval else math.inf
        _rearm(now)
        if callable(foreign.handler):
            foreign.handler(signum, frame)
        return
    own = code_timer
    if own is not None and own.deadline <= now + _SLACK:
        if not runs[-1].active:  # the code's handler runs in the code, never in our clean-up
            _set_timer(ITIMER_REAL, _RETRY)
            return
        own.deadline = now + own.interval if own.interval else math.inf
        _rearm(now)
        if callable(own.handler):  # SIG_DFL would kill the process; a run never does that
            own.handler(signum, frame)
        return
    _rearm(now)


def _next_deadline(skip: Run | None = None) -> float:
    soonest = _foreign.deadline if _foreign is not None else math.inf
    if code_timer is not None and code_timer.deadline < soonest:
        soonest = code_timer.deadline
    for run in _main_runs:
        if run is not skip and run.deadline < soonest:
            soonest = run.deadline
    return soonest


def _rearm(now: float, skip: Run | None = None) -> None:
    soonest = _next_deadline(skip)
    if soonest < math.inf:
        _set_timer(ITIMER_REAL, min(max(soonest - now, 1e-6), _LONGEST_TIMER))


def _arm_main(run: Run) -> bool:
    """Enforce `run` with SIGALRM. False when signals cannot be used here (caller falls back)."""
    global _previous_handler, _foreign, code_timer
    runs = _main_runs
    remaining = run.deadline - time.monotonic()
    remaining = _LONGEST_TIMER if remaining > _LONGEST_TIMER else 1e-6 if remaining < 1e-6 else remaining
    if runs:  # nested: our handler is installed; make sure the timer fires by this deadline
        soonest = _next_deadline()
        runs.append(run)
        if run.deadline < soonest:
            _set_timer(ITIMER_REAL, remaining)
        _watch_main(run)
        return True
    if _get_handler(SIGALRM) is None:
        return False  # a handler installed from C: Python could not put it back afterwards
    runs.append(run)
    try:
        previous = _set_handler(SIGALRM, _on_alarm)
    except ValueError:  # not the main thread of the main interpreter after all
        runs.pop()
        return False
    _previous_handler = previous
    # From here until the outermost run ends, the code's SIGALRM settings are kept beside ours;
    # it starts out seeing the handler that was there before and no timer.
    timer = _own_alarm
    timer.handler, timer.deadline, timer.interval = previous, math.inf, 0.0
    code_timer = timer
    delay, interval = _set_timer(ITIMER_REAL, remaining)
    if delay:  # someone else's timer was running: keep honouring it, restore it afterwards
        _foreign = _ForeignTimer(previous, time.monotonic() + delay, interval)
        if delay < remaining:
            _set_timer(ITIMER_REAL, delay)
    _watch_main(run)
    return True


# False in the child process of an isolated run: the parent kills the child when its deadline
# is past, which is the backstop there (and starting the watchdog thread would cost each run ~5 ms).
main_backstop = True


def _watch_main(run: Run) -> None:
    """The watchdog as the backstop for a main-thread run (in case SIGALRM cannot reach it).

    The watchdog reads `_main_runs` itself, so a main-thread run costs it nothing to add or remove;
    it is only woken when it would sleep past this run's backstop (short time-outs)."""
    run.on_main = True
    if not main_backstop:
        return
    run.watch_at = run.deadline + BACKSTOP
    watchdog = _watchdog
    if watchdog.thread is None or run.watch_at < watchdog.wake_at:
        watchdog.wake()


def _disarm_main(run: Run) -> None:
    global _previous_handler, _foreign, code_timer
    runs = _main_runs
    if len(runs) > 1:
        # Nested: re-arm for the remaining runs first, leave the stack last, so an outer time-out
        # arriving meanwhile is deferred (this run is inactive), not raised inside this clean-up.
        _rearm(time.monotonic(), skip=run)
        runs.remove(run)
        return
    runs.clear()  # from here on a late tick is ignored by _on_alarm
    _set_timer(ITIMER_REAL, 0)
    if run.async_fired or interrupts.mask_changed():
        # SIGALRM may be blocked: let a pending tick reach our handler (which ignores it now)
        # before the previous disposition, perhaps the default that ends the process, is back.
        interrupts.unblock_alarm()
    code_timer = None  # what the code set ends with the run; the signal functions pass through
    _set_handler(SIGALRM, _previous_handler)
    foreign = _foreign
    if foreign is not None:
        _foreign = None
        if foreign.deadline < math.inf:
            _set_timer(ITIMER_REAL,
                       min(max(foreign.deadline - time.monotonic(), 1e-6), _LONGEST_TIMER),
                       foreign.interval)
    _previous_handler = None


# ------------------------------------------------------------------------------------------------
# What the signal module's SIGALRM functions do for the code while `code_timer` is set
# ------------------------------------------------------------------------------------------------
# A model guarding its work with `signal.alarm(5)` is common: with the real functions it would
# replace our handler and cancel our timer, and the run could then go on forever.


def _as_code_sees_it(handler: Any) -> Any:
    """A handler as `signal.getsignal` shows it (SIG_DFL/SIG_IGN as `signal.Handlers`)."""
    return signal.Handlers(handler) if isinstance(handler, int) else handler


def _timer_state(timer: _ForeignTimer) -> tuple[float, float]:
    if timer.deadline == math.inf:
        return 0.0, 0.0
    return max(timer.deadline - time.monotonic(), 1e-6), timer.interval


def code_signal(timer: _ForeignTimer, handler: Any) -> Any:
    """`signal.signal(SIGALRM, handler)` for the code: kept beside ours; returns the previous one."""
    if not callable(handler) and handler not in (signal.SIG_DFL, signal.SIG_IGN):
        raise TypeError("signal handler must be signal.SIG_IGN, signal.SIG_DFL, or a callable object")
    previous, timer.handler = timer.handler, handler
    return _as_code_sees_it(previous)


def code_getsignal(timer: _ForeignTimer) -> Any:
    return _as_code_sees_it(timer.handler)


def code_setitimer(timer: _ForeignTimer, seconds: float, interval: float = 0.0) -> tuple[float, float]:
    """`signal.setitimer(ITIMER_REAL, ...)` for the code: our timer fires for both deadlines."""
    seconds, interval = float(seconds), float(interval)
    if seconds < 0 or interval < 0:
        raise signal.ItimerError(22, "Invalid argument")
    previous = _timer_state(timer)
    now = time.monotonic()
    timer.deadline = now + seconds if seconds > 0 else math.inf
    timer.interval = interval if seconds > 0 else 0.0
    _rearm(now)
    return previous


def code_getitimer(timer: _ForeignTimer) -> tuple[float, float]:
    return _timer_state(timer)


def code_alarm(timer: _ForeignTimer, seconds: int) -> int:
    """`signal.alarm(seconds)` for the code: whole seconds left on the previous alarm, as the real one."""
    import operator

    remaining, _ = code_setitimer(timer, operator.index(seconds))
    return max(round(remaining), 1) if remaining else 0


# ------------------------------------------------------------------------------------------------
# Other threads: the watchdog
# ------------------------------------------------------------------------------------------------


class _Watchdog:
    """One thread that raises the time-out in threads whose runs are late (threads cannot use
    signals). It exits after a while without work and is started again when needed."""

    def __init__(self) -> None:
        self.condition = threading.Condition(threading.Lock())
        self.runs: list[Run] = []
        self.thread: threading.Thread | None = None
        self.raise_in: Any = None
        self.wake_at = math.inf  # when the thread wakes next (add() wakes it sooner if needed)

    IDLE_EXIT = 30.0

    def add(self, run: Run) -> None:
        if self.raise_in is None:
            self.raise_in = _async_raiser()
        with self.condition:
            self.runs.append(run)
            run.watched = True
            if self.thread is None:
                self._start()
            elif run.watch_at < self.wake_at:  # it sleeps past this run's time: wake it to re-plan
                self.condition.notify()

    def wake(self) -> None:
        """Make the watchdog plan again (and start it if it is not running)."""
        if self.raise_in is None:
            self.raise_in = _async_raiser()
        with self.condition:
            if self.thread is None:
                self._start()
            else:
                self.condition.notify()

    def _start(self) -> None:
        import contextvars

        self.wake_at = math.inf
        self.thread = threading.Thread(target=self._watch, name="nbtools-interp-watchdog", daemon=True)
        # Started from an empty context: a thread started inside a run would otherwise be tied to
        # that run's capture (process.py's Thread.start) and keep it alive as long as it lives.
        contextvars.Context().run(self.thread.start)

    def remove(self, run: Run) -> None:
        """Stop watching `run`; drop a time-out that was raised for it but not yet delivered."""
        while True:
            try:
                with self.condition:  # a raise the watchdog is making for this run completes first
                    run.active = False
                    if run.watched:
                        run.watched = False
                        self.runs.remove(run)
                if run.async_fired:
                    # One still on its way arrives here and is caught below. Not cleared with
                    # `PyThreadState_SetAsyncExc(id, NULL)`: in CPython 3.11 that leaves the
                    # interpreter's "async exception pending" flag set for good, so every call in
                    # every thread then takes the slow path (~12%), and a traced function entry
                    # spins until another async exception arrives (an escalated run overran by
                    # the watchdog's BACKSTOP, not REPEAT).
                    run.async_fired = False
                    _let_async_exception_arrive()
                return
            except TimeoutInterrupt:
                continue  # delivered during this clean-up: the run is over; finish cleaning up

    def _watch(self) -> None:
        with self.condition:
            while True:
                self.wake_at = math.inf  # while planning, a new run wakes it again (see _watch_main)
                now = time.monotonic()
                soonest = math.inf
                main_runs = list(_main_runs) if main_backstop else []
                for run in self.runs + main_runs:
                    if run.watch_at <= now:
                        if run.active and (not run.on_main or _innermost_main_active()):
                            if run.fired:  # swallowed before: escalate in that thread
                                _escalations.setdefault(run.thread_id, run)
                            kind = _Escalating if run.fired else Deadline
                            run.fired = run.async_fired = True
                            self.raise_in(run.thread_id, kind)
                        run.watch_at = now + run.repeat
                    soonest = min(soonest, run.watch_at)
                if soonest == math.inf:
                    self.wake_at = now + self.IDLE_EXIT
                    if not self.condition.wait(self.IDLE_EXIT) and not self.runs and not _main_runs:
                        self.thread = None
                        return
                else:
                    self.wake_at = soonest
                    self.condition.wait(soonest - now)


def _let_async_exception_arrive() -> None:
    """A Python call checks for pending asynchronous exceptions on entry: one raised for this
    thread is raised here."""


def _innermost_main_active() -> bool:
    try:
        return _main_runs[-1].active
    except IndexError:
        return False


# ------------------------------------------------------------------------------------------------
# Escalation: a time-out the code keeps swallowing
# ------------------------------------------------------------------------------------------------

# Frames of the runner: escalation traces the code's frames up to (not into) the runner's.
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
# (`process.py` holds the frame that runs a started thread's target: escalation stops below it too)
_RUNNER_FILES = (_PACKAGE_DIR + "execute.py", _PACKAGE_DIR + "process.py")
_escalations: dict[int, Run] = {}  # thread id -> run being escalated there


class _Escalating(Deadline):
    """The time-out of a run that swallowed it before. The watchdog raises it as a class in the
    run's thread, so Python instantiates it there, which starts the escalation (`_escalate`)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        run = _escalations.get(_get_ident())
        if run is not None and run.active and not run.tracing:
            _escalate(run, sys._getframe(1))


def _escalate(run: Run, frame: Any) -> None:
    """In `run`'s thread: from now until the run ends, the code cannot run a handler that swallows
    the time-out.

    1. A trace function (on the frames from `frame` up to the runner, and every frame they enter)
       raises `_Escalating` at the code's next bytecode.
    2. Python turns tracing off when a trace function raises. A profile function (which never
       raises, so it stays on) turns it on again at the next call or return: the first bytecode
       of a handler that calls anything (`suppress.__exit__`, a function with `return` in its
       `finally`, a handler calling `sys.settrace(None)`) raises again before it can return. An
       `except` clause that calls nothing is covered by the guard in front of every handler
       (`compiling.py`), and every `REPEAT` seconds the timer or the watchdog raises again anyway.
    """
    thread_id = run.thread_id
    _escalations[thread_id] = run
    if not run.tracing:
        run.saved_trace, run.tracing = (sys.gettrace(), sys.getprofile()), True

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if not run.active:
            return None
        frame.f_trace_opcodes = True
        raise _Escalating(f"the code ran for more than {run.timeout:g} s")

    def rearm(frame: Any) -> None:
        sys.settrace(tracer)
        while frame is not None and frame.f_code.co_filename not in _RUNNER_FILES:
            frame.f_trace, frame.f_trace_opcodes = tracer, True
            frame = frame.f_back

    def profiler(frame: Any, event: str, arg: Any) -> None:
        if run.active and sys.gettrace() is not tracer:
            rearm(frame)

    _monitor(True)  # first: once tracing is on, the next call (this one) would raise in the tracer
    sys.setprofile(profiler)
    rearm(frame)


# Python 3.12+ builds `sys.settrace` on `sys.monitoring`: once a trace function has raised, tracing
# stays off for that frame, and a swallowing handler that calls nothing (`except BaseException: pass`
# in code `compiling.py` did not guard, such as a shared variable's `__repr__`) loops for good. A
# `sys.monitoring` tool whose LINE and JUMP callbacks raise stays on after raising: it is the
# escalation there, for the escalating threads only and never in this package's own frames (their
# clean-up must run).
_MONITOR_TOOL: int | None = None


def _monitored(code: Any, *_: Any) -> None:
    run = _escalations.get(_get_ident())
    if run is not None and run.active and not code.co_filename.startswith(_PACKAGE_DIR):
        raise _Escalating(f"the code ran for more than {run.timeout:g} s")


def _monitor(on: bool) -> None:
    """Turn the escalation's `sys.monitoring` tool on (a run started escalating) or off (no run is
    escalating any more). Without `sys.monitoring` (3.11) or a free tool id: the trace function alone."""
    global _MONITOR_TOOL
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is None:
        return
    events = monitoring.events
    if on and _MONITOR_TOOL is None:
        for tool in (4, 3):  # ids no debugger, coverage tool or profiler claims by convention
            if monitoring.get_tool(tool) is None:
                monitoring.use_tool_id(tool, "nbtools time-out escalation")
                _MONITOR_TOOL = tool
                break
        else:
            return
        monitoring.register_callback(tool, events.LINE, _monitored)
        monitoring.register_callback(tool, events.JUMP, _monitored)
        monitoring.set_events(tool, events.LINE | events.JUMP)
    elif not on and _MONITOR_TOOL is not None and not _escalations:
        tool, _MONITOR_TOOL = _MONITOR_TOOL, None
        monitoring.set_events(tool, 0)
        monitoring.register_callback(tool, events.LINE, None)
        monitoring.register_callback(tool, events.JUMP, None)
        monitoring.free_tool_id(tool)


def _async_raiser() -> Any:
    import ctypes

    set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc

    def raise_in(thread_id: int, exception_type: type[BaseException] | None) -> None:
        # None clears a pending exception (NULL pointer).
        set_async_exc(ctypes.c_ulong(thread_id),
                      ctypes.py_object(exception_type) if exception_type is not None else None)

    return raise_in


_watchdog = _Watchdog()


# ------------------------------------------------------------------------------------------------
# The runner's interface
# ------------------------------------------------------------------------------------------------


def arm(run: Run) -> None:
    """Start enforcing `run`'s deadline in the calling thread."""
    thread_id = run.thread_id = _get_ident()
    if thread_id != main_ident or not _arm_main(run):
        run.watch_at = run.deadline
        _watchdog.add(run)


def call_with_deadline(seconds: float, fn: Any, *args: Any) -> Any:
    """`fn(*args)` in the calling thread, stopped by `Deadline` (a `TimeoutInterrupt`) after `seconds`
    as a run's code is (escalated if swallowed); for work on values the code left behind (a shared
    variable's preview: `previews.py`)."""
    run = Run(seconds)
    arm(run)
    try:
        run.active = True
        return fn(*args)
    finally:
        run.active = False  # first: no time-out is raised after this
        disarm(run)


def watch(run: Run) -> None:
    """Have the watchdog raise the time-out in `run.thread_id` from `run.watch_at` on (a thread of a
    timed-out run: `started.py`)."""
    _watchdog.add(run)


def deactivate(run: Run) -> None:
    """The code stopped running (the runner calls this first thing after it, in a `finally`): no
    time-out is raised for `run` from now on, and one raised but not yet delivered is dropped."""
    run.active = False
    if run.watched:
        _watchdog.remove(run)
    elif run.on_main and (run.async_fired or time.monotonic() >= run.watch_at):
        # The watchdog acts only once `watch_at` has passed and reads `active` after that: before
        # it, nothing can be on its way. After it, wait for a raise in progress, then drop it.
        _watchdog.remove(run)
    if run.tracing:
        run.tracing = False
        _escalations.pop(run.thread_id, None)
        trace, profile = run.saved_trace
        sys.setprofile(profile)
        sys.settrace(trace)
        run.saved_trace = None
        _monitor(False)


def disarm(run: Run) -> None:
    """Stop enforcing `run`'s deadline (the main thread's handler and timer are restored)."""
    deactivate(run)
    if run.on_main:
        run.on_main = False
        _disarm_main(run)


class Waker:
    """Wakes a run suspended in an `await` at its deadline (and again every `REPEAT` seconds if
    the code swallows the time-out) by cancelling its task; the runner turns that cancellation
    into `TimeoutInterrupt`."""

    __slots__ = ("run", "task", "handle")

    def __init__(self, run: Run, task: Any) -> None:
        self.run, self.task = run, task
        self.handle = task.get_loop().call_later(run.timeout, self._wake)

    def _wake(self) -> None:
        self.run.fired = True
        self.task.cancel()
        self.handle = self.task.get_loop().call_later(REPEAT, self._wake)

    def stop(self) -> None:
        self.handle.cancel()


def check_timeout(timeout: Any) -> float | None:
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


def reset_after_fork() -> None:
    """In the child of a fork (called by `process.py`'s at-fork hook): only the forking thread
    exists there, so no watchdog and no main-thread runs; the forking thread is the main one."""
    global _watchdog, main_ident
    _watchdog = _Watchdog()
    _main_runs.clear()
    _escalations.clear()
    if main_ident is not None:
        main_ident = _get_ident()
