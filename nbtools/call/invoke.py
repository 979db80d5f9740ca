"""Running a tool: the approval check, the call itself (sync or async), and the tool's own errors.

`call_tool`/`acall_tool` run a Tool; `call_func`/`call_func_async` first resolve a name in a
namespace (`namespace`). Sync code waits for a coroutine tool with `run_awaitable`, which also works
inside a running event loop (a notebook cell). An exception the tool raises becomes a
`ToolCallError` naming the exception and the tool's own line, its traceback trimmed of the frames
of nbtools and the asyncio/threading plumbing.
"""

from __future__ import annotations

import asyncio
import contextvars
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
from ..policy import DEFAULT_LIMITS, Limits, ToolSource
from ..tool import Tool
from ..interp.pytool import python as _python, python_async as _python_async
from .asking import _UNSET, SKIP, Asking, approval, is_pending, refused, with_python_allow
from .items import aread_items
from .namespace import check_options, resolve_tool
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
    started = threading.Event()

    async def tracked() -> Any:
        outcome["task"], outcome["loop"] = asyncio.current_task(), asyncio.get_running_loop()
        started.set()
        return await wait()

    def worker() -> None:
        try:
            outcome["value"] = asyncio.run(tracked())
        except BaseException as error:  # handed to the waiting thread, which re-raises it
            outcome["error"] = error
        finally:
            started.set()

    # The caller's context goes along: the cell's output parent (so a prompt or a print shows
    # under the cell that made the call) and who asks (`policy.asking_as`), and
    # a sub-agent's usage reaching its Chat.
    context = contextvars.copy_context()
    thread = threading.Thread(target=context.run, args=(worker,), name="nbtools-await", daemon=True)
    thread.start()
    try:
        thread.join()
    except KeyboardInterrupt:  # a person's interrupt: stop the awaitable too (a prompt closes, "interrupted")
        started.wait(5)
        task, loop = outcome.get("task"), outcome.get("loop")
        if task is not None and loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:  # the loop closed meanwhile
                pass
        thread.join(5)
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def _may_run(tool: Tool, rules: tuple) -> None:
    """Refuse a Tool with no function, or one disabled in the registry it came from (when that
    registry did not look it up itself, so it is not known to be enabled there)."""
    if tool.fn is None:
        raise ToolCallError(tool.name, "this tool has no function to call (it is a definition only)")
    first, checked = rules[0], rules[1]
    if first is not None and not checked:
        name = first.registered_name(tool)
        if name is not None and first.is_disabled(name):
            raise refused(tool, f"the tool {name!r} is disabled in its registry; it cannot be called now")


def _drive(asking: Asking) -> tuple[tuple, dict]:
    """Ask from synchronous code: awaitables are waited for with `run_awaitable` (in a kernel, an
    ApprovalPrompt is then answered through a subshell)."""
    for layer in asking.layers:
        answer = asking.question(layer)
        if answer is SKIP:
            continue
        if answer is not True and is_pending(answer):  # a plain yes: no call to ask
            try:
                answer = run_awaitable(answer)
            except BaseException as error:
                asking.failed(error)
        asking.settle(answer)
    return asking.positional, asking.kwargs


async def _adrive(asking: Asking) -> tuple[tuple, dict]:
    """Ask in this event loop."""
    for layer in asking.layers:
        answer = asking.question(layer)
        if answer is SKIP:
            continue
        if answer is not True and is_pending(answer):  # a plain yes: no call to ask
            try:
                answer = await answer
            except BaseException as error:
                asking.failed(error)
        asking.settle(answer)
    return asking.positional, asking.kwargs


_PLAIN_TYPES = frozenset((int, float, str, bool, type(None), dict, list, tuple))


def _call(tool: Tool, inputs: Any, limits: Limits, rules: tuple) -> Any:
    """The call: may it run, its arguments (`prepare`), the approval of a destructive tool, the
    function. `_acall` is its twin in an event loop."""
    fn = tool.fn
    if fn is None or not rules[1]:
        _may_run(tool, rules)
    positional, kwargs, raw = prepare(tool, inputs, limits)
    if fn is _python or fn is _python_async:  # the registry's `python_allow`, shown in the approval
        kwargs = with_python_allow(tool, rules[0], kwargs)
    if "destructive" in tool.hints:
        asking = approval(tool, limits, rules, positional, kwargs, raw)
        if asking is not None:
            positional, kwargs = _drive(asking)
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


async def _acall(tool: Tool, inputs: Any, limits: Limits, rules: tuple,
                 run_sync: Callable[[Callable[[], Any]], Awaitable[Any]] | None = None) -> Any:
    fn = tool.fn
    if fn is None or not rules[1]:
        _may_run(tool, rules)
    positional, kwargs, raw = prepare(tool, inputs, limits)
    if fn is _python or fn is _python_async:  # the registry's `python_allow`, shown in the approval
        kwargs = with_python_allow(tool, rules[0], kwargs)
    if "destructive" in tool.hints:
        asking = approval(tool, limits, rules, positional, kwargs, raw)
        if asking is not None:
            positional, kwargs = await _adrive(asking)
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


def _policies(tool: Tool, ns: Any, limits: Any, approve: Any, refuse_destructive: Any) -> tuple[Limits, tuple]:
    """The limits of a call of `tool` and its policy: (the registry the Tool came from, else `ns`
    when it is a registry; whether that registry itself looked the tool up, so it is known to be
    enabled there; the explicit `approve` and `refuse_destructive`, `_UNSET` when not given).
    `asking.approval` reads that registry's policy layers, then every registry the tool was added from
    (`policy.layers_of`: all must allow, the stricter wins), only for a destructive tool."""
    first = tool.source
    checked = first is not None and first is ns
    if first is None and isinstance(ns, ToolSource):
        first, checked = ns, True
    if limits is None:
        limits = first.limits if first is not None else DEFAULT_LIMITS
    return limits, (first, checked, approve, refuse_destructive)


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
        limits, rules = _policies(tool, None, limits, approve, refuse_destructive)
        return _call(tool, args, limits, rules)
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
        limits, rules = _policies(tool, None, limits, approve, refuse_destructive)
        return await _acall(tool, args, limits, rules)
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
    renamed = type(error)(name, error.problem, error.argument, error.schema,
                          schema_text=getattr(error, "_schema_text", None))
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
        check_options(options)  # an unknown option is the caller's bug, whatever the name
    tool = None
    try:
        # a plain name in a registry: one lookup in its table of callable Tools (ToolSource._callable);
        # resolve_tool asks the registry itself, says why a name is not found and refuses a dunder
        # (`name[0]`: str.startswith parses its arguments, 3x the cost)
        table = ns._callable if isinstance(ns, ToolSource) else None
        tool = table.get(name) if table is not None and type(name) is str else None
        if tool is None or name[0] == "_":
            tool = resolve_tool(name, ns)
        # the policy of the registry the Tool came from (also through a dict or list of its Tools);
        # plain calls, not `_call(*...)`: a star call is a slower call and the hot path has two
        first = tool.source
        if first is ns and not options:  # the common case: a Tool looked up in its own registry
            # its limits, without the property's call for a registry that is not a view
            limits = (first._limits or DEFAULT_LIMITS) if first._parent is None else first.limits
            return _call(tool, inputs, limits, (first, True, _UNSET, _UNSET))
        limits, rules = _policies(tool, ns, options.get("limits"), options.get("approve", _UNSET),
                                  options.get("refuse_destructive", _UNSET))
        return _call(tool, inputs, limits, rules)
    except KeyboardInterrupt as stop:  # a person's (a tool's own became a ToolCallError)
        raise _interrupted(name, stop) from None
    except ToolCallError as error:
        return _answer_for_caller(error, tool, name, raise_on_err)



def _answer_for_caller(error: ToolCallError, tool: Any, name: str, raise_on_err: bool) -> str:
    """A refused or failed call as its caller gets it (`call_func` and `call_func_async`): named as
    the caller called the tool (a provider-mapped name), raised, or its text for the model."""
    if tool is not None and error.tool == tool.name != name:
        renamed = _as_called(error, name)
        if raise_on_err:
            raise renamed from error.__cause__
        error = renamed
    if raise_on_err:
        raise error
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
        check_options(options)
    tool = None
    try:
        table = ns._callable if isinstance(ns, ToolSource) else None
        tool = table.get(name) if table is not None and type(name) is str else None
        if tool is None or name[0] == "_":
            tool = resolve_tool(name, ns)
        first = tool.source
        if first is ns and not options:  # the common case: a Tool looked up in its own registry
            limits = (first._limits or DEFAULT_LIMITS) if first._parent is None else first.limits
            return await _acall(tool, inputs, limits, (first, True, _UNSET, _UNSET), run_sync)
        limits, rules = _policies(tool, ns, options.get("limits"), options.get("approve", _UNSET),
                                  options.get("refuse_destructive", _UNSET))
        return await _acall(tool, inputs, limits, rules, run_sync)
    except KeyboardInterrupt as stop:
        raise _interrupted(name, stop) from None
    except ToolCallError as error:
        return _answer_for_caller(error, tool, name, raise_on_err)
