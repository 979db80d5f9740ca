"""Real Jupyter kernels for the tests: one shared by the whole session, and fresh ones on request.

- `real_kernel` (session): one "python3" kernel, started in the repository folder the first time a
  test asks for it and shut down at the end. Starting a kernel costs about a second, so the test
  files share it instead of each starting its own. What tests define stays in its namespace.
- `nbtools_kernel` (function): the shared kernel with the extension loaded, an empty registry and
  no MCP server running (servers the test started are stopped after it too).
- `sigint_raises` (function): Python's own SIGINT handler for the test's duration. A test that sends
  itself SIGINT (a person's interrupt) needs it: a shell starts background jobs with SIGINT
  ignored, and Python then keeps it ignored (CI's runner may be such a job).
- `signals_left_as_found` (function): fails a test that leaves SIGALRM's handler or the real-time
  timer other than it found them (the interpreter's tests ask for it in every test of their files).
- `lab`, `browser` (module): for the browser tests, a JupyterLab serving a temporary folder and one
  headless Chromium (tests/browserlab.py), each started once per test module that asks for it.
- `new_kernel` (function): a factory, `new_kernel(kernel_name="python3")`, for a test that needs a
  kernel of its own (another kernelspec, or process-wide state the shared one must keep); every
  kernel it started is shut down after the test.

`RealKernel` and the helpers reading a cell's outputs are in `kernels.py`.
"""

from __future__ import annotations

import os
import signal
import tempfile
from typing import Callable, Iterator

import pytest

import peers
from kernels import RealKernel
from peers import PEERS_MISSING

# Every HTTP server nbtools starts requires a bearer token: $NBTOOLS_MCP_TOKEN when set. Setting it
# for the whole session (kernels and `nbtools serve` subprocesses inherit it; `connect` reads it)
# lets tests about other things reach their servers; tests of authentication set their own.
TEST_TOKEN = os.environ.setdefault("NBTOOLS_MCP_TOKEN", "nbtools-test-token-" + os.urandom(8).hex())
# connect() sends that token only to servers this user's nbtools started, which record themselves in
# an owner-only runtime folder (nbtools.mcp.ownservers): the tests' servers, kernels and subprocesses
# share one private folder of their own, not the user's.
os.environ.setdefault("NBTOOLS_RUNTIME_DIR", tempfile.mkdtemp(prefix="nbtools-runtime-"))


@pytest.fixture(scope="session")
def real_kernel() -> Iterator[RealKernel]:
    kernel = RealKernel()
    try:
        yield kernel
    finally:
        kernel.shutdown()


# `%load_ext` only when not loaded (a second one prints "already loaded"): a test may have unloaded it.
_LOAD_AND_CLEAR = ("if 'nbtools' not in get_ipython().extension_manager.loaded:\n"
                   "    get_ipython().run_line_magic('load_ext', 'nbtools')\n"
                   "from nbtools import registry as _registry\n_registry.clear()\n")
_STOP_SERVERS = "import sys as _sys\nif 'nbtools.mcp' in _sys.modules:\n    _sys.modules['nbtools.mcp'].stop()"


@pytest.fixture
def nbtools_kernel(real_kernel: RealKernel) -> Iterator[RealKernel]:
    real_kernel.run(_LOAD_AND_CLEAR + _STOP_SERVERS)
    yield real_kernel
    real_kernel.run(_STOP_SERVERS)


@pytest.fixture
def new_kernel() -> Iterator[Callable[..., RealKernel]]:
    started: list[RealKernel] = []

    def start(kernel_name: str = "python3") -> RealKernel:
        started.append(RealKernel(kernel_name))
        return started[-1]

    try:
        yield start
    finally:
        for kernel in started:
            kernel.shutdown()


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    from browserlab import running_lab

    with running_lab(tmp_path_factory.mktemp("lab")) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator:
    from browserlab import chromium

    with chromium() as started:
        yield started


@pytest.fixture
def sigint_raises() -> Iterator[None]:
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture
def signals_left_as_found() -> Iterator[None]:
    handler = signal.getsignal(signal.SIGALRM)
    yield
    assert signal.getsignal(signal.SIGALRM) == handler
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """Every test skipped for want of the npm peers reports the same place (`peers.require_peers`),
    so pytest's summary folds them into one line ("SKIPPED [43] tests/peers.py: ..."), not one per
    test: a skip raised in a fixture is otherwise reported at each test's own line."""
    outcome = yield
    report = outcome.get_result()
    longrepr = report.longrepr
    if report.skipped and isinstance(longrepr, tuple) and len(longrepr) == 3 and PEERS_MISSING in str(longrepr[2]):
        report.longrepr = (os.path.relpath(peers.__file__, item.config.rootpath), 1, longrepr[2])
