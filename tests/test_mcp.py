"""nbtools as an MCP server, checked with the official `mcp` client (`ClientSession`).

Servers run as real subprocesses (`python -m nbtools.cli serve ...`) over stdio and over streamable
HTTP on 127.0.0.1 (a free port chosen here), in-process over memory streams, inside the test's own
event loop (`start`, as `%tools --serve` does in a kernel), and from `%tools --serve` in a real
kernel. Every server a test starts, it stops. `connect()`, the client side, is tested in
test_mcp_remote_tools.py and test_mcp_connect.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import anyio
import pytest
from sessions import session_for
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client as _sdk_streamable_http_client
from mcp.shared.exceptions import MCPError

import nbtools.mcp as nbmcp
from nbtools import Registry, ToolCallError, tool
from tests import mcp_example_tools as examples

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_TARGET = "tests/mcp_example_tools.py:example_tools"
DEADLINE = 30  # seconds: the most any one exchange with a server may take


@contextlib.asynccontextmanager
async def streamable_http_client(url):
    """The SDK's streamable HTTP client sending the session's bearer token (tests/conftest.py)."""
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with create_mcp_http_client(headers={"Authorization": f"Bearer {os.environ['NBTOOLS_MCP_TOKEN']}"}) as client:
        async with _sdk_streamable_http_client(url, http_client=client) as streams:
            yield streams


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen | None = None, timeout: float = DEADLINE) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise AssertionError(f"server exited early with {process.returncode}: {process.stderr.read()}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on port {port} after {timeout} s")


def stop_process(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@contextlib.contextmanager
def http_server_process(target: str = EXAMPLE_TARGET):
    """`nbtools serve TARGET --http PORT` as a subprocess; yields the URL; always stops it."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "nbtools.cli", "serve", target, "--http", str(port)],
                               cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(process)
        process.stderr.close()


def stdio_parameters(target: str = EXAMPLE_TARGET) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "nbtools.cli", "serve", target], cwd=str(ROOT))


def by_name(listed) -> dict:
    return {item.name: item.model_dump(by_alias=True, exclude_none=True, mode="json") for item in listed.tools}


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


@pytest.fixture(autouse=True)
def fresh_notes():
    saved = dict(examples.notes)
    yield
    examples.notes.clear()
    examples.notes.update(saved)


# ------------------------------------------------------------------------------------------------
# the whole conversation a client has with our server, run over every transport
# ------------------------------------------------------------------------------------------------
async def converse(session: ClientSession, *, remote_state: bool) -> None:
    initialized = await session.initialize()
    assert initialized.server_info.name.startswith("nbtools")
    assert initialized.capabilities.tools is not None

    listed = by_name(await session.list_tools())
    assert sorted(listed) == sorted(tool.name for tool in examples.example_tools)
    for original in examples.example_tools:
        # exactly what Tool.schema("mcp") says: input schema, output schema, annotations, description
        expected = original.schema("mcp")
        assert listed[original.name]["inputSchema"] == expected["inputSchema"]
        assert listed[original.name].get("outputSchema") == expected.get("outputSchema")
        assert listed[original.name].get("annotations") == expected.get("annotations")
        assert listed[original.name]["description"] == expected["description"]
    assert listed["add"]["annotations"] == {"readOnlyHint": True, "idempotentHint": True}
    assert listed["delete_note"]["annotations"] == {"destructiveHint": True}
    assert listed["greet"]["annotations"] == {"readOnlyHint": True, "openWorldHint": True}
    assert "annotations" not in listed["divide"]
    # a non-object return is wrapped; a dataclass is an object schema of its fields
    assert listed["add"]["outputSchema"] == {"$schema": "https://json-schema.org/draft/2020-12/schema",
                                            "type": "object", "properties": {"result": {"type": "integer"}},
                                            "required": ["result"]}
    stats_schema = listed["stats"]["outputSchema"]
    assert stats_schema["type"] == "object"
    assert set(stats_schema["properties"]) == {"count", "mean", "largest"}

    # every tool, called
    result = await session.call_tool("add", {"a": 2, "b": 3})
    assert not result.is_error and text_of(result) == "5" and result.structured_content == {"result": 5}
    result = await session.call_tool("add", {"a": 2})
    assert result.structured_content == {"result": 3}  # the function's own default applied
    result = await session.call_tool("stats", {"numbers": [1, 2, 6]})
    assert not result.is_error
    assert result.structured_content == {"count": 3, "mean": 3.0, "largest": 6.0}
    assert json.loads(text_of(result)) == {"count": 3, "mean": 3.0, "largest": 6.0}
    result = await session.call_tool("read_note", {"title": "todo"})
    assert text_of(result) == "write tests" and result.structured_content == {"result": "write tests"}
    result = await session.call_tool("greet", {"name": "Ada", "style": "loud"})
    assert result.structured_content == {"result": "HELLO, ADA!"}
    result = await session.call_tool("divide", {"numerator": 1, "denominator": 4})
    assert result.structured_content == {"result": 0.25}

    # a tool that raises: an error result naming the exception, not a protocol error
    result = await session.call_tool("divide", {"numerator": 1, "denominator": 0})
    assert result.is_error and "ZeroDivisionError" in text_of(result)
    result = await session.call_tool("read_note", {"title": "nope"})
    assert result.is_error and "no note called 'nope'" in text_of(result)

    # bad arguments: refused before the function runs, with the argument named and the schema shown
    result = await session.call_tool("add", {"a": "5"})
    assert result.is_error
    assert "'a'" in text_of(result) and "Parameters schema" in text_of(result)
    result = await session.call_tool("add", {"b": 1})
    assert result.is_error and "'a'" in text_of(result)
    result = await session.call_tool("add", {"a": 1, "c": 2})
    assert result.is_error and "'c'" in text_of(result)
    result = await session.call_tool("stats", {"numbers": "1, 2"})
    assert result.is_error and "numbers" in text_of(result)

    # an unknown tool: the JSON-RPC error -32602 (the MCP spec lists it under protocol errors)
    with pytest.raises(MCPError) as unknown:
        await session.call_tool("no_such_tool", {})
    assert unknown.value.error.code == -32602 and "no_such_tool" in unknown.value.error.message

    # ... and the server still answers
    result = await session.call_tool("add", {"a": 40, "b": 2})
    assert result.structured_content == {"result": 42}
    if remote_state:  # the destructive tool changed the server's state, seen by the next call
        result = await session.call_tool("delete_note", {"title": "shopping"})
        assert result.structured_content == {"result": True}
        result = await session.call_tool("read_note", {"title": "shopping"})
        assert result.is_error
    assert len((await session.list_tools()).tools) == len(listed)


async def test_stdio_server_subprocess():
    with anyio.fail_after(DEADLINE):
        async with stdio_client(stdio_parameters()) as (read_stream, write_stream):
            async with ClientSession(read_stream, write_stream) as session:
                await converse(session, remote_state=True)
    # leaving stdio_client stops the server process


async def test_streamable_http_server_subprocess():
    with http_server_process() as url:
        with anyio.fail_after(DEADLINE):
            async with streamable_http_client(url) as (read_stream, write_stream):
                async with ClientSession(read_stream, write_stream) as session:
                    await converse(session, remote_state=True)
            # a second client sees the state the first one left
            async with streamable_http_client(url) as (read_stream, write_stream):
                async with ClientSession(read_stream, write_stream) as session:
                    await session.initialize()
                    result = await session.call_tool("read_note", {"title": "shopping"})
                    assert result.is_error


async def test_streamable_http_refuses_a_foreign_host_header():
    """DNS-rebinding protection: a page on another origin cannot drive a localhost server."""
    import httpx2

    with http_server_process() as url:
        async with httpx2.AsyncClient() as client:
            response = await client.post(url, headers={"Host": "evil.example:80", "Content-Type": "application/json",
                                                       "Authorization": f"Bearer {os.environ['NBTOOLS_MCP_TOKEN']}",
                                                       "Accept": "application/json, text/event-stream"},
                                         content=b'{"jsonrpc":"2.0","id":1,"method":"ping"}', timeout=DEADLINE)
    assert response.status_code in (400, 403, 421)


# ------------------------------------------------------------------------------------------------
# in process: the same handlers over memory streams (fast; edge cases)
# ------------------------------------------------------------------------------------------------
async def test_in_process_conversation():
    with anyio.fail_after(DEADLINE):
        async with session_for(examples.example_tools) as session:
            await converse(session, remote_state=True)
    assert "shopping" not in examples.notes  # in process: the very same notes (restored by the fixture)


async def test_registry_is_read_live_and_disabled_tools_are_neither_listed_nor_called():
    local = Registry()

    @tool(registry=local)
    def first(x: int) -> int:
        return x

    with anyio.fail_after(DEADLINE):
        async with session_for(local) as session:
            assert [item.name for item in (await session.list_tools()).tools] == ["first"]

            @tool(registry=local)
            def second(x: int) -> int:
                return 2 * x

            assert [item.name for item in (await session.list_tools()).tools] == ["first", "second"]
            local.disable("first")
            assert [item.name for item in (await session.list_tools()).tools] == ["second"]
            with pytest.raises(MCPError) as unlisted:  # a disabled tool is unknown to clients: -32602
                await session.call_tool("first", {"x": 1})
            assert unlisted.value.error.code == -32602 and "first" in unlisted.value.error.message
            result = await session.call_tool("second", {"x": 4})
            assert result.structured_content == {"result": 8}


async def test_async_tools_interleave_at_their_awaits():
    """As the docs say: concurrent calls to an `async def` tool overlap instead of queueing."""
    local = Registry()
    inside = []

    @tool(registry=local)
    async def nap(seconds: float) -> int:
        inside.append(1)
        peak = len(inside)
        await asyncio.sleep(seconds)
        inside.pop()
        return peak

    with anyio.fail_after(DEADLINE):
        async with session_for(local) as session:
            results = await asyncio.gather(*(session.call_tool("nap", {"seconds": 0.3}) for _ in range(3)))
    assert max(result.structured_content["result"] for result in results) == 3


async def test_results_without_annotation_and_with_a_lying_annotation():
    local = Registry()

    @tool(registry=local)
    def untyped_dict(key: str):
        return {key: [1, 2]}

    @tool(registry=local)
    def untyped_text(key: str):
        return f"<{key}>"

    @tool(registry=local)
    def lies(n: int) -> int:
        return "not a number"  # type: ignore[return-value]

    with anyio.fail_after(DEADLINE):
        async with session_for(local) as session:
            listed = by_name(await session.list_tools())
            assert "outputSchema" not in listed["untyped_dict"]
            result = await session.call_tool("untyped_dict", {"key": "k"})
            assert result.structured_content == {"k": [1, 2]}  # an object: given as structured content
            result = await session.call_tool("untyped_text", {"key": "k"})
            assert result.structured_content is None and text_of(result) == "<k>"
            # the server checks what it promised, so the client gets an explanation, not a refusal
            result = await session.call_tool("lies", {"n": 1})
            assert result.is_error and "does not match its declared return type" in text_of(result)
            # ... and that the tool did run, with what it returned (it may have changed something)
            assert "it ran" in text_of(result) and text_of(result).endswith("It returned: not a number")


async def test_max_result_chars_cuts_the_text_and_structured_content_only_where_the_spec_allows():
    from nbtools import Limits

    local = Registry(limits=Limits(max_result_chars=40))

    @tool(registry=local)
    def numbers(count: int) -> list[int]:
        "The first `count` integers."
        return list(range(count))

    @tool(registry=local)
    def untyped_table(count: int):
        return {"rows": list(range(count))}

    @tool(registry=local)
    def not_a_number() -> float:
        return float("nan")

    with anyio.fail_after(DEADLINE):
        async with session_for(local) as session:
            # declared output: the client requires the whole structuredContent, which is over the
            # limit: the call is refused with an error that says so (issue 13: nothing over the limit
            # is sent); under the limit it is whole
            result = await session.call_tool("numbers", {"count": 100})
            assert result.is_error and result.structured_content is None
            assert "over this server's limit of 40" in text_of(result) and "max_result_chars" in text_of(result)
            result = await session.call_tool("numbers", {"count": 5})
            assert not result.is_error and result.structured_content == {"result": [0, 1, 2, 3, 4]}
            # no declared output: structuredContent is optional, and left out rather than sent uncut
            result = await session.call_tool("untyped_table", {"count": 100})
            assert not result.is_error and result.structured_content is None
            assert "[truncated: " in text_of(result)
            result = await session.call_tool("untyped_table", {"count": 3})
            assert result.structured_content == {"rows": [0, 1, 2]}
            # NaN has no JSON number: an error result that still says what the tool gave back
            result = await session.call_tool("not_a_number", {})
            assert result.is_error and text_of(result).endswith("It returned: NaN")


async def test_destructive_tools_follow_the_registry_approval():
    asked = []

    def approve(tool_, args):
        asked.append((tool_.name, dict(args)))
        return False

    guarded = Registry(examples.example_tools, approve=approve)
    with anyio.fail_after(DEADLINE):
        async with session_for(guarded) as session:
            result = await session.call_tool("delete_note", {"title": "todo"})
            assert result.is_error
    assert asked and asked[0][0] == "delete_note"
    assert "todo" in examples.notes  # refused: nothing deleted


async def test_keyboard_interrupt_during_a_call_is_an_error_result_and_serving_goes_on():
    local = Registry()

    @tool(registry=local)
    def interrupted() -> int:
        raise KeyboardInterrupt

    @tool(registry=local)
    def fine() -> int:
        return 1

    with anyio.fail_after(DEADLINE):
        async with session_for(local) as session:
            result = await session.call_tool("interrupted", {})
            assert result.is_error and "interrupted" in text_of(result)
            result = await session.call_tool("fine", {})
            assert result.structured_content == {"result": 1}


# ------------------------------------------------------------------------------------------------
# start(): a server inside this process (what `%tools --serve` uses)
# ------------------------------------------------------------------------------------------------
async def test_start_on_the_running_loop_serves_between_awaits_and_stops():
    port = free_port()
    server = nbmcp.start(examples.example_tools, port=port)
    try:
        assert not server.in_thread and server.url == f"http://127.0.0.1:{port}/mcp"
        assert server in nbmcp.running_servers()
        with anyio.fail_after(DEADLINE):
            async with streamable_http_client(server.url) as (read_stream, write_stream):
                async with ClientSession(read_stream, write_stream) as session:
                    await session.initialize()
                    result = await session.call_tool("add", {"a": 1, "b": 1})
                    assert result.structured_content == {"result": 2}
        # a blocking client call from this very thread would deadlock: refused with an explanation
        with pytest.raises(RuntimeError, match="runs its calls on this thread's event loop"):
            nbmcp.connect(server.url)
    finally:
        server.stop()
        await server.wait_closed()
    assert not server.running and server not in nbmcp.running_servers()
    with socket.socket() as probe:  # the port is free again
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", port))


async def test_start_then_stop_before_the_loop_ever_ran_it():
    server = nbmcp.start(examples.example_tools, port=0)
    assert server.port > 0
    nbmcp.stop(server.port)
    await server.wait_closed()
    assert not server.running


def port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


async def test_stop_while_the_server_is_still_starting_up_is_quiet(capfd, caplog):
    """Started from a running loop (calls go to this loop; the transport has its own thread), then
    `stop()` at once, most often while uvicorn is inside its startup: no traceback, the port is free."""
    server = nbmcp.start(examples.example_tools, port=0)
    server.stop()
    with anyio.fail_after(DEADLINE):
        await server.wait_closed()
    assert not server.running and port_is_free(server.port)
    errors = capfd.readouterr().err + caplog.text  # uvicorn logs through `logging`
    assert "Traceback" not in errors and "stopped:" not in errors, errors


def test_start_in_a_thread_then_stop_at_once_is_quiet_and_frees_the_port(capfd, caplog):
    for _ in range(3):  # uvicorn not started yet when stop() comes: it must not listen on a closed socket
        server = nbmcp.start(examples.example_tools, port=0)
        server.stop(timeout=DEADLINE)
        assert not server.running and not server._thread.is_alive()
        assert port_is_free(server.port)
    errors = capfd.readouterr().err + caplog.text
    assert "Traceback" not in errors and "Bad file descriptor" not in errors, errors


def test_stopping_a_server_with_a_connected_client_is_quick_and_quiet(capfd, caplog):
    """`%tools --stop` while an agent is connected: its open event stream must not hold the stop up
    (uvicorn's graceful wait) nor end in a logged traceback; the client learns the server has gone."""
    server = nbmcp.start(examples.example_tools, port=0)
    try:
        remote = nbmcp.connect(server.url, timeout=DEADLINE)
        add = next(item for item in remote if item.name == "add")
        assert add.fn(1, b=2) == 3
    finally:
        server.stop(timeout=DEADLINE)
    try:
        assert not server._thread.is_alive()
        with pytest.raises(ToolCallError, match="has it stopped"):
            add.fn(1, b=2)
    finally:
        remote.close()
    errors = capfd.readouterr().err + caplog.text
    # "graceful shutdown exceeded": uvicorn waited its 2 s for the stream, then cancelled it
    assert "Traceback" not in errors and "graceful shutdown exceeded" not in errors, errors
    assert "Session termination failed" not in errors, errors


def test_start_without_a_loop_uses_a_thread_and_connect_calls_it():
    server = nbmcp.start(examples.example_tools, port=0)
    try:
        assert server.in_thread
        with nbmcp.connect(server.url, timeout=DEADLINE) as remote:
            assert {item.name for item in remote} == set(examples.example_tools.names())
            add = next(item for item in remote if item.name == "add")
            assert add.fn(2, b=5) == 7
    finally:
        server.stop()
    assert not server.running


def test_stop_unknown_port_says_so():
    with pytest.raises(KeyError, match="no MCP server started by this process on port 1"):
        nbmcp.stop(1)


def test_serve_refuses_to_run_inside_an_event_loop():
    async def inside():
        nbmcp.serve(examples.example_tools)

    with pytest.raises(RuntimeError, match="already running"):
        asyncio.run(inside())


def test_serve_reports_a_busy_port():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(OSError, match=f"cannot serve MCP on 127.0.0.1:{port}"):
            nbmcp.serve(examples.example_tools, transport="http", port=port)


@pytest.mark.parametrize("port", [70000, -1, "8000"])
def test_start_and_serve_refuse_a_port_that_is_not_a_port(port):
    with pytest.raises(ValueError, match=f"cannot serve MCP on port {port!r}: a TCP port is an integer"):
        nbmcp.start(examples.example_tools, port=port)
    with pytest.raises(ValueError, match="a TCP port is an integer"):
        nbmcp.serve(examples.example_tools, transport="http", port=port)
    assert not nbmcp.running_servers()


def test_serve_rejects_an_unknown_transport():
    with pytest.raises(ValueError, match="'stdio' or 'http'"):
        nbmcp.serve(examples.example_tools, transport="sse")


# ------------------------------------------------------------------------------------------------
# without the mcp package, and the light import
# ------------------------------------------------------------------------------------------------
def test_importing_nbtools_mcp_without_the_mcp_package():
    """The package imports; what needs `mcp` says it is missing when called (as before the split)."""
    script = textwrap.dedent('''
        import importlib.abc, sys

        class NoMcp(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name.split(".")[0] in ("mcp", "mcp_types"):
                    raise ModuleNotFoundError(f"No module named {name!r}", name=name)

        sys.meta_path.insert(0, NoMcp())
        import nbtools.mcp as nbmcp
        from nbtools import Registry
        for call in (lambda: nbmcp.build_server(Registry()), lambda: nbmcp.start(Registry()),
                     lambda: nbmcp.serve(Registry()), lambda: nbmcp.connect("http://127.0.0.1:1/mcp")):
            try:
                call()
            except ModuleNotFoundError as error:
                print(error.name)
        print(sorted(name for name in sys.modules if name.split(".")[0] in ("mcp", "mcp_types", "uvicorn")))
    ''')
    finished = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                              timeout=DEADLINE)
    assert finished.stdout.split("\n")[:5] == ["mcp", "mcp", "mcp", "mcp", "[]"], finished


def test_importing_nbtools_does_not_import_mcp():
    code = "import sys, nbtools; print('mcp' in sys.modules, 'nbtools.mcp' in sys.modules)"
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.split() == ["False", "False"]


# ------------------------------------------------------------------------------------------------
# %tools --serve / --stop in a real kernel
# ------------------------------------------------------------------------------------------------
def test_tools_serve_magic_in_a_real_kernel(tmp_path, nbtools_kernel):
    """Calls run on the kernel's main thread, see its variables, and wait for a running cell."""
    kernel = nbtools_kernel.blocking()  # the session's shared kernel, registry empty (tests/conftest.py)

    def run(code: str) -> str:
        message_id = kernel.execute(code)
        texts = []
        while True:
            message = kernel.get_iopub_msg(timeout=DEADLINE)
            if message["parent_header"].get("msg_id") != message_id:
                continue
            kind, content = message["msg_type"], message["content"]
            if kind == "stream":
                texts.append(content["text"])
            elif kind == "error":
                texts.append(f"{content['ename']}: {content['evalue']}")
            elif kind == "execute_result":
                texts.append(content["data"]["text/plain"])
            elif kind == "status" and content["execution_state"] == "idle":
                return "".join(texts)

    port = free_port()
    # The client connects and says so; given a path, it then waits for that file before calling.
    # The cell below creates the file and runs on for 2 s, so the call is surely sent while the
    # cell still runs (the server, on the kernel's loop, answers nothing during a cell, not even
    # `initialize`: the client must be connected before the cell starts).
    client_code = textwrap.dedent(f"""
        import pathlib, sys, time, nbtools.mcp
        with nbtools.mcp.connect("http://127.0.0.1:{port}/mcp", timeout={DEADLINE}) as remote:
            print("connected", flush=True)
            started = time.monotonic()
            while len(sys.argv) > 1 and not pathlib.Path(sys.argv[1]).exists():
                if time.monotonic() - started > {DEADLINE}:
                    sys.exit("the cell never started")
                time.sleep(0.02)
            print(remote[0].fn(5))
    """)
    go = tmp_path / "cell-is-running"
    try:
        run("%load_ext nbtools")
        run("%%tool --hints read-only\n"
            "def where(x: int) -> dict:\n"
            "    'Which thread runs me, and a kernel variable.'\n"
            "    import threading\n"
            "    return {'thread': threading.current_thread().name, 'x': x, 'seen': counter}")
        run("counter = 1")
        assert f"MCP server for 1 tool at http://127.0.0.1:{port}/mcp" in run(f"%tools --serve {port}")
        # running the cell again (Run All) keeps the one server instead of failing on its own port
        assert f"Already serving 1 tool at http://127.0.0.1:{port}/mcp" in run(f"%tools --serve {port}")
        # the kernel is idle: the call runs at once, on the main thread, seeing `counter`
        idle = subprocess.run([sys.executable, "-c", client_code], capture_output=True, text=True,
                              timeout=DEADLINE, cwd=ROOT)
        assert idle.stdout.split() == ["connected", "{'thread':", "'MainThread',", "'x':", "5,", "'seen':",
                                       "1}"], idle.stderr
        # a call arriving while a cell runs waits for the cell to finish (had it run during the
        # cell, it would have seen 2)
        during = subprocess.Popen([sys.executable, "-c", client_code, str(go)], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, cwd=ROOT)
        try:
            assert during.stdout.readline().strip() == "connected", during.stderr.read()
            cell = run(f"import pathlib, time\ncounter = 2\npathlib.Path({str(go)!r}).touch()\n"
                       "time.sleep(2)\ncounter = 3")
            output, errors = during.communicate(timeout=DEADLINE)
        finally:
            if during.poll() is None:
                stop_process(during)
        assert cell == ""
        assert output.strip() == "{'thread': 'MainThread', 'x': 5, 'seen': 3}", errors
        assert "Stopped the MCP server" in run("%tools --stop")
        assert "No MCP server is running." in run("%tools --stop")
        assert "UsageError" in run("%tools --serve 70000")
        with socket.socket() as probe:  # the port is free again
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(("127.0.0.1", port))
    finally:
        run("import nbtools.mcp\nnbtools.mcp.stop()")  # the kernel stays for other tests: no server left


def test_tools_serve_again_reuses_the_running_server():
    from nbtools.magics import serve_magic

    first = serve_magic(examples.example_tools, None, False)
    try:
        [server] = nbmcp.running_servers()
        assert first.startswith(f"MCP server for 6 tools at {server.url}")
        for again in (None, 0, server.port):
            assert serve_magic(examples.example_tools, again, False) == \
                f"Already serving 6 tools at {server.url} (`%tools --stop` ends it).\n" \
                "Clients send the header `Authorization: Bearer <token>`; the token is " \
                f"`nbtools.mcp.served_at({server.port}).token` (not shown here: outputs are saved with the " \
                "notebook). To choose it, set $NBTOOLS_MCP_TOKEN before serving, or pass --token."
            assert nbmcp.served_at(server.port) is server
        assert nbmcp.running_servers() == [server]
        other = Registry(examples.example_tools)  # another registry: a server of its own
        assert serve_magic(other, None, False).startswith("MCP server for 6 tools at")
        assert len(nbmcp.running_servers()) == 2
    finally:
        assert serve_magic(examples.example_tools, None, True).startswith("Stopped the MCP servers at")
    assert not nbmcp.running_servers()


def test_unloading_the_extension_stops_servers_started_by_tools_serve():
    from IPython.testing.globalipapp import get_ipython

    shell = get_ipython()
    shell.run_line_magic("load_ext", "nbtools")
    try:
        server = nbmcp.start(examples.example_tools, port=0)
        assert server.running
        shell.run_line_magic("unload_ext", "nbtools")
        assert not server.running and server not in nbmcp.running_servers()
    finally:
        nbmcp.stop()
        from IPython.core.interactiveshell import InteractiveShell

        InteractiveShell.clear_instance()  # later tests must not find a shell in this process
