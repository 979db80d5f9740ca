"""`describe(tools, chat)`: tool and parameter descriptions written by a model (LazyBridge's llm/hybrid modes).

nbtools reads descriptions from every place a person writes them; a function with none stays
undescribed. `describe` asks a `Chat` to write them:

- `mode="hybrid"` (the default): only what is missing: a tool description that is empty or made only
  of the `Returns: ...` line nbtools appends, and parameters without a description. Whatever a person
  wrote wins: an answer for it is ignored.
- `mode="llm"`: all of them, replacing what was there.

One request asks for every tool at once and shows the JSON shape wanted, with each tool's definition
and source. The answer is checked before anything changes: not JSON of that shape, or naming a tool or
parameter that does not exist, and it is refused whole (`DescriptionError`, nothing changed). The
`Returns: ...` line is kept under a written description. The result is new Tools
(`Tool.replace`: the callable, hints, group and the policy of the registry they came from stay).

`pin=PATH` keeps the descriptions in a JSON file a person can review and edit: when it exists, the
tools it names take their descriptions from it (by the same mode's rule) and no model is asked;
tools it lacks are described by the model and added to it.
"""

from __future__ import annotations

import copy
import inspect
import json
import os
import re
from pathlib import Path
from typing import Any, Iterable

from ..errors import DescriptionError
from ..policy import bind, source_of
from ..tool import Tool

PIN_FORMAT = "nbtools-descriptions/1"
MODES = ("hybrid", "llm")
SOURCE_LIMIT = 4000  # characters of a tool's source shown to the model
_RETURNS = re.compile(r"(?:^|\n\n)(Returns: .*)\Z", re.DOTALL)

SHAPE = '{"tools": {"<tool name>": {"description": "<what the tool does>", "parameters": {"<parameter name>": ' \
        '"<what the value means>"}}}}'


# -- what a tool has and lacks ---------------------------------------------------------------------
def split_description(description: str) -> tuple[str, str]:
    """(the prose, the `Returns: ...` line nbtools appended or "") of a tool description."""
    found = _RETURNS.search(description)
    if not found:
        return description.strip(), ""
    return description[:found.start()].strip(), found.group(1)


def _properties(tool: Tool) -> dict:
    properties = tool.parameters.get("properties")
    return properties if isinstance(properties, dict) else {}


def _has_description(schema: Any) -> bool:
    return isinstance(schema, dict) and isinstance(schema.get("description"), str) and bool(schema["description"].strip())


def wanted(tool: Tool, mode: str) -> tuple[bool, list[str]]:
    """(whether the tool's description is to be written, the parameters whose descriptions are)."""
    if mode == "llm":
        return True, list(_properties(tool))
    return (not split_description(tool.description)[0],
            [name for name, schema in _properties(tool).items() if not _has_description(schema)])


def _tools_of(tools: Any) -> list[Tool]:
    if isinstance(tools, Tool) or callable(tools) and not hasattr(tools, "__iter__"):
        tools = [tools]
    if not isinstance(tools, Iterable):
        raise TypeError(f"describe(tools, ...): expected Tools or callables (a list, a Registry); got a "
                        f"{type(tools).__name__}")
    found = [item if isinstance(item, Tool) else Tool.from_function(item) for item in tools]
    names = [tool.name for tool in found]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"describe: two tools are named {', '.join(duplicates)}; tool names must be unique")
    return found


# -- the request -----------------------------------------------------------------------------------
def _source(tool: Tool) -> str:
    """The tool's Python source ("" when there is none to read, or it is nbtools' own dispatch
    function of a tool built from a schema or an MCP server)."""
    try:
        fn = inspect.unwrap(tool.fn)  # type: ignore[arg-type]
        if (getattr(fn, "__module__", None) or "").split(".")[0] == "nbtools":
            return ""
        text = inspect.getsource(fn)
    except (TypeError, OSError, ValueError):
        return ""
    return text if len(text) <= SOURCE_LIMIT else text[:SOURCE_LIMIT] + "\n# ... (cut)"


def request_text(tools: list[Tool], asks: dict[str, tuple[bool, list[str]]]) -> str:
    """The prompt: what to write, the JSON shape wanted, and each tool's definition and source."""
    lines = ["Write descriptions for these tools, for a language model that will decide when to call them and "
             "with what arguments. A tool description says what the tool does and when to use it, in one or two "
             "sentences. A parameter description says what the value means (units, format, examples) in a "
             "few words.", "",
             "Answer with one JSON object and nothing else, in this shape:", SHAPE,
             "Write only what is asked for below, and name only the tools and parameters shown.", ""]
    for tool in tools:
        if tool.name not in asks:
            continue
        whole, parameters = asks[tool.name]
        parts = (["its description"] if whole else []) + (
            [f"the parameters {', '.join(parameters)}"] if parameters else [])
        lines.append(f"## Tool {tool.name!r}: write {' and '.join(parts)}")
        lines.append("Its definition: " + json.dumps(tool.schema(), ensure_ascii=False))
        source = _source(tool)
        if source:
            lines += ["Its source:", "```python", source.rstrip(), "```"]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


# -- the answer ------------------------------------------------------------------------------------
def _refused(problem: str, answer: str) -> DescriptionError:
    shown = answer if len(answer) <= 300 else answer[:300] + "..."
    return DescriptionError(f"describe: the model's answer was refused and nothing was changed: {problem}. "
                            f"Its answer: {shown!r}. Call describe again (or write the description yourself)")


def read_answer(answer: str, tools: dict[str, Tool]) -> dict[str, dict]:
    """The descriptions in a model's answer, checked: {tool: {"description": str?, "parameters": {name: str}}}.

    Raises `DescriptionError` (nothing is used) for text that is not JSON of the shape asked for, or
    that names a tool or a parameter that does not exist.
    """
    text = answer.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1)
    try:
        data = json.loads(text)
    except ValueError as error:
        raise _refused(f"it is not JSON ({error})", answer) from None
    if not isinstance(data, dict) or not isinstance(data.get("tools"), dict) or set(data) != {"tools"}:
        raise _refused(f"it is not of the shape {SHAPE}", answer)
    found: dict[str, dict] = {}
    for name, entry in data["tools"].items():
        if name not in tools:
            raise _refused(f"it describes a tool {name!r} that is not among the tools ({', '.join(tools)})", answer)
        if not isinstance(entry, dict) or set(entry) - {"description", "parameters"}:
            raise _refused(f"the entry of tool {name!r} is not an object with 'description' and 'parameters'", answer)
        description, parameters = entry.get("description"), entry.get("parameters", {})
        if description is not None and not isinstance(description, str):
            raise _refused(f"the description of tool {name!r} is not a string", answer)
        if not isinstance(parameters, dict):
            raise _refused(f"the parameters of tool {name!r} are not an object of descriptions", answer)
        known = _properties(tools[name])
        for parameter, text_ in parameters.items():
            if parameter not in known:
                raise _refused(f"it describes a parameter {parameter!r} that tool {name!r} does not have "
                               f"(its parameters: {', '.join(known) or 'none'})", answer)
            if not isinstance(text_, str):
                raise _refused(f"the description of parameter {parameter!r} of tool {name!r} is not a string", answer)
        found[name] = {"description": description, "parameters": dict(parameters)}
    return found


def apply(tool: Tool, written: dict, mode: str) -> Tool:
    """`tool` with the `written` descriptions it may take under `mode` (the same Tool when none)."""
    whole, parameters = wanted(tool, mode)
    prose, returns = split_description(tool.description)
    description = tool.description
    new = (written.get("description") or "").strip()
    if whole and new:
        description = f"{new}\n\n{returns}" if returns else new
    schema = tool.parameters
    texts = {name: text.strip() for name, text in (written.get("parameters") or {}).items()
             if name in parameters and text and text.strip()}
    if texts:
        schema = copy.deepcopy(tool.parameters)
        for name, text in texts.items():
            schema["properties"][name] = {**schema["properties"][name], "description": text}
    if description == tool.description and schema is tool.parameters:
        return tool
    new = tool.replace(description=description, parameters=schema)
    source = source_of(tool)  # a Tool a registry handed out keeps that registry's approval policy
    return bind(new, source) if source is not None and source_of(new) is None else new


# -- pins ------------------------------------------------------------------------------------------
def read_pin(path: Path, tools: dict[str, Tool]) -> dict[str, dict]:
    """The descriptions a pin file holds for `tools` (entries of other tools are left alone)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise DescriptionError(f"describe: cannot read the pin file {path}: {error}; fix it or delete it to "
                               "ask the model again") from None
    if not isinstance(data, dict) or data.get("format") != PIN_FORMAT or not isinstance(data.get("tools"), dict):
        raise DescriptionError(f"describe: {path} is not a pin file ({PIN_FORMAT}); delete it to ask the model again")
    pinned = {}
    for name, entry in data["tools"].items():
        if name not in tools:
            continue
        parameters = entry.get("parameters", {}) if isinstance(entry, dict) else None
        if not isinstance(parameters, dict) or not isinstance(entry.get("description", ""), str):
            raise DescriptionError(f"describe: the entry of tool {name!r} in {path} is not "
                                   "{\"description\": text, \"parameters\": {name: text}}")
        stale = sorted(set(parameters) - set(_properties(tools[name])))
        if stale:
            raise DescriptionError(f"describe: {path} describes parameter(s) {', '.join(stale)} of tool {name!r}, "
                                   "which it no longer has; edit the file or delete the entry to describe it again")
        pinned[name] = {"description": entry.get("description"), "parameters": parameters}
    return pinned


def write_pin(path: Path, tools: list[Tool]) -> None:
    """Store the tools' descriptions (the prose; the `Returns:` line is nbtools' own) in the pin file,
    keeping the entries of tools not given here."""
    entries: dict[str, Any] = {}
    if path.exists():
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
            entries = dict(old.get("tools", {})) if isinstance(old, dict) else {}
        except ValueError:
            entries = {}
    for tool in tools:
        entries[tool.name] = {
            "description": split_description(tool.description)[0],
            "parameters": {name: schema.get("description", "") for name, schema in _properties(tool).items()
                           if isinstance(schema, dict)}}
    text = json.dumps({"format": PIN_FORMAT, "tools": entries}, indent=2, ensure_ascii=False) + "\n"
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


# -- the entry points ------------------------------------------------------------------------------
def _plan(tools: Any, mode: str, pin: str | os.PathLike | None) -> tuple[list[Tool], dict, dict, Path | None]:
    if mode not in MODES:
        raise ValueError(f"describe: mode={mode!r}; expected 'hybrid' (only missing descriptions) or 'llm' (all)")
    found = _tools_of(tools)
    by_name = {tool.name: tool for tool in found}
    path = Path(pin) if pin is not None else None
    pinned = read_pin(path, by_name) if path is not None and path.exists() else {}
    asks = {}
    for tool in found:
        if tool.name in pinned:
            continue
        whole, parameters = wanted(tool, mode)
        if whole or parameters:
            asks[tool.name] = (whole, parameters)
    return found, pinned, asks, path


def _finish(found: list[Tool], pinned: dict, written: dict, mode: str, path: Path | None) -> list[Tool]:
    result = [apply(tool, pinned.get(tool.name) or written.get(tool.name) or {}, mode) for tool in found]
    if path is not None and (written or not path.exists()):
        write_pin(path, result)
    return result


def _check_chat(chat: Any, asks: dict) -> None:
    if chat is None or not callable(getattr(chat, "acall", None)):
        raise TypeError(f"describe: tools {', '.join(asks)} need descriptions written, which takes a Chat "
                        f"(nbtools.Chat(client, model=...)); got {chat!r}")


def describe(tools: Any, chat: Any, *, mode: str = "hybrid", pin: str | os.PathLike | None = None) -> list[Tool]:
    """New Tools whose descriptions `chat` (an `nbtools.Chat`) wrote: the missing ones (`mode="hybrid"`)
    or all (`mode="llm"`). `tools`: Tools or callables (a list, a Registry). `pin`: a JSON file that
    keeps the descriptions; tools it names are not asked about again. See the module docstring."""
    found, pinned, asks, path = _plan(tools, mode, pin)
    written: dict = {}
    if asks:
        _check_chat(chat, asks)
        if getattr(getattr(chat, "endpoint", None), "is_async", False):
            raise TypeError("describe: this Chat's client is asynchronous: use `await adescribe(tools, chat, ...)`")
        written = read_answer(chat(request_text(found, asks)), {tool.name: tool for tool in found})
    return _finish(found, pinned, written, mode, path)


async def adescribe(tools: Any, chat: Any, *, mode: str = "hybrid", pin: str | os.PathLike | None = None
                    ) -> list[Tool]:
    """`describe` for an event loop (`await chat.acall(...)`)."""
    found, pinned, asks, path = _plan(tools, mode, pin)
    written: dict = {}
    if asks:
        _check_chat(chat, asks)
        written = read_answer(await chat.acall(request_text(found, asks)), {tool.name: tool for tool in found})
    return _finish(found, pinned, written, mode, path)


__all__ = ["describe", "adescribe", "request_text", "read_answer", "apply", "wanted", "split_description",
           "read_pin", "write_pin", "PIN_FORMAT", "SHAPE"]
