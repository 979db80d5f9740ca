"""The neutral Tool record: one immutable description of one callable, built once and cached.

Everything downstream (formats, dispatch, magics, MCP) reads the Tool, never the function again.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable

from . import ir

HINTS = ("read-only", "destructive", "idempotent", "open-world")


@dataclass(frozen=True, eq=False)
class Tool:
    """A callable described for a language model.

    Fields:
        name: the tool's name as the model sees it (may contain dots for sub-tools, `obj.fn`;
            formats map such names reversibly for providers that refuse them).
        description: the text for the model ("" when the function has no docstring).
        parameters: JSON Schema (draft 2020-12) of the arguments object; root is always
            `{"type": "object", ...}`.
        fn: what runs (a function, bound method, partial, callable instance, or a dispatch function
            for tools built from a schema). None only for definitions that cannot be called.
        returns: JSON Schema of the return value, or None when the return is not annotated.
        returns_description: the return value's description, if any.
        group: a free-form group name (for selection and display).
        hints: a subset of HINTS (`read-only`, `destructive`, `idempotent`, `open-world`).
        strict: whether `.schema(fmt)` renders strict output by default.
        args: the intermediate form of the arguments object (an `ir.Object` whose fields are the
            parameters), used by `call` to validate and convert; None means "validate against
            `parameters` only" (see `inverse.schema_to_ir`).
        passing: how each parameter is passed: tuple of (name, kind) where kind is "positional"
            (positional-only), "keyword" (positional-or-keyword and keyword-only), "varargs" (*args,
            a JSON array) or "varkw" (**kwargs: the extra keys of the arguments object).
        is_async: whether calling `fn` returns an awaitable.
    """

    name: str
    description: str
    parameters: dict
    fn: Callable[..., Any] | None = None
    returns: dict | None = None
    returns_description: str | None = None
    group: str | None = None
    hints: frozenset[str] = frozenset()
    strict: bool = False
    args: ir.Object | None = None
    passing: tuple[tuple[str, str], ...] = ()
    is_async: bool = False
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def from_function(cls, fn: Callable[..., Any], **overrides: Any) -> "Tool":
        """Describe `fn` (any callable kind). `overrides`: name, description, group, hints, strict."""
        from .introspect import tool_from_function

        return tool_from_function(fn, **overrides)

    @classmethod
    def from_schema(
        cls, name: str, description: str, parameters: dict, fn: Callable[..., Any] | None, **meta: Any
    ) -> "Tool":
        """A Tool from a JSON Schema; calls validate against `parameters` and pass `**arguments` to fn."""
        from .inverse import tool_from_schema

        return tool_from_schema(name, description, parameters, fn, **meta)

    def replace(self, **changes: Any) -> "Tool":
        """A copy with some fields changed (the render cache is not carried over)."""
        changes.setdefault("_cache", {})
        if "hints" in changes:
            changes["hints"] = normalise_hints(changes["hints"])
        return replace(self, **changes)

    # -- rendering ------------------------------------------------------------------------------
    def schema(self, fmt: str | None = None, strict: bool | None = None) -> dict:
        """The tool definition in format `fmt` (see `formats.FORMATS`); cached per (fmt, strict).

        A fresh top-level dict is returned each time so adding keys (e.g. Anthropic's
        `cache_control`) never touches the cache; nested parts are shared and must not be mutated.
        """
        strict = self.strict if strict is None else strict
        key = (fmt, strict)
        rendered = self._cache.get(key)
        if rendered is None:
            from .formats import render

            rendered = render(self, fmt, strict=strict)
            self._cache[key] = rendered
        return _fresh_top(rendered)

    # -- calling --------------------------------------------------------------------------------
    def call(self, args: dict | str | bytes | None = None, **options: Any) -> Any:
        """Validate and convert `args` (dict or JSON text), then call. Raises ToolCallError."""
        from .call import call_tool

        return call_tool(self, args, **options)

    async def acall(self, args: dict | str | bytes | None = None, **options: Any) -> Any:
        """Like `call`, awaiting coroutine functions."""
        from .call import acall_tool

        return await acall_tool(self, args, **options)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly (no validation), so a Tool stays usable as code."""
        if self.fn is None:
            raise TypeError(f"tool {self.name!r} has no function to call")
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        params = ", ".join(self.parameters.get("properties", {}))
        extra = f", group={self.group!r}" if self.group else ""
        if self.hints:
            extra += f", hints={sorted(self.hints)}"
        return f"Tool({self.name}({params}){extra})"


def _fresh_top(rendered: dict) -> dict:
    top = dict(rendered)
    inner = top.get("function")
    if isinstance(inner, dict):  # OpenAI chat nests the definition one level down
        top["function"] = dict(inner)
    return top


def normalise_hints(hints: Any) -> frozenset[str]:
    """Hints as a frozenset, accepting a string ("read-only"), an iterable, or underscores."""
    if not hints:
        return frozenset()
    if isinstance(hints, str):
        hints = hints.replace(",", " ").split()
    out = set()
    for hint in hints:
        norm = str(hint).strip().lower().replace("_", "-")
        if norm == "readonly":
            norm = "read-only"
        if norm == "openworld":
            norm = "open-world"
        if norm not in HINTS:
            raise ValueError(f"unknown tool hint {hint!r}; expected one of {', '.join(HINTS)}")
        out.add(norm)
    return frozenset(out)


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    group: str | None = None,
    hints: Any = None,
    strict: bool | None = None,
    registry: Any = None,
) -> Any:
    """Register a function as a tool: `@tool`, `@tool()`, or `@tool(name=..., group=..., ...)`.

    The function is returned unchanged (still directly callable); its Tool goes into `registry`
    (default: the process-wide `nbtools.registry`).
    """

    def register(func: Callable[..., Any]) -> Callable[..., Any]:
        _refuse_unbound_method(func)
        overrides: dict[str, Any] = {}
        for key, value in (("name", name), ("description", description), ("group", group),
                           ("hints", hints), ("strict", strict)):
            if value is not None:
                overrides[key] = value
        built = Tool.from_function(func, **overrides)
        target = registry
        if target is None:
            from .registry import registry as target
        target.add(built)
        return func

    if fn is not None:
        return register(fn)
    return register


def _refuse_unbound_method(func: Any) -> None:
    """`@tool` on a method inside a class body sees a plain function taking `self`: the model would
    have to send `self` (any JSON value) and the method would run on it. Say what to do instead."""
    import inspect

    qualname = getattr(func, "__qualname__", "")
    if not inspect.isfunction(func) or "." not in qualname or qualname.split(".")[-2] == "<locals>":
        return
    first = next(iter(inspect.signature(func).parameters), None)
    if first not in ("self", "cls"):
        return
    from .errors import SchemaError

    raise SchemaError(qualname, first, "@tool is applied inside the class body, before any instance exists, "
                      f"so the model would have to send {first!r}; register a bound method instead "
                      "(`registry.add(instance.method)` or `for t in tools_from(instance): registry.add(t)`), "
                      "or make it a @staticmethod")


__all__ = ["Tool", "tool", "HINTS", "normalise_hints"]
