"""What the docs of one function say (`FunctionDocs`), and the tool description built from them."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from .comments import function_header
from .docstrings import EMPTY_DOCSTRING, parse_docstring

__all__ = ["FunctionDocs", "NO_PARAMS", "docs_of_function", "compose_description"]


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


NO_PARAMS: Mapping[str, str] = MappingProxyType({})


def docs_of_function(fn: Any) -> FunctionDocs:
    """The descriptions of function `fn` (already unwrapped by the caller; not a class).

    The first source that has a parameter's description wins: docments comments in the `def`
    header, then the docstring's parameter section; the return value likewise. Never raises for
    missing or unreadable source: what cannot be read is simply not there.
    """
    fn = getattr(fn, "__func__", fn)  # bound/class/static methods
    doc = getattr(fn, "__doc__", None)
    parsed = parse_docstring(doc) if isinstance(doc, str) else EMPTY_DOCSTRING
    header = function_header(fn)
    if header is None:
        params = parsed.params
        returns = parsed.returns
    else:
        params = {**parsed.params, **header.params} if parsed.params else header.params
        returns = header.returns or parsed.returns
    return FunctionDocs(
        description=parsed.description,
        params=MappingProxyType(params) if params else NO_PARAMS,
        returns=returns,
        returns_type=parsed.returns_type,
    )


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
