"""One rule for text cut to fit: what error messages, tables and traces show of a long text.

Imports nothing: every module may use it (`errors` included, which `import nbtools` loads).
"""

from __future__ import annotations

MARKER = "…"
"""What stands for the part left out (one character, so a cut text is never longer than asked)."""


def short(text: str, limit: int = 300) -> str:
    """`text` itself when it has at most `limit` characters, else its start and `…`, `limit` in all."""
    return text if len(text) <= limit else text[: max(limit - len(MARKER), 0)] + MARKER


def middle(text: str, limit: int, tail: int, marker: str) -> str:
    """`text` cut to `limit` characters in the middle when longer: its start and its last `tail`
    characters (on a line of their own), `marker` between saying what was left out. The end is kept
    because that is where a traceback's error line, a time-out or a run's verdict stands."""
    if len(text) <= limit:
        return text
    return text[:limit - tail] + marker + (f"\n{text[len(text) - tail:]}" if tail else "")


class Full(Exception):
    """A `Bounded` text reached its limit."""


class Bounded:
    """Text built piece by piece up to `limit` characters (a preview, a repr's start): `write`
    raises `Full` once the text passes the limit, so a walk over a large value stops there;
    `room` is how much of the next piece can still be seen (one more than fits: enough to tell
    it was cut); `text(cut)` is the text and whether it was cut."""

    __slots__ = ("pieces", "size", "limit")

    def __init__(self, limit: int):
        self.pieces: list[str] = []
        self.size, self.limit = 0, limit

    def write(self, piece: str) -> None:
        self.pieces.append(piece)
        self.size += len(piece)
        if self.size > self.limit:
            raise Full

    def room(self) -> int:
        return self.limit - self.size + 1

    def text(self, cut: bool) -> tuple[str, bool]:
        joined = "".join(self.pieces)
        return (joined[:self.limit], True) if cut else (joined, False)


__all__ = ["MARKER", "short", "middle", "Full", "Bounded"]
