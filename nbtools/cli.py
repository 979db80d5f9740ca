"""The `nbtools` command: print tool definitions, or serve tools over MCP.

    nbtools schema TARGET [--fmt FMT] [--strict]
    nbtools serve TARGET [--http PORT] [--host HOST]

TARGET is one of:

* `package.module:name`: `name` is a function (or any callable, a `Tool`), a `Registry` (its
  enabled tools) or a list of callables/Tools; `name` may be dotted (`module:Class.method`).
* `package.module`: the module's public functions (defined in it, not imported; `__all__` when it
  has one). A function the module registered with `@tool` keeps that Tool's name and hints.
* `path/to/file.py` or `path/to/file.py:name`: the same, for a file that is not on `sys.path`.
* `path/to/notebook.ipynb`: the tools its `%%tool` cells (and `@tool` calls) define, found by running
  the notebook's code cells, in order, in an embedded IPython shell with the nbtools extension loaded,
  in the notebook's folder (as Jupyter would). A failing cell stops the run with an error naming the
  cell; cells tagged `skip-execution` or `nbtools-skip` (a cell that needs a live front end or an SDK
  the tools do not, and defines no tools) are skipped, cells tagged `raises-exception` may fail. The
  cells get an empty stdin (`input()` raises EOFError): under `serve` stdin carries the protocol.

`schema` prints JSON on stdout: one definition for a single function, else a list. `serve` speaks
MCP over stdio (stdout carries the protocol) or, with `--http PORT`, streamable HTTP at
`http://HOST:PORT/mcp`. Everything else (progress, the notebook's own output on failure) goes to
stderr. Exit status: 0 on success, 1 when the target cannot be loaded or described, 2 for usage errors.

Running a notebook, and keeping a target's code off stdout and stdin, is `nbtools.nbrun`'s job.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import json
import os
import signal
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from .errors import NotebookError, SchemaError, TargetError
from .extras import MissingExtra, require_extra
from .introspect import module_functions
from .listing import format_words
from .nbrun import notebook_tools, on_sys_path, stdout_to_stderr
from .registry import Registry
from .tool import Tool

FORMAT_NAMES = tuple(word for word, _ in format_words())  # "neutral" first, then formats.FORMATS


@dataclass(frozen=True)
class Loaded:
    """What a TARGET gave: the tools, and whether it named one callable (schema prints one object)."""

    registry: Registry
    single: bool = False


# ================================================================================================
# Targets
# ================================================================================================
def load_target(target: str, *, progress: Any = None) -> Loaded:
    """The tools TARGET names (see the module docs). Raises TargetError or NotebookError."""
    path_part, _, attribute = target.partition(":")
    _refuse_folder(path_part)
    if path_part.endswith(".ipynb"):
        if attribute:
            raise TargetError(f"{target!r}: a notebook target takes no ':name' part")
        return Loaded(notebook_tools(path_part, progress=progress))
    module = _import_target_module(path_part)
    if not attribute:
        return Loaded(module_tools(module, warn=progress, label=repr(path_part)))
    value = _lookup_attribute(module, attribute, target, path_part)
    if isinstance(value, Registry):
        return Loaded(value)  # itself: enabling or disabling its tools later still counts
    if isinstance(value, Tool) or (callable(value) and not isinstance(value, type)):
        return Loaded(Registry([_registered_tool(value)]), single=True)
    if isinstance(value, (list, tuple)):
        return Loaded(Registry([_registered_tool(item) for item in value]))
    if isinstance(value, type):
        raise TargetError(f"{target!r} is a class: name a function, a Tool, a Registry or a list of them "
                          "(for its methods, name a module variable set to `tools_from(an_instance)`)")
    raise TargetError(f"{target!r} is a {type(value).__name__}: expected a function, a Tool, a Registry "
                      "or a list of them")


def _refuse_folder(spec: str) -> None:
    """TargetError for a folder that is not a package (`nbtools serve notebooks`), naming what to pass
    instead: the notebooks and .py files in it. A package folder (`__init__.py`) is a module target."""
    folder = Path(spec)
    if not spec or not folder.is_dir() or (folder / "__init__.py").is_file():
        return
    inside = sorted(str(folder / each.name) for each in folder.iterdir()
                    if each.suffix in (".ipynb", ".py") and each.is_file() and not each.name.startswith("."))
    examples = f"; in it: {', '.join(inside[:4])}{', ...' if len(inside) > 4 else ''}" if inside else ""
    raise TargetError(f"{spec!r} is a folder: pass one notebook (.ipynb) or Python file (.py) in it, or a "
                      f"module name{examples}")


# What TARGET may be, for the messages that refuse one.
ACCEPTED = "TARGET is package.module[:name], path/to/file.py[:name] or path/to/notebook.ipynb"


def _import_target_module(spec: str) -> types.ModuleType:
    if Path(spec).is_file() and not spec.endswith(".py"):  # `readme.txt`, `data.json`: a file, but no module
        raise TargetError(f"{spec!r} is neither a Python module (.py) nor a notebook (.ipynb); {ACCEPTED}")
    if spec.endswith(".py") or os.sep in spec or "/" in spec:
        path = Path(spec)
        if not path.is_file():
            raise TargetError(f"{spec!r}: no such file")
        name = _file_module_name(path.stem)
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None or module_spec.loader is None:
            raise TargetError(f"{spec!r}: cannot import this file as a Python module")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module  # dataclasses and pickling look the module up by name
        try:
            with on_sys_path(str(path.resolve().parent)):  # so the file's own sibling imports work
                module_spec.loader.exec_module(module)
        except Exception as error:
            sys.modules.pop(name, None)
            raise TargetError(f"{spec!r}: importing it failed: {type(error).__name__}: {error}") from error
        return module
    if not all(part.isidentifier() for part in spec.split(".")):
        raise TargetError(f"{spec!r} is not a module name (package.module), a .py file or a .ipynb notebook; "
                          f"{ACCEPTED}")
    try:
        return importlib.import_module(spec)
    except ModuleNotFoundError as error:
        raise TargetError(f"{spec!r}: no module named {error.name!r} (is it installed, or on PYTHONPATH?)") from error
    except Exception as error:
        raise TargetError(f"{spec!r}: importing it failed: {type(error).__name__}: {error}") from error


def _file_module_name(stem: str) -> str:
    """The module name for a target file: its stem, unless that would replace or hide a real module.

    A file called `mcp.py`, `uuid.py` or `json.py` must not take the place of the module of that
    name that nbtools (or anything else in this process) imports.
    """
    if stem.isidentifier() and stem not in sys.modules and importlib.util.find_spec(stem) is None:
        return stem
    return f"nbtools_target_{stem if stem.isidentifier() else 'module'}"


def _lookup_attribute(module: types.ModuleType, dotted: str, target: str, spec: str) -> Any:
    """`module.dotted`; errors name the module as the person typed it (`mymod.py`), never the internal
    name a target file was imported under, and list the functions it does have."""
    value: Any = module
    for part in dotted.split("."):
        if not part.isidentifier():
            raise TargetError(f"{target!r}: {dotted!r} is not a dotted Python name")
        try:
            value = getattr(value, part)
        except AttributeError:
            functions = [name for name, _ in module_functions(module)]
            has = f"; its functions: {', '.join(functions)}" if functions else "; it defines no public functions"
            raise TargetError(f"{target!r}: {spec} has no attribute {dotted!r}{has}") from None
    return value


def module_tools(module: types.ModuleType, *, warn: Any = None, label: str | None = None) -> Registry:
    """The public functions of a module (`introspect.module_functions`: its `__all__`, or what it defines), as Tools.

    A function nbtools cannot describe is skipped with a warning naming it and why (`warn(message)`;
    as `%%tool` does), and the others are kept; SchemaError (the first reason) when none can be described.
    """
    label = label or repr(module.__name__)
    members = module_functions(module)
    if not members:
        raise TargetError(f"module {label} defines no public functions to make tools of")
    tools, problems = [], []
    for name, value in members:
        try:
            tools.append(_registered_tool(value))
        except SchemaError as error:
            problems.append((name, error))
    if problems and not tools:
        raise problems[0][1]
    for name, error in problems:
        if warn is not None:
            warn(f"warning: {name!r} skipped (not a tool): {error}")
    return Registry(tools)


def _registered_tool(value: Any) -> Tool:
    """The Tool `@tool` registered for this function (any registry it can see), else a fresh one."""
    if isinstance(value, Tool):
        return value
    from .registry import registry as default_registry

    owner = sys.modules.get(getattr(value, "__module__", "") or "")
    registries = [default_registry]
    if owner is not None:
        registries += [item for item in vars(owner).values() if isinstance(item, Registry)]
    for known in registries:
        for tool in known:
            if tool.fn is value:
                return tool
    return Tool.from_function(value)


# ================================================================================================
# Commands
# ================================================================================================
def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nbtools",
        description="Turn Python functions and notebooks into tool definitions for language models, "
                    "and serve them over MCP.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    target_help = ("package.module:function, package.module, path/to/file.py[:name], "
                   "or path/to/notebook.ipynb")

    schema = commands.add_parser("schema", help="print the tool definitions of TARGET as JSON",
                                 description="Print the tool definitions of TARGET as JSON on stdout.")
    schema.add_argument("target", metavar="TARGET", help=target_help)
    schema.add_argument("--fmt", default="neutral", choices=FORMAT_NAMES,
                        help="definition format (default: neutral {name, description, parameters})")
    schema.add_argument("--strict", action="store_true",
                        help="strict form (OpenAI/Anthropic strict tool modes); fails on types it cannot express")

    serve = commands.add_parser("serve", help="serve the tools of TARGET over MCP",
                                description="Serve the tools of TARGET over MCP: stdio by default, "
                                            "streamable HTTP at http://HOST:PORT/mcp with --http.")
    serve.add_argument("target", metavar="TARGET", help=target_help)
    serve.add_argument("--http", type=_port, metavar="PORT", default=None,
                       help="serve streamable HTTP on this port instead of stdio (0: a free port)")
    serve.add_argument("--host", default="127.0.0.1", help="address for --http (default 127.0.0.1)")
    serve.add_argument("--token", default=None, metavar="TOKEN",
                       help="with --http: the bearer token clients must send (default: $NBTOOLS_MCP_TOKEN, "
                            "else a random one, printed)")
    serve.add_argument("--no-token", action="store_true",
                       help="with --http: no authentication (anyone who can reach the port may call the tools)")
    serve.add_argument("--allow-host", action="append", default=[], metavar="HOST",
                       help="with --http: another name clients may use in Host/Origin (repeatable), e.g. "
                            "the machine's LAN name with --host 0.0.0.0")
    serve.add_argument("--name", default=None, help="server name shown to clients (default: from TARGET)")
    return parser


def _version() -> str:
    from . import __version__

    return __version__


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port (an integer from 0 to 65535; 0 picks a free one)")
    return port


def stderr_progress(message: str) -> None:
    """Progress of the command, on stderr (stdout is for the JSON or the protocol)."""
    print(f"nbtools: {message}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `nbtools` command; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "serve":
        if args.http is None and (args.token is not None or args.no_token or args.allow_host):
            parser.error("--token, --no-token and --allow-host go with --http (stdio has no token: whoever "
                         "started the process owns it)")
        if args.token is not None and args.no_token:
            parser.error("give either --token or --no-token")
    # Like `python -m`, make modules in the current folder importable as targets.
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        if args.command == "schema":
            return _schema_command(args)
        return _serve_command(args)
    except NotebookError as error:
        _report_notebook_error(error)
        return 1
    except BrokenPipeError:
        # `nbtools schema X | head`: the reader left; not an error worth a message. Point stdout at
        # devnull so the interpreter's own flush at exit does not fail on the closed pipe again.
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (TargetError, SchemaError, OSError, MissingExtra) as error:
        # an OSError of ours carries its whole message in strerror: no "[Errno 98]" in front of it
        plain = isinstance(error, OSError) and error.strerror and error.filename is None
        print(f"nbtools: error: {error.strerror if plain else error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _schema_command(args: argparse.Namespace) -> int:
    with stdout_to_stderr():  # importing a module may print; only the JSON goes to stdout
        loaded = load_target(args.target, progress=stderr_progress)
        fmt = None if args.fmt == "neutral" else args.fmt
        definitions = loaded.registry.schemas(fmt, strict=args.strict)
    if not definitions:
        stderr_progress(f"{args.target} defines no tools")
    output = definitions[0] if loaded.single else definitions
    print(json.dumps(output, indent=2, ensure_ascii=False))
    return 0


def _serve_command(args: argparse.Namespace) -> int:
    require_extra("mcp", "nbtools serve")  # before the notebook runs, not after
    from . import mcp

    if args.http:
        _check_port_free(args.host, args.http)  # before the notebook runs, not after
    with stdout_to_stderr():
        loaded = load_target(args.target, progress=stderr_progress)
    tools = loaded.registry
    names = [tool.name for tool in tools.enabled()]
    from .resources import lend_default_catalog

    catalog = lend_default_catalog(tools)  # what the target registered with @resource, @prompt, share()
    if not names and not catalog.resources and not catalog.prompts:
        raise TargetError(f"{args.target} defines no tools, resources or prompts: nothing to serve")
    stderr_progress(f"{len(names)} tool{'s' if len(names) != 1 else ''}: {', '.join(names)}")
    if catalog.resources or catalog.prompts:
        stderr_progress(f"{len(catalog.resources)} resources, {len(catalog.prompts)} prompts")
    name = args.name or _server_name(args.target)
    if args.http is None:
        hint = (" (stdin is a terminal: this waits for an MCP client; Ctrl+C or Ctrl+D ends it; "
                "--http PORT serves over HTTP)") if sys.stdin.isatty() else ""
        with _exit_on_interrupt():  # installed before the line saying so: a Ctrl+C right after it ends cleanly
            stderr_progress(f"serving MCP over stdio{hint}")
            mcp.serve(tools, transport="stdio", name=name)
    else:
        mcp.serve(tools, transport="http", host=args.host, port=args.http, name=name,
                  token=False if args.no_token else args.token, allow_hosts=args.allow_host,
                  on_listening=_announce)
    return 0


def _check_port_free(host: str, port: int) -> None:
    """OSError saying the port is taken (and what to do) when nothing could listen on host:port now:
    found before a notebook runs for a minute, not after. The server binds again when it starts."""
    import errno
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server does: TIME_WAIT is fine
        try:
            probe.bind((host, port))
        except OSError as error:
            what = error.strerror or str(error)
            hint = ("; another program listens there: pick another port, or `--http 0` for a free one "
                    "(printed when it starts)") if error.errno == errno.EADDRINUSE else ""
            raise OSError(error.errno, f"cannot serve MCP on {host}:{port}: {what}{hint}") from None


def _announce(url: str, token: str | None) -> None:
    stderr_progress(f"serving MCP at {url} (Ctrl+C stops it)")
    if token is None:
        stderr_progress("WARNING: no authentication (--no-token): anyone who can reach the port can call the tools")
    else:
        stderr_progress(f"token (clients send `Authorization: Bearer <token>`): {token}")


@contextlib.contextmanager
def _exit_on_interrupt() -> Iterator[None]:
    """Ctrl+C ends a stdio server at once. Left to KeyboardInterrupt, the event loop's shutdown waits
    for the worker thread blocked reading stdin, so in a terminal only Ctrl+D ended it. Nothing
    is lost by leaving at once: stdio serving keeps no state beyond this process."""

    def leave(signum: int, frame: Any) -> None:
        stderr_progress("interrupted: MCP server stopped")
        os._exit(130)

    previous = signal.signal(signal.SIGINT, leave)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _server_name(target: str) -> str:
    base = target.partition(":")[0].rstrip("/\\")
    stem = Path(base).stem if base.endswith((".py", ".ipynb")) else base
    return f"nbtools:{stem}"


def _report_notebook_error(error: NotebookError) -> None:
    lines = error.source.rstrip().splitlines()
    shown = lines[:12] + (["..."] if len(lines) > 12 else [])
    print(f"nbtools: error: {error}", file=sys.stderr)
    print("  cell source:", file=sys.stderr)
    for line in shown:
        print(f"  | {line}", file=sys.stderr)
    if error.output.strip():
        print("  cell output:", file=sys.stderr)
        for line in error.output.rstrip().splitlines():
            print(f"  {line}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
