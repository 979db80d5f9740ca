"""Descriptions of a callable, its parameters and its return value, from every place people write them.

`function_docs(fn)` reads one function (or class) and returns a `FunctionDocs`; `field_docs(cls)`
reads the fields of a dataclass, TypedDict, NamedTuple or plain class; `compose_description` builds
the text a model sees. Everything here only reads: no annotation is evaluated, no default computed,
nothing of the user's imported or called.

Where a parameter's description comes from (the first source that has one wins):

1. docments comments in the `def` header: the comment at the end of the line where the parameter
   ends (`b: int = 1,  # second addend`); failing that, the comment on the line where its name
   is; failing that, a block of comment-only lines directly above the parameter.
2. the docstring's parameter section: Google (`Args:`, `Arguments:`, `Parameters:`,
   `Keyword Args:`, `Other Parameters:`, `Attributes:`), NumPy (`Parameters` + dashes, ...),
   reST/Sphinx (`:param x:`, `:ivar x:`) or Epydoc (`@param x:`), parsed by docstring_parser.

The return value: a comment after `->` (the first comment after the parameter list closes, e.g.
`) -> int:  # the sum`), then the docstring's Returns section (or Yields when there is no
Returns). `returns_type` is the type the docstring names (NumPy `int`, Google `int: ...`,
`:rtype:`), used only when the function has no return annotation.

The description is the docstring (cleaned like `inspect.cleandoc`) with its parameter, returns,
yields, raises and attributes sections removed; everything else stays, in order (summary,
paragraphs, `Examples:`, `Note:`, `See Also`, ...) because it helps the model. Raises go because
the model cannot act on them and they are long; Yields feed `returns`.

Classes: the class docstring's description, then the `__init__` docstring's; parameters from the
fields (see `field_docs`), which also reads `__init__`. For a field (first found wins, the class
itself before its bases): `metadata={"description": ...}` of a dataclass field; the comment on the
field's line (or the line where the field ends); a block of comments directly above the field (also
Sphinx `#:`); a string literal right after the field; comments in the `__init__` header; the
`__init__` docstring's parameters; the class docstring's `Attributes`/`Args`/`:ivar:`/`:param:`.

Source is read with `linecache` from `co_filename`/`co_firstlineno` and only the `def` header is
lexed (a small regex lexer that knows Python's string syntax, so `#` inside a default string is not
a comment; the parse is checked against the code object's parameter names, with `tokenize` as
the fallback). No source (builtins, `exec`'d code, lambdas) means docstring only, never an error.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import re
import sys
import weakref
from bisect import bisect_right
from dataclasses import dataclass, field
from types import FunctionType, MappingProxyType
from typing import Any, Callable, Iterator, Mapping

from .types import is_typeddict

__all__ = ["FunctionDocs", "function_docs", "field_docs", "compose_description"]


@dataclass(frozen=True)
class FunctionDocs:
    """What the docs of one callable say.

    Fields:
        description: the docstring without its parameter/returns/yields/raises/attributes
            sections, cleaned like `inspect.cleandoc`; "" when there is no docstring.
        params: parameter name -> description (read-only mapping; names as in the signature,
            without `*`/`**`).
        returns: the description of the return value, or None.
        returns_type: the type a docstring's Returns section names (e.g. NumPy `int`), or None.
    """

    description: str = ""
    params: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    returns: str | None = None
    returns_type: str | None = None


_NO_PARAMS: Mapping[str, str] = MappingProxyType({})


# ---------------------------------------------------------------------------------------------
# Public functions
# ---------------------------------------------------------------------------------------------
def function_docs(fn: Any) -> FunctionDocs:
    """The descriptions of `fn` (a function, already unwrapped by the caller, or a class).

    Never raises for missing or unreadable source: what cannot be read is simply not there.
    """
    if isinstance(fn, type):
        return _class_docs(fn)
    fn = getattr(fn, "__func__", fn)  # bound/class/static methods
    doc = getattr(fn, "__doc__", None)
    parsed = _parse_docstring(doc) if isinstance(doc, str) else _EMPTY_DOCSTRING
    header = _function_header(fn)
    if header is None:
        params = parsed.params
        returns = parsed.returns
    else:
        params = {**parsed.params, **header.params} if parsed.params else header.params
        returns = header.returns or parsed.returns
    return FunctionDocs(
        description=parsed.description,
        params=MappingProxyType(params) if params else _NO_PARAMS,
        returns=returns,
        returns_type=parsed.returns_type,
    )


def field_docs(cls: type) -> dict[str, str]:
    """Descriptions of the fields of `cls` (dataclass, TypedDict, NamedTuple or plain class).

    Includes the parameters of its `__init__` (a plain class is built through it). A new dict each
    call; the work is cached per class (weakly, so redefined classes get fresh answers).
    """
    try:
        cached = _FIELD_CACHE.get(cls)
    except TypeError:  # not weak-referenceable
        cached = None
    if cached is None:
        cached = {}
        for klass in _doc_classes(cls):
            for name, text in _own_field_docs(klass).items():
                cached.setdefault(name, text)
        try:
            _FIELD_CACHE[cls] = cached
        except TypeError:
            pass
    return dict(cached)


def compose_description(docs: FunctionDocs, return_type_text: str | None) -> str:
    """The tool description: `docs.description`, then a blank line and a `Returns: ...` line.

    `return_type_text` is the annotation as text ("int", "list[str]"), None when the return is not
    annotated (or is None); then the docstring's `returns_type` is used if it named one. The line is
    `Returns: {type} - {description}`, `Returns: {type}` or `Returns: {description}`, and is left
    out when there is neither a type nor a description.
    """
    type_text = return_type_text or docs.returns_type
    if type_text and docs.returns:
        line = f"Returns: {type_text} - {docs.returns}"
    elif type_text:
        line = f"Returns: {type_text}"
    elif docs.returns:
        line = f"Returns: {docs.returns}"
    else:
        return docs.description
    return f"{docs.description}\n\n{line}" if docs.description else line


# ---------------------------------------------------------------------------------------------
# Docstrings
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Docstring:
    """A docstring split into what the model reads and what describes parameters/return."""

    description: str
    params: dict[str, str]
    returns: str | None
    returns_type: str | None


_EMPTY_DOCSTRING = _Docstring("", {}, None, None)

# Section titles (lower-cased) whose content we take out of the description, by what they hold.
_PARAM_TITLES = frozenset({
    "args", "arguments", "parameters", "params", "keyword args", "keyword arguments",
    "other parameters", "other params", "other args", "other arguments", "attributes", "attribute",
})
_RETURN_TITLES = frozenset({"returns", "return"})
_YIELD_TITLES = frozenset({"yields", "yield"})
_RAISE_TITLES = frozenset({"raises", "raise", "exceptions", "except"})
_CONSUMED_TITLES = _PARAM_TITLES | _RETURN_TITLES | _YIELD_TITLES | _RAISE_TITLES

# Google: `Title:` alone on a line at column 0 (after cleandoc). `Returns: text` inline too.
_GOOGLE_HEADER = re.compile(r"^([A-Za-z][A-Za-z ]*?)[ \t]*:[ \t]*$", re.M)
_GOOGLE_INLINE_RETURN = re.compile(r"^(Returns?|Yields?):[ \t]+(\S.*)$")
# NumPy: a title line underlined with dashes.
_NUMPY_HEADER = re.compile(r"^([A-Za-z][A-Za-z ]*?)[ \t]*\n[ \t]*-{3,}[ \t]*$", re.M)
# reST/Sphinx and Epydoc field lists: `:param x: ...` / `@param x: ...` at column 0.
_FIELD_ITEM = re.compile(r"^([:@])([A-Za-z_]+)\b[^:\n]*:")
_REST_KEYS = frozenset({
    "param", "parameter", "arg", "argument", "key", "keyword", "kwarg", "kwparam", "type",
    "kwtype", "ivar", "var", "cvar", "vartype", "returns", "return", "rtype", "yields", "yield",
    "ytype", "raises", "raise", "except", "exception",
})
_FIELD_RAISE_KEYS = frozenset({"raises", "raise", "except", "exception"})
_FIELD_STYLE_PROBE = re.compile(r"^[:@](?:param|parameter|arg|argument|keyword|kwarg|type|ivar|cvar|var"
                                r"|returns?|rtype|yields?|raises?)\b", re.M)


def _parse_docstring(doc: str) -> _Docstring:
    """Split `doc` into description, parameter docs and return docs (see the module docstring)."""
    text = inspect.cleandoc(_header_on_its_own_line(doc))
    if not text:
        return _EMPTY_DOCSTRING
    if "\n" not in text:  # one line: only an inline `Returns: ...` can hide in it
        inline = _GOOGLE_INLINE_RETURN.match(text)
        if inline is None:
            return _Docstring(text, {}, None, None)
    if "---" in text and _numpy_has_sections(text):
        return _parse_numpy(text)
    if ":" in text:
        google = _parse_google(text)
        if google is not None:
            return google
        if _FIELD_STYLE_PROBE.search(text):
            return _parse_fields(text)
    elif "@" in text and _FIELD_STYLE_PROBE.search(text):
        return _parse_fields(text)
    return _Docstring(text, {}, None, None)


def _header_on_its_own_line(doc: str) -> str:
    """`\"\"\"Args:` (a section title right after the quotes) indented like the lines below it.

    `inspect.cleandoc` dedents every line but the first, so the title would land at column 0 with
    its items (`Args:` / `a: first`): the items would read as new paragraphs, not as the section.
    """
    first, newline, rest = doc.partition("\n")
    title = first.strip()
    if not newline or not title.endswith(":") or title[:-1].strip().lower() not in _CONSUMED_TITLES:
        return doc
    lines = rest.expandtabs().split("\n")
    indents = [len(line) - len(line.lstrip()) for line in lines if line.strip()]
    if not indents:
        return doc
    # The body's indentation: the least indented line, or the closing quotes' line; when that is
    # where the items are, the title belongs one level out.
    margin = min(indents + ([len(lines[-1])] if not lines[-1].strip() else []))
    if margin == indents[0]:
        margin = max(margin - 4, 0)
    return "\n" + " " * margin + title + "\n" + "\n".join(lines)


def _numpy_has_sections(text: str) -> bool:
    return any(match.group(1).strip().lower() in _CONSUMED_TITLES for match in _NUMPY_HEADER.finditer(text))


def _parse_google(text: str) -> _Docstring | None:
    """Google style, or None when the text has no Google section we consume."""
    lines = text.split("\n")
    kept: list[str] = []
    params: list[str] = []
    returns: list[str] = []
    yields: list[str] = []
    found = False
    index = 0
    while index < len(lines):
        line = lines[index]
        bucket: list[str] | None = None
        if line[:1].isalpha() and ":" in line:
            header = _GOOGLE_HEADER.match(line)
            inline = None if header else _GOOGLE_INLINE_RETURN.match(line)
            title = (header.group(1) if header else inline.group(1) if inline else "").lower()
            if title in _CONSUMED_TITLES:
                bucket = (params if title in _PARAM_TITLES else returns if title in _RETURN_TITLES
                          else yields if title in _YIELD_TITLES else [])
                if inline is not None:
                    bucket.append("    " + inline.group(2))
        if bucket is None:
            kept.append(line)
            index += 1
            continue
        found = True
        index += 1
        # The section runs until the first non-blank line at column 0.
        while index < len(lines) and (not lines[index].strip() or lines[index][:1] in " \t"):
            bucket.append(lines[index])
            index += 1
        kept.append("")
    if not found:
        return None
    parts = []
    if params:
        parts.append("Args:\n" + _reindent(params, "    "))
    if returns or yields:
        parts.append(("Returns:\n" if returns else "Yields:\n") + _reindent(returns or yields, "    "))
    if not parts:
        return _Docstring(_join_kept(kept), {}, None, None)
    from docstring_parser import google

    # A summary line first: docstring_parser cleandoc's its input, which would dedent the items.
    return _from_parsed(_join_kept(kept), _google_parser(google).parse, "-\n" + "\n".join(parts))


_GOOGLE_PARSER: Any = None


def _google_parser(google: Any) -> Any:
    global _GOOGLE_PARSER
    if _GOOGLE_PARSER is None:  # built once: the default parser is rebuilt on every call
        _GOOGLE_PARSER = google.GoogleParser()
    return _GOOGLE_PARSER


def _parse_numpy(text: str) -> _Docstring:
    headers = list(_NUMPY_HEADER.finditer(text))
    kept = [text[: headers[0].start()]]
    params: list[str] = []
    returns: list[str] = []
    yields: list[str] = []
    for position, header in enumerate(headers):
        end = headers[position + 1].start() if position + 1 < len(headers) else len(text)
        title = header.group(1).strip().lower()
        body = text[header.end():end]
        if title not in _CONSUMED_TITLES:
            kept.append(text[header.start():end])
            continue
        kept.append("\n\n")
        bucket = (params if title in _PARAM_TITLES else returns if title in _RETURN_TITLES
                  else yields if title in _YIELD_TITLES else None)
        if bucket is not None:
            bucket.extend(body.strip("\n").split("\n"))
    description = _join_kept("".join(kept).split("\n"))
    parts = []
    if params:
        parts.append("Parameters\n----------\n" + _reindent(params, ""))
    if returns or yields:
        parts.append(("Returns\n-------\n" if returns else "Yields\n------\n") + _reindent(returns or yields, ""))
    if not parts:
        return _Docstring(description, {}, None, None)
    from docstring_parser import numpydoc

    result = _from_parsed(description, numpydoc.parse, "-\n\n" + "\n\n".join(parts))
    if result.returns is None and result.returns_type and not _looks_like_type(result.returns_type):
        # `Returns\n-------\nthe total of a and b`: prose, not a type
        return _Docstring(description, result.params, result.returns_type, None)
    return result


def _parse_fields(text: str) -> _Docstring:
    """reST/Sphinx (`:param x:`) or Epydoc (`@param x:`) field lists."""
    lines = text.split("\n")
    kept: list[str] = []
    taken: list[str] = []
    marker = ""
    index = 0
    while index < len(lines):
        item = _FIELD_ITEM.match(lines[index])
        if item is None or item.group(2).lower() not in _REST_KEYS:
            kept.append(lines[index])
            index += 1
            continue
        marker = item.group(1)
        keep_item = item.group(2).lower() not in _FIELD_RAISE_KEYS
        if keep_item:
            taken.append(lines[index])
        index += 1
        # Continuation: indented lines, and blank lines followed by more indented lines.
        while index < len(lines) and (lines[index][:1] in (" ", "\t") and lines[index].strip()
                                      or not lines[index].strip() and index + 1 < len(lines)
                                      and lines[index + 1][:1] in (" ", "\t")):
            if keep_item:
                taken.append(lines[index])
            index += 1
        kept.append("")
    description = _join_kept(kept)
    if not taken:
        return _Docstring(description, {}, None, None)
    if marker == "@":
        from docstring_parser import epydoc as style
    else:
        from docstring_parser import rest as style
    return _from_parsed(description, style.parse, "-\n\n" + "\n".join(taken))


def _from_parsed(description: str, parse: Callable[[str], Any], sections: str) -> _Docstring:
    """Parse `sections` (only the parameter/return sections) with docstring_parser's `parse`.

    A section docstring_parser cannot read costs its parameter docs, never the tool.
    """
    try:
        parsed = parse(sections)
    except Exception:  # ParseError, or a bug on odd input: lose these docs, never the tool
        return _Docstring(description, {}, None, None)
    params: dict[str, str] = {}
    returns = returns_type = None
    generator_returns = generator_type = None
    for meta in parsed.meta:
        kind = type(meta).__name__
        if kind == "DocstringParam" or kind == "DocstringMeta" and meta.args[:1] and \
                meta.args[0] in ("ivar", "var", "cvar") and len(meta.args) >= 2:
            names = meta.arg_name if kind == "DocstringParam" else meta.args[-1]
            text = (meta.description or "").strip()
            if not text or not names:
                continue
            for name in names.split(","):  # NumPy `x, y : int`
                name = name.strip().replace("\\", "").lstrip("*").strip()
                if name.isidentifier():
                    params.setdefault(name, text)
        elif kind == "DocstringReturns":
            text = (meta.description or "").strip() or None
            type_name = (meta.type_name or "").strip() or None
            if meta.is_generator:
                if generator_returns is None and generator_type is None:
                    generator_returns, generator_type = text, type_name
            elif returns is None and returns_type is None:
                returns, returns_type = text, type_name
    if returns is None and returns_type is None:
        returns, returns_type = generator_returns, generator_type
    return _Docstring(description, params, returns, returns_type)


def _reindent(lines: list[str], prefix: str) -> str:
    """Remove the common indentation of `lines` and put `prefix` in front of each non-blank one."""
    indent = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
    return "\n".join(prefix + line[indent:] if line.strip() else "" for line in lines)


def _join_kept(lines: list[str]) -> str:
    """Kept lines -> description: runs of blank lines become one, ends stripped."""
    out: list[str] = []
    for line in lines:
        if line.strip():
            out.append(line.rstrip())
        elif out and out[-1]:
            out.append("")
    while out and not out[-1]:
        out.pop()
    return "\n".join(out)


_TYPE_TEXT = re.compile(r"[\w.\[\](){}'\"|,*~-]+")


def _looks_like_type(text: str) -> bool:
    """`int`, `list[str]`, `dict[str, int] | None`, `int, optional` - but not a sentence."""
    compact = re.sub(r"\s*([|,\[\]])\s*", r"\1", text.strip())
    return bool(_TYPE_TEXT.fullmatch(compact))


# ---------------------------------------------------------------------------------------------
# Source and comments
# ---------------------------------------------------------------------------------------------
def _clean_comment(text: str) -> str | None:
    """`# the sum` -> "the sum"; Sphinx `#:` is accepted; tool pragmas are not descriptions."""
    body = text[1:].strip()
    if body.startswith(":"):
        body = body[1:].strip()
    if not body or _PRAGMA.match(body):
        return None
    return body


_PRAGMA = re.compile(r"(type|pragma|fmt|pyright|mypy|pylint|isort|ruff):|noqa\b|nosec\b")


def _source_lines(filename: str, module_globals: Any) -> list[str]:
    """The lines of `filename` from linecache ([] when there are none)."""
    if not filename or filename.startswith("<") and filename not in linecache.cache:
        return []  # `exec`'d code and friends: no source, and no need to look
    try:
        return linecache.getlines(filename, module_globals if isinstance(module_globals, dict) else None)
    except Exception:  # a loader's get_source can fail in any way; the docstring still counts
        return []


# ---------------------------------------------------------------------------------------------
# Function headers (docments)
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Header:
    """Docments comments of one `def` header."""

    params: dict[str, str]
    returns: str | None


_HEADER_WINDOW = 40  # lines read before trying the rest of the file (headers are short)
_DEF = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+([^\W\d]\w*)", re.M)
# Header scanning: each match skips code and whole string literals (so a `#` or bracket in a string
# does not count; a prefix never changes where a string ends) and stops at the next token the parse
# needs: a comment, a bracket or a comma, and after the parameter list also `:` and `->`.
# Possessive repeats: an unterminated quote costs one character, never a backtracking storm.
_STRING = (r"'''(?:[^'\\]|\\.|'(?!''))*+'''|\"\"\"(?:[^\"\\]|\\.|\"(?!\"\"))*+\"\"\""
           r"|'(?:[^'\\\n]|\\.)*+'|\"(?:[^\"\\\n]|\\.)*+\"")
_IN_PARAMS = re.compile(r"""(?:[^'"\#()\[\]{},\\]++|""" + _STRING + r"""|\\.|['"])*+"""
                        r"(?:(?P<comment>\#[^\r\n]*)|(?P<op>[()\[\]{},]))", re.S)
_AFTER_PARAMS = re.compile(r"""(?:[^'"\#()\[\]{},:\\-]++|""" + _STRING + r"""|\\.|['"]|-(?!>))*+"""
                           r"(?:(?P<comment>\#[^\r\n]*)|(?P<op>->|[()\[\]{},:]))", re.S)
_ONE_LINE_STRING = re.compile(r"'(?:[^'\\\n]|\\.)*'" + r'|"(?:[^"\\\n]|\\.)*"')
_PARAM_START = re.compile(r"(?:\s|\\\n|\#[^\n]*)*(\*\*?|/)?(?:\s|\\\n|\#[^\n]*)*([^\W\d]\w*)?")
_AFTER_COLON = re.compile(r"[ \t]*(\#[^\r\n]*)?")
_OPENING = frozenset("([{")
_CLOSING = frozenset(")]}")

# A header token: (kind, text, offset); kind is "op" or "comment".
_HeaderToken = tuple[str, str, int]


def _function_header(fn: Any) -> _Header | None:
    code = getattr(fn, "__code__", None)
    if code is None or code.co_name == "<lambda>":
        return None
    lines = _source_lines(code.co_filename, getattr(fn, "__globals__", None))
    start = code.co_firstlineno - 1  # the first decorator's line when decorated
    if not lines or start >= len(lines) or not _may_have_comments(lines, start):
        return None
    expected = _code_parameters(code)
    window = lines[start:start + _HEADER_WINDOW]
    header = _parse_header("".join(window), code.co_name, expected, _regex_tokens)
    if header is None and len(window) < len(lines) - start:
        header = _parse_header("".join(lines[start:]), code.co_name, expected, _regex_tokens)
    if header is None:  # something the regex does not know (e.g. 3.12 f-strings nesting quotes)
        header = _parse_header("".join(lines[start:]), code.co_name, expected, _tokenize_tokens)
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


def _regex_tokens(text: str, pos: int) -> Iterator[_HeaderToken]:
    """Comments and brackets/commas up to the parameter list's `)`, then also `:` and `->`."""
    depth = 0
    for match in _IN_PARAMS.finditer(text, pos):
        kind = match.lastgroup
        value = match.group(kind)  # type: ignore[arg-type]
        yield kind, value, match.start(kind)  # type: ignore[misc]
        if value in _OPENING:
            depth += 1
        elif value in _CLOSING:
            depth -= 1
            if depth == 0:
                pos = match.end()
                break
    else:
        return
    for match in _AFTER_PARAMS.finditer(text, pos):
        kind = match.lastgroup
        yield kind, match.group(kind), match.start(kind)  # type: ignore[misc]


def _tokenize_tokens(text: str, pos: int) -> Iterator[_HeaderToken]:
    """The same tokens from the standard `tokenize` (exact on every Python version, slower)."""
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


def _parse_header(text: str, name: str, expected: frozenset[str],
                  lexer: Callable[[str, int], Iterator[_HeaderToken]]) -> _Header | None:
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
    for kind, value, start in lexer(text, found.end()):
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
        comment = _clean_comment(raw) if owner is not None else None
        if comment is not None:
            docs[owner] = comment  # type: ignore[index]
            used.add(comment_line)
    returns = None
    if after:
        comment_line, raw = after[0]
        comment = _clean_comment(raw)
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
            comment = _clean_comment(trailing[name_line])
            if comment is not None:
                docs[param_name] = comment
                used.add(name_line)
                continue
        block = _block_above(above, name_line)
        if block:
            docs[param_name] = block
    return _Header(docs, returns)


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


def _block_above(comments: dict[int, str], line: int) -> str | None:
    """The comment-only lines directly above `line` (raw comments), cleaned and joined with newlines."""
    found = []
    line -= 1
    while line in comments:
        cleaned = _clean_comment(comments[line])
        if cleaned is not None:
            found.append(cleaned)
        line -= 1
    return "\n".join(reversed(found)) if found else None



# ---------------------------------------------------------------------------------------------
# Classes
# ---------------------------------------------------------------------------------------------
_FIELD_CACHE: "weakref.WeakKeyDictionary[type, dict[str, str]]" = weakref.WeakKeyDictionary()


def _class_docs(cls: type) -> FunctionDocs:
    parsed = _parse_docstring(_own_class_doc(cls) or "")
    init = _python_init(cls)
    description = parsed.description
    # An `__init__` inherited from another package (pydantic's BaseModel) documents that library,
    # not this class.
    foreign = init is not None and str(getattr(init, "__module__", "")).partition(".")[0] != \
        str(cls.__module__).partition(".")[0]
    if init is not None and not foreign and isinstance(init.__doc__, str):
        init_description = _parse_docstring(init.__doc__).description
        if init_description:
            description = f"{description}\n\n{init_description}" if description else init_description
    params = field_docs(cls)
    return FunctionDocs(description=description, params=MappingProxyType(params) if params else _NO_PARAMS)


def _own_class_doc(cls: type) -> str | None:
    """The class's own docstring, without the signature text dataclasses/namedtuples make up."""
    doc = cls.__dict__.get("__doc__")
    if not isinstance(doc, str):
        return None
    generated = "\n" not in doc.strip() and doc.startswith(cls.__name__ + "(") and (
        "__dataclass_fields__" in cls.__dict__ or "_fields" in cls.__dict__)
    return None if generated else doc


def _python_init(cls: type) -> FunctionType | None:
    """`cls.__init__` when it is a Python function (not `object.__init__` or another C slot).

    Generated ones (dataclass, namedtuple) qualify but say nothing: no docstring, no source.
    """
    init = getattr(cls, "__init__", None)
    if not isinstance(init, FunctionType):
        return None
    unwrapped = inspect.unwrap(init)
    return unwrapped if isinstance(unwrapped, FunctionType) else init


def _doc_classes(cls: type) -> list[type]:
    """`cls` and the classes whose bodies declare its fields, nearest first.

    TypedDict bases are not in a TypedDict's MRO: they come from `__orig_bases__` (3.12+) or, before
    that, from the names in the `class` header looked up in the module (never called).
    """
    chain: list[type] = []
    queue = [cls]
    while queue:
        klass = queue.pop(0)
        if klass in chain or klass is object or klass.__module__ in ("builtins", "typing", "typing_extensions"):
            continue
        chain.append(klass)
        if is_typeddict(klass):
            bases = klass.__dict__.get("__orig_bases__")
            if bases is None:
                body = _class_body(klass)
                bases = _resolve_names(klass, body.bases) if body is not None else ()
            queue.extend(base for base in bases if isinstance(base, type) and is_typeddict(base))
        else:
            queue.extend(klass.__mro__[1:])
    return chain


def _resolve_names(cls: type, names: tuple[str, ...]) -> list[Any]:
    """Dotted names from the source of `cls`'s header, looked up (not called) in its module."""
    module = sys.modules.get(cls.__module__)
    namespace = getattr(module, "__dict__", None) or {}
    found = []
    for dotted in names:
        first, *rest = dotted.split(".")
        value = namespace.get(first)
        for part in rest:
            value = getattr(value, part, None) if isinstance(value, (type, type(sys))) else None
        if value is not None:
            found.append(value)
    return found


def _own_annotations(cls: type) -> set[str] | None:
    """Names annotated in the body of `cls` itself; None when they cannot be read without evaluating."""
    annotations = cls.__dict__.get("__annotations__")
    if isinstance(annotations, dict):
        return set(annotations)
    if "__annotate__" in cls.__dict__ or "__annotate_func__" in cls.__dict__:
        return None  # Python 3.14 lazy annotations: evaluating them could run arbitrary code
    return set()


def _own_field_docs(cls: type) -> dict[str, str]:
    """Field docs declared by `cls` itself (not its bases), by precedence."""
    docs: dict[str, str] = {}
    annotated = _own_annotations(cls)
    for item in cls.__dict__.get("__dataclass_fields__", {}).values():
        metadata = getattr(item, "metadata", None) or {}
        text = metadata.get("description") or metadata.get("doc")
        if isinstance(text, str) and text.strip() and (annotated is None or item.name in annotated):
            docs[item.name] = text.strip()
    if annotated is None or annotated:
        body = _class_body(cls)
        for name, text in (body.docs if body is not None else {}).items():
            docs.setdefault(name, text)
    if isinstance(cls.__dict__.get("__init__"), FunctionType):
        init = _python_init(cls)
        for name, text in function_docs(init).params.items():
            docs.setdefault(name, text)
    doc = _own_class_doc(cls)
    if doc:
        for name, text in _parse_docstring(doc).params.items():
            docs.setdefault(name, text)
    return docs


# Class bodies need every token (names, `:`, strings, indentation), unlike `def` headers.
# One token: (kind, text, first line, last line, column). Kinds: "name", "op", "str", "comment",
# "nl" (end of a physical line), "other" (numbers etc.). Whitespace and `\`-continuations vanish.
Token = tuple[str, str, int, int, int]

# Each match first eats the spaces before a token (fast: no per-space retry of every alternative).
_LEXER = re.compile(
    r"""[ \t\f]*+(?:
    (?P<str>(?:[rRbBuUfF]{1,2})?(?:'''(?:[^'\\]|\\.|'(?!''))*+'''|\"\"\"(?:[^"\\]|\\.|"(?!""))*+\"\"\"
                                |'(?:[^'\\\n]|\\.)*+'|"(?:[^"\\\n]|\\.)*+"))
    |(?P<name>[^\W\d]\w*)
    |(?P<nl>\r?\n)
    |(?P<comment>\#[^\r\n]*)
    |(?P<other>\d[\w.]*)
    |(?P<cont>\\\r?\n)
    |(?P<op>->|\*\*|[^\s\w]))
    """,
    re.X | re.S,
)


def _lex(text: str, first_line: int) -> Iterator[Token]:
    """Tokens of Python source `text` whose first line is `first_line` (1-based)."""
    line = first_line
    line_start = 0
    for match in _LEXER.finditer(text):
        kind = match.lastgroup
        if kind is None:
            continue  # trailing spaces at the very end
        value = match.group(kind)
        start = match.start(kind)
        if kind == "nl":
            yield "nl", value, line, line, start - line_start
            line += 1
            line_start = start + len(value)
            continue
        if kind == "cont":
            line += 1
            line_start = start + len(value)
            continue
        newlines = value.count("\n") if kind == "str" else 0
        yield kind, value, line, line + newlines, start - line_start
        if newlines:
            line += newlines
            line_start = start + value.rindex("\n") + 1


@dataclass(frozen=True)
class _ClassBody:
    """What the source of one `class` statement says.

    Fields: `fields` (names annotated at the top of the body, in order), `docs` (field name ->
    description from comments and attribute docstrings), `bases` (the dotted names in the header).
    """

    fields: tuple[str, ...]
    docs: dict[str, str]
    bases: tuple[str, ...]


_BODY_CACHE: "weakref.WeakKeyDictionary[type, _ClassBody | None]" = weakref.WeakKeyDictionary()


def _class_body(cls: type) -> _ClassBody | None:
    """The source of `class cls` (cached per class), or None when it cannot be found."""
    try:
        return _BODY_CACHE[cls]
    except KeyError:
        pass
    except TypeError:  # not weak-referenceable: do not cache
        return _find_class_body(cls)
    body = _BODY_CACHE[cls] = _find_class_body(cls)
    return body


def _find_class_body(cls: type) -> _ClassBody | None:
    # The names `cls` annotates tell the right `class` line apart when several classes share the
    # name (or the file changed since it was imported).
    annotated = _own_annotations(cls)
    for lines, start in _class_locations(cls):
        body = _parse_class_body(_lex("".join(lines[start:]), start + 1), cls.__name__)
        if body is None:
            continue
        if annotated is not None and bool(body.fields) != bool(annotated) or \
                annotated and not set(body.fields) <= annotated:
            continue
        return body
    return None


def _class_locations(cls: type) -> Iterator[tuple[list[str], int]]:
    """(source lines, 0-based line index) of each place `class <name>` may be, best guess first."""
    pattern = re.compile(r"^[ \t]*class[ \t]+" + re.escape(cls.__name__) + r"\b", re.M)
    module = sys.modules.get(cls.__module__)
    module_globals = getattr(module, "__dict__", None)
    # A method's code says which file, and the class line is the last candidate above it (some
    # methods come from elsewhere: dataclasses and namedtuple add their own).
    seen: set[tuple[str, int]] = set()
    for value in cls.__dict__.values():
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        elif isinstance(value, property):
            value = value.fget
        if not isinstance(value, FunctionType) or value.__code__.co_filename.startswith("<") or \
                module_globals is not None and value.__globals__ is not module_globals:
            continue  # generated (dataclass `__init__`) or borrowed (namedtuple `_replace`) methods
        code = value.__code__
        lines = _source_lines(code.co_filename, module_globals)
        candidates = _candidate_lines(lines[:code.co_firstlineno - 1], pattern)
        if candidates and (code.co_filename, candidates[-1]) not in seen:
            seen.add((code.co_filename, candidates[-1]))
            yield lines, candidates[-1]
    filename = getattr(module, "__file__", None)
    if filename:
        lines = _source_lines(filename, module_globals)
        for index in _candidate_lines(lines, pattern):
            if (filename, index) not in seen:
                yield lines, index
    if cls.__module__ == "__main__":  # notebook cells (IPython keeps them in linecache): newest first
        for cell, entry in reversed(list(linecache.cache.items())):
            lines = entry[2] if len(entry) > 2 and cell != filename else []
            for index in reversed(_candidate_lines(lines, pattern)):
                if (cell, index) not in seen:
                    yield lines, index


def _candidate_lines(lines: list[str], pattern: re.Pattern[str]) -> list[int]:
    text = "".join(lines)
    if "class" not in text:
        return []
    return [text.count("\n", 0, match.start()) for match in pattern.finditer(text)]


def _parse_class_body(tokens: Iterator[Token], name: str) -> _ClassBody | None:
    """The fields, their docs and the base names from the tokens of `class name...:` and its body.

    None when the tokens are not a class called `name` (stale source, or another class).
    """
    depth = 0
    state = "class"  # -> "name" -> "header" -> "colon" -> "body"
    class_column = body_column = -1
    statement: list[Token] = []  # the logical line being read
    statement_comments: dict[int, str] = {}  # line -> comment after code on that line
    above: dict[int, str] = {}  # line -> raw comment alone on its line, at the body's column
    fields: list[str] = []
    docs: dict[str, str] = {}
    last_field: str | None = None  # the field a following string literal documents
    header: list[Token] = []  # the tokens between `class name` and its `:`
    line_has_code = False
    for token in tokens:
        kind, value, line, _end, column = token
        if kind == "comment":
            if state == "body":
                if not line_has_code:
                    if body_column < 0 or column == body_column:
                        above[line] = value
                else:
                    text = _clean_comment(value)
                    if text is not None:
                        statement_comments[line] = text
            continue
        if kind == "nl":
            line_has_code = False
            if state == "colon":
                state = "body"
            elif state == "body" and statement and not depth:
                last_field = _body_statement(statement, statement_comments, above, body_column,
                                             last_field, fields, docs)
                statement, statement_comments = [], {}
            continue
        line_has_code = True
        depth_before = depth
        if kind == "op" and len(value) == 1:
            if value in "([{":
                depth += 1
            elif value in ")]}":
                depth -= 1
        if state == "class":
            if kind == "name" and value == "class":
                state, class_column = "name", column
        elif state == "name":
            if value != name:
                return None
            state = "header"
        elif state == "header":
            if depth == 0 and kind == "op" and value == ":":
                state = "colon"
            else:
                header.append(token)
        elif state == "colon":
            return _ClassBody((), {}, _base_names(header))  # `class A: x: int`: nothing to attribute
        else:
            if not statement and depth_before == 0:
                if column <= class_column:
                    break  # dedent: the class is over
                if body_column < 0:
                    body_column = column
            statement.append(token)
    else:
        if statement and state == "body":
            _body_statement(statement, statement_comments, above, body_column, last_field, fields, docs)
    return _ClassBody(tuple(fields), docs, _base_names(header)) if state == "body" else None


def _base_names(header: list[Token]) -> tuple[str, ...]:
    """The bases of `class name(A, mod.B, total=False)` that are plain dotted names: A, mod.B."""
    names = []
    for group in "".join(" " if kind == "nl" else value for kind, value, *_ in header).strip("()").split(","):
        group = group.strip()
        if group and all(part.isidentifier() for part in group.split(".")):
            names.append(group)
    return tuple(names)


def _body_statement(statement: list[Token], comments: dict[int, str], above: dict[int, str],
                    body_column: int, last_field: str | None, fields: list[str],
                    docs: dict[str, str]) -> str | None:
    """Record one logical line of a class body; returns the field a next string literal documents."""
    first = statement[0]
    if first[4] != body_column:
        return None  # inside a method or nested block
    if len(statement) >= 2 and first[0] == "name" and statement[1][1] == ":" and first[1] not in _COLON_KEYWORDS:
        name = first[1]
        fields.append(name)
        end_line = statement[-1][3]
        text = comments.get(end_line) or comments.get(first[2]) or _block_above(above, first[2])
        if text and name not in docs:
            docs[name] = text
        return name
    if last_field is not None and all(token[0] == "str" for token in statement):
        try:
            value = ast.literal_eval(" ".join(token[1] for token in statement))
        except (ValueError, SyntaxError):
            return None
        if isinstance(value, str) and value.strip() and last_field not in docs:
            docs[last_field] = inspect.cleandoc(value)
    return None


# Keywords that can be followed directly by `:` (a field may well be called `type` or `match`).
_COLON_KEYWORDS = frozenset({"else", "try", "finally", "except", "lambda"})
