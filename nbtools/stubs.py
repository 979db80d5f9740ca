"""Tools as Python stubs written from their schemas: what code mode's description shows a model.

One stub per tool: `def name(a: int, b: int = 1) -> int:` (`async def` for a coroutine tool), its
parameters in the order the function takes them (positional-only before `/`, `*args`, keyword-only
after `*`, `**kwargs`), types read from the JSON Schema (`Literal[...]` for enums, `X | None`,
`list[...]`, `dict[str, ...]`), defaults as Python literals (`...` where the schema has none to
show), and the first line of the description as its docstring. Read from the Tool only (its
`parameters`, `returns`, `passing`), so tools built from a schema get stubs too.
"""

from __future__ import annotations

import json
import keyword
from typing import Any

__all__ = ["stubs", "stub", "python_type"]


def stubs(tools: dict[str, Any]) -> str:
    """The stubs of `tools` (Python name -> Tool), one after another."""
    return "\n\n".join(stub(name, tool) for name, tool in tools.items())


def stub(name: str, tool: Any) -> str:
    """The stub of one Tool, called `name` in the code."""
    parameters = tool.parameters or {}
    properties = parameters.get("properties") or {}
    required = set(parameters.get("required") or ())
    defs = parameters.get("$defs") or {}
    passing = [(each, kind) for each, kind in (tool.passing or ()) if kind not in ("context", "default")] or \
        [(each, "keyword") for each in properties]
    keys = ""
    if not all(each.isidentifier() and not keyword.iskeyword(each) for each, _ in passing):
        # property names Python cannot spell: one mapping of them, its keys in a comment after the
        # colon (before it, the comment would swallow the `):` and the stub would not be Python)
        listed = ", ".join(f"{json.dumps(each)}: {python_type(properties.get(each, {}), defs)}" for each, _ in passing)
        signature, keys = ["**arguments"], f"  # keys: {{{listed}}}"
    else:
        signature = _signature(passing, properties, required, defs, parameters)
    returns = f" -> {python_type(tool.returns, defs)}" if tool.returns is not None else ""
    head = "async def" if tool.is_async else "def"
    lines = [f"{head} {name}({', '.join(signature)}){returns}:{keys}"]
    summary = next((line.strip() for line in (tool.description or "").splitlines() if line.strip()), "")
    if name != tool.name:
        summary = f"(tool {tool.name!r}) {summary}".strip()
    lines.append(f"    {_docstring(summary)}" if summary else "    ...")
    return "\n".join(lines)


def _docstring(text: str) -> str:
    """`text` as a one-line docstring (its quotes and backslashes kept from closing it early)."""
    return '"""' + text.replace("\\", "\\\\").replace('"', "'") + '"""'


def _signature(passing: list, properties: dict, required: set, defs: dict, parameters: dict) -> list[str]:
    parts: list[str] = []
    saw_positional_only = keyword_only = after_default = False
    for each, kind in passing:
        schema = properties.get(each, {})
        if kind == "positional":
            saw_positional_only = True
        elif saw_positional_only:
            parts.append("/")
            saw_positional_only = False
        if kind == "varargs":
            parts.append(f"*{each}: {python_type(schema.get('items', {}), defs)}")
            keyword_only = True
            continue
        if kind == "varkw":
            extra = parameters.get("additionalProperties")
            parts.append(f"**{each}: {python_type(extra if isinstance(extra, dict) else {}, defs)}")
            continue
        optional = each not in required
        if not optional and after_default and not keyword_only:
            parts.append("*")  # a required parameter after an optional one: keyword-only in Python
            keyword_only = True
        text = f"{each}: {python_type(schema, defs)}"
        if optional:
            text += f" = {_literal(schema['default'])}" if "default" in schema else " = ..."
            after_default = True
        parts.append(text)
    if saw_positional_only:
        parts.append("/")
    return parts


_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None",
            "array": "list", "object": "dict"}


def python_type(schema: Any, defs: dict | None = None, depth: int = 0) -> str:
    """The Python annotation a JSON Schema describes, as text ("Any" where it says nothing)."""
    defs = defs or {}
    if not isinstance(schema, dict) or depth > 6:
        return "Any"
    if "$ref" in schema:
        target = str(schema["$ref"]).rsplit("/", 1)[-1]
        return python_type(defs[target], defs, depth + 1) if target in defs and depth < 3 else "dict"
    if "const" in schema:
        return f"Literal[{_literal(schema['const'])}]"
    if isinstance(schema.get("enum"), list):
        return f"Literal[{', '.join(_literal(value) for value in schema['enum'])}]"
    for combined in ("anyOf", "oneOf"):
        if isinstance(schema.get(combined), list):
            return _union([python_type(option, defs, depth + 1) for option in schema[combined]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union([python_type({**schema, "type": each}, defs, depth + 1) for each in kind])
    if kind == "array":
        if isinstance(schema.get("prefixItems"), list):
            inner = [python_type(each, defs, depth + 1) for each in schema["prefixItems"]]
            return f"tuple[{', '.join(inner)}]" if inner else "tuple"
        items = schema.get("items")
        return f"list[{python_type(items, defs, depth + 1)}]" if isinstance(items, dict) and items else "list"
    if kind == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and extra and not schema.get("properties"):
            return f"dict[str, {python_type(extra, defs, depth + 1)}]"
        return "dict"
    return _SCALARS.get(kind, "Any") if isinstance(kind, str) else "Any"


def _union(options: list[str]) -> str:
    unique = list(dict.fromkeys(options))
    if "Any" in unique:
        return "Any"
    return " | ".join(unique)


def _literal(value: Any) -> str:
    """A JSON value as Python source (True/False/None; strings quoted)."""
    return repr(value)
