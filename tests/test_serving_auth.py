"""Issue 10, over real sockets: every HTTP server requires its bearer token and checks Host/Origin
for every bind address; a tool's BaseException never ends a server or the kernel; a kernel
Interrupt ends a call served by `%tools --serve`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import httpx2
import pytest

import nbtools.mcp as nbmcp
from nbtools import Registry, ToolCallError

ROOT = Path(__file__).resolve().parent.parent
DEADLINE = 30
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def post(url: str, body: dict, **headers: str) -> httpx2.Response:
    return httpx2.post(url, headers={**JSON_HEADERS, **headers}, content=json.dumps(body).encode(), timeout=DEADLINE)


def recording_registry() -> tuple[Registry, list]:
    ran: list = []

    def touch(x: int) -> int:
        """Record that I ran."""
        ran.append(x)
        return x

    return Registry([touch]), ran


def call_directly(url: str, token: str | None) -> int:
    """initialize then tools/call with raw HTTP (no SDK client): the status of the call."""
    auth = {"Authorization": f"Bearer {token}"} if token is not None else {}
    first = post(url, INIT, **auth)
    session = first.headers.get("mcp-session-id", "none")
    called = post(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                        "params": {"name": "touch", "arguments": {"x": 1}}}, **auth,
                  **{"mcp-session-id": session})
    return first.status_code if first.status_code != 200 else called.status_code


# -- the token -------------------------------------------------------------------------------------
def test_start_requires_the_token_and_never_runs_the_tool_without_it():
    reg, ran = recording_registry()
    server = nbmcp.start(reg, token="right-token-123")
    try:
        assert server.token == "right-token-123"
        for token in (None, "wrong-token-123", "right-token-12", "right-token-1234", "x"):
            assert call_directly(server.url, token) == 401
            response = post(server.url, INIT, **({"Authorization": f"Bearer {token}"} if token is not None else {}))
            assert response.status_code == 401 and "Bearer" in response.headers["www-authenticate"]
        assert post(server.url, INIT, Authorization="Basic cmlnaHQtdG9rZW4tMTIz").status_code == 401
        with pytest.raises(ConnectionError, match="401.*refused"):
            nbmcp.connect(server.url, token="wrong-token-123", timeout=DEADLINE)
        assert ran == []
        with nbmcp.connect(server.url, token="right-token-123", timeout=DEADLINE) as remote:
            assert remote[0].call({"x": 5}) == 5
        with nbmcp.connect(server.url, headers={"Authorization": "Bearer right-token-123"}, timeout=DEADLINE) as remote:
            assert remote[0].call({"x": 6}) == 6
        assert ran == [5, 6]
    finally:
        server.stop()


def test_the_default_token_is_random_or_from_the_environment(monkeypatch):
    reg, _ = recording_registry()
    monkeypatch.delenv("NBTOOLS_MCP_TOKEN", raising=False)
    first, second = nbmcp.start(reg), nbmcp.start(reg)
    try:
        assert first.token != second.token and len(first.token) >= 22  # >= 128 bits, url-safe
        with pytest.raises(ConnectionError, match="wants a bearer token"):
            nbmcp.connect(first.url, timeout=DEADLINE)
        monkeypatch.setenv("NBTOOLS_MCP_TOKEN", first.token)  # connect reads it
        with nbmcp.connect(first.url, timeout=DEADLINE) as remote:
            assert remote[0].call({"x": 1}) == 1
    finally:
        first.stop(), second.stop()
    monkeypatch.setenv("NBTOOLS_MCP_TOKEN", "from-the-env")
    third = nbmcp.start(reg)
    try:
        assert third.token == "from-the-env"
    finally:
        third.stop()


def test_no_token_warns_and_serves_anyone():
    reg, ran = recording_registry()
    with pytest.warns(UserWarning, match="without a token"):
        server = nbmcp.start(reg, token=False)
    try:
        assert server.token is None
        assert call_directly(server.url, None) == 200 and ran == [1]
    finally:
        server.stop()


def serve_process(tmp_path: Path, *options: str, env: dict | None = None) -> tuple[subprocess.Popen, str, str]:
    """`nbtools serve TOOLS --http 0 ...`; returns (process, url, stderr so far up to the token line)."""
    target = tmp_path / "served_tools.py"
    target.write_text(SERVED_TOOLS)
    full_env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}", **(env or {})}
    for key, value in list(full_env.items()):
        if value is None:
            del full_env[key]
    process = subprocess.Popen([sys.executable, "-m", "nbtools.cli", "serve", str(target), "--http", "0", *options],
                               stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=full_env,
                               cwd=tmp_path)
    seen, url, deadline = "", "", time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        seen += line
        if "serving MCP at " in line:
            url = line.split("serving MCP at ")[1].split()[0]
        if url and ("token (" in line or "WARNING" in line):
            return process, url, seen
    process.kill()
    raise AssertionError(f"nbtools serve did not start: {seen}")


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


SERVED_TOOLS = textwrap.dedent("""
    import asyncio

    class Custom(BaseException):
        pass

    def add(a: int, b: int) -> int:
        'Add.'
        return a + b

    def exits() -> str:
        'SystemExit, as argparse raises it.'
        raise SystemExit(2)

    def interrupts() -> str:
        'KeyboardInterrupt raised by the code.'
        raise KeyboardInterrupt

    async def cancels() -> str:
        'CancelledError raised by the code.'
        raise asyncio.CancelledError()

    def custom() -> str:
        'A BaseException of its own.'
        raise Custom("odd")
""")
RAISERS = {"exits": "SystemExit", "interrupts": "KeyboardInterrupt", "cancels": "CancelledError", "custom": "Custom"}


def test_nbtools_serve_prints_a_random_token_and_requires_it(tmp_path):
    process, url, said = serve_process(tmp_path, env={"NBTOOLS_MCP_TOKEN": None})
    try:
        token = said.split("Authorization: Bearer <token>`): ")[1].split()[0]
        assert len(token) >= 22
        assert post(url, INIT).status_code == 401
        assert post(url, INIT, Authorization="Bearer nope").status_code == 401
        with nbmcp.connect(url, token=token, timeout=DEADLINE) as remote:
            assert {each.name: each for each in remote}["add"].call({"a": 1, "b": 2}) == 3
    finally:
        stop(process)


def test_nbtools_serve_token_flag_and_no_token(tmp_path):
    process, url, said = serve_process(tmp_path, "--token", "given-token-xyz")
    try:
        assert "given-token-xyz" in said
        assert post(url, INIT, Authorization="Bearer given-token-xyz").status_code == 200
        assert post(url, INIT, Authorization=f"Bearer {os.environ['NBTOOLS_MCP_TOKEN']}").status_code == 401
    finally:
        stop(process)
    process, url, said = serve_process(tmp_path, "--no-token")
    try:
        assert "no authentication" in said
        assert post(url, INIT).status_code == 200
    finally:
        stop(process)
    done = subprocess.run([sys.executable, "-m", "nbtools.cli", "serve", "x.py", "--token", "t"],
                          capture_output=True, text=True, timeout=DEADLINE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2 and "go with --http" in done.stderr


# -- Host and Origin, for every bind address --------------------------------------------------------
def test_foreign_host_and_origin_refused_on_127_0_0_2():
    reg, ran = recording_registry()
    server = nbmcp.start(reg, host="127.0.0.2", token="tok-host-check")
    auth = {"Authorization": "Bearer tok-host-check"}
    try:
        assert server.url.startswith("http://127.0.0.2:")
        assert post(server.url, INIT, **auth).status_code == 200
        assert post(server.url, INIT, **auth, Host="evil.example").status_code == 421
        assert post(server.url, INIT, **auth, Host=f"evil.example:{server.port}").status_code == 421
        assert post(server.url, INIT, **auth, Origin="http://evil.example").status_code == 403
        assert post(server.url, INIT, **auth, Origin=f"http://127.0.0.2:{server.port}").status_code == 200
        assert post(server.url, INIT, **auth, Host=f"localhost:{server.port}").status_code == 200  # loopback alias
        assert ran == []
    finally:
        server.stop()


def test_wildcard_bind_checks_hosts_and_allow_host_adds_names():
    reg, _ = recording_registry()
    server = nbmcp.start(reg, host="0.0.0.0", token="tok-wild", allow_hosts=["myhost.lan", "10.1.2.3:9"])
    auth = {"Authorization": "Bearer tok-wild"}
    try:
        url = f"http://127.0.0.1:{server.port}/mcp"
        assert post(url, INIT, **auth).status_code == 200
        assert post(url, INIT, **auth, Host=f"evil.example:{server.port}").status_code == 421
        assert post(url, INIT, **auth, Host=f"myhost.lan:{server.port}").status_code == 200
        assert post(url, INIT, **auth, Origin=f"http://myhost.lan:{server.port}").status_code == 200
        assert post(url, INIT, **auth, Origin="https://evil.example").status_code == 403
        assert post(url, INIT, **auth, Host="10.1.2.3:9").status_code == 200
        assert post(url, INIT, **auth, Host="10.1.2.3:10").status_code == 421
    finally:
        server.stop()


# -- BaseException from tools: HTTP (in process and `nbtools serve`), stdio, a real kernel ----------
def check_raisers(remote_factory) -> None:
    """Each raising tool -> an error result; a following call and a new session work."""
    with remote_factory() as remote:
        tools = {each.name: each for each in remote}
        for name, kind in RAISERS.items():
            with pytest.raises(ToolCallError, match=f"the tool raised {kind}"):
                tools[name].call({})
            assert tools["add"].call({"a": 2, "b": 3}) == 5
    with remote_factory() as remote:
        assert {each.name: each for each in remote}["add"].call({"a": 1, "b": 1}) == 2


def test_base_exceptions_over_nbtools_serve_http_and_stdio(tmp_path):
    process, url, _ = serve_process(tmp_path, "--token", "tok-raise")
    try:
        check_raisers(lambda: nbmcp.connect(url, token="tok-raise", timeout=DEADLINE))
        assert process.poll() is None
    finally:
        stop(process)
    env = {"PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    command = [sys.executable, "-m", "nbtools.cli", "serve", str(tmp_path / "served_tools.py")]
    check_raisers(lambda: nbmcp.connect(command, env=env, cwd=str(tmp_path), timeout=DEADLINE))


def test_base_exceptions_over_start_in_a_thread(tmp_path):
    sys.path.insert(0, str(tmp_path))
    (tmp_path / "served_tools_here.py").write_text(SERVED_TOOLS)
    try:
        import served_tools_here as module
    finally:
        sys.path.remove(str(tmp_path))
    reg = Registry([module.add, module.exits, module.interrupts, module.cancels, module.custom])
    server = nbmcp.start(reg, token="tok-thread")
    try:
        check_raisers(lambda: nbmcp.connect(server.url, token="tok-thread", timeout=DEADLINE))
        assert server.running
    finally:
        server.stop()


def test_base_exceptions_over_tools_serve_in_a_real_kernel(nbtools_kernel, tmp_path):
    nbtools_kernel.run("%%tool\n" + SERVED_TOOLS)
    said = "".join(output.get("text", "") for output in nbtools_kernel.run("%tools --serve --token tok-kernel"))
    url = said.split(" at ")[1].split()[0]
    assert "tok-kernel" not in said  # the output is saved with the notebook: never the token
    assert "nbtools.mcp.served_at(" in said and nbtools_kernel.value(
        f"__import__('nbtools.mcp').mcp.served_at({url.split(':')[2].split('/')[0]}).token") == "tok-kernel"
    check_raisers(lambda: nbmcp.connect(url, token="tok-kernel", timeout=DEADLINE))
    assert nbtools_kernel.value("1 + 1") == 2
    assert "Already serving" in "".join(o.get("text", "") for o in nbtools_kernel.run("%tools --serve"))
    assert post(url, INIT).status_code == 401


def test_a_kernel_interrupt_ends_a_served_call(nbtools_kernel):
    nbtools_kernel.run("""
        %%tool
        def stuck(seconds: float) -> str:
            'Sleep in a plain function.'
            import time
            time.sleep(seconds)
            return 'woke'

        async def waits(seconds: float) -> str:
            'Sleep in a coroutine.'
            import asyncio
            await asyncio.sleep(seconds)
            return 'woke'
    """)
    said = "".join(o.get("text", "") for o in nbtools_kernel.run("%tools --serve --token tok-int"))
    url = said.split(" at ")[1].split()[0]
    with nbmcp.connect(url, token="tok-int", timeout=DEADLINE) as remote:
        tools = {each.name: each for each in remote}
        for name in ("stuck", "waits"):
            outcome: dict = {}

            def call() -> None:
                started = time.monotonic()
                try:
                    outcome["value"] = tools[name].call({"seconds": 25})
                except ToolCallError as error:
                    outcome["error"] = str(error)
                outcome["took"] = time.monotonic() - started

            caller = threading.Thread(target=call)
            caller.start()
            time.sleep(1.5)  # the call is running in the kernel
            nbtools_kernel.manager.interrupt_kernel()
            caller.join(DEADLINE)
            assert "interrupted" in outcome.get("error", ""), outcome
            assert outcome["took"] < 10
            # the server and the kernel keep going; an interrupt between calls changes nothing
            assert tools["stuck"].call({"seconds": 0}) == "woke"
        nbtools_kernel.manager.interrupt_kernel()
        time.sleep(0.5)
        assert tools["waits"].call({"seconds": 0}) == "woke"
    assert nbtools_kernel.value("1 + 1") == 2


def test_tools_serve_options(nbtools_kernel):
    nbtools_kernel.run("%%tool\ndef one() -> int:\n    'One.'\n    return 1")
    assert "go with --serve" in nbtools_kernel.fails("%tools --token abc")
    assert "either --token or --no-token" in nbtools_kernel.fails("%tools --serve --token abc --no-token")
    said = "".join(o.get("text", "") for o in nbtools_kernel.run("%tools --serve --no-token --allow-host box.lan"))
    assert "No authentication (--no-token)" in said and "Bearer" not in said
    url = said.split(" at ")[1].split()[0]
    port = url.split(":")[2].split("/")[0]
    assert post(url, INIT).status_code == 200
    assert post(url, INIT, Host=f"box.lan:{port}").status_code == 200
    assert post(url, INIT, Host=f"other.lan:{port}").status_code == 421
