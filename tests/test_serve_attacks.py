"""`nbtools serve` under attack (issues 25 and 37): one served call, one resource read, or a
neighbour without the token, must not kill, freeze or starve the server. The server runs as a child process with limits on its memory
(`RLIMIT_AS`) and file descriptors (`RLIMIT_NOFILE`, a common default of 1024); every wait has a
deadline, so a regression fails a test instead of hanging the suite.
"""

from __future__ import annotations

import itertools
import json
import os
import resource
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import httpx2
import pytest

import nbtools.mcp as nbmcp

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX rlimits")

ROOT = Path(__file__).resolve().parent.parent
MEMORY_LIMIT = 2 << 30   # bytes of address space for the server (each thread reserves a stack)
FILE_LIMIT = 1024        # open files for the server
DEADLINE = 30
TOKEN = "tok-attack-25"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "Authorization": f"Bearer {TOKEN}"}

TOOLS = textwrap.dedent("""
    import itertools
    from nbtools import resource, share
    from nbtools.interp import python

    def add(a: int, b: int) -> int:
        'Add.'
        return a + b

    # A natural template: several variables with separators (a regex would backtrack on them).
    @resource("files://{owner}-{repo}-{branch}-{name}")
    def file(owner: str, repo: str, branch: str, name: str) -> str:
        return f"{owner}/{repo}@{branch}:{name}"

    # Completion values made lazily: the callback never ends by itself.
    @resource("words://{word}", complete=lambda argument, value: (f"{value}{n}" for n in itertools.count()))
    def word(word: str) -> str:
        return word

    @resource("slow://sleeping")
    def sleeping() -> str:
        import time
        time.sleep(10)  # longer than the checks below may wait (5 s)
        return "woke"

    def spin(argument, value):
        while True:
            pass

    @resource("slow://{word}", complete=spin)
    def slow(word: str) -> str:
        return word

    class Endless:
        def __repr__(self):
            while True:
                pass

    endless = Endless()
    share("endless")

    __all__ = ["python", "add"]
""")


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    resource.setrlimit(resource.RLIMIT_NOFILE, (FILE_LIMIT, FILE_LIMIT))


@pytest.fixture
def server(tmp_path):
    """`nbtools serve tools.py --http 0` in a limited child; yields (process, url)."""
    yield from _serve(tmp_path)


@pytest.fixture
def quick_body_server(tmp_path):
    """The same, with a body time-out of 2 s instead of `web.BODY_TIMEOUT` (set in the child)."""
    yield from _serve(tmp_path, "import nbtools.mcp.web as web; web.BODY_TIMEOUT = 2.0")


def _serve(tmp_path, setup: str = ""):
    (tmp_path / "attack_tools.py").write_text(TOOLS)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    start = f"{setup}\nimport sys\nfrom nbtools.cli import main\nsys.exit(main())"
    process = subprocess.Popen([sys.executable, "-c", start, "serve", str(tmp_path / "attack_tools.py"),
                                "--http", "0", "--token", TOKEN],
                               stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env,
                               cwd=tmp_path, preexec_fn=_limits)
    url, seen, deadline = "", "", time.monotonic() + DEADLINE
    while time.monotonic() < deadline and not url:
        line = process.stderr.readline()
        if not line:
            break
        seen += line
        if "serving MCP at " in line:
            url = line.split("serving MCP at ")[1].split()[0]
    if not url:
        process.kill()
        pytest.fail(f"nbtools serve did not start: {seen}")
    threading.Thread(target=process.stderr.read, daemon=True).start()  # never let its pipe fill
    try:
        yield process, url
    finally:
        process.kill()
        process.wait()


def answered_within(url: str, seconds: float) -> float:
    """Seconds an authorized `initialize` took; fails when it got no answer within `seconds`."""
    started = time.monotonic()
    try:
        reply = httpx2.post(url, headers=HEADERS, content=json.dumps(INIT).encode(), timeout=seconds)
    except httpx2.TimeoutException:
        pytest.fail(f"the token holder got no answer within {seconds} s")
    assert reply.status_code == 200, reply.text
    return time.monotonic() - started


# -- one served call ---------------------------------------------------------------------------------


def test_signal_alarm_in_a_served_python_call_does_not_kill_the_server(server):
    # Before: served calls run on worker threads, where the alarm was not intercepted: SIGALRM's
    # default action ended the server a second later.
    process, url = server
    with nbmcp.connect(url, token=TOKEN, timeout=DEADLINE) as remote:
        tools = {each.name: each for each in remote}
        text = tools["python"].call({"code": "import signal\nsignal.alarm(1)\n'armed'"})
        assert "signal.alarm() is not available here" in text, text
        text = tools["python"].call({"code": "import signal\nsignal.setitimer(signal.ITIMER_REAL, 0.5)"})
        assert "signal.setitimer() is not available here" in text, text
        time.sleep(1.5)
        assert process.poll() is None, "the server died"
        assert tools["add"].call({"a": 2, "b": 3}) == 5


def test_blocked_python_calls_do_not_starve_the_server(server):
    # Before: `time.sleep(30)` with timeout=1 held its worker thread for 30 s; 45 of them took
    # every thread of the pool (40), and no tool answered for 30 s.
    process, url = server
    with nbmcp.connect(url, token=TOKEN, timeout=DEADLINE) as remote:
        tools = {each.name: each for each in remote}
        answers: list = []

        def stuck() -> None:
            answers.append(tools["python"].call({"code": "import time\ntime.sleep(30)", "timeout": 1}))

        callers = [threading.Thread(target=stuck, daemon=True) for _ in range(45)]
        for caller in callers:
            caller.start()
        time.sleep(0.5)  # every call has reached the server
        started = time.monotonic()
        assert tools["add"].call({"a": 1, "b": 1}) == 2
        took = time.monotonic() - started
        print(f"another tool answered in {took:.2f} s beside 45 blocked python() calls")
        for caller in callers:
            caller.join(10)
        assert len(answers) == 45, "the stuck calls did not come back after their time-out"
        assert all("did not finish within 1 s" in text or "still blocked" in text for text in answers), answers
        assert took < 10, f"another tool waited {took:.1f} s"
        assert process.poll() is None


# -- a neighbour without the token --------------------------------------------------------------------

HALF_OPEN = textwrap.dedent("""
    import resource, socket, sys, time
    resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
    host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    held = []
    for _ in range(count):
        try:
            sock = socket.create_connection((host, port), timeout=2)
            sock.sendall(b"POST /mcp HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n")  # never finished
            held.append(sock)
        except OSError:
            pass
    print(len(held), flush=True)
    time.sleep(float(sys.argv[4]))
""")


def test_half_open_connections_do_not_starve_the_token_holder(server):
    # Before: 1,100 connections that never finish their request headers took every file descriptor
    # of the server (1024): it stopped accepting, and the token holder waited until they closed.
    process, url = server
    host, port = url.split("//")[1].split("/")[0].rsplit(":", 1)
    quiet = answered_within(url, DEADLINE)  # the first request also loads what serving needs
    neighbour = subprocess.Popen([sys.executable, "-c", HALF_OPEN, host, port, "1100", "25"],
                                 stdout=subprocess.PIPE, text=True)
    try:
        opened = neighbour.stdout.readline()
        assert opened.strip(), "the neighbour could not connect at all"
        took = answered_within(url, 8)
        print(f"token holder answered in {took:.2f} s with {opened.strip()} half-open connections "
              f"({quiet:.2f} s before they were opened)")
        assert took < 5, f"the token holder waited {took:.1f} s"
        assert process.poll() is None
    finally:
        neighbour.kill()
        neighbour.wait()


TRICKLE = textwrap.dedent("""
    import resource, socket, sys, time
    resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
    host, port, count, seconds, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
    token = sys.argv[6] if len(sys.argv) > 6 else ""
    auth = f"Authorization: Bearer {token}\\r\\n".encode() if token else b""
    head = (f"POST {path} HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nContent-Type: application/json\\r\\n"
            "Accept: application/json, text/event-stream\\r\\nContent-Length: 1000000\\r\\n").encode()
    held = []
    for _ in range(count):
        try:
            sock = socket.create_connection((host, port), timeout=2)
            # a whole request head, then a body that never ends arriving
            sock.sendall(head + auth + b"\\r\\n{")
            sock.setblocking(False)
            held.append(sock)
        except OSError:
            pass
    print(len(held), flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:  # one byte each, every second: never idle long enough to be dropped
        for sock in list(held):
            try:
                sock.send(b" ")
            except OSError:  # the server closed it
                held.remove(sock)
        time.sleep(1)
    print(len(held), flush=True)
""")


@pytest.mark.parametrize("path", ["/mcp", "/elsewhere"])
def test_connections_answered_while_their_body_trickles_do_not_starve_the_token_holder(server, path):
    # Before: 300 connections without the token, answered at once (401 at /mcp, 404 elsewhere) but
    # still sending their body a byte a second, counted as requests in progress: they filled the 200
    # connections the server keeps, and it closed every new one, the token holder's too.
    process, url = server
    host, port = url.split("//")[1].split("/")[0].rsplit(":", 1)
    quiet = answered_within(url, DEADLINE)
    neighbour = subprocess.Popen([sys.executable, "-c", TRICKLE, host, port, "300", "25", path],
                                 stdout=subprocess.PIPE, text=True)
    try:
        opened = neighbour.stdout.readline()
        assert opened.strip(), "the neighbour could not connect at all"
        time.sleep(2)  # the trickle is under way
        took = []
        for _ in range(3):
            try:
                took.append(answered_within(url, 8))
            except httpx2.TransportError as error:
                pytest.fail(f"the token holder was turned away: {type(error).__name__}: {error}")
        print(f"token holder answered in {max(took):.2f} s at most with {opened.strip()} trickling connections "
              f"({quiet:.2f} s before they were opened)")
        assert max(took) < 5, f"the token holder waited {max(took):.1f} s"
        assert process.poll() is None
    finally:
        neighbour.kill()
        neighbour.wait()


def test_a_body_must_arrive_within_the_body_time_out(quick_body_server):
    # Before: a request whose body trickled in (here the token holder's own: past the token check,
    # the SDK waits for the body) kept its connection, and its place among the 200, for as long as
    # the bytes kept coming.
    process, url = quick_body_server
    host, port = url.split("//")[1].split("/")[0].rsplit(":", 1)
    slow = subprocess.run([sys.executable, "-c", TRICKLE, host, port, "20", "8", "/mcp", TOKEN],
                          capture_output=True, text=True, timeout=DEADLINE)
    opened, left = slow.stdout.split()
    assert opened == "20" and left == "0", f"{left} of {opened} trickling bodies were still open after 8 s"
    assert answered_within(url, 5) < 5
    assert process.poll() is None


# -- one resource read (issue 37) ---------------------------------------------------------------------


def _session(url: str) -> dict:
    """The headers of a fresh MCP session (initialize, then notifications/initialized)."""
    reply = httpx2.post(url, headers=HEADERS, content=json.dumps(INIT).encode(), timeout=DEADLINE)
    assert reply.status_code == 200, reply.text
    headers = {**HEADERS, "Mcp-Session-Id": reply.headers["mcp-session-id"],
               "Mcp-Protocol-Version": "2025-06-18"}
    done = httpx2.post(url, headers=headers, timeout=DEADLINE,
                       content=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())
    assert done.status_code == 202, done.text
    return headers


_IDS = itertools.count(2)  # request ids: requests in flight together need their own


def _ask(url: str, headers: dict, method: str, params: dict, seconds: float) -> dict:
    """One JSON-RPC request's answer (`result` or `error`); fails when none came within `seconds`."""
    body = {"jsonrpc": "2.0", "id": next(_IDS), "method": method, "params": params}
    try:
        reply = httpx2.post(url, headers=headers, content=json.dumps(body).encode(), timeout=seconds)
    except httpx2.TimeoutException:
        pytest.fail(f"{method} got no answer within {seconds} s: the server is frozen")
    assert reply.status_code == 200, reply.text
    text = reply.text
    if reply.headers.get("content-type", "").startswith("text/event-stream"):
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:") and '"id"' in line)
    return json.loads(text)


def test_a_long_uri_against_a_template_with_separators_does_not_freeze_the_server(server):
    # Before: `files://{owner}-{repo}-{branch}-{name}` was a backtracking regex; 3,000 dashes and a
    # slash took it hours (seconds already at 200), holding the GIL on the transport's thread.
    process, url = server
    headers = _session(url)
    found = _ask(url, headers, "resources/read", {"uri": "files://ada-nbtools-main-README.md"}, DEADLINE)
    assert found["result"]["contents"][0]["text"] == "ada/nbtools@main:README.md"
    started = time.monotonic()
    missing = _ask(url, headers, "resources/read", {"uri": "files://" + "-" * 3000 + "/"}, DEADLINE)
    assert missing["error"]["code"] == -32002 and "Unknown resource" in missing["error"]["message"]
    # far longer: refused by its length, before any matching
    huge = _ask(url, headers, "resources/read", {"uri": "files://" + "a-" * 100_000}, DEADLINE)
    assert huge["error"]["code"] == -32602 and "longer than" in huge["error"]["message"], huge
    kept = _ask(url, headers, "resources/subscribe", {"uri": "files://" + "a-" * 100_000}, DEADLINE)
    assert kept["error"]["code"] == -32602 and "longer than" in kept["error"]["message"], kept
    took = time.monotonic() - started
    print(f"both refused in {took:.2f} s")
    assert answered_within(url, 5) < 5
    assert process.poll() is None


def test_completion_of_an_endless_callback_or_a_huge_value_stays_bounded(server):
    # Before: the callback's values were all collected: a lazy, endless one froze the server.
    process, url = server
    headers = _session(url)
    ref = {"type": "ref/resource", "uri": "words://{word}"}
    answer = _ask(url, headers, "completion/complete", {"ref": ref, "argument": {"name": "word", "value": "ab"}},
                  DEADLINE)
    assert "result" in answer, answer
    completion = answer["result"]["completion"]
    assert completion["values"][:3] == ["ab0", "ab1", "ab2"] and len(completion["values"]) == 100
    assert completion["hasMore"] is True
    huge = _ask(url, headers, "completion/complete",
                {"ref": ref, "argument": {"name": "word", "value": "x" * 1_000_000}}, DEADLINE)
    assert huge["error"]["code"] == -32602 and "longer than" in huge["error"]["message"], huge
    # a callback that never ends is stopped
    slow = _ask(url, headers, "completion/complete",
                {"ref": {"type": "ref/resource", "uri": "slow://{word}"}, "argument": {"name": "word", "value": "a"}},
                DEADLINE)
    assert "took longer than 2 s and was stopped" in slow["error"]["message"], slow
    assert answered_within(url, 5) < 5
    assert process.poll() is None


def test_a_shared_variable_whose_preview_never_ends_is_stopped_at_its_deadline(server):
    # Before: the read ran `repr(endless)` on the server's loop for good: nothing else was answered.
    process, url = server
    headers = _session(url)
    answer = _ask(url, headers, "resources/read", {"uri": "kernel://variables/endless"}, DEADLINE)
    assert "result" in answer, answer
    text = answer["result"]["contents"][0]["text"]
    assert "the preview of this Endless stopped at its 2 s deadline" in text, text
    assert answered_within(url, 5) < 5
    assert process.poll() is None


def test_a_slow_resource_function_does_not_hold_up_the_server(server):
    # Before: resource and prompt functions ran on the server's loop even under `nbtools serve`, where
    # plain tools run in worker threads: one slow read held up every other client and request.
    process, url = server
    headers = _session(url)
    slow: list = []
    def read() -> None:
        try:
            slow.append(_ask(url, headers, "resources/read", {"uri": "slow://sleeping"}, DEADLINE))
        except BaseException as error:  # pytest.fail's Failed too: the assertion below shows it
            slow.append(error)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(1)  # the read has begun
    assert answered_within(url, 5) < 5
    found = _ask(url, headers, "resources/read", {"uri": "files://ada-nbtools-main-README.md"}, 5)
    assert found["result"]["contents"][0]["text"] == "ada/nbtools@main:README.md"
    reader.join(DEADLINE)
    assert slow and isinstance(slow[0], dict), slow
    assert slow[0]["result"]["contents"][0]["text"] == "woke"
    assert process.poll() is None
