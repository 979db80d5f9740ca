"""Records the cassettes notebook 06_chat.ipynb replays: `python record_06.py` in this folder.

The notebook's chats, made here with `Chat(..., record=PATH)` against the recorded model of the tests
(tests/recorded_model.py: an HTTP server on loopback answering with provider responses written in
advance), so that the notebook runs offline and under nbval with `nbtools.replay(PATH)`. With a real
key, the same `record=` on `openai.OpenAI()` records the real API. The tools, prompts and order of the
chats must stay those of the notebook: a replayed request that differs raises `CassetteMismatch`
naming the difference, which says this script needs the same change.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from PIL import Image as PILImage

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
from recorded_model import RecordedModel, anthropic_reply, make_client, openai_reply  # noqa: E402

from nbtools import Chat, Registry, describe  # noqa: E402
from nbtools.errors import DescriptionError  # noqa: E402
from nbtools.chat import MaxStepsReached  # noqa: E402


# -- the notebook's tools, exactly -----------------------------------------------------------------
def add(a: int,  # first addend
        b: int,  # second addend
       ) -> int:
    "Add two integers."
    return a + b


def swatch(colour: str) -> PILImage.Image:
    "A small picture of a colour."
    return PILImage.new("RGB", (96, 24), colour)


def delete_file(path: str) -> str:
    "Delete a file."
    return f"deleted {path}"


def convert(amount: float, rate: float) -> float:
    return amount * rate


tools = Registry(approve=lambda tool, args: False)
tools.add(add, hints="read-only")
tools.add(swatch, hints="read-only")
tools.add(delete_file, hints="destructive")

DESCRIPTIONS = {"tools": {
    "convert": {"description": "Convert an amount of money with an exchange rate.",
                "parameters": {"amount": "the amount to convert", "rate": "units of the target currency per unit"}},
    "delete_file": {"description": "Remove a file from disk.", "parameters": {"path": "the file to delete"}},
}}
BAD = {"tools": {"convert": {"description": "Convert money.", "parameters": {"currency": "ISO code"}}}}

OPENAI = [
    openai_reply([("call_1", "add", {"a": 2, "b": 3}), ("call_2", "delete_file", {"path": "notes.txt"})]),
    openai_reply(text="**2 + 3 = 5.** I was not allowed to delete `notes.txt`."),
    openai_reply(text="You are welcome."),
    openai_reply([("call_4", "swatch", {"colour": "teal"})]),
    openai_reply(text="Here is teal."),
    openai_reply([("call_9", "add", {"a": 1, "b": 1})]),
    openai_reply([("call_9", "add", {"a": 1, "b": 1})]),
    openai_reply([("call_1", "add", {"a": 20, "b": 22})]),
    openai_reply(text="42"),
    openai_reply(text=json.dumps(DESCRIPTIONS)),
    openai_reply(text=json.dumps(BAD)),
]
ANTHROPIC = [anthropic_reply([("toolu_01", "add", {"a": 2, "b": 3})], text="Let me add."),
             anthropic_reply(text="It is 5.")]


def main(folder: Path = HERE) -> None:
    """Record the two cassettes into `folder` (the notebook's own folder by default)."""
    path = folder / "06_chat.cassette.json"
    with RecordedModel([(200, body) for body in OPENAI]) as model:
        client = make_client("openai", model.url)
        chat = Chat(client, model="gpt-4.1-mini", tools=tools, system="Be brief.", show=False, record=path)
        chat("Add 2 and 3, then delete notes.txt.")
        chat("Thanks!")
        chat("Show me teal.")
        stubborn = Chat(client, model="gpt-4.1-mini", tools=tools, max_steps=2, show=False, record=path)
        try:
            stubborn("Keep adding.")
        except MaxStepsReached:
            pass
        Chat(client, model="gpt-4.1-mini", tools=tools, show=False, record=path)("20 + 22?")
        writer = Chat(client, model="gpt-4.1-mini", tools=[], show=False, record=path)
        describe([convert, delete_file], writer)
        try:
            describe([convert], writer, mode="llm")
        except DescriptionError:
            pass
        assert len(model.requests) == len(OPENAI), len(model.requests)
    with RecordedModel([(200, body) for body in ANTHROPIC]) as claude_model:
        claude = Chat(make_client("anthropic", claude_model.url), model="claude-sonnet-4-6",
                      tools=tools.select(hints="read-only"), max_tokens=1024, show=False,
                      record=folder / "06_chat.anthropic.cassette.json")
        claude("2 + 3?")
    print("recorded", path.name, "and 06_chat.anthropic.cassette.json")


if __name__ == "__main__":
    main()
