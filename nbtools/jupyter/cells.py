"""The kernel's side of `%tools --serve --cells`: each served call told to the Jupyter Server
extension, which writes it as a cell at the end of this kernel's notebook (`cellwriter`), and the
resources `notebook://cells` and `notebook://cells/{index}`.

A call's cell: for `python()` its code; for any other tool the equivalent Python call
(`add(a=2, b=3)`, arguments as Python literals), so running the cell repeats it. Metadata
`nbtools: {by, tool, started, status}` (status running, then ok / error / refused / cancelled) and
the tag `nbtools-agent`. Outputs: what `python()`'s code prints and displays as it runs (through
`interp.capture.live_output`), then the result (`execute_result`, images as `display_data`) or the
error (an `error` output naming a refusal or a cancellation). A call the server runs as an MCP task
(a client declaring the tasks extension) is written the same way, from its task's record. What a
cell receives is bounded (`CellOutput`), and so are the resources (`Limits.max_result_chars`).

Events leave the kernel on one sender thread, in order, a batch per request (so a tool printing in a
loop costs few requests and never waits for the server); the served call itself never waits. A
kernel that exits first lets its calls' ends reach their cells (`CellWriter.flush_at_exit`).
Standard library and nbtools only: this runs in the kernel.
"""

from __future__ import annotations

import atexit
import collections
import datetime
import json
import queue
import secrets
import threading
import time
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote

from ..shortening import middle

PYTHON_TOOLS = ("python", "python_async")
# What one call writes into its cell (the shared document every view syncs, then the saved file): the
# first CELL_HEAD and the last CELL_TAIL characters of what it prints, with a line saying how much was
# left out between, and at most CELL_DISPLAYS displays of at most CELL_DISPLAY_CHARS in all. A call
# printing in a loop, or one huge string, must not swell the person's notebook (nor exceed what a room
# client accepts in one update: 16 MB for `websockets` clients).
CELL_HEAD = 100_000
CELL_TAIL = 20_000
CELL_DISPLAYS = 50
CELL_DISPLAY_CHARS = 5_000_000
EXIT_WAIT = 3.0  # seconds an exiting kernel waits for its calls' ends to reach their cells (Jupyter kills it at 5)
TIMEOUT = 30.0  # seconds for one request to the server (a loaded machine answers slowly, never this slowly)
INSTALL = ("`%tools --serve --cells` writes nothing here: this Jupyter server has no real-time collaboration; "
           "`pip install jupyter-collaboration` (jupyterlab >= 4.6) and restart it. Serving works as before.")
NO_EXTENSION = ("`%tools --serve --cells` writes nothing here: it needs this kernel to run under a Jupyter server "
                "with nbtools' extension and real-time collaboration (`pip install 'nbtools-llm[jupyter]'`, then "
                "restart Jupyter). Serving works as before.")


def call_source(tool: Any, name: str, arguments: Any) -> str:
    """The cell's source: `python()`'s code itself, else `name(arg=value, ...)` with Python literals."""
    arguments = arguments if isinstance(arguments, dict) else {}
    code = arguments.get("code")
    if name in PYTHON_TOOLS and isinstance(code, str) and _is_python_tool(tool):
        return code
    listed = ", ".join(f"{key}={value!r}" for key, value in arguments.items())
    return f"{name}({listed})" if name.isidentifier() else f"# the tool {name!r}\n{name.replace('.', '_')}({listed})"


def _is_python_tool(tool: Any) -> bool:
    fn = getattr(tool, "fn", None)
    return getattr(fn, "__module__", "") == "nbtools.interp.pytool"


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


class Channel:
    """The kernel's requests to `nbtools/api/cells/<kernel_id>` with its cells token."""

    def __init__(self, server_url: str, kernel_id: str, token: str) -> None:
        base = server_url if server_url.endswith("/") else server_url + "/"
        self.url = f"{base}nbtools/api/cells/{quote(kernel_id, safe='')}"
        self.token = token

    def request(self, method: str, body: Any = None) -> tuple[int, dict]:
        data = json.dumps(body).encode() if body is not None else None
        sent = urllib.request.Request(self.url, data=data, method=method, headers={
            "Authorization": f"Bearer {self.token}", "Content-Type": "application/json"})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy
        try:
            with opener.open(sent, timeout=TIMEOUT) as answer:
                return answer.status, json.loads(answer.read() or b"{}")
        except urllib.error.HTTPError as error:
            try:
                return error.code, json.loads(error.read() or b"{}")
            except ValueError:
                return error.code, {}


class CellWriter:
    """Watches a `RunningServer`'s activity and sends each tool call's events (see the module docs)."""

    def __init__(self, server: Any, channel: Channel) -> None:
        self.server = server
        self.channel = channel
        self.problem = ""  # the last request that failed, in one line (shown by `%tools --serve` again)
        self._calls: dict[int, dict] = {}  # id(record) -> {"id", "printed"}
        self._queue: queue.Queue = queue.Queue()
        self._count = 0
        self._thread = threading.Thread(target=self._send_loop, name="nbtools cells", daemon=True)
        self._thread.start()
        self._unwatch = server.activity.watch(self.watch)
        atexit.register(self.flush_at_exit)

    def stop(self) -> None:
        self._unwatch()
        self._queue.put(None)
        atexit.unregister(self.flush_at_exit)

    def flush_at_exit(self) -> None:
        """As the kernel exits (restarted or shut down, often while an interrupted call ends): let the calls
        still going end, for at most EXIT_WAIT seconds, end the others as stopped, and send what is queued.
        A daemon thread dies with the process: without this a call's end never reached its cell, which
        said "running" in the saved notebook for ever."""
        deadline = time.monotonic() + EXIT_WAIT
        while self._calls and time.monotonic() < deadline:
            time.sleep(0.02)
        for key in list(self._calls):
            call = self._calls.pop(key, None)
            if call is not None:
                self._queue.put({"type": "end", "call": call["id"], "outputs": call["output"].closing() + [
                    _error("Cancelled", "the kernel stopped (restarted or shut down) before the call ended")],
                    "nbtools": {"status": "cancelled", "ended": _now()}})
        sent = threading.Event()
        self._queue.put(sent)
        sent.wait(max(0.5, deadline - time.monotonic()))

    # -- on the transport's thread (begin, end) and the kernel's main thread (output) ----------------
    def watch(self, record: Any) -> None:
        if record.kind not in ("tool", "task"):  # a task: a tools/call the server runs as an MCP task
            return
        if record.ended is None and id(record) not in self._calls:
            self._begin(record)
        elif record.ended is not None and id(record) in self._calls:
            self._end(record, self._calls.pop(id(record)))

    def _begin(self, record: Any) -> None:
        self._count += 1
        call = {"id": self._count, "output": CellOutput()}
        self._calls[id(record)] = call
        tool = self.server.registry.resolve(record.tool)
        self._queue.put({"type": "begin", "call": call["id"],
                         "source": call_source(tool, record.tool, record.arguments),
                         "nbtools": {"by": record.origin, "tool": record.tool,
                                     "started": _now(), "status": "running"}})

        def live(kind: str, *event: Any) -> None:  # python()'s prints and displays, as they happen
            output = call["output"].add(kind, *event)
            if output is not None:
                self._queue.put({"type": "output", "call": call["id"], "output": output})

        record.live = live

    def _end(self, record: Any, call: dict) -> None:
        written: CellOutput = call["output"]
        status, outputs = _ending(record, written)
        self._queue.put({"type": "end", "call": call["id"], "outputs": written.closing() + outputs,
                         "nbtools": {"status": status, "ended": _now()}})

    # -- the sender thread ------------------------------------------------------------------------
    def _send_loop(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = batch[-1] is None
            events = _joined([event for event in batch if isinstance(event, dict)])
            if events:
                try:
                    status, answer = self.channel.request("POST", {"events": events})
                    self.problem = "" if status == 200 else f"the server answered {status}: {answer.get('message', '')}"
                except OSError as error:
                    self.problem = f"the Jupyter server did not answer ({error})"
            for flushed in batch:
                if isinstance(flushed, threading.Event):  # `flush_at_exit` waits for what came before it
                    flushed.set()
            if stop:
                return


class CellOutput:
    """What one call's cell receives of its output, bounded (see CELL_HEAD): the head as it is printed,
    the tail at the call's end. Also what it printed as python()'s answer holds it, to tell the answer's
    value from the printed text already in the cell."""

    def __init__(self) -> None:
        self.head: list[str] = []  # the text of the output written as it came (displays as their text)
        self.size = 0
        self.tail: collections.deque[tuple[str | None, str]] = collections.deque()  # (stream name or None, text)
        self.tail_size = 0
        self.left_out = 0  # characters printed between the head and the tail, never written
        self.displays = 0
        self.display_chars = 0
        self.displays_left_out = 0

    @property
    def cut(self) -> bool:
        return bool(self.tail)

    def add(self, kind: str, *event: Any) -> dict | None:
        """The output to write now for a write or a display of the call (None: nothing now)."""
        if kind == "stream":
            name, text = event
            kept = self._text(name, text)
            return {"output_type": "stream", "name": name, "text": kept} if kept else None
        if kind != "display":
            return None
        from ..interp.capture import bundle_text

        shown = bundle_text(event[0])  # what python()'s answer holds for it, as the capture writes it
        self._text(None, shown if shown.endswith("\n") else shown + "\n")
        data = {mime: value for mime, value in event[0].items() if isinstance(value, (str, dict, list))}
        size = sum(len(value) if isinstance(value, str) else len(json.dumps(value, default=str))
                   for value in data.values())
        if self.displays >= CELL_DISPLAYS or self.display_chars + size > CELL_DISPLAY_CHARS:
            self.displays_left_out += 1
            return None
        self.displays += 1
        self.display_chars += size
        return {"output_type": "display_data", "data": data, "metadata": {}}

    def _text(self, name: str | None, text: str) -> str:
        """Keep `text` (of stream `name`, None for a display's text); returns the part to write now."""
        now = ""
        if self.size < CELL_HEAD and not self.tail:
            now, text = text[:CELL_HEAD - self.size], text[CELL_HEAD - self.size:]
            self.size += len(now)
            self.head.append(now)
            now = now if name is not None else ""
        if text:
            self.tail.append((name, text))
            self.tail_size += len(text)
            while self.tail_size > CELL_TAIL:
                first_name, first = self.tail[0]
                cut = min(len(first), self.tail_size - CELL_TAIL)
                if cut == len(first):
                    self.tail.popleft()
                else:
                    self.tail[0] = (first_name, first[cut:])
                self.tail_size -= cut
                self.left_out += cut
        return now

    def printed(self) -> str:
        return "".join(self.head)

    def tail_text(self) -> str:
        return "".join(text for _, text in self.tail)

    def closing(self) -> list[dict]:
        """The outputs the call's end writes before its result: the line saying what was left out, the tail."""
        outputs: list[dict] = []
        if self.left_out:
            outputs.append({"output_type": "stream", "name": "stdout",
                            "text": f"\n[... {self.left_out:,} characters of output not written into this cell ...]\n"})
        for name, text in self.tail:  # a print in a loop leaves many pieces: one output per run of a stream
            if name is None:
                continue
            last = outputs[-1] if outputs else None
            if last is not None and last["name"] == name:
                last["text"] += text
            else:
                outputs.append({"output_type": "stream", "name": name, "text": text})
        if self.displays_left_out:
            outputs.append({"output_type": "stream", "name": "stdout",
                            "text": f"[{self.displays_left_out} more display(s) not written into this cell]\n"})
        return outputs


def _joined(events: list[dict]) -> list[dict]:
    """Consecutive stream outputs of one call and stream joined into one event."""
    joined: list[dict] = []
    for event in events:
        last = joined[-1] if joined else None
        if last is not None and event["type"] == last["type"] == "output" and event["call"] == last["call"] \
                and event["output"]["output_type"] == last["output"]["output_type"] == "stream" \
                and event["output"]["name"] == last["output"]["name"]:
            last["output"] = dict(last["output"], text=last["output"]["text"] + event["output"]["text"])
        else:
            joined.append(event)
    return joined


def _ending(record: Any, written: "CellOutput") -> tuple[str, list[dict]]:
    """(status, the outputs that end the cell) of a finished call: a plain call's record (status ok,
    error, refused or cancelled; `result` the SDK's CallToolResult) or a task's (completed, failed or
    cancelled; `result` the CallToolResult's wire form, None when the task failed with a JSON-RPC error)."""
    if record.status == "cancelled":
        why = record.outcome if record.kind == "task" and record.outcome else \
            "the call was cancelled by its client (or the server stopped)"
        return "cancelled", [_error("Cancelled", why)]
    result = record.result
    if record.status in ("error", "failed") and result is None:  # a JSON-RPC error, not a result
        return "error", [_error("Error", record.outcome)]
    blocks, is_error, refused = _result_fields(result)
    texts, images = [], []
    for kind, text, data, mime in blocks:
        if kind == "text":
            texts.append(text)
        elif kind == "image" and isinstance(data, str) and isinstance(mime, str):
            images.append({"output_type": "display_data", "data": {mime: data}, "metadata": {}})
    text = "\n".join(texts)
    if record.status == "refused" or refused:  # the approval policy said no: nothing ran
        return "refused", [_error("CallRefused", text)]
    if is_error:
        return "error", [_error("ToolCallError", text)]
    printed = written.printed()
    if written.cut:  # python() printed more than the cell holds: its value follows the printed end, if the answer has it
        tail = written.tail_text()
        at = text.rfind(tail)
        text = text[at + len(tail):].lstrip("\n") if at >= 0 else ""
    elif printed and text.startswith(printed):  # python(): what it printed is in the cell already
        text = text[len(printed):].lstrip("\n")
    outputs = [{"output_type": "execute_result", "execution_count": None, "metadata": {},
                "data": {"text/plain": text}}] if text else []
    return "ok", outputs + images


def _result_fields(result: Any) -> tuple[list[tuple[Any, str, Any, Any]], bool, bool]:
    """([(type, text, data, mime type) per content block], is an error, refused) of a CallToolResult,
    the SDK's model or its wire form (a dict: a task's)."""
    if isinstance(result, dict):
        blocks = [(block.get("type"), str(block.get("text") or ""), block.get("data"), block.get("mimeType"))
                  for block in result.get("content") or () if isinstance(block, dict)]
        is_error, meta = bool(result.get("isError")), result.get("_meta")
    else:
        blocks = [(getattr(block, "type", None), str(getattr(block, "text", "") or ""), getattr(block, "data", None),
                   getattr(block, "mime_type", None)) for block in getattr(result, "content", None) or ()]
        is_error, meta = bool(getattr(result, "is_error", False)), getattr(result, "meta", None)
    from ..errors import CallRefused, ToolCallError

    # refused: its `_meta` holds the error's record (`ToolCallError.record()`), of a CallRefused (nothing ran)
    refused = is_error and isinstance(meta, dict) and any(
        isinstance(ToolCallError.from_record(noted, None), CallRefused) for noted in meta.values())
    return blocks, is_error, refused


def _error(name: str, text: str) -> dict:
    return {"output_type": "error", "ename": name, "evalue": text, "traceback": [f"{name}: {text}"]}


# -- the resources ---------------------------------------------------------------------------------

CELLS_URI = "notebook://cells"
CELL_URI = "notebook://cells/{index}"


LISTED_OUTPUT = 2_000  # characters of one output (or source) in notebook://cells: its start and its end
ONE_CELL_SOURCE = 0.5  # notebook://cells/{index}: the share of the result limit its source may take


def add_resources(registry: Any, channel: Channel) -> Any:
    """Serve `notebook://cells` and `notebook://cells/{index}` for `registry`; returns their remover.
    Both stay within the registry's result limit (`Limits.max_result_chars`, as tool results do): a
    notebook can hold megabytes of output, more than a model should read at once or an MCP client
    accepts in one message. The listing cuts each long output and source to its start and end, and
    lists cells until the limit, each cut naming the URI that reads more."""
    from ..resources import catalog_of, resource

    def limit() -> int:
        return max(10_000, int(getattr(getattr(registry, "limits", None), "max_result_chars", 100_000)))

    def read() -> dict:
        status, answer = channel.request("GET")
        if status != 200:
            raise LookupError(f"the Jupyter server answered {status}: {answer.get('message', '')}")
        return answer

    @resource(CELLS_URI, name="notebook cells", mime_type="text/plain", registry=registry)
    def notebook_cells() -> str:
        """This kernel's notebook: every cell's source and text outputs (images: read notebook://cells/{index})."""
        answer = read()
        cells = answer["cells"]
        where = "the shared document (open)" if answer.get("open") else "the saved file"
        lines = [f"# {answer.get('notebook')}: {len(cells)} cells, from {where}"]
        room = limit() - len(lines[0]) - 200
        for index, cell in enumerate(cells):
            text = cell_text(index, cell, LISTED_OUTPUT, LISTED_OUTPUT)
            if len(text) + 1 > room:
                lines.append(f"[... cells {index} to {len(cells) - 1} not listed ({len(cells) - index} cells, past this "
                             f"server's result limit of {limit():,} characters): read notebook://cells/{{index}} "
                             "for each]")
                break
            lines.append(text)
            room -= len(text) + 1
        return "\n".join(lines)

    @resource(CELL_URI, name="notebook cell", registry=registry)
    def notebook_cell(index: int) -> Any:
        """One cell of this kernel's notebook: its source and text outputs, its images as image content."""
        from ..content import Image

        cells = read()["cells"]
        if not -len(cells) <= index < len(cells):
            raise LookupError(f"the notebook has {len(cells)} cells (0 to {len(cells) - 1}); no cell {index}")
        cell = cells[index]
        texts = sum(1 for output in cell.get("outputs") or () if output.get("output_type") != "display_data"
                    or "text/plain" in (output.get("data") or {}))
        source_limit = int(limit() * ONE_CELL_SOURCE)
        output_limit = (limit() - min(len(_joined_text(cell.get("source", ""))), source_limit) - 500) // max(1, texts)
        images = [Image.from_base64(data[mime], mime) for output in cell.get("outputs") or ()
                  for data in [output.get("data") or {}] for mime in ("image/png", "image/jpeg")
                  if isinstance(data.get(mime), str)]
        text = cell_text(index % len(cells), cell, max(1_000, output_limit), source_limit, listed=False)
        text = _cut(text, limit(), "this cell", "")  # a cell of hundreds of outputs
        return [text, *images] if images else text

    catalog = catalog_of(registry)

    def remove() -> None:
        catalog.remove(CELLS_URI)
        catalog.remove(CELL_URI)

    return remove


def cell_text(index: int, cell: dict, output_chars: int | None = None, source_chars: int | None = None, *,
              listed: bool = True) -> str:
    """A cell as text: its header, its source and its outputs' text, each cut to its start and end past
    `output_chars` / `source_chars` (a cut in the listing names notebook://cells/<index>)."""
    more = f": read notebook://cells/{index}" if listed else ""
    tags = (cell.get("metadata") or {}).get("tags") or []
    lines = [f"--- cell {index} [{cell.get('cell_type')}]{' (agent)' if 'nbtools-agent' in tags else ''} ---",
             _cut(_joined_text(cell.get("source", "")), source_chars, "this source", more)]
    for output in cell.get("outputs") or ():
        kind = output.get("output_type")
        if kind == "stream":
            lines.append(_cut(_joined_text(output.get("text", "")), output_chars, "this output", more))
        elif kind == "error":
            lines.append(_cut(f"{output.get('ename')}: {output.get('evalue')}", output_chars, "this output", more))
        elif kind in ("execute_result", "display_data"):
            data = output.get("data") or {}
            plain = data.get("text/plain")
            if plain is not None:
                lines.append(_cut(_joined_text(plain), output_chars, "this output", more))
            lines.extend(f"[{mime}: read notebook://cells/{index}]" for mime in data if mime.startswith("image/"))
    return "\n".join(line.rstrip("\n") for line in lines)


def _joined_text(value: Any) -> str:
    """nbformat's multiline strings: a string, or a list of lines."""
    return "".join(str(part) for part in value) if isinstance(value, list) else str(value)


def _cut(text: str, limit: int | None, what: str, more: str) -> str:
    """`text`, or its start and its last fifth with a line saying how much of `what` is left out (and
    where to read more): `shortening.middle`."""
    if limit is None or len(text) <= limit:
        return text
    return middle(text, limit, limit - limit * 4 // 5, f"\n[... {len(text) - limit:,} characters of {what} not shown{more} ...]")


# -- turning it on -----------------------------------------------------------------------------------

def enable(server: Any, info: dict, kernel_id: str, cells_token: str) -> str:
    """Write `server`'s calls into this kernel's notebook (its registration already carries
    `cells_token`); returns the line `%tools --serve --cells` prints."""
    if not info.get("url"):
        return "\n" + NO_EXTENSION
    channel = Channel(info["url"], kernel_id, cells_token)
    try:
        status, answer = channel.request("GET")
    except OSError as error:
        return f"\n`%tools --serve --cells` writes nothing: the Jupyter server did not answer ({error})."
    if status != 200:
        return f"\n`%tools --serve --cells` writes nothing: the Jupyter server answered {status}: {answer.get('message')}"
    if not answer.get("collaboration"):
        return "\n" + INSTALL
    writer = CellWriter(server, channel)
    remove = add_resources(server.registry, channel)
    server.on_stop.append(writer.stop)
    server.on_stop.append(remove)
    server.cells = writer
    where = answer.get("notebook") or "this kernel's notebook"
    return (f"\nEach call is written as a cell at the end of {where} (tag `nbtools-agent`); "
            f"the resources {CELLS_URI} and {CELL_URI} give an agent its cells.")


def new_token() -> str:
    return secrets.token_urlsafe(32)


__all__ = ["call_source", "CellWriter", "Channel", "enable", "add_resources", "cell_text", "INSTALL"]
