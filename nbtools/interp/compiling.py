"""Submitted source → code objects: the body, and the last expression whose value comes back.

1. A single expression on one line compiles straight in `eval` mode (the common `x * 7` case, and
   the cheapest).
2. Anything else is parsed once; when the last statement is an expression that is not silenced by
   a trailing `;` (IPython's rule, comments allowed after it), it is split off and compiled in
   `eval` mode, so its value comes back without assigning any name in the namespace.
3. Every `except` handler (`except*` too) gets a handler in front of it that re-raises nbtools' own
   interruptions (the time-out as the timers raise it, a person's interrupt: `result.Deadline`,
   `result.RealInterrupt`); the classes are put into the code object's constants after compilation,
   so no name is needed for them. Every handler, not only bare ones or those naming
   `BaseException`: a handler's class is an expression (`B = BaseException; ... except B:`), known
   only at run time. The code's own `KeyboardInterrupt`/`TimeoutInterrupt` are not these classes
   and reach its handlers as usual.

(Named `compiling`, not `compile`: a submodule called `compile` would shadow the builtin in the
package's own namespace.)
"""

from __future__ import annotations

import ast
import itertools
import os
from types import CodeType

from .result import Deadline, RealInterrupt

_filenames = itertools.count(1)
# Stands for the guard's exception classes in the AST (an AST constant must be a literal); replaced
# by the real tuple in the compiled code objects. Random so no user constant can collide with it.
_GUARD_SENTINEL = "\x00nbtools-guard-" + os.urandom(8).hex()
_GUARDED = (Deadline, RealInterrupt)


# Code ready to run: `body` (exec mode) then `last` (eval mode: the value); either may be None.
Compiled = tuple[CodeType | None, CodeType | None]


def new_filename() -> str:
    """A name no other run uses, under which a run's source goes into `linecache`."""
    return f"<python-input-{next(_filenames)}>"


def compile_source(source: str, filename: str, flags: int = 0) -> Compiled:
    """The code objects for `source` (raises SyntaxError, or ValueError for NUL bytes)."""
    # dont_inherit: this module's `from __future__ import annotations` must not leak into user code.
    stripped = source.strip()
    if stripped and "\n" not in stripped:
        try:  # one line that is a single expression: the cheapest path, no AST round trip
            return None, compile(source, filename, "eval", flags, True)
        except SyntaxError:
            pass  # a statement (or a real syntax error, reported by the full parse below)
    tree = compile(source, filename, "exec", flags | ast.PyCF_ONLY_AST, True)
    guarded = "except" in source and _guard_bare_excepts(tree)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr) and not _silenced(source, tree.body[-1]):
        expression = ast.Expression(tree.body.pop().value)
        last = compile(expression, filename, "eval", flags, True)
    body = compile(tree, filename, "exec", flags, True) if tree.body else None
    if guarded:
        body = body and _swap_sentinel(body)
        last = last and _swap_sentinel(last)
    return body, last


def _silenced(source: str, statement: ast.Expr) -> bool:
    """IPython's rule: a `;` right after the last expression (comments may follow) hides its value."""
    if ";" not in source:
        return False
    lines = source.split("\n")
    # Column offsets count UTF-8 bytes, not characters.
    line = lines[statement.end_lineno - 1].encode()[statement.end_col_offset:].decode(errors="replace")
    for char in itertools.chain(line, "\n", *lines[statement.end_lineno:]):
        if char in " \t\r\n\f\\)":
            continue
        return char == ";"
    return False


def _guard_bare_excepts(tree: ast.AST) -> bool:
    """Put `except <guard>: raise` in front of every `try`'s handlers (their classes are only
    known at run time)."""
    changed = False
    for node in ast.walk(tree):
        if not isinstance(node, _TRY_NODES) or not node.handlers:
            continue
        # Handlers are tried in order: one guard in front of the first covers them all.
        guard = ast.ExceptHandler(type=ast.Constant(_GUARD_SENTINEL), name=None,
                                  body=[ast.Raise(exc=None, cause=None)])
        ast.copy_location(guard, node.handlers[0])
        ast.fix_missing_locations(guard)
        node.handlers.insert(0, guard)
        changed = True
    return changed


# `try` and (3.11+) `try`/`except*`: in the latter a bare `raise` re-raises the matched sub-group.
_TRY_NODES = (ast.Try, ast.TryStar) if hasattr(ast, "TryStar") else (ast.Try,)


def _swap_sentinel(code: CodeType) -> CodeType:
    consts = tuple(
        _GUARDED if type(const) is str and const == _GUARD_SENTINEL
        else _swap_sentinel(const) if isinstance(const, CodeType)
        else const
        for const in code.co_consts
    )
    return code.replace(co_consts=consts)


def defines_code(compiled: Compiled) -> bool:
    """Whether the code creates functions, classes or lambdas whose source must stay findable."""
    for code in compiled:
        if code is not None:
            for const in code.co_consts:
                if type(const) is CodeType:
                    return True
    return False
