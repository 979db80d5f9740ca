"""nbtools.listing: the one rule for matching tool names (the registry's, used by `select`, `remove`,
`%tools`, `%untool` and the panel), the format words, and the import structure of the front end."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from nbtools import Registry
from nbtools.listing import format_named, format_words, glob_matches, matching_tools, name_matches, tool_table

NBTOOLS = Path(__file__).resolve().parent.parent / "nbtools"


def test_glob_matches_names_and_globs_case_sensitively():
    assert glob_matches("math_add", "math_add") and glob_matches("math_add", "math_*")
    assert glob_matches("calc.mul", "calc.?u?") and not glob_matches("math_add", "Math_*")
    assert not glob_matches("math_add", "add")  # a glob matches the whole name
    assert glob_matches("a[1]", "a[1]")  # a name holding glob characters still matches itself


def test_the_panel_filter_is_the_same_rule_with_plain_text_matching_anywhere():
    assert name_matches("math_add", "add") and name_matches("math_add", "math_*")
    assert not name_matches("math_add", "str_*") and name_matches("x", "  ")
    assert name_matches("a[1]", "a[1]") and not name_matches("math_add", "Add")


def _one(name: str):
    def fn(x: int) -> int:
        return x

    return fn, name


@pytest.fixture
def odd_names() -> Registry:
    local = Registry()
    for name in ("a[1]", "a1", "b"):
        fn, name = _one(name)
        local.add(fn, name=name)
    return local


def test_registry_listing_and_removal_agree_on_what_a_pattern_matches(odd_names):
    # Before one owner held the rule, `remove` (and `%untool`) matched a name exactly or as a glob
    # while `select` (and `%tools GLOB`) only as a glob, so `a[1]` could be removed but not selected.
    from nbtools.magics import remove_tools

    wanted = ["a[1]", "a1"]
    assert [tool.name for tool in odd_names.select(allow="a[1]")] == wanted
    assert [tool.name for tool in odd_names.select(deny="a[1]")] == ["b"]
    assert [tool.name for tool in matching_tools(odd_names, "a[1]")] == wanted
    assert [row.name for row in tool_table(odd_names, "a[1]").rows] == wanted
    assert [tool.name for tool in matching_tools(odd_names, "a[1]", anywhere=True)] == wanted
    assert remove_tools(odd_names, ["a[1]"]) == wanted and odd_names.names() == ["b"]


def test_remove_tools_removes_nothing_when_a_pattern_matches_nothing(odd_names):
    from nbtools.magics import remove_tools

    with pytest.raises(ValueError, match="no tool matches 'zz\\*'; nothing was removed"):
        remove_tools(odd_names, ["b", "zz*"])
    assert odd_names.names() == ["a[1]", "a1", "b"]


def test_format_words():
    assert format_words()[0] == ("neutral", None)
    assert [word for word, _ in format_words()] == ["neutral", "openai", "responses", "anthropic", "gemini",
                                                    "gemini-openapi", "mcp"]
    assert format_named("Neutral") is None and format_named("none") is None and format_named(" MCP ") == "mcp"
    assert format_named("anthropic", strict=True) == "anthropic"
    with pytest.raises(ValueError, match="--fmt klingon: unknown format; use one of neutral, openai,"):
        format_named("klingon")
    with pytest.raises(ValueError, match="--strict: gemini has no strict mode; only anthropic, openai, responses"):
        format_named("gemini", strict=True)


# -- import structure ------------------------------------------------------------------------------

def _imports(module: str, *, top_level_only: bool) -> set[str]:
    """The nbtools modules `module` imports (relative imports), at module level or anywhere."""
    tree = ast.parse((NBTOOLS / f"{module}.py").read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found = set()
    for node in nodes:
        if isinstance(node, ast.If) and top_level_only:  # `if TYPE_CHECKING:` imports nothing at run time
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found.add(node.module or "")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("nbtools"):
            found.add((node.module or "").removeprefix("nbtools").lstrip("."))
    return found


def test_the_front_end_modules_do_not_import_each_other_in_a_cycle():
    assert "magics" not in _imports("widgets", top_level_only=False)  # not even lazily
    assert "widgets" not in _imports("magics", top_level_only=True)  # only when `%tools --panel` runs
    assert not {"magics", "widgets"} & _imports("listing", top_level_only=False)  # the views import it, not back
    assert not {"listing", "magics", "widgets"} & _imports("registry", top_level_only=False)


def test_the_table_html_keeps_hints_whole_and_lets_long_names_and_parameters_wrap():
    from nbtools import Registry
    from nbtools.listing import tool_table

    def search_the_archive(query: str, include_history: bool = False, limit: int = 10) -> list:
        """Search."""
        return []

    local = Registry()
    long_name = "a_tool_with_a_sixty_six_character_name_that_goes_on_and_on_and_on_"
    local.add(search_the_archive, name=long_name, hints="read-only")
    local.disable(long_name)
    page = tool_table(local)._repr_html_()
    assert "<code style='white-space:nowrap'>read-only</code>" in page  # never broken at its hyphen
    # Nothing cut (tests/test_browser.py measures it): the name breaks between its words
    assert "ellipsis" not in page and "nowrap'>include" not in page
    assert long_name.replace("_", "_<wbr>") in page and "(disabled)" in page
    assert ("<code style='overflow-wrap:anywhere'>include_<wbr>history=false</code>, "
            "<code style='overflow-wrap:anywhere'>limit=10</code>") in page  # wrapping between them first
    assert "<tr style='font-style:italic' title='disabled'>" in page and "opacity" not in page
