"""Class docs: a class used as a tool, and the descriptions of the fields of a record class.

For a field (first found wins, the class itself before its bases): `metadata={"description": ...}`
of a dataclass field; the comment on the field's line (or the line where the field ends); a block of
comments directly above the field (also Sphinx `#:`); a string literal right after the field;
comments in the `__init__` header; the `__init__` docstring's parameters; the class docstring's
`Attributes`/`Args`/`:ivar:`/`:param:`. Class bodies are found through `linecache` and lexed by a
small regex lexer (never imported or evaluated).
"""

from __future__ import annotations

import ast
import inspect
import linecache
import re
import sys
import weakref
from dataclasses import dataclass
from types import FunctionType, MappingProxyType
from typing import Any, Iterator

from ..records import class_docstring, is_typeddict
from .comments import block_above, clean_comment, source_lines
from .docstrings import parse_docstring
from .functions import NO_PARAMS, FunctionDocs, docs_of_function

__all__ = ["function_docs", "docs_of_class", "field_docs"]


def function_docs(fn: Any) -> FunctionDocs:
    """The descriptions of `fn` (a function, already unwrapped by the caller, or a class).

    Never raises for missing or unreadable source: what cannot be read is simply not there.
    (Here rather than in the package's `__init__` so callers import it from a module: cheaper.)
    """
    if isinstance(fn, type):
        return docs_of_class(fn)
    return docs_of_function(fn)


_FIELD_CACHE: "weakref.WeakKeyDictionary[type, dict[str, str]]" = weakref.WeakKeyDictionary()


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


def docs_of_class(cls: type) -> FunctionDocs:
    """The docs of a class used as a tool: the class docstring's description, then its `__init__`
    docstring's; parameters from the fields (see `field_docs`)."""
    parsed = parse_docstring(class_docstring(cls) or "")
    init = _python_init(cls)
    description = parsed.description
    # An `__init__` inherited from another package (pydantic's BaseModel) documents that library,
    # not this class.
    foreign = init is not None and str(getattr(init, "__module__", "")).partition(".")[0] != \
        str(cls.__module__).partition(".")[0]
    if init is not None and not foreign and isinstance(init.__doc__, str):
        init_description = parse_docstring(init.__doc__).description
        if init_description:
            description = f"{description}\n\n{init_description}" if description else init_description
    params = field_docs(cls)
    return FunctionDocs(description=description, params=MappingProxyType(params) if params else NO_PARAMS)


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
        for name, text in docs_of_function(init).params.items():
            docs.setdefault(name, text)
    doc = class_docstring(cls)
    if doc:
        for name, text in parse_docstring(doc).params.items():
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
        lines = source_lines(code.co_filename, module_globals)
        candidates = _candidate_lines(lines[:code.co_firstlineno - 1], pattern)
        if candidates and (code.co_filename, candidates[-1]) not in seen:
            seen.add((code.co_filename, candidates[-1]))
            yield lines, candidates[-1]
    filename = getattr(module, "__file__", None)
    if filename:
        lines = source_lines(filename, module_globals)
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
                    text = clean_comment(value)
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
        text = comments.get(end_line) or comments.get(first[2]) or block_above(above, first[2])
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
