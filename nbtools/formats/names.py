"""Tool names as each provider accepts them, mapped reversibly.

OpenAI and Anthropic accept `[A-Za-z0-9_-]{1,64}`, Gemini `[A-Za-z0-9_.:-]` starting with a letter
or `_` (64 at most), MCP `[A-Za-z0-9_.-]{1,128}`. A name a provider rejects is mapped
deterministically: every `.` becomes `__` (so `obj.fn` -> `obj__fn`); if that is still invalid or
too long, other characters become `_` and the name is cut to a prefix plus `_` and 8 hex digits of
the SHA-256 of the original name. `wire_names(name)` lists every mapped form so a registry can
accept whichever one a model sends back.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache

from .catalog import FORMATS, check_format


@dataclass(frozen=True)
class NameRule:
    """What a provider accepts as a tool name.

    Fields: `chars` (a regex character class of allowed characters), `first` (the class the first
    character must match, or None), `max_length`.
    """

    chars: str
    first: str | None
    max_length: int

    def accepts(self, name: str) -> bool:
        first = self.first or self.chars
        return bool(re.fullmatch(f"{first}{self.chars}{{0,{self.max_length - 1}}}", name))


_OPENAI_NAMES = NameRule("[A-Za-z0-9_-]", None, 64)
_GEMINI_NAMES = NameRule("[A-Za-z0-9_.:-]", "[A-Za-z_]", 64)
_MCP_NAMES = NameRule("[A-Za-z0-9_.-]", None, 128)
NAME_RULES = {"openai": _OPENAI_NAMES, "responses": _OPENAI_NAMES, "anthropic": _OPENAI_NAMES,
              "gemini": _GEMINI_NAMES, "gemini-openapi": _GEMINI_NAMES, "mcp": _MCP_NAMES}
_HASH_DIGITS = 8


@lru_cache(maxsize=4096)
def wire_name(name: str, fmt: str | None) -> str:
    """`name` as provider `fmt` accepts it (unchanged when already valid; see the module docstring)."""
    check_format(fmt)
    rule = NAME_RULES.get(fmt)
    if rule is None or rule.accepts(name):
        return name
    dotless = name if re.fullmatch(rule.chars, ".") else name.replace(".", "__")
    if rule.accepts(dotless):
        return dotless
    safe = re.sub(rule.chars.replace("[", "[^", 1), "_", dotless)
    if rule.first is not None and not re.fullmatch(rule.first, safe[:1] or "0"):
        safe = "_" + safe
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:_HASH_DIGITS]
    return f"{safe[: rule.max_length - _HASH_DIGITS - 1]}_{digest}"


def wire_names(name: str) -> set[str]:
    """Every form of `name` some provider may send back (the name itself included)."""
    return {wire_name(name, fmt) for fmt in FORMATS}


__all__ = ["NameRule", "NAME_RULES", "wire_name", "wire_names"]
