"""Python objects -> Tools: `@tool`, `get_schema`, `tools_from`, and which functions of a module count.

Describing one callable is `spec.py` (cached per function object) and `Tool.from_function`; this
module holds what people call on functions, modules and instances.
"""

from __future__ import annotations

import inspect
import types
from typing import Any, Callable

from .errors import SchemaError
from .registry import registry as default_registry
from .spec import Spec, callable_spec, method_taken_from_class
from .formats.catalog import fresh_top, neutral_as_none
from .tool import Tool, normalise_hints

__all__ = ["tool", "get_schema", "tools_from", "module_functions", "tool_from_function", "callable_spec", "Spec"]


def tool_from_function(fn: Callable[..., Any], **overrides: Any) -> Tool:
    """The Tool of callable `fn` (the same as `Tool.from_function(fn, **overrides)`)."""
    return Tool.from_function(fn, **overrides)


def get_schema(f: Callable[..., Any], fmt: str | None = None, *, strict: bool = False,
               name: str | None = None) -> dict:
    """The tool definition of callable `f` in format `fmt`, built once and cached per function object.

    `fmt`: None or "neutral" (name, description, parameters), "openai", "responses", "anthropic",
    "gemini", "gemini-openapi" or "mcp"; an unknown format raises ValueError. `strict=True`: the
    strict-mode form for "openai", "responses" and "anthropic" (other formats ignore it).
    `name`: the tool name to use instead of the function's (required for a lambda). Raises
    `SchemaError` naming the function, parameter and reason when `f` has no faithful definition.
    """
    fmt = neutral_as_none(fmt)
    if name is None and not isinstance(f, Tool):
        # warm path: the rendered definition is cached on the spec, no Tool needs building
        spec = callable_spec(f)
        rendered = spec.render_cache.get((fmt, strict))
        if rendered is not None and spec.name:
            return fresh_top(rendered)
    built = Tool.from_function(f, name=name) if name else Tool.from_function(f)
    return built.schema(fmt, strict)


def tools_from(obj: Any, group: str | None = None, hints: Any = None) -> list[Tool]:
    """One Tool per public function/method of a module (see `module_functions`), class, instance or
    Tool-bearing object.

    Sub-tools are named `prefix.fn`, the prefix being `group` when given, else the module's last
    name component or the lower-cased class name; each carries that group and the given hints.
    """
    if isinstance(obj, types.ModuleType):
        prefix = obj.__name__.rsplit(".", 1)[-1]
        members = module_functions(obj)
    else:
        cls = obj if isinstance(obj, type) else type(obj)
        prefix = cls.__name__.lower()
        members = []
        for name in dir(obj):
            if name.startswith("_"):
                continue
            try:
                raw = inspect.getattr_static(obj, name)
            except AttributeError:
                continue
            # decide from the static attribute: listing members never runs a property getter
            if isinstance(raw, Tool):
                members.append((name, raw))
            elif isinstance(obj, type):
                if isinstance(raw, (staticmethod, classmethod)):
                    members.append((name, getattr(obj, name)))
            elif isinstance(raw, (types.FunctionType, staticmethod, classmethod)):
                members.append((name, getattr(obj, name)))
    prefix = group or prefix
    tools = []
    for name, value in members:
        sub_name = f"{prefix}.{name}"
        if isinstance(value, Tool):
            tools.append(value.replace(name=sub_name, group=prefix, hints=value.hints | normalise_hints(hints)))
        else:
            tools.append(Tool.from_function(value, name=sub_name, group=prefix, hints=hints))
    if not tools:
        raise SchemaError(None, None, f"{obj!r} has no public functions or methods to make tools of")
    return tools


def module_functions(module: types.ModuleType) -> list[tuple[str, Any]]:
    """The public functions of `module` as (name, value) pairs, in order: the callables other than
    classes that its `__all__` names; without `__all__`, the public functions it defines itself and
    the Tools it holds. The one rule for `tools_from(module)` and the `nbtools` command's module targets.
    """
    exported = getattr(module, "__all__", None)
    if exported is not None:
        found = [(name, getattr(module, name, None)) for name in exported if isinstance(name, str)]
        return [(name, value) for name, value in found if callable(value) and not isinstance(value, type)]
    return [(name, value) for name, value in vars(module).items()
            if not name.startswith("_") and (isinstance(value, Tool) or (
                isinstance(value, types.FunctionType) and value.__module__ == module.__name__))]


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    group: str | None = None,
    hints: Any = None,
    strict: bool | None = None,
    registry: Any = None,
    task: str | None = None,
    callers: Any = None,
    defer: bool = False,
) -> Any:
    """Register a function as a tool: `@tool`, `@tool()`, or `@tool(name=..., group=..., ...)`.

    The function is returned unchanged (still directly callable); its Tool goes into `registry`
    (default: the process-wide `nbtools.registry`). `task`: "optional", "required" or "forbidden":
    whether an MCP server may (or must) run it as a task (None: the server's default, see
    `nbtools.mcp.tasks.task_support`). `callers`: who may call it, "direct" (the model)
    and/or "code" (code the model wrote), rendered as the providers' allowed callers; `defer=True`:
    rendered `defer_loading: true` for the providers' tool search.
    """

    def register(func: Callable[..., Any]) -> Callable[..., Any]:
        _refuse_unbound_method(func)
        overrides: dict[str, Any] = {}
        for key, value in (("name", name), ("description", description), ("group", group),
                           ("hints", hints), ("strict", strict), ("task", task), ("callers", callers),
                           ("defer", defer or None)):
            if value is not None:
                overrides[key] = value
        built = Tool.from_function(func, **overrides)
        if hints is not None:
            _remember_hints(func, built.hints)
        (default_registry if registry is None else registry).add(built)
        return func

    if fn is not None:
        return register(fn)
    return register


def _remember_hints(func: Any, hints: frozenset[str]) -> None:
    """Keep the hints on the function (`__tool_hints__`), so every later Tool made of it
    (`tools_from(module)`, `Tool.from_function`, `%tool`) stays destructive without being told again."""
    try:
        func.__tool_hints__ = tuple(sorted(hints))
    except (AttributeError, TypeError):  # a builtin or a bound method: the registry still has them
        pass


def _refuse_unbound_method(func: Any) -> None:
    """`@tool` on a method inside a class body sees a plain function taking `self`: the model would
    have to send `self` (any JSON value) and the method would run on it. Say what to do instead."""
    first = method_taken_from_class(func) if inspect.isfunction(func) else None
    if first is None:
        return
    raise SchemaError(func.__qualname__, first, "@tool is applied inside the class body, before any instance exists, "
                      f"so the model would have to send {first!r}; register a bound method instead "
                      "(`registry.add(instance.method)` or `for t in tools_from(instance): registry.add(t)`), "
                      "or make it a @staticmethod")
