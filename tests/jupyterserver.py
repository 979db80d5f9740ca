"""A real Jupyter Server for tests, started as a person starts one (`jupyter server`, a subprocess),
with the extensions installed in this environment enabled as installed (nbtools.jupyter among them).

`JupyterServer(folder)` starts it on a free loopback port with a token, its own runtime and config
folders (so nothing of the machine's user is read or left behind), and `allow_root` (CI runs as root).
`server.notebook_kernel(path)` opens a notebook session through the REST API, as JupyterLab does, and
returns a `ServerKernel`: the tests' `RealKernel` driving that kernel through its connection file.
`server.stop()` ends the server and every kernel it started. `limits`: a function run in the child
before it starts (resource limits for the attack tests).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import nbformat

from kernels import RealKernel

START_TIMEOUT = 180  # seconds: a loaded 2-core machine can take long to import the server and a kernel


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def http(method: str, url: str, *, token: str | None = None, scheme: str = "token", body: Any = None,
         headers: dict | None = None, timeout: float = 60) -> tuple[int, dict, bytes]:
    """(status, headers, body) of one plain HTTP request (no MCP client: for the status codes)."""
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"{scheme} {token}"
    data = None
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        sent.setdefault("Content-Type", "application/json")
    request = urllib.request.Request(url, data=data, method=method, headers=sent)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


class ServerKernel(RealKernel):
    """A kernel the Jupyter Server started (for a notebook session), driven through its connection file."""

    def __init__(self, client: Any, kernel_id: str) -> None:
        self.kernel_name = "python3"
        self.client = client
        self.kernel_id = kernel_id
        self.manager = None
        self.nb = nbformat.v4.new_notebook()

    def blocking(self) -> Any:
        while self.client.iopub_channel.msg_ready():
            self.client.get_iopub_msg(timeout=1)
        return self.client

    def shutdown(self) -> None:
        self.client.stop_channels()


def open_kernel(runtime_dir: Path, kernel_id: str) -> ServerKernel:
    """A `ServerKernel` for the kernel a server started, from its connection file in `runtime_dir`."""
    from jupyter_client import BlockingKernelClient

    client = BlockingKernelClient(connection_file=str(Path(runtime_dir) / f"kernel-{kernel_id}.json"))
    client.load_connection_file()
    client.start_channels()
    deadline = time.monotonic() + START_TIMEOUT
    while True:  # without a manager the client judges "alive" by heartbeats, which start late under load
        try:
            client.wait_for_ready(timeout=max(1.0, deadline - time.monotonic()))
            return ServerKernel(client, kernel_id)
        except RuntimeError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


class JupyterServer:
    """A `jupyter server` subprocess (see the module docs)."""

    def __init__(self, folder: Path, token: str = "jupyter-test-token", *, extra_args: tuple[str, ...] = (),
                 limits: Any = None) -> None:
        self.folder = folder
        self.token = token
        self.root = folder / "notebooks"
        self.runtime = folder / "runtime"
        for made in (self.root, self.runtime, folder / "config"):
            made.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log_path = folder / "server.log"
        env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(self.runtime), JUPYTER_CONFIG_DIR=str(folder / "config"),
                   JUPYTER_PLATFORM_DIRS="1", PYTHONUNBUFFERED="1")
        env.pop("NBTOOLS_MCP_TOKEN", None)
        env.pop("NBTOOLS_JUPYTER_SERVER", None)
        self.log = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jupyter_server", "--no-browser", "--ServerApp.ip=127.0.0.1",
             f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
             f"--ServerApp.root_dir={self.root}", "--ServerApp.allow_root=True", *extra_args],
            env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=limits,
            cwd=folder)  # what the server writes beside it (collaboration's .jupyter_ystore.db) stays in `folder`
        self.kernels: list[ServerKernel] = []
        try:
            self._wait_until_up()
        except BaseException:
            self.stop()
            raise

    def _wait_until_up(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"jupyter server exited ({self.process.returncode}):\n{self.log_text()}")
            try:
                status, _, _ = http("GET", self.url + "api/status", token=self.token, timeout=5)
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"jupyter server did not answer within {START_TIMEOUT} s:\n{self.log_text()}")

    def log_text(self) -> str:
        if not self.log.closed:
            self.log.flush()
        return self.log_path.read_text(errors="replace")

    def api(self, method: str, path: str, body: Any = None) -> Any:
        status, _, data = http(method, self.url + path, token=self.token, body=body, timeout=START_TIMEOUT)
        assert status < 300, (status, data)
        return json.loads(data) if data else None

    def notebook_kernel(self, path: str) -> ServerKernel:
        """A session for notebook `path` (created empty if missing), as JupyterLab opens one; its kernel."""
        notebook = self.root / path
        notebook.parent.mkdir(parents=True, exist_ok=True)
        if not notebook.exists():
            nbformat.write(nbformat.v4.new_notebook(), notebook)
        session = self.api("POST", "api/sessions", {"path": path, "name": Path(path).name, "type": "notebook",
                                                    "kernel": {"name": "python3"}})
        kernel_id = session["kernel"]["id"]
        kernel = open_kernel(self.runtime, kernel_id)
        self.kernels.append(kernel)
        return kernel

    def stop(self) -> None:
        for kernel in self.kernels:
            kernel.shutdown()
        if self.process.poll() is None:
            with_group = os.getpgid(self.process.pid)
            os.killpg(with_group, signal.SIGTERM)  # its own session: the server and the kernels it started
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(with_group, signal.SIGKILL)
                self.process.wait(10)
        self.log.close()
