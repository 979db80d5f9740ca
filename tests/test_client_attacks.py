"""`connect()` and a neighbour on loopback (issue 37, "from round three"): `$NBTOOLS_MCP_TOKEN` is
the secret of this user's nbtools servers and must reach no other server, not even one listening on
127.0.0.1 of the same host. The neighbour is a child process with limits on memory and time that
records every request's `Authorization` header; every wait has a deadline.

Before the fix, connect() sent the environment's token to any loopback address.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import nbtools.mcp as nbmcp
from nbtools import Registry
from nbtools.mcp import connect, ownservers

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="POSIX rlimits, /proc")

SECRET = "secret-of-this-user-" + os.urandom(6).hex()
MEMORY_LIMIT = 1 << 30
DEADLINE = 20

NEIGHBOUR = textwrap.dedent("""
    import encodings.idna, http.server, os, socketserver, sys, threading

    if sys.argv[3] != "-":  # another user from here on (its socket is that user's; modules loaded before)
        os.setgid(int(sys.argv[3]))
        os.setuid(int(sys.argv[3]))
    class Record(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            print("AUTH " + repr(self.headers.get("Authorization")), flush=True)
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_DELETE = do_POST

        def log_message(self, *args):
            pass

    listener = http.server.ThreadingHTTPServer((sys.argv[1], int(sys.argv[2])), Record)
    print("PORT", listener.server_address[1], flush=True)
    listener.serve_forever()
""")


class Neighbour:
    """A plain HTTP listener in a limited child process (optionally as another user), recording the
    Authorization headers it receives."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, user: int | None = None):
        def limits() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
            resource.setrlimit(resource.RLIMIT_CPU, (DEADLINE, DEADLINE))

        self.process = subprocess.Popen([sys.executable, "-c", NEIGHBOUR, host, str(port),
                                         "-" if user is None else str(user)], stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True, preexec_fn=limits, cwd="/")
        self.seen: list[str] = []
        line = self._line()
        assert line.startswith("PORT "), f"the neighbour did not start: {line!r}"
        self.port = int(line.split()[1])
        self.url = f"http://{host}:{self.port}/mcp"
        threading.Thread(target=self._read, daemon=True).start()

    def _line(self) -> str:
        found: list[str] = []
        reader = threading.Thread(target=lambda: found.append(self.process.stdout.readline()), daemon=True)
        reader.start()
        reader.join(DEADLINE)
        return found[0].strip() if found else ""

    def _read(self) -> None:
        for line in self.process.stdout:
            if line.startswith("AUTH "):
                self.seen.append(line[5:].strip())

    def headers_after_connect(self, **options) -> list[str]:
        """What reached the neighbour when connect() tried it (it answers 404: connect fails)."""
        self.seen.clear()
        with pytest.raises(ConnectionError):
            connect(self.url, timeout=5, **options)
        deadline = time.monotonic() + 5
        while not self.seen and time.monotonic() < deadline:
            time.sleep(0.05)
        assert self.seen, f"nothing reached the neighbour at {self.url}"
        return list(self.seen)

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(DEADLINE)


@pytest.fixture
def runtime(tmp_path, monkeypatch):
    folder = tmp_path / "runtime"
    monkeypatch.setenv(ownservers.RUNTIME_ENV, str(folder))
    monkeypatch.setenv("NBTOOLS_MCP_TOKEN", SECRET)
    return folder


def plant(folder: Path, port: int, pid: int, host: str = "127.0.0.1") -> Path:
    """A record as a server writes it (for the cases no real server can make: a dead writer...)."""
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / f"mcp-{host}-{port}.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump({"host": host, "port": port, "pid": pid, "started": time.time(), "nonce": "x"}, out)
    return path


def test_a_neighbour_on_loopback_never_gets_the_token_from_the_environment(runtime):
    neighbour = Neighbour()
    try:
        for url in (neighbour.url, neighbour.url.replace("127.0.0.1", "localhost")):
            neighbour.url = url
            assert neighbour.headers_after_connect() == ["None"] * len(neighbour.seen), url
            assert all(SECRET not in header for header in neighbour.seen)
        # what the person passes goes where they point it
        assert set(neighbour.headers_after_connect(token="given-by-hand")) == {"'Bearer given-by-hand'"}
    finally:
        neighbour.stop()


def test_the_token_reaches_this_users_server_and_not_whoever_takes_its_port_later(runtime):
    server = nbmcp.start(Registry([_add]), port=0, token=SECRET)
    port = server.port
    try:
        assert ownservers.started_here(server.url)
        with connect(server.url, timeout=10) as conn:  # no token= given: the environment's is sent
            assert conn.call("_add", a=2, b=3) == 5
        # `localhost` may also mean ::1: believed because the kernel shows no one else listens on the port
        assert ownservers.started_here(server.url.replace("127.0.0.1", "localhost"))
    finally:
        server.stop()
    assert not ownservers.started_here(server.url) and not list(runtime.glob("mcp-*"))  # the record went with it
    neighbour = Neighbour(port=port)  # the port, free again, taken by someone else
    try:
        assert all(header == "None" for header in neighbour.headers_after_connect())
    finally:
        neighbour.stop()


def test_a_record_is_believed_only_when_private_alive_and_holding_the_port(runtime):
    neighbour = Neighbour()
    try:
        # written by a process that has died (its number not in use)
        dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, check=True)
        record = plant(runtime, neighbour.port, int(dead.stdout))
        assert not ownservers.started_here(neighbour.url)
        assert all(header == "None" for header in neighbour.headers_after_connect())
        # a live writer, but a record others could have written (or read): folder or file not private
        plant(runtime, neighbour.port, os.getpid())
        for loosened, mode in ((record, 0o644), (runtime, 0o777)):
            os.chmod(loosened, mode)
            assert not ownservers.started_here(neighbour.url), loosened
            os.chmod(loosened, 0o600 if loosened == record else 0o700)
        # a record for another loopback address than the one reached
        record.unlink()
        plant(runtime, neighbour.port, os.getpid(), host="127.0.0.2")
        assert not ownservers.started_here(neighbour.url)
        assert all(header == "None" for header in neighbour.headers_after_connect())
        # the same record, right address: believed (this process is alive and this user listens there)
        plant(runtime, neighbour.port, os.getpid())
        assert ownservers.started_here(neighbour.url)
    finally:
        neighbour.stop()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to run the neighbour as another user")
def test_another_users_listener_on_a_recorded_port_gets_nothing(runtime):
    # a record that is private and whose writer (this process) is alive, but the socket on that port
    # is another user's: the kernel's table of listeners (/proc/net/tcp) decides
    neighbour = Neighbour(user=65534)
    try:
        plant(runtime, neighbour.port, os.getpid())
        assert not ownservers.started_here(neighbour.url)
        assert all(header == "None" for header in neighbour.headers_after_connect())
    finally:
        neighbour.stop()


def _add(a: int, b: int) -> int:
    """Add."""
    return a + b
