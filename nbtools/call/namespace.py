"""Namespaces: where a tool name may resolve, and nowhere else.

A namespace is a registry (any `policy.ToolSource`), a dict of name -> callable/Tool, or a list of
callables/Tools. Names match exactly (or as a provider-mapped form of a registered name); never an
attribute path, a dunder, the kernel's globals as a whole (a dict holding `__builtins__` is
refused), nor a class, module or builtin found in a dict. The Tool holds the object registered, so
rebinding a name later changes nothing. Tools of callables found in dicts and lists are cached
weakly; a list is scanned by name on each call (for many calls, use a Registry or `mk_ns(list)`).
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Mapping
from typing import Any, Iterable

from .. import policy
from ..errors import ToolCallError
from ..policy import DEFAULT_LIMITS, Limits, ToolSource
from ..spec import callable_spec
from ..tool import Tool
from ..shortening import short
from ..refusals import did_you_mean, got

_BUILTIN_CALLABLES = (types.BuiltinFunctionType, types.BuiltinMethodType, types.WrapperDescriptorType,
                      types.MethodWrapperType, types.MethodDescriptorType, types.ClassMethodDescriptorType)


def _not_a_tool(obj: Any) -> str | None:
    """Why an object found in a dict namespace is never called (None: it may be).

    Only Python-level functions, methods, partials of them, callable instances of Python classes
    and cache wrappers around functions qualify; classes, modules and builtins do not.
    """
    if isinstance(obj, Tool):
        return None
    if isinstance(obj, type):
        return "a class"
    if isinstance(obj, types.ModuleType):
        return "a module"
    if isinstance(obj, _BUILTIN_CALLABLES):
        return "a builtin"
    if isinstance(obj, functools.partial):
        return _not_a_tool(obj.func)
    if isinstance(obj, types.FunctionType):
        return None
    if isinstance(obj, types.MethodType):
        return _not_a_tool(obj.__func__)
    if not callable(obj):
        return f"not callable (a {type(obj).__name__})"
    if isinstance(getattr(type(obj), "__call__", None), types.FunctionType):
        return None  # an instance of a Python class with __call__
    wrapped = getattr(obj, "__wrapped__", None)
    if wrapped is not None and wrapped is not obj and isinstance(inspect.unwrap(obj), types.FunctionType):
        return None  # functools.cache / lru_cache around a function
    return "a builtin"


def _refuse_globals(ns: Mapping) -> None:
    if "__builtins__" in ns:
        raise TypeError("this namespace dict holds __builtins__: it is a module's or the kernel's globals, "
                        "and a model must not reach everything in it. Register the tools instead "
                        "(nbtools.registry, @tool, %%tool) or pass a dict/list of just the tools")


_DICT_TOOLS: Any = None  # WeakKeyDictionary: callable -> {name: its Tool without `fn`}, for dict namespaces


def _tool_named(name: str, obj: Any) -> Tool:
    """The Tool of a callable found under `name` in a dict namespace.

    The cache keeps each Tool without its function (a weak-key entry whose value held the key
    would never die, keeping every callable ever passed in a dict alive, closures and the data
    they hold included); the Tool handed out gets the callable back and shares the cached one's
    renders and compiled call plans.
    """
    import weakref

    global _DICT_TOOLS
    if isinstance(obj, Tool):
        return obj
    if _DICT_TOOLS is None:
        _DICT_TOOLS = weakref.WeakKeyDictionary()
    try:
        by_name = _DICT_TOOLS.get(obj)
    except TypeError:  # not weak-referenceable / unhashable: build each time
        by_name = None
    template = by_name.get(name) if by_name is not None else None
    if template is None:
        built = Tool.from_function(obj)
        if built.name != name:
            built = Tool.from_function(obj, name=name)
        try:
            _DICT_TOOLS.setdefault(obj, {})[name] = built.replace(fn=None, _cache=built._cache)
        except TypeError:
            pass
        return built
    return _with_fn(template, obj)


def _with_fn(template: Tool, fn: Any) -> Tool:
    """A copy of `template` holding `fn` (and sharing its cache): what `replace` does, without
    its field-by-field rebuild, which would triple the cost of a call through a dict."""
    tool = object.__new__(Tool)
    tool.__dict__.update(template.__dict__)
    tool.__dict__["fn"] = fn
    return tool


def _wire_match(name: str, names: Iterable[str]) -> str | None:
    """The registered name whose provider-mapped form is `name` (dotted or long names only)."""
    from ..formats import wire_names  # provider quirks, needed only for a name not found as given

    for candidate in names:
        if isinstance(candidate, str) and ("." in candidate or len(candidate) > 64 or not candidate.isidentifier()):
            if name in wire_names(candidate):
                return candidate
    return None


def _unknown(name: str, available: Iterable[str]) -> ToolCallError:
    names = sorted(str(item) for item in available)
    shown = ", ".join(short(item, 80) for item in names[:30]) + (", ..." if len(names) > 30 else "")
    tail = f"; available tools: {shown}" if names else "; no tools are available"
    # a name far longer than any tool's is quoted cut, and not compared (difflib is quadratic)
    guess = did_you_mean(name, names) if len(name) <= 200 else ""
    return ToolCallError(name, f"no tool named {short(repr(name), 200)}{guess}{tail}")


def check_namespace(ns: Any) -> None:
    """Raise TypeError for something that is not a namespace (a programming error, not the model's)."""
    if ns is None or isinstance(ns, ToolSource):
        return
    if isinstance(ns, Mapping):
        _refuse_globals(ns)
        return
    if isinstance(ns, (list, tuple)):
        return
    raise TypeError(f"ns must be a Registry, a dict of name -> callable/Tool, or a list of callables/Tools; "
                    f"got {type(ns).__name__}")


def resolve_tool(name: Any, ns: Any = None) -> Tool:
    """The Tool `name` means in namespace `ns` (None: the default registry), by exact name.

    Raises ToolCallError for an unknown, disabled or refused name, TypeError for a value of `ns`
    that is not a namespace (or is a whole globals dict).
    """
    if ns is None:
        ns = policy.default()
    if type(name) is str and isinstance(ns, ToolSource):  # the common case: one lookup
        found = ns.resolve(name)
        if found is not None and not (name.startswith("__") and name.endswith("__")):
            return found
    elif type(ns) is dict:
        _refuse_globals(ns)
    elif not isinstance(ns, ToolSource):
        check_namespace(ns)
    if type(name) is not str or not name:
        if not isinstance(name, str) or not name:
            raise ToolCallError(None, f"the tool name must be a non-empty string, got {got(name)}")
        name = str.__str__(name)
    if name.startswith("__") and name.endswith("__"):
        raise ToolCallError(name, "names with double underscores are never tools")
    if isinstance(ns, ToolSource):
        found = ns.resolve(name)
        if found is None:
            known = ns.get(name)
            if known is not None:
                raise ToolCallError(name, f"the tool {known.name!r} is disabled; it cannot be called now")
            raise _unknown(name, [tool.name for tool in ns.enabled()])
        return found
    if type(ns) is dict or isinstance(ns, Mapping):
        obj = ns.get(name)
        if type(obj) is Tool:
            return obj
        key = name if obj is not None or name in ns else _wire_match(name, ns.keys())
        if key is None:
            raise _unknown(name, [key for key, value in ns.items() if _not_a_tool(value) is None])
        obj = ns[key]
        reason = _not_a_tool(obj)
        if reason is not None:
            raise ToolCallError(name, f"{name!r} is {reason}, not a tool; classes, modules and builtins in a "
                                      "namespace dict are never called (register them explicitly as Tools)")
        return _tool_named(key, obj)
    return _from_list(name, ns)


def _from_list(name: str, items: list | tuple) -> Tool:
    """The Tool named `name` in a list namespace: a plain scan of the items' names (cheap: each
    function's spec is cached), and a Tool only for the one found. For many calls over many tools,
    a Registry or `mk_ns(...)` resolves by one dict lookup instead."""
    names: list[str] = []
    matches: list[Any] = []
    for item in items:
        item_name = item.name if type(item) is Tool else callable_spec(item).name
        names.append(item_name)
        if item_name == name:
            matches.append(item)
    key = name
    if not matches:
        key = _wire_match(name, names)
        if key is None:
            raise _unknown(name, [item_name for item_name in names if item_name])
        matches = [item for item, item_name in zip(items, names) if item_name == key]
    tool = _tool_named(key, matches[0])  # Tools of functions cached weakly, as for dicts
    for other in matches[1:]:
        if other is not matches[0] and (other.fn if isinstance(other, Tool) else other) is not tool.fn:
            raise ValueError(f"two different tools are named {key!r} in this namespace list")
    return tool


def _list_tools(items: Iterable[Any]) -> dict[str, Tool]:
    """name -> Tool for every item of a list namespace (two different tools of one name: ValueError)."""
    tools: dict[str, Tool] = {}
    for item in items:
        built = item if isinstance(item, Tool) else Tool.from_function(item)
        if built.name in tools and tools[built.name] is not built and tools[built.name].fn is not built.fn:
            raise ValueError(f"two different tools are named {built.name!r} in this namespace list")
        tools[built.name] = built
    return tools


def mk_ns(fs: Any = None) -> dict[str, Tool]:
    """A namespace (name -> Tool) from a list of callables/Tools, a dict, or a Registry.

    The Tools hold the objects given now, so rebinding a name later changes nothing. A dict is
    taken by its keys (exact names); its classes, modules and builtins are left out (they are
    tools only when registered explicitly), and a globals dict (holding `__builtins__`) is refused.
    `None` means the default registry's enabled tools.
    """
    if fs is None:
        fs = policy.default()
    if isinstance(fs, ToolSource):
        return {tool.name: tool for tool in fs.enabled()}
    if isinstance(fs, Mapping):
        _refuse_globals(fs)
        out: dict[str, Tool] = {}
        for key, value in fs.items():
            if not isinstance(key, str) or (key.startswith("__") and key.endswith("__")):
                continue
            if _not_a_tool(value) is None:
                out[key] = _tool_named(key, value)
        return out
    if callable(fs):  # a single callable or Tool
        fs = [fs]
    return _list_tools(fs)


def check_options(options: dict) -> None:
    """TypeError for a call option other than limits, approve and refuse_destructive (the caller's bug)."""
    unknown = set(options) - {"limits", "approve", "refuse_destructive"}
    if unknown:
        raise TypeError(f"unknown call option(s): {', '.join(sorted(unknown))}; "
                        "expected limits, approve, refuse_destructive")


def settings(ns: Any, options: dict) -> tuple[Limits, Any, bool]:
    """(limits, approve, refuse_destructive): explicit options over the namespace's registry settings."""
    if isinstance(ns, ToolSource):
        limits, approve, refuse = ns.policy()
    else:
        limits, approve, refuse = DEFAULT_LIMITS, None, False
    if options:
        check_options(options)
        limits = options.get("limits") or limits
        approve = options.get("approve", approve)
        refuse = bool(options.get("refuse_destructive", refuse))
    return limits, approve, refuse
