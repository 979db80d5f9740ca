"""A shared kernel under attack (issue 37): reading a shared variable, a resource or a prompt must
never hang the kernel for good. Each test has a kernel of its own (a child process with a memory
limit, `RLIMIT_AS`, set in its first cell), shut down after the test whatever happened, and every
wait has a deadline, so a regression fails a test instead of hanging the suite.

The promises: a preview is made under a deadline (`sharing.PREVIEW_SECONDS`) and cut to a size
(`sharing.MAX_TEXT`), JSON and tables included; the activity log says what a slow preview cost;
a resource read or prompt render holding the main thread is stopped by its client's cancellation
and by the person's Interrupt, exactly like a tool call.
"""

from __future__ import annotations

import sys
import threading
import time

import anyio
import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and rlimits")

MEMORY_LIMIT = 4 << 30  # bytes of address space for the kernel (its threads each reserve a stack)
DEADLINE = 60
TOKEN = "tok-share-37"


@pytest.fixture
def kernel(new_kernel):
    """A kernel of its own with nbtools loaded, its address space limited, serving MCP."""
    kernel = new_kernel()
    kernel.run(f"""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, ({MEMORY_LIMIT}, {MEMORY_LIMIT}))
        %load_ext nbtools
    """)
    return kernel


def _serve(kernel) -> tuple[str, str]:
    outputs = kernel.run(f"%tools --serve --token {TOKEN}")
    said = "".join(output.get("text", "") for output in outputs)
    url = said.split(" at ")[1].split()[0]
    return url, url.split(":")[2].split("/")[0]


def _client(url: str, work):
    """Run `await work(session)` with an initialized SDK ClientSession to `url`; its value."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def run():
        transport = streamable_http_client(url, http_client=create_mcp_http_client(
            headers={"Authorization": f"Bearer {TOKEN}"}))
        async with transport as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await work(session)

    return anyio.run(run)


def _records(kernel, port: str) -> list:
    return kernel.value(f"[(r.kind, r.tool, r.status, r.note) for r in "
                        f"__import__('nbtools.mcp').mcp.served_at({port}).activity.records]")


def test_a_preview_that_never_ends_is_stopped_at_its_deadline(kernel):
    # Before: the read ran `repr(endless)` on the kernel's main thread for good: no answer, no cell.
    kernel.run("""
        import nbtools

        class Endless:
            def __repr__(self):
                while True:
                    pass

        class Stubborn:  # swallows whatever stops it, and goes on
            def __repr__(self):
                while True:
                    try:
                        while True:
                            pass
                    except BaseException:
                        pass

        endless, stubborn = Endless(), Stubborn()
        nbtools.share("endless", "stubborn")
    """)
    url, port = _serve(kernel)

    async def read(session):
        texts = []
        for name in ("endless", "stubborn"):
            with anyio.fail_after(DEADLINE):
                texts.append((await session.read_resource(f"kernel://variables/{name}")).contents[0].text)
        return texts

    texts = _client(url, read)
    for name, text in zip(("Endless", "Stubborn"), texts):
        assert f"preview of this {name} stopped" in text and "deadline" in text, text
    assert kernel.value("1 + 1") == 2  # the kernel is free
    records = _records(kernel, port)
    assert [record[:3] for record in records] == [["resource", "kernel://variables/endless", "ok"],
                                                  ["resource", "kernel://variables/stubborn", "ok"]]
    # what the slow preview cost, in the activity log under the serving cell
    assert all(record[3] == "preview stopped at its 2 s deadline" for record in records), records
    view = kernel.value(f"__import__('nbtools.mcp').mcp.served_at({port}).view.widget.value")
    assert "<b>preview stopped at its 2 s deadline</b>" in view


def test_huge_values_are_previewed_cut_to_a_size(kernel):
    # Before: the whole value went out: 30 MB of JSON for a list, every cell of a table, a whole text.
    kernel.run("""
        import nbtools

        class Table:  # duck-typed like a DataFrame whose head is huge (wide, long cells)
            def head(self, n):
                return self

            def to_csv(self):
                return "a,b\\n" + "1,2\\n" * 5_000_000

        numbers = list(range(3_000_000))
        nested = {"rows": [{"text": "x" * 1000, "n": n} for n in range(50_000)]}
        table = Table()
        text = "y" * 20_000_000
        nbtools.share("numbers", "nested", "table", "text")
    """)
    url, port = _serve(kernel)
    limit = kernel.value("__import__('nbtools.sharing').sharing.MAX_TEXT")

    async def read(session):
        contents = {}
        for name in ("numbers", "nested", "table", "text"):
            with anyio.fail_after(DEADLINE):
                contents[name] = (await session.read_resource(f"kernel://variables/{name}")).contents[0]
        return contents

    contents = _client(url, read)
    for name, content in contents.items():
        assert len(content.text) <= limit + 200, (name, len(content.text))
        assert "[cut:" in content.text and "only its start is shown" in content.text, (name, content.text[-300:])
        # a cut JSON or CSV text is no longer JSON or CSV: it says so by its type
        assert content.mime_type == "text/plain", (name, content.mime_type)
    assert contents["numbers"].text.startswith("[0, 1, 2, 3")
    assert contents["nested"].text.startswith('{"rows": [{"text": "xxx')
    assert contents["table"].text.startswith("a,b\n1,2\n")
    assert kernel.value("1 + 1") == 2
    notes = [record[3] for record in _records(kernel, port)]
    assert all("preview cut to 100,000 characters" in note for note in notes), notes


SLOW_OFFERINGS = """
    import time
    from pathlib import Path
    import nbtools

    @nbtools.resource("spin://forever")
    def spin() -> str:
        Path({started!r}).write_text("spin")
        while True:
            pass

    @nbtools.prompt
    def sleepy() -> str:
        Path({started!r}).write_text("sleepy")
        time.sleep(600)
        return "woke"
"""


@pytest.mark.parametrize("what", ["resource", "prompt"])
def test_a_client_cancellation_stops_a_resource_read_or_prompt_render(kernel, tmp_path, what):
    # Before: only tool calls were stopped; a read or render held the main thread after its client left.
    started = tmp_path / "started"
    kernel.run(SLOW_OFFERINGS.format(started=str(started)))
    url, port = _serve(kernel)

    async def cancel(session):
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:
                if what == "resource":
                    group.start_soon(session.read_resource, "spin://forever")
                else:
                    group.start_soon(session.get_prompt, "sleepy", {})
                with anyio.fail_after(DEADLINE):
                    while not started.exists():
                        await anyio.sleep(0.05)
                scope.cancel()  # the SDK sends notifications/cancelled
        return scope.cancelled_caught

    assert _client(url, cancel)
    assert kernel.value("1 + 1") == 2  # the kernel is free (this cell waits for the main thread)
    records = _records(kernel, port)
    assert [record[0] for record in records] == [what] and records[0][2] == "cancelled", records


@pytest.mark.parametrize("what", ["resource", "prompt"])
def test_the_persons_interrupt_stops_a_resource_read_or_prompt_render(kernel, tmp_path, what):
    started = tmp_path / "started"
    kernel.run(SLOW_OFFERINGS.format(started=str(started)))
    url, port = _serve(kernel)
    errors: list = []

    async def read(session):
        from mcp.shared.exceptions import MCPError

        with anyio.fail_after(DEADLINE):
            try:
                if what == "resource":
                    await session.read_resource("spin://forever")
                else:
                    await session.get_prompt("sleepy", {})
            except MCPError as error:
                errors.append(str(error))

    caller = threading.Thread(target=_client, args=(url, read))
    caller.start()
    try:
        deadline = time.monotonic() + DEADLINE
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # well inside the function
        kernel.manager.interrupt_kernel()  # the notebook's Interrupt button
        caller.join(DEADLINE)
        assert not caller.is_alive(), "the read or render was not stopped by the interrupt"
        assert len(errors) == 1 and "was interrupted by the person running the server" in errors[0], errors
        assert kernel.value("1 + 1") == 2
        records = _records(kernel, port)
        assert [record[:3] for record in records] == [[what, records[0][1], "error"]], records
    finally:
        caller.join(DEADLINE)
