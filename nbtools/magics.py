"""IPython magics: `%%tool`, `%tool`, `%untool` and `%tools` (`%load_ext nbtools`; `MAGIC?` for options).

- `%%tool [-g GROUP] [--hints H ...] [--strict]` runs the cell like any cell, then registers the
  functions it defines (`def`/`async def`, also inside `if`/`try`/`with`; `_names` are helpers and
  skipped) and prints `registered: a, b (group · hints)`. A failing cell registers nothing and ends
  with an error. Running the cell again replaces its tools: one the cell no longer defines (a renamed
  function) is removed. The cell is known by the id the front end sends (JupyterLab, Notebook 7,
  VS Code); without one (terminal IPython) only tools of the same name are replaced.
- `%tool NAME [NAME ...] [-g GROUP] [--hints H ...] [--strict]` registers functions that already
  exist in the notebook (`mod.fn` follows attributes), each named after what was typed.
- `%untool NAME|GLOB [...]` removes tools (the functions stay in the notebook).
- `%tools [GLOB] [-g GROUP]` shows the table; `--fmt FMT [--strict]` prints the definitions a model
  gets; `--panel` shows the panel; `--serve [PORT]`/`--stop` serve the enabled tools over MCP.

Hints: read-only, destructive, idempotent, open-world; `--strict` checks now that OpenAI's and
Anthropic's strict modes can express each tool. Tools go into `nbtools.registry` (a submodule, so
`%reload_ext nbtools` keeps them). `%unload_ext nbtools` removes the magics, stops the servers
`--serve` started and undoes the interpreter's process-wide patches; the tools stay registered.

`ToolMagics` only parses options and talks to the shell; the work is in plain functions here
(usable without IPython) and in `nbtools.listing`. This module imports IPython at the top: it is
only imported when the extension is loaded.
"""

from __future__ import annotations

import ast
import builtins
import errno
import inspect
import json
import shlex
import sys
import warnings
from dataclasses import dataclass
from typing import Any, Iterable

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments

from .errors import MagicError, SchemaError
from .listing import (
    ToolRow, ToolTable, first_line, format_named, format_words, glob_matches, matching_tools, parameter_summary,
    tool_row, tool_table,
)
from .registry import Registry
from .spec import method_taken_from_class
from .tool import Tool, normalise_hints

# The magic names this extension owns, by kind; unloading removes exactly these.
MAGIC_NAMES: dict[str, tuple[str, ...]] = {"line": ("tool", "untool", "tools"), "cell": ("tool",)}

# Statements whose bodies still run at the cell's top level, so a `def` inside them defines a
# module-level name; fields in source order ("handlers" and "cases" hold lists of blocks).
# Loops are left out on purpose: a def in a loop body is redefined per iteration.
_BLOCK_FIELDS: dict[type, tuple[str, ...]] = {
    ast.If: ("body", "orelse"),
    ast.Try: ("body", "handlers", "orelse", "finalbody"),
    ast.TryStar: ("body", "handlers", "orelse", "finalbody"),
    ast.With: ("body",),
    ast.AsyncWith: ("body",),
    ast.Match: ("cases",),
}


# -- finding what a cell defines -------------------------------------------------------------------

def defined_functions(source: str) -> list[str]:
    """Names of the functions a cell's Python source defines at module level, in order, once each.

    Counts `def` and `async def` at the top level and inside `if`/`elif`/`else`, `try` (every
    handler, `else`, `finally`), `with` and `match` blocks. Imports, lambdas, classes, loop bodies
    and nested functions are not counted. Raises SyntaxError for source that is not Python.
    """
    tree = ast.parse(source)
    names: dict[str, None] = {}
    _collect_defs(tree.body, names)
    return list(names)


def _python_body(cell: str) -> str:
    """The Python in a cell body that may start with other cell magics (`%%time`, `%%capture out`):
    those run the rest of the cell in the notebook's namespace, so its `def`s count. A magic whose
    body is not Python (`%%bash`) leaves text that does not parse, which defines nothing."""
    while True:
        lines = cell.lstrip("\n").split("\n", 1)
        if not lines[0].lstrip().startswith("%%"):
            return cell
        cell = lines[1] if len(lines) > 1 else ""


def _collect_defs(statements: Iterable[Any], names: dict[str, None]) -> None:
    for statement in statements:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.pop(statement.name, None)  # a later redefinition moves the name to its new place
            names[statement.name] = None
        elif isinstance(statement, (ast.ExceptHandler, ast.match_case)):
            _collect_defs(statement.body, names)
        else:
            for field_name in _BLOCK_FIELDS.get(type(statement), ()):
                _collect_defs(getattr(statement, field_name), names)


# -- registering -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Registration:
    """What one registration did: `registered`, the names of the tools added (or replaced), in order;
    `problems`, (function name, reason) for each function that could not be registered."""

    registered: tuple[str, ...]
    problems: tuple[tuple[str, str], ...]

    def problem_lines(self, prefix: str) -> list[str]:
        return [f"{prefix}: {name!r} not registered: {reason}" for name, reason in self.problems]


def register_objects(objects: Iterable[tuple[str, Any]], registry: Registry, *, group: str | None = None,
                     hints: frozenset[str] = frozenset(), strict: bool = False) -> Registration:
    """Add each (name, object) to `registry`; an object that cannot be described is reported, not raised.

    A function is registered under `name`, the name it is bound to in the notebook (for `mod.fn`,
    the last part): a lambda, a `functools.partial` or a decorator's wrapper has no usable name of
    its own, and taking the wrapped function's name would silently replace that function's tool.
    A `Tool` object keeps its own name. Redefinition replaces silently: re-running a notebook cell
    makes new function objects under the same names, which is the normal way to edit a tool.
    """
    registered: list[str] = []
    problems: list[tuple[str, str]] = []
    for name, obj in objects:
        if not callable(obj):
            hint = (f"; for every function of a module: `for each in tools_from({name}): registry.add(each)`"
                    if type(obj).__name__ == "module" else "")
            kind = type(obj).__name__
            article = "an" if kind[:1].lower() in "aeiou" else "a"
            problems.append((name, f"it is {article} {kind}, not a function{hint}"))
            continue
        overrides: dict[str, Any] = {"group": group, "hints": hints or None, "strict": strict or None}
        if not isinstance(obj, Tool):
            overrides["name"] = name.rsplit(".", 1)[-1]
        try:
            built = Tool.from_function(obj, **{key: value for key, value in overrides.items() if value is not None})
        except (SchemaError, TypeError, ValueError) as error:
            problems.append((name, str(error)))
            continue
        except Exception as error:  # a broken object must not stop the cell's other tools
            problems.append((name, f"describing it raised {type(error).__name__}: {error}"))
            continue
        strict_problem = _strict_problem(built) if strict else None
        if strict_problem:  # fail now, not later when a model needs the schema
            problems.append((name, strict_problem))
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            registry.add(built)
        registered.append(built.name)
    return Registration(tuple(registered), tuple(problems))


def _strict_problem(built: Tool) -> str | None:
    """Why `built` has no strict definition for some provider, or None when every one renders."""
    from .formats.strict import STRICT_RULES  # loaded by the rendering below anyway

    for fmt in STRICT_RULES:  # strict modes differ (Anthropic refuses recursion): check each provider's
        try:
            built.schema(fmt, strict=True)
        except SchemaError as error:
            return f"--strict: no strict {fmt} definition: {error}"
    return None


# -- a cell's tools: re-running a `%%tool` cell replaces them --------------------------------------

# (id of the registry, cell key) -> the tools that cell's last run registered, by name. Kept in this
# submodule, so `%reload_ext nbtools` keeps it along with the registry.
_CELL_TOOLS: dict[tuple[int, str], dict[str, Tool]] = {}


def _cell_key(shell: Any) -> str | None:
    """The running cell's identity: the cell id the front end sends with each execution (JupyterLab,
    Notebook 7, VS Code and nbclient do; ipykernel hands it to `run_cell`), read from the execution IPython
    is running now. None where there is no id (terminal IPython): re-running then replaces tools
    of the same name only, since nothing says two runs came from the same cell."""
    result = getattr(getattr(shell, "displayhook", None), "exec_result", None)
    cell_id = getattr(getattr(result, "info", None), "cell_id", None)
    return cell_id if isinstance(cell_id, str) and cell_id else None


def forget_cell_tools(registry: Registry, cell_key: str | None, now: dict[str, Tool]) -> list[str]:
    """Record `now` as the cell's tools and remove those its previous run registered that it no
    longer defines (a renamed or deleted function), unless something else has replaced them since.
    Returns the names removed."""
    if cell_key is None:
        return []
    before = _CELL_TOOLS.get((id(registry), cell_key), {})
    removed = [name for name, old in before.items()
               if name not in now and registry.get(name) is old]
    for name in removed:
        registry.remove(name)
    if now:
        _CELL_TOOLS[(id(registry), cell_key)] = dict(now)
    else:
        _CELL_TOOLS.pop((id(registry), cell_key), None)
    return removed


def registered_line(tools: list[Tool], removed: Iterable[str] = (), replaced: Iterable[str] = ()) -> str:
    """`registered: a, b (group · hints)`: what a `%%tool` cell did, in one line; `replaced` names
    tools another cell (or `@tool`, `%tool`) had registered under the same name."""
    names = ", ".join(tool.name for tool in tools)
    groups = sorted({tool.group for tool in tools if tool.group})
    hints = sorted(set().union(*(tool.hints for tool in tools)))
    extra = " · ".join(part for part in (", ".join(groups), " ".join(hints)) if part)
    line = f"registered: {names}" + (f" ({extra})" if extra else "")
    replaced = list(replaced)
    if replaced:
        line += (f"; replaced the earlier tool{'s' if len(replaced) > 1 else ''} {', '.join(replaced)} "
                 "(registered elsewhere; that definition no longer runs)")
    removed = list(removed)
    return line + (f"; removed: {', '.join(removed)} (no longer in this cell)" if removed else "")


def shadowing_lines(names: Iterable[str], magic: str) -> list[str]:
    """A warning per name that hides one of Python's builtins in the notebook (`def open(path)`:
    the next `with open(...)` calls the tool), saying how to keep both."""
    return [f"{magic}: warning: `{name}` now hides Python's builtin {name}() in this notebook (the next "
            f"`{name}(...)` calls your function); to keep the builtin, name the function differently and "
            f"keep the tool's name with `@tool(name=\"{name}\")`, or `del {name}` to get the builtin back "
            "(the tool stays registered)"
            for name in names if hasattr(builtins, name) and not name.startswith("_")]


# -- finding what a person named, removing, listing -------------------------------------------------

_MISSING = object()


def _lookup(namespace: dict, dotted: str) -> Any:
    """The object a person named (`fn` or `module.fn`) in the notebook namespace, or _MISSING (following
    attributes is fine here: the person typing the magic already runs arbitrary code)."""
    head, *rest = dotted.split(".")
    if head not in namespace:
        return _MISSING
    found = namespace[head]
    for attribute in rest:
        found = getattr(found, attribute, _MISSING)
        if found is _MISSING:
            return _MISSING
    return found


def remove_tools(registry: Registry, patterns: Iterable[str]) -> list[str]:
    """Remove the tools each name or glob matches; returns the names removed, in order. Every
    pattern must match a tool, else nothing is removed and ValueError names those that match none."""
    patterns = list(patterns)
    names = registry.names()
    unmatched = [pattern for pattern in patterns if not any(glob_matches(name, pattern) for name in names)]
    if unmatched:
        raise ValueError(f"no tool matches {', '.join(map(repr, unmatched))}; nothing was removed")
    removed: list[str] = []
    for pattern in patterns:
        if any(glob_matches(name, pattern) for name in registry.names()):  # an earlier glob may have taken it
            removed.extend(registry.remove(pattern))
    return removed


def tool_definitions(registry: Registry, fmt: str | None, strict: bool, glob: str | None = None,
                     group: str | None = None) -> list[dict]:
    """Definitions of the enabled tools that match, as a model would get them (UsageError for an
    unknown format, before anything renders; MagicError naming a tool that has no such definition)."""
    try:
        fmt_name = format_named(fmt, strict)
    except ValueError as error:
        raise UsageError(f"%tools {error}") from None
    definitions = []
    for tool in matching_tools(registry, glob, group):
        if not registry.is_enabled(tool.name):
            continue
        try:
            definitions.append(tool.schema(fmt_name, strict or None))
        except SchemaError as error:
            raise MagicError(f"%tools: tool {tool.name!r} has no {'strict ' if strict else ''}"
                             f"{fmt} definition: {error}") from None
    return definitions


# -- what `%tools --serve` / `--stop` say ---------------------------------------------------------

def serve_magic(registry: Registry, port: int | None, stop_servers: bool, *, filtered: bool = False,
                token: str | bool | None = None, allow_hosts: Iterable[str] = (), cells: bool = False) -> str:
    """What `%tools --serve [PORT]` / `%tools --stop` do; returns the line to print.

    Raises IPython's UsageError for a combination that makes no sense or a port that is taken.
    """
    from .mcp import running_servers, start, stop
    from .mcp.background import show_activity

    if stop_servers and port is not None:
        raise UsageError("%tools: use either --serve or --stop")
    if stop_servers:
        stopped = stop()
        if not stopped:
            return "No MCP server is running."
        return "Stopped the MCP server" + ("s" if len(stopped) > 1 else "") + " at " + \
            ", ".join(server.url for server in stopped) + "."
    if filtered:
        raise UsageError("%tools --serve serves every enabled tool (read live, so new %%tool cells appear); "
                         "disable tools (registry.disable(name) or the panel) to hide them")
    if port is not None and not 0 <= port <= 65535:
        raise UsageError(f"%tools --serve: {port} is not a TCP port (0-65535; 0 or none picks a free one)")
    count = len(registry.enabled())
    # Running the cell again (or "Run All") must not fail on our own port nor start a second server.
    for server in running_servers():
        if server.registry is registry and port in (None, 0, server.port):
            if cells and server.cells is None:
                raise UsageError(f"%tools --serve --cells: already serving at {server.url} without --cells; "
                                 "`%tools --stop`, then `%tools --serve --cells`")
            show_activity(server)
            return (f"Already serving {count} tool{'s' if count != 1 else ''} at {server.url} "
                    f"(`%tools --stop` ends it).{_token_line(server)}{server.jupyter}")
    from .jupyter import reach

    # in a kernel of a Jupyter Server with nbtools.jupyter: a private token for the extension alone
    proxy_token = reach.proxy_token() if token is not False else None
    try:
        server = start(registry, port=port or 0, token=token, allow_hosts=allow_hosts, proxy_token=proxy_token,
                       cells=cells)
    except (OSError, ValueError) as error:
        busy = isinstance(error, OSError) and error.errno == errno.EADDRINUSE
        hint = " (another program listens there); `%tools --serve` with no PORT picks a free one" if busy else ""
        raise UsageError(f"%tools --serve: {getattr(error, 'strerror', None) or error}{hint}") from None
    where = ("on this kernel's main thread, between cells" if not server.in_thread
             else "on a background thread")
    if proxy_token is not None and not cells:  # with cells, `start` registered it
        server.jupyter = reach.register(server, proxy_token)  # the Jupyter URL paths, printed below
    elif token is False and reach.proxy_token() is not None:
        server.jupyter = ("\nNot reachable through this Jupyter server: without a token the kernel cannot tell "
                          "the server's requests from anyone's; serve with a token (the default) for that.")
    show_activity(server)  # the activity log, under this cell
    return (f"MCP server for {count} tool{'s' if count != 1 else ''} at {server.url} "
            f"(tool calls run {where}; `%tools --stop` ends it).{_token_line(server)}{server.jupyter}")


def _token_line(server: Any) -> str:
    """How clients authenticate, never the token: this line is saved with the notebook."""
    from .mcp.background import token_hint

    return token_hint(server)


# -- the magics ------------------------------------------------------------------------------------

@magics_class
class ToolMagics(Magics):
    """`%%tool`, `%tool`, `%untool`, `%tools`, working on `self.registry` (default: `nbtools.registry`)."""

    def __init__(self, shell: Any = None, registry: Registry | None = None, **kwargs: Any):
        super().__init__(shell, **kwargs)
        if registry is None:
            from .registry import registry as default_registry

            registry = default_registry
        self.registry = registry

    @no_var_expand
    @magic_arguments(name="%tool")
    @argument("-g", "--group", default=None, help="group name stored with every tool of the cell")
    @argument("--hints", nargs="*", default=[], metavar="H",
              help="hints: read-only, destructive, idempotent, open-world")
    @argument("--strict", action="store_true",
              help="render strict schemas by default (checked now: a tool strict mode cannot express is refused)")
    @cell_magic("tool")
    def tool_cell(self, line: str, cell: str) -> None:
        """Run the cell like any other cell, then register the functions it defines as tools.

        The cell runs exactly as a normal cell (magics, `!commands`, display, tracebacks). After it
        succeeds, every function it defines with `def` or `async def` at the top level (also inside
        `if`/`try`/`with` blocks) is registered under the name its `def` gives it (also when a
        decorator returned a wrapper with another `__name__`), and the function object itself is
        stored: rebinding the name later does not change the tool. A function the cell already
        registered with `@tool(...)` keeps the name and options its decorator gave it. Names
        starting with `_` are helpers and are not registered; imports, lambdas, classes and loop
        variables never are. It prints one line, `registered: a, b (group · hints)`.

        Running the cell again replaces the cell's tools with the new definitions, and removes a
        tool the cell registered before but no longer defines (a renamed or deleted function),
        unless another cell has registered that name since. The cell is known by the cell id the
        front end sends with each execution (JupyterLab, Notebook 7, VS Code); where there is none
        (terminal IPython) only tools of the same name are replaced.

        A cell that fails registers nothing and ends with an error, so a notebook run stops there.
        A function nbtools cannot describe gets one line saying which and why; the others register.

        The body may start with other cell magics that run Python in the notebook's namespace
        (`%%time`, `%%capture out`); the functions they define register the same way.

        Top-level `await` inside a `%%tool` cell does not work (the cell runs inside the kernel's
        already running event loop); `async def` tools are fine.
        """
        args = _parse_args(self.tool_cell, line, "%%tool")
        hints = _parse_hints(args.hints, "%%tool")
        shell = self.shell
        cell_key = _cell_key(shell)  # read before the body runs: the nested run replaces what it reads
        try:
            found = defined_functions(shell.transform_cell(_python_body(cell)))
        except SyntaxError:
            found = []  # running the cell reports the syntax error properly
        names = [name for name in found if not name.startswith("_")]
        before = {name: shell.user_ns.get(name, _MISSING) for name in names}
        result = shell.run_cell(cell, store_history=False)
        if not result.success:
            raise MagicError("%%tool: the cell failed, so no tools were registered")
        # A name still bound to the object it had before the run was not defined by this run
        # (its `def` sits in a branch that did not execute); leave it alone.
        defined = [(name, shell.user_ns[name]) for name in names
                   if name in shell.user_ns and shell.user_ns[name] is not before[name]]
        for line in shadowing_lines([name for name, _ in defined], "%%tool"):
            print(line, file=sys.stderr)
        if not defined:
            what = "only helpers (names starting with _)" if found and not names else "no functions"
            removed = forget_cell_tools(self.registry, cell_key, {})
            gone = f"; removed its earlier tools {', '.join(removed)}" if removed else ""
            print(f"%%tool: this cell defined {what}, so no tools were registered{gone}", file=sys.stderr)
            return
        # A function the cell registered itself (`@tool(name=..., ...)` inside the cell) keeps the
        # name and options its decorator gave it.
        already_tools = {id(tool.fn) for tool in self.registry}
        objects = [(name, obj) for name, obj in defined if id(obj) not in already_tools]
        # A tool of the same name that this cell did not register (another cell's, `@tool`'s,
        # `%tool`'s) is about to be replaced: say so. Without a cell id nothing tells a re-run apart.
        own = _CELL_TOOLS.get((id(self.registry), cell_key), {}) if cell_key is not None else None
        replaced = [] if own is None else [
            name for name, obj in objects
            if name in self.registry and name not in own and self.registry[name].fn is not obj]
        registration = register_objects(objects, self.registry, group=args.group, hints=hints,
                                        strict=args.strict)
        for problem in registration.problem_lines("%%tool"):
            print(problem, file=sys.stderr)
        # The cell's tools are what this run registered (also those its own `@tool` calls made).
        by_function = {id(tool.fn): tool for tool in self.registry}
        mine = {tool.name: tool for tool in (by_function.get(id(obj)) for _name, obj in defined) if tool}
        mine.update((name, self.registry[name]) for name in registration.registered if name not in mine)
        removed = forget_cell_tools(self.registry, cell_key, mine)
        if mine:  # one write: one stream message (print's two writes may reach the notebook apart)
            sys.stdout.write(registered_line(list(mine.values()), removed, replaced) + "\n")

    @no_var_expand
    @magic_arguments(name="tool")
    @argument("names", nargs="+", metavar="NAME", help="functions (or dotted paths like mod.fn) in the notebook")
    @argument("-g", "--group", default=None, help="group name stored with the tools")
    @argument("--hints", nargs="*", default=[], metavar="H",
              help="hints: read-only, destructive, idempotent, open-world")
    @argument("--strict", action="store_true", help="render strict schemas by default (checked now)")
    @line_magic("tool")
    def tool_line(self, line: str) -> None:
        """Register functions that already exist in the notebook: `%tool NAME [NAME ...] [-g G] [--hints H ...]`.

        A dotted name (`%tool helpers.area`) follows attributes from a notebook variable. Each tool
        is named after what you typed (the last part of a dotted name), so a lambda or a
        `functools.partial` gets a name of its own. Every name is looked up before anything is
        registered; an unknown name registers nothing. A function nbtools cannot describe is
        reported and the magic fails after registering the others.
        """
        try:
            args = _parse_args(self.tool_line, line, "%tool")
        except UsageError as error:
            if "--hints" not in line or "required: NAME" not in str(error):
                raise
            raise UsageError("%tool: no NAME given; names go before --hints, which takes every word after it: "
                             "`%tool NAME [NAME ...] --hints H [H ...]`") from None
        hints = _parse_hints(args.hints, "%tool", names_first=True)
        objects, missing, unbound = [], [], []
        for name in args.names:
            found = _lookup(self.shell.user_ns, name)
            if found is _MISSING:
                missing.append(name)
            elif "." in name and inspect.isfunction(found) and method_taken_from_class(found):
                unbound.append(name)
            else:
                objects.append((name, found))
        if missing:
            tip = " (%tool takes names, not globs)" if any(char in "".join(missing) for char in "*?[") else ""
            raise UsageError(f"%tool: no variable named {', '.join(map(repr, missing))} in the notebook{tip}; "
                             "nothing was registered")
        replaced = [name.rsplit(".", 1)[-1] for name, obj in objects
                    if name.rsplit(".", 1)[-1] in self.registry
                    and self.registry[name.rsplit(".", 1)[-1]].fn is not obj and not isinstance(obj, Tool)]
        registration = register_objects(objects, self.registry, group=args.group, hints=hints,
                                        strict=args.strict)
        replaced = [name for name in replaced if name in registration.registered]
        if replaced:
            print(f"%tool: replaced the earlier tool{'s' if len(replaced) > 1 else ''} {', '.join(replaced)} "
                  "(that definition no longer runs)")
        # A method taken from its class would make the model send `self`: refuse it, naming the fix.
        problems = [*registration.problem_lines("%tool"),
                    *(f"%tool: {name!r} not registered: it is a method of class {name.rsplit('.', 2)[-2]}, so "
                      f"the model would have to send its `self`; register it from an instance "
                      f"(`obj = {name.rsplit('.', 2)[-2]}(...)`, then `%tool obj.{name.rsplit('.', 1)[-1]}`)"
                      for name in unbound)]
        if problems:
            raise MagicError("\n".join(problems))

    @no_var_expand
    @magic_arguments()
    @argument("patterns", nargs="+", metavar="NAME|GLOB", help="tool names or globs such as 'math_*'")
    @line_magic("untool")
    def untool(self, line: str) -> None:
        """Remove tools by name or glob: `%untool NAME|GLOB [...]`.

        Every pattern must match at least one tool, else nothing is removed. The functions
        themselves stay in the notebook.
        """
        args = _parse_args(self.untool, line, "%untool")
        try:
            removed = remove_tools(self.registry, args.patterns)
        except ValueError as error:
            raise UsageError(f"%untool: {error}") from None
        print(f"Removed {len(removed)} tool{'s' if len(removed) != 1 else ''}: {', '.join(removed)}")

    # New `%tools` options: add an `@argument` below and a branch to `_tools_action`.
    @no_var_expand
    @magic_arguments()
    @argument("glob", nargs="?", default=None, help="only tools whose name matches this glob")
    @argument("-g", "--group", default=None, help="only tools of this group")
    @argument("--fmt", default=None, metavar="FMT",
              help="print the JSON definitions of the enabled tools in this format "
                   f"({', '.join(word for word, _ in format_words())})")
    @argument("--strict", action="store_true", help="with --fmt: the strict form (OpenAI/Anthropic strict mode)")
    @argument("--panel", action="store_true", help="show the interactive tools panel (ipywidgets)")
    @argument("--serve", nargs="?", type=int, const=0, default=None, metavar="PORT",
              help="serve the enabled tools over MCP (streamable HTTP at http://127.0.0.1:PORT/mcp; "
                   "no PORT: a free one); calls run in this kernel between cells")
    @argument("--stop", action="store_true", help="stop the MCP servers started with --serve")
    @argument("--forget", action="store_true",
              help="forget every Always allow / Always deny answer given to approval prompts (all registries; "
                   "with GLOB: only those tools), so they are asked again")
    @argument("--token", default=None, metavar="TOKEN",
              help="with --serve: the bearer token clients must send (default: $NBTOOLS_MCP_TOKEN, else a "
                   "random one, printed)")
    @argument("--no-token", action="store_true",
              help="with --serve: no authentication (anyone who can reach the port may call the tools)")
    @argument("--cells", action="store_true",
              help="with --serve, under a Jupyter server with real-time collaboration: write each served call "
                   "as a cell at the end of this notebook, its outputs as it runs")
    @argument("--allow-host", action="append", default=[], metavar="HOST",
              help="with --serve: another name clients may use in Host/Origin (repeatable)")
    @line_magic("tools")
    def tools(self, line: str) -> None:
        """List the registered tools: `%tools [GLOB] [-g GROUP] [--fmt FMT [--strict]] [--panel]`;
        serve them over MCP: `%tools --serve [PORT]`, `%tools --stop`. Without options: a table (HTML
        in a notebook, text in a terminal) of name, group, hints, the first line of the description
        and the parameters; disabled tools are marked. `--fmt` prints the JSON definitions a model
        would get (enabled tools only). `--panel` shows the panel where tools can be enabled,
        disabled and inspected. `--serve` starts an MCP server on 127.0.0.1 so an agent outside can
        call the enabled tools while you keep working: the calls run on the kernel's main thread
        between cells (see `nbtools.mcp`); `--stop` ends it. These are four different actions: give
        at most one of `--fmt`, `--panel`, `--serve`, `--stop` per call. `--forget [GLOB]` forgets
        the Always allow / Always deny answers given to approvals (`registry.forget()` everywhere).
        """
        args = _parse_args(self.tools, line, "%tools")
        self._tools_action(args)

    def _tools_action(self, args: Any) -> None:
        from IPython.display import display

        if args.forget:
            from .policy import forget_everywhere

            forgotten = forget_everywhere(args.glob)
            print(f"forgot the remembered answers for: {', '.join(forgotten)}" if forgotten
                  else "no remembered approval answers to forget")
            return
        chosen = [option for option, given in (("--fmt", args.fmt is not None), ("--panel", args.panel),
                                                 ("--serve", args.serve is not None), ("--stop", args.stop))
                  if given]
        if len(chosen) > 1:  # each is a different action; doing one and ignoring the other misleads
            raise UsageError(f"%tools: {' and '.join(chosen)} cannot be combined; use one at a time")
        if args.serve is None and (args.token is not None or args.no_token or args.allow_host or args.cells):
            raise UsageError("%tools: --token, --no-token, --allow-host and --cells go with --serve")
        if args.serve is not None or args.stop:
            from .extras import MissingExtra, require_extra

            if args.serve is not None:
                try:
                    require_extra("mcp", "%tools --serve")
                except MissingExtra as error:
                    raise MagicError(str(error)) from None
            token = False if args.no_token else args.token
            if args.no_token and args.token is not None:
                raise UsageError("%tools: give either --token or --no-token")
            print(serve_magic(self.registry, args.serve, args.stop, filtered=bool(args.glob or args.group),
                              token=token, allow_hosts=args.allow_host, cells=args.cells))
            return

        if args.strict and args.fmt is None:
            raise UsageError("%tools: --strict needs --fmt FMT (the table does not depend on it)")
        if args.panel:
            from .widgets import panel

            display(panel(self.registry, filter=args.glob or "", group=args.group))
            return
        if args.fmt is not None:
            definitions = tool_definitions(self.registry, args.fmt, args.strict, args.glob, args.group)
            print(json.dumps(definitions, indent=2, ensure_ascii=False, default=str))
            return
        display(tool_table(self.registry, args.glob, args.group))


def _parse_args(magic: Any, line: str, label: str) -> Any:
    """A magic's options, split the way a shell splits words: quotes group words and are removed
    (`-g "data tools"`, `%tools 'math_*'`). IPython's own `parse_argstring` keeps the quotes in the
    values, so a quoted group or glob silently matched nothing. Errors name the magic."""
    try:
        words = shlex.split(line)
    except ValueError as error:  # an unclosed quote
        raise UsageError(f"{label}: {error} in {line!r}") from None
    try:
        return magic.parser.parse_args(words)
    except UsageError as error:
        raise UsageError(f"{label}: {error} (see {label}?)") from None


def _parse_hints(values: list[str], magic: str, names_first: bool = False) -> frozenset[str]:
    try:
        return normalise_hints(" ".join(values))
    except ValueError as error:
        # `--hints` takes every word after it, so a name typed after the hints lands here.
        tip = "; names go before --hints" if names_first else ""
        raise UsageError(f"{magic}: {error}{tip}") from None


# -- extension entry points ------------------------------------------------------------------------

def load_ipython_extension(shell: Any) -> None:
    """Register the magics on `shell` (a second load replaces the first: same names, same registry)."""
    shell.register_magics(ToolMagics(shell))


def unload_ipython_extension(shell: Any) -> None:
    """Remove every magic this extension registered, stop the MCP servers `%tools --serve` started
    and undo the interpreter's process-wide patches; the registry and its tools stay.

    IPython has no public way to unregister magics, so the names are popped from the magics
    manager's tables, only where they still point at our ToolMagics (another extension may have
    taken a name since).
    """
    manager = shell.magics_manager
    for kind, names in MAGIC_NAMES.items():
        table = manager.magics[kind]
        for name in names:
            bound = table.get(name)
            if isinstance(getattr(bound, "__self__", None), ToolMagics):
                del table[name]
    if isinstance(manager.registry.get(ToolMagics.__name__), ToolMagics):
        del manager.registry[ToolMagics.__name__]
    # `%tools --stop` goes away with the magics, so servers started by `%tools --serve` go too
    mcp_module = sys.modules.get("nbtools.mcp")
    if mcp_module is not None:
        mcp_module.stop()
    # and the interpreter's process-wide patches (Thread.start, the SIGALRM functions) are undone;
    # never imported here: a kernel where python() never ran has nothing to undo
    process = sys.modules.get("nbtools.interp.process")
    if process is not None:
        process.uninstall()


__all__ = [  # the listing names are nbtools.listing's, still importable from here
    "ToolMagics", "MagicError", "Registration", "ToolTable", "ToolRow", "tool_row", "first_line", "parameter_summary",
    "defined_functions", "register_objects", "remove_tools", "tool_table", "tool_definitions", "serve_magic",
    "load_ipython_extension", "unload_ipython_extension",
]
