"""Registries: named collections of Tools, the explicit namespace calls resolve in.

The default `registry` lives here (not in `nbtools/__init__.py`) so `%reload_ext nbtools` keeps it.
A Registry is the `policy.ToolSource` that dispatch (`nbtools.call`) reads: dispatch never imports
this module, so `Registry.call` reaching `nbtools.call` (on first use) ties no pair of modules.
"""

from __future__ import annotations

import threading
import warnings
from typing import Any, Callable, Iterable, Iterator

from .policy import DEFAULT_LIMITS, Limits, ToolSource, bind, origin_of, set_default, source_of
from .formats.catalog import neutral_as_none
from .tool import Tool, dispatch, normalise_hints


# Guards each registry's table of callable Tools against a change coming while it is stored; one
# for all registries (held only for a store or a change), not one each: a Registry, and the Tools
# carrying it, stay copyable by `copy.deepcopy`, which a lock is not.
_TABLE_LOCK = threading.Lock()


class Registry(ToolSource):
    """A named collection of Tools.

    Args:
        tools: initial tools or callables.
        approve: `callback(tool, args) -> bool | Decision` (or an awaitable of one) consulted
            before running a tool with the `destructive` hint; only True (or an allowing Decision)
            runs it. A callback accepting a keyword `origin` learns who asks ("call",
            "chat:<model>", "mcp:<client name>"). `nbtools.approval.ApprovalPrompt()` asks in the notebook.
        refuse_destructive: refuse every `destructive` tool outright.
        limits: argument limits for calls through this registry.

    The policy (`approve`, `refuse_destructive`, `limits`) holds on every path that runs the
    registry's tools: the Tools it hands out (`get`, `[name]`, iteration, `enabled`, `select`
    views) carry it in their `source` field, kept by every copy, so `registry.get(name).call(...)`,
    `mk_ns(registry)`, `list(registry)` and `Registry([registry["wipe"]])` ask the same questions
    as `registry.call(...)`. Settings changed later apply to those Tools too (read on every call).
    `decisions` is the audit log of approvals; `remembered` and `forget()` the answers given
    "for this tool" (Always allow / Always deny).
    """

    def __init__(self, tools: Iterable[Any] = (), *, approve: Callable[..., Any] | None = None,
                 refuse_destructive: bool = False, limits: Limits | None = None):
        super().__init__(limits=limits, approve=approve, refuse_destructive=refuse_destructive)
        self._tools: dict[str, Tool] = {}
        self._disabled: set[str] = set()
        self._wire: dict[str, str] = {}  # provider-mapped name -> tool name
        self._listeners: list[Callable[[], Any]] = []  # called after each change (see `on_change`)
        self._changes = 0  # how many changes so far: a table of callable Tools is kept only if none came
        # while it was built (see `resolve`; `_TABLE_LOCK`)
        self._copied = False  # shares its tools with a shallow copy: keeps no table (see `__copy__`)
        for item in tools:
            self.add(item)

    # -- what model code may touch ------------------------------------------------------------------
    _python_allow: Any = None

    @property
    def python_allow(self) -> Any:
        """The capability policy (`nbtools.Allow`) every run of the `python`/`python_async` tools
        called through this registry gets (None: runs as called, not contained). A model's
        arguments cannot widen it (they cannot name one); the approval shows it and
        `decisions` records it. A `select()` view reads its registry's live; set on both, and on a
        registry a Tool was added from, the stricter one wins."""
        own, parent = self._python_allow, self._parent
        inherited = getattr(parent, "python_allow", None) if parent is not None else None
        return inherited if own is None else own.narrowed(inherited)

    @python_allow.setter
    def python_allow(self, allow: Any) -> None:
        if allow is not None:
            from .interp.confine import Allow

            if not isinstance(allow, Allow):
                raise TypeError(f"python_allow takes an nbtools.Allow or None, got {type(allow).__name__}")
        self._python_allow = allow

    # -- membership ------------------------------------------------------------------------------
    def add(self, item: Any, **overrides: Any) -> Tool:
        """Add a Tool or a callable (described with `Tool.from_function`); the newer tool wins.

        Re-registering a name keeps the old tool's hints and group unless new ones are given
        (`@tool(hints="destructive")` then `%tool wipe` or `add(wipe)` stays destructive); give
        `hints=()` to drop them. Returns the Tool as stored (a copy bound to this registry).
        """
        overrides = {key: value for key, value in overrides.items() if value is not None}
        upstream = None
        if isinstance(item, Tool):
            # a Tool another registry handed out keeps that registry's policy here (stricter wins)
            upstream = source_of(item)
            if upstream is not None and upstream._memory is self._memory:
                upstream = None
            if overrides:
                built = item.replace(source=None, **overrides)
            else:
                built = origin_of(item)
                if built.source is not None:  # a copy made by replace(): unbind it, sharing its renders
                    built = built.replace(source=None, _cache=built._cache)
        else:
            built = Tool.from_function(item, **overrides)
        previous = self._tools.get(built.name)
        if previous is not None:
            if not _same_definition(previous.fn, built.fn):
                warnings.warn(f"tool {built.name!r} was already registered: replaced the earlier one with this "
                              "definition (the earlier function no longer runs as this tool)",
                              stacklevel=2)
            built = _keep_metadata(previous, built, overrides)
        self._tools[built.name] = bound = bind(built, self)
        if upstream is not None:
            self._upstream[built.name] = upstream
        else:
            self._upstream.pop(built.name, None)
        clash = self._index_wire_names(built.name)
        shadowed = self._wire.get(built.name)
        if shadowed is not None and shadowed != built.name:  # `a__b` added after `a.b`
            clash = (shadowed, built.name)
        if clash is not None:
            warnings.warn(f"tool {built.name!r} and tool {clash[0]!r} both become {clash[1]!r} for "
                          "providers that refuse some characters in names; rename one of them "
                          "(schemas() refuses such a pair for those formats)", stacklevel=2)
        self._changed()
        return bound

    def _index_wire_names(self, name: str) -> tuple[str, str] | None:
        """Map the provider forms of `name` back to it; returns (other tool, form) on a clash."""
        from .formats import wire_names

        clash = None
        for mapped in wire_names(name):
            if mapped == name:
                continue
            other = mapped if mapped in self._tools else self._wire.get(mapped)
            if other is not None and other != name and other in self._tools:
                clash = (other, mapped)
                continue  # the existing tool keeps the name: calls must not change target silently
            self._wire[mapped] = name
        return clash

    def remove(self, name_or_glob: str) -> list[str]:
        """Remove tools by exact name or glob; returns the names removed (KeyError if none)."""
        names = [name for name in self._tools if glob_matches(name, name_or_glob)]
        if not names:
            raise KeyError(f"no tool named {name_or_glob!r}")
        for name in names:
            del self._tools[name]
            self._disabled.discard(name)
            self._upstream.pop(name, None)
        self._wire = {}  # re-index: a provider form a removed tool held may now belong to another
        for name in self._tools:
            self._index_wire_names(name)
        self._changed()
        return names

    def clear(self) -> None:
        """Remove every tool."""
        self._tools.clear()
        self._disabled.clear()
        self._wire.clear()
        self._upstream.clear()
        self._changed()

    def get(self, name: str, default: Any = None) -> Tool | None:
        """The Tool registered under `name` (exact, case-sensitive; provider-mapped names accepted)."""
        found = self._tools.get(name)
        if found is None:
            original = self._wire.get(name)
            if original is not None:
                found = self._tools.get(original)
        return default if found is None else found

    def __getitem__(self, name: str) -> Tool:
        found = self.get(name)
        if found is None:
            raise KeyError(name)
        return found

    def resolve(self, name: str) -> Tool | None:
        """The Tool a model's call named, or None when unknown or disabled. Also builds the table
        `call_func` looks names up in first (`ToolSource._callable`, `_callable_table`), kept until
        the next change, for a registry whose answers change only with its own changes."""
        changes = self._changes  # read before the checks: a Tool borrowed meanwhile counts as a change
        # a subclass may answer otherwise (its own resolve, get or is_disabled): no table, asked each time
        if (self._callable is None and self._parent is None and not self._upstream and not self._copied
                and type(self) is Registry):
            table = self._callable_table()
            with _TABLE_LOCK:  # not kept if a change (by another thread) came meanwhile
                if changes == self._changes:
                    self._callable = table  # until the next change (`_changed`)
        found = self._tools.get(name)
        if found is None:
            found = self.get(name)
            if found is None:
                return None
        if (self._disabled or self._parent is not None or self._upstream) and self.is_disabled(found.name):
            return None
        return found

    def __copy__(self) -> "Registry":
        """`copy.copy`: another name for the same tools and enabled state (the containers shared, as
        a shallow copy shares them), so neither keeps a table of callable Tools from then on: a tool
        disabled through one is refused by the other."""
        copied = object.__new__(type(self))
        copied.__dict__.update(self.__dict__)
        with _TABLE_LOCK:
            self._copied = copied._copied = True
            self._callable = copied._callable = None
        return copied

    def _callable_table(self) -> dict[str, Tool]:
        """What `resolve` answers, as one dict (`ToolSource._callable`): the enabled Tools by name and
        by their provider-mapped names. Only for a registry whose answers change with its own changes
        alone (not a view, nothing added from another registry)."""
        tools, disabled = dict(self._tools), set(self._disabled)  # copies: another thread may be adding
        table = {mapped: tools[original] for mapped, original in list(self._wire.items())
                 if mapped not in tools and original in tools and original not in disabled}
        table.update((name, tool) for name, tool in tools.items() if name not in disabled)
        return table

    def __contains__(self, item: object) -> bool:
        if isinstance(item, Tool):
            found = self._tools.get(item.name)
            return found is not None and (found is item or origin_of(found) is origin_of(item))
        return isinstance(item, str) and self.get(item) is not None

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def names(self) -> list[str]:
        """The names of all registered tools, enabled or not, in registration order."""
        return list(self._tools)

    # -- change listeners (an MCP server tells its clients `notifications/tools/list_changed`) -------
    def on_change(self, callback: Callable[[], Any]) -> Callable[[], None]:
        """Call `callback()` after every change of what this registry holds or enables (add, remove,
        clear, enable/disable), on the thread that made it; returns a function that stops it.
        A callback that raises is reported as a warning and stays subscribed."""
        self._listeners.append(callback)

        def unsubscribe() -> None:
            if callback in self._listeners:
                self._listeners.remove(callback)

        return unsubscribe

    def _changed(self) -> None:
        with _TABLE_LOCK:  # after every change of what is callable: `resolve` builds it again
            self._callable = None
            self._changes += 1
        for callback in list(self._listeners):
            try:
                callback()
            except Exception as error:  # a listener's bug must not undo or fail the change itself
                warnings.warn(f"a Registry change listener raised {type(error).__name__}: {error}", stacklevel=3)

    # -- enabling ----------------------------------------------------------------------------------
    def enable(self, name: str, enabled: bool = True) -> None:
        """Enable or disable a tool: disabled tools are left out of `schemas()` and refused by calls."""
        tool = self[name]
        was_enabled = tool.name not in self._disabled
        if enabled:
            self._disabled.discard(tool.name)
        else:
            self._disabled.add(tool.name)
        if was_enabled != enabled:
            self._changed()

    def disable(self, name: str) -> None:
        """Disable a tool (see `enable`); it stays registered."""
        self.enable(name, False)

    def is_enabled(self, name: str) -> bool:
        """Whether `name` is registered and enabled (in a `select()` view: also in its registry)."""
        return name in self._tools and not self.is_disabled(name)

    def is_disabled(self, name: str) -> bool:
        """Whether `name` is disabled here, in a view's registry, or in the registry the tool was
        added from (`Registry([other["wipe"]])`): a disabled tool stays disabled everywhere."""
        return (name in self._disabled or (self._parent is not None and self._parent.is_disabled(name))
                or (bool(self._upstream) and self._disabled_upstream(name)))

    def _disabled_upstream(self, name: str) -> bool:
        upstream = self._upstream.get(name)
        tool = self._tools.get(name)
        if upstream is None or tool is None:
            return False
        there = upstream.registered_name(tool)
        return there is not None and upstream.is_disabled(there)

    def all_tools(self) -> list[Tool]:
        """Every registered Tool, enabled or not (what iteration gives)."""
        return list(self._tools.values())

    def enabled(self) -> list[Tool]:
        """The enabled Tools, in registration order."""
        if not (self._disabled or self._parent is not None or self._upstream):  # nothing can disable one
            return list(self._tools.values())
        return [tool for name, tool in self._tools.items() if not self.is_disabled(name)]

    # -- selection and rendering -------------------------------------------------------------------
    def select(self, allow: str | Iterable[str] | None = None, deny: str | Iterable[str] | None = None,
               hints: Any = None, group: str | None = None) -> "Registry":
        """A new Registry holding the enabled tools that match.

        `allow`/`deny` are globs (or lists of globs) on names; `hints` keeps tools carrying every
        given hint; `group` keeps one group. The view reads this registry's approval, refusal and
        limits live (set after the view was made, they still hold), see `policy.ToolSource`.
        """
        allow_globs = [allow] if isinstance(allow, str) else list(allow or [])
        deny_globs = [deny] if isinstance(deny, str) else list(deny or [])
        wanted_hints = normalise_hints(hints)
        view = Registry()
        view._parent = self
        view._memory = self._memory  # remembered answers and the audit log are the registry's
        for tool in self.enabled():
            if allow_globs and not any(glob_matches(tool.name, glob) for glob in allow_globs):
                continue
            if any(glob_matches(tool.name, glob) for glob in deny_globs):
                continue
            if not wanted_hints <= tool.hints:
                continue
            if group is not None and tool.group != group:
                continue
            view._tools[tool.name] = bind(tool, view)
            view._index_wire_names(tool.name)
        return view

    def schemas(self, fmt: str | None = None, strict: bool | None = None) -> list[dict]:
        """Tool definitions of every enabled tool, in format `fmt` (see `get_schema`).

        Raises ValueError when two tools get the same name in `fmt` (e.g. `a.b` and `a__b` for
        OpenAI): the provider would refuse the list, or calls would reach the wrong tool.
        """
        fmt = neutral_as_none(fmt)
        tools = self.enabled()
        if fmt is not None and len(tools) > 1:
            from .formats import wire_name

            owners: dict[str, str] = {}
            for tool in tools:
                mapped = wire_name(tool.name, fmt)
                owner = owners.setdefault(mapped, tool.name)
                if owner != tool.name:
                    raise ValueError(f"tools {owner!r} and {tool.name!r} both become {mapped!r} in format "
                                     f"{fmt!r}; rename one of them (e.g. registry.add(fn, name=...)) or "
                                     "leave one out with select(deny=...)")
        return [tool.schema(fmt, strict) for tool in tools]

    # -- calling (nbtools.call, imported on first use: `import nbtools` stays light) ----------------
    def call(self, name: str, args: Any = None, **options: Any) -> Any:
        """Run tool `name` with `args` (dict or JSON text): `call_func(name, args, ns=self, ...)`.

        Returns what the tool returned; a refused or failing call raises `ToolCallError`, or with
        `raise_on_err=False` returns its text for the model.
        """
        return dispatch().call_func(name, args, ns=self, **options)

    async def acall(self, name: str, args: Any = None, **options: Any) -> Any:
        """Like `call`, awaiting coroutine tools and async approval callbacks in the running loop."""
        return await dispatch().call_func_async(name, args, ns=self, **options)

    def code_tool(self, name: str = "run_code", *, tools: Any = "*", max_tool_calls: int = 100,
                  timeout: float = 30, memory: int | str = "256MiB") -> Tool:
        """A Tool (one string parameter `code`) that runs a model's Python code in Monty, where the
        chosen tools (`tools`: a glob or a list of them) are functions whose every call goes through
        this registry as a direct call does (asked for by `<origin>/code`). See `nbtools.codemode`;
        running it needs the `[codemode]` extra (making it does not)."""
        from .codemode import code_tool

        return code_tool(self, name, tools=tools, max_tool_calls=max_tool_calls, timeout=timeout, memory=memory)

    def __repr__(self) -> str:
        return f"Registry({len(self)} tools: {', '.join(self._tools)})"


def glob_matches(name: str, pattern: str) -> bool:
    """Whether tool `name` is `pattern` itself or matches it as a case-sensitive glob: the one rule
    for names and globs (`select`, `remove`, `%tools GLOB`, `%untool`, and the panel's filter).
    The exact comparison comes first so a name holding glob characters (`a[1]`) matches itself."""
    if name == pattern:
        return True
    import fnmatch  # only for a glob (as the policy's rules do): not a module `import nbtools` loads

    return fnmatch.fnmatchcase(name, pattern)


def _keep_metadata(previous: Tool, built: Tool, overrides: dict) -> Tool:
    """`built` with `previous`'s hints and group where none were given: re-running a cell or
    registering a function again must not silently drop `destructive` (and with it the approval)."""
    changes: dict[str, Any] = {}
    if "hints" not in overrides and not built.hints and previous.hints:
        changes["hints"] = previous.hints
    if "group" not in overrides and built.group is None and previous.group is not None:
        changes["group"] = previous.group
    return built.replace(**changes) if changes else built


def _same_definition(old: Any, new: Any) -> bool:
    """Whether `new` is `old` or the same definition run again (a notebook cell re-executed):
    replacing it then is an update, not a name collision worth a warning."""
    if old is new:
        return True
    old_fn, new_fn = getattr(old, "__func__", old), getattr(new, "__func__", new)
    qualname = getattr(old_fn, "__qualname__", None)
    return (type(old_fn) is type(new_fn) and isinstance(qualname, str) and not qualname.endswith("<lambda>")
            and qualname == getattr(new_fn, "__qualname__", None)
            and getattr(old_fn, "__module__", None) == getattr(new_fn, "__module__", None))


registry = Registry()
"""The default, process-wide registry (in a kernel: the in-kernel registry)."""
set_default(registry)

__all__ = ["Registry", "registry", "Limits", "DEFAULT_LIMITS"]
