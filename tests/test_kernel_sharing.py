"""Sharing a live kernel over MCP, in a real kernel (tests/kernels.py): shared variables read and
updated through a real MCP client, and a served call visible under the `%tools --serve` cell."""

from __future__ import annotations

import json
import threading
import time

import anyio
import pytest

DEADLINE = 60


def _serve(kernel) -> tuple[str, str, list]:
    outputs = kernel.run("%tools --serve --token tok-share")
    said = "".join(output.get("text", "") for output in outputs)
    assert "tok-share" not in json.dumps(outputs)  # nothing saved with the notebook carries the token
    url = said.split(" at ")[1].split()[0]
    return url, url.split(":")[2].split("/")[0], outputs


async def _session(url: str):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    return streamable_http_client(url, http_client=create_mcp_http_client(
        headers={"Authorization": "Bearer tok-share"})), ClientSession


def test_shared_variables_are_read_live_and_a_rebinding_cell_notifies_subscribers(nbtools_kernel):
    nbtools_kernel.run("""
        import nbtools
        table = {"rows": [1, 2, 3]}
        nbtools.share("table")
    """)
    url, port, _ = _serve(nbtools_kernel)
    updates: list[str] = []

    async def client() -> tuple[str, str]:
        transport, ClientSession = await _session(url)

        async def on_message(message):
            root = getattr(message, "root", message)
            if getattr(root, "method", None) == "notifications/resources/updated":
                updates.append(str(root.params.uri))

        async with transport as (read, write):
            async with ClientSession(read, write, message_handler=on_message) as session:
                await session.initialize()
                listed = [str(r.uri) for r in (await session.list_resources()).resources]
                assert listed == ["kernel://variables/table"]
                first = (await session.read_resource("kernel://variables/table")).contents[0].text
                await session.subscribe_resource("kernel://variables/table")
                # a cell rebinds the variable (run from another thread while this client waits)
                await anyio.to_thread.run_sync(lambda: nbtools_kernel.run("table = 'now a text'"))
                with anyio.fail_after(DEADLINE):
                    while not updates:
                        await anyio.sleep(0.05)
                second = (await session.read_resource("kernel://variables/table")).contents[0]
                return first, second.text

    try:
        first, second = anyio.run(client)
        assert json.loads(first) == {"rows": [1, 2, 3]}
        assert second == "now a text" and updates == ["kernel://variables/table"]
    finally:
        nbtools_kernel.run("import nbtools.mcp, nbtools.sharing\nnbtools.mcp.stop()\nnbtools.sharing.unshare('table')")


def test_a_served_call_is_shown_under_the_serving_cell_while_it_runs_and_after(nbtools_kernel):
    nbtools_kernel.run("""
        %%tool
        async def slow_echo(text: str) -> str:
            'Echo after a while.'
            import asyncio
            await asyncio.sleep(3)
            return text.upper()
    """)
    url, port, outputs = _serve(nbtools_kernel)
    assert any("application/vnd.jupyter.widget-view+json" in output.get("data", {}) for output in outputs)
    view = f"__import__('nbtools.mcp').mcp.served_at({port}).view.widget.value"
    results: list = []

    def call() -> None:
        import nbtools.mcp as nbmcp

        with nbmcp.connect(url, token="tok-share", timeout=DEADLINE) as remote:
            results.append(remote.call("slow_echo", {"text": "<b>hi</b>"}))

    caller = threading.Thread(target=call)
    caller.start()
    try:
        deadline = time.monotonic() + DEADLINE
        while "running" not in (shown := nbtools_kernel.value(view)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "slow_echo" in shown and "running" in shown
        assert "&lt;b&gt;hi&lt;/b&gt;" in shown and "<b>hi</b>" not in shown  # escaped
        caller.join(DEADLINE)
        assert results == ["<B>HI</B>"]
        after = nbtools_kernel.value(view)
        assert ">ok<" in after and "&lt;B&gt;HI&lt;/B&gt;" in after and "running" not in after
        records = nbtools_kernel.value(f"[(r.tool, r.status) for r in __import__('nbtools.mcp').mcp"
                                       f".served_at({port}).activity.records]")
        assert records == [["slow_echo", "ok"]]
    finally:
        caller.join(DEADLINE)
        nbtools_kernel.run("import nbtools.mcp\nnbtools.mcp.stop()")


CANCELLABLE = """
    %%tool
    import time
    from pathlib import Path
    from nbtools import ToolContext

    seen = {{}}

    def sleepy(ctx: ToolContext) -> str:
        'Sleep a long time in a plain function.'
        Path({started!r}).write_text('sleepy')
        time.sleep(600)
        return 'woke'

    def spins(ctx: ToolContext) -> str:
        'Spin in pure Python.'
        Path({started!r}).write_text('spins')
        end = time.monotonic() + 600
        while time.monotonic() < end:
            pass
        return 'done spinning'

    def patient(ctx: ToolContext) -> str:
        'Ignore interrupts; stop when ctx.cancelled says so.'
        Path({started!r}).write_text('patient')
        for _ in range(12000):
            try:  # wherever the one interrupt lands, it is swallowed
                if ctx.cancelled:
                    seen['patient'] = 'saw ctx.cancelled'
                    return 'stopped early'
                time.sleep(0.05)
            except KeyboardInterrupt:
                seen['interrupts'] = seen.get('interrupts', 0) + 1
        return 'never cancelled'

    async def waits(ctx: ToolContext) -> str:
        'Await a long time.'
        import asyncio
        Path({started!r}).write_text('waits')
        await asyncio.sleep(600)
        return 'woke'

    def add(a: int, b: int) -> int:
        'Add.'
        return a + b
"""


async def _cancel_then_add(url: str, name: str, protocol: str, started,
                          arguments: dict | None = None) -> tuple[bool, int]:
    """Call `name` (with `arguments`), cancel it once it has `started` (a file it writes), then call
    `add`: (whether the call was cancelled, what `add` answered)."""
    transport, ClientSession = await _session(url)

    async def cancel_then_add(session) -> tuple[bool, int]:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:
                group.start_soon(session.call_tool, name, arguments or {})
                with anyio.fail_after(DEADLINE):
                    while not started.exists():
                        await anyio.sleep(0.05)
                scope.cancel()  # the SDK sends notifications/cancelled for the call
        # the transport answers while the kernel is busy or not: the next call waits its turn
        with anyio.fail_after(DEADLINE):
            added = await session.call_tool("add", {"a": 2, "b": 3})
        return scope.cancelled_caught, added.structured_content["result"]

    if protocol == "2026-07-28":
        from mcp import Client

        async with Client(transport) as session:
            assert session.session.protocol_version == protocol
            return await cancel_then_add(session)
    async with transport as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await cancel_then_add(session)


@pytest.mark.parametrize("name, protocol", [("sleepy", "2025-11-25"), ("spins", "2025-11-25"),
                                            ("patient", "2025-11-25"), ("waits", "2025-11-25"),
                                            ("sleepy", "2026-07-28"), ("waits", "2026-07-28")])
def test_a_client_cancellation_stops_a_call_served_from_the_kernel(nbtools_kernel, tmp_path, name, protocol):
    """An MCP client (the SDK's, in this process) cancels a call while a plain function holds the
    kernel's main thread (or a coroutine awaits): the call ends, its record says cancelled, the kernel
    runs the next cell and the next served call. At 2025-11-25 the client sends
    `notifications/cancelled`; at 2026-07-28 (stateless) it closes the request's stream."""
    started = tmp_path / "started"
    nbtools_kernel.run(CANCELLABLE.format(started=str(started)))
    url, port, _ = _serve(nbtools_kernel)
    cancelled, added = anyio.run(_cancel_then_add, url, name, protocol, started)
    assert cancelled and added == 5
    records = nbtools_kernel.value(f"[(r.tool, r.status, r.elapsed) for r in __import__('nbtools.mcp').mcp"
                                   f".served_at({port}).activity.records]")
    assert [record[:2] for record in records] == [[name, "cancelled"], ["add", "ok"]]
    assert records[0][2] < DEADLINE  # it ended long before its 600 s
    assert nbtools_kernel.value("1 + 1") == 2
    if name == "patient":  # it swallowed the interrupt and stopped on ctx.cancelled
        assert nbtools_kernel.value("seen") == {"patient": "saw ctx.cancelled", "interrupts": 1}
    view = nbtools_kernel.value(f"__import__('nbtools.mcp').mcp.served_at({port}).view.widget.value")
    assert ">cancelled<" in view and "running" not in view
    nbtools_kernel.run("import nbtools.mcp\nnbtools.mcp.stop()")



# The model's code for a served `python()`: it says it started, then sleeps (or spins, or swallows
# every KeyboardInterrupt it can catch) far past any test's patience.
PYTHON_RUNS = {
    "sleeps": "import time\nfrom pathlib import Path\nPath({started!r}).write_text('python')\ntime.sleep(600)",
    "spins": ("import time\nfrom pathlib import Path\nPath({started!r}).write_text('python')\n"
              "end = time.monotonic() + 600\nwhile time.monotonic() < end:\n    pass"),
    "swallows": ("import time\nfrom pathlib import Path\nPath({started!r}).write_text('python')\n"
                 "for _ in range(600):\n    try:\n        time.sleep(1)\n    except KeyboardInterrupt:\n"
                 "        caught_by_the_code = True\n    except BaseException:\n        caught_by_the_code = True"),
    "awaits": "import asyncio\nfrom pathlib import Path\nPath({started!r}).write_text('python')\nawait asyncio.sleep(600)",
}


@pytest.mark.parametrize("tool, run, protocol", [
    ("python", "sleeps", "2025-11-25"), ("python", "spins", "2025-11-25"), ("python", "swallows", "2025-11-25"),
    ("python", "sleeps", "2026-07-28"), ("python_async", "sleeps", "2025-11-25"),
    ("python_async", "awaits", "2025-11-25"), ("python_async", "awaits", "2026-07-28")])
def test_a_client_cancellation_stops_a_served_python_run(nbtools_kernel, tmp_path, tool, run, protocol):
    """`python()` (or `python_async`) served from the kernel, its code holding the main thread or
    awaiting: the client's cancellation stops the run as a kernel interrupt would (the code cannot
    catch it), its record says cancelled, and the kernel runs the next call and the next cell.
    python() wraps the SIGINT handler for its run (to tell a person's interrupt from the code's own
    `raise KeyboardInterrupt`): the cancellation must still reach it through that wrapper."""
    started = tmp_path / "started"
    nbtools_kernel.run(CANCELLABLE.format(started="unused"))  # for `add`
    nbtools_kernel.run(f"import nbtools\nnbtools.registry.add(nbtools.{tool})")
    url, port, _ = _serve(nbtools_kernel)
    code = PYTHON_RUNS[run].format(started=str(started))
    cancelled, added = anyio.run(_cancel_then_add, url, tool, protocol, started, {"code": code})
    assert cancelled and added == 5
    records = nbtools_kernel.value(f"[(r.tool, r.status, r.elapsed) for r in __import__('nbtools.mcp').mcp"
                                   f".served_at({port}).activity.records]")
    assert [record[:2] for record in records] == [[tool, "cancelled"], ["add", "ok"]]
    assert records[0][2] < DEADLINE  # it ended long before its 600 s
    assert nbtools_kernel.value("1 + 1") == 2
    assert nbtools_kernel.value("'caught_by_the_code' in globals()") is False
    assert nbtools_kernel.value("nbtools.python('6 * 7')") == 42  # python() itself still runs
    view = nbtools_kernel.value(f"__import__('nbtools.mcp').mcp.served_at({port}).view.widget.value")
    assert ">cancelled<" in view and "running" not in view
    nbtools_kernel.run("import nbtools.mcp\nnbtools.mcp.stop()")

def test_a_call_on_the_kernels_main_thread_reaches_its_client_through_the_transports_thread(nbtools_kernel):
    """Progress and log notifications (from a plain function) and an elicitation (from a coroutine)
    made on the kernel's main thread travel through the transport's own thread to the client."""
    nbtools_kernel.run("""
        %%tool
        import threading
        from nbtools import ToolContext

        def counts(n: int, ctx: ToolContext) -> str:
            'Count with progress.'
            for i in range(n):
                ctx.progress(i + 1, n, f"step {i + 1}")
            ctx.log("counted")
            return threading.current_thread().name

        async def asks(ctx: ToolContext) -> str:
            'Ask the client for a name.'
            answer = await ctx.elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}})
            return f"{answer.action} {answer.content['name']} on {threading.current_thread().name}"
    """)
    url, port, _ = _serve(nbtools_kernel)
    progress: list = []
    logged: list = []

    async def client() -> tuple:
        import mcp_types as types

        transport, ClientSession = await _session(url)

        async def on_progress(done, total, message):
            progress.append((done, total, message))

        async def on_log(params):
            logged.append(params.data)

        async def elicited(context, params):
            return types.ElicitResult(action="accept", content={"name": "Ada"})

        async with transport as (read, write):
            async with ClientSession(read, write, logging_callback=on_log, elicitation_callback=elicited) as session:
                await session.initialize()
                with anyio.fail_after(DEADLINE):
                    counted = await session.call_tool("counts", {"n": 3}, progress_callback=on_progress)
                    asked = await session.call_tool("asks", {})
                return counted.structured_content["result"], asked.structured_content["result"]

    try:
        counted, asked = anyio.run(client)
        assert counted == "MainThread" and asked == "accept Ada on MainThread"
        assert progress == [(1.0, 3.0, "step 1"), (2.0, 3.0, "step 2"), (3.0, 3.0, "step 3")]
        assert logged == ["counted"]
    finally:
        nbtools_kernel.run("import nbtools.mcp\nnbtools.mcp.stop()")


def test_a_call_cancelled_while_a_cell_holds_the_kernel_never_runs(nbtools_kernel, tmp_path):
    """The call waits for the busy cell; its client cancels meanwhile: once the cell ends the call is
    not started, and its record says cancelled."""
    busy = tmp_path / "busy"
    nbtools_kernel.run("""
        %%tool
        ran = []

        def note(text: str) -> str:
            'Note a text.'
            ran.append(text)
            return text
    """)
    url, port, _ = _serve(nbtools_kernel)
    cell = threading.Thread(target=nbtools_kernel.run,
                            args=(f"import time, pathlib\npathlib.Path({str(busy)!r}).write_text('x')\ntime.sleep(4)",))

    async def client() -> bool:
        transport, ClientSession = await _session(url)
        async with transport as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                cell.start()
                with anyio.fail_after(DEADLINE):
                    while not busy.exists():
                        await anyio.sleep(0.05)
                with anyio.move_on_after(1) as scope:  # the cell still sleeps: the call waits, then is cancelled
                    await session.call_tool("note", {"text": "too late"})
                return scope.cancelled_caught

    try:
        assert anyio.run(client)
        cell.join(DEADLINE)
        records = nbtools_kernel.value(f"[(r.tool, r.status) for r in __import__('nbtools.mcp').mcp"
                                       f".served_at({port}).activity.records]")
        assert records == [["note", "cancelled"]]
        assert nbtools_kernel.value("ran") == []
    finally:
        cell.join(DEADLINE)
        nbtools_kernel.run("import nbtools.mcp\nnbtools.mcp.stop()")


BRIEF = """
    async def brief() -> str:
        'Await until released.'
        import asyncio
        Path({path!r}, 'began').write_text('x')
        while not Path({path!r}, 'release').exists():
            await asyncio.sleep(0.05)
        return 'released'
"""


def _call_brief(url: str, folder, results: list) -> threading.Thread:
    """Call `brief` from a thread (its result goes to `results`); returns once the call has begun."""
    def call() -> None:
        import nbtools.mcp as nbmcp

        with nbmcp.connect(url, token="tok-share", timeout=DEADLINE) as remote:
            results.append(remote.call("brief", {}))

    caller = threading.Thread(target=call)
    caller.start()
    deadline = time.monotonic() + DEADLINE
    while not (folder / "began").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return caller


def test_a_client_cancellation_stops_its_call_and_no_other(nbtools_kernel, tmp_path):
    """One call awaits, another (a plain function) holds the kernel; the second's client cancels it:
    only that one stops (the SIGINT is aimed at it), the awaiting one ends normally afterwards."""
    started = tmp_path / "started"
    nbtools_kernel.run(CANCELLABLE.format(started=str(started)) + BRIEF.format(path=str(tmp_path)))
    url, port, _ = _serve(nbtools_kernel)
    results: list = []
    caller = _call_brief(url, tmp_path, results)
    try:
        cancelled, added = anyio.run(_cancel_then_add, url, "sleepy", "2025-11-25", started)
        assert cancelled and added == 5
        (tmp_path / "release").write_text("go")
        caller.join(DEADLINE)
        assert results == ["released"]
        records = nbtools_kernel.value(f"sorted((r.tool, r.status) for r in __import__('nbtools.mcp').mcp"
                                       f".served_at({port}).activity.records)")
        assert records == [["add", "ok"], ["brief", "ok"], ["sleepy", "cancelled"]]
    finally:
        (tmp_path / "release").write_text("go")
        caller.join(DEADLINE)
        nbtools_kernel.run("import nbtools.mcp\nnbtools.mcp.stop()")


def test_a_served_call_ending_during_a_cell_leaves_sigint_to_the_kernel(nbtools_kernel, tmp_path):
    """An awaiting served call ends while a cell awaits: the cell keeps the kernel's SIGINT handler
    (its Interrupt button still works), and the next served plain function is still stopped by its
    client's cancellation (no handler of nbtools' left standing in the way)."""
    started, release = tmp_path / "started", tmp_path / "release"
    nbtools_kernel.run(CANCELLABLE.format(started=str(started)) + BRIEF.format(path=str(tmp_path)))
    url, port, _ = _serve(nbtools_kernel)
    results: list = []
    caller = _call_brief(url, tmp_path, results)
    try:
        nbtools_kernel.run(f"""
            import asyncio, signal
            import nbtools.mcp
            Path({str(release)!r}).write_text('go')  # the served call ends while this cell awaits
            while nbtools.mcp.served_at({port}).activity.running:
                await asyncio.sleep(0.05)
            handler_in_cell = signal.getsignal(signal.SIGINT)
        """)
        caller.join(DEADLINE)
        assert results == ["released"]
        # the kernel's own (an awaiting cell's: it cancels the cell), not SIG_IGN put back by nbtools
        assert nbtools_kernel.value("getattr(handler_in_cell, '__module__', None)").startswith("ipykernel")
        cancelled, added = anyio.run(_cancel_then_add, url, "sleepy", "2025-11-25", started)
        assert cancelled and added == 5
        records = nbtools_kernel.value(f"[(r.tool, r.status) for r in nbtools.mcp.served_at({port}).activity.records]")
        assert records == [["brief", "ok"], ["sleepy", "cancelled"], ["add", "ok"]]
    finally:
        caller.join(DEADLINE)
        nbtools_kernel.run("import nbtools.mcp\nnbtools.mcp.stop()")
