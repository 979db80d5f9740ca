"""Docments comments: what the `# ...` comments in a `def` header say about each parameter and the
return value, and the helpers class bodies share (source lines, comment cleaning, comment blocks).

A parameter's comment is the one at the end of the line where the parameter ends (`b: int = 1,  #
second addend`); failing that, the one on the line where its name is; failing that, a block of
comment-only lines directly above it. The return value's is the first comment after the parameter
list closes (`) -> int:  # the sum`).

Source is read with `linecache` from `co_filename`/`co_firstlineno` and only the `def` header is
lexed, by the standard `tokenize` (so `#` inside a default string is not a comment; the parse is
checked against the code object's parameter names). Most headers have no comment at all: a quick
look (`_may_have_comments`) skips them. No source (builtins, `exec`'d code, lambdas) means no comments, never an error.
"""

from __future__ import annotations

import inspect
import linecache
import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any, Iterator

__all__ = ["Header", "function_header", "clean_comment", "source_lines", "block_above"]


def clean_comment(text: str) -> str | None:
    """`# the sum` -> "the sum"; Sphinx `#:` is accepted; tool pragmas are not descriptions."""
    body = text[1:].strip()
    if body.startswith(":"):
        body = body[1:].strip()
    if not body or _PRAGMA.match(body):
        return None
    return body


_PRAGMA = re.compile(r"(type|pragma|fmt|pyright|mypy|pylint|isort|ruff):|noqa\b|nosec\b")


def source_lines(filename: str, module_globals: Any) -> list[str]:
    """The lines of `filename` from linecache ([] when there are none)."""
    if not filename or filename.startswith("<") and filename not in linecache.cache:
        return []  # `exec`'d code and friends: no source, and no need to look
    try:
        return linecache.getlines(filename, module_globals if isinstance(module_globals, dict) else None)
    except Exception:  # a loader's get_source can fail in any way; the docstring still counts
        return []


@dataclass(frozen=True)
class Header:
    """Docments comments of one `def` header."""

    params: dict[str, str]
    returns: str | None


_HEADER_WINDOW = 40  # lines read before trying the rest of the file (headers are short)
_DEF = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+([^\W\d]\w*)", re.M)
_ONE_LINE_STRING = re.compile(r"'(?:[^'\\\n]|\\.)*'" + r'|"(?:[^"\\\n]|\\.)*"')
_PARAM_START = re.compile(r"(?:\s|\\\n|\#[^\n]*)*(\*\*?|/)?(?:\s|\\\n|\#[^\n]*)*([^\W\d]\w*)?")
_AFTER_COLON = re.compile(r"[ \t]*(\#[^\r\n]*)?")
_OPENING = frozenset("([{")
_CLOSING = frozenset(")]}")

# A header token: (kind, text, offset); kind is "op" or "comment".
HeaderToken = tuple[str, str, int]


def function_header(fn: Any) -> Header | None:
    """The docments comments of the `def` header of `fn`, None when its source cannot be read or matched."""
    code = getattr(fn, "__code__", None)
    if code is None or code.co_name == "<lambda>":
        return None
    lines = source_lines(code.co_filename, getattr(fn, "__globals__", None))
    start = code.co_firstlineno - 1  # the first decorator's line when decorated
    if not lines or start >= len(lines) or not _may_have_comments(lines, start):
        return None
    expected = _code_parameters(code)
    window = lines[start:start + _HEADER_WINDOW]
    header = _parse_header("".join(window), code.co_name, expected)
    if header is None and len(window) < len(lines) - start:
        header = _parse_header("".join(lines[start:]), code.co_name, expected)
    return header


def _may_have_comments(lines: list[str], start: int) -> bool:
    """False when the `def` header certainly has no comment (most functions): skip all parsing.

    Reads from the first decorator to the line where the header's brackets close; a `#` outside
    a one-line string, or a triple quote, on the way means "look properly".
    """
    balance = 0
    seen_def = False
    for line in lines[start:start + _HEADER_WINDOW]:
        if "'" in line or '"' in line:
            if "'''" in line or '"""' in line:
                return True
            line = _ONE_LINE_STRING.sub("", line)
        if "#" in line:
            return True
        if not seen_def:
            seen_def = _DEF.match(line) is not None
            if not seen_def:
                continue
        balance += line.count("(") + line.count("[") + line.count("{")
        balance -= line.count(")") + line.count("]") + line.count("}")
        if balance <= 0 and not line.rstrip().endswith("\\"):
            return False
    return True


def _code_parameters(code: Any) -> frozenset[str]:
    count = code.co_argcount + code.co_kwonlyargcount
    count += bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return frozenset(code.co_varnames[:count])


def _header_tokens(text: str, pos: int) -> Iterator[HeaderToken]:
    """Comments, brackets, commas, `:` and `->` from `pos` on, read by the standard `tokenize` (exact on
    every Python version: strings, f-strings, continuation lines)."""
    import io
    import tokenize

    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    first_row = bisect_right(starts, pos) - 1
    first_column = pos - starts[first_row]
    try:
        for token in tokenize.generate_tokens(io.StringIO(text[pos:]).readline):
            if token.type == tokenize.COMMENT:
                kind = "comment"
            elif token.type == tokenize.OP and (token.string in _OPENING or token.string in _CLOSING
                                                 or token.string in (",", ":", "->")):
                kind = "op"
            else:
                continue
            row, column = token.start
            yield kind, token.string, starts[first_row + row - 1] + column + (first_column if row == 1 else 0)
    except (tokenize.TokenError, SyntaxError):
        return


def _parse_header(text: str, name: str, expected: frozenset[str]) -> Header | None:
    """Comments of the header of `def name` in `text`; None when the source does not match.

    A parameter's comment is the one at the end of the line where it ends (the line of the comma or
    parenthesis after it, or the line before when that comma starts its line), else the one on the
    line of its name, else the comment-only lines right above it. Lines are counted from 0.
    """
    found = _DEF.search(text)
    while found is not None and found.group(1) != name:
        found = _DEF.search(text, found.end())
    if found is None:
        return None
    depth = 0
    state = "signature"  # -> "params" -> "after" (the parameter list closed)
    params: list[list[Any]] = []  # [name, line of the name, line where it ends]
    current: list[Any] | None = None
    trailing: dict[int, str] = {}  # line -> raw comment after code, inside the parameter list
    above: dict[int, str] = {}  # line -> raw comment alone on its line, inside the parameter list
    after: list[tuple[int, str]] = []  # (line, raw comment after code) once the list closed
    line = last = 0
    close_line = -1
    colon = -1
    has_return = False
    for kind, value, start in _header_tokens(text, found.end()):
        line += text.count("\n", last, start)
        last = start
        if kind == "comment":
            if state == "params":
                (above if _alone(text, start) else trailing)[line] = value
            elif state == "after" and not _alone(text, start):
                after.append((line, value))
        elif value in _OPENING:
            depth += 1
            if state == "signature" and depth == 1 and value == "(":
                state = "params"
                current = _start_param(text, start + 1, line, params)
        elif value in _CLOSING:
            depth -= 1
            if state == "params" and depth == 0:
                if current is not None:
                    current[2] = line - 1 if text[start - 1] in " \t\n" and _alone(text, start) else line
                state, close_line = "after", line
        elif state == "params":
            if depth == 1 and value == ",":
                if current is not None:  # (a comma that starts its line ends the line before)
                    current[2] = line - 1 if text[start - 1] in " \t\n" and _alone(text, start) else line
                current = _start_param(text, start + 1, line, params)
        elif state == "after" and depth == 0:
            if value == "->":
                has_return = True
            elif value == ":":
                colon = start + 1
                break
    if colon < 0 or len(params) != len(expected) or {param[0] for param in params} != expected:
        return None
    after_colon = _AFTER_COLON.match(text, colon)
    if after_colon.group(1):
        after.append((line, after_colon.group(1)))

    last_ending = {param[2]: param[0] for param in params}  # line -> the last parameter ending there
    docs: dict[str, str] = {}
    used: set[int] = set()
    for comment_line, raw in trailing.items():
        owner = last_ending.get(comment_line)
        comment = clean_comment(raw) if owner is not None else None
        if comment is not None:
            docs[owner] = comment  # type: ignore[index]
            used.add(comment_line)
    returns = None
    if after:
        comment_line, raw = after[0]
        comment = clean_comment(raw)
        if comment is None:
            pass
        elif has_return:
            returns = comment
        elif comment_line == close_line:  # `b):  # doc` and no return annotation: b's doc
            owner = last_ending.get(comment_line)
            if owner is not None and owner not in docs:
                docs[owner] = comment
    for param_name, name_line, _end in params:
        if param_name in docs:
            continue
        if name_line in trailing and name_line not in used:
            comment = clean_comment(trailing[name_line])
            if comment is not None:
                docs[param_name] = comment
                used.add(name_line)
                continue
        block = block_above(above, name_line)
        if block:
            docs[param_name] = block
    return Header(docs, returns)


def _alone(text: str, offset: int) -> bool:
    """Whether only whitespace precedes `offset` on its line."""
    line_start = text.rfind("\n", 0, offset) + 1
    return line_start == offset or text[line_start:offset].isspace()


def _start_param(text: str, offset: int, line: int, params: list[list[Any]]) -> list[Any] | None:
    """The parameter named after `(` or `,` (None for `*`, `/` or a trailing comma).

    `offset` is just after the separator, which is on `line`.
    """
    match = _PARAM_START.match(text, offset)
    if match is None or match.group(2) is None:
        return None
    name_line = line + text.count("\n", offset, match.start(2))
    param = [match.group(2), name_line, name_line]
    params.append(param)
    return param


def block_above(comments: dict[int, str], line: int) -> str | None:
    """The comment-only lines directly above `line` (raw comments), cleaned and joined with newlines."""
    found = []
    line -= 1
    while line in comments:
        cleaned = clean_comment(comments[line])
        if cleaned is not None:
            found.append(cleaned)
        line -= 1
    return "\n".join(reversed(found)) if found else None
