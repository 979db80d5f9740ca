"""What dispatch needs from a registry, defined below both: the `Limits` on what a model may send,
the `ToolSource` interface (lookup by name, approval policy, decisions), `Decision`, who asks
(`asking_as`), and which source `ns=None` means.

`nbtools.call` reads registries only through this module and never imports `nbtools.registry`;
`Registry` implements `ToolSource` and, when its module is imported, installs the process-wide
`registry` as the default here. So the registry can run calls and dispatch can default to the
registry without the two modules importing each other.
"""

from __future__ import annotations

import contextvars
import operator
import sys
import weakref
from collections import deque
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Callable

# The records of this module generate no code (immutable dataclasses through ir's `_record`, plain
# slots classes): generating their methods cost a tenth of `from nbtools import call_func`'s import.
from .ir import _Record, _record

if TYPE_CHECKING:
    import datetime

    from .tool import Tool


@_record
class Limits(_Record):
    """Limits on what a model may send (checked before anything runs).

    Fields:
        max_bytes: size of the argument JSON text (also bounds any single string or list).
        max_depth: nesting depth of arrays/objects.
        max_string: longest string, in characters.
        max_items: longest array / largest object, in elements.
        max_int: integers must lie within ±max_int.
        max_result_chars: results longer than this are cut, with a marker saying so.
    """

    max_bytes: int = 1 << 20
    max_depth: int = 64
    max_string: int = 1 << 20
    max_items: int = 1 << 20
    max_int: int = 2**63
    max_result_chars: int = 100_000

    def __init__(self, max_bytes: int = 1 << 20, max_depth: int = 64, max_string: int = 1 << 20,
                 max_items: int = 1 << 20, max_int: int = 2**63, max_result_chars: int = 100_000):
        self.__dict__.update(max_bytes=max_bytes, max_depth=max_depth, max_string=max_string, max_items=max_items,
                             max_int=max_int, max_result_chars=max_result_chars)


DEFAULT_LIMITS = Limits()


def yes_or_no(answer: Any) -> bool | None:
    """The one rule for what counts as a yes or a no from an approval callback, plain or in a
    `Decision`: True and 1 are yes, False and 0 are no (also numpy's booleans and integers); None
    for anything else, however truthy ("yes", 2, a dict): such an answer is refused, never run."""
    if answer is True or answer is False:
        return answer
    if type(answer).__name__ in ("bool_", "bool"):  # numpy.bool_ (numpy.bool in 2.x) has no __index__
        return bool(answer)
    try:
        number = operator.index(answer)
    except TypeError:
        return None
    return True if number == 1 else False if number == 0 else None


@_record
class Decision(_Record):
    """What an approval callback may answer instead of a bool.

    Fields:
        allow: run the call (True) or refuse it (False). The rule of a plain answer holds
            (`yes_or_no`): 1 and 0 (numpy's too) are taken as True and False; anything else
            ("yes", 2, None) raises TypeError here, so a wrong answer is seen where it is made.
        args: edited arguments (a dict, or JSON text), validated again before the call runs.
        remember: "tool" allows (or refuses) this tool for the rest of the session without
            asking again; `registry.forget()` or `%tools --forget` clears it.
        reason: with a refusal, a sentence for the model (why not, what to do instead).
    """

    allow: bool
    args: Any = None
    remember: str | None = None
    reason: str | None = None

    def __init__(self, allow: bool, *, args: Any = None, remember: str | None = None, reason: str | None = None):
        if remember not in (None, "tool"):
            raise ValueError(f"Decision(remember=...) takes None or 'tool', got {remember!r}")
        verdict = yes_or_no(allow)
        if verdict is None:
            raise TypeError(f"Decision(allow=...) takes True or False (or 1 or 0), got {allow!r}")
        self.__dict__.update(allow=verdict, args=args, remember=remember, reason=reason)


class DecisionRecord(tuple):
    """One entry of `registry.decisions`: who decided what about which call.

    Fields:
        timestamp: wall-clock time of the decision (`time.time()`); `time` gives it as a local datetime.
        tool: the tool's name.
        arguments: the arguments as the call runs (or would have run) them, by parameter name.
        origin: who asked: "call", "chat:<model>" or "mcp:<client name>".
        verdict: "approved", "denied", "timed out", "client gave up", "interrupted", "invalid edit"
            or "failed" (the callback raised).
        by: "person" (a prompt), "callback" or "remembered" (an earlier Always allow / deny).
        reason: the reason given to the model with a refusal, or what went wrong.
        edited: whether the arguments were edited before the call.
    A tuple with named fields, made when the log is read (`Decisions` keeps the fields).
    """

    __slots__ = ()
    _fields = ("timestamp", "tool", "arguments", "origin", "verdict", "by", "reason", "edited")

    def __new__(cls, timestamp: float, tool: str, arguments: dict, origin: str, verdict: str, by: str,
                reason: str | None = None, edited: bool = False) -> "DecisionRecord":
        return tuple.__new__(cls, (timestamp, tool, arguments, origin, verdict, by, reason, edited))

    timestamp = property(operator.itemgetter(0), doc="wall-clock time of the decision (`time.time()`)")
    tool = property(operator.itemgetter(1), doc="the tool's name")
    arguments = property(operator.itemgetter(2), doc="the arguments as the call runs them, by parameter name")
    origin = property(operator.itemgetter(3), doc='who asked: "call", "chat:<model>" or "mcp:<client name>"')
    verdict = property(operator.itemgetter(4), doc='"approved", "denied", "timed out", ...')
    by = property(operator.itemgetter(5), doc='"person", "callback" or "remembered"')
    reason = property(operator.itemgetter(6), doc="the reason given with a refusal, or what went wrong")
    edited = property(operator.itemgetter(7), doc="whether the arguments were edited before the call")

    def __getnewargs__(self) -> tuple:  # copy and pickle call __new__ with the fields
        return tuple(self)

    def __eq__(self, other: object) -> bool:  # a record equals a record, never a bare tuple
        return other.__class__ is self.__class__ and tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = None  # type: ignore[assignment]  # holds the arguments dict

    @property
    def time(self) -> datetime.datetime:
        """When it was decided, as a local, time-zone-aware datetime."""
        import datetime  # only when a person reads the log

        return datetime.datetime.fromtimestamp(self.timestamp).astimezone()

    def __repr__(self) -> str:
        extra = (" (edited)" if self.edited else "") + (f": {self.reason}" if self.reason else "")
        return (f"{self.time:%H:%M:%S} {self.tool} {self.verdict} by {self.by} for {self.origin}"
                f"{extra} {self.arguments!r}")


# Values immutable all the way down: a snapshot keeps them as they are. Anything else (lists,
# dicts, dataclasses, models...) is copied deeply, so that neither a tool that consumes or mutates
# its arguments nor a callback that edits a nested value in place changes what the log says ran.
_ATOMIC = frozenset({str, int, float, bool, type(None), bytes, complex})
_atomic = _ATOMIC.issuperset


def snapshot(arguments: dict, *, marked: bool = True) -> dict:
    """A copy of `arguments` that shares nothing mutable with them: what the audit log keeps, and
    what an approval callback is given (its own, to edit in place without effect): immutable
    values as they are, every other value copied deeply (`_copied`). A value that cannot be
    copied is its marked repr (`marked`: the log's record), else the value itself (the callback's
    copy: it must see the object it approves)."""
    copied = arguments.copy()  # one frame, no comprehension: most values are scalars, kept
    for key, value in arguments.items():
        if type(value) not in _KEPT:
            try:
                copied[key] = _copied(value, 0)
            except Exception as error:  # e.g. an object holding a lock
                copied[key] = _not_copyable(value, error) if marked else value
    return copied


def snapshots(arguments: dict) -> tuple[dict, dict]:
    """Two `snapshot`s of `arguments` sharing nothing mutable with them nor with each other, made
    in one pass: the log's (marked) and the approval callback's (unmarked). For a call the log
    records and a callback is asked about, each object is looked at once (`_copied_twice`)."""
    kept, given = arguments.copy(), arguments.copy()
    for key, value in arguments.items():
        if type(value) not in _KEPT:
            try:
                kept[key], given[key] = _copied_twice(value, 0)
            except Exception as error:
                kept[key], given[key] = _not_copyable(value, error), value
    return kept, given


def _copied_twice(value: Any, depth: int) -> tuple[Any, Any]:
    """Two deep copies of `value` (`_copied`), sharing nothing mutable."""
    kind = type(value)
    if depth < 200:
        depth += 1
        if kind is list:
            if _all_kept(map(type, value)):
                return value.copy(), value.copy()
            first, second = [], []
            add_first, add_second = first.append, second.append
            for item in value:
                if type(item) in _KEPT:
                    add_first(item)
                    add_second(item)
                else:
                    one, two = _copied_twice(item, depth)
                    add_first(one)
                    add_second(two)
            return first, second
        if kind is dict:
            if _all_kept(map(type, value.values())):
                return value.copy(), value.copy()
        elif kind is tuple:
            if _all_kept(map(type, value)):
                return value, value
        else:
            how = _HOW.get(kind)
            if how is None:
                how = _learn(kind)
            if how is _FIELDS:
                fields = value.__dict__
                if _all_kept(map(type, fields.values())):
                    first, second = object.__new__(kind), object.__new__(kind)
                    first.__dict__.update(fields)
                    second.__dict__.update(fields)
                    return first, second
            elif how is _KEEP:
                return value, value
    first = _copied(value, depth)  # deeper: the first copy is as good a source as the value
    return first, _copied(first, depth)


def _not_copyable(value: Any, error: Exception) -> str:
    """What the log keeps of a value it cannot copy: what it looked like, marked."""
    from .shortening import short

    try:
        shown = short(repr(value), 300)
    except Exception:
        shown = f"a {type(value).__name__}"
    return f"<not copyable ({type(error).__name__}): {shown}>"


def _copied(value: Any, depth: int) -> Any:
    """`value` copied deeply: by hand for what converted arguments are made of (lists, dicts,
    tuples, plain objects and dataclasses; immutable values such as dates, enums and paths kept),
    by `copy.deepcopy` for the rest (which may raise). A container or object holding only
    immutable values (most do: strings, numbers, enum members) is copied in one C-level step
    after one C-level look at its values' types (`_all_kept`)."""
    kind = type(value)
    if kind in _KEPT:
        return value
    if depth < 200:  # validated arguments nest at most `Limits.max_depth`; deeper: deepcopy's own
        depth += 1
        if kind is list:
            if _all_kept(map(type, value)):
                return value.copy()
            return [item if type(item) in _KEPT else _copied(item, depth) for item in value]
        if kind is dict:
            if _all_kept(map(type, value.values())):
                return value.copy()
            return {key: item if type(item) in _KEPT else _copied(item, depth) for key, item in value.items()}
        if kind is tuple:
            if _all_kept(map(type, value)):  # immutable all the way down: its own copy
                return value
            return tuple([item if type(item) in _KEPT else _copied(item, depth) for item in value])
        how = _HOW.get(kind)
        if how is None:
            how = _learn(kind)
        if how is _FIELDS:  # a plain object: a new one of its class with its attributes copied
            made = object.__new__(kind)
            fields = value.__dict__
            made.__dict__.update(fields if _all_kept(map(type, fields.values())) else
                                 {name: item if type(item) in _KEPT else _copied(item, depth)
                                  for name, item in fields.items()})
            return made
        if how is _KEEP:  # (met before `_learn` added its class to `_KEPT`: not again)
            return value
    import copy

    return copy.deepcopy(value)


def immutable(value: Any) -> bool:
    """Whether `value` cannot change in place (a scalar, a date, a path, an enum member...)."""
    kind = type(value)
    if kind in _ATOMIC:
        return True
    how = _HOW.get(kind)
    if how is None:
        how = _learn(kind)
    return how is _KEEP


_KEEP, _FIELDS, _DEEPCOPY = "keep", "fields", "deepcopy"
_HOW: dict[type, str] = {}  # per class met in arguments: how `_copied` copies its values
# the classes whose values a snapshot keeps as they are: the scalars, and every class `_learn`
# found immutable (dates, enums, paths...); only added to (a set.add is atomic)
_KEPT: set[type] = set(_ATOMIC)
_all_kept = _KEPT.issuperset


def _learn(kind: type) -> str:
    how = _HOW[kind] = _how_to_copy(kind)
    if how is _KEEP:
        _KEPT.add(kind)
    return how
# immutable values of the standard library, named (their modules need not be imported here)
_IMMUTABLE = {"datetime": {"date", "datetime", "time", "timedelta", "timezone"}, "decimal": {"Decimal"},
              "uuid": {"UUID"}, "fractions": {"Fraction"}, "ipaddress": {"IPv4Address", "IPv6Address"},
              "pathlib": {"PurePath", "PurePosixPath", "PureWindowsPath", "Path", "PosixPath", "WindowsPath"}}


def _how_to_copy(kind: type) -> str:
    # (the top-level module: pathlib's classes live in `pathlib._local` on 3.13)
    if kind.__name__ in _IMMUTABLE.get(kind.__module__.partition(".")[0], ()) or kind in (frozenset, range):
        return _KEEP if kind is not frozenset else _DEEPCOPY
    enum = sys.modules.get("enum")
    if enum is not None and isinstance(kind, enum.EnumMeta):
        return _KEEP  # a member is its own copy (as `copy.deepcopy` answers)
    plain = (kind.__reduce_ex__ is object.__reduce_ex__ and kind.__reduce__ is object.__reduce__
             and getattr(kind, "__getstate__", object.__getstate__) is object.__getstate__
             and not hasattr(kind, "__setstate__") and not hasattr(kind, "__deepcopy__")
             and kind.__new__ is object.__new__ and "__dict__" in dir(kind)
             and not any("__slots__" in vars(base) for base in kind.__mro__[:-1]))
    # such an object is what `copy.deepcopy` would rebuild the same way: its class, its attributes copied
    return _FIELDS if plain else _DEEPCOPY


class Decisions(Sequence):
    """The audit log of one registry (its `select()` views share it): its DecisionRecords, the
    newest last; it keeps the last `MAX` decisions (a server answering for days stays bounded).

    Dispatch records a decision with `record((timestamp, tool, arguments, origin, defaults,
    (verdict, by, reason, edited)))`. The log keeps those six fields flat in one bounded deque
    and makes the DecisionRecord when it is read: an approval answered at once costs about as
    much as the call itself, and a tuple kept per call cost the collector more than the rest of
    the record (bench/instructions.py wipe_approved); the last field of a plain yes is one tuple
    per callback. With `defaults` (not None), the arguments as run are `defaults | arguments`
    (the call's converted keyword arguments), merged when read; a record read is the reader's."""

    MAX = 10_000
    _WIDTH = 6  # fields per decision in `_entries`
    __slots__ = ("_entries", "record")

    def __init__(self) -> None:
        self._entries: deque[Any] = deque(maxlen=self.MAX * self._WIDTH)
        self.record = self._entries.extend

    def add(self, record: DecisionRecord) -> None:
        self.record((*record[:4], None, record[4:]))

    @staticmethod
    def _make(fields: Any) -> DecisionRecord:
        timestamp, tool, arguments, origin, defaults, outcome = fields
        # the reader's own arguments: changing a record read (even a nested value) changes nothing in the log
        arguments = snapshot(arguments if defaults is None else defaults | arguments)
        return tuple.__new__(DecisionRecord, (timestamp, tool, arguments, origin, *outcome))

    def _all(self) -> list[DecisionRecord]:
        # one copy, taken at once: another thread may record a decision while the log is read
        flat, width = list(self._entries), self._WIDTH
        return [self._make(flat[start:start + width]) for start in range(0, len(flat), width)]

    def __len__(self) -> int:
        return len(self._entries) // self._WIDTH

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return self._all()[index]
        flat, width = list(self._entries), self._WIDTH  # a copy, as in `_all`
        count = len(flat) // width
        position = operator.index(index) + (count if index < 0 else 0)
        if not 0 <= position < count:
            raise IndexError("decision index out of range")
        return self._make(flat[position * width:(position + 1) * width])

    def __iter__(self) -> Iterator[DecisionRecord]:
        return iter(self._all())

    def __reversed__(self) -> Iterator[DecisionRecord]:
        return reversed(self._all())

    def __eq__(self, other: object) -> bool:  # compares as the list it was
        return self._all() == (list(other) if isinstance(other, Decisions) else other)

    __hash__ = None  # type: ignore[assignment]

    def clear(self) -> None:
        self._entries.clear()

    def __reduce__(self) -> tuple:
        # copy, deepcopy and pickle: a log of its own (a copied slot `record` would still extend
        # the original's deque)
        return _decisions_of, (type(self), list(self._entries))

    def __repr__(self) -> str:
        if not self:
            return "Decisions(none yet)"
        return "Decisions:\n" + "\n".join(f"  {record!r}" for record in self._all())


def _decisions_of(kind: type, entries: list) -> Decisions:
    """A `Decisions` holding `entries` (its flat fields): what a copy of one is made from."""
    log = kind()
    log._entries.extend(entries)
    return log


# Who asks for the calls running in this context: "call" (code in a cell or a script), set to
# "chat:<model>" by a Chat and to "mcp:<client name>" by the MCP server around their calls.
_ORIGIN: contextvars.ContextVar[str] = contextvars.ContextVar("nbtools_origin", default="call")


# A list collecting the decisions logged for the calls made in this context (their `Decisions.record`
# fields), or None: set by a caller that must know the decision of its own call (code mode's answer
# shows the arguments as run), which the shared log cannot tell apart from another run's.
_WITNESS: contextvars.ContextVar[list | None] = contextvars.ContextVar("nbtools_decision_witness", default=None)


def witnessed(fields: tuple) -> DecisionRecord:
    """The DecisionRecord of fields a witness list collected (see `_WITNESS`)."""
    return Decisions._make(fields)


def current_origin() -> str:
    """Who asks for the call running now: "call", "chat:<model>" or "mcp:<client name>"."""
    return _ORIGIN.get()


class asking_as:  # noqa: N801 (used as a function: `with asking_as(origin):`)
    """Within this block (this thread or task, and what it awaits), calls are asked for by
    `origin`: an approval callback accepting `origin=` receives it, the prompt names it and
    `registry.decisions` records it. A Chat uses `asking_as(f"chat:{model}")`, the MCP server
    `asking_as(f"mcp:{client name}")`. (A class, not a contextlib generator: a Chat enters it at
    every step, and the generator's machinery cost more than the rest of the step's bookkeeping.)"""

    __slots__ = ("origin", "_token")

    def __init__(self, origin: str):
        self.origin = origin

    def __enter__(self) -> None:
        self._token = _ORIGIN.set(self.origin)

    def __exit__(self, *exc: Any) -> None:
        _ORIGIN.reset(self._token)


class _Memory:
    """What a registry remembers about approvals (shared with its `select()` views): the audit log
    and the remembered answers (tool name -> allowed)."""

    def __init__(self) -> None:
        self.decisions = Decisions()
        self.remembered: dict[str, bool] = {}
        _memories.add(self)

    def __hash__(self) -> int:
        return id(self)


_memories: "weakref.WeakSet[_Memory]" = weakref.WeakSet()


def forget_everywhere(glob: str | None = None) -> list[str]:
    """Forget the remembered approval answers of every registry in this process (`%tools --forget`),
    or only those of tools whose name matches `glob`; returns the names forgotten, sorted."""
    import fnmatch

    forgotten: set[str] = set()
    for memory in list(_memories):
        for name in list(memory.remembered):
            if glob is None or name == glob or fnmatch.fnmatchcase(name, glob):
                del memory.remembered[name]
                forgotten.add(name)
    return sorted(forgotten)


_NO_ASKER = (None, False, "callback", ())  # `ToolSource._asker` before a callback was read


class ToolSource:
    """A namespace with a policy: what `nbtools.call` reads from a registry.

    Policy (read live on every call): `limits` (what a model may send), `approve`
    (`callback(tool, args) -> bool`, or an awaitable bool, consulted before a `destructive` tool
    runs; None: no question asked) and `refuse_destructive` (refuse `destructive` tools outright).

    A source made with `parent=` (a `select()` view) reads its parent's policy live, so setting
    `approve` on the parent later still holds for the view; a setting made on the view itself wins
    for `limits` and `approve`, and `refuse_destructive` holds when either sets it.

    The policy travels with the Tools a source hands out (`bind`): `source.get(name).call(...)`,
    `list(source)`, `mk_ns(source)` and `run_tool_calls(reply, ns=list(source))` ask the same
    questions as `source.call(...)`.
    """

    def __init__(self, *, limits: Limits | None = None, approve: Callable[..., Any] | None = None,
                 refuse_destructive: bool = False, parent: "ToolSource | None" = None):
        self._parent = parent
        self._limits = limits
        self._approve = approve
        self._asker: tuple = _NO_ASKER  # call.asking's reading of `approve`, once per callback
        self._refuse_destructive = bool(refuse_destructive)
        self._memory = parent._memory if parent is not None else _Memory()
        # tool name -> the source a Tool added here came from: its policy still holds (stricter wins)
        self._upstream: dict[str, ToolSource] = {}
        # The Tools callable now, by every name a model may use (exact and provider-mapped), when one
        # lookup settles it; None: ask `resolve`. `call_func` reads it first: a dict lookup instead
        # of a method call (bench/instructions.py add). The source keeps it true or None.
        self._callable: dict[str, Tool] | None = None

    # -- decisions ---------------------------------------------------------------------------------
    @property
    def decisions(self) -> Decisions:
        """Every approval decision taken for calls of this registry's tools (see DecisionRecord)."""
        return self._memory.decisions

    @property
    def remembered(self) -> dict[str, bool]:
        """Tool name -> True (always allow) / False (always deny), answered with remember="tool"."""
        return self._memory.remembered

    def forget(self, name: str | None = None) -> list[str]:
        """Forget remembered answers (Always allow / Always deny): of tool `name`, or all of them.
        Returns the names forgotten; the next call of those tools asks again."""
        remembered = self._memory.remembered
        names = [name] if name is not None and name in remembered else list(remembered) if name is None else []
        for each in names:
            del remembered[each]
        return names

    def is_enabled(self, name: str) -> bool:
        """Whether `name` is registered here and enabled."""
        return self.resolve(name) is not None

    def is_disabled(self, name: str) -> bool:
        """Whether `name` is registered here and disabled (a tool no longer registered is not)."""
        return self.get(name) is not None and not self.is_enabled(name)

    def registered_name(self, tool: Tool) -> str | None:
        """The name under which `tool` (or the Tool it was copied from, maybe renamed) is registered
        here: its own name when that entry runs the same function, else the name of the entry with
        its function; None when it is not (or no longer) registered here."""
        found = self.get(tool.name)
        if found is not None and (found.fn is tool.fn or tool.fn is None):
            return found.name
        if tool.fn is not None:
            for each in self.all_tools():
                if each.fn is tool.fn:
                    return each.name
        return None

    def all_tools(self) -> list[Tool]:
        """Every registered Tool, enabled or not."""
        return self.enabled()

    @property
    def limits(self) -> Limits:
        if self._limits is not None:
            return self._limits
        return self._parent.limits if self._parent is not None else DEFAULT_LIMITS

    @limits.setter
    def limits(self, value: Limits | None) -> None:
        self._limits = value

    @property
    def approve(self) -> Callable[..., Any] | None:
        if self._approve is not None:
            return self._approve
        return self._parent.approve if self._parent is not None else None

    @approve.setter
    def approve(self, value: Callable[..., Any] | None) -> None:
        self._approve = value

    @property
    def refuse_destructive(self) -> bool:
        return self._refuse_destructive or (self._parent is not None and self._parent.refuse_destructive)

    @refuse_destructive.setter
    def refuse_destructive(self, value: bool) -> None:
        self._refuse_destructive = bool(value)

    def policy(self) -> tuple[Limits, Callable[..., Any] | None, bool]:
        """(limits, approve, refuse_destructive) as they hold now: what dispatch reads per call."""
        if self._parent is None:  # the common case, without the properties' indirection
            return self._limits or DEFAULT_LIMITS, self._approve, self._refuse_destructive
        return self.limits, self.approve, self.refuse_destructive

    def resolve(self, name: str) -> Tool | None:
        """The Tool a model's call named (exact name, or a provider-mapped form of it), or None
        when it is unknown or disabled."""
        raise NotImplementedError

    def get(self, name: str, default: Any = None) -> Tool | None:
        """The Tool registered under `name`, enabled or not (`default` when there is none)."""
        raise NotImplementedError

    def enabled(self) -> list[Tool]:
        """The Tools a model may call, in order."""
        raise NotImplementedError


def bind(tool: Tool, source: ToolSource) -> Tool:
    """A copy of `tool` that carries `source`'s policy wherever it goes (its `source` field, kept by
    `replace`, `dataclasses.replace` and `copy.copy`), sharing its render and call-plan cache.
    The Tool given stays as it was: it may belong to other sources too."""
    bound = object.__new__(type(tool))
    bound.__dict__.update(tool.__dict__)
    bound.__dict__["source"] = source
    bound.__dict__["_origin"] = origin_of(tool)  # a declared field of Tool (`Tool._origin`)
    return bound


def source_of(tool: Tool) -> ToolSource | None:
    """The source whose policy `tool` carries (None: a Tool not handed out by a registry)."""
    return tool.__dict__.get("source")


class Layer:
    """One policy a call must pass: the source it belongs to, under which name the tool is
    registered there, and the settings read now."""

    __slots__ = ("source", "name", "approve", "refuse_destructive")

    def __init__(self, source: ToolSource | None, name: str, approve: Callable[..., Any] | None,
                 refuse_destructive: bool):
        self.source, self.name, self.approve, self.refuse_destructive = source, name, approve, refuse_destructive

    def __repr__(self) -> str:
        return f"Layer({self.name!r}, approve={self.approve!r}, refuse_destructive={self.refuse_destructive})"


def layers_of(tool: Tool, first: ToolSource | None) -> list[Layer]:
    """The policies `tool` carries, `first` (the source the call came through) then every source it
    was added from (`Registry([other["wipe"]])`), each once: all of them must let the call run,
    so the stricter one wins. Views (`select()`) share their registry's memory and read its
    settings live, so a view and its registry count as one."""
    if first._parent is None and not first._upstream:  # the common case: one registry
        _, approve, refuse = first.policy()
        found = first.get(tool.name)
        name = tool.name if found is not None and found.fn is tool.fn else first.registered_name(tool) or tool.name
        return [Layer(first, name, approve, refuse)]
    layers: list[Layer] = []
    seen: list[_Memory] = []
    source = first
    while source is not None and source._memory not in seen:
        seen.append(source._memory)
        name = source.registered_name(tool) or tool.name
        _, approve, refuse = source.policy()
        layers.append(Layer(source, name, approve, refuse))
        nxt = source._upstream.get(name)
        parent = source._parent
        while nxt is None and parent is not None:  # a view: its registry may hold the upstream
            nxt, parent = parent._upstream.get(name), parent._parent
        source = nxt
    return layers


def origin_of(tool: Tool) -> Tool:
    """The Tool that `bind` copied (`tool` itself when it is not a bound copy)."""
    origin = tool._origin
    return tool if origin is None else origin


_default: list[ToolSource] = []  # one element once nbtools.registry is imported (nbtools/__init__ does)


def set_default(source: ToolSource) -> None:
    """Make `source` the namespace that `ns=None` means in every dispatch function."""
    _default[:] = [source]


def default() -> ToolSource:
    """The namespace `ns=None` means: the process-wide `nbtools.registry`."""
    return _default[0]


__all__ = ["Limits", "DEFAULT_LIMITS", "ToolSource", "Decision", "yes_or_no", "DecisionRecord", "Decisions", "snapshot",
           "asking_as",
           "current_origin", "forget_everywhere", "bind", "source_of", "origin_of", "layers_of", "Layer", "set_default", "default"]
