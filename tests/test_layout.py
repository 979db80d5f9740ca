"""The package's shape, checked: module sizes and names, import cycles, what `import nbtools` loads,
and the README's map of the code (every module named, nothing named that does not exist).

Run alone with `python -m pytest tests/test_layout.py -q`. Imports are read from the source with
`ast` (no module of the package is imported, except by the last test, in a fresh interpreter):
a top-level import is one that runs when the module is imported (module body, class bodies, `if`
and `try` blocks, but not `if TYPE_CHECKING:`); a lazy import is one inside a function.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(importlib.util.find_spec("nbtools").submodule_search_locations[0])  # type: ignore[index,union-attr]
MAX_LINES = 800

# The one lazy import allowed to close a cycle: the record's convenience method `Tool.call`.
ALLOWED_LAZY_PAIR = frozenset({"nbtools.tool", "nbtools.call"})


@lru_cache(maxsize=None)
def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name, for its `__init__`)."""
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = ("nbtools", *path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"
            or isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _targets(importer: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The package's modules an import statement in `importer` loads (with the packages around them,
    whose `__init__` runs first; not the importer's own packages, which are loading already)."""
    known = modules()
    is_package = modules()[importer].name == "__init__.py"
    names: list[str] = []
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        if node.level:
            package = importer.split(".") if is_package else importer.split(".")[:-1]
            base = ".".join(package[:len(package) - (node.level - 1)])
            base = f"{base}.{node.module}" if node.module else base
        else:
            base = node.module or ""
        for alias in node.names:
            names.append(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    loaded: set[str] = set()
    own = {".".join(importer.split(".")[:index]) for index in range(1, importer.count(".") + 2)}
    for name in names:
        parts = name.split(".")
        for index in range(1, len(parts) + 1):
            prefix = ".".join(parts[:index])
            if prefix in known and prefix not in own:
                loaded.add(prefix)
    return loaded


@lru_cache(maxsize=None)
def imports() -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """module -> (modules it imports at top level, modules it imports lazily)."""
    graph = {}
    for name, path in modules().items():
        top: set[str] = set()
        lazy: set[str] = set()

        def visit(node: ast.AST, in_function: bool) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    (lazy if in_function else top).update(_targets(name, child))  # noqa: B023
                elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                    visit(child, True)
                elif isinstance(child, ast.If) and _is_type_checking(child.test):
                    for other in child.orelse:
                        visit(other, in_function)
                else:
                    visit(child, in_function)

        visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), False)
        graph[name] = (frozenset(top), frozenset(lazy - top))
    return graph


def _reaches(start: str, goal: str, edges: dict[str, frozenset[str]]) -> bool:
    seen, stack = set(), [start]
    while stack:
        current = stack.pop()
        if current == goal:
            return True
        if current not in seen:
            seen.add(current)
            stack.extend(edges.get(current, ()))
    return False


def top_level_cycles() -> list[list[str]]:
    """The import cycles among top-level imports, each as a path that starts and ends at one module."""
    edges = {name: top for name, (top, _lazy) in imports().items()}
    cycles = []
    for name in edges:
        for target in edges[name]:
            if _reaches(target, name, edges):
                cycles.append(_path(target, name, edges) + [target])
                break
    return cycles


def _path(start: str, goal: str, edges: dict[str, frozenset[str]]) -> list[str]:
    """One import path from `start` to `goal` (breadth first)."""
    previous: dict[str, str | None] = {start: None}
    queue = [start]
    while queue:
        current = queue.pop(0)
        if current == goal:
            break
        for target in sorted(edges.get(current, ())):
            if target not in previous:
                previous[target] = current
                queue.append(target)
    path, node = [], goal
    while node is not None:
        path.append(node)
        node = previous[node]
    return path[::-1]


def lazy_cycle_edges() -> set[tuple[str, str]]:
    """(importer, imported) of each lazy import that closes a cycle: the imported module leads back
    to the importer, through any imports."""
    edges = {name: top | lazy for name, (top, lazy) in imports().items()}
    return {(name, target) for name, (_top, lazy) in imports().items()
            for target in lazy if _reaches(target, name, edges)}


def _lines(name: str) -> int:
    return len(modules()[name].read_text(encoding="utf-8").splitlines())


# -- sizes ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(modules()))
def test_no_module_is_over_800_lines(name):
    assert _lines(name) <= MAX_LINES, f"{name} has {_lines(name)} lines; split it by job (at most {MAX_LINES})"


# -- names ------------------------------------------------------------------------------------------
def test_no_module_is_named_like_a_standard_library_module():
    clashes = [name for name in modules() if name.rsplit(".", 1)[-1] in sys.stdlib_module_names]
    assert not clashes, f"named like a standard-library module (rename them): {clashes}"


def test_no_two_modules_share_a_file_name():
    by_file: dict[str, list[str]] = {}
    for name, path in modules().items():
        if path.name != "__init__.py":
            by_file.setdefault(path.name, []).append(name)
    shared = {file: names for file, names in by_file.items() if len(names) > 1}
    assert not shared, f"modules sharing a file name (name each after its own job): {shared}"


# -- the README's map of the code -----------------------------------------------------------------
def _map_rows() -> dict[str, str]:
    """The README's "Map of the code" table: first cell (where) -> second cell (job)."""
    text = (ROOT.parent / "README.md").read_text(encoding="utf-8")
    section = text.split("## Map of the code", 1)[1].split("\n## ", 1)[0]
    return {cells[1].strip(): cells[2] for cells in (line.split("|") for line in section.splitlines())
            if len(cells) > 3 and cells[1].strip().startswith("`")}


def test_the_readmes_map_names_every_module_and_only_modules():
    rows = _map_rows()
    unnamed, unknown = [], []
    for name, path in modules().items():
        parts = name.split(".")[1:]
        if not parts or path.name == "__init__.py" and len(parts) == 1:
            continue  # the package itself; a subpackage is its folder's row
        if len(parts) == 1:
            if not any(f"`{parts[0]}.py`" in where for where in rows):
                unnamed.append(name)
        else:
            job = next((job for where, job in rows.items() if f"`{parts[0]}/`" in where), "")
            if f"`{parts[-1]}`" not in job:
                unnamed.append(name)
    for where in rows:
        for file in re.findall(r"`([a-z_]+\.py)`", where):
            if not (ROOT / file).is_file():
                unknown.append(file)
        for folder in re.findall(r"`([a-z_]+)/`", where):
            if not (ROOT / folder / "__init__.py").is_file():
                unknown.append(folder + "/")
    assert not unnamed, f"modules the README's map of the code does not name (add them to its table): {unnamed}"
    assert not unknown, f"the README's map of the code names what does not exist: {unknown}"


# -- dependencies -----------------------------------------------------------------------------------
# Imported only when the user's own types are pydantic models (pydantic is then loaded already).
_USERS_OWN = frozenset({"pydantic", "pydantic_core"})


def _declared(extra: str | None) -> set[str]:
    """The distributions pyproject.toml declares: the base ones, plus `extra`'s."""
    import tomllib

    project = tomllib.loads((ROOT.parent / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = list(project["dependencies"]) + list(project["optional-dependencies"].get(extra, []) if extra else [])
    return {re.split(r"[\s<>=!~;\[]", item, maxsplit=1)[0].lower().replace("_", "-") for item in wanted}


def _catches_import_error(node: ast.Try) -> bool:
    names = set()
    for handler in node.handlers:
        kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        names |= {kind.id for kind in kinds if isinstance(kind, ast.Name)}
    return bool(names & {"ImportError", "ModuleNotFoundError"})


def test_every_third_party_import_is_declared_for_its_part_of_the_package():
    import importlib.metadata

    distributions = importlib.metadata.packages_distributions()
    undeclared = []
    for name, path in modules().items():
        extra = "mcp" if name.startswith("nbtools.mcp") else "jupyter" if name.startswith("nbtools.jupyter") \
            else "codemode" if name == "nbtools.codemode" else None
        declared = _declared(extra)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        guarded = {id(inner) for node in ast.walk(tree) if isinstance(node, ast.Try) and _catches_import_error(node)
                   for statement in node.body for inner in ast.walk(statement)}
        for node in ast.walk(tree):
            if id(node) in guarded:  # a guarded import names what to install (the rule allows it)
                continue
            if isinstance(node, ast.Import):
                tops = [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                tops = [node.module.split(".")[0]]
            else:
                continue
            for top in tops:
                if top in sys.stdlib_module_names or top == "nbtools" or top in _USERS_OWN:
                    continue
                owners = {dist.lower().replace("_", "-") for dist in distributions.get(top, [top])}
                if not owners & declared:
                    undeclared.append(f"{name} imports {top} ({', '.join(sorted(owners))})")
    assert not undeclared, ("imports not declared in pyproject.toml (base dependencies; the [mcp] extra for "
                            "nbtools/mcp/, [jupyter] for nbtools/jupyter/): " + "; ".join(sorted(set(undeclared))))


# -- imports ----------------------------------------------------------------------------------------
def test_the_import_reader_sees_top_level_and_lazy_imports():
    graph = imports()
    top, lazy = graph["nbtools.tool"]
    assert "nbtools.ir" in top and "nbtools.call" in lazy and "nbtools.call" not in top
    assert "nbtools.schema" in lazy and "nbtools.schema.params" in lazy  # a package's __init__ runs first
    assert "nbtools.tool" not in top | lazy


def test_no_import_cycle_at_module_level():
    cycles = top_level_cycles()
    assert not cycles, "import cycles at module level: " + "; ".join(" -> ".join(cycle) for cycle in cycles)


def test_at_most_one_pair_of_modules_is_tied_by_a_lazy_import():
    pairs = {frozenset(edge) for edge in lazy_cycle_edges()}
    assert pairs <= {ALLOWED_LAZY_PAIR}, f"lazy imports closing a cycle: {sorted(map(sorted, pairs))}"


def test_the_record_imports_no_stage_above_it_at_module_level():
    top, _lazy = imports()["nbtools.tool"]
    # formats.catalog: the format names, importing nothing (formats/__init__ runs first, lazily)
    assert top <= {"nbtools.ir", "nbtools.errors", "nbtools.formats", "nbtools.formats.catalog"}, top


def test_import_nbtools_stays_light():
    heavy = ("IPython", "ipywidgets", "pydantic", "mcp", "docstring_parser", "jupyter_server", "tornado")
    code = f"import sys, nbtools; print([name for name in {heavy!r} if name in sys.modules])"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT.parent), os.environ.get("PYTHONPATH")]))}
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env,
                            timeout=60).stdout
    assert output.strip() == "[]", f"`import nbtools` loaded {output.strip()}"


def test_dispatch_loads_the_strict_read_back_and_no_renderer():
    # formats/__init__ re-exports lazily: dispatch needs formats.readback on every call path, and
    # the renderers (schema walkers, reply readers) cost more to import than dispatch itself; the
    # format names (catalog, which imports nothing) are read by the Tool record at module level
    code = ("import sys; from nbtools import call_func; "
            "print(sorted(name for name in sys.modules if name.startswith('nbtools.formats.')))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT.parent), os.environ.get("PYTHONPATH")]))}
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env,
                            timeout=60).stdout
    assert output.strip() == "['nbtools.formats.catalog', 'nbtools.formats.readback']", f"`from nbtools import call_func` loaded {output.strip()}"


# -- the public API ---------------------------------------------------------------------------------
def test_every_public_name_resolves():
    import nbtools

    missing = [name for name in nbtools.__all__ if getattr(nbtools, name, None) is None]
    assert not missing, f"nbtools.__all__ names what nbtools does not have: {missing}"


def test_every_public_mcp_name_resolves():
    pytest.importorskip("mcp")
    import nbtools.mcp

    missing = [name for name in nbtools.mcp.__all__ if getattr(nbtools.mcp, name, None) is None]
    assert not missing, f"nbtools.mcp.__all__ names what nbtools.mcp does not have: {missing}"


def test_the_package_attribute_tool_is_the_decorator_and_tool_methods_stay_public():
    import nbtools

    assert callable(nbtools.tool) and not isinstance(nbtools.tool, type) and nbtools.tool is not nbtools.Tool
    for method in ("from_function", "from_schema", "schema", "call", "acall"):
        assert callable(getattr(nbtools.Tool, method))
