"""Running a tool: the approval check, the call itself (sync or async), and the tool's own errors.

`call_tool`/`acall_tool` run a Tool; `call_func`/`call_func_async` first resolve a name in a
namespace (`namespace`). Sync code waits for a coroutine tool with `run_awaitable`, which also works
inside a running event loop (a notebook cell). An exception the tool raises becomes a
`ToolCallError` naming the exception and the tool's own line, its traceback trimmed of the frames
of nbtools and the asyncio/threading plumbing.
"""

from __future__ import annotations

import asyncio
import dis
import functools
import inspect
import linecache
import os
import threading
import types
from typing import Any, Awaitable, Callable

from ..errors import Interrupted, ToolCallError
from .. import policy
from ..policy import DEFAULT_LIMITS, Limits, source_of
from ..tool import Tool
from .items import aread_items
from .namespace import resolve_tool, settings
from .plan import prepare
from ..shortening import short

_NBTOOLS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # the nbtools package
_MACHINERY_DIRS = (_NBTOOLS_DIR, os.path.dirname(asyncio.__file__) + os.sep,
                   os.path.dirname(os.path.dirname(threading.__file__)) + os.sep + "concurrent" + os.sep,
                   threading.__file__)
_library_dirs: tuple[str, ...] | None = None


def _library_prefixes() -> tuple[str, ...]:
    global _library_dirs
    if _library_dirs is None:
        import sysconfig

        paths = sysconfig.get_paths()
        _library_dirs = tuple(sorted({os.path.abspath(paths[key]) + os.sep for key in ("stdlib", "purelib", "platlib")
                                      if key in paths}))
    return _library_dirs


def _trim_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
    """Drop the outer frames that belong to nbtools (and the asyncio/threading plumbing it used)."""
    current = tb
    while current is not None and current.tb_frame.f_code.co_filename.startswith(_MACHINERY_DIRS):
        current = current.tb_next
    if current is None and tb is not None:  # the tool itself lives in nbtools: keep its last frame
        current = tb
        while current.tb_next is not None:
            current = current.tb_next
    return current


def _frame_text(tb: types.TracebackType | None) -> str:
    """The tool's line: the innermost frame outside the standard library and installed packages."""
    chosen = None
    libraries = _library_prefixes()
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if chosen is None or not os.path.abspath(filename).startswith(libraries):
            chosen = tb
        tb = tb.tb_next
    if chosen is None:
        return ""
    code = chosen.tb_frame.f_code
    line = linecache.getline(code.co_filename, chosen.tb_lineno).strip()
    return f"in {code.co_name}, line {chosen.tb_lineno}" + (f": {short(line, 160)}" if line else "")


def _tool_failure(tool: Tool, error: BaseException) -> ToolCallError:
    """The ToolCallError for an exception the tool raised (its traceback trimmed of nbtools frames)."""
    tb = _trim_traceback(error.__traceback__)
    error.__traceback__ = tb
    message = short(str(error).strip(), 500)
    where = _frame_text(tb)
    problem = f"the tool raised {type(error).__name__}" + (f": {message}" if message else "")
    if where:
        problem += f" ({where})"
    return ToolCallError(tool.name, problem)


def _raised_by_the_tool(tool: Tool, error: BaseException) -> BaseException:
    """What a call raises when the tool's function raised `error`: a ToolCallError of its own and
    what must end the run (`_stops_the_run`) pass through as they are; anything else becomes the
    tool's failure, caused by `error`."""
    if isinstance(error, ToolCallError) or (not isinstance(error, Exception) and _stops_the_run(error)):
        return error
    failure = _tool_failure(tool, error)
    failure.__cause__, failure.__suppress_context__ = error, True  # as `raise failure from error`
    return failure


def _refused(tool: Tool, reason: str) -> ToolCallError:
    return ToolCallError(tool.name, f"refused: {reason}")


def run_awaitable(awaitable: Awaitable[Any]) -> Any:
    """Wait for an awaitable from synchronous code.

    Without a running loop in this thread: `asyncio.run`. With one (a notebook cell), blocking it
    to wait would deadlock, so the awaitable runs on a private loop in a worker thread.
    """
    async def wait() -> Any:
        if inspect.isasyncgen(awaitable):  # read only as far as a result can show
            return await aread_items(awaitable, DEFAULT_LIMITS.max_result_chars)  # type: ignore[arg-type]
        return await awaitable

    try:
        asyncio.get_running_loop()
        running = True
    except RuntimeError:
        running = False
    if not running:
        # outside the `except` block: a tool's exception must not carry "no running event loop"
        # from here as its context (the traceback a person reads shows only the tool)
        return asyncio.run(wait())
    outcome: dict[str, Any] = {}

    def worker() -> None:
        try:
            outcome["value"] = asyncio.run(wait())
        except BaseException as error:  # handed to the waiting thread, which re-raises it
            outcome["error"] = error

    thread = threading.Thread(target=worker, name="nbtools-await", daemon=True)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def _begin(tool: Tool, inputs: Any, limits: Limits, approve: Any,
           refuse_destructive: bool) -> tuple[Callable, tuple, dict, Any]:
    """Everything before the call: the function, its converted arguments, and the approval answer
    (`True` when none is needed; maybe an awaitable, which `_call`/`_acall` each wait for their way)."""
    fn = tool.fn
    if fn is None:
        raise ToolCallError(tool.name, "this tool has no function to call (it is a definition only)")
    positional, kwargs, raw = prepare(tool, inputs, limits)
    answer: Any = True
    if "destructive" in tool.hints:
        if refuse_destructive:
            raise _refused(tool, "this tool is marked destructive and this namespace does not run destructive tools")
        if approve is not None:
            try:
                answer = approve(tool, arguments_as_run(fn, positional, kwargs, raw))
            except Exception as error:
                raise _approval_failed(tool, error) from error
    return fn, positional, kwargs, answer


def arguments_as_run(fn: Callable, positional: tuple, kwargs: dict, raw: Any) -> dict:
    """The arguments as the call will pass them, by parameter name: converted values, defaults
    filled in (`{"folder": null}` shows the default folder the tool will use), `**kwargs` spread
    out. What an approval callback is shown: the call it approves, not the model's JSON."""
    try:
        bound = inspect.signature(fn).bind(*positional, **kwargs)
    except (TypeError, ValueError):  # no signature to read (some builtins): what is passed
        return {**{str(index): value for index, value in enumerate(positional)}, **kwargs} if positional \
            else dict(kwargs) if kwargs or not isinstance(raw, dict) else dict(raw)
    bound.apply_defaults()
    shown: dict = {}
    for name, value in bound.arguments.items():
        kind = bound.signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            shown.update(value)
        else:
            shown[name] = value
    return shown


def _approval_failed(tool: Tool, error: Exception) -> ToolCallError:
    if isinstance(error, TimeoutError):  # e.g. widgets.ApprovalTimedOut: nobody clicked in time
        return _refused(tool, f"nobody approved this call in time ({short(str(error), 200)}); "
                              "it did not run: ask the user before trying again")
    return _refused(tool, f"the approval check failed ({type(error).__name__}: {short(str(error), 200)})")


def _verdict(tool: Tool, answer: Any) -> None:
    """Only a yes runs the tool: True (or 1, a numpy True); a non-boolean answer such as "no" or
    a dict is a denial, not a truthy value (a callback that returns the wrong thing fails closed)."""
    if answer is True:
        return
    if answer is False or answer is None:
        raise _refused(tool, "the user denied this call")
    if isinstance(answer, int) or type(answer).__name__ in ("bool_", "bool"):
        if answer == 1:
            return
        raise _refused(tool, "the user denied this call")
    raise _refused(tool, f"the approval callback answered {short(repr(answer), 80)} instead of "
                         "True or False, which counts as a denial")


_PLAIN_TYPES = frozenset((int, float, str, bool, type(None), dict, list, tuple))


def _call(tool: Tool, inputs: Any, limits: Limits, approve: Any, refuse_destructive: bool) -> Any:
    fn, positional, kwargs, answer = _begin(tool, inputs, limits, approve, refuse_destructive)
    if answer is not True:  # asked, and not a plain yes (the common case skips these checks)
        if inspect.isawaitable(answer):
            try:
                answer = run_awaitable(answer)
            except Exception as error:
                raise _approval_failed(tool, error) from error
        _verdict(tool, answer)
    try:
        result = fn(*positional, **kwargs)
        if tool.is_async or (type(result) not in _PLAIN_TYPES
                             and (inspect.isawaitable(result) or inspect.isasyncgen(result))):
            if inspect.isasyncgen(result):  # read only as far as the result can show
                result = aread_items(result, limits.max_result_chars)
            result = run_awaitable(result)
    except BaseException as error:
        raise _raised_by_the_tool(tool, error)
    return result


_RAISING_OPS = frozenset((dis.opmap["RAISE_VARARGS"], dis.opmap["RERAISE"]))


def _stops_the_run(error: BaseException) -> bool:
    """Whether a BaseException out of a tool must end the run rather than become its error result:
    a person's interrupt (a KeyboardInterrupt that a signal raised, not a `raise` in the tool's
    code) or the cancellation of the task running the call. `SystemExit`, a `KeyboardInterrupt` or
    `CancelledError` the tool raised itself, and any other BaseException, are the tool's failure."""
    if isinstance(error, KeyboardInterrupt):
        if getattr(error, "by_signal", False):  # raised by a Python signal handler (mcp.stopping)
            return True
        tb = error.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        if tb is None:
            return True
        code = tb.tb_frame.f_code.co_code
        # a signal's KeyboardInterrupt appears at whatever instruction ran (a call, a jump), a
        # raised one at `raise`; C code raising it (signal.raise_signal, interrupt_main) is a signal
        return not (0 <= tb.tb_lasti < len(code) and code[tb.tb_lasti] in _RAISING_OPS)
    if isinstance(error, asyncio.CancelledError):
        try:
            task = asyncio.current_task()
        except RuntimeError:
            return False
        return task is not None and task.cancelling() > 0
    return False


async def _acall(tool: Tool, inputs: Any, limits: Limits, approve: Any, refuse_destructive: bool,
                 run_sync: Callable[[Callable[[], Any]], Awaitable[Any]] | None = None) -> Any:
    fn, positional, kwargs, answer = _begin(tool, inputs, limits, approve, refuse_destructive)
    if answer is not True:
        if inspect.isawaitable(answer):
            try:
                answer = await answer
            except Exception as error:
                raise _approval_failed(tool, error) from error
        _verdict(tool, answer)
    try:
        if run_sync is not None and not tool.is_async:  # only the function itself leaves this loop
            result = await run_sync(functools.partial(fn, *positional, **kwargs))
        else:
            result = fn(*positional, **kwargs)
        if type(result) not in _PLAIN_TYPES:
            if inspect.isawaitable(result):
                result = await result
            elif inspect.isasyncgen(result):  # read only as far as the result can show
                result = await aread_items(result, limits.max_result_chars)
    except BaseException as error:
        raise _raised_by_the_tool(tool, error)
    return result


class _Unset:
    def __repr__(self) -> str:
        return "<the registry's setting>"


_UNSET: Any = _Unset()


def _tool_settings(tool: Tool, limits: Any, approve: Any, refuse_destructive: Any) -> tuple[Limits, Any, bool]:
    """Settings for `call_tool`: the explicit ones, else those of the registry `tool` came from."""
    source = source_of(tool)
    if limits is None:
        limits = source.limits if source is not None else DEFAULT_LIMITS
    if approve is _UNSET:
        approve = source.approve if source is not None else None
    if refuse_destructive is _UNSET:
        refuse_destructive = source.refuse_destructive if source is not None else False
    return limits, approve, bool(refuse_destructive)


def call_tool(tool: Tool, args: Any = None, *, limits: Limits | None = None, approve: Any = _UNSET,
              refuse_destructive: Any = _UNSET, raise_on_err: bool = True) -> Any:
    """Validate and convert `args` (dict or JSON text) for `tool`, then call it; the result as is.

    A coroutine tool is run to completion (in a worker thread when this thread's loop is running).
    Bad arguments, a refusal and the tool's own exception raise `ToolCallError` (chained from the
    tool's exception), or with `raise_on_err=False` return its text. `limits`, `approve` and
    `refuse_destructive` default to the settings of the registry the Tool came from (`get`,
    iteration, `mk_ns`), read at call time; a Tool no registry handed out runs without approval.
    """
    try:
        return _call(tool, args, *_tool_settings(tool, limits, approve, refuse_destructive))
    except KeyboardInterrupt as stop:  # a person's: one line in a cell
        raise _interrupted(tool.name, stop) from None
    except ToolCallError as error:
        if raise_on_err:
            raise
        return str(error)


async def acall_tool(tool: Tool, args: Any = None, *, limits: Limits | None = None, approve: Any = _UNSET,
                     refuse_destructive: Any = _UNSET, raise_on_err: bool = True) -> Any:
    """Like `call_tool`, awaiting coroutine tools (and async approval callbacks) in this loop."""
    try:
        return await _acall(tool, args, *_tool_settings(tool, limits, approve, refuse_destructive))
    except KeyboardInterrupt as stop:
        raise _interrupted(tool.name, stop) from None
    except ToolCallError as error:
        if raise_on_err:
            raise
        return str(error)


# ==================================================================================================
# Calling by name (the namespace first resolves it)
# ==================================================================================================
def _as_called(error: ToolCallError, name: str) -> ToolCallError:
    """`error` naming the tool as the model called it (a provider-mapped name like `math__add`, or a
    dict key): the model knows the tool by that name, not by the registered `math.add`."""
    renamed = ToolCallError(name, error.problem, error.argument, error.schema)
    renamed.__cause__ = error.__cause__
    return renamed


def _interrupted(name: str, stop: KeyboardInterrupt) -> KeyboardInterrupt:
    """A person's interrupt of a call as one line in a cell (errors.Interrupted), not nbtools' frames;
    one that already reads as a line (an inner call's, a Chat's) goes on as it is."""
    if hasattr(stop, "_render_traceback_"):
        return stop
    return Interrupted(f"tool {name!r}").with_traceback(stop.__traceback__)


def call_func(name: str, inputs: Any = None, ns: Any = None, raise_on_err: bool = True, **options: Any) -> Any:
    """Call tool `name` from namespace `ns` (None: the default registry) with `inputs` (dict or JSON).

    Returns what the function returned. Unknown names, bad arguments, refusals and the tool's own
    exceptions raise `ToolCallError`, or with `raise_on_err=False` return its text (for the model).
    `options`: `limits`, `approve`, `refuse_destructive` (default: the registry's settings).
    A bad `ns` (not a namespace, or a whole globals dict) raises TypeError: that is the caller's bug.
    A list `ns` is scanned by name on each call; for many calls, pass a Registry or `mk_ns(list)`.
    """
    if ns is None:
        ns = policy.default()
    if options:
        settings(ns, options)  # an unknown option is the caller's bug, whatever the name
    tool = None
    try:
        tool = resolve_tool(name, ns)
        # the policy of the registry the Tool came from (also through a dict or list of its Tools)
        limits, approve, refuse = settings(tool.__dict__.get("_source") or ns, options)  # policy.source_of
        return _call(tool, inputs, limits, approve, refuse)
    except KeyboardInterrupt as stop:  # a person's (a tool's own became a ToolCallError)
        raise _interrupted(name, stop) from None
    except ToolCallError as error:
        if tool is not None and error.tool == tool.name != name:
            error = _as_called(error, name)
            if raise_on_err:
                raise error from error.__cause__
        if raise_on_err:
            raise
        return str(error)


async def call_func_async(name: str, inputs: Any = None, ns: Any = None, raise_on_err: bool = True, *,
                          run_sync: Callable[[Callable[[], Any]], Awaitable[Any]] | None = None,
                          **options: Any) -> Any:
    """Like `call_func`, awaiting coroutine tools and async approval callbacks in the running loop.

    `run_sync`: an awaitable runner for a plain (non-async) tool's function, e.g.
    `anyio.to_thread.run_sync` (what `nbtools serve` uses): validation, conversion and approval stay
    on this loop, and only the call itself runs there.
    """
    if ns is None:
        ns = policy.default()
    if options:
        settings(ns, options)
    tool = None
    try:
        tool = resolve_tool(name, ns)
        limits, approve, refuse = settings(tool.__dict__.get("_source") or ns, options)  # policy.source_of
        return await _acall(tool, inputs, limits, approve, refuse, run_sync)
    except KeyboardInterrupt as stop:
        raise _interrupted(name, stop) from None
    except ToolCallError as error:
        if tool is not None and error.tool == tool.name != name:
            error = _as_called(error, name)
            if raise_on_err:
                raise error from error.__cause__
        if raise_on_err:
            raise
        return str(error)
