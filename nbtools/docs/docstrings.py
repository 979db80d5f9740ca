"""Docstring sections: split a docstring into the description a model reads and the parameter,
returns and yields sections, in Google, NumPy, reST/Sphinx or Epydoc style (read by docstring_parser,
imported on first use only).

The description is the docstring (cleaned like `inspect.cleandoc`) with its parameter, returns,
yields, raises and attributes sections removed; everything else stays, in order (summary,
paragraphs, `Examples:`, `Note:`, `See Also`, ...) because it helps the model. Raises go because
the model cannot act on them and they are long; Yields feed `returns` when there is no Returns.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["Docstring", "EMPTY_DOCSTRING", "parse_docstring"]


@dataclass(frozen=True)
class Docstring:
    """A docstring split into what the model reads and what describes parameters/return."""

    description: str
    params: dict[str, str]
    returns: str | None
    returns_type: str | None


EMPTY_DOCSTRING = Docstring("", {}, None, None)

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


def parse_docstring(doc: str) -> Docstring:
    """Split `doc` into description, parameter docs and return docs (see the module docstring)."""
    text = inspect.cleandoc(_header_on_its_own_line(doc))
    if not text:
        return EMPTY_DOCSTRING
    if "\n" not in text:  # one line: only an inline `Returns: ...` can hide in it
        inline = _GOOGLE_INLINE_RETURN.match(text)
        if inline is None:
            return Docstring(text, {}, None, None)
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
    return Docstring(text, {}, None, None)


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
        if margin >= 4:
            margin -= 4
        else:  # Python 3.13 dedents docstrings when compiling: the items arrive at the title's column
            lines = ["    " + line if line.strip() else line for line in lines]
    return "\n" + " " * margin + title + "\n" + "\n".join(lines)


def _numpy_has_sections(text: str) -> bool:
    return any(match.group(1).strip().lower() in _CONSUMED_TITLES for match in _NUMPY_HEADER.finditer(text))


def _parse_google(text: str) -> Docstring | None:
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
        return Docstring(_join_kept(kept), {}, None, None)
    from docstring_parser import google

    # A summary line first: docstring_parser cleandoc's its input, which would dedent the items.
    return _from_parsed(_join_kept(kept), _google_parser(google).parse, "-\n" + "\n".join(parts))


_GOOGLE_PARSER: Any = None


def _google_parser(google: Any) -> Any:
    global _GOOGLE_PARSER
    if _GOOGLE_PARSER is None:  # built once: the default parser is rebuilt on every call
        _GOOGLE_PARSER = google.GoogleParser()
    return _GOOGLE_PARSER


def _parse_numpy(text: str) -> Docstring:
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
        return Docstring(description, {}, None, None)
    from docstring_parser import numpydoc

    result = _from_parsed(description, numpydoc.parse, "-\n\n" + "\n\n".join(parts))
    if result.returns is None and result.returns_type and not _looks_like_type(result.returns_type):
        # `Returns\n-------\nthe total of a and b`: prose, not a type
        return Docstring(description, result.params, result.returns_type, None)
    return result


def _parse_fields(text: str) -> Docstring:
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
        return Docstring(description, {}, None, None)
    if marker == "@":
        from docstring_parser import epydoc as style
    else:
        from docstring_parser import rest as style
    return _from_parsed(description, style.parse, "-\n\n" + "\n".join(taken))


def _from_parsed(description: str, parse: Callable[[str], Any], sections: str) -> Docstring:
    """Parse `sections` (only the parameter/return sections) with docstring_parser's `parse`.

    A section docstring_parser cannot read costs its parameter docs, never the tool.
    """
    try:
        parsed = parse(sections)
    except Exception:  # ParseError, or a bug on odd input: lose these docs, never the tool
        return Docstring(description, {}, None, None)
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
    return Docstring(description, params, returns, returns_type)


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
