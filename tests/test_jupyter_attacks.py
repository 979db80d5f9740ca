"""nbtools.jupyter under attack: what another local process (or a kernel's own code) could plant in
Jupyter's runtime folder, and the Jupyter user a client could claim. The Jupyter server runs as a
child process with limits on its memory and open files; every wait has a deadline.

* A registration file for a kernel that does not serve, naming an impostor's port: the extension
  must not send the impostor a request (nor its private token, nor the user's MCP traffic). A file is
  believed only when it belongs to the server's user, nobody else may read or write it, it is not a
  symlink, and its pid is the kernel's own (or a process under it).
* A user header sent by the client: dropped by the proxy; the kernel hears only the user Jupyter
  authenticated (tests/test_jupyter_server.py checks the same straight at the kernel's port).
"""

from __future__ import annotations

import json
import os
import resource
import socket
import sys
import threading

import pytest

from jupyterserver import JupyterServer, http

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX rlimits and file modes")

MEMORY_LIMIT = 6 << 30  # bytes of address space (the server and, inherited, its kernels and their threads)
FILE_LIMIT = 1024
CALL = {"jsonrpc": "2.0", "id": 3, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}}


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    resource.setrlimit(resource.RLIMIT_NOFILE, (FILE_LIMIT, FILE_LIMIT))


class Impostor:
    """A loopback listener that records every connection made to it (and answers nothing)."""

    def __init__(self) -> None:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(8)
        self.socket.settimeout(0.2)
        self.port = self.socket.getsockname()[1]
        self.received: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self.socket.accept()
            except OSError:
                continue
            with connection:
                connection.settimeout(2)
                try:
                    self.received.append(connection.recv(65536))
                except OSError:
                    self.received.append(b"")

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.socket.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    started = JupyterServer(tmp_path_factory.mktemp("jupyter-attacks"), limits=_limits)
    yield started
    started.stop()


@pytest.fixture(scope="module")
def idle(server):
    kernel = server.notebook_kernel("victim.ipynb")
    kernel.run("%load_ext nbtools\nimport os")
    kernel.pid = kernel.value("os.getpid()")
    return kernel


def _plant(server, kernel_id: str, pid: int, port: int, mode: int = 0o600, name: str | None = None) -> str:
    path = server.runtime / (name or f"nbtools-kernel-{kernel_id}.json")
    path.write_text(json.dumps({"kernel_id": kernel_id, "port": port, "pid": pid, "token": "planted-token",
                                "tools": ["planted"]}))
    os.chmod(path, mode)
    return str(path)


@pytest.mark.parametrize("how", ["another pid", "readable by others", "writable by the group", "a symlink"])
def test_a_planted_registration_reaches_no_impostor(server, idle, how):
    impostor = Impostor()
    planted = server.runtime / f"nbtools-kernel-{idle.kernel_id}.json"
    try:
        if how == "another pid":
            _plant(server, idle.kernel_id, os.getpid(), impostor.port)
        elif how == "readable by others":
            _plant(server, idle.kernel_id, idle.pid, impostor.port, mode=0o644)
        elif how == "writable by the group":
            _plant(server, idle.kernel_id, idle.pid, impostor.port, mode=0o620)
        else:  # a well-formed file elsewhere, linked under the kernel's name
            target = _plant(server, idle.kernel_id, idle.pid, impostor.port, name="elsewhere.json")
            os.symlink(target, planted)
        for url in (f"{server.url}nbtools/mcp/kernels/{idle.kernel_id}", f"{server.url}nbtools/mcp/notebooks/victim.ipynb"):
            status, _, body = http("POST", url, token=server.token, body=CALL,
                                   headers={"Accept": "application/json, text/event-stream"})
            assert status == 404 and "%tools --serve" in json.loads(body)["error"]["message"], (how, status, body)
        status, _, body = http("GET", server.url + "nbtools/api/kernels", token=server.token)
        listed = {entry["kernel_id"]: entry for entry in json.loads(body)}
        assert listed[idle.kernel_id]["serving"] is False and listed[idle.kernel_id]["tools"] == []
        assert impostor.received == []
    finally:
        impostor.close()
        for path in (planted, server.runtime / "elsewhere.json"):
            if path.is_symlink() or path.exists():
                path.unlink()


def test_the_same_file_with_the_kernels_pid_and_owner_only_is_believed(server, idle):
    """The control: the checks above refuse for their reason, not because planting cannot work."""
    impostor = Impostor()
    planted = _plant(server, idle.kernel_id, idle.pid, impostor.port)
    try:
        status, _, body = http("GET", server.url + "nbtools/api/kernels", token=server.token)
        assert {entry["kernel_id"]: entry for entry in json.loads(body)}[idle.kernel_id]["serving"] is True
    finally:
        os.unlink(planted)
        impostor.close()


def test_a_path_trick_names_no_kernel_and_no_file(server, idle):
    for target in ("..%2F..%2Fapi%2Fkernels", ".hidden", "%2E%2E"):
        status, _, body = http("POST", f"{server.url}nbtools/mcp/kernels/{target}", token=server.token, body=CALL)
        assert status == 404 and b"jsonrpc" in body, (target, status, body)
    status, _, body = http("POST", f"{server.url}nbtools/mcp/notebooks/..%2F..%2Fetc%2Fpasswd", token=server.token,
                           body=CALL)
    assert status == 404 and b"jsonrpc" in body
