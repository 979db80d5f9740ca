"""The MCP server side of issue 13: ToolContext (progress, log, sample, elicit), rich results, live tool
lists, logging/setLevel, unknown tools, and plain tools in worker threads under `nbtools serve`."""

from __future__ import annotations

import asyncio
import threading
import time

import anyio
import mcp_types as types
import pytest
from sessions import session_for
from mcp.shared.exceptions import MCPError

import nbtools
import nbtools.mcp as nbmcp
from nbtools import Audio, Image, Registry, Resource, ResourceLink, Tool, ToolContext, tool
from nbtools.context import ContextUnavailable, NotebookContext, current_context

DEADLINE = 30
# mcp 2.3 warns that 2026-07-28 clients drop logging/setLevel; the 2025 protocol these tests speak has it
pytestmark = pytest.mark.filterwarnings("ignore:The logging capability is deprecated")
PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489")


# ------------------------------------------------------------------------------------------------
# ToolContext: injected, never in the schema, never sent by the model
# ------------------------------------------------------------------------------------------------
def test_a_tool_context_parameter_is_injected_and_never_in_the_schema():
    seen = []

    def work(n: int, *, ctx: ToolContext) -> int:
        seen.append(ctx)
        return n

    described = Tool.from_function(work)
    assert list(described.parameters["properties"]) == ["n"] and described.parameters["required"] == ["n"]
    for fmt in ("openai", "anthropic", "mcp", "gemini"):
        assert "ctx" not in str(described.schema(fmt))
    assert described.call({"n": 3}) == 3 and isinstance(seen[-1], ToolContext)
    with pytest.raises(nbtools.ToolCallError) as sent:  # the model cannot send it
        described.call({"n": 3, "ctx": "mine"})
    assert sent.value.argument == "ctx" and "unexpected argument" in sent.value.problem
    # Optional[ToolContext] too, and a positional-or-keyword parameter before the others
    def optional(ctx: ToolContext | None, text: str) -> str:
        return type(ctx).__name__ + text
    assert Tool.from_function(optional).call({"text": "!"}) == "ToolContext!"


def test_a_tool_context_parameter_before_varargs_is_refused_clearly():
    def bad(ctx: ToolContext, *items: int) -> int:
        return len(items)

    with pytest.raises(nbtools.SchemaError) as refused:
        Tool.from_function(bad)
    assert "ctx" in str(refused.value) and "keyword-only" in str(refused.value)


def test_the_quiet_context_logs_to_logging_and_refuses_sample_and_elicit(caplog):
    context = current_context()
    assert type(context) is ToolContext and not context.cancelled
    context.progress(1, 2, "half")  # nothing happens
    with caplog.at_level("INFO", logger="nbtools.tools"):
        context.log("hello", "warning")
    assert [(record.levelname, record.getMessage()) for record in caplog.records] == [("WARNING", "hello")]
    with pytest.raises(ValueError, match="unknown log level"):
        context.log("x", "loud")
    with pytest.raises(ContextUnavailable, match="sampling"):
        asyncio.run(context.sample("hi"))
    with pytest.raises(ContextUnavailable, match="elicitation"):
        asyncio.run(context.elicit("hi", {"type": "object"}))


def test_the_notebook_context_prints_log_lines(capsys):
    context = NotebookContext()
    context.log("step one")
    context.log("careful", "warning")
    assert capsys.readouterr().out == "step one\n[warning] careful\n"


# ------------------------------------------------------------------------------------------------
# Rich results -> content blocks
# ------------------------------------------------------------------------------------------------
def test_rich_results_become_content_blocks_in_order():
    result = nbmcp.success_result(None, ["Look:", Image(PNG), Audio(b"RIFF", "audio/wav"),
                                         Resource("test://r", text="{}", mime="application/json"),
                                         Resource("test://b", blob=b"\x00\x01", mime="application/octet-stream"),
                                         ResourceLink("test://l", "a link"), {"n": 1}], 10_000)
    blocks = [block.model_dump(by_alias=True, exclude_none=True, mode="json") for block in result.content]
    assert [block["type"] for block in blocks] == ["text", "image", "audio", "resource", "resource", "resource_link",
                                                   "text"]
    assert blocks[0]["text"] == "Look:"
    assert blocks[1] == {"type": "image", "data": Image(PNG).base64(), "mimeType": "image/png"}
    assert blocks[2]["mimeType"] == "audio/wav"
    assert blocks[3]["resource"] == {"uri": "test://r", "mimeType": "application/json", "text": "{}"}
    assert blocks[4]["resource"]["blob"] == "AAE="
    assert blocks[5]["uri"] == "test://l" and blocks[5]["name"] == "a link"
    assert blocks[6]["text"] == '{"n": 1}'
    assert result.structured_content is None and not result.is_error


def test_a_matplotlib_figure_becomes_a_png_image_block():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(1, 1))
    axes.plot([0, 1], [1, 0])
    result = nbmcp.success_result(None, figure, 1000)
    plt.close(figure)
    (block,) = result.content
    assert block.type == "image" and block.mime_type == "image/png"
    assert Image.from_base64(block.data).data.startswith(b"\x89PNG")


def test_a_tool_annotated_to_return_an_image_has_no_output_schema():
    def picture() -> Image:
        "A picture."
        return Image(PNG)

    described = Tool.from_function(picture)
    assert described.returns is None and "outputSchema" not in described.schema("mcp")


async def test_images_in_a_declared_list_come_with_the_structured_content_its_schema_requires():
    # `-> list` advertises an outputSchema, so a client rejects a result without structuredContent:
    # the image goes as a block for the model and, as JSON, in the structured value.
    local = Registry()

    @tool(registry=local)
    def gallery() -> list:
        "A caption and a picture."
        return ["Look:", Image(PNG)]

    @tool(registry=local)
    def counts() -> dict[str, int]:
        "Declares counts, returns a picture."
        return [Image(PNG)]  # type: ignore[return-value]

    async with session_for(local) as session:
        result = await session.call_tool("gallery", {})  # the SDK validates it against the outputSchema
        assert not result.is_error and [block.type for block in result.content] == ["text", "image"]
        assert result.structured_content == {"result": ["Look:", {"data": Image(PNG).base64(), "mime": "image/png"}]}
        wrong = await session.call_tool("counts", {})
    assert wrong.is_error and "does not match its declared return type" in wrong.content[0].text


# ------------------------------------------------------------------------------------------------
# Served: progress, log levels, sampling, elicitation, list_changed, unknown tools, threads
# ------------------------------------------------------------------------------------------------
def context_tools() -> Registry:
    local = Registry()

    @tool(registry=local)
    async def slow(ctx: ToolContext) -> str:
        "Reports progress and logs at every level it knows."
        for step in range(3):
            ctx.progress(step * 50, 100, f"step {step}")
            await asyncio.sleep(0.01)
        for level in ("debug", "info", "warning", "error"):
            ctx.log(f"a {level} line", level)
        return "done"

    @tool(registry=local)
    def plain(ctx: ToolContext) -> str:
        "A plain function reporting progress from wherever it runs."
        ctx.progress(1, 2)
        ctx.log("from a plain function")
        ctx.progress(2, 2)
        return threading.current_thread().name

    @tool(registry=local)
    async def ask(question: str, ctx: ToolContext) -> str:
        "Asks the client's model."
        return "model says: " + await ctx.sample(question, max_tokens=50)

    @tool(registry=local)
    async def form(ctx: ToolContext) -> str:
        "Asks the user."
        answer = await ctx.elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}})
        return f"{answer.action}: {answer.content}"

    return local


@pytest.mark.parametrize("threads", [False, True])
async def test_progress_and_logs_reach_the_client_before_the_result(threads):
    logs, progress = [], []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append((params.level, params.data))

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    with anyio.fail_after(DEADLINE):
        async with session_for(context_tools(), threads=threads, logging_callback=on_log) as session:
            assert session.initialized.capabilities.logging is not None
            result = await session.call_tool("slow", {}, progress_callback=on_progress)
            assert result.content[0].text == "done"
            # everything was sent before the result (no waiting afterwards)
            assert progress == [(0, 100, "step 0"), (50, 100, "step 1"), (100, 100, "step 2")]
            assert logs == [("info", "a info line"), ("warning", "a warning line"), ("error", "a error line")]
            assert await session.set_logging_level("error") is not None
            logs.clear()
            await session.call_tool("slow", {})  # no progress token: no progress notifications
            assert logs == [("error", "a error line")] and len(progress) == 3
            await session.set_logging_level("debug")
            logs.clear()
            progress.clear()
            result = await session.call_tool("plain", {}, progress_callback=on_progress)
            assert progress == [(1, 2, None), (2, 2, None)] and logs == [("info", "from a plain function")]
            on_main = result.content[0].text == threading.current_thread().name
            assert on_main is not threads  # a worker thread only when serving with threads


async def test_sampling_and_elicitation_when_the_client_offers_them():
    async def sampling(context, params: types.CreateMessageRequestParams):
        assert params.max_tokens == 50 and params.messages[0].content.text == "2+2?"
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="4"),
                                         model="test")

    async def elicitation(context, params):
        assert params.message == "Your name?"
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    with anyio.fail_after(DEADLINE):
        async with session_for(context_tools(), sampling_callback=sampling,
                               elicitation_callback=elicitation) as session:
            assert (await session.call_tool("ask", {"question": "2+2?"})).content[0].text == "model says: 4"
            assert (await session.call_tool("form", {})).content[0].text == "accept: {'name': 'Ada'}"


async def test_sampling_and_elicitation_without_the_capability_fail_clearly():
    with anyio.fail_after(DEADLINE):
        async with session_for(context_tools()) as session:
            result = await session.call_tool("ask", {"question": "2+2?"})
            assert result.is_error and "does not offer sampling" in result.content[0].text
            result = await session.call_tool("form", {})
            assert result.is_error and "does not offer elicitation" in result.content[0].text


async def test_clients_hear_when_the_tool_list_changes():
    local = Registry()
    heard = []

    @tool(registry=local)
    def first() -> int:
        "One."
        return 1

    async def on_message(message) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            heard.append(message)

    with anyio.fail_after(DEADLINE):
        async with session_for(local, message_handler=on_message) as session:
            assert session.initialized.capabilities.tools.list_changed is True
            await session.list_tools()

            def second() -> int:
                "Two."
                return 2

            local.add(second)  # several changes in a row: at least one notification
            local.disable("first")
            for _ in range(100):
                if heard:
                    break
                await anyio.sleep(0.02)
            assert heard, "no notifications/tools/list_changed"
            assert [item.name for item in (await session.list_tools()).tools] == ["second"]
            count = len(heard)
            # a change made from another thread reaches the client too
            await anyio.to_thread.run_sync(lambda: local.enable("first"))
            for _ in range(100):
                if len(heard) > count:
                    break
                await anyio.sleep(0.02)
            assert len(heard) > count


def test_registry_change_listeners_and_unsubscribe():
    local = Registry()
    calls = []
    stop = local.on_change(lambda: calls.append(len(local)))
    local.add(lambda: 1, name="one")
    local.disable("one")
    local.disable("one")  # no change: no call
    local.enable("one")
    local.remove("one")
    stop()
    local.add(lambda: 2, name="two")
    assert calls == [1, 1, 1, 0]
    local.on_change(lambda: 1 / 0)
    with pytest.warns(UserWarning, match="ZeroDivisionError"):
        local.add(lambda: 3, name="three")
    assert "three" in local  # the change itself stands


async def test_an_unknown_tool_is_a_protocol_error():
    with anyio.fail_after(DEADLINE):
        async with session_for(context_tools()) as session:
            with pytest.raises(MCPError) as unknown:
                await session.call_tool("nope", {})
            assert unknown.value.error.code == -32602 and "'nope'" in unknown.value.error.message


async def test_plain_tools_run_side_by_side_with_threads():
    # Side by side, shown without timing: each call waits until all five have started, which only
    # happens when they run at once (one after another, the first waits alone and the barrier breaks).
    local = Registry()
    together = threading.Barrier(5, timeout=10)

    @tool(registry=local)
    def meet() -> str:
        "Waits until five calls are running at once."
        together.wait()
        return "ok"

    with anyio.fail_after(DEADLINE):
        async with session_for(local, threads=True) as session:
            results = await asyncio.gather(*(session.call_tool("meet", {}) for _ in range(5)))
    assert [result.content[0].text for result in results] == ["ok"] * 5, [result.content for result in results]


async def test_a_cancelled_plain_call_is_marked_cancelled_and_the_server_keeps_serving():
    local = Registry()
    marks = []

    @tool(registry=local)
    def long(ctx: ToolContext) -> str:
        "Waits until cancelled (or 5 s)."
        for _ in range(250):
            if ctx.cancelled:
                marks.append("saw cancel")
                return "stopped"
            time.sleep(0.02)
        return "finished"

    @tool(registry=local)
    def quick() -> str:
        "Answers at once."
        return "quick"

    with anyio.fail_after(DEADLINE):
        async with session_for(local, threads=True) as session:
            with anyio.move_on_after(0.3):  # the client gives up: it sends notifications/cancelled
                await session.call_tool("long", {})
            assert (await session.call_tool("quick", {})).content[0].text == "quick"
            for _ in range(100):
                if marks:
                    break
                await anyio.sleep(0.02)
    assert marks == ["saw cancel"]


def test_in_a_kernel_progress_is_a_progress_bar_and_log_lines_are_cell_output(nbtools_kernel):
    from kernels import stdout_of

    nbtools_kernel.run('import nbtools, nbtools.context\nfrom nbtools import ToolContext')
    nbtools_kernel.run('''
        %%tool
        def crunch(n: int, *, ctx: ToolContext) -> int:
            "Counts to n, reporting progress."
            for step in range(n + 1):
                ctx.progress(step, n, "counting")
            ctx.log("counted")
            ctx.log("that was easy", "notice")
            return n
    ''')
    outputs = nbtools_kernel.run('print(type(nbtools.context.current_context()).__name__)\nnbtools.call_func("crunch", {"n": 4})')
    widgets = [output for output in outputs if output.output_type == "display_data"
               and "application/vnd.jupyter.widget-view+json" in output.data]
    assert len(widgets) == 1  # one bar, updated in place
    assert stdout_of(outputs) == "NotebookContext\ncounted\n[notice] that was easy\n"
    assert [output.data["text/plain"] for output in outputs if output.output_type == "execute_result"] == ["4"]


def test_asking_the_client_after_its_session_ended_says_so_in_one_line():
    # a call's context outliving its session (a detached tool thread asking after the client left or
    # the server stopped): the transport's loop is closed; a clear ContextUnavailable, not asyncio's
    # "Event loop is closed" with a "coroutine was never awaited" warning
    import warnings
    from types import SimpleNamespace

    from nbtools.mcp.served import ServedContext

    session = SimpleNamespace(client_capabilities=SimpleNamespace(sampling=object(), elicitation=object()))
    request = SimpleNamespace(session=session, request_id=7, meta=None, protocol_version="2025-06-18")
    gone = asyncio.new_event_loop()
    gone.close()
    context = ServedContext(request, gone)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a coroutine left unawaited would warn
        for ask in (lambda: context.sample("hi"), lambda: context.elicit("name?", {"type": "object"})):
            with pytest.raises(ContextUnavailable, match="session of this call has ended") as ended:
                asyncio.run(ask())
            assert "Event loop is closed" not in str(ended.value)


def test_a_question_whose_transport_loop_stops_ends_with_context_unavailable():
    # the transport's loop stops after the question was scheduled (the server stopping while a tool on
    # another thread asks): nothing will ever answer, so the tool's await must end, not hang
    import threading
    from types import SimpleNamespace

    from nbtools.mcp.served import ServedContext

    transport = asyncio.new_event_loop()
    runner = threading.Thread(target=transport.run_forever, daemon=True)
    runner.start()

    async def elicit_form(*args):  # the question goes out; then the server stops its loop
        transport.stop()
        await asyncio.Event().wait()

    session = SimpleNamespace(client_capabilities=SimpleNamespace(elicitation=object()), elicit_form=elicit_form)
    request = SimpleNamespace(session=session, request_id=7, meta=None, protocol_version="2025-06-18")
    context = ServedContext(request, transport)

    async def ask():
        return await asyncio.wait_for(context.elicit("name?", {"type": "object"}), 20)

    try:
        with pytest.raises(ContextUnavailable, match="session of this call has ended"):
            asyncio.run(ask())
    finally:
        runner.join(5)
        assert not transport.is_running()
        transport.close()
