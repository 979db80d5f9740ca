"""Descriptions from docstrings (Google, NumPy, reST, Epydoc), docments comments and class bodies."""

from __future__ import annotations

import dataclasses
import functools
import linecache
import sys
import typing
from typing import NamedTuple, TypedDict

import pytest

from nbtools.docs import FunctionDocs, compose_description, field_docs, function_docs


def expected(description: str = "", params: dict | None = None, returns: str | None = None,
             returns_type: str | None = None) -> FunctionDocs:
    return FunctionDocs(description=description, params=params or {}, returns=returns, returns_type=returns_type)


def same(actual: FunctionDocs, wanted: FunctionDocs) -> None:
    assert (actual.description, dict(actual.params), actual.returns, actual.returns_type) == \
           (wanted.description, dict(wanted.params), wanted.returns, wanted.returns_type)


# ---------------------------------------------------------------------------------------------
# Docstrings
# ---------------------------------------------------------------------------------------------
def no_docstring(a, b):
    return a + b


def one_line(a, b):
    """Add two numbers."""


def google_full(query, limit=10, *args, **kwargs):
    """Search the catalogue.

    Looks in every shelf, newest first.

    Args:
        query (str): the text to look for; it may be long, so this
            description goes on over a second line.
        limit: how many results at most.
        *args: extra shelves.
        **kwargs: filters.

    Returns:
        list[str]: the titles found.

    Raises:
        ValueError: when the query is empty.

    Examples:
        >>> google_full("dune")
        ['Dune']

    Note:
        Results are cached.
    """


def google_sections_kept_in_order(x):
    """Do it.

    Args:
        x: the x.
    Returns:
        The result, as a sentence without a type.

    After the sections, a closing paragraph.
    """


def google_keyword_args(a, b=1):
    """Two parameter sections.

    Args:
        a: the a.

    Keyword Args:
        b: the b.
    """


def google_inline_returns(a):
    """Double it.

    Returns: twice a.
    """


def google_yields(n):
    """Count up.

    Args:
        n: where to stop.

    Yields:
        int: the next number.
    """


def numpy_style(x, y, z=None):
    """Combine values.

    Parameters
    ----------
    x, y : int
        The values to add.
    z : float, optional
        A weight, given
        on two lines.

    Returns
    -------
    int
        The total.

    Raises
    ------
    ValueError
        On overflow.

    Notes
    -----
    Works on integers only.
    """


def numpy_prose_returns(x):
    """Describe x.

    Parameters
    ----------
    x : int
        The input.

    Returns
    -------
    a sentence about x
    """


def rest_style(x, y):
    """Combine values.

    :param x: the first value
    :type x: int
    :param int y: the second value,
        on two lines
    :returns: the total
    :rtype: int
    :raises ValueError: on overflow

    A paragraph after the fields.
    """


def epydoc_style(x, y):
    """Combine values.

    @param x: the first value
    @type x: int
    @param y: the second value
    @return: the total
    @rtype: int
    @raise ValueError: on overflow
    """


@pytest.mark.parametrize("fn, wanted", [
    (no_docstring, expected()),
    (one_line, expected("Add two numbers.")),
    (google_full, expected(
        "Search the catalogue.\n\nLooks in every shelf, newest first.\n\n"
        "Examples:\n    >>> google_full(\"dune\")\n    ['Dune']\n\nNote:\n    Results are cached.",
        {"query": "the text to look for; it may be long, so this\ndescription goes on over a second line.",
         "limit": "how many results at most.", "args": "extra shelves.", "kwargs": "filters."},
        "the titles found.", "list[str]")),
    (google_sections_kept_in_order, expected(
        "Do it.\n\nAfter the sections, a closing paragraph.", {"x": "the x."},
        "The result, as a sentence without a type.")),
    (google_keyword_args, expected("Two parameter sections.", {"a": "the a.", "b": "the b."})),
    (google_inline_returns, expected("Double it.", returns="twice a.")),
    (google_yields, expected("Count up.", {"n": "where to stop."}, "the next number.", "int")),
    (numpy_style, expected(
        "Combine values.\n\nNotes\n-----\nWorks on integers only.",
        {"x": "The values to add.", "y": "The values to add.", "z": "A weight, given\non two lines."},
        "The total.", "int")),
    (numpy_prose_returns, expected("Describe x.", {"x": "The input."}, "a sentence about x")),
    (rest_style, expected(
        "Combine values.\n\nA paragraph after the fields.",
        {"x": "the first value", "y": "the second value,\non two lines"}, "the total", "int")),
    (epydoc_style, expected("Combine values.", {"x": "the first value", "y": "the second value"},
                            "the total", "int")),
], ids=lambda value: getattr(value, "__name__", ""))
def test_docstring_styles(fn, wanted):
    same(function_docs(fn), wanted)


def test_unknown_google_like_titles_stay_in_the_description():
    def fn(a):
        """Summary.

        Warning:
            Slow.
        Args:
            a: the a.
        """

    same(function_docs(fn), expected("Summary.\n\nWarning:\n    Slow.", {"a": "the a."}))


def test_a_section_title_right_after_the_quotes_keeps_its_items():
    # cleandoc dedents all but the first line, so `"""Args:` once left its items at column 0
    def args_first(a, b):
        """Args:
            a: the a.
            b: the b.
        """

    def returns_first() -> int:
        """Returns:
            int: the count."""

    def args_then_prose(a):
        """Args:
            a: the a.

        More about it.
        """

    same(function_docs(args_first), expected("", {"a": "the a.", "b": "the b."}))
    same(function_docs(returns_first), expected("", returns="the count.", returns_type="int"))
    same(function_docs(args_then_prose), expected("More about it.", {"a": "the a."}))


def test_a_section_title_right_after_the_quotes_keeps_its_items_as_python_3_13_compiles_it():
    # Python 3.13 dedents docstrings when compiling: the items arrive at the title's column
    def args_first(a, b):
        pass

    def returns_first() -> int:
        return 0

    args_first.__doc__ = "Args:\na: the a.\nb: the b.\n"
    returns_first.__doc__ = "Returns:\nint: the count."
    same(function_docs(args_first), expected("", {"a": "the a.", "b": "the b."}))
    same(function_docs(returns_first), expected("", returns="the count.", returns_type="int"))


def test_a_docstring_docstring_parser_cannot_read_keeps_its_description():
    def fn(a):
        """Summary.

        Args:
            a the a, no colon anywhere
        """

    result = function_docs(fn)
    assert result.description == "Summary."
    assert dict(result.params) == {}


# ---------------------------------------------------------------------------------------------
# Docments comments
# ---------------------------------------------------------------------------------------------
def add(a: int,        # first addend
        b: int = 1,    # second addend
        ) -> int:      # the sum
    "Add two integers."
    return a + b


def one_header_line(a, b):  # not a return annotation: the last parameter on the line
    pass


def header_hash_in_defaults(colour: str = "#ff0000",  # a colour, not '#'-split
                            pattern: str = r'[#"]',  # a pattern
                            note="""# not a comment""",  # triple-quoted default
                            mapping: dict = {"#": "(", "[": 1},  # brackets and hashes in strings
                            ) -> str:  # the result
    return colour


def header_star_args(*args: int,   # positional extras
                     sep: str = " ",  # keyword-only separator
                     **kwargs: str,   # named extras
                     ):
    pass


def header_keyword_only(a,   # positional or keyword
                        *,
                        b,   # keyword only
                        c=3):
    pass


def header_positional_only(a,  # positional only
                           b,  # also positional only
                           /,
                           c):  # normal
    pass


def header_multiline_values(items: list[int] = [
                                1, 2, 3,
                            ],  # ends two lines below its name
                            flag: bool = False):
    pass


def header_comment_above(
    # the first value,
    # described above it
    a: int,
    b: int,  # the second value
    # a comment above c
    c: int = 0,
):
    pass


def header_name_line_comment(
    mode: typing.Literal[  # how to run
        "fast", "slow"],
    other: int = 1,
):
    pass


def header_leading_commas(a  # the a
                          , b  # the b
                          ):
    pass


def header_pragmas(a,  # type: ignore
                   b,  # noqa: E501
                   c):  #: Sphinx-style doc comment for c
    pass


def fastcore_style(a: int,
                   b: int = 1,
                   ) -> int:  # fastcore puts the return doc here
    return a


def arrow_on_its_own_line(
    a: int,  # the a
) -> dict[str, int]:  # a mapping
    return {}


def decorator(fn):
    return fn


@decorator  # a comment on the decorator is not a parameter's
@functools.lru_cache(maxsize=None)  # nor this one ()
def decorated(a: int):  # the a
    return a


async def header_async(url: str,  # where to fetch from
                       timeout: float = 1.0):  # seconds
    "Fetch it."


def make_nested():
    def nested(a,  # inside another function
               key=lambda item: item[0],  # a lambda default with its own colon
               table={"k": (1, [2, 3])},  # nested brackets
               ):
        pass
    return nested


def body_on_the_def_line(a): return a  # a comment about the body, not about a


def header_string_annotations(a: "list[#]" = 1,  # an annotation string holding a hash
                              b: 'tuple[int, ")"]' = 2):  # and one holding a parenthesis
    pass


@pytest.mark.parametrize("fn, wanted", [
    (add, expected("Add two integers.", {"a": "first addend", "b": "second addend"}, "the sum")),
    (one_header_line, expected(params={"b": "not a return annotation: the last parameter on the line"})),
    (header_hash_in_defaults, expected(params={
        "colour": "a colour, not '#'-split", "pattern": "a pattern", "note": "triple-quoted default",
        "mapping": "brackets and hashes in strings"}, returns="the result")),
    (header_star_args, expected(params={"args": "positional extras", "sep": "keyword-only separator",
                                        "kwargs": "named extras"})),
    (header_keyword_only, expected(params={"a": "positional or keyword", "b": "keyword only"})),
    (header_positional_only, expected(params={"a": "positional only", "b": "also positional only",
                                              "c": "normal"})),
    (header_multiline_values, expected(params={"items": "ends two lines below its name"})),
    (header_comment_above, expected(params={"a": "the first value,\ndescribed above it",
                                            "b": "the second value", "c": "a comment above c"})),
    (header_name_line_comment, expected(params={"mode": "how to run"})),
    (header_leading_commas, expected(params={"a": "the a", "b": "the b"})),
    (header_pragmas, expected(params={"c": "Sphinx-style doc comment for c"})),
    (fastcore_style, expected(returns="fastcore puts the return doc here")),
    (arrow_on_its_own_line, expected(params={"a": "the a"}, returns="a mapping")),
    (decorated.__wrapped__, expected(params={"a": "the a"})),
    (header_async, expected("Fetch it.", {"url": "where to fetch from", "timeout": "seconds"})),
    (make_nested(), expected(params={"a": "inside another function",
                                     "key": "a lambda default with its own colon",
                                     "table": "nested brackets"})),
    (body_on_the_def_line, expected()),
    (header_string_annotations, expected(params={"a": "an annotation string holding a hash",
                                                 "b": "and one holding a parenthesis"})),
], ids=lambda value: getattr(value, "__name__", ""))
def test_docments(fn, wanted):
    same(function_docs(fn), wanted)


def mixed(a: int,  # from the comment
          b: int,
          c: int = 0,  # also from a comment
          ) -> int:  # the comment's return
    """Mix sources.

    Args:
        a: from the docstring, loses to the comment.
        b: from the docstring, the only source.

    Returns:
        int: the docstring's return, loses to the comment.
    """
    return a


def test_comments_take_precedence_over_the_docstring():
    same(function_docs(mixed), expected(
        "Mix sources.",
        {"a": "from the comment", "b": "from the docstring, the only source.", "c": "also from a comment"},
        "the comment's return", "int"))


class Shelf:
    def find(self,
             title: str,  # what to look for
             ) -> list:  # the matches
        """Find books."""
        return []

    @staticmethod
    def static(a):  # the a
        pass


def test_methods_keep_self_and_accept_method_objects():
    same(function_docs(Shelf.find), expected("Find books.", {"title": "what to look for"}, "the matches"))
    same(function_docs(Shelf().find), expected("Find books.", {"title": "what to look for"}, "the matches"))
    same(function_docs(Shelf.__dict__["static"]), expected(params={"a": "the a"}))


# ---------------------------------------------------------------------------------------------
# Without source
# ---------------------------------------------------------------------------------------------
def test_headers_longer_than_the_first_window():
    filename = "<long-header-test>"
    source = ("def long_header(\n" + "".join(f"    p{i}: int = {i},  # parameter {i}\n" for i in range(60))
              + "):\n    pass\n")
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {}
    try:
        exec(compile(source, filename, "exec"), namespace)
        result = function_docs(namespace["long_header"])
    finally:
        linecache.cache.pop(filename, None)
    assert dict(result.params) == {f"p{i}": f"parameter {i}" for i in range(60)}


def test_exec_without_source_gives_the_docstring_only():
    namespace: dict = {}
    exec("def made(a,  # lost: no source\n         b):\n    'Made by exec.'\n", namespace)
    same(function_docs(namespace["made"]), expected("Made by exec."))
    exec("class Made:\n    'A made class.'\n    x: int  # lost\n", namespace)
    same(function_docs(namespace["Made"]), expected("A made class."))
    assert field_docs(namespace["Made"]) == {}


def test_builtins_and_lambdas():
    same(function_docs(len), expected("Return the number of items in a container."))
    same(function_docs(lambda x: x), expected())  # no name to find, no comments to read
    documented = lambda x: x  # noqa: E731
    documented.__doc__ = "Identity."
    same(function_docs(documented), expected("Identity."))
    assert function_docs(dict).params == {}


def test_stale_source_is_not_misread():
    namespace: dict = {}
    filename = "<stale-source-test>"
    source = "def moved(a,  # the a\n          b):  # the b\n    pass\n"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    try:
        exec(compile(source, filename, "exec"), namespace)
        same(function_docs(namespace["moved"]), expected(params={"a": "the a", "b": "the b"}))
        edited = "def moved(x,  # another function now\n          y):\n    pass\n"
        linecache.cache[filename] = (len(edited), None, edited.splitlines(True), filename)
        same(function_docs(namespace["moved"]), expected())
    finally:
        linecache.cache.pop(filename, None)


# ---------------------------------------------------------------------------------------------
# Classes and fields
# ---------------------------------------------------------------------------------------------
class Plain:
    """A plain class.

    Attributes:
        size: from the class docstring, loses to the __init__ comment.
        colour: from the class docstring.
    """

    def __init__(self,
                 size: int,  # from the __init__ comment
                 colour: str = "red",
                 weight: float = 1.0):
        """Make one.

        Args:
            weight: from the __init__ docstring.
        """


@dataclasses.dataclass
class Point:
    """A point.

    Attributes:
        z: from the docstring.
        x: loses to the comment.
    """

    x: float  # the x coordinate
    # the y coordinate,
    # on two comment lines above it
    y: float = 0.0
    z: float = dataclasses.field(default=0.0)
    label: str = "#origin"  # a hash inside the default
    weight: float = 1.0
    """An attribute docstring."""
    tag: str = dataclasses.field(default="", metadata={"description": "from field metadata"})  # loses
    undocumented: int = 0


@dataclasses.dataclass
class Point3(Point):
    """A point with depth."""

    depth: float = 0.0  # the depth
    x: float = 0.0  # redefined here, wins over the base


class Movie(TypedDict):
    title: str  # the title
    year: int  # the year


class MovieExtra(Movie, total=False):
    rating: float  # out of ten


class Pair(NamedTuple):
    left: int  # the left item
    right: int = 0  #: the right item


class Configured:
    """Fields described in reST.

    :ivar host: the host name
    :param port: the port
    """

    host: str
    port: int


class NoDocs:
    x: int


class Keywordish(TypedDict):
    type: str  # fields may be called like soft keywords
    match: int  # this one too


class MethodsFirst:
    """Fields after methods, and a nested class with a field of the same name."""

    def method(self) -> None:
        pass

    @property
    def computed(self) -> int:
        return 1

    size: int = 3  # declared after the methods

    class Inner:
        size: str  # the inner class's, not ours

    colour: str = "red"  #: Sphinx-style comment


class EpydocFields:
    """Fields described in Epydoc.

    @ivar host: the host name
    @cvar port: the port
    """

    host: str
    port: int


def test_class_function_docs_joins_class_and_init():
    same(function_docs(Plain), expected(
        "A plain class.\n\nMake one.",
        {"size": "from the __init__ comment", "colour": "from the class docstring.",
         "weight": "from the __init__ docstring."}))


def test_dataclass_docs():
    wanted_fields = {
        "x": "the x coordinate",
        "y": "the y coordinate,\non two comment lines above it",
        "z": "from the docstring.",
        "label": "a hash inside the default",
        "weight": "An attribute docstring.",
        "tag": "from field metadata",
    }
    assert field_docs(Point) == wanted_fields
    same(function_docs(Point), expected("A point.", wanted_fields))  # not the generated "Point(x: float, ...)"
    assert field_docs(Point3) == {**wanted_fields, "depth": "the depth", "x": "redefined here, wins over the base"}


@pytest.mark.parametrize("cls, wanted", [
    (Movie, {"title": "the title", "year": "the year"}),
    (MovieExtra, {"title": "the title", "year": "the year", "rating": "out of ten"}),
    (Pair, {"left": "the left item", "right": "the right item"}),
    (Configured, {"host": "the host name", "port": "the port"}),
    (NoDocs, {}),
    (Keywordish, {"type": "fields may be called like soft keywords", "match": "this one too"}),
    (MethodsFirst, {"size": "declared after the methods", "colour": "Sphinx-style comment"}),
    (EpydocFields, {"host": "the host name", "port": "the port"}),
    (Plain, {"size": "from the __init__ comment", "colour": "from the class docstring.",
             "weight": "from the __init__ docstring."}),
], ids=lambda value: getattr(value, "__name__", ""))
def test_field_docs(cls, wanted):
    assert field_docs(cls) == wanted


def test_namedtuple_generated_docstring_is_not_a_description():
    same(function_docs(Pair), expected(params={"left": "the left item", "right": "the right item"}))


def test_field_docs_returns_a_fresh_dict():
    first = field_docs(Movie)
    first["title"] = "changed"
    assert field_docs(Movie)["title"] == "the title"


def test_same_named_classes_are_told_apart_by_their_fields():
    def make_first():
        @dataclasses.dataclass
        class Twin:
            a: int  # first twin's a
        return Twin

    def make_second():
        @dataclasses.dataclass
        class Twin:
            b: int  # second twin's b
        return Twin

    assert field_docs(make_first()) == {"a": "first twin's a"}
    assert field_docs(make_second()) == {"b": "second twin's b"}


def test_notebook_cells_are_searched_for_classes_without_methods():
    # IPython keeps each cell's source in linecache under a made-up file name; classes live in __main__.
    cell = "/tmp/ipykernel_0/test_docs_cell.py"
    source = ("import dataclasses\n@dataclasses.dataclass\nclass CellPoint:\n"
              "    x: int  # x from a cell\n\n"
              "def cell_function(a,  # a from a cell\n                  b):\n    'In a cell.'\n")
    linecache.cache[cell] = (len(source), None, source.splitlines(True), cell)
    namespace = {"__name__": "__main__"}
    try:
        exec(compile(source, cell, "exec"), namespace)
        assert namespace["CellPoint"].__module__ == "__main__"
        assert field_docs(namespace["CellPoint"]) == {"x": "x from a cell"}
        same(function_docs(namespace["cell_function"]), expected("In a cell.", {"a": "a from a cell"}))
    finally:
        linecache.cache.pop(cell, None)


# ---------------------------------------------------------------------------------------------
# compose_description
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("docs, return_type, wanted", [
    (expected("Add."), None, "Add."),
    (expected("Add.", returns="the sum"), "int", "Add.\n\nReturns: int - the sum"),
    (expected("Add.", returns="the sum"), None, "Add.\n\nReturns: the sum"),
    (expected("Add."), "list[str]", "Add.\n\nReturns: list[str]"),
    (expected("Add.", returns="the sum", returns_type="int"), None, "Add.\n\nReturns: int - the sum"),
    (expected("Add.", returns_type="int"), None, "Add.\n\nReturns: int"),
    (expected("Add.", returns="the sum", returns_type="float"), "int", "Add.\n\nReturns: int - the sum"),
    (expected(returns="the sum"), "int", "Returns: int - the sum"),
    (expected(), None, ""),
])
def test_compose_description(docs, return_type, wanted):
    assert compose_description(docs, return_type) == wanted


def test_import_stays_light():
    import subprocess

    code = ("import sys, nbtools.docs; bad = [m for m in ('IPython', 'pydantic', 'docstring_parser') "
            "if m in sys.modules]; print(bad)")
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "[]"


# ---------------------------------------------------------------------------------------------
# A generated class docstring: one rule (`records.class_docstring`) for the type's description
# and for the class used as a tool. The two copies disagreed: the type side dropped any docstring
# starting with the class name and "(" (also a plain class's own), or, for a NamedTuple, starting
# with its name at all; the docs side kept both.
# ---------------------------------------------------------------------------------------------
class Grid(NamedTuple):
    """Grid cells are counted from the top left corner."""

    rows: int
    columns: int


class Segment:
    """Segment(a, b) joins two points; it has no direction."""

    def __init__(self, a: int, b: int):
        self.a, self.b = a, b


@dataclasses.dataclass
class Generated:
    x: int
    y: str = "s"


class GeneratedTuple(NamedTuple):
    x: int


@pytest.mark.parametrize("cls, wanted", [
    (Grid, "Grid cells are counted from the top left corner."),
    (Segment, "Segment(a, b) joins two points; it has no direction."),
    (Generated, None),
    (GeneratedTuple, None),
])
def test_a_written_class_docstring_is_kept_and_a_generated_one_dropped_everywhere(cls, wanted):
    from nbtools import get_schema, type_schema

    assert Generated.__doc__.startswith("Generated(x: ") and GeneratedTuple.__doc__.startswith("GeneratedTuple(x")
    assert type_schema(cls).get("description") == wanted
    assert function_docs(cls).description == (wanted or "")
    assert get_schema(cls)["description"] == (wanted or "")


def test_a_one_line_docstring_shaped_like_a_signature_on_a_plain_class_is_kept():
    from nbtools.records import class_docstring

    class Pair:
        "Pair(left, right)"

        def __init__(self, left: int, right: int):
            pass

    assert class_docstring(Pair) == "Pair(left, right)"  # no generator wrote it
