"""`%tools --serve --cells`: served calls written as cells into the open notebook, against a real
`jupyter server` with real-time collaboration (jupyter-collaboration, as installed), the notebook's
room joined by a room client the way JupyterLab joins it (jupyter-nbmodel-client), a real kernel of
that notebook and the MCP SDK's client through the extension: the cell's source, metadata and tag,
outputs seen in the room while the call runs, refused calls, a second open notebook left alone, the
resources before and after `--cells`, the saved file, a neighbour that cannot write cells; and a
server without collaboration, where nothing is written and one line says what to install.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from types import SimpleNamespace
from typing import Iterator

import anyio
import pytest

from jupyterserver import JupyterServer, http
from kernels import text_of
from test_jupyter_server import mcp_session

DEADLINE = 120  # seconds for one exchange on a loaded machine
NOTEBOOK = "agent work.ipynb"
OTHER = "other.ipynb"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEElEQVR4nGP4z8AARAwQCgAf7gP9i18U1AAAAABJRU5ErkJggg=="

TOOLS = """
    %load_ext nbtools
    import nbtools
    from nbtools import python
    %tool python

    def add(a: int, b: int) -> int:
        'Add two integers.'
        return a + b

    def sleepy(folder: str) -> str:
        'Sleep a long time in a plain function.'
        import pathlib, time
        pathlib.Path(folder, 'started').write_text('yes')
        time.sleep(600)
        return 'woke'

    %tool sleepy

    def erase(name: str) -> str:
        'Erase a thing.'
        return f'erased {name}'

    %tool add
    %tool erase --hints destructive
    nbtools.registry.approve = lambda tool, args: getattr(tool, 'name', tool) != 'erase'  # python() runs, erase is denied
"""


class Room:
    """A room client of one notebook (jupyter-nbmodel-client, as JupyterLab joins a room) on a loop of its own."""

    def __init__(self, server: JupyterServer, path: str) -> None:
        from jupyter_nbmodel_client import NbModelClient, get_jupyter_notebook_websocket_url

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        url = get_jupyter_notebook_websocket_url(server.url, path, server.token)
        self.client = self.call(self._made(NbModelClient, url))
        self.call(self.client.start())
        self.call(self.client.wait_until_synced())

    @staticmethod
    async def _made(kind, url):  # made on its loop: it binds its asyncio objects there
        return kind(url)

    def call(self, coroutine, timeout: float = DEADLINE):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def cells(self) -> list[dict]:
        async def read():
            return self.client._doc.get()["cells"]
        return self.call(read())

    def agent_cells(self) -> list[dict]:
        return [cell for cell in self.cells() if "nbtools-agent" in cell["metadata"].get("tags", [])]

    def wait_for(self, check, what: str) -> list[dict]:
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            cells = self.agent_cells()
            if check(cells):
                return cells
            time.sleep(0.05)
        raise AssertionError(f"the room never saw {what}: {json.dumps(self.agent_cells(), indent=1)}")

    def close(self) -> None:
        try:
            self.call(self.client.stop(), timeout=30)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)


def text(output: dict) -> str:
    if output["output_type"] == "stream":
        return output["text"] if isinstance(output["text"], str) else "".join(output["text"])
    if output["output_type"] == "error":
        return f"{output['ename']}: {output['evalue']}"
    plain = output.get("data", {}).get("text/plain", "")
    return plain if isinstance(plain, str) else "".join(plain)


def session_of(server, path):
    return mcp_session(f"{server.url}nbtools/mcp/notebooks/{path.replace(' ', '%20')}", "2025-11-25",
                       {"Authorization": f"token {server.token}"})


def call(server, name, arguments, path=NOTEBOOK):
    async def client():
        async with await session_of(server, path) as session:
            with anyio.fail_after(DEADLINE):
                return await session.call_tool(name, arguments)
    return anyio.run(client)


def call_in_background(server, name, arguments, path=NOTEBOOK) -> tuple[threading.Thread, dict]:
    """`call` on a thread of its own (started); what the client heard lands in the dict, as
    "result" or "error" (a kernel that dies or restarts may cut the answer's stream)."""
    heard: dict = {}

    def calling() -> None:
        try:
            heard["result"] = call(server, name, arguments, path)
        except Exception as error:  # noqa: BLE001 - the test asserts what was heard
            heard["error"] = error
        heard["at"] = time.monotonic()

    caller = threading.Thread(target=calling, daemon=True)
    caller.start()
    return caller, heard


@contextlib.contextmanager
def a_call_running(server, path: str, printed: str, *, earlier: tuple = ()) -> Iterator[SimpleNamespace]:
    """A kernel of notebook `path` serving with `--cells`, the notebook open in a room, the `earlier`
    calls ((name, arguments) pairs) made, and then a python() call that printed `printed` and sleeps:
    (kernel, room, code, caller, heard), `caller` and `heard` as `call_in_background` gives them."""
    kernel = server.notebook_kernel(path)
    room = Room(server, path)
    try:
        kernel.run(TOOLS)
        assert f"written as a cell at the end of {path}" in text_of(kernel.run("%tools --serve --cells"))
        for name, arguments in earlier:
            assert not call(server, name, arguments, path=path).is_error
        code = f"import time\nprint({printed!r})\ntime.sleep(600)"
        caller, heard = call_in_background(server, "python", {"code": code}, path=path)
        room.wait_for(lambda cells: any(c["source"] == code and c["outputs"] for c in cells), "the call running")
        yield SimpleNamespace(kernel=kernel, room=room, code=code, caller=caller, heard=heard)
    finally:
        room.close()


def kernel_pid(server, kernel) -> int:
    """The pid a serving kernel registered (the one the server checks against the kernel it runs)."""
    return json.loads((server.runtime / f"nbtools-kernel-{kernel.kernel_id}.json").read_text())["pid"]


def resources(server, *uris, path=NOTEBOOK):
    async def client():
        async with await session_of(server, path) as session:
            with anyio.fail_after(DEADLINE):
                listed = [str(r.uri) for r in (await session.list_resources()).resources]
                templates = [t.uri_template for t in (await session.list_resource_templates()).resource_templates]
                read = [(await session.read_resource(uri)).contents for uri in uris]
        return listed, templates, read
    return anyio.run(client)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    started = JupyterServer(tmp_path_factory.mktemp("cells"))
    yield started
    started.stop()


@pytest.fixture(scope="module")
def rooms(server):
    """The kernel of NOTEBOOK and of OTHER (each serving), both notebooks open in a room, and what
    the resources were before `--cells`."""
    kernel = server.notebook_kernel(NOTEBOOK)
    other = server.notebook_kernel(OTHER)
    opened = {NOTEBOOK: Room(server, NOTEBOOK), OTHER: Room(server, OTHER)}
    kernel.run(TOOLS)
    other.run("%load_ext nbtools\n%tools --serve --cells")
    text_of(kernel.run("%tools --serve"))
    kernel.before = resources(server)
    assert "already serving at" in kernel.fails("%tools --serve --cells")  # not silently without cells
    kernel.run("%tools --stop")
    kernel.served = text_of(kernel.run("%tools --serve --cells"))
    yield kernel, other, opened
    for room in opened.values():
        room.close()


def test_serving_with_cells_says_where_the_cells_go(rooms):
    kernel, _, _ = rooms
    assert f"written as a cell at the end of {NOTEBOOK}" in kernel.served, kernel.served
    assert "notebook://cells" in kernel.served


def test_a_tool_call_becomes_a_cell_that_repeats_it(server, rooms):
    kernel, _, opened = rooms
    other_before = opened[OTHER].cells()
    result = call(server, "add", {"a": 2, "b": 3})
    assert result.structured_content == {"result": 5}
    cells = opened[NOTEBOOK].wait_for(lambda cells: any(c["source"] == "add(a=2, b=3)" and
                                                        c["metadata"]["nbtools"]["status"] == "ok" for c in cells),
                                      "add's cell end")
    cell = [c for c in cells if c["source"] == "add(a=2, b=3)"][-1]
    meta = cell["metadata"]["nbtools"]
    assert meta["tool"] == "add" and meta["by"].startswith("mcp:pytest-client@") and meta["started"].endswith("+00:00")
    assert cell["cell_type"] == "code" and cell["metadata"]["tags"] == ["nbtools-agent"]
    assert [text(output) for output in cell["outputs"]] == ["5"]
    # running the cell repeats the call
    assert text_of(kernel.run(cell["source"])) == "5"
    # never in the other open notebook (whose kernel serves with --cells too)
    time.sleep(1)
    assert opened[OTHER].cells() == other_before


def test_python_outputs_reach_the_room_while_the_call_runs(server, rooms, tmp_path):
    _, _, opened = rooms
    signal = tmp_path / "signal"
    code = (f"import time, pathlib\nprint('first line')\nfor _ in range({DEADLINE * 20}):\n"
            f"    if pathlib.Path({str(signal)!r}).exists(): break\n    time.sleep(0.05)\n"
            "print('second line')\n6 * 7")
    answer: dict = {}
    caller = threading.Thread(target=lambda: answer.update(result=call(server, "python", {"code": code})))
    caller.start()
    try:
        cells = opened[NOTEBOOK].wait_for(
            lambda cells: any(c["source"] == code and "first line" in "".join(map(text, c["outputs"]))
                              for c in cells), "the first line while python() runs")
        running = [c for c in cells if c["source"] == code][-1]
        assert running["metadata"]["nbtools"]["status"] == "running" and "second" not in str(running["outputs"])
    finally:
        signal.write_text("go")
        caller.join(DEADLINE)
    assert not answer["result"].is_error
    cells = opened[NOTEBOOK].wait_for(lambda cells: any(c["source"] == code and c["metadata"]["nbtools"]["status"]
                                                        == "ok" for c in cells), "python()'s end")
    done = [c for c in cells if c["source"] == code][-1]
    assert [(o["output_type"], text(o)) for o in done["outputs"]] == [
        ("stream", "first line\nsecond line\n"), ("execute_result", "42")]


def test_calls_run_as_tasks_become_cells_too(server, rooms):
    """A client that declares the tasks extension gets a task for every kernel tool: those calls are
    written as cells as well (python()'s prints while it runs), refused ones saying so."""
    import nbtools.mcp as nbmcp
    from nbtools.errors import ToolCallError

    _, _, opened = rooms
    code = "print('printed in a task')\n6 * 7"
    url = f"{server.url}nbtools/mcp/notebooks/{NOTEBOOK.replace(' ', '%20')}"
    with nbmcp.connect(url, headers={"Authorization": f"token {server.token}"}) as connection:
        assert connection.call("add", {"a": 20, "b": 22}, task=True) == 42
        assert connection.call("python", {"code": code}, task=True) == "printed in a task\n42"
        with pytest.raises(ToolCallError):
            connection.call("erase", {"name": "y"}, task=True)
    ended = {"add(a=20, b=22)", code, "erase(name='y')"}
    cells = opened[NOTEBOOK].wait_for(
        lambda cells: ended <= {c["source"] for c in cells if c["metadata"]["nbtools"]["status"] != "running"},
        "the tasks' cells end")
    add, python, erase = ([c for c in cells if c["source"] == source][-1] for source in ("add(a=20, b=22)", code,
                                                                                          "erase(name='y')"))
    assert add["metadata"]["nbtools"]["status"] == "ok" and [text(o) for o in add["outputs"]] == ["42"]
    assert add["metadata"]["nbtools"]["by"].startswith("mcp:") and "@" in add["metadata"]["nbtools"]["by"]
    assert python["metadata"]["nbtools"]["status"] == "ok"
    assert [(o["output_type"], text(o)) for o in python["outputs"]] == [("stream", "printed in a task\n"),
                                                                         ("execute_result", "42")]
    assert erase["metadata"]["nbtools"]["status"] == "refused"
    assert [o.get("ename") for o in erase["outputs"]] == ["CallRefused"]


def test_a_flood_of_output_reaches_the_cell_bounded_and_the_room_stays_in_sync(server, rooms):
    """python() printing 20 MB: its cell gets the start, one line saying how much was left out, and the
    end; the shared document stays small, so its room clients (here a websocket frame limit of 16 MB)
    keep receiving it, and the person's notebook is not 20 MB heavier."""
    _, _, opened = rooms
    code = "print('first line')\nprint('x' * 20_000_000)\nprint('last line')\n'done'"
    result = call(server, "python", {"code": code})
    assert not result.is_error
    assert call(server, "add", {"a": 7, "b": 8}).structured_content == {"result": 15}
    cells = opened[NOTEBOOK].wait_for(lambda cells: any(c["source"] == "add(a=7, b=8)" and
                                                        c["metadata"]["nbtools"]["status"] == "ok" for c in cells),
                                      "the call after the flood")
    flood = [c for c in cells if c["source"] == code][-1]
    assert flood["metadata"]["nbtools"]["status"] == "ok"
    streamed = "".join(text(o) for o in flood["outputs"] if o["output_type"] == "stream")
    assert len(streamed) < 200_000, len(streamed)
    assert streamed.startswith("first line\nxxx") and streamed.endswith("xxx\nlast line\n")
    assert "characters of output not written into this cell" in streamed
    assert [text(o) for o in flood["outputs"] if o["output_type"] == "execute_result"] == ["'done'"]  # the value
    assert sum(len(json.dumps(c)) for c in opened[NOTEBOOK].cells()) < 1_000_000


def test_a_progress_bar_is_kept_as_a_terminal_shows_it(server, rooms):
    """A progress line redrawn with carriage returns (tqdm's way) ends as the last state of the line, as
    JupyterLab keeps a kernel's own output, not as every redraw one after another."""
    _, _, opened = rooms
    code = ("import time\nprint('downloading')\nfor i in range(1, 201):\n    print(f'\\r{i}/200', end='')\n"
            "    if i % 50 == 0: time.sleep(0.2)\nprint()\nprint('fine')\n'done'")
    assert not call(server, "python", {"code": code}).is_error
    cells = opened[NOTEBOOK].wait_for(lambda cells: any(c["source"] == code and c["metadata"]["nbtools"]["status"]
                                                        == "ok" for c in cells), "the progress bar's end")
    done = [c for c in cells if c["source"] == code][-1]
    assert [(o["output_type"], text(o)) for o in done["outputs"]] == [
        ("stream", "downloading\n200/200\nfine\n"), ("execute_result", "'done'")]


def test_a_refused_call_says_so(server, rooms):
    _, _, opened = rooms
    result = call(server, "erase", {"name": "x"})
    assert result.is_error
    cells = opened[NOTEBOOK].wait_for(lambda cells: any(c["source"] == "erase(name='x')" and
                                                        c["metadata"]["nbtools"]["status"] != "running"
                                                        for c in cells), "erase's end")
    cell = [c for c in cells if c["source"] == "erase(name='x')"][-1]
    assert cell["metadata"]["nbtools"]["status"] == "refused"
    assert cell["outputs"][0]["output_type"] == "error" and cell["outputs"][0]["ename"] == "CallRefused"


def test_a_cancelled_call_says_so(server, rooms, tmp_path):
    _, _, opened = rooms
    started = tmp_path / "started"
    code = f"sleepy(folder={str(tmp_path)!r})"

    async def client():
        async with await session_of(server, NOTEBOOK) as session:
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as group:
                    group.start_soon(session.call_tool, "sleepy", {"folder": str(tmp_path)})
                    with anyio.fail_after(DEADLINE):
                        while not started.exists():
                            await anyio.sleep(0.05)
                    scope.cancel()
        return scope.cancelled_caught

    assert anyio.run(client)
    cells = opened[NOTEBOOK].wait_for(lambda cells: any(c["source"] == code and c["metadata"]["nbtools"]["status"]
                                                        == "cancelled" for c in cells), "the cancelled call's end")
    cell = [c for c in cells if c["source"] == code][-1]
    assert [(o["output_type"], o["ename"]) for o in cell["outputs"]] == [("error", "Cancelled")]


def test_the_resources_come_only_with_cells_and_give_sources_outputs_and_images(server, rooms):
    kernel, _, opened = rooms
    listed, templates, _ = kernel.before
    assert "notebook://cells" not in listed and "notebook://cells/{index}" not in templates
    code = f"import base64\nfrom IPython.display import Image, display\ndisplay(Image(base64.b64decode({PNG!r})))\n'shown'"
    call(server, "python", {"code": code})
    opened[NOTEBOOK].wait_for(lambda cells: any(c["source"] == code and c["metadata"]["nbtools"]["status"]
                                                == "ok" for c in cells), "the picture's cell")
    index = [c["source"] for c in opened[NOTEBOOK].cells()].index(code)
    listed, templates, (whole, one) = resources(server, "notebook://cells", f"notebook://cells/{index}")
    assert "notebook://cells" in listed and "notebook://cells/{index}" in templates
    assert "shared document (open)" in whole[0].text and "add(a=2, b=3)" in whole[0].text
    assert f"[image/png: read notebook://cells/{index}]" in whole[0].text
    assert code in one[0].text and "'shown'" in one[0].text
    assert one[1].mime_type == "image/png" and one[1].blob == PNG


def test_a_neighbour_cannot_write_cells(server, rooms):
    kernel, other, opened = rooms
    before = opened[NOTEBOOK].cells()
    url = f"{server.url}nbtools/api/cells/{kernel.kernel_id}"
    event = {"events": [{"type": "begin", "call": 999, "source": "stolen()", "nbtools": {}}]}
    other_token = json.loads((server.runtime / f"nbtools-kernel-{other.kernel_id}.json").read_text())["cells_token"]
    for token, scheme in ((None, "Bearer"), ("wrong", "Bearer"), (server.token, "token"), (server.token, "Bearer"),
                          (other_token, "Bearer")):
        status, _, _ = http("POST", url, token=token, scheme=scheme, body=event)
        assert status == 403, (token, status)
    status, _, _ = http("POST", f"{server.url}nbtools/api/cells/not-a-kernel", token=other_token, scheme="Bearer",
                        body=event)
    assert status == 404
    time.sleep(1)
    assert opened[NOTEBOOK].cells() == before


def test_the_saved_notebook_keeps_the_agents_cells(server, rooms):
    _, _, opened = rooms
    written = [c["source"] for c in opened[NOTEBOOK].agent_cells()]
    assert "add(a=2, b=3)" in written
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:  # the room saves on its own (document_save_delay, 1 s)
        saved = json.loads((server.root / NOTEBOOK).read_text())
        kept = [c for c in saved["cells"] if "nbtools-agent" in c["metadata"].get("tags", [])]
        if ["".join(c["source"]) for c in kept] == written:
            break
        time.sleep(0.2)
    assert ["".join(c["source"]) for c in kept] == written
    add = next(c for c in kept if "".join(c["source"]) == "add(a=2, b=3)")
    assert add["metadata"]["nbtools"]["status"] == "ok" and "".join(add["outputs"][0]["data"]["text/plain"]) == "5"
    import nbformat

    nbformat.validate(nbformat.reads(json.dumps(saved), as_version=4))


def test_without_collaboration_nothing_is_written_and_one_line_says_what_to_install(tmp_path):
    folder = tmp_path / "plain"
    (folder / "config").mkdir(parents=True)
    (folder / "config" / "jupyter_server_config.json").write_text(json.dumps(
        {"ServerApp": {"jpserver_extensions": {"jupyter_server_ydoc": False}}}))
    plain = JupyterServer(folder)
    try:
        kernel = plain.notebook_kernel(NOTEBOOK)
        before = (plain.root / NOTEBOOK).read_text()
        kernel.run(TOOLS)
        served = text_of(kernel.run("%tools --serve --cells"))
        assert "pip install jupyter-collaboration" in served and "Serving works as before" in served
        assert call(plain, "add", {"a": 2, "b": 3}).structured_content == {"result": 5}
        time.sleep(2)
        assert (plain.root / NOTEBOOK).read_text() == before
        listed, templates, _ = resources(plain)
        assert "notebook://cells" not in listed
    finally:
        plain.stop()


def test_the_python_entry_outside_jupyter_serves_and_says_why_no_cells():
    """`nbtools.mcp.start(cells=True)` in a plain process: it serves, and `.jupyter` says in one line why no cells."""
    import nbtools.mcp as nbmcp
    from nbtools import Registry

    def add(a: int, b: int) -> int:
        "Add."
        return a + b

    running = nbmcp.start(Registry([add]), cells=True)
    try:
        assert "needs this kernel to run under a Jupyter server" in running.jupyter and running.jupyter.count("\n") == 1
        with nbmcp.connect(running.url, token=running.token) as connection:
            assert connection.call("add", {"a": 1, "b": 2}) == 3
    finally:
        running.stop()


def test_a_notebook_no_view_has_open_gets_no_cells_and_its_resource_reads_the_file(server, rooms):
    """Cells are written only into a shared document some view has open; the file is left alone."""
    import nbformat

    path = "closed.ipynb"
    notebook = nbformat.v4.new_notebook()
    notebook.cells.append(nbformat.v4.new_markdown_cell("# written by the person"))
    nbformat.write(notebook, server.root / path)
    kernel = server.notebook_kernel(path)
    kernel.run(TOOLS)
    assert "written as a cell at the end of closed.ipynb" in text_of(kernel.run("%tools --serve --cells"))
    before = (server.root / path).read_text()
    assert call(server, "add", {"a": 1, "b": 1}, path=path).structured_content == {"result": 2}
    _, _, (whole,) = resources(server, "notebook://cells", path=path)
    assert "from the saved file" in whole[0].text and "# written by the person" in whole[0].text
    time.sleep(1)
    assert (server.root / path).read_text() == before


def test_a_huge_notebook_reaches_an_agent_bounded_with_the_way_to_the_rest(server, rooms):
    """notebook://cells of a notebook with a 3 MB output and 3,000 cells: the listing stays within the
    server's result limit (max_result_chars, 100,000), cutting long outputs and unlisted cells with
    the URI that reads them; notebook://cells/{index} gives one cell, a long output's start and end."""
    import nbformat

    path = "huge.ipynb"
    notebook = nbformat.v4.new_notebook()
    loud = nbformat.v4.new_code_cell("print(big)")
    loud.outputs = [nbformat.v4.new_output("stream", name="stdout", text="start of it\n" + "y" * 3_000_000 + "\nend of it\n")]
    notebook.cells = [loud] + [nbformat.v4.new_markdown_cell(f"note {i}: " + "z" * 100) for i in range(3_000)]
    nbformat.write(notebook, server.root / path)
    kernel = server.notebook_kernel(path)
    kernel.run(TOOLS)
    assert "written as a cell at the end of huge.ipynb" in text_of(kernel.run("%tools --serve --cells"))
    _, _, (whole, first, last) = resources(server, "notebook://cells", "notebook://cells/0", "notebook://cells/3000",
                                           path=path)
    listing = whole[0].text
    assert len(listing) <= 100_000 + 1_000, len(listing)
    assert listing.startswith("# huge.ipynb: 3001 cells") and "start of it" in listing
    assert "read notebook://cells/0" in listing  # the cut output says where the rest is
    assert "not listed" in listing and "notebook://cells/{index}" in listing and "note 2999" not in listing
    assert len(first[0].text) <= 100_000 + 1_000 and "start of it" in first[0].text and "end of it" in first[0].text
    assert "characters of this output not shown" in first[0].text
    assert "note 2999: zzz" in last[0].text


def test_a_call_running_when_the_kernel_restarts_does_not_stay_running(server):
    """The person restarts the kernel while an agent's python() runs: the call ends (the client is told
    it was interrupted) and so does its cell, instead of saying "running" in the saved notebook forever."""
    with a_call_running(server, "restarted.ipynb", "waiting") as running:
        server.api("POST", f"api/kernels/{running.kernel.kernel_id}/restart")
        code = running.code
        cells = running.room.wait_for(lambda cells: any(c["source"] == code and c["metadata"]["nbtools"]["status"]
                                                        != "running" for c in cells), "the call's cell end")
        cell = [c for c in cells if c["source"] == code][-1]
        assert cell["metadata"]["nbtools"]["status"] in ("error", "cancelled") and "ended" in cell["metadata"]["nbtools"]
        assert text(cell["outputs"][0]) == "waiting\n" and cell["outputs"][-1]["output_type"] == "error"
        running.caller.join(DEADLINE)
        heard = running.heard
        assert not running.caller.is_alive() and ("error" in heard or heard["result"].is_error), heard


def test_a_call_running_when_the_kernel_is_killed_ends_its_cell_and_the_client_hears(server, rooms):
    """The kernel is killed hard mid-call (SIGKILL, as the out-of-memory killer does): it never sends
    the call's end, so the server ends the cell when Jupyter's restarter sees the kernel die: status
    error, a `KernelDied` output after what the call had printed, nothing else of the document
    changed, no other notebook touched; the MCP client's call fails instead of waiting; and an end
    arriving later under the same call id (the restarted kernel counts its calls from 1 again) changes
    nothing."""
    import os
    import signal

    _, _, opened = rooms
    path = "killed.ipynb"
    with a_call_running(server, path, "working on it", earlier=[("add", {"a": 1, "b": 2})]) as running:
        kernel, room, code, thread, answer = running.kernel, running.room, running.code, running.caller, running.heard
        others = {name: opened[name].cells() for name in (NOTEBOOK, OTHER)}
        before = room.cells()
        killed_at = time.monotonic()
        os.kill(kernel_pid(server, kernel), signal.SIGKILL)
        cells = room.wait_for(lambda cells: any(c["source"] == code and c["metadata"]["nbtools"]["status"] != "running"
                                                for c in cells), "the killed call's cell end")
        took = time.monotonic() - killed_at
        cell = [c for c in cells if c["source"] == code][-1]
        meta = cell["metadata"]["nbtools"]
        assert meta["status"] == "error" and meta["ended"].endswith("+00:00"), meta
        assert [(o["output_type"], o.get("ename")) for o in cell["outputs"]] == [("stream", None), ("error", "KernelDied")]
        assert text(cell["outputs"][0]) == "working on it\n"
        assert "kernel died" in cell["outputs"][1]["evalue"], cell["outputs"][1]
        after = room.cells()  # nothing else of the document changed
        assert [c for c in after if c.get("id") != cell["id"]] == [c for c in before if c.get("id") != cell["id"]]
        thread.join(DEADLINE)
        assert not thread.is_alive(), "the MCP client's call still waits after the kernel was killed"
        from mcp.shared.exceptions import MCPError

        def leaves(error):
            return [leaf for inner in error.exceptions for leaf in leaves(inner)] \
                if isinstance(error, BaseExceptionGroup) else [error]

        failed = leaves(answer["error"]) if "error" in answer else [answer["result"]]
        # an error from the proxy's broken stream, not the test's own deadline (a hang) nor a result
        assert [type(error) for error in failed] == [MCPError], failed
        print(f"\ncell ended {took:.1f} s after SIGKILL; the client's call failed "
              f"{answer['at'] - killed_at:.1f} s after it: {failed[0]}")
        for name, seen in others.items():
            assert opened[name].cells() == seen, name
        # the restarted kernel serves again: its call 1 is a new call, and a stray end under that id changes nothing
        restarted = server.notebook_kernel(path)
        restarted.run("%load_ext nbtools")
        assert "written as a cell" in text_of(restarted.run("%tools --serve --cells"))
        token = json.loads((server.runtime / f"nbtools-kernel-{kernel.kernel_id}.json").read_text())["cells_token"]
        ending = {"events": [{"type": "end", "call": number, "outputs": [{"output_type": "stream", "name": "stdout",
                                                                          "text": "late\n"}],
                              "nbtools": {"status": "ok", "ended": "later"}} for number in (1, 2)]}
        status, _, body = http("POST", f"{server.url}nbtools/api/cells/{kernel.kernel_id}", token=token,
                               scheme="Bearer", body=ending)
        assert status == 200 and json.loads(body)["written"] == 0, body
        assert room.cells() == after


def test_a_killed_kernel_nothing_restarted_ends_its_cells_when_the_person_restarts_it(tmp_path):
    """With Jupyter's automatic restart turned off (`KernelManager.autorestart`), no restarter sees a
    killed kernel die: the cell says running until the person restarts the kernel, and then the
    server ends it on jupyter_server's kernel action event: status error, `KernelDied` after what
    the call printed."""
    import os
    import signal

    folder = tmp_path / "norestart"
    (folder / "config").mkdir(parents=True)
    (folder / "config" / "jupyter_server_config.json").write_text(json.dumps({"KernelManager": {"autorestart": False}}))
    plain = JupyterServer(folder)
    try:
        with a_call_running(plain, "hung.ipynb", "stuck") as running:
            room, code = running.room, running.code
            before = room.cells()
            os.kill(kernel_pid(plain, running.kernel), signal.SIGKILL)
            running.caller.join(DEADLINE)
            assert not running.caller.is_alive() and "error" in running.heard, running.heard  # the client heard it go
            time.sleep(4)  # past the restarter's poll (3 s), were there one
            assert room.cells() == before  # nothing noticed
            plain.api("POST", f"api/kernels/{running.kernel.kernel_id}/restart")
            cells = room.wait_for(lambda cells: any(c["source"] == code and c["metadata"]["nbtools"]["status"]
                                                    != "running" for c in cells), "the killed call's cell end")
            cell = [c for c in cells if c["source"] == code][-1]
            assert cell["metadata"]["nbtools"]["status"] == "error"
            assert [(o["output_type"], o.get("ename")) for o in cell["outputs"]] == [("stream", None),
                                                                                     ("error", "KernelDied")]
            assert text(cell["outputs"][0]) == "stuck\n" and "restarted or shut down" in cell["outputs"][1]["evalue"]
            assert [c for c in room.cells() if c.get("id") != cell["id"]] == \
                [c for c in before if c.get("id") != cell["id"]]
    finally:
        plain.stop()
