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
