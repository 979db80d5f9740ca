"""A model's text as Markdown that renders inert: no HTML of the model's, no image fetched unasked.

JupyterLab renders a running session's Markdown output without sanitising it, and a model's text
can be steered by anything it read (a web page, a tool result). So, outside code:

- every `<` becomes `&lt;`: no tag, no autolink, no HTML block the model wrote reaches the page;
- every `![` becomes `\\![`: an image is shown as a link (a person may click it; the page fetches
  nothing by itself, so no data leaves in an image URL), unless `remote_images=True`.

Fenced code blocks (CommonMark's rules: up to 3 spaces, 3+ backticks or tildes, no backtick in a
backtick fence's info string, closed by a run at least as long) are kept as they are: the
renderer shows their content as text. Inline code spans are kept when their content cannot be
markup if the renderer parsed the text differently (no `<`, `&` or `![` in them); others become
`<code>` elements of our own with every special character as an entity, which renders the same.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_TICKS = re.compile(r"`+")
_RISKY_CODE = re.compile(r"<|&|!\[")
# Characters that are markup somewhere in Markdown or HTML, written as entities inside our <code>.
_ENTITIES = {c: f"&#{ord(c)};" for c in "&<>\"'`*_[]()!\\#~|$:{}"}


def safe_markdown(text: str, remote_images: bool = False) -> str:
    """`text` (a model's Markdown) made inert, as described in the module docstring."""
    out: list[str] = []
    prose: list[str] = []
    fence: tuple[str, int] | None = None  # (character, length) of the open fence
    for line in text.splitlines(keepends=True):
        if fence is not None:
            out.append(line)
            closing = _FENCE.match(line.rstrip("\r\n"))
            if closing and closing.group(1)[0] == fence[0] and len(closing.group(1)) >= fence[1] \
                    and not closing.group(2).strip():
                fence = None
            continue
        opening = _FENCE.match(line.rstrip("\r\n"))
        if opening and not (opening.group(1)[0] == "`" and "`" in opening.group(2)):
            out.append(_inline("".join(prose), remote_images))
            prose = []
            out.append(line)
            fence = (opening.group(1)[0], len(opening.group(1)))
        else:
            prose.append(line)
    out.append(_inline("".join(prose), remote_images))
    return "".join(out)


def _inline(text: str, remote_images: bool) -> str:
    """Prose outside fences: code spans found as CommonMark pairs them (a backtick run closed by
    the next run of the same length; a run after an odd number of backslashes opens nothing)."""
    out: list[str] = []
    position = 0
    search = 0
    while True:
        opener = _TICKS.search(text, search)
        if opener is None:
            break
        backslashes = len(opener.string[:opener.start()]) - len(opener.string[:opener.start()].rstrip("\\"))
        start = opener.start() + (1 if backslashes % 2 else 0)  # an escaped backtick is text
        run = opener.end() - start
        if run == 0:
            search = opener.end()
            continue
        closer = None
        for candidate in _TICKS.finditer(text, opener.end()):
            if len(candidate.group()) == run:
                closer = candidate
                break
        if closer is None:
            search = opener.end()
            continue
        out.append(_prose(text[position:start], remote_images))
        content = text[opener.end():closer.start()]
        if _RISKY_CODE.search(content):
            out.append("<code>" + "".join(_ENTITIES.get(c, c) for c in _code_text(content)) + "</code>")
        else:
            out.append(text[start:closer.end()])
        position = search = closer.end()
    out.append(_prose(text[position:], remote_images))
    return "".join(out)


def _code_text(content: str) -> str:
    """What a code span shows: line endings as spaces, one space stripped from both ends when
    both are spaces and the content is not only spaces (CommonMark)."""
    content = content.replace("\r\n", " ").replace("\n", " ")
    if len(content) >= 2 and content[0] == content[-1] == " " and content.strip(" "):
        content = content[1:-1]
    return content


def _prose(text: str, remote_images: bool) -> str:
    text = text.replace("<", "&lt;")
    return text if remote_images else _IMAGE.sub(_as_link, text)


_IMAGE = re.compile(r"(\\*)!\[")  # an image's opening, after any backslashes


def _as_link(match: re.Match) -> str:
    """`![` as an escaped `!` before a link's `[` (a `!` already escaped is left as it is)."""
    slashes = match.group(1)
    return match.group(0) if len(slashes) % 2 else slashes + "\\!["


__all__ = ["safe_markdown"]
