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

The description is the docstring without its parameter, returns, yields, raises and attributes
sections. Everything here only reads source (through `linecache`); no source (builtins, `exec`'d
code, lambdas) means docstring only, never an error.

Files: `docstrings.py` (docstring sections, via docstring-parser), `comments.py` (docments comments
in `def` headers), `functions.py` (`FunctionDocs` of a function, `compose_description`),
`classes.py` (a class used as a tool, and field docs from class bodies).
"""

from __future__ import annotations

from .classes import field_docs, function_docs
from .functions import FunctionDocs, compose_description

__all__ = ["FunctionDocs", "function_docs", "field_docs", "compose_description"]
