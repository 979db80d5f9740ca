"""`connect()` against real servers over HTTP: an nbtools server (`nbtools.mcp.start`), the SDK's own
`MCPServer` (streamable HTTP and legacy SSE) and a plain HTTP listener that records what it receives.

What it proves: both protocol revisions negotiated, tools found by name, the tool list followed on
`tools/list_changed`, a long call kept alive by its progress, one new session after a server
restart, SSE servers reached, and `$NBTOOLS_MCP_TOKEN` sent only to this user's nbtools servers on loopback.
"""

from __future__ import annotations

import asyncio
import http.server
import socket
import threading
import time
import warnings

import pytest
from mcp.server.mcpserver import Context, MCPServer

import nbtools
import nbtools.mcp as nbmcp
from nbtools import Registry, ToolCallError
from nbtools.mcp import Connection, connect

TOKEN = "test-token-for-connect"


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def append(text: str) -> str:
    """A tool named like a list method."""
    return text + "!"


async def steady(steps: int, pause: float, ctx: nbtools.ToolContext) -> str:
    """Works for steps * pause seconds, reporting progress after each step."""
    for step in range(steps):
        await asyncio.sleep(pause)  # async: the server's loop sends each notification as it comes
        ctx.progress(step + 1, steps)
    return "done"


async def silent(seconds: float) -> str:
    """Works without a word."""
    await asyncio.sleep(seconds)
    return "done"


def wait_until(condition, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def served():
    registry = Registry([add, append, steady, silent])
    server = nbmcp.start(registry, port=0, token=TOKEN)
    try:
        yield server
    finally:
        server.stop()


def test_a_connection_does_no_io_until_opened():
    conn = Connection("http://127.0.0.1:9/mcp", timeout=2)  # nothing listens there: nothing is tried
    assert list(conn) == [] and "not open" in repr(conn)
    with pytest.raises(ToolCallError, match=r"not open: call \.open\(\)"):
        conn.call("add", a=1)
    with pytest.raises(ConnectionError, match="could not use the MCP server http://127.0.0.1:9/mcp"):
        conn.open()
    with pytest.raises(ValueError, match="protocol must be one of auto, 2025-11-25, 2026-07-28"):
        Connection("http://127.0.0.1:9/mcp", protocol="2024-01-01")


@pytest.mark.parametrize("protocol", ["auto", "2025-11-25", "2026-07-28"])
def test_both_revisions_against_an_nbtools_server_and_tools_by_name(served, protocol):
    with connect(served.url, token=TOKEN, protocol=protocol, timeout=20) as conn:
        assert conn.protocol_version == ("2026-07-28" if protocol == "auto" else protocol)
        assert conn.server_name == "nbtools" and conn.transport == "streamable-http"
        assert conn["add"].fn(2, 3) == 5 and conn.add.fn(a=1, b=1) == 2
        assert conn.call("add", {"a": 1}, b=4) == 5 and conn.call("add", a=2, b=2) == 4
        # a tool named like a list method: the method wins as an attribute, the tool by key
        assert conn.append.__self__ is conn and conn["append"].fn("hi") == "hi!"
        assert "add" in conn and "nope" not in conn and "add" in dir(conn)
        with pytest.raises(KeyError, match="has no tool 'nope'; its tools: add, append, steady, silent"):
            conn["nope"]
        with pytest.raises(AttributeError, match="no attribute or tool 'nope'"):
            conn.nope
        assert conn[0].name == "add" and [tool.name for tool in conn[1:2]] == ["append"]


def test_both_revisions_against_the_sdks_mcpserver():
    app = MCPServer("sdk-server")

    @app.tool()
    def mul(a: int, b: int) -> int:
        return a * b

    with uvicorn_app(app.streamable_http_app()) as base:
        for protocol, version in (("auto", "2026-07-28"), ("2025-11-25", "2025-11-25")):
            with connect(base + "/mcp", protocol=protocol, timeout=20) as conn:
                assert (conn.protocol_version, conn.server_name) == (version, "sdk-server")
                assert conn.mul.fn(a=6, b=7) == 42


def test_a_legacy_sse_server_is_reached_after_the_streamable_post_is_refused():
    app = MCPServer("sse-server")

    @app.tool()
    def mul(a: int, b: int) -> int:
        return a * b

    with uvicorn_app(app.sse_app()) as base:
        with connect(base + "/sse", timeout=20) as conn:
            assert conn.transport == "sse" and conn.server_name == "sse-server"
            assert conn.call("mul", a=3, b=5) == 15


def test_the_tool_list_follows_list_changed_at_2026_through_a_listen_stream():
    app = MCPServer("growing")

    def sub(a: int, b: int) -> int:
        return a - b

    @app.tool()
    async def grow(ctx: Context) -> str:
        app.add_tool(sub)
        await ctx.notify_tools_changed()  # to the `subscriptions/listen` streams
        return "grown"

    with uvicorn_app(app.streamable_http_app()) as base:
        with connect(base + "/mcp", timeout=20) as conn:
            assert conn.protocol_version == "2026-07-28" and "sub" not in conn
            assert conn.grow.fn() == "grown"
            assert wait_until(lambda: "sub" in conn), f"no refresh after the listen event: {conn!r}"
            assert conn.refreshes >= 1 and conn.sub.fn(a=5, b=2) == 3


def test_the_tool_list_follows_list_changed(served):
    # nbtools' server at 2026-07-28 says `listChanged: false` in `server/discover` (issue 21, server side),
    # so the 2025-11-25 session is where it sends `notifications/tools/list_changed`
    with connect(served.url, token=TOKEN, protocol="2025-11-25", timeout=20) as conn:
        assert "append" in conn

        def shout(text: str) -> str:
            """Upper case."""
            return text.upper()

        served.registry.add(shout)
        assert wait_until(lambda: "shout" in conn), f"no refresh after list_changed: {conn!r}"
        assert conn.refreshes >= 1 and conn.shout.fn("hey") == "HEY"
        served.registry.remove("shout")
        assert wait_until(lambda: "shout" not in conn)


def test_progress_keeps_a_long_call_alive_and_silence_ends_one(served):
    arrived: list[float] = []
    with connect(served.url, token=TOKEN, timeout=1.5, on_progress=lambda event: arrived.append(time.monotonic())) as conn:
        # 3 s in all, a progress notification every 0.5 s: never 1.5 s of silence
        began = time.monotonic()
        assert conn.call("steady", steps=6, pause=0.5) == "done"
        assert len(arrived) == 6 and arrived[-1] - began > 1.5  # it did outlive one time-out
        with pytest.raises(ToolCallError, match=r"no answer or progress from .* for 1.5 s \(timeout=1.5\)"):
            conn.call("silent", seconds=4)


@pytest.fixture(scope="module")
def reporting():
    """The SDK's own MCPServer over HTTP, with tools that report progress in three ways."""
    app = MCPServer("reporting")

    @app.tool()
    async def advancing(steps: int, pause: float, ctx: Context) -> str:
        for step in range(steps):
            await asyncio.sleep(pause)
            await ctx.report_progress(step + 1, steps, message=f"step {step + 1}")
        return "done"

    @app.tool()
    async def stuck(steps: int, pause: float, ctx: Context) -> str:
        for _ in range(steps):  # the same value again and again: no progress (the spec: it MUST increase)
            await asyncio.sleep(pause)
            await ctx.report_progress(1, 10)
        return "done"

    with uvicorn_app(app.streamable_http_app()) as base:
        yield base + "/mcp"


@pytest.mark.parametrize("protocol", ["2025-11-25", "2026-07-28"])
def test_progress_restarts_the_silence_time_out_at_both_revisions_against_the_sdks_server(reporting, protocol):
    arrived: list[float] = []
    with connect(reporting, protocol=protocol, timeout=1.5,
                 on_progress=lambda event: arrived.append(event.progress)) as conn:
        assert conn.protocol_version == protocol
        began = time.monotonic()
        # 2.5 s in all, progress every 0.5 s: never 1.5 s of silence
        assert conn.call("advancing", steps=5, pause=0.5) == "done"
        assert arrived == [1, 2, 3, 4, 5] and time.monotonic() - began > 1.5
        with pytest.raises(ToolCallError, match=r"no answer or progress from .* for 1.5 s \(timeout=1.5\)"):
            conn.call("advancing", steps=1, pause=4)


@pytest.mark.parametrize("protocol", ["2025-11-25", "2026-07-28"])
def test_progress_that_never_advances_does_not_keep_a_call_alive(reporting, protocol):
    seen: list[float] = []
    with connect(reporting, protocol=protocol, timeout=1.5, on_progress=lambda event: seen.append(event.progress)) as conn:
        began = time.monotonic()
        with pytest.raises(ToolCallError, match=r"no answer or progress from .* for 1.5 s \(timeout=1.5\)"):
            conn.call("stuck", steps=30, pause=0.3)  # 9 s of "1 of 10" every 0.3 s
        assert time.monotonic() - began < 8 and seen and set(seen) == {1}  # shown, but not taken as progress


@pytest.mark.parametrize("protocol", ["2025-11-25", "2026-07-28"])
def test_max_time_caps_a_call_that_keeps_advancing(reporting, protocol):
    with pytest.raises(ValueError, match="max_time must be a positive number of seconds or None"):
        Connection(reporting, max_time=0)
    with connect(reporting, protocol=protocol, timeout=1.5, max_time=2.5, on_progress=lambda event: None) as conn:
        assert conn.max_time == 2.5
        began = time.monotonic()
        with pytest.raises(ToolCallError, match=r"took more than max_time=2.5 s in all"):
            conn.call("advancing", steps=40, pause=0.3)  # 12 s, advancing every 0.3 s
        assert time.monotonic() - began < 10
        assert conn.call("advancing", steps=2, pause=0.3) == "done"  # a call within the cap


@pytest.mark.parametrize("protocol", ["2025-11-25", "2026-07-28"])
def test_a_server_restart_costs_one_new_session_and_the_call_goes_through(protocol):
    registry = Registry([add])
    server = nbmcp.start(registry, port=0, token=TOKEN)
    port = server.port
    try:
        conn = connect(server.url, token=TOKEN, protocol=protocol, timeout=20)
        assert conn.add.fn(a=1, b=2) == 3
        server.stop()
        server = nbmcp.start(registry, port=port, token=TOKEN)  # the same address, a new process state
        assert conn.add.fn(a=2, b=3) == 5
        # 2025-11-25: "Session not found" -> one new session; 2026-07-28 has no session to lose
        assert conn.reconnects == (1 if protocol == "2025-11-25" else 0)
        assert conn.add.fn(a=3, b=3) == 6
        conn.close()
    finally:
        server.stop()


class Recorder(http.server.BaseHTTPRequestHandler):
    """Answers 404 to everything and records the headers it got."""

    seen: list[dict[str, str]] = []

    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        Recorder.seen.append({key.lower(): value for key, value in self.headers.items()})
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_DELETE = do_POST  # noqa: N815

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def recorder():
    Recorder.seen = []
    listener = http.server.ThreadingHTTPServer(("0.0.0.0", 0), Recorder)
    thread = threading.Thread(target=listener.serve_forever, daemon=True)
    thread.start()
    try:
        yield listener.server_address[1]
    finally:
        listener.shutdown()
        listener.server_close()


def test_the_environment_token_goes_to_this_users_nbtools_servers_only(recorder, monkeypatch):
    monkeypatch.setenv("NBTOOLS_MCP_TOKEN", "secret-from-env")
    alias = socket.gethostname()  # this machine under a name that is not a loopback address
    try:
        socket.getaddrinfo(alias, recorder)
    except OSError:
        pytest.skip(f"this machine's name {alias!r} does not resolve")
    assert alias not in ("localhost",) and not alias.startswith("127.")

    def headers_sent(url: str, **options) -> list[dict[str, str]]:
        Recorder.seen = []
        with pytest.raises(ConnectionError):
            connect(url, timeout=5, **options)
        assert Recorder.seen, f"nothing reached the listener at {url}"
        return Recorder.seen

    # neither another host nor a loopback listener nbtools did not start (see test_client_attacks.py)
    for url in (f"http://{alias}:{recorder}/mcp", f"http://127.0.0.1:{recorder}/mcp"):
        sent = headers_sent(url)
        assert all("authorization" not in headers and "secret-from-env" not in str(headers) for headers in sent)
    # what the person passes goes where they point it
    given = headers_sent(f"http://{alias}:{recorder}/mcp", token="given", headers={"X-Trace": "7"})
    assert {(headers.get("authorization"), headers.get("x-trace")) for headers in given} == {("Bearer given", "7")}
    # an nbtools server of this user on loopback gets it
    server = nbmcp.start(Registry([add]), port=0, token="secret-from-env")
    try:
        with connect(server.url, timeout=10) as conn:
            assert conn.add.fn(a=1, b=1) == 2
    finally:
        server.stop()


def test_a_401_elsewhere_says_the_environment_token_was_kept_back(served, monkeypatch):
    monkeypatch.setenv("NBTOOLS_MCP_TOKEN", TOKEN)
    alias = socket.gethostname()
    other = nbmcp.start(Registry([add]), host="0.0.0.0", port=0, token=TOKEN, allow_hosts=[alias])
    try:
        with pytest.raises(ConnectionError, match=rf"\$NBTOOLS_MCP_TOKEN is set but is sent only to an MCP server this "
                                                  rf"user's nbtools started on this machine .* and {alias}:{other.port} "
                                                  rf"is not one; pass connect\(url, token=...\)"):
            connect(f"http://{alias}:{other.port}/mcp", timeout=10)
        with connect(f"http://{alias}:{other.port}/mcp", token=TOKEN, timeout=10) as conn:
            assert conn.add.fn(a=1, b=1) == 2
    finally:
        other.stop()


class uvicorn_app:  # noqa: N801 - used as a context manager, like a function
    """Serve an ASGI app with uvicorn on a free loopback port in a thread; yields `http://127.0.0.1:PORT`."""

    def __init__(self, app) -> None:
        import uvicorn

        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen()
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        self.thread = threading.Thread(target=lambda: asyncio.run(self.server.serve(sockets=[self.listener])),
                                       daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        assert wait_until(lambda: self.server.started), "uvicorn did not start"
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def __exit__(self, *exc_info) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.listener.close()
        warnings.filterwarnings("ignore", category=ResourceWarning)
