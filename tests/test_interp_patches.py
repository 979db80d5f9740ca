"""The process-wide patches of `nbtools.interp` (`threading.Thread.start`, so the output of threads
a run starts is captured; `signal`'s functions, so code cannot disarm its time-out): put in at the
first run, taken out by `process.uninstall()` and at exit, and living with other libraries'
wrappers put in before or over them. Against this process's real `threading` and `signal`
modules, and a child Python for what happens at import and at exit.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import threading
from typing import Callable

import pytest

from test_interp_timeouts import timed

from nbtools.interp import python, run_code

pytestmark = pytest.mark.usefixtures("signals_left_as_found")


# --------------------------------------------------------------------------------------------
# Process-wide patches: installed at the first run, taken out by process.uninstall()
# --------------------------------------------------------------------------------------------

SIGNAL_FUNCTIONS = ("signal", "getsignal", "setitimer", "getitimer", "alarm")
THREAD_PRINTS = ("import threading\nworker = threading.Thread(target=print, args=('from a thread',))\n"
                 "worker.start(); worker.join()")


@pytest.fixture
def no_patches():
    """Starts with nbtools' lasting patches taken out; afterwards puts back exactly what was there
    before the test (also what a test's own wrappers replaced), then the next run reinstalls."""
    from nbtools.interp import process

    process.uninstall()
    saved_start = vars(threading.Thread)["start"]
    saved_signal = {name: vars(signal)[name] for name in SIGNAL_FUNCTIONS}
    try:
        yield process
    finally:
        process.uninstall()
        threading.Thread.start = saved_start
        for name, function in saved_signal.items():
            setattr(signal, name, function)


def recording(calls: list, name: str, function: Callable) -> Callable:
    """Another library's wrapper over `function` (as a class attribute, a method): notes `name` in
    `calls`, then passes the call on."""
    def wrapper(*args, **kwargs):
        calls.append(name)
        return function(*args, **kwargs)

    return wrapper


def test_uninstall_puts_the_originals_back(no_patches):
    import _signal

    process = no_patches
    assert not process.installed()
    originals = {"start": threading.Thread.start, **{name: getattr(signal, name) for name in SIGNAL_FUNCTIONS}}
    assert originals["start"].__code__.co_filename == threading.__file__
    assert originals["alarm"] is _signal.alarm and originals["setitimer"] is _signal.setitimer
    assert originals["signal"].__code__.co_filename == signal.__file__

    assert python("1 + 1", {}, timeout=5) == 2
    assert process.installed()
    patched = {"start": threading.Thread.start, **{name: getattr(signal, name) for name in SIGNAL_FUNCTIONS}}
    for name, function in patched.items():
        assert function is not originals[name] and function.__wrapped__ is originals[name], name

    process.uninstall()
    process.uninstall()  # idempotent
    assert not process.installed()
    assert threading.Thread.start is originals["start"]
    assert {name: getattr(signal, name) for name in SIGNAL_FUNCTIONS} == \
        {name: originals[name] for name in SIGNAL_FUNCTIONS}


def test_our_patches_pass_through_to_wrappers_installed_before_them(no_patches):
    # The originals used to be read when nbtools was imported: a wrapper another library put in
    # later kept our Thread.start out entirely, and our signal functions overwrote its wrapper.
    process = no_patches
    calls = []
    their_start = recording(calls, "start", threading.Thread.start)
    their_getitimer = recording(calls, "getitimer", signal.getitimer)
    threading.Thread.start, signal.getitimer = their_start, their_getitimer
    result = run_code(THREAD_PRINTS, {}, timeout=5)
    assert result.stdout == "from a thread\n"  # our patch is in front of theirs and works
    assert threading.Thread.start.__wrapped__ is their_start and signal.getitimer.__wrapped__ is their_getitimer
    assert calls == ["start"]
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0) and calls == ["start", "getitimer"]
    process.uninstall()
    assert threading.Thread.start is their_start and signal.getitimer is their_getitimer


def test_a_wrapper_put_over_ours_survives_uninstall(no_patches):
    import _signal

    process = no_patches
    assert python("1", {}, timeout=5) == 1
    calls = []
    their_start = recording(calls, "start", threading.Thread.start)
    their_alarm = recording(calls, "alarm", signal.alarm)
    threading.Thread.start, signal.alarm = their_start, their_alarm
    process.uninstall()
    assert threading.Thread.start is their_start and signal.alarm is their_alarm  # not clobbered
    assert signal.setitimer is _signal.setitimer  # what was still ours is back to the original
    # Ours, left under theirs, passes through.
    assert signal.alarm(0) == 0
    outside = threading.Thread(target=lambda: None)
    outside.start()
    outside.join()
    assert calls == ["alarm", "start"] and "run" not in vars(outside)
    # Installing again goes in front of their wrapper (two of ours in the chain): no loop, a
    # thread's output is captured once, and the code's own alarm still cannot disarm the time-out.
    result = run_code(THREAD_PRINTS, {}, timeout=5)
    assert result.stdout == "from a thread\n" and threading.Thread.start.__wrapped__ is their_start
    disarming = "import signal\nsignal.alarm(0)\nsignal.setitimer(signal.ITIMER_REAL, 0)\nwhile True: pass"
    assert run_code(disarming, {}, timeout=0.1).timed_out


def test_install_again_after_uninstall(no_patches):
    process = no_patches
    # The code ignores SIGALRM and cancels every alarm: only our reinstalled signal functions
    # keep the time-out armed.
    code = ("import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nsignal.alarm(0)\n"
            "while True: pass")
    for _ in range(2):
        result, elapsed = timed(run_code, code, {}, timeout=0.1)
        assert result.timed_out and elapsed < 2 and process.installed()
        assert run_code(THREAD_PRINTS, {}, timeout=5).stdout == "from a thread\n"
        process.uninstall()
        assert not process.installed()
    assert signal.getsignal(signal.SIGALRM) == signal.SIG_DFL  # what the code set ended with the run


def test_uninstall_during_a_run_waits_for_the_run_to_end(no_patches):
    process = no_patches
    code = ("process.uninstall()\nstill_installed = process.installed()\n" + THREAD_PRINTS +
            "\nstill_installed")
    original_start = vars(threading.Thread)["start"]
    result = run_code(code, {"process": process}, timeout=5)
    assert result.value is True and result.stdout == "from a thread\n"
    assert not process.installed() and vars(threading.Thread)["start"] is original_start


def test_patches_are_put_in_at_the_first_run_and_taken_out_at_exit():
    script = textwrap.dedent("""\
        import _signal, atexit, signal, threading
        start = threading.Thread.start
        # Registered before nbtools' own exit call, so it runs after it.
        atexit.register(lambda: print("at exit:", threading.Thread.start is start, signal.alarm is _signal.alarm))
        from nbtools.interp import process, python
        print("imported:", process.installed(), threading.Thread.start is start, signal.alarm is _signal.alarm)
        process.uninstall()  # nothing installed yet: does nothing
        python("1", {}, timeout=5)
        print("installed:", process.installed(), threading.Thread.start is start, signal.alarm is _signal.alarm)
        """)
    finished = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert finished.stdout.splitlines() == ["imported: False True True", "installed: True False False",
                                            "at exit: True True"], finished.stderr
