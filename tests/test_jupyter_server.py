"""The Jupyter Server extension `nbtools.jupyter` against a real `jupyter server` (tests/jupyterserver.py),
enabled as installed, with real kernels opened for notebooks as JupyterLab opens them and the MCP
SDK's own clients (both protocol revisions) through both URLs: Jupyter's auth (403s, both schemes),
the listing, tools/list and tools/call, streaming, cancellation, the Jupyter user reaching the kernel,
the private token staying in the server, and a kernel that does not serve.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import anyio
import pytest

from jupyterserver import JupyterServer, http
from kernels import text_of

DEADLINE = 120  # seconds for one MCP exchange on a loaded machine
PROTOCOLS = ("2025-11-25", "2026-07-28")
NOTEBOOK = "work/tools nb.ipynb"  # a space and a folder: the path travels URL-quoted

TOOLS = """
    %%tool
    import time
    from pathlib import Path
    from nbtools import ToolContext

    def add(a: int, b: int) -> int:
        'Add two integers.'
        return a + b

    def waits_for_signal(folder: str, ctx: ToolContext) -> str:
        'Report progress, then wait until the client signals that it saw it (a file).'
        ctx.progress(1, 2, 'started')
        ctx.log('waiting for the signal')
        signal = Path(folder) / 'signal'
        for _ in range(int(DEADLINE * 10)):
            if signal.exists():
                return 'signalled'
            time.sleep(0.1)
        return 'no signal: the progress never reached the client'

    def sleepy(folder: str) -> str:
        'Sleep a long time in a plain function.'
        Path(folder, 'started').write_text('yes')
        time.sleep(600)
        Path(folder, 'finished').write_text('yes')
        return 'woke'
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    started = JupyterServer(tmp_path_factory.mktemp("jupyter"))
    yield started
    started.stop()


@pytest.fixture(scope="module")
def serving(server):
    """A kernel of NOTEBOOK that runs `%tools --serve`, and the line that printed."""
    kernel = server.notebook_kernel(NOTEBOOK)
    kernel.run(f"%load_ext nbtools\nDEADLINE = {DEADLINE}")
    kernel.run(TOOLS)
    kernel.run("%%tool --hints destructive\ndef erase(name: str) -> str:\n    'Erase a thing (asks first).'\n"
               "    return f'erased {name}'")
    kernel.served = text_of(kernel.run("%tools --serve"))
    return kernel


@pytest.fixture(scope="module")
def idle(server):
    """A kernel of another notebook, with nbtools loaded, that does not serve."""
    kernel = server.notebook_kernel("idle.ipynb")
    kernel.run("%load_ext nbtools")
    return kernel


def urls(server, kernel) -> dict[str, str]:
    quoted = NOTEBOOK.replace(" ", "%20")
    return {"kernels": f"{server.url}nbtools/mcp/kernels/{kernel.kernel_id}",
            "notebooks": f"{server.url}nbtools/mcp/notebooks/{quoted}"}


def private_token(server, kernel) -> str:
    return json.loads((server.runtime / f"nbtools-kernel-{kernel.kernel_id}.json").read_text())["token"]


def anonymous_user(server) -> tuple[str, str]:
    """(username, cookie) of one Jupyter anonymous user: with a bare token each request gets a fresh
    one unless it sends back the cookie naming it (jupyter_server's IdentityProvider)."""
    status, headers, body = http("GET", server.url + "api/me", token=server.token)
    assert status == 200
    cookie = headers["Set-Cookie"].split(";", 1)[0]
    return json.loads(body)["identity"]["username"], cookie


async def mcp_session(url: str, protocol: str, headers: dict, **callbacks):
    """An entered MCP SDK client at `protocol` (the 2025-11-25 ClientSession handshake, or the
    2026-07-28 stateless `Client`); use as `async with await mcp_session(...) as session`."""
    import contextlib

    import mcp_types as types
    from mcp import Client, ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    info = types.Implementation(name="pytest-client", version="1")

    @contextlib.asynccontextmanager
    async def opened():
        transport = streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
        if protocol == "2026-07-28":
            async with Client(transport, client_info=info, log_level="info", **callbacks) as client:
                assert client.session.protocol_version == protocol
                yield client
            return
        async with transport as (read, write):
            async with ClientSession(read, write, client_info=info, **callbacks) as session:
                assert (await session.initialize()).protocol_version == protocol
                yield session

    return opened()


# -- installed, and behind Jupyter's auth -------------------------------------------------------------
def test_the_extension_is_enabled_as_installed():
    shipped = Path(sys.prefix, "etc", "jupyter", "jupyter_server_config.d", "nbtools.json")
    assert json.loads(shipped.read_text()) == {"ServerApp": {"jpserver_extensions": {"nbtools.jupyter": True}}}
    listed = subprocess.run([sys.executable, "-m", "jupyter", "server", "extension", "list"], capture_output=True,
                            text=True, timeout=DEADLINE, env={**os.environ, "JUPYTER_CONFIG_DIR": "/nonexistent"})
    plain = re.sub(r"\x1b\[[0-9;]*m", "", listed.stdout + listed.stderr)
    assert re.search(r"nbtools\.jupyter\s+enabled", plain) and re.search(r"nbtools\.jupyter\s+0\.1\.0\s+OK", plain), plain


@pytest.mark.parametrize("token", [None, "wrong-token"])
def test_every_endpoint_answers_403_without_the_jupyter_token_and_never_redirects(server, serving, token):
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                             "clientInfo": {"name": "x", "version": "0"}}}
    targets = [("GET", server.url + "nbtools/api/kernels", None)]
    targets += [(method, url, initialize if method == "POST" else None)
                for url in urls(server, serving).values() for method in ("POST", "GET", "DELETE")]
    for scheme in ("token", "Bearer"):
        for method, url, body in targets:
            status, headers, answer = http(method, url, token=token, scheme=scheme, body=body,
                                           headers={"Accept": "application/json, text/event-stream"})
            assert status == 403 and "Location" not in headers, (method, url, status, answer)
            assert b"jsonrpc" not in answer  # nothing reached the kernel
    # the private token is not a Jupyter token either
    status, _, _ = http("POST", urls(server, serving)["kernels"], token=private_token(server, serving),
                        scheme="Bearer", body=initialize)
    assert status == 403


@pytest.mark.parametrize("scheme", ["token", "Bearer"])
def test_the_listing_says_which_kernels_serve_and_how_to_reach_them(server, serving, idle, scheme):
    status, _, body = http("GET", server.url + "nbtools/api/kernels", token=server.token, scheme=scheme)
    assert status == 200
    listed = {entry["kernel_id"]: entry for entry in json.loads(body)}
    mine = listed[serving.kernel_id]
    assert mine["serving"] is True and mine["notebook"] == NOTEBOOK and mine["name"] == "python3"
    assert set(mine["tools"]) == {"add", "erase", "waits_for_signal", "sleepy"}
    assert mine["url"] == f"/nbtools/mcp/kernels/{serving.kernel_id}"
    assert mine["notebook_url"] == "/nbtools/mcp/notebooks/work/tools%20nb.ipynb"
    other = listed[idle.kernel_id]
    assert other["serving"] is False and other["tools"] == [] and other["notebook"] == "idle.ipynb"


def test_serving_prints_the_jupyter_url_paths_and_leaves_an_owner_only_file(server, serving):
    assert f"/nbtools/mcp/notebooks/work/tools%20nb.ipynb (or /nbtools/mcp/kernels/{serving.kernel_id})" \
        in serving.served
    path = server.runtime / f"nbtools-kernel-{serving.kernel_id}.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


# -- MCP through both URLs ------------------------------------------------------------------------------
@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("kind, scheme", [("kernels", "token"), ("notebooks", "Bearer")])
def test_tools_are_listed_and_called_through_jupyter(server, serving, kind, scheme, protocol):
    async def client():
        async with await mcp_session(urls(server, serving)[kind], protocol,
                                     {"Authorization": f"{scheme} {server.token}"}) as session:
            with anyio.fail_after(DEADLINE):
                listed = sorted(tool.name for tool in (await session.list_tools()).tools)
                added = await session.call_tool("add", {"a": 2, "b": 3})
                refused = await session.call_tool("add", {"a": "2", "b": 3})
        return listed, added, refused

    listed, added, refused = anyio.run(client)
    assert listed == ["add", "erase", "sleepy", "waits_for_signal"]
    assert added.structured_content == {"result": 5} and not added.is_error
    assert refused.is_error and "'a'" in refused.content[0].text


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_progress_and_logs_reach_the_client_while_the_call_runs(server, serving, tmp_path, protocol):
    """The tool waits for a signal the client gives only once it has the call's first progress
    notification: buffered anywhere on the way, the progress would come with the result, and the
    tool would answer that it never got the signal."""
    progress, logged = [], []

    async def on_progress(done, total, message):
        progress.append((done, total, message))
        (tmp_path / "signal").write_text("seen")

    async def on_log(params):
        logged.append(params.data)

    async def client():
        async with await mcp_session(urls(server, serving)["notebooks"], protocol,
                                     {"Authorization": f"token {server.token}"}, logging_callback=on_log) as session:
            with anyio.fail_after(DEADLINE + 30):
                return await session.call_tool("waits_for_signal", {"folder": str(tmp_path)},
                                               progress_callback=on_progress)

    result = anyio.run(client)
    assert result.structured_content == {"result": "signalled"}
    assert progress == [(1.0, 2.0, "started")] and logged == ["waiting for the signal"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_client_cancellation_through_jupyter_stops_the_call_in_the_kernel(server, serving, tmp_path, protocol):
    """At 2025-11-25 the client sends notifications/cancelled (proxied like any request); at
    2026-07-28 it closes its request's stream, and the proxy closes its own to the kernel."""
    started = tmp_path / "started"

    async def client():
        async with await mcp_session(urls(server, serving)["kernels"], protocol,
                                     {"Authorization": f"token {server.token}"}) as session:
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as group:
                    group.start_soon(session.call_tool, "sleepy", {"folder": str(tmp_path)})
                    with anyio.fail_after(DEADLINE):
                        while not started.exists():
                            await anyio.sleep(0.05)
                    scope.cancel()
            with anyio.fail_after(DEADLINE):
                added = await session.call_tool("add", {"a": 1, "b": 1})
        return scope.cancelled_caught, added.structured_content

    cancelled, added = anyio.run(client)
    assert cancelled and added == {"result": 2}
    records = serving.value("[(r.tool, r.status, r.elapsed) for r in "
                            "__import__('nbtools.mcp').mcp.running_servers()[0].activity.records[-2:]]")
    assert [record[:2] for record in records] == [["sleepy", "cancelled"], ["add", "ok"]]
    assert records[0][2] < DEADLINE and not (tmp_path / "finished").exists()
    assert serving.value("1 + 1") == 2


def test_nbtools_connect_reaches_the_kernel_through_jupyter(server, serving):
    """The README's Python line: `connect(URL, headers=...)` with the Jupyter token."""
    import nbtools.mcp as nbmcp

    connection = nbmcp.connect(urls(server, serving)["notebooks"], headers={"Authorization": f"token {server.token}"},
                               timeout=DEADLINE)
    try:
        assert connection["add"](a=20, b=22) == 42
        assert sorted(tool.name for tool in connection) == ["add", "erase", "sleepy", "waits_for_signal"]
    finally:
        connection.close()


# -- who asks -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_jupyter_user_is_the_origin_the_prompt_and_the_log(server, serving, protocol):
    username, cookie = anonymous_user(server)
    serving.run("""
        import nbtools
        origins = []
        def approve(tool, args, *, origin):
            origins.append(origin)
            return True
        nbtools.registry.approve = approve
    """)
    forged = {"Authorization": f"token {server.token}", "Cookie": cookie, "X-Nbtools-Jupyter-User": "mallory"}

    async def client():
        async with await mcp_session(urls(server, serving)["notebooks"], protocol, forged) as session:
            with anyio.fail_after(DEADLINE):
                return await session.call_tool("erase", {"name": "x"})

    try:
        assert anyio.run(client).structured_content == {"result": "erased x"}
        assert serving.value("origins") == [f"mcp:pytest-client@{username}"]
        record = serving.value("(lambda r: [r.client, r.user])(__import__('nbtools.mcp').mcp.running_servers()[0]"
                               ".activity.records[-1])")
        assert record == ["pytest-client", username]
        view = serving.value("__import__('nbtools.mcp').mcp.running_servers()[0].view.widget.value")
        assert "<th style='padding:0 8px;text-align:left'>user</th>" in view and username in view
        assert "mallory" not in view
        asked = serving.value("__import__('nbtools.approval').approval.who_asks(origins[0])")
        assert asked == f"The MCP client pytest-client as {username}"
    finally:
        serving.run("nbtools.registry.approve = None")


def test_the_user_header_is_ignored_without_the_private_token(serving):
    """Straight to the kernel's port with its public token, a client cannot claim a Jupyter user."""
    serving.run("""
        import nbtools, nbtools.mcp
        origins = []
        nbtools.registry.approve = lambda tool, args, *, origin: origins.append(origin) or True
        public = nbtools.mcp.running_servers()[0]
    """)
    url, token = serving.value("[public.url, public.token]")

    async def client():
        async with await mcp_session(url, "2025-11-25", {"Authorization": f"Bearer {token}",
                                                          "X-Nbtools-Jupyter-User": "mallory"}) as session:
            with anyio.fail_after(DEADLINE):
                return await session.call_tool("erase", {"name": "y"})

    try:
        assert anyio.run(client).structured_content == {"result": "erased y"}
        assert serving.value("origins") == ["mcp:pytest-client"]
        assert serving.value("public.activity.records[-1].user") is None
    finally:
        serving.run("nbtools.registry.approve = None")


def test_the_private_token_appears_in_no_response_log_line_or_cell_output(server, serving):
    secret = private_token(server, serving)
    headers = {"Authorization": f"token {server.token}", "Accept": "application/json, text/event-stream",
               "Content-Type": "application/json"}
    seen = []
    for body in ({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                             "clientInfo": {"name": "x", "version": "0"}}},
                 {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}, b"{not json"):
        seen.append(http("POST", urls(server, serving)["kernels"], body=body, headers=headers))
    seen.append(http("GET", server.url + "nbtools/api/kernels", token=server.token))
    assert seen[0][0] == 200 and b'"serverInfo"' in seen[0][2]
    for status, answer_headers, answer in seen:
        assert secret not in json.dumps(answer_headers) and secret.encode() not in answer
    assert secret not in server.log_text()
    assert secret not in json.dumps(serving.nb.cells, default=str)


class ThroughJupyter:
    """A 2025-11-25 session by plain HTTP through the extension, with the Jupyter token and, if given,
    a login cookie naming a Jupyter user; it keeps every answer's Set-Cookie headers."""

    def __new__(cls, server, kernel, cookie: str | None = None):
        import urllib.request

        from test_mcp_tasks import PlainClient

        class Client(PlainClient):
            def _post(self, body: dict) -> tuple[dict, str]:
                headers = {"MCP-Protocol-Version": "2025-11-25", "Authorization": f"token {server.token}",
                           "Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                           **({"Cookie": cookie} if cookie else {}),
                           **({"Mcp-Session-Id": self.session} if self.session else {})}
                request = urllib.request.Request(self.url, data=json.dumps(body).encode(), headers=headers, method="POST")
                with urllib.request.urlopen(request, timeout=DEADLINE) as response:
                    self.cookies_set = getattr(self, "cookies_set", []) + response.headers.get_all("Set-Cookie", [])
                    return {key.lower(): value for key, value in response.headers.items()}, response.read().decode()

        return Client(SimpleNamespace(url=urls(server, kernel)["kernels"], token=server.token), name="pytest-client")


def test_a_task_through_jupyter_belongs_to_its_jupyter_user(server, serving, tmp_path):
    """Every request through the extension bears its one private token: the Jupyter user tells one
    person's tasks from another's (two anonymous Jupyter users here, each held by its cookie)."""
    alice = ThroughJupyter(server, serving, anonymous_user(server)[1])
    bob = ThroughJupyter(server, serving, anonymous_user(server)[1])
    try:
        task = alice.request("tools/call", {"name": "waits_for_signal", "arguments": {"folder": str(tmp_path)},
                                            "task": {}})["task"]
        assert task["taskId"] not in [entry["taskId"] for entry in bob.request("tasks/list")["tasks"]]
        assert bob.error("tasks/get", {"taskId": task["taskId"]})["code"] == -32602
        assert task["taskId"] in [entry["taskId"] for entry in alice.request("tasks/list")["tasks"]]
        (tmp_path / "signal").write_text("go")
        result = alice.request("tasks/result", {"taskId": task["taskId"]})
        assert result["structuredContent"] == {"result": "signalled"}
    finally:
        alice.close()
        bob.close()


def test_a_client_with_the_token_alone_is_the_servers_owner_on_every_request(server, serving, tmp_path):
    """Jupyter makes up a new anonymous user for each request that brings the token and no login
    cookie; through the extension such a request is the server's owner (the user running it), the
    same one every time, and gets no login cookie: so a client that keeps no cookie, or reconnects,
    finds its task again, and the log and the prompt name one person."""
    import getpass

    owner = getpass.getuser()
    first = ThroughJupyter(server, serving)
    task = first.request("tools/call", {"name": "waits_for_signal", "arguments": {"folder": str(tmp_path)},
                                        "task": {}})["task"]
    first.close()  # the client goes away; a new one (no cookie, a new session) comes back for the task
    again = ThroughJupyter(server, serving)
    try:
        assert task["taskId"] in [entry["taskId"] for entry in again.request("tasks/list")["tasks"]]
        (tmp_path / "signal").write_text("go")
        assert again.request("tasks/result", {"taskId": task["taskId"]})["structuredContent"] == {"result": "signalled"}
        assert again.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})["structuredContent"] == {"result": 3}
    finally:
        again.close()
    assert first.cookies_set == [] and again.cookies_set == [], (first.cookies_set, again.cookies_set)
    users = serving.value("[r.user for r in __import__('nbtools.mcp').mcp.running_servers()[0].activity.records"
                          " if r.tool in ('waits_for_signal', 'add')][-2:]")
    assert users == [owner, owner]


def test_without_jupyter_auth_every_request_is_the_servers_owner_too(tmp_path):
    """A server with authentication turned off (`--IdentityProvider.token=''`, no password; scripts
    then need `disable_check_xsrf`) makes up an anonymous user per request as a bare token does:
    through the extension, one owner."""
    import getpass

    open_server = JupyterServer(tmp_path, token="", extra_args=("--ServerApp.disable_check_xsrf=True",))
    try:
        kernel = open_server.notebook_kernel("open.ipynb")
        kernel.run("%load_ext nbtools\ndef add(a: int, b: int) -> int:\n    'Add two integers.'\n    return a + b")
        kernel.run("%tool add\n%tools --serve")
        for _ in range(2):  # two clients, one after the other, neither keeping a cookie
            client = ThroughJupyter(open_server, kernel)
            try:
                assert client.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})["structuredContent"] \
                    == {"result": 3}
            finally:
                client.close()
            assert client.cookies_set == [], client.cookies_set
        users = kernel.value("[r.user for r in __import__('nbtools.mcp').mcp.running_servers()[0].activity.records]")
        assert users == [getpass.getuser()] * 2, users
    finally:
        open_server.stop()


# -- not serving --------------------------------------------------------------------------------------
def test_a_kernel_that_does_not_serve_answers_404_with_a_json_rpc_error_naming_the_fix(server, idle):
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}
    cases = {f"{server.url}nbtools/mcp/kernels/{idle.kernel_id}": "%tools --serve",
             f"{server.url}nbtools/mcp/notebooks/idle.ipynb": "%tools --serve",
             f"{server.url}nbtools/mcp/kernels/no-such-kernel": "nbtools/api/kernels",
             f"{server.url}nbtools/mcp/notebooks/nowhere.ipynb": "%tools --serve"}
    for url, fix in cases.items():
        status, headers, body = http("POST", url, token=server.token, body=call)
        answer = json.loads(body)
        assert status == 404 and headers["Content-Type"].startswith("application/json"), (url, status)
        assert answer["jsonrpc"] == "2.0" and answer["id"] == 7 and fix in answer["error"]["message"], answer


def test_serving_without_a_token_is_not_offered_through_jupyter(server, idle):
    said = text_of(idle.run("%tools --serve --no-token"))
    try:
        assert "Not reachable through this Jupyter server" in said
        assert not (server.runtime / f"nbtools-kernel-{idle.kernel_id}.json").exists()
    finally:
        idle.run("%tools --stop")


def test_a_kernel_that_only_inherited_the_servers_environment_does_not_register(server, tmp_path):
    """A process started from one of the server's terminals inherits its environment (and so the
    extension's variable), but the server did not start it: it says nothing of Jupyter, leaves no file."""
    import uuid

    from jupyter_client.manager import KernelManager

    inherited = {**os.environ, "NBTOOLS_JUPYTER_SERVER": json.dumps({
        "runtime_dir": str(server.runtime), "base_url": "/", "root_dir": str(server.root),
        "pid": server.process.pid})}
    kernel_id = str(uuid.uuid4())  # a connection file named as the server names its kernels'
    manager = KernelManager(kernel_name="python3", connection_file=str(tmp_path / f"kernel-{kernel_id}.json"))
    manager.start_kernel(env=inherited)
    client = manager.client()
    try:
        client.start_channels()
        client.wait_for_ready(timeout=DEADLINE)
        reply = []
        client.execute_interactive("%load_ext nbtools\n%tools --serve", timeout=DEADLINE,
                                   output_hook=lambda message: reply.append(message["content"].get("text", "")))
        said = "".join(reply)
        assert "MCP server for" in said and "Jupyter" not in said
        assert not (server.runtime / f"nbtools-kernel-{kernel_id}.json").exists()
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_stop_unregisters_and_serve_registers_again(server, idle):
    registered = server.runtime / f"nbtools-kernel-{idle.kernel_id}.json"
    served = text_of(idle.run("%tools --serve"))
    assert registered.exists() and f"/nbtools/mcp/kernels/{idle.kernel_id}" in served
    call = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}}
    status, _, _ = http("POST", f"{server.url}nbtools/mcp/kernels/{idle.kernel_id}", token=server.token, body=call,
                        headers={"Accept": "application/json, text/event-stream"})
    assert status == 200
    idle.run("%tools --stop")
    assert not registered.exists()
    status, _, body = http("POST", f"{server.url}nbtools/mcp/kernels/{idle.kernel_id}", token=server.token, body=call)
    assert status == 404 and "%tools --serve" in json.loads(body)["error"]["message"]
