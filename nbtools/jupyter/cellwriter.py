"""The server's side of `%tools --serve --cells`: a serving kernel's calls written as cells into the
shared document of its own notebook (real-time collaboration, jupyter-collaboration), so every open
view sees them appear and fill.

Why the server writes them: the live document (a pycrdt `YNotebook` in a room of
jupyter-server-ydoc) lives in this process; a kernel only reaches the file behind the editor, and
writing there would fight the room (its next save overwrites the file). Why the kernel tells it: what
a call prints and displays exists only in the kernel. So the kernel (`cells`) posts each call's
events, in order, to `POST nbtools/api/cells/<kernel_id>`: "begin" (the cell's source and its
`nbtools` metadata), "output" (an nbformat output, as the call produces it) and "end" (status and
the result's outputs). `GET` of the same path gives the notebook's cells (the resource
`notebook://cells`): from the shared document when a room has it open, else from the file.

Who may: not Jupyter's authentication (the kernel has no Jupyter token) but the kernel's own: the
`cells_token` in its registration, which is owner-only and believed only when its pid is the
kernel's (`serving.NbtoolsHandler.registration_of`). A request naming another kernel, or with
another token, gets 403/404 and writes nothing. Which notebook: the one the server's session
manager pairs with that kernel, never a path the request names, so a kernel writes only into its
own notebook. Without jupyter-collaboration in the server nothing is written (409).
"""

from __future__ import annotations

import hmac
import json
from typing import Any

from jupyter_server.auth.decorator import allow_unauthenticated

from .registration import Registration
from .serving import NbtoolsHandler

TAG = "nbtools-agent"
STATE = "nbtools_cells"  # settings key: {(kernel_id, call id): cell id}
PATHS = "nbtools_cells_paths"  # settings key: {kernel_id: its notebook's path at its last call's begin}
WATCHED = "nbtools_cells_watched"  # settings key: the kernel ids whose restarter tells `end_running`
KERNEL_ACTIONS = "https://events.jupyter.org/jupyter_server/kernel_actions/v1"  # jupyter_server's event schema
DIED_RESTARTED = ("the kernel died during this call (killed: by the out-of-memory killer or a signal, or it "
                  "crashed) and Jupyter restarted it; what the call had made is gone")
DIED = ("the kernel died during this call (killed: by the out-of-memory killer or a signal, or it crashed) "
        "and Jupyter could not restart it")
STOPPED = ("the kernel was restarted or shut down before this call ended and never ended it "
           "(it had died or stopped answering)")
NO_COLLABORATION = ("this Jupyter server has no real-time collaboration: `pip install jupyter-collaboration` "
                    "(jupyterlab >= 4.6) and restart it for `%tools --serve --cells`")


class CellsHandler(NbtoolsHandler):
    """`POST`/`GET nbtools/api/cells/<kernel_id>`, for that kernel alone (see the module docs)."""

    def check_xsrf_cookie(self) -> None:
        """No cookie is read here (the kernel's bearer token is the only credential): nothing to forge."""

    @allow_unauthenticated
    async def get(self, kernel_id: str) -> None:
        found = await self._kernel(kernel_id)
        if found is None:
            return
        path = await self._notebook(kernel_id)
        ydoc = self.settings.get("jupyter_server_ydoc")
        answer: dict[str, Any] = {"notebook": path, "collaboration": ydoc is not None, "open": False, "cells": []}
        if path is not None:
            doc = await self._document(path)
            if doc is not None:
                answer["open"], answer["cells"] = True, doc.get()["cells"]
            else:
                model = await _maybe_await(self.settings["contents_manager"].get(path, content=True, type="notebook"))
                answer["cells"] = json.loads(json.dumps(model["content"]))["cells"]
        self.finish(json.dumps(answer))

    @allow_unauthenticated
    async def post(self, kernel_id: str) -> None:
        found = await self._kernel(kernel_id)
        if found is None:
            return
        if self.settings.get("jupyter_server_ydoc") is None:
            self.set_status(409)
            self.finish(json.dumps({"message": NO_COLLABORATION}))
            return
        try:
            events = json.loads(self.request.body)["events"]
            assert isinstance(events, list)
        except (ValueError, KeyError, TypeError, AssertionError):
            self.set_status(400)
            self.finish(json.dumps({"message": 'the body is {"events": [...]}'}))
            return
        path = await self._notebook(kernel_id)
        doc = await self._document(path) if path is not None else None
        cells: dict = self.settings.setdefault(STATE, {})
        written = 0
        for event in events:
            if not isinstance(event, dict) or doc is None:
                continue
            key = (kernel_id, str(event.get("call")))
            kind = event.get("type")
            if kind == "begin":
                cell_id = _append(doc, event)
                if cell_id is not None:
                    cells[key] = cell_id
                    self.settings.setdefault(PATHS, {})[kernel_id] = path
                    watch_kernel(self.settings, kernel_id)
                    written += 1
                continue
            ycell = _cell(doc, cells.get(key))
            if ycell is None:  # its begin was not written (the notebook was closed then), or the person deleted it
                continue
            if kind == "output" and isinstance(event.get("output"), dict):
                _add_output(ycell, event["output"])
                written += 1
            elif kind == "end":
                _finish(ycell, [output for output in event.get("outputs") or () if isinstance(output, dict)],
                        event.get("nbtools") or {})
                cells.pop(key, None)
                written += 1
        self.finish(json.dumps({"notebook": path, "open": doc is not None, "written": written}))

    async def _kernel(self, kernel_id: str) -> Registration | None:
        """The kernel's registration if this request carries its cells token; else answers 403/404."""
        found = self.registration_of(kernel_id)
        if not isinstance(found, Registration):
            self.set_status(404)
            self.finish(json.dumps({"message": found}))
            return None
        given = self.request.headers.get("Authorization", "")
        scheme, _, token = given.partition(" ")
        if not found.cells_token or scheme.lower() != "bearer" \
                or not hmac.compare_digest(token.strip().encode(), found.cells_token.encode()):
            self.set_status(403)
            self.finish(json.dumps({"message": "not this kernel's cells token"}))
            return None
        return found

    async def _notebook(self, kernel_id: str) -> str | None:
        return await _notebook_of(self.settings, kernel_id)

    async def _document(self, path: str) -> Any:
        return await _document_of(self.settings, path)


async def _notebook_of(settings: dict, kernel_id: str) -> str | None:
    """The notebook the server pairs with this kernel (its notebook session), if any."""
    manager = settings.get("session_manager")
    for session in await manager.list_sessions() if manager is not None else ():
        if (session.get("kernel") or {}).get("id") == kernel_id and session.get("type", "notebook") == "notebook":
            return session.get("path")
    return None


async def _document_of(settings: dict, path: str) -> Any:
    """The live shared document of notebook `path`, or None when no room has it open."""
    ydoc = settings.get("jupyter_server_ydoc")
    if ydoc is None:
        return None
    return await ydoc.get_document(path=path, content_type="notebook", file_format="json", copy=False)


# -- a kernel that dies (or stops) with calls running ------------------------------------------------

def watch_kernel(settings: dict, kernel_id: str) -> None:
    """Have Jupyter's restarter tell us when this kernel dies: it then never sends its running calls'
    ends (SIGKILL, the out-of-memory killer, a crash), so we end their cells. Once per kernel: the
    restarter (and its callbacks) stays the kernel's across its restarts."""
    watched: set = settings.setdefault(WATCHED, set())
    manager = settings.get("kernel_manager")
    if kernel_id in watched or manager is None or kernel_id not in manager:
        return
    watched.add(kernel_id)
    manager.add_restart_callback(kernel_id, lambda: end_running(settings, kernel_id, DIED_RESTARTED), "restart")
    manager.add_restart_callback(kernel_id, lambda: end_running(settings, kernel_id, DIED), "dead")


def watch_kernel_actions(serverapp: Any) -> None:
    """End the cells still running when the server restarts or shuts down a kernel on request: a kernel
    that exits on its own ends its calls first (`cells.CellWriter.flush_at_exit`, before Jupyter's
    action completes), so any left is of a kernel already dead or hung, which the restarter may not
    have seen (the request stops it first)."""
    settings = serverapp.web_app.settings

    async def listener(logger: Any, schema_id: str, data: dict) -> None:
        kernel_id = data.get("kernel_id")
        if data.get("action") in ("restart", "shutdown") and data.get("status") == "success" and kernel_id:
            ending = end_running(settings, kernel_id, STOPPED)
            if data["action"] == "shutdown":
                settings.get(WATCHED, set()).discard(kernel_id)
            await ending

    serverapp.event_logger.add_listener(schema_id=KERNEL_ACTIONS, listener=listener)


def end_running(settings: dict, kernel_id: str, why: str) -> "asyncio.Task":
    """End every cell of `kernel_id` still running: status error, an error output `KernelDied: <why>`
    after what the call had written. Its calls are forgotten at once (a restarted kernel counts its
    calls from 1 again, and an end arriving later for one of them changes nothing); the cells are
    written in a task on the server's loop (the restarter calls back synchronously)."""
    import asyncio

    cells: dict = settings.get(STATE) or {}
    cell_ids = [cells.pop(key) for key in list(cells) if key[0] == kernel_id]
    known = (settings.get(PATHS) or {}).get(kernel_id)

    async def write() -> None:
        if not cell_ids:
            return
        path = await _notebook_of(settings, kernel_id) or known  # the session is gone after a shutdown
        doc = await _document_of(settings, path) if path is not None else None
        for cell_id in cell_ids:
            ycell = _cell(doc, cell_id) if doc is not None else None
            if ycell is not None:  # not if the person deleted it, or closed the notebook
                _finish(ycell, [{"output_type": "error", "ename": "KernelDied", "evalue": why,
                                 "traceback": [f"KernelDied: {why}"]}], {"status": "error", "ended": _now()})

    task = asyncio.get_running_loop().create_task(write())
    _pending.add(task)  # the loop keeps only a weak reference to a task
    task.add_done_callback(_pending.discard)
    return task


_pending: set = set()


def _now() -> str:
    import datetime

    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _finish(ycell: Any, outputs: list[dict], nbtools: dict) -> None:
    """A call's end: its last outputs, and its status (`ended`, `detail`) in the cell's metadata."""
    for output in outputs:
        _add_output(ycell, output)
    metadata = dict(ycell["metadata"].get("nbtools") or {})
    metadata.update({key: value for key, value in nbtools.items() if key in ("status", "ended", "detail")})
    ycell["metadata"]["nbtools"] = metadata


def _append(doc: Any, event: dict) -> str | None:
    import uuid

    source = event.get("source")
    if not isinstance(source, str):
        return None
    metadata = event.get("nbtools") if isinstance(event.get("nbtools"), dict) else {}
    cell_id = f"nbtools-{uuid.uuid4().hex[:12]}"
    doc.append_cell({"cell_type": "code", "id": cell_id, "source": source, "execution_count": None,
                     "outputs": [], "metadata": {"nbtools": metadata, "tags": [TAG]}})
    return cell_id


def _cell(doc: Any, cell_id: str | None) -> Any:
    if cell_id is None:
        return None
    for ycell in doc.ycells:
        if ycell.get("id") == cell_id:
            return ycell
    return None


def _add_output(ycell: Any, output: dict) -> None:
    """Append `output` to the cell's outputs in one transaction; a stream continues the cell's last
    output when that is the same stream (as the kernel's own outputs arrive in a notebook), its
    carriage returns applied (`_overwritten`)."""
    import pycrdt

    outputs = ycell["outputs"]
    with ycell.doc.transaction():
        if output.get("output_type") == "stream" and isinstance(output.get("text"), str) and len(outputs):
            last = outputs[len(outputs) - 1]
            shared = last.get("text")
            if last.get("output_type") == "stream" and last.get("name") == output.get("name") \
                    and isinstance(shared, pycrdt.Text):
                text = output["text"]
                if "\r" not in text:
                    shared += text  # in place (`last["text"] += ...` would set the key again, emptied)
                    return
                current = str(shared)
                start = current.rfind("\n") + 1  # the line still open: the new text may redraw it
                del shared[len(current[:start].encode()):]  # pycrdt's Text counts UTF-8 bytes
                shared += _overwritten(current[start:] + text)
                return
        made = dict(output)
        if made.get("output_type") == "stream":
            made["text"] = pycrdt.Text(_overwritten(str(made.get("text", ""))))
        outputs.append(pycrdt.Map(made))


def _overwritten(text: str) -> str:
    """`text` as a terminal (and JupyterLab, for a kernel's own output) shows it: after a carriage
    return the line's start is written over, so a progress bar redrawn a thousand times is kept once.
    A trailing carriage return stays, for the next piece of the stream to write over."""
    if "\r" not in text:
        return text
    lines = []
    for line in text.replace("\r\n", "\n").split("\n"):
        shown = ""
        for piece in line.split("\r"):
            shown = piece + shown[len(piece):]
        lines.append(shown + ("\r" if line.endswith("\r") else ""))
    return "\n".join(lines)


async def _maybe_await(value: Any) -> Any:
    import inspect

    return await value if inspect.isawaitable(value) else value


__all__ = ["CellsHandler", "TAG", "NO_COLLABORATION"]
