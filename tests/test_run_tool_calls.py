"""Whole model replies in, tool-result messages out: all four providers, real SDK objects built offline."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import time

import pytest

from nbtools import Registry
from nbtools.call import arun_tool_calls, run_tool_calls
import providers
from providers import sdk_reply as sdk_object

THREADS: list[int] = []


def add(a: int, b: int = 1) -> int:
    """Add two integers."""
    THREADS.append(threading.get_ident())
    return a + b


def divide(a: float, b: float) -> float:
    """Divide."""
    return a / b


@dataclasses.dataclass
class Point:
    x: float
    y: float


def midpoint(p: Point, q: Point) -> Point:
    """The point halfway between two points."""
    return Point((p.x + q.x) / 2, (p.y + q.y) / 2)


async def nap(seconds: float, label: str) -> str:
    """Sleep, then say so."""
    await asyncio.sleep(seconds)
    return f"{label} slept"


def mul(a: int, b: int) -> int:
    return a * b


def registry(**settings) -> Registry:
    reg = Registry([add, divide, midpoint, nap], **settings)
    reg.add(mul, name="calc.mul")
    return reg


# The calls every reply below carries, in order: four that succeed (one a dotted tool under its
# provider-mapped name, one returning a dataclass), then four that fail in different ways.
CALLS = [
    ("add", {"a": 2, "b": 3}),
    ("calc__mul", {"a": 4, "b": 5}),
    ("midpoint", {"p": {"x": 0, "y": 0}, "q": {"x": 2, "y": 4}}),
    ("nap", {"seconds": 0.01, "label": "cat"}),
    ("divide", {"a": 1, "b": 0}),
    ("add", {"a": "2"}),
    ("missing_tool", {}),
    ("add.__globals__", {}),
]
SUCCESS_TEXT = ["5", "20", '{"x": 1.0, "y": 2.0}', "cat slept"]
SUCCESS_VALUE = [5, 20, {"x": 1.0, "y": 2.0}, "cat slept"]
ERROR_START = [
    "Error calling tool 'divide': the tool raised ZeroDivisionError: float division by zero",
    "Error calling tool 'add', argument 'a': expected an integer, got a string (\"2\")",
    "Error calling tool 'missing_tool': no tool named 'missing_tool'",
    "Error calling tool 'add.__globals__': no tool named 'add.__globals__'",
]


def check_texts(texts: list[str]) -> None:
    assert texts[:4] == SUCCESS_TEXT
    for text, start in zip(texts[4:], ERROR_START):
        assert text.startswith(start), text


# -- the four providers ------------------------------------------------------------------------------

def openai_completion() -> dict:
    calls = [{"id": f"call_{index}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
             for index, (name, args) in enumerate(CALLS)]
    return providers.openai_completion({"role": "assistant", "content": None, "tool_calls": calls})


def responses_response() -> dict:
    output = [{"type": "reasoning", "id": "rs_1", "summary": []}]
    output += [{"type": "function_call", "id": f"fc_{index}", "call_id": f"call_{index}", "name": name,
                "arguments": json.dumps(args), "status": "completed"} for index, (name, args) in enumerate(CALLS)]
    return providers.responses_response(output)


def anthropic_message() -> dict:
    content = [{"type": "text", "text": "Working on it."}]
    content += [{"type": "tool_use", "id": f"toolu_{index}", "name": name, "input": args}
                for index, (name, args) in enumerate(CALLS)]
    return providers.anthropic_message(content)


def gemini_response() -> dict:
    # Gemini accepts dots in names, so the dotted tool comes under its own name here
    parts = [{"functionCall": {"id": f"fc-{index}", "name": "calc.mul" if name == "calc__mul" else name,
                               "args": args}} for index, (name, args) in enumerate(CALLS)]
    return providers.gemini_response(parts)


REPLIES = {"openai": openai_completion, "responses": responses_response, "anthropic": anthropic_message,
           "gemini": gemini_response}


def check_answer(provider: str, answer) -> None:
    ids = [f"call_{index}" for index in range(len(CALLS))]
    if provider == "openai":
        assert [message["role"] for message in answer] == ["tool"] * len(CALLS)
        assert [message["tool_call_id"] for message in answer] == ids
        check_texts([message["content"] for message in answer])
    elif provider == "responses":
        assert [item["type"] for item in answer] == ["function_call_output"] * len(CALLS)
        assert [item["call_id"] for item in answer] == ids
        check_texts([item["output"] for item in answer])
    elif provider == "anthropic":
        assert answer["role"] == "user"
        blocks = answer["content"]
        assert [block["tool_use_id"] for block in blocks] == [f"toolu_{index}" for index in range(len(CALLS))]
        assert [block.get("is_error", False) for block in blocks] == [False] * 4 + [True] * 4
        check_texts([block["content"] for block in blocks])
    else:
        assert answer["role"] == "user"
        responses = [part["function_response"] for part in answer["parts"]]
        assert [item["id"] for item in responses] == [f"fc-{index}" for index in range(len(CALLS))]
        assert [item["response"].get("result") for item in responses[:4]] == SUCCESS_VALUE
        check_texts([json.dumps(item["response"]["result"]) if isinstance(item["response"]["result"], dict)
                     else str(item["response"]["result"]) for item in responses[:4]]
                    + [item["response"]["error"] for item in responses[4:]])
        json.dumps(answer)  # plain JSON, ready to send


@pytest.mark.parametrize("as_sdk", [False, True], ids=["dict", "sdk"])
@pytest.mark.parametrize("provider", list(REPLIES))
def test_run_tool_calls(provider, as_sdk):
    data = REPLIES[provider]()
    reply = sdk_object(provider, data) if as_sdk else data
    check_answer(provider, run_tool_calls(reply, ns=registry()))


@pytest.mark.parametrize("provider", list(REPLIES))
async def test_arun_tool_calls(provider):
    reply = sdk_object(provider, REPLIES[provider]())
    check_answer(provider, await arun_tool_calls(reply, ns=registry()))


@pytest.mark.parametrize("provider", list(REPLIES))
async def test_sync_run_tool_calls_inside_a_running_loop(provider):
    """A notebook cell has a running loop: the sync entry point must still work there."""
    check_answer(provider, run_tool_calls(sdk_object(provider, REPLIES[provider]()), ns=registry()))


def test_sdk_message_objects_and_content_lists():
    completion = sdk_object("openai", openai_completion())
    check_answer("openai", run_tool_calls(completion.choices[0].message, ns=registry()))
    message = sdk_object("anthropic", anthropic_message())
    check_answer("anthropic", run_tool_calls(message.content, ns=registry()))
    response = sdk_object("responses", responses_response())
    check_answer("responses", run_tool_calls(response.output, ns=registry()))


# -- concurrency and threads --------------------------------------------------------------------------

def parallel_naps() -> dict:
    calls = [{"type": "tool_use", "id": f"toolu_{index}", "name": "nap", "input": {"seconds": 0.3, "label": str(index)}}
             for index in range(3)]
    calls.append({"type": "tool_use", "id": "toolu_add", "name": "add", "input": {"a": 1}})
    return providers.anthropic_message(calls, "msg_2", (1, 1))


def naps_answered(answer) -> None:
    assert [block["content"] for block in answer["content"]] == ["0 slept", "1 slept", "2 slept", "2"]


def test_coroutine_tools_run_concurrently():
    THREADS.clear()
    started = time.perf_counter()
    naps_answered(run_tool_calls(parallel_naps(), ns=registry()))
    assert time.perf_counter() - started < 0.75  # three 0.3 s naps, together
    assert THREADS == [threading.get_ident()]  # sync tools run in the caller's thread


async def test_coroutine_tools_run_concurrently_async():
    started = time.perf_counter()
    naps_answered(await arun_tool_calls(parallel_naps(), ns=registry()))
    assert time.perf_counter() - started < 0.75


async def test_coroutine_tools_run_concurrently_from_a_running_loop():
    THREADS.clear()
    started = time.perf_counter()
    naps_answered(run_tool_calls(parallel_naps(), ns=registry()))
    assert time.perf_counter() - started < 0.75
    assert THREADS == [threading.get_ident()]


# -- refusals come back as results -------------------------------------------------------------------

def test_denied_calls_are_error_results():
    deleted = []

    def delete(path: str) -> str:
        deleted.append(path)
        return "gone"

    reg = Registry(approve=lambda tool, args: args["path"] != "/")
    reg.add(delete, hints="destructive")
    reply = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "delete", "arguments": '{"path": "/"}'}},
        {"id": "c2", "type": "function", "function": {"name": "delete", "arguments": '{"path": "/tmp/x"}'}},
    ]}
    answer = run_tool_calls(reply, ns=reg)
    assert answer[0]["content"] == "Error calling tool 'delete': refused: the user denied this call"
    assert answer[1]["content"] == "gone"
    assert deleted == ["/tmp/x"]


def test_reply_without_calls_and_default_namespace():
    assert run_tool_calls({"role": "assistant", "content": "Hello"}) == []
    assert run_tool_calls({"output": [{"type": "message", "role": "assistant", "content": []}]}) == []
    # Anthropic and Gemini refuse an empty user message: nothing to send is None (falsy, like []).
    assert run_tool_calls({"role": "assistant", "content": [{"type": "text", "text": "Hello"}]}) is None
    assert run_tool_calls({"role": "model", "parts": [{"text": "Hello"}]}) is None
    assert asyncio.run(arun_tool_calls({"role": "model", "parts": [{"text": "Hello"}]})) is None
    from nbtools.registry import registry as default

    default.add(add, name="test_run_add")
    try:
        reply = [{"type": "tool_use", "id": "t", "name": "test_run_add", "input": {"a": 1}}]
        assert run_tool_calls(reply)["content"][0]["content"] == "2"
    finally:
        default.remove("test_run_add")


def test_list_and_dict_namespaces():
    reply = [{"type": "function_call", "call_id": "c", "name": "plus", "arguments": '{"a": 1, "b": 2}'}]
    assert run_tool_calls(reply, ns={"plus": add})[0]["output"] == "3"
    reply[0]["name"] = "add"
    assert run_tool_calls(reply, ns=[add])[0]["output"] == "3"
    with pytest.raises(TypeError, match="__builtins__"):
        run_tool_calls(reply, ns=globals())


def test_a_generator_result_reaches_the_model_as_a_list():
    tools = Registry()

    def countdown(start: int):
        """Count down to one."""
        yield from range(start, 0, -1)

    def forever():
        """Never stops yielding."""
        number = 0
        while True:
            number += 1
            yield number

    tools.add(countdown)
    tools.add(forever)
    reply = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "countdown", "arguments": '{"start": 3}'}},
        {"id": "c2", "type": "function", "function": {"name": "forever", "arguments": "{}"}}]}
    counted, endless = run_tool_calls(reply, ns=tools)
    assert counted["content"] == "[3, 2, 1]"
    # An endless generator is read only as far as the result can show, then closed.
    assert endless["content"].startswith("[1, 2, 3, ")
    shown, marker = endless["content"].rsplit("\n", 1)
    assert len(shown) == tools.limits.max_result_chars  # reading stopped once the text was full
    read = shown.count(",") + 1
    assert marker == (f"[truncated: reading stopped after {read} items, at the result size limit of "
                      f"{tools.limits.max_result_chars} characters; the tool may have yielded more]")
    from nbtools.call import result_text

    assert result_text((letter for letter in "ab")) == '["a", "b"]'
    assert result_text((number for number in range(10)), max_chars=5) == (
        "[0, 1\n[truncated: reading stopped after 2 items, at the result size limit of 5 characters; "
        "the tool may have yielded more]")


def test_long_results_are_cut_for_the_model():
    def long_text() -> str:
        return "x" * 50

    from nbtools import Limits

    reg = Registry([long_text], limits=Limits(max_result_chars=10))
    reply = {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": "long_text"}}]}}]}
    answer = run_tool_calls(reply, ns=reg)
    result = answer["parts"][0]["function_response"]["response"]["result"]
    assert result == "x" * 8 + "\n[truncated: 40 of 50 characters not shown]\n" + "x" * 2


def test_a_long_result_keeps_its_end_where_the_error_stands():
    # python() prints much, then fails: the cut kept only the start, so the model never saw the
    # traceback (nor that the run failed at all)
    from nbtools import python

    code = "for i in range(30):\n    print(i, 'x' * 5000)\nundefined_name"
    reply = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
        "name": "python", "arguments": json.dumps({"code": code})}}]}
    text = run_tool_calls(reply, ns=Registry([python], approve=lambda *args, **kwargs: True))[0]["content"]
    assert text.startswith("0 xxxxx") and len(text) < 100_200
    assert text.endswith("NameError: name 'undefined_name' is not defined"), text[-300:]
    assert "\n[truncated: " in text and " characters not shown]\n" in text


def test_errors_name_the_tool_as_the_model_called_it():
    # the model knows `calc.mul` as `calc__mul` (OpenAI refuses dots): the error must use that name,
    # as ToolCallError.tool is documented to, or the model hears of a tool it was never shown
    reply = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "calc__mul", "arguments": '{"a": "2", "b": 3}'}},
    ]}
    content = run_tool_calls(reply, ns=registry())[0]["content"]
    assert content.startswith("Error calling tool 'calc__mul', argument 'a': expected an integer")
    from nbtools import ToolCallError, call_func

    with pytest.raises(ToolCallError) as caught:
        call_func("calc__mul", {"a": 2}, ns=registry())
    assert (caught.value.tool, caught.value.argument) == ("calc__mul", "b")
    with pytest.raises(ToolCallError) as caught:
        call_func("ratio", {"a": 1, "b": 0}, ns={"ratio": divide})  # a dict key naming another function
    assert caught.value.tool == "ratio" and isinstance(caught.value.__cause__, ZeroDivisionError)


# -- rich results: images, audio, resources ------------------------------------------------------------

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082")


def rich_registry() -> Registry:
    from nbtools.content import Audio, Image, Resource

    def chart(title: str) -> list:
        """A chart with a caption and its data."""
        return [f"Chart: {title}", Image(PNG), Resource("data://chart.csv", text="x,y\n1,2", mime="text/csv"),
                {"points": 1}]

    def picture():
        """Only a picture."""
        return Image(PNG, "image/png")

    def drawing():
        """A vector drawing Anthropic cannot take as an image block."""
        return Image(b"<svg/>", "image/svg+xml")

    def sound():
        """A sound."""
        return Audio(b"RIFF0000WAVE", "audio/wav")

    return Registry([chart, picture, drawing, sound])


RICH_CALLS = [("chart", {"title": "sales"}), ("picture", {}), ("drawing", {}), ("sound", {}),
              ("chart", {"title": 3})]
PNG_NOTE = f"[image produced: image/png, {len(PNG)} bytes]"
CHART_TEXT = f"Chart: sales\n{PNG_NOTE}\n[resource data://chart.csv]\nx,y\n1,2\n{{\"points\": 1}}"


def rich_reply(provider: str) -> dict:
    if provider == "openai":
        return providers.openai_completion({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{index}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for index, (name, args) in enumerate(RICH_CALLS)]})
    if provider == "responses":
        return providers.responses_response([
            {"type": "function_call", "id": f"fc{index}", "call_id": f"c{index}", "name": name,
             "arguments": json.dumps(args), "status": "completed"} for index, (name, args) in enumerate(RICH_CALLS)])
    if provider == "anthropic":
        return providers.anthropic_message([{"type": "tool_use", "id": f"c{index}", "name": name, "input": args}
                                            for index, (name, args) in enumerate(RICH_CALLS)])
    return providers.gemini_response([{"functionCall": {"id": f"c{index}", "name": name, "args": args}}
                                      for index, (name, args) in enumerate(RICH_CALLS)])


def test_rich_results_for_anthropic_carry_image_blocks():
    import base64

    answer = run_tool_calls(sdk_object("anthropic", rich_reply("anthropic")), ns=rich_registry())
    chart, picture, drawing, sound, failed = [block["content"] for block in answer["content"]]
    png_block = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                             "data": base64.b64encode(PNG).decode()}}
    # text and image blocks in the tool's order; consecutive text parts make one block
    assert chart == [{"type": "text", "text": "Chart: sales"}, png_block,
                     {"type": "text", "text": '[resource data://chart.csv]\nx,y\n1,2\n{"points": 1}'}]
    assert picture == [png_block]
    # what Anthropic cannot take as an image block is said in text
    assert drawing == "[image produced: image/svg+xml, 6 bytes]"
    assert sound == "[audio produced: audio/wav, 12 bytes]"
    assert failed.startswith("Error calling tool 'chart', argument 'title'")
    assert answer["content"][4]["is_error"] is True
    json.dumps(answer)


@pytest.mark.parametrize("provider", ["openai", "responses", "gemini"])
def test_rich_results_for_other_providers_are_text_saying_what_was_produced(provider):
    answer = run_tool_calls(sdk_object(provider, rich_reply(provider)), ns=rich_registry())
    if provider == "openai":
        texts = [message["content"] for message in answer]
    elif provider == "responses":
        texts = [item["output"] for item in answer]
    else:
        from google.genai.types import Content

        Content.model_validate(answer)  # the SDK takes it as it is
        responses = [part["function_response"]["response"] for part in answer["parts"]]
        texts = [response.get("result", response.get("error")) for response in responses]
    assert texts[:4] == [CHART_TEXT, PNG_NOTE, "[image produced: image/svg+xml, 6 bytes]",
                         "[audio produced: audio/wav, 12 bytes]"]
    assert texts[4].startswith("Error calling tool 'chart', argument 'title'")
    json.dumps(answer)


def test_pil_images_and_matplotlib_figures_become_image_blocks():
    import base64

    pil = pytest.importorskip("PIL.Image")
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    def thumbnail():
        """A red square."""
        return pil.new("RGB", (4, 4), "red")

    def plot():
        """A line plot, with a caption."""
        figure = Figure(figsize=(1, 1))
        figure.add_subplot().plot([0, 1], [1, 0])
        return ("A falling line", figure)

    reply = [{"type": "tool_use", "id": "t", "name": "thumbnail", "input": {}},
             {"type": "tool_use", "id": "p", "name": "plot", "input": {}}]
    thumb, line = [block["content"] for block in run_tool_calls(reply, ns=[thumbnail, plot])["content"]]
    for blocks in (thumb, line[1:]):
        assert [block["type"] for block in blocks] == ["image"]
        assert base64.b64decode(blocks[0]["source"]["data"]).startswith(b"\x89PNG")
    assert line[0] == {"type": "text", "text": "A falling line"}
    openai_reply = {"role": "assistant", "tool_calls": [
        {"id": "t", "type": "function", "function": {"name": "thumbnail", "arguments": "{}"}}]}
    assert run_tool_calls(openai_reply, ns=[thumbnail])[0]["content"].startswith("[image produced: image/png, ")


def test_rich_result_text_is_cut_at_the_limit():
    from nbtools import Limits
    from nbtools.content import Image

    def big():
        """Much text and a picture."""
        return ["y" * 50, Image(PNG)]

    reply = [{"type": "tool_use", "id": "b", "name": "big", "input": {}}]
    content = run_tool_calls(reply, ns=Registry([big], limits=Limits(max_result_chars=10)))["content"][0]["content"]
    assert content[0] == {"type": "text", "text": "y" * 8 + "\n[truncated: 40 of 50 characters not shown]\n" + "y" * 2}
    assert content[1]["type"] == "image"  # an image is not text: the character limit does not drop it


# A tool that changes the free-form values it was given (a dict, a list, `Any`) changes its own
# copies: the model's reply (kept in a Chat's history, an MCP activity log) and a Python caller's
# dict stay as they were sent.
def scribble(notes: dict, rows: list, extra: dict[str, list], anything: object = None) -> str:
    notes["inner"].append("tool")
    rows[0].append("tool")
    extra["a"].append("tool")
    if isinstance(anything, dict):
        anything["k"] = "tool"
    return "done"


def _sent() -> dict:
    return {"notes": {"inner": []}, "rows": [[]], "extra": {"a": []}, "anything": {"k": []}}


@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
def test_a_tool_changing_its_arguments_leaves_the_reply_as_sent(provider):
    registry = Registry([scribble], approve=lambda tool, args: True)
    registry.add(scribble, name="scribble_asked", hints="destructive")
    for name in ("scribble", "scribble_asked"):
        if provider == "anthropic":
            reply = providers.anthropic_message([{"type": "tool_use", "id": "t1", "name": name, "input": _sent()}])
            kept = reply["content"][0]["input"]
        else:
            reply = providers.gemini_response([{"functionCall": {"id": "f1", "name": name, "args": _sent()}}])
            kept = reply["candidates"][0]["content"]["parts"][0]["functionCall"]["args"]
        answer = run_tool_calls(reply, ns=registry)
        assert "done" in json.dumps(answer)
        assert kept == _sent()


def test_a_python_callers_dict_is_not_changed_by_the_tool():
    from nbtools.call import call_func

    sent = _sent()
    assert call_func("scribble", sent, ns=[scribble]) == "done"
    assert sent == _sent()
