"""One rule for text cut to fit: what error messages, tables and traces show of a long text.

Imports nothing: every module may use it (`errors` included, which `import nbtools` loads).
"""

from __future__ import annotations

MARKER = "…"
"""What stands for the part left out (one character, so a cut text is never longer than asked)."""


def short(text: str, limit: int = 300) -> str:
    """`text` itself when it has at most `limit` characters, else its start and `…`, `limit` in all."""
    return text if len(text) <= limit else text[: max(limit - len(MARKER), 0)] + MARKER


__all__ = ["MARKER", "short"]
