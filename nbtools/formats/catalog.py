"""Which tool formats and reply dialects exist (the names every other module of `formats` checks against),
and the one shape fact callers of a cached definition need (`fresh_top`). Imports nothing, so the
Tool record (`tool.py`) reads it at module level without loading a renderer."""

from __future__ import annotations

FORMATS = (None, "openai", "responses", "anthropic", "gemini", "gemini-openapi", "mcp")
# The formats whose provider has a strict tool mode; `strict=True` is ignored by the others.
STRICT_FORMATS = frozenset({"openai", "responses", "anthropic"})
# The shapes a model reply (and the results sent back) can have.
DIALECTS = ("openai", "responses", "anthropic", "gemini")


NEUTRAL = "neutral"
"""The word for the neutral format (`fmt=None`): accepted wherever a format is."""


def neutral_as_none(fmt: str | None) -> str | None:
    """`fmt` with the word "neutral" as None (the neutral format's value everywhere else)."""
    return None if fmt == NEUTRAL else fmt


def check_format(fmt: str | None) -> None:
    """Raise `ValueError` naming the valid formats when `fmt` is not one of `FORMATS`."""
    if fmt not in FORMATS:
        valid = ", ".join(repr(item) for item in FORMATS)
        raise ValueError(f"unknown tool format {fmt!r}; valid formats are {valid}")


def fresh_top(rendered: dict) -> dict:
    """A cached tool definition with fresh top-level dicts (the caller may add keys such as
    Anthropic's `cache_control`); nested parts stay shared and must not be mutated."""
    top = dict(rendered)
    inner = top.get("function")
    if isinstance(inner, dict):  # OpenAI chat nests the definition one level down
        top["function"] = dict(inner)
    return top


__all__ = ["FORMATS", "STRICT_FORMATS", "DIALECTS", "NEUTRAL", "neutral_as_none", "check_format", "fresh_top"]
