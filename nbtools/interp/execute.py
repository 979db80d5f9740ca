"""Running code: `run_code`/`run_code_async` tie the steps together; `run_for_model` and
`run_for_model_async` are what the model-facing tools `python`/`python_async` (`pytool.py`) run:
the same, and the result formatted for the model.

One run, in order:
1. Check the arguments and pick the namespaces (the kernel's `user_ns` inside IPython, else the
   caller's globals).
2. Begin (`_Execution.begin`): register the source in `linecache` under a unique name (tracebacks
   show its lines, `inspect.getsource` works on functions it defines), make its `Capture`, enter
   the process-wide routing (`process.enter`, which installs the lasting patches at the first
   run) and make the capture current in this context.
3. Compile (`compiling.py`), then execute under the deadline (`timeouts.arm`/`disarm`); an async
   run steps through the code's coroutine, each step under the deadline.
4. Produce, still under the deadline (`_Execution.produce`): what may run the code's own methods
   (the error's text, and for `python()` the value as the model gets it, `shown.py`) is made while
   the deadline holds, so `__str__`/`__repr__` that never end, or a huge value, time out like the
   code itself.
5. Finish: close the capture, leave the routing, and build the `ExecResult` (errors as a short
   traceback, `tracebacks.py`).
"""

from __future__ import annotations

import ast
import functools
import linecache
import re
import sys
import threading
import time
from typing import Any, Mapping

from . import process, timeouts
from .capture import Capture, active_capture, claim_for_child, current_capture, ipython_shell
from .compiling import Compiled, compile_source, defines_code, new_filename
from .isolated import _ReprOnly, run_isolated
from .result import Answer, Deadline, ExecResult, RealInterrupt, TimeoutInterrupt, join_lines, quiet_result
from .shown import VALUE_CHARS, bounded_repr, model_value
from .started import stop as stop_threads
from .timeouts import Run, Waker, arm, check_timeout, disarm
from .tracebacks import format_error

_INTERNAL_MODULES = ("nbtools", "threading", "asyncio", "concurrent", "contextvars", "functools")


def _default_namespace(frame: Any) -> tuple[dict, Mapping | None]:
    """The kernel's user namespace inside IPython, else the globals of the first frame from
    `frame` outwards that is outside nbtools (and outside the thread/async machinery)."""
    shell = ipython_shell() if "IPython" in sys.modules else None
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
    compiled: Compiled | None = None
    run: Run | None = None
    value: Any = None
    exception: BaseException | None = None
    timed_out = False
    keep_lines = False  # keep the source in linecache even though nothing defined there survives
    present = False     # python(): make the value as the model gets it, under the deadline
    error: str | None = None      # the error's text, made under the deadline
    shown: Any = None             # python(): the value as the model gets it (`shown.model_value`)
    shown_repr: str | None = None  # python(): its repr when the run printed (`shown.bounded_repr`)
    result: ExecResult

    def __init__(self, source: str, glb: dict, loc: Mapping | None, timeout: float | None) -> None:
        if not isinstance(source, str):
            raise TypeError(f"code must be a str of Python source, got {type(source).__name__}")
        self.source = source
        self.glb = glb
        self.loc = loc
        self.timeout = timeout
        self.filename = new_filename()

    def begin(self) -> None:
        self.started = time.perf_counter()
        linecache.cache[self.filename] = (len(self.source), None,
                                          self.source.splitlines(True), self.filename)
        self.added_builtins = "__builtins__" not in self.glb
        self.capture = Capture()
        claim_for_child(self.capture)
        self.shell = ipython_shell() if "IPython" in sys.modules else None
        process.enter(self.shell)
        self.token = current_capture.set(self.capture)

    def compile(self, flags: int = 0) -> bool:
        try:
            self.compiled = compile_source(self.source, self.filename, flags)
            return True
        except (SyntaxError, ValueError) as exc:  # ValueError: NUL bytes in the source
            self.exception = exc
            return False

    def caught(self, exc: BaseException) -> None:
        """Record an exception from the code; re-raise what must not become a tool result: a
        person's interrupt, and an enclosing run's time-out. `KeyboardInterrupt`,
        `TimeoutInterrupt`, `SystemExit` the code raises itself are errors like any other."""
        if isinstance(exc, BaseExceptionGroup):  # `except*` wraps what it lets through in a group
            exc = _leaf(exc, RealInterrupt) or _leaf(exc, Deadline) or exc
        if isinstance(exc, RealInterrupt):
            self.keep_lines = True  # the traceback a person sees shows these lines
            raise exc  # a person interrupting the kernel
        if isinstance(exc, TimeoutInterrupt) and self.run is not None and self.run.fired:
            self.timed_out = True
        elif isinstance(exc, Deadline):
            self.keep_lines = True  # the enclosing run's traceback passes through this code
            raise exc  # an enclosing run's deadline: let it unwind to that run
        self.exception = exc

    def produce(self, under: Any) -> None:
        """Make what may run the code's own methods, each call through `under(fn, *args)`, which
        runs it under the run's deadline (a `Deadline` it raises is the caller's to catch)."""
        if self.timed_out:
            return  # a time-out's text runs no code of the run's
        if self.exception is not None:
            self.error = under(format_error, self.exception, self.filename, False, self.timeout)
        elif self.present:
            if self.capture.chunks:
                if self.value is not None:
                    self.shown_repr = under(bounded_repr, self.value)
            else:
                self.shown = under(model_value, self.value)

    def answer(self) -> Any:
        """What `python()` returns (see `ExecResult.for_model`), from what `produce` made."""
        result = self.result
        if result.error is not None:
            return Answer(join_lines(result.output, result.error))
        if not result.output:
            return self.shown
        if result.value is None:
            return Answer(result.output)
        # a thread may have printed after `produce`: then the repr of the value as shown (plain data)
        return Answer(join_lines(result.output, self.shown_repr if self.shown_repr is not None
                                 else bounded_repr(self.shown)))

    def finish(self) -> ExecResult:
        capture = self.capture
        capture.closed = True
        if self.timed_out and capture.threads:  # its work ends with it
            capture.stopped = self.timeout or 0.0
            stop_threads(capture.threads, capture.stopped)
        current_capture.reset(self.token)
        process.leave()
        if self.added_builtins:
            self.glb.pop("__builtins__", None)  # exec() put it there; the namespace stays as given
        error = self.error
        if self.exception is not None and (error is None or self.timed_out):
            error = format_error(self.exception, self.filename, self.timed_out, self.timeout)
        elif not self.keep_lines and (self.compiled is None or not defines_code(self.compiled)):
            linecache.cache.pop(self.filename, None)  # nothing can ask for these lines later
        duration = time.perf_counter() - self.started
        if not capture.chunks:  # the common case, kept cheap
            value = None if self.exception is not None else self.value
            self.result = quiet_result(value, error, self.timed_out, duration, self.exception)
            return self.result
        self.result = ExecResult(
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
        return self.result


def run_code(code: str, glb: dict | None = None, loc: Mapping | None = None,
             timeout: float | None = 3600, *, isolated: bool = False) -> ExecResult:
    """Run `code` and return an `ExecResult` (value, output, error, timed_out, duration).

    `glb`/`loc` are the namespaces (default: the kernel's `user_ns` inside IPython, else the
    caller's globals); nothing but what the code itself assigns is added to them. `timeout` is in
    seconds (fractions allowed; None for no limit). `isolated=True` runs the code in a forked child
    process, killed if it overruns the deadline (see `isolated.run_isolated` for its limits).
    Exceptions from the code are returned in the result (also `SystemExit`, `exit()` and a
    `KeyboardInterrupt` the code raises), except a person's interrupt of the process (SIGINT, the
    kernel's interrupt button), which propagates as `KeyboardInterrupt`.
    """
    limit = check_timeout(timeout)
    glb, loc = _namespaces(glb, loc, sys._getframe(1) if glb is None else None)
    if isolated:
        return run_isolated(code, glb, loc, limit, run_code)
    return _run(code, glb, loc, limit).result


def _run(code: str, glb: dict, loc: Mapping | None, limit: float | None, present: bool = False) -> _Execution:
    execution = _Execution(code, glb, loc, limit)
    execution.present = present
    execution.begin()
    try:
        if execution.compile():
            _execute(execution)
    finally:
        execution.finish()
    return execution


def _execute(execution: _Execution) -> None:
    compiled = execution.compiled
    glb, loc = execution.glb, execution.loc
    run = None
    if execution.timeout is not None:
        run = execution.run = Run(execution.timeout)
        arm(run)
    try:
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
                    run.active = False  # first, before any call: no time-out is raised after this
        except BaseException as exc:
            execution.caught(exc)
        if execution.exception is not None:
            execution.produce(functools.partial(_under_deadline, run))
        elif execution.present:
            value = execution.value
            kind = type(value)
            if not execution.capture.chunks and (value is None or kind is bool or kind is float or (
                    kind is int and value.bit_length() <= 4000) or (kind is str and len(value) <= VALUE_CHARS)):
                execution.shown = value  # the common results: a small scalar shows as itself
            else:
                execution.produce(functools.partial(_under_deadline, run))
    except BaseException as exc:  # the deadline passed while producing (or an interrupt passes through)
        execution.caught(exc)
    finally:
        if run is not None:
            disarm(run)


def _under_deadline(run: Run | None, fn: Any, *args: Any) -> Any:
    """`fn(*args)` (it may run the code's methods) under `run`'s deadline, still armed."""
    if run is None:
        return fn(*args)
    try:
        run.active = True
        return fn(*args)
    finally:
        run.active = False  # first, before any call: no time-out is raised after this


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
    limit = check_timeout(timeout)
    glb, loc = _namespaces(glb, loc, sys._getframe(1) if glb is None else None)
    return (await _run_async(code, glb, loc, limit)).result


async def _run_async(code: str, glb: dict, loc: Mapping | None, limit: float | None,
                     present: bool = False) -> _Execution:
    execution = _Execution(code, glb, loc, limit)
    execution.present = present
    execution.begin()
    try:
        if execution.compile(ast.PyCF_ALLOW_TOP_LEVEL_AWAIT):
            await _execute_async(execution)
    finally:
        execution.finish()
    return execution


async def _execute_async(execution: _Execution) -> None:
    import asyncio

    compiled = execution.compiled
    glb, loc = execution.glb, execution.loc
    run = execution.run = Run(execution.timeout) if execution.timeout is not None else None
    task = asyncio.current_task()
    waker = Waker(run, task) if run is not None and task is not None else None
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
    try:
        execution.produce(lambda fn, *args: _stepped_call(functools.partial(fn, *args), run))
    except BaseException as exc:  # the deadline passed while producing
        execution.caught(exc)


_CO_COROUTINE = 0x0080  # inspect.CO_COROUTINE, without importing inspect


def _stepped_call(step: Any, run: Run | None) -> Any:
    """Call `step()` (a slice of the code's own work) under the run's deadline."""
    if run is None:
        return step()
    arm(run)
    try:
        run.active = True
        return step()
    finally:
        run.active = False  # first, before any call: no time-out is raised after this
        disarm(run)


class _Stepper:
    """Awaits the code's coroutine one step at a time, each step under the deadline, and turns
    the deadline's task cancellation (by `timeouts.Waker`) into `TimeoutInterrupt` at the code's
    `await`."""

    __slots__ = ("coroutine", "run", "task")

    def __init__(self, coroutine: Any, run: Run | None, task: Any) -> None:
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
                    exc = Deadline(f"the code ran for more than {run.timeout:g} s")
                to_throw, to_send = exc, None


# ------------------------------------------------------------------------------------------------
# What the model-facing tools (`pytool.py`) run
# ------------------------------------------------------------------------------------------------


def run_for_model(code: str, glb: dict | None, loc: Mapping | None, timeout: float, isolated: bool,
                  caller: Any, allow: Any = None) -> Any:
    """`python()`'s work (see `pytool.python`): run `code` and return what the model gets; bad
    arguments come back as an "Error: ..." text. `caller` is the frame that called `python()`, where
    the default namespace is looked for when `glb` is None. `allow` (an `Allow`) implies `isolated`."""
    if glb is None:
        glb, default_loc = _default_namespace(caller)
        loc = default_loc if loc is None else loc
    try:
        limit = check_timeout(timeout)
        if isolated or allow is not None:
            return _isolated_answer(_run_isolated_for_model(code, *_namespaces(glb, loc, None), limit, allow,
                                                            run_code))
        if limit is not None and threading.get_ident() != timeouts.main_ident and active_capture() is None:
            from .detached import python_off_main

            return python_off_main(_run, code, *_namespaces(glb, loc, None), limit)
        execution = _run(code, *_namespaces(glb, loc, None), limit, present=True)
    except (TypeError, ValueError, RuntimeError) as exc:  # bad arguments: tell the model, do not raise
        return f"Error: {exc}"
    return execution.answer()


async def run_for_model_async(code: str, glb: dict | None, loc: Mapping | None, timeout: float,
                              caller: Any, allow: Any = None) -> Any:
    """`python_async()`'s work (see `pytool.python_async`), as `run_for_model`; with `allow` the
    confined child runs on a worker thread, so this event loop goes on meanwhile."""
    if glb is None:
        glb, default_loc = _default_namespace(caller)
        loc = default_loc if loc is None else loc
    try:
        limit = check_timeout(timeout)
        if allow is not None:
            import asyncio

            namespaces = _namespaces(glb, loc, None)
            try:
                result = await asyncio.get_running_loop().run_in_executor(None, functools.partial(
                    _run_isolated_for_model, code, *namespaces, limit, allow, _run_async_in_child))
            except RuntimeError as exc:  # `ConfinementUnavailable`: nothing ran
                return f"Error: {exc}"
            return _isolated_answer(result)
        execution = await _run_async(code, *_namespaces(glb, loc, None), limit, present=True)
    except (TypeError, ValueError) as exc:
        return f"Error: {exc}"
    return execution.answer()


def _run_isolated_for_model(code: str, glb: dict, loc: Mapping | None, limit: float | None, allow: Any,
                            runner: Any) -> ExecResult:
    """An isolated run, confined by `allow` when given (`confine.py`; built here in the parent,
    closed after the run whatever happened). Raises `ConfinementUnavailable` (a RuntimeError) or
    TypeError/ValueError for an `allow` that cannot be enforced, before anything runs."""
    if allow is None:
        return run_isolated(code, glb, loc, limit, runner)
    from .confine import Allow, Confinement

    if not isinstance(allow, Allow):
        raise TypeError(f"allow must be an nbtools.Allow, got {type(allow).__name__}")
    confinement = Confinement(allow)
    try:
        result = run_isolated(code, glb, loc, limit, runner, confinement)
    finally:
        confinement.close()
    if result.error is not None and _REFUSED.search(result.error):
        # the kernel's refusal is a bare EACCES/EPERM; the model cannot see the policy (a registry's
        # `python_allow` is not in the tool's description): say what the run may do and where
        result.error += (f"\n[this run is confined (allow=): {allow}. The fresh folder is the working directory: "
                         f"{confinement.folder} (a new one each run)]")
    return result


# What the kernel's refusals look like in a traceback's text (EACCES from Landlock, EPERM from seccomp)
_REFUSED = re.compile(r"\[Errno (?:1|13)\] (?:Permission denied|Operation not permitted)")


def _run_async_in_child(code: str, glb: dict, loc: Mapping | None, timeout: float | None) -> ExecResult:
    """The runner of an isolated `python_async` run, in the child: top-level `await` allowed."""
    import asyncio

    return asyncio.run(run_code_async(code, glb, loc, timeout))


def _isolated_answer(result: ExecResult) -> Any:
    """What the model gets from an isolated run: the value came back as data or text, never the
    code's object."""
    if result.error is None and not result.output:
        value = result.value
        if isinstance(value, _ReprOnly) and len(value.text) <= VALUE_CHARS:
            return value  # a stand-in showing the value's repr: renders as that text, runs no code
        return model_value(value)  # JSON data: itself when small, else the start of its text
    return result.for_model()
