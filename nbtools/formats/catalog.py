"""Which tool formats and reply dialects exist (the names every other module of `formats` checks against)."""

from __future__ import annotations

FORMATS = (None, "openai", "responses", "anthropic", "gemini", "gemini-openapi", "mcp")
# The formats whose provider has a strict tool mode; `strict=True` is ignored by the others.
STRICT_FORMATS = frozenset({"openai", "responses", "anthropic"})
# The shapes a model reply (and the results sent back) can have.
DIALECTS = ("openai", "responses", "anthropic", "gemini")


def check_format(fmt: str | None) -> None:
    """Raise `ValueError` naming the valid formats when `fmt` is not one of `FORMATS`."""
    if fmt not in FORMATS:
        valid = ", ".join(repr(item) for item in FORMATS)
        raise ValueError(f"unknown tool format {fmt!r}; valid formats are {valid}")


__all__ = ["FORMATS", "STRICT_FORMATS", "DIALECTS", "check_format"]
