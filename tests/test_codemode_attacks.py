"""Code mode under attack: a model's code trying to reach what code mode promises it cannot (files,
the environment, the network, imports, the registry and its policy, the host's objects), and code
that tries to outlast its limits (time, memory, tool calls), also by catching what stops it.

Each attack runs in its own child process with a memory limit (`RLIMIT_AS`, inherited by Monty's
worker) and a wall-clock limit, so a regression fails one test instead of hanging or exhausting
the suite. Each asserts the promise (DESIGN.md "Code mode"): the run ends with its answer, the
attack got nothing, a limit stops the run with one line, and the process and a later run are
unaffected. No tight timings: only "stopped, and well before the child's own limit".
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("pydantic_monty", reason="code mode needs the [codemode] extra (pydantic-monty)")
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX rlimits")

MEMORY_LIMIT = 2 << 30  # bytes of address space for the child (its Monty worker inherits it)
WALL_LIMIT = 60         # seconds before the child is killed and the test fails

CHILD = textwrap.dedent("""\
    import json, os, resource, sys, time
    resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
    from nbtools import Registry

    SECRET = "kernel-secret-value"
    os.environ["NBTOOLS_TEST_SECRET"] = SECRET
    asked = []

    def approve(tool, args, *, origin):
        asked.append(origin)
        return False  # every destructive call is refused

    registry = Registry(approve=approve)

    def add(a: int, b: int = 1) -> int:
        "Add two integers."
        return a + b

    def slow(seconds: float) -> str:
        "Wait, then answer."
        time.sleep(seconds)
        return "done"

    def wipe(path: str) -> str:
        "Delete a folder."
        raise AssertionError("a refused call ran")

    registry.add(add)
    registry.add(slow)
    registry.add(wipe, hints="destructive")

    def rss_mb():
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    for code, options in json.loads(sys.argv[1]):  # one attack after another, each reported
        asked.clear()
        run = registry.code_tool(**options)
        started = time.monotonic()
        result = run.call({{"code": code}})
        elapsed = time.monotonic() - started
        later = registry.code_tool().call({{"code": "add(41)"}})
        print(json.dumps({{"result": result, "elapsed": elapsed, "asked": list(asked), "later": later,
                          "rss_mb": rss_mb(), "secret_seen": SECRET in json.dumps(result)}}), flush=True)
    """)


def attacks(runs: list[tuple[str, dict]]) -> list[dict]:
    """Run each (code, code_tool options) through a code tool, one after another in one limited
    child process; what it reported for each."""
    script = CHILD.format(limit=MEMORY_LIMIT)
    try:
        done = subprocess.run([sys.executable, "-c", script, json.dumps(runs)], capture_output=True,
                              text=True, timeout=WALL_LIMIT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the child was still running after {WALL_LIMIT} s: a limit was escaped")
    assert done.returncode == 0, f"the child failed: {done.stderr[-3000:]}"
    reports = [json.loads(line) for line in done.stdout.strip().splitlines()[-len(runs):]]
    for report in reports:
        assert report["later"]["value"] == 42 and report["later"]["error"] is None, report["later"]  # later runs work
        assert not report["secret_seen"], "the code reached a value of the host"
    return reports


def attack(code: str, **options) -> dict:
    """Run `code` through a code tool in a limited child process of its own; what it reported."""
    return attacks([(code, options)])[0]


# Attacks on what the code may reach, run together in one child (each is still its own test)
FILES = ["open('/etc/passwd').read()", "import pathlib\npathlib.Path('/etc/passwd').read_text()",
         "import os\nos.listdir('/')", "import os\nopen('/tmp/nbtools-codemode-attack', 'w').write('x')"]
ENVIRONMENT = ["import os\nos.environ['NBTOOLS_TEST_SECRET']", "import os\nos.getenv('NBTOOLS_TEST_SECRET')",
               "import os\ndict(os.environ)"]
MODULES = ["socket", "subprocess", "nbtools", "urllib.request", "ctypes", "importlib"]
HOST = ["registry", "SECRET", "approve", "asked", "globals()['registry']", "__builtins__", "add.__globals__",
        "getattr(add, '__globals__')", "add.__closure__", "type(add).__subclasses__()", "add.__self__",
        "().__class__.__bases__[0].__subclasses__()", "__import__('os').environ"]


@pytest.fixture(scope="module")
def reached() -> dict[str, dict]:
    codes = [*FILES, *ENVIRONMENT, *(f"import {module}\n{module.split('.')[0]}" for module in MODULES), *HOST]
    return dict(zip(codes, attacks([(code, {}) for code in codes])))


# -- what the code cannot reach ---------------------------------------------------------------------------
@pytest.mark.parametrize("code", FILES)
def test_files_are_out_of_reach(code, reached):
    result = reached[code]["result"]
    assert result["error"] is not None and result["value"] is None
    assert result["error"].split(":")[0] in ("PermissionError", "RuntimeError", "OSError", "FileNotFoundError")


@pytest.mark.parametrize("code", ENVIRONMENT)
def test_the_environment_is_out_of_reach(code, reached):
    result = reached[code]["result"]
    assert result["error"] is not None and result["value"] is None


@pytest.mark.parametrize("module", MODULES)
def test_imports_beyond_the_sandboxs_own_fail(module, reached):
    result = reached[f"import {module}\n{module.split('.')[0]}"]["result"]
    assert result["error"].startswith("ModuleNotFoundError"), result["error"]


@pytest.mark.parametrize("code", HOST)
def test_the_registry_its_policy_and_the_host_objects_are_out_of_reach(code, reached):
    report = reached[code]
    result = report["result"]
    assert result["error"] is not None or result["value"] in (None, [], {}), result
    assert report["asked"] == [] and result["calls"] == []


def test_a_refused_call_never_runs_even_when_the_code_insists():
    code = "for _ in range(3):\n    try:\n        wipe('/')\n    except BaseException:\n        pass\n'tried'"
    report = attack(code)
    assert report["result"]["value"] == "tried" and report["asked"] == ["call/code"] * 3
    assert all(not call["ok"] for call in report["result"]["calls"])


# -- limits -------------------------------------------------------------------------------------------------
def test_a_busy_loop_stops_at_the_time_limit_with_one_line():
    report = attack("while True:\n    pass", timeout=1)
    assert report["result"]["error"] == ("stopped: the run took longer than its time limit of 1 s "
                                         "(wall clock, tool calls included)")
    assert report["elapsed"] < WALL_LIMIT / 3


def test_catching_everything_does_not_outlast_the_time_limit():
    code = "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass"
    report = attack(code, timeout=1)
    assert report["result"]["error"].startswith("stopped: the run took longer than its time limit of 1 s")


def test_time_spent_in_tool_calls_counts_toward_the_time_limit():
    # each call is short; the sandbox itself is nearly idle, so only a wall clock stops this
    report = attack("n = 0\nwhile True:\n    slow(0.2)\n    n += 1", timeout=1.5, max_tool_calls=10_000)
    result = report["result"]
    assert result["error"].startswith("stopped: the run took longer than its time limit of 1.5 s")
    assert 1 <= len(result["calls"]) < 50 and all(call["outcome"] == "done" for call in result["calls"])


def test_a_tool_call_running_at_the_deadline_finishes_and_the_run_stops_after_it():
    report = attack("slow(2)\nprint('after')\nadd(1)", timeout=1)
    result = report["result"]
    assert result["error"].startswith("stopped: the run took longer than its time limit of 1 s")
    assert [call["tool"] for call in result["calls"]] == ["slow"] and result["printed"] == ""


@pytest.mark.parametrize("code", [
    "x = [0] * (10 ** 9)",
    "s = 'a'\nwhile True:\n    s = s + s",
    "x = []\nwhile True:\n    try:\n        x.append(' ' * 10**6)\n    except MemoryError:\n        pass",
])
def test_memory_is_capped_and_the_process_stays_small(code):
    report = attack(code, memory="64MiB")
    assert report["result"]["error"] == "stopped: the code used more memory than its limit of 64MiB"
    assert report["rss_mb"] < 300  # the host process never held the code's data


def test_tool_calls_beyond_the_limit_stop_the_run_even_when_caught():
    code = "while True:\n    try:\n        add(1)\n    except BaseException:\n        pass"
    report = attack(code, max_tool_calls=20)
    assert report["result"]["error"].startswith("stopped: the code tried to make more than 20 tool calls")
    assert len(report["result"]["calls"]) == 20


def test_printing_without_end_is_bounded():
    report = attack("while True:\n    print('x' * 10000)", timeout=3)
    result = report["result"]
    assert result["error"] is not None
    assert len(result["printed"]) <= 11 * 1024 * 1024 and report["rss_mb"] < 500


def test_a_persons_interrupt_stops_a_run_at_once_and_later_runs_work():
    # Monty's calls block in native code; the interrupt must not wait for the run's own time limit
    script = textwrap.dedent("""\
        import json, os, resource, signal, threading, time
        resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
        from nbtools import Registry

        def add(a: int) -> int:
            "Add one."
            return a + 1

        registry = Registry([add])
        run = registry.code_tool(timeout=40)
        threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        started = time.monotonic()
        try:
            run.call({{"code": "while True:\\n    pass"}})
            outcome = "not interrupted"
        except KeyboardInterrupt as stop:
            outcome = f"{{type(stop).__name__}}: {{stop}}"
        elapsed = time.monotonic() - started
        later = run.call({{"code": "add(41)"}})
        print(json.dumps({{"outcome": outcome, "elapsed": elapsed, "later": later["value"]}}))
        """).format(limit=MEMORY_LIMIT)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=WALL_LIMIT)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["outcome"] == "Interrupted: tool 'run_code' was interrupted and did not finish"
    assert report["elapsed"] < 20 and report["later"] == 42
