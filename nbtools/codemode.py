"""Code mode: `Registry.code_tool`, a Tool that runs a model's Python code in Monty (`pydantic-monty`,
extra `[codemode]`), where the registry's tools are plain functions.

Why a separate interpreter: code run in the kernel could reach the raw functions, the registry and
its policy. Monty is a Python interpreter in a worker subprocess with no way out but the calls it
hands back to the host: files, the environment and imports come back as OS calls, which are
refused; the tools come back as external calls, each of which runs here through the registry
exactly as a direct call does (`registry.call`: validated and converted, a destructive tool asked
for once per call with origin `<origin of the run>/code`, edits, Always answers,
`refuse_destructive`, the decisions log). Disabled tools, and tools whose `callers` leave out
"code", are not defined in the code. Arguments reach the registry as the JSON a model's own call
would send (the code's dates as ISO text, tuples as lists); results cross back as JSON values,
never host objects; a generator tool's yields are read as for a direct call.

A refused call raises `PermissionError` in the code, invalid arguments `TypeError`, a tool's own
failure `RuntimeError`, each with the text a direct call would give; the code may catch them, and
uncaught the run stops there and the answer names it. The answer (`CodeRun`) is the last
expression's value, the printed text, every call (tool, arguments as run, outcome) and `error`.

Limits stop a run with one line and leave the process and later runs as they were:
`max_tool_calls` (counted here; Monty's own cap on host round trips is raised to fit),
`memory` (Monty's heap limit) and `timeout`, wall clock including the time spent in tool calls
(Monty's own limit counts only the time inside the sandbox): at the deadline the worker is killed
and the pool starts another. A tool call still running then finishes (it is never cut in half);
the run stops when it returns.
"""

from __future__ import annotations

import atexit
import builtins
import datetime
import inspect
import keyword
import os
import re
import signal
import threading
import time
from typing import Annotated, Any, TypedDict

from .errors import CallRefused, ToolCallError
from .policy import _WITNESS, DEFAULT_LIMITS, asking_as, current_origin, witnessed
from .shortening import short
from .tool import Tool

__all__ = ["code_tool", "CodeRun", "CodeCall", "parse_memory", "python_name", "bind_arguments", "Shape"]


class CodeCall(TypedDict):
    """One tool call the code made: the tool's name, its arguments as run (converted, defaults
    filled, edits applied), whether it returned, and what it returned or the error's text."""

    tool: str
    arguments: dict
    ok: bool
    outcome: Any


class CodeRun(TypedDict):
    """What a run of code mode answers: the value of the code's last expression (JSON; None when
    it ends with a statement), what it printed, its tool calls in order, and None or the one line
    saying why the run stopped (an exception the code did not catch, or a limit)."""

    value: Any
    printed: str
    calls: list[CodeCall]
    error: str | None


# -- the Tool -----------------------------------------------------------------------------------------
def code_tool(registry: Any, name: str = "run_code", *, tools: Any = "*", max_tool_calls: int = 100,
              timeout: float = 30, memory: int | str = "256MiB") -> Tool:
    """A Tool with one string parameter `code` that runs in Monty with `registry`'s chosen tools
    as functions (see the module docs). `tools`: a glob or a list of globs/names ("*": every
    enabled tool). Its description lists them as Python stubs written from their schemas; its
    hints are the union of theirs, `read-only` and `idempotent` only when all have them."""
    if not isinstance(max_tool_calls, int) or isinstance(max_tool_calls, bool) or max_tool_calls < 0:
        raise ValueError(f"max_tool_calls must be a whole number >= 0; got {max_tool_calls!r}")
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds; got {timeout!r}")
    limit = parse_memory(memory)
    globs = [tools] if isinstance(tools, str) else list(tools)
    if not all(isinstance(glob, str) for glob in globs):
        raise TypeError(f"tools=: a glob or a list of tool names/globs; got {tools!r}")
    chosen = _chosen(registry, globs, name)
    memory_text = memory.strip() if isinstance(memory, str) else f"{limit} bytes"  # as given, for the model
    runner = _Runner(registry, name, globs, max_tool_calls, float(timeout), limit, memory_text)

    def run_code(code: Annotated[str, "Python code; the value of its last expression is the answer's value"]) \
            -> CodeRun:
        return runner.run(code)

    description = _description(chosen, max_tool_calls, timeout, memory_text)
    return Tool.from_function(run_code, name=name, description=description, hints=_union_hints(chosen))


def _chosen(registry: Any, globs: list[str], own_name: str) -> dict[str, Tool]:
    """The tools the code may call now, by the Python name it calls them by: enabled, matching
    `globs`, not the code tool itself, and not refused to code by their `callers`."""
    tools = [tool for tool in registry.select(allow=globs).enabled()  # the registry's own rule for globs
             if tool.name != own_name and tool.fn is not None
             and (tool.callers is None or "code" in tool.callers)]
    # A tool whose name is already its Python name keeps it; another that maps onto a taken name
    # (`my.tool` beside `my_tool`) gets the first free `_2`, `_3`... (its stub names the tool), so
    # a call in the code always reaches the tool it names and no tool is left out.
    kept = {tool.name for tool in tools if python_name(tool.name) == tool.name}
    found: dict[str, Tool] = {}  # in the registry's order
    for tool in tools:
        identifier = base = python_name(tool.name)
        number = 2
        while identifier != tool.name and (identifier in kept or identifier in found):
            identifier, number = f"{base}_{number}", number + 1
        found[identifier] = tool
    return found


# the builtins and the modules the sandbox has: a tool by such a name would be hidden (or hide them)
_BUILTIN_NAMES = frozenset(dir(builtins)) | frozenset((
    "json", "re", "math", "random", "datetime", "time", "collections", "itertools", "functools", "dataclasses",
    "typing", "asyncio", "os", "sys", "pathlib"))


def python_name(tool_name: str) -> str:
    """The name code calls `tool_name` by: itself when it is an identifier, else with `_` for
    each other character (`math.add` -> `math_add`); `_tool` appended to a keyword or a builtin's
    name (which would hide the tool)."""
    identifier = re.sub(r"\W", "_", tool_name, flags=re.ASCII) or "_"
    if identifier[0].isdigit():
        identifier = "_" + identifier
    if keyword.iskeyword(identifier) or identifier in _BUILTIN_NAMES:
        identifier += "_tool"
    return identifier


_GUARANTEES = ("read-only", "idempotent")  # hold for the code only when they hold for every tool


def _union_hints(tools: dict[str, Tool]) -> frozenset[str]:
    """What the code may do is what its tools may do: `destructive` and `open-world` when any tool
    is; `read-only`, `idempotent` and a `not-` hint only when every tool says so."""
    every = list(tools.values())
    hints: set[str] = set()
    for tool in every:
        hints |= {hint for hint in tool.hints if hint not in _GUARANTEES and not hint.startswith("not-")}
    for hint in (*_GUARANTEES, *(f"not-{each}" for each in ("destructive", "open-world"))):
        if all(hint in tool.hints for tool in every) and hint.removeprefix("not-") not in hints:
            hints.add(hint)
    if "destructive" in hints:
        hints.discard("read-only")
    return frozenset(hints)


def _description(tools: dict[str, Tool], max_tool_calls: int, timeout: float, memory: Any) -> str:
    from .stubs import stubs

    listed = stubs(tools) if tools else "# (no tools: the code can only compute)"
    return (
        "Run Python code in a sandbox (no files, network or environment; it can import json, re, math, random, "
        "datetime, time, collections, itertools, functools, dataclasses, typing and asyncio). The functions "
        "below call tools; each call is checked "
        "and approved like a direct call. A refused call raises PermissionError, invalid arguments TypeError, "
        "a failing tool RuntimeError (catch them with `except Exception as error:`). The answer has the value "
        "of the last expression, the printed text and every tool call. Use it to make many calls in one step "
        "(loops, filtering, aggregation) and print or return only what matters. Call the functions in your "
        "own code, not as a callback of a builtin (`max(xs, key=tool)` cannot call out): collect results first. "
        f"Limits: {max_tool_calls} tool calls, {timeout:g} s, {memory} of memory.\n\n"
        f"```python\n{listed}\n```")


# -- memory sizes -------------------------------------------------------------------------------------
_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3, "gb": 1000**3,
          "kib": 1024, "mib": 1024**2, "gib": 1024**3}


def parse_memory(memory: int | str) -> int:
    """Bytes from an int or a text like "256MiB", "1.5 GB", "500k"."""
    if isinstance(memory, int) and not isinstance(memory, bool) and memory > 0:
        return memory
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", memory) if isinstance(memory, str) else None
    unit = found.group(2).lower() if found else None
    if found is None or unit not in _UNITS or float(found.group(1)) <= 0:
        raise ValueError(f"memory={memory!r}: expected a positive number of bytes or a size like '256MiB', '1GB'")
    return int(float(found.group(1)) * _UNITS[unit])


# -- Monty: imported when a run starts, one pool of workers per process ----------------------------------
_POOL: list[Any] = []  # [pool, the pid that started it]
CHECKOUT_TIMEOUT = 60.0  # seconds a run waits for a free worker
_POOL_LOCK = threading.Lock()


def _monty() -> Any:
    try:
        import pydantic_monty
    except ImportError:
        from .extras import MissingExtra, install_line

        raise MissingExtra("code mode runs the model's code in Monty, which a plain install leaves out; install "
                           f"it with: {install_line('codemode')}", name="pydantic_monty") from None
    return pydantic_monty


def _pool(monty: Any) -> Any:
    """The process's pool of Monty workers, started on first use (a forked child starts its own)."""
    with _POOL_LOCK:
        if _POOL and _POOL[1] == os.getpid():
            return _POOL[0]
        # a worker per run at a time: a few runs side by side (MCP clients, threads) need no free CPU
        # each, as their time is mostly spent in tool calls; one that finds none free says so
        pool = monty.Monty(min_processes=1, max_processes=max(4, os.cpu_count() or 1),
                           checkout_timeout=CHECKOUT_TIMEOUT)
        pool.__enter__()
        if not _POOL:  # the first pool of this module: closed at exit (a fork's pool is its own)
            atexit.register(_close_pool)
        _POOL[:] = [pool, os.getpid()]
        return pool


def _close_pool() -> None:
    with _POOL_LOCK:
        if _POOL and _POOL[1] == os.getpid():
            pool = _POOL[0]
            _POOL.clear()
            try:
                pool.__exit__(None, None, None)
            except Exception:  # exiting anyway
                pass


class _Watchdog:
    """Kills the session's worker at the deadline (wall clock: host calls included). Stopped under
    the same lock before the session is handed back, so it never kills a worker another run holds."""

    def __init__(self, pid: int | None, seconds: float):
        self.pid, self.fired, self.live = pid, False, True
        self.lock = threading.Lock()
        self.timer = threading.Timer(max(seconds, 0.0), self._fire)
        self.timer.daemon = True
        if pid is not None:
            self.timer.start()

    def _fire(self) -> None:
        self.kill(deadline=True)

    def stop(self) -> None:
        with self.lock:
            self.live = False
        self.timer.cancel()

    def kill(self, deadline: bool = False) -> None:
        """Kill the worker now (at the deadline, or for a person's interrupt), if the session is
        still this run's."""
        with self.lock:
            if self.live and self.pid is not None:
                self.fired = self.fired or deadline
                try:
                    os.kill(self.pid, getattr(signal, "SIGKILL", signal.SIGTERM))
                except OSError:  # gone already
                    pass


class _Stop(Exception):
    """A limit reached between two steps of the run: the run ends with this line."""


# -- a run ------------------------------------------------------------------------------------------------
class _Runner:
    """Runs code for one code Tool: its registry, its choice of tools and its limits."""

    def __init__(self, registry: Any, name: str, globs: list[str], max_tool_calls: int, timeout: float,
                 memory: int, memory_text: str):
        self.registry, self.name, self.globs = registry, name, globs
        self.max_tool_calls, self.timeout, self.memory, self.memory_text = max_tool_calls, timeout, memory, memory_text

    def run(self, code: str) -> CodeRun:
        monty = _monty()
        if not isinstance(code, str):
            raise TypeError(f"code must be text; got a {type(code).__name__}")
        run = _Run(self, monty, f"{current_origin()}/code", _chosen(self.registry, self.globs, self.name))
        return run.go(code)


class _Run:
    """One run: the tools as they are now, the calls made, what was printed, the deadline."""

    def __init__(self, runner: _Runner, monty: Any, origin: str, tools: dict[str, Tool]):
        self.runner, self.monty, self.origin, self.tools = runner, monty, origin, tools
        self.calls: list[CodeCall] = []
        self.pending: dict[int, tuple[Tool, tuple, dict]] = {}  # async tools' calls, run when awaited
        self.shapes: dict[str, Shape] = {}  # tool name -> how its calls bind, read at its first call
        self.deadline = time.monotonic() + runner.timeout
        self.watchdog: _Watchdog | None = None
        # Monty's calls block in native code, where a person's interrupt (SIGINT, handled by the main
        # thread between bytecodes) waits for them: on the main thread they run on a helper thread
        self.helper: Any = None
        if threading.current_thread() is threading.main_thread():
            from concurrent.futures import ThreadPoolExecutor

            self.helper = ThreadPoolExecutor(1, thread_name_prefix="nbtools-codemode")

    def go(self, code: str) -> CodeRun:
        monty, runner = self.monty, self.runner
        printed = monty.CollectString()
        limits = {"max_feed_duration_secs": runner.timeout, "max_memory": runner.memory,
                  # every call, name lookup and awaited result is a round trip: Monty's cap (1,000 by
                  # default) must not stop a run before `max_tool_calls` does
                  "max_suspensions": max(1000, 3 * runner.max_tool_calls + 100)}
        value: Any = None
        error: str | None = None
        watchdog = None
        try:
            with _pool(monty).checkout(limits=limits) as session:
                watchdog = _Watchdog(session.worker_pid, self.deadline - time.monotonic())
                try:
                    self.watchdog = watchdog
                    value = self._drive(self._sandbox(session.feed_start, code, print_callback=printed,
                                                      external_lookup=dict.fromkeys(self.tools, _host_only)))
                finally:
                    watchdog.stop()
        except _Stop as stop:
            error = str(stop)
        except TimeoutError:  # from the checkout: the code never started
            error = (f"stopped before it started: no sandbox worker was free within {CHECKOUT_TIMEOUT:g} s "
                     "(other runs held them all); run the code again")
        except monty.MontySyntaxError as failure:
            error = f"the code does not parse: {failure.display('type-msg')}"
        except monty.MontyRuntimeError as failure:
            error = self._failure_line(failure)
        except monty.MontyCrashedError as failure:
            error = self._time_line() if (watchdog is not None and watchdog.fired) or self._late() else \
                f"stopped: the sandbox's worker ended ({failure}); nothing else was affected, run the code again"
        except monty.MontyError as failure:  # conversion of a value, a typing error...
            error = f"{type(failure).__name__}: {short(str(failure), 500)}"
        finally:
            if self.helper is not None:
                self.helper.shutdown(wait=False)
        return {"value": _plain(value), "printed": _text(printed), "calls": self.calls, "error": error}

    def _sandbox(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        """One of Monty's blocking calls (start the code, answer a suspension). Through the helper
        thread when there is one: an interrupt then stops the run at once, killing the worker (the
        pool starts another), and goes on up; the tools themselves always run on this thread."""
        if self.helper is None:
            return call(*args, **kwargs)
        future = self.helper.submit(call, *args, **kwargs)
        try:
            return future.result()
        except KeyboardInterrupt:
            if self.watchdog is not None:
                self.watchdog.kill()
            try:
                future.result(timeout=10)
            except BaseException:  # the worker's end, as expected
                pass
            raise

    # -- driving the sandbox: each suspension answered here ------------------------------------------------
    def _drive(self, snapshot: Any) -> Any:
        monty = self.monty
        complete, function, lookup, future = (monty.MontyComplete, monty.FunctionSnapshot,
                                              monty.NameLookupSnapshot, monty.FutureSnapshot)
        while not isinstance(snapshot, complete):
            if self._late():
                raise _Stop(self._time_line())
            if isinstance(snapshot, function):
                snapshot = self._answer_call(snapshot)
            elif isinstance(snapshot, lookup):  # `f = add`: the name bound to the host function
                snapshot = self._sandbox(snapshot.resume_auto if snapshot.variable_name in self.tools
                                         else snapshot.resume)
            elif isinstance(snapshot, future):  # async tools' calls, awaited: run them now, in order
                results = {}
                for call_id in sorted(snapshot.pending_call_ids):  # in the order the code made them
                    tool, args, kwargs = self.pending.pop(call_id)
                    results[call_id] = self._call(tool, args, kwargs)
                    if self._late():
                        raise _Stop(self._time_line())
                snapshot = self._sandbox(snapshot.resume, results)
            else:  # a kind of suspension this version does not know: refuse it rather than guess
                raise _Stop(f"stopped: the sandbox asked for something code mode does not answer "
                            f"({type(snapshot).__name__})")
        return snapshot.output

    def _answer_call(self, snapshot: Any) -> Any:
        if snapshot.is_os_function:  # files, the environment, imports: refused (Monty's answer without a host)
            return self._sandbox(snapshot.resume_not_handled)
        tool = self.tools.get(snapshot.function_name)
        if tool is None:
            return self._sandbox(snapshot.resume, {"exception": NameError(
                f"name {snapshot.function_name!r} is not defined")})
        made = len(self.calls) + len(self.pending)
        if made >= self.runner.max_tool_calls:
            raise _Stop(f"stopped: the code tried to make more than {self.runner.max_tool_calls} tool calls "
                        f"(max_tool_calls={self.runner.max_tool_calls}); the calls made are listed")
        if tool.is_async:  # an awaitable in the code; run when awaited (FutureSnapshot)
            self.pending[snapshot.call_id] = (tool, snapshot.args, snapshot.kwargs)
            return self._sandbox(snapshot.resume, {"future": ...})
        result = self._call(tool, snapshot.args, snapshot.kwargs)
        if self._late():
            raise _Stop(self._time_line())
        return self._sandbox(snapshot.resume, result)

    # -- one tool call, through the registry ----------------------------------------------------------------
    def _call(self, tool: Tool, args: tuple, kwargs: dict) -> dict:
        registry = self.runner.registry
        shape = self.shapes.get(tool.name)
        if shape is None:
            called_as = next(name for name, each in self.tools.items() if each is tool)
            shape = self.shapes[tool.name] = Shape(tool, called_as)
        try:
            arguments = _json_arguments(shape.bind(args, kwargs))
        except TypeError as error:
            self._record(tool, _plain({"args": list(args), **kwargs}), False, str(error))
            return {"exception": error}
        seen: list = []  # the decisions logged for this call (`policy._WITNESS`), not another run's
        witness = _WITNESS.set(seen)
        try:
            with asking_as(self.origin):
                value = registry.call(tool.name, arguments)
        except ToolCallError as error:
            line = str(error).splitlines()[0]
            kind = PermissionError if isinstance(error, CallRefused) else \
                RuntimeError if error.problem.startswith("the tool raised") else TypeError
            self._record(tool, self._as_run(tool, shape, arguments, seen), False, line)
            return {"exception": kind(line)}
        finally:
            _WITNESS.reset(witness)
        if inspect.isgenerator(value):  # what it yields, read as a direct call's answer reads it
            from .call.invoke import _raised_by_the_tool
            from .call.items import read_items

            try:
                value = read_items(value, getattr(registry, "limits", DEFAULT_LIMITS).max_result_chars)
            except Exception as failure:  # the tool's own code, running as it yields
                line = str(_raised_by_the_tool(tool, failure)).splitlines()[0]
                self._record(tool, self._as_run(tool, shape, arguments, seen), False, line)
                return {"exception": RuntimeError(line)}
        result = _plain(value)
        self._record(tool, self._as_run(tool, shape, arguments, seen), True, result)
        return {"return_value": result}

    def _as_run(self, tool: Tool, shape: Shape, arguments: dict, seen: list) -> dict:
        """The arguments as the call ran them: from the last decision logged for this very call
        before it ran (edits included; `seen`: the decisions logged in its context, where a tool
        calling tools adds theirs after), else as the code gave them with the tool's defaults
        filled in (JSON: the values before conversion, which a validated call ran converted)."""
        own = None
        for fields in seen:
            if fields[1] != tool.name or fields[3] != self.origin:
                break  # a call the tool made while running: this call's decisions came before
            own = fields
        if own is not None:
            return _plain(witnessed(own).arguments)
        return _plain({**shape.defaults, **arguments} if shape.defaults else arguments)

    def _record(self, tool: Tool, arguments: Any, ok: bool, outcome: Any) -> None:
        self.calls.append({"tool": tool.name, "arguments": arguments if isinstance(arguments, dict) else {},
                           "ok": ok, "outcome": outcome})

    # -- how a run ends --------------------------------------------------------------------------------------
    def _late(self) -> bool:
        return time.monotonic() >= self.deadline

    def _time_line(self) -> str:
        return (f"stopped: the run took longer than its time limit of {self.runner.timeout:g} s (wall clock, "
                "tool calls included)")

    def _failure_line(self, failure: Any) -> str:
        error = failure.exception()
        message = str(error)
        if isinstance(error, MemoryError) and message.startswith("memory limit exceeded"):
            return f"stopped: the code used more memory than its limit of {self.runner.memory_text}"
        if isinstance(error, TimeoutError) and ("time limit exceeded" in message or self._late()):
            return self._time_line()
        if isinstance(error, RuntimeError) and message.startswith("suspension limit"):
            return (f"stopped: the code made more round trips to the host than allowed ({message}); "
                    f"max_tool_calls={self.runner.max_tool_calls}")
        line = short(failure.display("type-msg"), 1000)
        try:
            frames = failure.traceback()
            where = f" (line {frames[-1].line})" if frames else ""
        except Exception:  # no traceback for this error
            where = ""
        return f"{line}{where}"


def _host_only(*_args: Any, **_kwargs: Any) -> Any:
    """What the code's tool names are bound to in Monty: every call is answered by `_Run`, never here."""
    raise RuntimeError("code mode answers tool calls itself")


class Shape:
    """How a call in the code maps onto a tool's arguments object, read once per tool and run from
    `Tool.passing` (positional slots, `*args`, `**kwargs`) and its schema (the JSON defaults)."""

    __slots__ = ("called_as", "slots", "varargs", "varkw", "named", "positional_only", "open", "defaults")

    def __init__(self, tool: Tool, called_as: str):
        passing = [(name, kind) for name, kind in tool.passing if kind not in ("context", "default")] or \
            [(name, "keyword") for name in (tool.parameters.get("properties") or {})]
        self.called_as = called_as
        self.slots: list[str] = []
        for name, kind in passing:
            if kind == "varargs":
                break
            if kind in ("positional", "keyword"):
                self.slots.append(name)
        self.varargs = next((name for name, kind in passing if kind == "varargs"), None)
        self.varkw = next((name for name, kind in passing if kind == "varkw"), None)
        self.named = frozenset(name for name, kind in passing if kind in ("positional", "keyword"))
        self.positional_only = frozenset(name for name, kind in passing if kind == "positional")
        self.open = not tool.passing  # a Tool made from a schema: its schema decides which keys it takes
        properties = tool.parameters.get("properties") or {}
        self.defaults = {name: schema["default"] for name, schema in properties.items()
                         if isinstance(schema, dict) and "default" in schema}

    def bind(self, args: tuple, kwargs: dict) -> dict:
        """The arguments object of `called_as(*args, **kwargs)`; TypeError as Python words it."""
        slots, called_as = self.slots, self.called_as
        if len(args) > len(slots) and self.varargs is None:
            raise TypeError(f"{called_as}() takes {len(slots)} positional argument{'s' * (len(slots) != 1)} "
                            f"but {len(args)} were given")
        arguments: dict[str, Any] = dict(zip(slots, args))
        if self.varargs is not None and len(args) > len(slots):
            arguments[self.varargs] = list(args[len(slots):])
        for key, item in kwargs.items():
            if key in arguments:
                raise TypeError(f"{called_as}() got multiple values for argument {key!r}")
            if key in self.positional_only:
                raise TypeError(f"{called_as}() got a positional-only argument passed as keyword: {key!r}")
            if key not in self.named and self.varkw is None and not self.open:
                raise TypeError(f"{called_as}() got an unexpected keyword argument {key!r}")
            arguments[key] = item
        return arguments


def bind_arguments(tool: Tool, called_as: str, args: tuple, kwargs: dict) -> dict:
    """The arguments object of a call made as `called_as(*args, **kwargs)` (see `Shape`)."""
    return Shape(tool, called_as).bind(args, kwargs)


_SIMPLE = frozenset((str, int, float, bool, type(None)))


def _plain(value: Any) -> Any:
    """A value as JSON data (what crosses between the code and the host, and what the answer holds);
    a new container, never the tool's own."""
    kind = type(value)
    if kind in _SIMPLE:
        return value
    if kind is dict and all(type(key) is str and type(item) in _SIMPLE for key, item in value.items()):
        return dict(value)
    from .values import to_json

    return to_json(value)


_AS_TEXT = frozenset((datetime.date, datetime.datetime, datetime.time, datetime.timedelta, bytes))


def _json_arguments(value: Any, depth: int = 0) -> Any:
    """The code's arguments as the JSON data a model's own call would send (what the registry
    validates and converts back: `datetime.date(2030, 1, 1)` -> "2030-01-01", bytes -> base64,
    tuples and sets -> lists). Values of other kinds (an instance of a class the code defined) stay
    as they are, for the registry to refuse as not JSON data."""
    kind = type(value)
    if kind in _SIMPLE or depth > 100:  # deeper than any limit allows: the registry refuses it
        return value
    if kind is dict:
        return {key: _json_arguments(item, depth + 1) for key, item in value.items()}
    if kind in (list, tuple, set, frozenset):
        return [_json_arguments(item, depth + 1) for item in value]
    if kind in _AS_TEXT:
        from .values import to_json

        return to_json(value)
    return value


def _text(printed: Any) -> str:
    try:
        return printed.output
    except Exception:  # the collector refused more output
        return ""

