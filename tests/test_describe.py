"""nbtools.describe: tool and parameter descriptions written by a model, through a real `Chat` over the
real OpenAI and Anthropic SDK clients and the recorded model on loopback (tests/recorded_model.py), and
through a cassette replayed offline."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from recorded_model import RecordedModel, anthropic_reply, make_client, openai_reply  # noqa: E402

import nbtools  # noqa: E402
from nbtools import Registry, Tool  # noqa: E402
from nbtools.chat import Chat  # noqa: E402
from nbtools.chat import cassette as cassettes  # noqa: E402
from nbtools.chat.describing import SHAPE, adescribe  # noqa: E402
from nbtools.errors import DescriptionError  # noqa: E402


def area(width: float, height: float) -> float:
    return width * height


def move(path: str,  # the file to move
         to: str,
         overwrite: bool = False) -> str:
    """Move a file."""
    return f"{path} -> {to}"


def plain(x):
    return x


ANSWER = {"tools": {
    "area": {"description": "The area of a rectangle.",
             "parameters": {"width": "width in metres", "height": "height in metres"}},
    "move": {"description": "Rename or move a file somewhere else.",  # move has one: hybrid ignores this
             "parameters": {"path": "IGNORED: a person described it", "to": "where the file goes",
                            "overwrite": "replace a file already there"}},
}}


def describing_chat(replies: list[str], provider: str = "openai") -> tuple[Chat, RecordedModel]:
    reply = openai_reply if provider == "openai" else anthropic_reply
    model = RecordedModel([(200, reply(text=text)) for text in replies])
    extra = {"max_tokens": 1024} if provider == "anthropic" else {}
    chat = Chat(make_client(provider, model.url), model="test-model", tools=[], show=False, **extra)
    return chat, model


def prompt_of(model: RecordedModel, index: int = 0) -> str:
    messages = model.requests[index]["body"]["messages"]
    content = messages[-1]["content"]
    return content if isinstance(content, str) else content[0]["text"]


def param_descriptions(tool: Tool) -> dict:
    return {name: schema.get("description") for name, schema in tool.parameters["properties"].items()}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_hybrid_writes_only_what_is_missing(provider):
    chat, model = describing_chat([json.dumps(ANSWER)], provider)
    with model:
        described = nbtools.describe([area, move], chat)
    asked = prompt_of(model)
    assert SHAPE in asked  # the request shows the JSON shape wanted
    assert "## Tool 'area': write its description and the parameters width, height" in asked
    assert "## Tool 'move': write the parameters to, overwrite" in asked  # path and the tool are described
    assert "return width * height" in asked  # the source goes with the definition

    new_area, new_move = described
    assert new_area.description == "The area of a rectangle.\n\nReturns: float"
    assert param_descriptions(new_area) == {"width": "width in metres", "height": "height in metres"}
    assert new_move.description.startswith("Move a file.")  # the person's text is kept
    assert param_descriptions(new_move) == {"path": "the file to move", "to": "where the file goes",
                                            "overwrite": "replace a file already there"}
    assert new_area.call({"width": 2, "height": 3}) == 6  # the callable goes with it
    assert new_area.schema("openai")["function"]["parameters"]["properties"]["width"]["description"] == \
        "width in metres"


def test_llm_mode_rewrites_everything():
    chat, model = describing_chat([json.dumps(ANSWER)])
    with model:
        _, new_move = nbtools.describe([area, move], chat, mode="llm")
    assert "## Tool 'move': write its description and the parameters path, to, overwrite" in prompt_of(model)
    assert new_move.description == "Rename or move a file somewhere else.\n\nReturns: str"
    assert param_descriptions(new_move)["path"] == "IGNORED: a person described it"


def test_a_returns_line_alone_counts_as_missing_and_is_kept():
    tool = Tool.from_function(area)
    assert tool.description == "Returns: float"
    chat, model = describing_chat(['```json\n{"tools": {"area": {"description": "Multiply."}}}\n```'])
    with model:
        (new,) = nbtools.describe([tool], chat)
    assert new.description == "Multiply.\n\nReturns: float"
    assert param_descriptions(new) == {"width": None, "height": None}  # not answered: left as it was


@pytest.mark.parametrize("answer, problem", [
    ("Sure! The area tool computes an area.", "it is not JSON"),
    ('{"area": {"description": "x"}}', "it is not of the shape"),
    ('{"tools": {"area": {"description": "x", "parameters": {"depth": "how deep"}}}}',
     "it describes a parameter 'depth' that tool 'area' does not have (its parameters: width, height)"),
    ('{"tools": {"volume": {"description": "x"}}}', "it describes a tool 'volume' that is not among the tools"),
    ('{"tools": {"area": {"description": 3}}}', "the description of tool 'area' is not a string"),
])
def test_a_bad_answer_is_refused_and_changes_nothing(answer, problem, tmp_path):
    chat, model = describing_chat([answer])
    pin = tmp_path / "descriptions.json"
    tools = [Tool.from_function(area), Tool.from_function(move)]
    before = [(tool.description, json.dumps(tool.parameters)) for tool in tools]
    with model, pytest.raises(DescriptionError) as caught:
        nbtools.describe(tools, chat, pin=pin)
    assert str(caught.value).startswith(f"describe: the model's answer was refused and nothing was changed: {problem}")
    assert repr(answer[:40])[1:-1] in str(caught.value)  # the answer is shown
    assert [(tool.description, json.dumps(tool.parameters)) for tool in tools] == before
    assert not pin.exists()


def test_a_pin_file_is_written_and_then_read_without_asking(tmp_path):
    pin = tmp_path / "descriptions.json"
    chat, model = describing_chat([json.dumps(ANSWER)])
    with model:
        first = nbtools.describe([area, move], chat, pin=pin)
    stored = json.loads(pin.read_text())
    assert stored["format"] == "nbtools-descriptions/1"
    assert stored["tools"]["area"] == {"description": "The area of a rectangle.",
                                       "parameters": {"width": "width in metres", "height": "height in metres"}}

    # the server is stopped: a request would fail with a connection error
    second = nbtools.describe([area, move], chat, pin=pin)
    assert len(model.requests) == 1
    assert [(t.description, t.parameters) for t in second] == [(t.description, t.parameters) for t in first]
    assert nbtools.describe([area, move], None, pin=pin)[0].description == first[0].description

    # a person reviews the file and edits it: the edit is used
    stored["tools"]["area"]["parameters"]["width"] = "width in feet"
    pin.write_text(json.dumps(stored))
    assert param_descriptions(nbtools.describe([area], None, pin=pin)[0])["width"] == "width in feet"


def test_a_tool_missing_from_the_pin_is_asked_for_and_added(tmp_path):
    pin = tmp_path / "descriptions.json"
    chat, model = describing_chat([json.dumps({"tools": {"area": ANSWER["tools"]["area"]}}),
                                   '{"tools": {"plain": {"description": "Echo x.", "parameters": {"x": "anything"}}}}'])
    with model:
        nbtools.describe([area], chat, pin=pin)
        new_area, new_plain = nbtools.describe([area, plain], chat, pin=pin)
    assert "'plain'" in prompt_of(model, 1) and "'area'" not in prompt_of(model, 1)
    assert new_area.description.startswith("The area of a rectangle.")
    assert new_plain.description == "Echo x."
    assert set(json.loads(pin.read_text())["tools"]) == {"area", "plain"}


def test_a_stale_pin_is_named(tmp_path):
    pin = tmp_path / "descriptions.json"
    pin.write_text(json.dumps({"format": "nbtools-descriptions/1",
                               "tools": {"area": {"description": "x", "parameters": {"depth": "how deep"}}}}))
    with pytest.raises(DescriptionError, match=r"describes parameter\(s\) depth of tool 'area', which it no longer"):
        nbtools.describe([area], None, pin=pin)


def test_tools_of_a_registry_keep_their_policy():
    asked = []
    registry = Registry(approve=lambda tool, args: asked.append(tool.name) or False)
    registry.add(area, hints="destructive")
    chat, model = describing_chat([json.dumps({"tools": {"area": ANSWER["tools"]["area"]}})])
    with model:
        (new,) = nbtools.describe(registry, chat)
    assert new.description.startswith("The area of a rectangle.") and new.hints == frozenset({"destructive"})
    from nbtools.errors import ToolCallError

    with pytest.raises(ToolCallError, match="denied"):
        new.call({"width": 1, "height": 2})
    assert asked == ["area"]


def test_nothing_missing_asks_nothing_and_an_async_chat_works():
    described = Tool.from_function(move).replace(
        parameters={**Tool.from_function(move).parameters,
                    "properties": {name: {**schema, "description": "d"} for name, schema in
                                   Tool.from_function(move).parameters["properties"].items()}})
    assert nbtools.describe([described], None) == [described]
    with pytest.raises(TypeError, match="need descriptions written, which takes a Chat"):
        nbtools.describe([area], None)

    model = RecordedModel([(200, openai_reply(text=json.dumps({"tools": {"area": ANSWER["tools"]["area"]}})))])
    with model:
        chat = Chat(make_client("openai", model.url, asynchronous=True), model="m", tools=[], show=False)
        with pytest.raises(TypeError, match="await adescribe"):
            nbtools.describe([area], chat)
        (new,) = asyncio.run(adescribe([area], chat))
    assert new.description.startswith("The area of a rectangle.")


def test_describe_from_a_cassette(tmp_path):
    """Recorded once against the model, replayed offline: the same descriptions."""
    cassettes._OPEN.clear()
    path = tmp_path / "describe.json"
    model = RecordedModel([(200, openai_reply(text=json.dumps(ANSWER)))])
    with model:
        chat = Chat(make_client("openai", model.url), model="m", tools=[], show=False, record=path)
        recorded = nbtools.describe([area, move], chat)
    cassettes._OPEN.clear()
    replayed = nbtools.describe([area, move], Chat(nbtools.replay(path), model="m", tools=[], show=False))
    assert [(t.description, t.parameters) for t in replayed] == [(t.description, t.parameters) for t in recorded]
