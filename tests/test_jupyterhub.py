"""nbtools.jupyter behind a real JupyterHub on loopback: the Hub (dummy authenticator, local process
spawner; CI runs as root, so the single-user servers get `allow_root`), its proxy
configurable-http-proxy from tests/npm (on the pinned Node 22), two users. A notebook kernel of
alice's server serves; alice's Hub API token scoped `access:servers!user=alice` reaches it through
`<hub>/user/alice/nbtools/mcp/notebooks/<path>` (the Hub user in the origin); bob's token and no token
get 403.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import anyio
import pytest

from jupyterserver import START_TIMEOUT, free_port, http, open_kernel
from peers import MODULES, NODE
from test_jupyter_server import mcp_session

PROXY = MODULES / "configurable-http-proxy" / "bin" / "configurable-http-proxy"
SERVICE_TOKEN = "hub-test-service-token"
DEADLINE = 120


class Hub:
    """A `jupyterhub` subprocess in `folder`, with a service that may manage users, servers and tokens."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port, hub_port, api_port = free_port(), free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        homes = folder / "home"
        config = folder / "jupyterhub_config.py"
        config.write_text(textwrap.dedent(f"""
            c.JupyterHub.ip = "127.0.0.1"
            c.JupyterHub.port = {self.port}
            c.JupyterHub.hub_ip = "127.0.0.1"
            c.JupyterHub.hub_port = {hub_port}
            c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{api_port}"
            c.ConfigurableHTTPProxy.command = [{str(NODE)!r}, {str(PROXY)!r}]
            c.ConfigurableHTTPProxy.pid_file = {str(folder / "proxy.pid")!r}
            c.JupyterHub.db_url = "sqlite:///{folder / "jupyterhub.sqlite"}"
            c.JupyterHub.cookie_secret_file = {str(folder / "cookie_secret")!r}
            c.JupyterHub.authenticator_class = "dummy"
            c.Authenticator.allowed_users = {{"alice", "bob"}}
            c.JupyterHub.spawner_class = "simple"
            c.SimpleLocalProcessSpawner.home_dir_template = {str(homes)!r} + "/{{username}}"
            c.Spawner.cmd = [{sys.executable!r}, "-m", "jupyterhub.singleuser"]  # this environment's, PATH or not
            c.Spawner.args = ["--ServerApp.allow_root=True"]
            c.Spawner.start_timeout = {START_TIMEOUT}
            c.Spawner.http_timeout = {START_TIMEOUT}
            c.Spawner.environment = {{
                "JUPYTER_RUNTIME_DIR": lambda spawner: {str(homes)!r} + "/" + spawner.user.name + "/runtime",
                "JUPYTER_CONFIG_DIR": lambda spawner: {str(homes)!r} + "/" + spawner.user.name + "/config",
                "JUPYTER_PLATFORM_DIRS": "1",
            }}
            c.JupyterHub.services = [{{"name": "tester", "api_token": {SERVICE_TOKEN!r}}}]
            c.JupyterHub.load_roles = [{{"name": "tester", "services": ["tester"],
                                         "scopes": ["admin:users", "admin:servers", "tokens"]}}]
        """))
        self.log_path = folder / "hub.log"
        self.log = open(self.log_path, "wb")
        env = {key: value for key, value in os.environ.items() if not key.startswith(("JUPYTER", "NBTOOLS"))}
        self.process = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f", str(config)], cwd=folder, env=env,
                                        stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self._wait(lambda: self.api("GET", "")[0] == 200, "the Hub's API")
        except BaseException:
            self.stop()
            raise

    def _wait(self, ready, what: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"jupyterhub exited ({self.process.returncode}):\n{self.log_text()}")
            try:
                if ready():
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"{what} not ready within {START_TIMEOUT} s:\n{self.log_text()}")

    def log_text(self) -> str:
        if not self.log.closed:
            self.log.flush()
        return self.log_path.read_text(errors="replace")

    def api(self, method: str, path: str, body=None) -> tuple[int, dict]:
        status, _, data = http(method, f"{self.url}/hub/api/{path}", token=SERVICE_TOKEN, body=body, timeout=30)
        try:
            return status, (json.loads(data) if data.strip() else {})
        except ValueError:  # the proxy's own "Not Found" while the Hub is starting
            return status, {"text": data.decode(errors="replace")}

    def start_server(self, user: str) -> None:
        status, answer = self.api("POST", f"users/{user}/server")
        assert status in (201, 202), (status, answer, self.log_text())
        self._wait(lambda: self.api("GET", f"users/{user}")[1].get("servers", {}).get("", {}).get("ready"),
                   f"{user}'s server")

    def token_for(self, user: str) -> str:
        status, answer = self.api("POST", f"users/{user}/tokens",
                                  {"scopes": [f"access:servers!user={user}"], "note": "nbtools MCP test"})
        assert status == 201, (status, answer)
        return answer["token"]

    def home(self, user: str) -> Path:
        return self.folder / "home" / user

    def stop(self) -> None:
        if self.process.poll() is None:
            for user in ("alice", "bob"):
                try:  # best effort: the Hub stops what is left when it exits
                    self.api("DELETE", f"users/{user}/server")
                except Exception:
                    pass
            self.process.send_signal(signal.SIGTERM)  # the Hub stops its proxy and the servers it spawned
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(os.getpgid(self.process.pid), signal.SIGKILL)
                self.process.wait(10)
        self.log.close()


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    if not (NODE.exists() and PROXY.exists()):
        pytest.skip("npm test peers not installed (configurable-http-proxy): run `npm ci --prefix tests/npm`")
    started = Hub(tmp_path_factory.mktemp("hub"))
    try:
        started.start_server("alice")
        started.start_server("bob")
        yield started
    finally:
        started.stop()


def test_alices_scoped_hub_token_reaches_her_serving_kernel_and_bobs_and_none_get_403(hub):
    alice, bob = hub.token_for("alice"), hub.token_for("bob")
    base = f"{hub.url}/user/alice/"
    # alice opens a notebook on her server (through the Hub's proxy, with her token) and serves its tools
    home = hub.home("alice")
    (home / "work").mkdir(exist_ok=True)
    (home / "work" / "nb.ipynb").write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4,
                                                        "nbformat_minor": 5}))
    status, _, body = http("POST", base + "api/sessions", token=alice, timeout=START_TIMEOUT,
                           body={"path": "work/nb.ipynb", "name": "nb.ipynb", "type": "notebook",
                                 "kernel": {"name": "python3"}})
    assert status == 201, body
    kernel = open_kernel(home / "runtime", json.loads(body)["kernel"]["id"])
    try:
        kernel.run("""
            %load_ext nbtools
            import nbtools
            origins = []
            nbtools.registry.approve = lambda tool, args, *, origin: origins.append(origin) or True
        """)
        kernel.run("%%tool --hints destructive\ndef erase(name: str) -> str:\n    'Erase.'\n    return f'erased {name}'")
        served = "".join(output.get("text", "") for output in kernel.run("%tools --serve"))
        assert "/user/alice/nbtools/mcp/notebooks/work/nb.ipynb" in served

        url = base + "nbtools/mcp/notebooks/work/nb.ipynb"
        for protocol, scheme in (("2025-11-25", "token"), ("2026-07-28", "Bearer")):
            async def client():
                async with await mcp_session(url, protocol, {"Authorization": f"{scheme} {alice}"}) as session:
                    with anyio.fail_after(DEADLINE):
                        return await session.call_tool("erase", {"name": "x"})

            assert anyio.run(client).structured_content == {"result": "erased x"}
        assert kernel.value("origins") == ["mcp:pytest-client@alice"] * 2

        listing = http("GET", base + "nbtools/api/kernels", token=alice)
        assert listing[0] == 200 and json.loads(listing[2])[0]["serving"] is True

        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "x", "version": "0"}}}
        for token in (bob, None, "not-a-token"):
            for target in (url, base + "nbtools/api/kernels"):
                status, headers, answer = http("POST" if target == url else "GET", target, token=token,
                                               body=initialize if target == url else None,
                                               headers={"Accept": "application/json, text/event-stream"})
                assert status == 403 and b"jsonrpc" not in answer, (token == bob, target, status, answer[:200])
        assert kernel.value("len(origins)") == 2  # nothing else reached the kernel
        # bob's own server is reachable with his token, and has no serving kernel
        status, _, body = http("GET", f"{hub.url}/user/bob/nbtools/api/kernels", token=bob)
        assert status == 200 and json.loads(body) == []
    finally:
        kernel.shutdown()
