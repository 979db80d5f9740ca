"""A real Jupyter kernel driven from a test: `RealKernel`, and the text of a cell's outputs.

A `RealKernel` runs code three ways: `blocking()` is the jupyter_client client (raw messages,
`execute_interactive`, comm messages; its `parent` is the kernel manager, for interrupts);
`run`/`fails`/`value` run one notebook cell and return its outputs as nbformat outputs, raising
nbclient's `CellExecutionError` when the cell ends with an error, as a notebook run does;
`execute_notebook(nb)` runs a whole notebook through nbclient in this kernel.
The fixtures that start and share kernels are in `conftest.py`.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 60  # seconds for one cell


class RealKernel:
    """A running Jupyter kernel (see the module docstring)."""

    def __init__(self, kernel_name: str = "python3", cwd: Path = ROOT):
        from jupyter_client.manager import start_new_kernel

        self.kernel_name = kernel_name
        self.manager, self.client = start_new_kernel(kernel_name=kernel_name, cwd=str(cwd),
                                                     startup_timeout=TIMEOUT)
        self.client.parent = self.manager  # what interrupts go through
        self.nb = nbformat.v4.new_notebook()  # the cells `run` ran, with their outputs

    # -- raw messages ------------------------------------------------------------------------------
    def blocking(self) -> Any:
        """The kernel's BlockingKernelClient, with no stale messages waiting on its iopub channel
        (left by earlier tests: a full queue would drop the next cell's messages)."""
        if not self.manager.is_alive():
            raise RuntimeError(f"the {self.kernel_name} kernel died during an earlier test; see that test's failure")
        while self.client.iopub_channel.msg_ready():
            self.client.get_iopub_msg(timeout=1)
        return self.client

    # -- cells, as a notebook runs them ------------------------------------------------------------
    def run(self, source: str) -> list:
        """Run one cell (dedented); return its outputs. CellExecutionError if it ends with an error."""
        from nbclient.exceptions import CellExecutionError

        cell = nbformat.v4.new_code_cell(textwrap.dedent(source))
        self.nb.cells.append(cell)

        def keep(message: dict) -> None:
            kind = message["msg_type"]
            if kind == "clear_output":
                cell.outputs = []
            elif kind in ("stream", "display_data", "execute_result", "error"):
                cell.outputs.append(nbformat.v4.output_from_msg(message))

        reply = self.blocking().execute_interactive(cell.source, output_hook=keep, allow_stdin=False,
                                                    timeout=TIMEOUT)["content"]
        cell.execution_count = reply.get("execution_count")
        if reply["status"] == "error":
            raise CellExecutionError.from_cell_and_msg(cell, reply)
        return cell.outputs

    def fails(self, source: str) -> str:
        """Run a cell that must end with an error; return everything it showed, as text."""
        from nbclient.exceptions import CellExecutionError

        with pytest.raises(CellExecutionError) as failure:
            self.run(source)
        return text_of(self.nb.cells[-1].outputs) + "\n" + str(failure.value)

    def value(self, expression: str) -> Any:
        """The JSON value of a Python expression evaluated in the kernel."""
        outputs = self.run(f"import json as _json; print(_json.dumps({expression}))")
        return json.loads(stdout_of(outputs))

    def execute_notebook(self, notebook: Any) -> Any:
        """Run every cell of `notebook` with nbclient in this kernel, as `jupyter execute` does
        (stopping at the first error with CellExecutionError); the outputs land in `notebook`."""
        from jupyter_client.asynchronous import AsyncKernelClient
        from jupyter_core.utils import run_sync
        from nbclient import NotebookClient

        runner = NotebookClient(notebook, km=self.manager, kernel_name=self.kernel_name, timeout=TIMEOUT)

        async def connect() -> AsyncKernelClient:
            client = AsyncKernelClient()
            client.load_connection_info(self.manager.get_connection_info())
            client.start_channels()
            await client.wait_for_ready(timeout=TIMEOUT)
            client.allow_stdin = False
            return client

        runner.kc = run_sync(connect)()  # a client of its own: its messages are not the shared client's
        try:
            return runner.execute()
        finally:
            runner.kc.stop_channels()

    def shutdown(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


def stdout_of(outputs: list) -> str:
    return "".join(output.get("text", "") for output in outputs
                   if output["output_type"] == "stream" and output["name"] == "stdout")


def stderr_of(outputs: list) -> str:
    return "".join(output.get("text", "") for output in outputs
                   if output["output_type"] == "stream" and output["name"] == "stderr")


def text_of(outputs: list) -> str:
    parts = []
    for output in outputs:
        if output["output_type"] == "stream":
            parts.append(output["text"])
        elif output["output_type"] in ("display_data", "execute_result"):
            parts.append(output["data"].get("text/plain", ""))
        elif output["output_type"] == "error":
            parts.append(output["ename"] + ": " + output["evalue"] + "\n" + "\n".join(output["traceback"]))
    return "\n".join(parts)


def run_in_kernel(client: Any, code: str, on_output: Any = None) -> tuple[str, list]:
    """Run `code` through a blocking jupyter_client `client`: (status, [(msg_type, content), ...])
    of its outputs; `on_output(msg_type, content)` is called as each arrives."""
    outputs = []

    def keep(message: dict) -> None:
        if message["msg_type"] in ("stream", "execute_result", "display_data", "error"):
            outputs.append((message["msg_type"], message["content"]))
            if on_output is not None:
                on_output(message["msg_type"], message["content"])

    reply = client.execute_interactive(code, output_hook=keep, timeout=60)
    return reply["content"]["status"], outputs


def kernel_value(client: Any, code: str) -> str:
    """The text/plain of the value `code`'s last expression shows (the cell must succeed)."""
    status, outputs = run_in_kernel(client, code)
    assert status == "ok", outputs
    return outputs[-1][1]["data"]["text/plain"]

