"""The neutral Tool record: one immutable description of one callable, built once and cached.

Everything downstream (formats, dispatch, magics, MCP) reads the Tool, never the function again.
This module is at the bottom of the data path: at module level it imports only `ir`, `errors` and
`formats.catalog` (format names, which import nothing).
Its convenience methods reach their stage when called, and none of those stages imports this module
back except `call` (the one such edge): `from_function` -> `spec` (what a callable takes),
`from_schema` -> `schema.params`, `schema` -> `formats`, `call`/`acall` -> `call`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from . import ir
from .errors import SchemaError
from .formats.catalog import fresh_top, neutral_as_none

HINTS = ("read-only", "destructive", "idempotent", "open-world")

# Overrides of `from_function` that change what is rendered: with none of them, the Tool shares the
# render cache of its function's spec.
_RENDER_AFFECTING = ("name", "description", "hints", "strict", "callers", "defer")
# What `from_schema` accepts besides name, description, parameters and fn.
_SCHEMA_META = ("group", "hints", "strict", "returns", "returns_description", "callers", "defer")
# Who may call a tool (`callers`): the model itself, or code the model wrote (a provider's
# programmatic calling, `Registry.code_tool`).
CALLERS = ("direct", "code")


# A dataclass (fields, `dataclasses.replace`) whose methods are written here, not generated: the
# generated ones cost as much to import as the rest of this module (as for the nodes in `ir`).
@dataclass(init=False, repr=False, eq=False)
class Tool(ir._Frozen):
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
        hints: a subset of HINTS (`read-only`, `destructive`, `idempotent`, `open-world`), each
            possibly as `not-<hint>`: said explicitly not to hold (an MCP server's `destructiveHint:
            false`), which differs from leaving it unsaid where a default applies (MCP: destructive
            and open-world unless said otherwise).
        strict: whether `.schema(fmt)` renders strict output by default.
        args: the intermediate form of the arguments object (an `ir.Object` whose fields are the
            parameters), used by `call` to validate and convert; None means "validate against
            `parameters` only" (read with `schema.params.arguments_object`).
        passing: how each parameter is passed: tuple of (name, kind) where kind is "positional"
            (positional-only), "keyword" (positional-or-keyword and keyword-only), "varargs" (*args,
            a JSON array) or "varkw" (**kwargs: the extra keys of the arguments object); an extra
            entry (name, "default") marks an optional parameter whose default dispatch passes itself
            when it is left out (its Python default is a pydantic `Field(...)`, or it has none).
        is_async: whether calling `fn` returns an awaitable.
        task: how an MCP server runs the tool as a task (`@tool(task=...)`): "optional", "required" or
            "forbidden"; None: the server's default (`mcp.tasks.task_support`).
        callers: which callers may call the tool, a subset of CALLERS: "direct" (the model itself),
            "code" (code the model wrote: a provider's programmatic calling, `Registry.code_tool`);
            None: not said (providers then let the model call it directly; code mode may call it).
            A model's call by a caller left out is refused (`run_tool_calls`, Chat, code mode); the
            person's own calls (`registry.call`, `call_func`) are not checked.
        defer: rendered `defer_loading: true` where the provider has tool search (loaded on demand).
        source: the registry whose approval policy this Tool carries (set on the Tools a registry
            hands out; None for a Tool no registry handed out). Every copy keeps it (`replace`,
            `dataclasses.replace`, `copy.copy`), so a copy never runs without that policy.
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
    task: str | None = None
    callers: tuple[str, ...] | None = None
    defer: bool = False
    source: Any = field(default=None, repr=False, compare=False)
    # Renders and the compiled dispatch (see `call.plan`). Not an `__init__` argument, so
    # `dataclasses.replace` (like `replace`) starts a copy with its own: a changed field is never
    # answered from the original's cache. `copy.copy` and `bind` keep it (same fields).
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    # The registered Tool a bound copy was made from (`policy.bind`; None: this Tool is its own), for
    # `tool in registry`. Kept by the copies that are the same tool (`copy.copy`, `bind`, `replace`
    # of `source` alone); a copy with a changed field is another tool, with an identity of its own.
    _origin: Any = field(default=None, init=False, repr=False, compare=False)

    def __init__(self, name: str, description: str, parameters: dict, fn: Callable[..., Any] | None = None,
                 returns: dict | None = None, returns_description: str | None = None, group: str | None = None,
                 hints: frozenset[str] = frozenset(), strict: bool = False, args: ir.Object | None = None,
                 passing: tuple[tuple[str, str], ...] = (), is_async: bool = False, task: str | None = None,
                 callers: tuple[str, ...] | None = None, defer: bool = False, source: Any = None) -> None:
        self.__dict__.update(name=name, description=description, parameters=parameters, fn=fn, returns=returns,
                             returns_description=returns_description, group=group, hints=hints, strict=strict,
                             args=args, passing=passing, is_async=is_async, task=check_task(task),
                             callers=normalise_callers(callers), defer=bool(defer), source=source, _cache={},
                             _origin=None)

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def from_function(cls, fn: Callable[..., Any], **overrides: Any) -> "Tool":
        """Describe `fn` (any callable kind; a Tool is returned as it is, or with `overrides` applied).

        `overrides`: name, description, group, hints, strict, task, callers, defer (None means "not
        given"). Without `hints`, those `@tool(hints=...)` gave the function are kept (its `__tool_hints__`). Raises
        `SchemaError` naming the function, parameter and reason when `fn` has no faithful definition.
        """
        if isinstance(fn, Tool):
            given = {key: value for key, value in overrides.items() if value is not None}
            return fn.replace(**given) if overrides else fn
        from .spec import callable_spec

        spec = callable_spec(fn)
        name = overrides.get("name") or spec.name
        if not name:
            from .spec import unnamed_error

            raise unnamed_error(fn)
        given_hints = overrides.get("hints")
        if given_hints is None:  # the hints `@tool(hints=...)` gave the function (or its author, `__tool_hints__`)
            given_hints = getattr(fn, "__tool_hints__", None)
        hints = normalise_hints(given_hints)
        if "name" in overrides and overrides["name"] != spec.name:
            _check_name(overrides["name"])
        shares_cache = overrides.get("name") in (None, spec.name) and not hints and all(
            overrides.get(key) is None for key in _RENDER_AFFECTING if key != "name")
        description = overrides.get("description")
        built = cls(
            name=name,
            description=spec.description if description is None else description,
            parameters=spec.parameters,
            fn=fn,
            returns=spec.returns,
            returns_description=spec.returns_description,
            group=overrides.get("group"),
            hints=hints,
            strict=bool(overrides.get("strict") or False),
            args=spec.args,
            passing=spec.passing,
            is_async=spec.is_async,
            task=overrides.get("task"),
            callers=overrides.get("callers"),
            defer=bool(overrides.get("defer")),
        )
        if shares_cache:  # the same definition as every Tool of this function: one cache for all
            object.__setattr__(built, "_cache", spec.render_cache)
        return built

    @classmethod
    def from_schema(
        cls, name: str, description: str | None, parameters: dict | None, fn: Callable[..., Any] | None,
        **meta: Any,
    ) -> "Tool":
        """A Tool for a schema someone else wrote: calls validate against `parameters`, then `fn(**arguments)`.

        Arguments keep their original property names (which need not be Python identifiers), and
        their values stay plain JSON. `parameters` None means no parameters. `meta`: group, hints,
        strict, returns (a JSON Schema), returns_description. Raises `SchemaError` for an empty name,
        an unknown option, or `parameters` that is not an object schema (or is too large to read).
        """
        unknown = sorted(set(meta) - set(_SCHEMA_META))
        if unknown:
            raise SchemaError(None, None, f"Tool.from_schema: unknown option(s) {', '.join(unknown)}; "
                                          f"expected {', '.join(_SCHEMA_META)}")
        if not isinstance(name, str) or not name:
            raise SchemaError(None, None, f"Tool.from_schema: the tool name must be a non-empty string, "
                                          f"got {name!r}")
        from .schema.params import arguments_object, constrained, parameters_root

        parameters = parameters_root(name, parameters)
        args = arguments_object(name, parameters)
        # No "varkw" entry: extra keys the schema allows are not a Python **kwargs (strict mode
        # refuses an untyped open root rather than leaving it out as an optional catch-all).
        fn = constrained(name, parameters, fn)  # a root allOf/if/then/else: checked before each call
        passing = tuple((item.name, "keyword") for item in args.fields)
        return cls(
            name=name,
            description=description or "",
            parameters=parameters,
            fn=fn,
            returns=copy.deepcopy(meta.get("returns")),
            returns_description=meta.get("returns_description"),
            group=meta.get("group"),
            hints=normalise_hints(meta.get("hints")),
            strict=bool(meta.get("strict", False)),
            args=args,
            passing=passing,
            is_async=fn is not None and ir.is_async(fn),
            callers=meta.get("callers"),
            defer=bool(meta.get("defer", False)),
        )

    def replace(self, **changes: Any) -> "Tool":
        """A copy with some fields changed (the render cache is not carried over).

        `_cache=` (internal) shares a cache on purpose: a copy that renders and calls the same."""
        cache = changes.pop("_cache", None)
        if "hints" in changes:
            changes["hints"] = normalise_hints(changes["hints"])
        if "callers" in changes:
            changes["callers"] = normalise_callers(changes["callers"])
        copied = replace(self, **changes)
        if cache is not None:
            object.__setattr__(copied, "_cache", cache)
        if changes.keys() <= {"source"}:  # the same tool under another policy: the same identity
            object.__setattr__(copied, "_origin", self._origin)
        return copied

    # -- rendering ------------------------------------------------------------------------------
    def schema(self, fmt: str | None = None, strict: bool | None = None) -> dict:
        """The tool definition in format `fmt` (see `formats.FORMATS`; "neutral" is None); cached
        per (fmt, strict).

        A fresh top-level dict is returned each time so adding keys (e.g. Anthropic's
        `cache_control`) never touches the cache; nested parts are shared and read-only (a
        `TypeError` on change; `copy.deepcopy` gives a changeable copy).
        """
        fmt = neutral_as_none(fmt)
        strict = self.strict if strict is None else strict
        key = (fmt, strict)
        rendered = self._cache.get(key)
        if rendered is None:
            from .formats import render
            from .schema.frozen import freeze

            rendered = freeze(render(self, fmt, strict=strict))  # shared by every later call: read-only
            self._cache[key] = rendered
        return fresh_top(rendered)

    # -- calling --------------------------------------------------------------------------------
    def call(self, args: dict | str | bytes | None = None, **options: Any) -> Any:
        """Validate and convert `args` (dict or JSON text), then call. Raises ToolCallError."""
        return dispatch().call_tool(self, args, **options)

    async def acall(self, args: dict | str | bytes | None = None, **options: Any) -> Any:
        """Like `call`, awaiting coroutine functions."""
        return await dispatch().acall_tool(self, args, **options)

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


_DISPATCH: Any = None


def dispatch() -> Any:
    """`nbtools.call`, imported at the first call (`import nbtools` stays light) and kept: an import
    statement in every `Tool.call`/`Registry.call` cost ~0.5 us of a ~4 us call."""
    global _DISPATCH
    if _DISPATCH is None:
        from . import call

        _DISPATCH = call
    return _DISPATCH


def normalise_hints(hints: Any) -> frozenset[str]:
    """Hints as a frozenset, accepting a string ("read-only"), an iterable, or underscores.

    ValueError for an unknown hint or a contradictory pair (`read-only` with `destructive`) (on every path that takes hints: `@tool`, `Tool.from_function`,
    `Tool.from_schema`, `Registry.select`).
    """
    if not hints:
        return frozenset()
    if isinstance(hints, str):
        hints = hints.replace(",", " ").split()
    out = set()
    for hint in hints:
        norm = str(hint).strip().lower().replace("_", "-")
        negated = norm.startswith("not-")
        norm = norm.removeprefix("not-")
        norm = {"readonly": "read-only", "openworld": "open-world"}.get(norm, norm)
        if norm not in HINTS:
            raise ValueError(f"unknown tool hint {hint!r}; expected one of {', '.join(HINTS)} "
                             "(or one of them after 'not-', to say it explicitly does not hold)")
        out.add(f"not-{norm}" if negated else norm)
    for hint in HINTS:
        if hint in out and f"not-{hint}" in out:
            raise ValueError(f"contradictory tool hints {hint!r} and 'not-{hint}'; keep one of them")
    for pair in _CONTRADICTORY:
        if pair <= out:
            first, second = sorted(pair, key=HINTS.index)
            raise ValueError(f"contradictory tool hints {first!r} and {second!r}: a {first} tool changes nothing, "
                             f"so it cannot be {second}; keep one of them")
    return frozenset(out)


TASK_SUPPORT = ("optional", "required", "forbidden")


def check_task(task: Any) -> str | None:
    """`task=` of a Tool: None or one of TASK_SUPPORT (ValueError naming them otherwise)."""
    if task is not None and task not in TASK_SUPPORT:
        raise ValueError(f"task={task!r}: expected one of {', '.join(map(repr, TASK_SUPPORT))} (how an MCP "
                         "server may run the tool as a task), or None for the server's default")
    return task


def normalise_callers(callers: Any) -> tuple[str, ...] | None:
    """`callers` as a tuple in CALLERS' order (None stays None: not said); a string is one caller.
    ValueError for an unknown caller or an empty list (a tool nobody may call)."""
    if callers is None:
        return None
    given = (callers,) if isinstance(callers, str) else tuple(callers)
    unknown = [caller for caller in given if caller not in CALLERS]
    if unknown or not given:
        raise ValueError(f"callers={callers!r}: expected one or both of {', '.join(map(repr, CALLERS))} "
                         "(\"direct\": the model calls the tool; \"code\": code the model wrote calls it)")
    return tuple(caller for caller in CALLERS if caller in given)


# Hint pairs no tool can carry together (MCP: destructiveHint only means something when not read-only).
_CONTRADICTORY = (frozenset({"read-only", "destructive"}),)


def _check_name(name: Any) -> None:
    if not isinstance(name, str) or not name.strip():
        raise SchemaError(None, None, f"tool name must be a non-empty string, got {name!r}")


__all__ = ["Tool", "HINTS", "CALLERS", "normalise_hints", "normalise_callers"]
