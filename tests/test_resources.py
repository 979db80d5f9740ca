"""`@resource`, `@prompt`, `completion/complete` and `share()` through the real SDK client (tests/sessions.py)."""

from __future__ import annotations

import asyncio
import base64
import enum
import json
from typing import Literal

import anyio
import mcp_types as types
import pytest
from sessions import session_for
from mcp.shared.exceptions import MCPError

from nbtools import Image, Registry, Resource, ToolContext, prompt, resource, share
from nbtools.resources import catalog_of
from nbtools.sharing import preview, unshare

pytestmark = pytest.mark.anyio

RED_PIXEL = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")


class Colour(enum.Enum):
    RED = "red"
    GREEN = "green"
    GREY = "grey"


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def served() -> Registry:
    reg = Registry()

    @resource("notes://today", registry=reg, mime_type="text/markdown")
    def today():
        "Today's notes."
        return "# today\nbuy milk"

    @resource("blob://pixel", registry=reg)
    def pixel():
        return RED_PIXEL

    @resource("data://settings", registry=reg)
    def settings():
        return {"depth": 3, "names": ["a", "b"]}

    @resource("items://{kind}/{number}", registry=reg)
    def item(kind: Literal["apple", "apricot", "banana"], number: int, ctx: ToolContext):
        "One item."
        ctx.log(f"reading {kind} {number}")
        return {"kind": kind, "number": number, "double": number * 2}

    @prompt(registry=reg)
    def review(code: str,  # the code to review
               colour: Colour = Colour.RED):
        "Review some code."
        return f"Review this ({colour.value}):\n{code}"

    @prompt("show", registry=reg, description="Shows a picture.",
            complete=lambda argument, value: [w for w in ("alpha", "beta", "alps") if w.startswith(value)])
    def show_picture(caption: str):
        return [{"role": "user", "content": Image(RED_PIXEL, "image/png")},
                {"role": "assistant", "content": f"I see {caption}"},
                {"role": "user", "content": Resource("doc://x", text="embedded", mime="text/plain")}]

    return reg


async def test_resources_are_listed_and_read_as_text_blob_and_json(served):
    async with session_for(served) as session:
        caps = session.initialized.capabilities
        assert caps.resources is not None and caps.resources.subscribe and caps.resources.list_changed
        assert caps.prompts is not None and caps.completions is not None
        listed = {str(r.uri): r for r in (await session.list_resources()).resources}
        assert sorted(listed) == ["blob://pixel", "data://settings", "notes://today"]
        assert listed["notes://today"].description == "Today's notes."
        assert listed["notes://today"].mime_type == "text/markdown"
        templates = (await session.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["items://{kind}/{number}"]

        text = (await session.read_resource("notes://today")).contents[0]
        assert (text.text, text.mime_type) == ("# today\nbuy milk", "text/markdown")
        blob = (await session.read_resource("blob://pixel")).contents[0]
        assert base64.b64decode(blob.blob) == RED_PIXEL and blob.mime_type == "application/octet-stream"
        data = (await session.read_resource("data://settings")).contents[0]
        assert data.mime_type == "application/json" and json.loads(data.text) == {"depth": 3, "names": ["a", "b"]}


async def test_the_activity_log_records_resource_reads_and_prompts_with_their_outcome(served):
    from mcp_types import Implementation

    from nbtools.mcp.activity import Activity, render

    activity = Activity()
    async with session_for(served, activity=activity,
                           client_info=Implementation(name="reader <x>", version="1")) as session:
        await session.read_resource("items://apple/2")
        await session.read_resource("blob://pixel")
        await session.get_prompt("review", {"code": "print(1)"})
        with pytest.raises(MCPError):
            await session.read_resource("items://cherry/1")
    rows = [(r.client, r.kind, r.tool, r.arguments, r.status) for r in activity.records]
    assert rows == [("reader <x>", "resource", "items://apple/2", None, "ok"),
                    ("reader <x>", "resource", "blob://pixel", None, "ok"),
                    ("reader <x>", "prompt", "review", {"code": "print(1)"}, "ok"),
                    ("reader <x>", "resource", "items://cherry/1", None, "error")]
    outcomes = [r.outcome for r in activity.records]
    assert json.loads(outcomes[0]) == {"kind": "apple", "number": 2, "double": 4}
    assert outcomes[1] == "[application/octet-stream]"
    assert outcomes[2] == "user: Review this (red):\nprint(1)"
    assert "kind" in outcomes[3] and "apple" in outcomes[3]
    assert all(r.ended is not None for r in activity.records)
    shown = render(activity)
    assert "resource <code>items://apple/2</code>" in shown and "prompt <code>review</code>" in shown
    assert "reader &lt;x&gt;" in shown and "reader <x>" not in shown  # escaped


class _SlowRepr:
    def __repr__(self):
        import time

        time.sleep(0.6)
        return "<slow>"


SLOW_VALUE = _SlowRepr()


async def test_the_activity_log_says_what_a_slow_preview_cost():
    from nbtools.mcp.activity import Activity, render

    reg = Registry()
    share("SLOW_VALUE", registry=reg)
    activity = Activity()
    async with session_for(reg, activity=activity) as session:
        read = await session.read_resource("kernel://variables/SLOW_VALUE")
    assert read.contents[0].text == "<slow>"
    note = activity.records[0].note
    assert note.startswith("preview took ") and float(note.split()[2]) >= 0.6, note
    assert f"<b>{note}</b>" in render(activity)


async def test_a_template_converts_its_variables_and_gets_a_context(served):
    logged = []

    async def on_log(params):
        logged.append(params.data)

    async with session_for(served, logging_callback=on_log) as session:
        read = (await session.read_resource("items://apple/21")).contents[0]
        assert json.loads(read.text) == {"kind": "apple", "number": 21, "double": 42}
        assert str(read.uri) == "items://apple/21"
        await anyio.sleep(0.05)
        assert logged == ["reading apple 21"]
        with pytest.raises(MCPError) as refused:
            await session.read_resource("items://cherry/1")
        assert "kind" in str(refused.value) and "apple" in str(refused.value)
        with pytest.raises(MCPError) as unknown:
            await session.read_resource("notes://tomorrow")
        assert unknown.value.error.code == -32002 and unknown.value.error.data == {"uri": "notes://tomorrow"}


async def test_prompts_are_listed_with_arguments_and_rendered(served):
    async with session_for(served) as session:
        prompts = {p.name: p for p in (await session.list_prompts()).prompts}
        assert sorted(prompts) == ["review", "show"]
        arguments = [(a.name, a.description, a.required) for a in prompts["review"].arguments]
        assert arguments == [("code", "the code to review", True), ("colour", None, False)]
        assert prompts["show"].description == "Shows a picture."

        got = await session.get_prompt("review", {"code": "x = 1", "colour": "green"})
        assert [(m.role, m.content.text) for m in got.messages] == [("user", "Review this (green):\nx = 1")]
        assert got.description == "Review some code."
        rich = await session.get_prompt("show", {"caption": "a dot"})
        assert [m.content.type for m in rich.messages] == ["image", "text", "resource"]
        assert rich.messages[1].role == "assistant" and rich.messages[2].content.resource.text == "embedded"
        with pytest.raises(MCPError) as bad:
            await session.get_prompt("review", {"code": "x", "colour": "purple"})
        assert "colour" in str(bad.value)
        with pytest.raises(MCPError) as missing:
            await session.get_prompt("nope", {})
        assert "Unknown prompt 'nope'" in str(missing.value)


async def test_completion_from_enum_literal_and_callback(served):
    async with session_for(served) as session:
        colour = await session.complete(types.PromptReference(type="ref/prompt", name="review"),
                                        {"name": "colour", "value": "gr"})
        assert colour.completion.values == ["green", "grey"] and colour.completion.total == 2
        kind = await session.complete(types.ResourceTemplateReference(type="ref/resource",
                                                                      uri="items://{kind}/{number}"),
                                      {"name": "kind", "value": "ap"})
        assert kind.completion.values == ["apple", "apricot"]
        called = await session.complete(types.PromptReference(type="ref/prompt", name="show"),
                                        {"name": "caption", "value": "al"})
        assert called.completion.values == ["alpha", "alps"]


async def test_a_new_prompt_is_announced_to_connected_clients():
    reg = Registry()
    seen: list[str] = []

    async def on_message(message):
        if isinstance(message, types.ServerNotification):
            seen.append(message.root.method if hasattr(message, "root") else message.method)

    async with session_for(reg, message_handler=on_message) as session:
        await session.list_prompts()
        prompt("late", registry=reg)(lambda: "hello")
        with anyio.fail_after(5):
            while "notifications/prompts/list_changed" not in seen:
                await anyio.sleep(0.01)
        assert [p.name for p in (await session.list_prompts()).prompts] == ["late"]


def test_resource_arguments_must_match_the_uri():
    with pytest.raises(TypeError, match="variables with no parameter"):
        resource("x://{a}", registry=Registry())(lambda: 1)
    with pytest.raises(TypeError, match="parameters not in the URI"):
        resource("x://fixed", registry=Registry())(lambda a: 1)


def test_previews_are_typed():
    class Table:  # duck-typed like a DataFrame
        def head(self, n):
            return self

        def to_csv(self):
            return "a,b\n1,2\n"

    assert preview("text") == "text" and preview(b"\x00") == b"\x00"
    assert preview(Table()) == Resource("table", text="a,b\n1,2\n", mime="text/csv")
    assert preview({"a": [1, 2]}) == Resource("json", text='{"a": [1, 2]}', mime="application/json")
    assert preview({1, 2}) == "{1, 2}"
    assert preview(Image(RED_PIXEL)) == Image(RED_PIXEL)


def test_previews_are_cut_to_a_size_and_made_under_a_deadline():
    import math
    import threading

    from nbtools.previews import MAX_BYTES, MAX_TEXT, TABLE_COLUMNS

    cut = preview(list(range(1_000_000)))  # JSON built piece by piece, cut at the limit
    assert cut.startswith("[0, 1, 2") and len(cut) < MAX_TEXT + 200
    assert cut.endswith("[cut: the value's JSON is longer than 100,000 characters; only its start is shown]")
    assert preview("é" * (MAX_TEXT + 1)).endswith("[cut: the value's text is longer than 100,000 characters; "
                                                  "only its start is shown]")
    # what JSON cannot carry is shown by its repr, as before: NaN, a set inside, a cycle, a huge int
    assert preview(math.nan) == "nan" and preview({"k": {1}}) == "{'k': {1}}"
    loop: list = [1]
    loop.append(loop)
    assert preview(loop) == "[1, [...]]"
    assert preview({1: None, True: 2.5})  == Resource("json", text='{"1": 2.5}', mime="application/json")
    assert preview([2 ** 20_000]).startswith("<repr of list failed: ValueError")

    class Wide:  # pandas-like: `iloc` picks the first columns
        columns = [f"c{i}" for i in range(1000)]

        def __init__(self, columns=None):
            self.shown = columns

        def head(self, n):
            return self

        @property
        def iloc(self):
            class Picker:
                def __getitem__(self, where):
                    rows, columns = where
                    return Wide(columns.stop)

            return Picker()

        def to_csv(self):
            return ",".join(self.columns[:self.shown]) + "\n"

    assert preview(Wide()).text.count(",") == TABLE_COLUMNS - 1
    assert preview(b"x" * (MAX_BYTES + 1)) == (f"[no preview: the bytes is {MAX_BYTES + 1:,} bytes, more than the "
                                               f"{MAX_BYTES:,} a preview sends]")

    class Endless:
        def __repr__(self):
            while True:
                pass

    stopped = "[no preview: the preview of this Endless stopped at its 0.2 s deadline"
    assert preview(Endless(), seconds=0.2).startswith(stopped)  # the main thread: SIGALRM
    seen: list = []
    worker = threading.Thread(target=lambda: seen.append(preview(Endless(), seconds=0.2)))
    worker.start()  # another thread (a server's loop off the main thread): the watchdog
    worker.join(30)
    assert not worker.is_alive() and seen[0].startswith(stopped)


SHARED_VALUE = {"rows": 3}


async def test_shared_variables_are_read_live_and_updates_reach_subscribers():
    reg = Registry()
    updated: list[str] = []

    async def on_message(message):
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/resources/updated":
            updated.append(str(root.params.uri))

    global SHARED_VALUE
    assert share("SHARED_VALUE", registry=reg) == ["kernel://variables/SHARED_VALUE"]
    try:
        async with session_for(reg, message_handler=on_message) as session:
            listed = [str(r.uri) for r in (await session.list_resources()).resources]
            assert listed == ["kernel://variables/SHARED_VALUE"]
            first = (await session.read_resource("kernel://variables/SHARED_VALUE")).contents[0]
            assert json.loads(first.text) == {"rows": 3} and first.mime_type == "application/json"
            await session.subscribe_resource("kernel://variables/SHARED_VALUE")
            SHARED_VALUE = "now text"
            catalog_of(reg).updated("kernel://variables/SHARED_VALUE")  # what the post_run_cell hook does
            with anyio.fail_after(5):
                while not updated:
                    await anyio.sleep(0.01)
            assert updated == ["kernel://variables/SHARED_VALUE"]
            second = (await session.read_resource("kernel://variables/SHARED_VALUE")).contents[0]
            assert second.text == "now text" and second.mime_type == "text/plain"
            with pytest.raises(MCPError):  # only what was shared is reachable
                await session.read_resource("kernel://variables/RED_PIXEL")
    finally:
        unshare("SHARED_VALUE", registry=reg)
    with pytest.raises(NameError, match="no variable 'NOT_DEFINED'"):
        share("NOT_DEFINED", registry=reg)


async def test_elicit_sample_and_roots_work_for_a_2026_client_through_input_required_rounds():
    """`mcp.Client` picks 2026-07-28 (stateless): no server-to-client requests; the tool's questions go
    out as an InputRequiredResult, the client answers, and the tool runs again with the answers."""
    from mcp import Client
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    import nbtools.mcp as nbmcp

    runs: list[str] = []
    reg = Registry()

    @reg.add
    async def interview(topic: str, ctx: ToolContext) -> str:
        "Asks a name, the model's opinion and the roots."
        runs.append(topic)
        name = await ctx.elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}},
                                key="name")
        opinion, roots = await asyncio.gather(ctx.sample(f"About {topic}?", max_tokens=20, key="opinion"),
                                              ctx.roots(key="roots"))
        return f"{name.content['name']} / {opinion} / {[root['uri'] for root in roots]}"

    @prompt(registry=reg)
    async def greet(ctx: ToolContext):
        answer = await ctx.elicit("Whom?", {"type": "object", "properties": {"who": {"type": "string"}}})
        return f"Greet {answer.content['who']}"

    async def elicited(context, params):
        return types.ElicitResult(action="accept", content={"name": "Ada", "who": "Bob"})

    async def sampled(context, params):
        return types.CreateMessageResult(role="assistant", model="m",
                                         content=types.TextContent(type="text", text="fine"))

    async def rooted(context):
        return types.ListRootsResult(roots=[types.Root(uri="file:///work")])

    async with Client(nbmcp.build_server(reg), elicitation_callback=elicited, sampling_callback=sampled,
                      list_roots_callback=rooted) as client:
        assert client.protocol_version in MODERN_PROTOCOL_VERSIONS
        result = await client.call_tool("interview", {"topic": "tea"})
        assert result.content[0].text == "Ada / fine / ['file:///work']", result
        assert runs == ["tea", "tea", "tea"]  # asked the name, then the two others together, then done
        got = await client.get_prompt("greet")
        assert got.messages[0].content.text == "Greet Bob"


def test_a_root_allof_and_if_then_else_are_kept_and_enforced_by_tool_from_schema():
    from nbtools import Tool, ToolCallError

    schema = {"type": "object", "properties": {"method": {"enum": ["phone", "email"]}, "phone": {"type": "string"},
                                               "email": {"type": "string"}},
              "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
              "if": {"properties": {"method": {"const": "phone"}}, "required": ["method"]},
              "then": {"required": ["phone"]}, "additionalProperties": False}
    contact = Tool.from_schema("contact", "Reach someone.", schema, lambda **arguments: sorted(arguments))
    listed = contact.schema("mcp")["inputSchema"]
    assert listed["allOf"] == schema["allOf"] and listed["if"] == schema["if"] and listed["then"] == schema["then"]
    assert contact.call({"email": "a@b"}) == ["email"]
    with pytest.raises(ToolCallError, match="allOf"):
        contact.call({})
    with pytest.raises(ToolCallError, match="'phone' is a required property"):
        contact.call({"method": "phone", "email": "a@b"})
    with pytest.raises(ToolCallError, match="argument 'fax'"):  # the object itself is still checked
        contact.call({"fax": "1"})


async def test_a_2026_client_hears_of_changes_on_a_listen_stream_and_discover_says_so():
    from mcp import Client
    from mcp.shared.subscriptions import ResourceUpdated

    import nbtools.mcp as nbmcp

    reg = Registry()
    value = {"n": 1}

    @resource("data://n", registry=reg)
    def n():
        return value

    async with Client(nbmcp.build_server(reg)) as client:
        caps = client.server_capabilities
        assert caps.tools.list_changed and caps.prompts.list_changed and caps.resources.list_changed
        assert caps.resources.subscribe
        async with client.listen(tools_list_changed=True, prompts_list_changed=True,
                                 resource_subscriptions=["data://n"]) as subscription:
            reg.add(lambda: 1, name="one")
            prompt("p", registry=reg)(lambda: "hi")
            catalog_of(reg).updated("data://n")
            seen = []
            with anyio.fail_after(10):
                async for event in subscription:
                    seen.append(event)
                    if len(seen) == 3:
                        break
        assert sorted(type(event).__name__ for event in seen) == [
            "PromptsListChanged", "ResourceUpdated", "ToolsListChanged"]
        assert [event.uri for event in seen if isinstance(event, ResourceUpdated)] == ["data://n"]
        assert [t.name for t in (await client.list_tools()).tools] == ["one"]
