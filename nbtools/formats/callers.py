"""Provider-native programmatic tool calling and tool search: who may call a tool, which caller a
reply's call came from, and what carries code execution's state to the next request.

| dialect   | a tool's allowed callers (`Tool.callers`)                          | a call from code                                   | its answer                                   |
|-----------|--------------------------------------------------------------------|----------------------------------------------------|----------------------------------------------|
| anthropic | `allowed_callers: ["direct", "code_execution_<version>"]`          | `tool_use` with `caller: {"type": "code_execution_<version>", "tool_id"}` | `tool_result` blocks only, the reply's `container.id` sent back as `container=` |
| responses | `allowed_callers: ["direct", "programmatic"]`                      | `function_call` with `caller: {"type": "program", "caller_id"}` | `function_call_output` echoing that `caller` |
| openai, gemini | (neither programmatic calling nor tool search: nothing rendered) |                                                     |                                              |

`Tool.defer` renders `defer_loading: true` (anthropic, responses): the tool is loaded through the
provider's tool search instead of being shown in every request.

The Anthropic code-execution version named in `allowed_callers` is the newest one the installed
`anthropic` SDK both accepts there and reads back as a `tool_use` caller (read from its types when
first needed; the SDK is not imported otherwise); a Chat sending a code-execution tool of another
version names that one (`match_code_version`).
"""

from __future__ import annotations

import functools
import re
from typing import Any

# The version used when the anthropic SDK is not installed (or names none): the one Anthropic's
# programmatic tool calling documents as required.
_ANTHROPIC_FALLBACK = "code_execution_20260120"
_CODE_EXECUTION = re.compile(r"code_execution_\d{8}")


@functools.lru_cache(maxsize=1)
def anthropic_code_version() -> str:
    """The code-execution tool version Anthropic's `allowed_callers` names for code (see the module
    docs): read from the installed SDK's types, newest first."""
    from typing import get_type_hints

    try:
        from anthropic.types import ToolParam, ToolUseBlock
    except ImportError:  # the SDK is not something rendering needs
        return _ANTHROPIC_FALLBACK
    try:
        allowed = _literals(get_type_hints(ToolParam)["allowed_callers"])
        readable = _literals(ToolUseBlock.model_fields["caller"].annotation)
    except Exception:  # an SDK whose types are shaped otherwise
        return _ANTHROPIC_FALLBACK
    versions = sorted(version for version in allowed if _CODE_EXECUTION.fullmatch(version))
    both = [version for version in versions if version in readable]
    return (both or versions or [_ANTHROPIC_FALLBACK])[-1]


def _literals(tp: Any, depth: int = 0) -> set[str]:
    """The string literals a type names: inside unions, lists, `Annotated`, and the `type` field of
    the pydantic models it names (the SDK's caller records)."""
    found: set[str] = set()
    if depth > 8:
        return found
    fields = getattr(tp, "model_fields", None)
    if isinstance(fields, dict):
        return _literals(fields["type"].annotation, depth + 1) if "type" in fields else found
    from typing import get_args

    for arg in get_args(tp):
        found |= {arg} if isinstance(arg, str) else _literals(arg, depth + 1)
    return found


def allowed_callers(dialect: str, callers: tuple[str, ...] | None) -> list[str] | None:
    """`Tool.callers` as `dialect`'s `allowed_callers` (None: nothing to render)."""
    if callers is None or dialect not in ("anthropic", "responses"):
        return None
    code = anthropic_code_version() if dialect == "anthropic" else "programmatic"
    return ["direct" if caller == "direct" else code for caller in callers]


def add_caller_fields(definition: dict, dialect: str, tool: Any) -> dict:
    """`definition` (a fresh dict) with the allowed callers and deferred loading of `tool`."""
    callers = allowed_callers(dialect, getattr(tool, "callers", None))
    if callers is not None:
        definition["allowed_callers"] = callers
    if getattr(tool, "defer", False) and dialect in ("anthropic", "responses"):
        definition["defer_loading"] = True
    return definition


def caller_of(dialect: str, call: dict) -> dict | None:
    """The caller of one tool call read from a reply (a plain dict): None when the model called it
    itself (no caller, or `{"type": "direct"}`), else the caller as sent (code the model wrote)."""
    if dialect not in ("anthropic", "responses"):
        return None
    caller = call.get("caller")
    if hasattr(caller, "model_dump"):
        caller = caller.model_dump(exclude_none=True)
    if not isinstance(caller, dict) or caller.get("type") in (None, "direct"):
        return None
    return dict(caller)


def answer_fields(dialect: str, caller: dict | None) -> dict:
    """What the answer to a call from code carries besides the answer to a direct call: Responses'
    `function_call_output` echoes the `caller`; Anthropic's `tool_result` is the same block (the
    user message answering such calls must hold only `tool_result` blocks, which it does)."""
    if caller is None or dialect != "responses":
        return {}
    return {"caller": {key: caller[key] for key in ("type", "caller_id") if key in caller}}


def container_of(reply: Any) -> str | None:
    """The id of the code-execution container an Anthropic reply used (an SDK message or a plain
    dict), which the next request sends back as `container=` to keep the code's state; None when
    it used none."""
    container = reply.get("container") if isinstance(reply, dict) else getattr(reply, "container", None)
    if container is None:
        return None
    found = container.get("id") if isinstance(container, dict) else getattr(container, "id", None)
    return found if isinstance(found, str) and found else None


def match_code_version(definitions: list[dict], native: list[dict]) -> list[dict]:
    """Anthropic definitions whose `allowed_callers` name the version of the code-execution tool
    sent among `native` tools (the API wants the two to agree); unchanged when none is sent."""
    sent = next((tool.get("type") for tool in native if isinstance(tool.get("type"), str)
                 and _CODE_EXECUTION.fullmatch(tool["type"])), None)
    if sent is None:
        return definitions
    out = []
    for definition in definitions:
        callers = definition.get("allowed_callers")
        if callers and any(caller != sent and _CODE_EXECUTION.fullmatch(caller) for caller in callers):
            definition = {**definition, "allowed_callers": [
                sent if _CODE_EXECUTION.fullmatch(caller) else caller for caller in callers]}
        out.append(definition)
    return out


__all__ = ["anthropic_code_version", "allowed_callers", "add_caller_fields", "caller_of", "answer_fields",
           "container_of", "match_code_version"]
