"""Cassettes: a Chat's exchanges with its provider, recorded at the HTTP layer, and replayed offline.

`Chat(client, ..., record=PATH)` gives the chat a copy of `client` whose HTTP transport writes every
exchange to PATH (JSON, rewritten after each one so nothing is lost): the request's method, URL path,
query and JSON body; the response's status, content type and body (a streamed response as the SSE
text it was). Of the request headers only the beta ones (`anthropic-beta`, `openai-beta`) are
kept, so no API key or Authorization header is; query parameters named like a key or token are left
out, and the key values the request carried are blanked wherever else they appear. The first Chat of a process that records to a path starts the file afresh; later
ones in the same process add to it, in order, so one replay client answers them all.

`replay(PATH)` builds a client of the recorded SDK (openai, anthropic, google-genai; synchronous or
asynchronous as recorded) whose transport answers from the cassette, in order, with no network.
A request that differs from the recorded one raises `CassetteMismatch` naming the first difference
(`messages[3].content`: recorded '...', sent '...'), as the SDK's own error type so the SDK passes it
on unchanged (it turns other transport errors into "Connection error").

Every SDK is reached through its documented options: `client.copy(http_client=...)` for openai and
anthropic, `http_options` (`httpx_client`, `httpx_async_client`) for google-genai.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import threading
from pathlib import Path
from typing import Any, Callable, Iterator, AsyncIterator

try:
    import httpx2
except ImportError as error:  # pragma: no cover - every supported SDK installs it
    raise ImportError("nbtools cassettes work at the HTTP layer of the provider SDKs, through httpx2, which they "
                      "install: pip install openai (or anthropic, google-genai)") from error

from ..errors import CassetteError, CassetteMismatch

FORMAT = "nbtools-cassette/1"
# Request headers that carry credentials (none is recorded; their values are blanked everywhere else).
SECRET_HEADERS = ("authorization", "x-api-key", "x-goog-api-key", "api-key", "proxy-authorization")
SECRET_QUERY = re.compile(r"key|token|secret|sig|auth|password|credential", re.IGNORECASE)
BLANKED = "[redacted]"
# What a replayed response needs besides its body: the SDKs read the content type to parse it, and
# these to decide on a retry (a recorded retry then replays as one).
KEPT_RESPONSE_HEADERS = ("content-type", "x-should-retry", "retry-after", "retry-after-ms")
# Request headers that change what the API does (beta features a client opted into): kept and compared.
KEPT_REQUEST_HEADERS = ("anthropic-beta", "openai-beta")
REPLAY_HOST = "http://replay.invalid"  # nothing is sent: the replay transport answers every request


# -- the file ----------------------------------------------------------------------------------------
class Cassette:
    """The exchanges of one cassette file, in order; `sdk` is "openai", "anthropic" or "google-genai"."""

    def __init__(self, path: str | os.PathLike, sdk: str, base_path: str = "", exchanges: list | None = None,
                 asynchronous: bool = False):
        self.path, self.sdk, self.base_path = Path(path), sdk, base_path
        self.exchanges: list[dict] = exchanges if exchanges is not None else []
        self.asynchronous = asynchronous
        self._encoded = [_encode(exchange) for exchange in self.exchanges]
        self._lock = threading.Lock()

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Cassette":
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise CassetteError(f"no cassette at {path}: record one first with Chat(client, ..., record={str(path)!r})"
                                ) from None
        except (OSError, ValueError) as error:
            raise CassetteError(f"cannot read the cassette {path}: {error}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("sdk") not in _SDKS:
            raise CassetteError(f"{path} is not an nbtools cassette ({FORMAT} with an sdk of {', '.join(_SDKS)}); "
                                "record it again with Chat(..., record=PATH)")
        exchanges = data.get("exchanges", [])
        if not isinstance(exchanges, list) or not all(
                isinstance(item, dict) and isinstance(item.get("request"), dict)
                and isinstance(item.get("response"), (dict, type(None))) for item in exchanges):
            raise CassetteError(f"{path}: 'exchanges' must be a list of {{\"request\": {{...}}, \"response\": {{...}}}}; "
                                "record the cassette again")
        return cls(path, data["sdk"], data.get("base_path", ""), list(exchanges), bool(data.get("asynchronous")))

    def reserve(self, request: dict) -> int:
        """Take the next place for an exchange whose request is sent now (its response comes later:
        the order stays the order of the requests); its index."""
        with self._lock:
            self.exchanges.append({"request": request, "response": None})
            self._encoded.append(_encode(self.exchanges[-1]))
            return len(self.exchanges) - 1

    def fill(self, index: int, response: dict) -> None:
        """Record the response of exchange `index` and rewrite the file (atomically: a reader never
        sees half of it)."""
        with self._lock:
            self.exchanges[index]["response"] = response
            self._encoded[index] = _encode(self.exchanges[index])
            self.write()

    def write(self) -> None:
        """The file: a header line, then the exchanges, each encoded once (the history in each request
        grows with the conversation, so encoding them all again at every exchange would not scale)."""
        header = json.dumps({"format": FORMAT, "sdk": self.sdk, "asynchronous": self.asynchronous,
                             "base_path": self.base_path})
        text = header[:-1] + ', "exchanges": [\n' + ",\n".join(self._encoded) + "\n]}\n"
        temporary = self.path.with_name(self.path.name + ".tmp")
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, self.path)


def _encode(exchange: dict) -> str:
    return json.dumps(exchange, indent=1, ensure_ascii=False)


# -- what is kept of a request and a response ------------------------------------------------------------
def _secrets(request: httpx2.Request) -> list[str]:
    """The credential values a request carries (headers and query), to blank them anywhere else."""
    values = []
    for name in SECRET_HEADERS:
        value = request.headers.get(name)
        if value:
            values.append(value)
            scheme, _, rest = value.partition(" ")
            if rest and scheme.lower() in ("bearer", "basic", "token"):
                values.append(rest)
    values += [value for name, value in request.url.params.multi_items() if SECRET_QUERY.search(name) and value]
    return sorted({value for value in values if len(value) >= 4}, key=len, reverse=True)


def _blank(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, BLANKED)
    return text


def _body(data: bytes, secrets: list[str]) -> dict:
    """A body as JSON (`json`) when it is JSON, else as text (`text`); credentials blanked."""
    text = _blank(data.decode("utf-8", errors="replace"), secrets)
    if not text:
        return {}
    try:
        return {"json": json.loads(text)}
    except ValueError:
        return {"text": text}


def request_record(request: httpx2.Request, secrets: list[str], base_path: str = "") -> dict:
    """What a cassette keeps of a request: method, path (below the client's base path), query, the
    beta headers, body."""
    query = [[name, _blank(value, secrets)] for name, value in request.url.params.multi_items()
             if not SECRET_QUERY.search(name)]
    path = request.url.path
    record: dict[str, Any] = {"method": request.method, "path": path[len(base_path):] if path.startswith(base_path)
                              else path}
    if query:
        record["query"] = query
    headers = {name: request.headers[name] for name in KEPT_REQUEST_HEADERS if name in request.headers}
    if headers:
        record["headers"] = headers
    record.update(_body(request.content, secrets))
    return record


def _response_record(response: httpx2.Response, data: bytes, secrets: list[str]) -> dict:
    headers = {name: response.headers[name] for name in KEPT_RESPONSE_HEADERS if name in response.headers}
    return {"status": response.status_code, "headers": headers, **_body(data, secrets)}


# -- recording -------------------------------------------------------------------------------------
class _Tee:
    """Collects a response's bytes as the SDK reads them (a stream stays live) and records the exchange
    when the response is closed."""

    def __init__(self, done: Callable[[bytes], None]):
        self.chunks: list[bytes] = []
        self.done = done
        self.recorded = False

    def finish(self) -> None:
        if not self.recorded:
            self.recorded = True
            self.done(b"".join(self.chunks))


class _TeeStream(httpx2.SyncByteStream):
    def __init__(self, inner: Any, tee: _Tee):
        self.inner, self.tee = inner, tee

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.inner:
            self.tee.chunks.append(chunk)
            yield chunk

    def close(self) -> None:
        try:
            self.inner.close()
        finally:
            self.tee.finish()


class _AsyncTeeStream(httpx2.AsyncByteStream):
    def __init__(self, inner: Any, tee: _Tee):
        self.inner, self.tee = inner, tee

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            self.tee.chunks.append(chunk)
            yield chunk

    async def aclose(self) -> None:
        try:
            await self.inner.aclose()
        finally:
            self.tee.finish()


def _prepare(request: httpx2.Request) -> None:
    # An uncompressed answer, so that the cassette keeps readable text and replays without decoding.
    request.headers["accept-encoding"] = "identity"


def _teed(cassette: Cassette, request: httpx2.Request, response: httpx2.Response, stream: type, index: int,
          secrets: list[str]) -> httpx2.Response:
    tee = _Tee(lambda data: cassette.fill(index, _response_record(response, data, secrets)))
    return httpx2.Response(response.status_code, headers=response.headers, stream=stream(response.stream, tee),
                           extensions=response.extensions, request=request)


class RecordingTransport(httpx2.BaseTransport):
    """Sends through `inner` (a real transport) and records each exchange into `cassette`."""

    def __init__(self, cassette: Cassette, inner: httpx2.BaseTransport | None = None):
        self.cassette, self.inner = cassette, inner or httpx2.HTTPTransport()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        _prepare(request)
        request.read()
        secrets = _secrets(request)
        index = self.cassette.reserve(request_record(request, secrets, self.cassette.base_path))
        return _teed(self.cassette, request, self.inner.handle_request(request), _TeeStream, index, secrets)

    def close(self) -> None:
        self.inner.close()


class AsyncRecordingTransport(httpx2.AsyncBaseTransport):
    """`RecordingTransport` for asynchronous clients."""

    def __init__(self, cassette: Cassette, inner: httpx2.AsyncBaseTransport | None = None):
        self.cassette, self.inner = cassette, inner or httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        _prepare(request)
        await request.aread()
        secrets = _secrets(request)
        index = self.cassette.reserve(request_record(request, secrets, self.cassette.base_path))
        return _teed(self.cassette, request, await self.inner.handle_async_request(request), _AsyncTeeStream, index,
                     secrets)

    async def aclose(self) -> None:
        await self.inner.aclose()


# -- replaying -------------------------------------------------------------------------------------
class _Absent:
    """Stands for a key one side of a comparison lacks (shown as `(absent)` in the error)."""

    def __repr__(self) -> str:
        return "(absent)"


ABSENT = _Absent()


def first_difference(recorded: Any, sent: Any, where: str = "") -> tuple[str, Any, Any] | None:
    """Where two JSON values first differ (`messages[3].content`), with both values there; None if equal."""
    if isinstance(recorded, dict) and isinstance(sent, dict):
        for key in list(recorded) + [key for key in sent if key not in recorded]:
            place = f"{where}.{key}" if where else str(key)
            if key not in sent:
                return place, recorded[key], ABSENT
            if key not in recorded:
                return place, ABSENT, sent[key]
            found = first_difference(recorded[key], sent[key], place)
            if found:
                return found
        return None
    if isinstance(recorded, list) and isinstance(sent, list):
        for index, (old, new) in enumerate(zip(recorded, sent)):
            found = first_difference(old, new, f"{where}[{index}]")
            if found:
                return found
        if len(recorded) != len(sent):
            return f"{where or 'body'} (length)", len(recorded), len(sent)
        return None
    if recorded != sent or type(recorded) is not type(sent):
        return where or "body", recorded, sent
    return None


class _Player:
    """Answers requests from a cassette, in order; shared by the sync and async transports of a client."""

    def __init__(self, cassette: Cassette):
        self.cassette, self.position = cassette, 0
        self._lock = threading.Lock()
        self.error = sdk_error(CassetteMismatch, cassette.sdk)

    def answer(self, request: httpx2.Request) -> httpx2.Response:
        cassette = self.cassette
        with self._lock:
            index = self.position
            self.position += 1
        # nothing blanked: the replay client's own placeholder key must not change what is compared
        sent = request_record(request, [], cassette.base_path)
        if index >= len(cassette.exchanges):
            raise self.error(str(cassette.path), index + 1, "the end of the cassette",
                             f"{len(cassette.exchanges)} exchanges", f"{sent['method']} {sent['path']}",
                             note=" (the run made more requests than were recorded)")
        recorded = cassette.exchanges[index]["request"]
        for part in ("method", "path", "query", "headers"):
            if recorded.get(part) != sent.get(part):
                raise self.error(str(cassette.path), index + 1, part, recorded.get(part), sent.get(part))
        body_of = lambda record: record.get("json", record.get("text"))  # noqa: E731
        found = first_difference(body_of(recorded), body_of(sent))
        if found:
            raise self.error(str(cassette.path), index + 1, *found)
        answer = cassette.exchanges[index]["response"]
        if answer is None:
            raise sdk_error(CassetteError, cassette.sdk)(f"{cassette.path}: exchange {index + 1} has no response: the recording ended (or "
                                "failed) before it came; record the cassette again")
        if "json" in answer:
            content = json.dumps(answer["json"]).encode()
        else:
            content = answer.get("text", "").encode()
        return httpx2.Response(answer["status"], headers=answer.get("headers", {}), content=content, request=request)


class ReplayTransport(httpx2.BaseTransport):
    def __init__(self, player: _Player):
        self.player = player

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        return self.player.answer(request)


class AsyncReplayTransport(httpx2.AsyncBaseTransport):
    def __init__(self, player: _Player):
        self.player = player

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return self.player.answer(request)


_SDK_ERRORS: dict[tuple[type, str], type] = {}


def sdk_error(cls: type, sdk: str) -> type:
    """`cls` (a CassetteError) made also the SDK's own base error: openai and anthropic pass those on as
    they are, where any other transport error becomes "Connection error" with the message hidden."""
    key = (cls, sdk)
    if key not in _SDK_ERRORS:
        base = None
        if sdk in ("openai", "anthropic"):
            base = getattr(sdk_module(sdk), "OpenAIError" if sdk == "openai" else "AnthropicError")
        _SDK_ERRORS[key] = type(cls.__name__, (cls, base), {"__module__": cls.__module__}) if base else cls
    return _SDK_ERRORS[key]


# -- the SDKs --------------------------------------------------------------------------------------------
def sdk_of(client: Any) -> tuple[str, bool]:
    """("openai" | "anthropic" | "google-genai", asynchronous) of an SDK client, told from its class."""
    module, name = type(client).__module__ or "", type(client).__name__
    root = module.split(".", 1)[0]
    if root in ("openai", "anthropic"):
        return root, name.startswith("Async")
    if module.startswith("google.genai"):
        return "google-genai", name == "AsyncClient"
    raise CassetteError(f"record=: a cassette records an openai, anthropic or google-genai client; got a {module}.{name}")


_SDKS = ("openai", "anthropic", "google-genai")
_SDK_MODULES = {"openai": "openai", "anthropic": "anthropic", "google-genai": "google.genai"}


def sdk_module(sdk: str) -> Any:
    """The module of SDK `sdk` (named by a client's class or a cassette), or an ImportError naming what
    to install. The SDKs are the user's own dependencies, never nbtools'."""
    try:
        return importlib.import_module(_SDK_MODULES[sdk])
    except ImportError:
        raise ImportError(f"this cassette needs the {sdk} SDK: pip install {sdk}") from None
_OPEN: dict[Path, Cassette] = {}  # the cassettes this process records, by resolved path
_OPEN_LOCK = threading.Lock()


def _cassette_for(path: str | os.PathLike, sdk: str, base_path: str, asynchronous: bool) -> Cassette:
    """The cassette a Chat records into: new (the file started afresh) the first time this process
    records to `path`, the same one after that."""
    resolved = Path(path).resolve()
    with _OPEN_LOCK:
        cassette = _OPEN.get(resolved)
        if cassette is not None and cassette.sdk != sdk:
            raise CassetteError(f"record={str(path)!r} already records a {cassette.sdk} client in this session; "
                                f"record the {sdk} chat to another file")
        if cassette is None:
            if not resolved.parent.is_dir():
                raise CassetteError(f"record={str(path)!r}: the folder {resolved.parent} does not exist")
            cassette = _OPEN[resolved] = Cassette(resolved, sdk, base_path, asynchronous=asynchronous)
            cassette.write()  # started afresh
    return cassette


def recording(client: Any, path: str | os.PathLike) -> Any:
    """A copy of `client` whose exchanges with the provider are recorded into the cassette at `path`."""
    sdk, asynchronous = sdk_of(client)
    if sdk in ("openai", "anthropic"):
        module = sdk_module(sdk)
        base_path = str(client.base_url.path).rstrip("/")
        cassette = _cassette_for(path, sdk, base_path, asynchronous)
        if asynchronous:
            http = module.DefaultAsyncHttpxClient(transport=AsyncRecordingTransport(cassette))
        else:
            http = module.DefaultHttpxClient(transport=RecordingTransport(cassette))
        return client.copy(http_client=http)
    genai = sdk_module(sdk)
    api = client._api_client  # google-genai's settings (no public copy(); the documented hook is http_options)
    options = api._http_options.model_copy()
    base_path = httpx2.URL(options.base_url or "").path.rstrip("/")
    cassette = _cassette_for(path, sdk, base_path, asynchronous)
    options.httpx_client = httpx2.Client(transport=RecordingTransport(cassette))
    options.httpx_async_client = httpx2.AsyncClient(transport=AsyncRecordingTransport(cassette))
    if api.vertexai:
        copy = genai.Client(vertexai=True, credentials=api._credentials, project=api.project, location=api.location,
                            http_options=options)
    else:
        copy = genai.Client(api_key=api.api_key, http_options=options)
    return copy.aio if asynchronous else copy


def replay(path: str | os.PathLike, *, asynchronous: bool | None = None) -> Any:
    """A client of the recorded SDK that answers from the cassette at `path`, offline.

    `asynchronous`: None gives the kind of client that was recorded (`openai.OpenAI` or `AsyncOpenAI`,
    `anthropic.Anthropic` or `AsyncAnthropic`, `google.genai.Client` or its `.aio`). Requests must come
    in the recorded order and be the same (method, path, query, JSON body); the first one that is not
    raises `CassetteMismatch` naming what differs. Of the headers only the beta ones
    (`anthropic-beta`, `openai-beta`) are compared.
    """
    cassette = Cassette.load(path)
    player = _Player(cassette)
    asynchronous = cassette.asynchronous if asynchronous is None else asynchronous
    base_url = REPLAY_HOST + cassette.base_path
    if cassette.sdk in ("openai", "anthropic"):
        module = sdk_module(cassette.sdk)
        if asynchronous:
            cls, http = (module.AsyncOpenAI if cassette.sdk == "openai" else module.AsyncAnthropic,
                         httpx2.AsyncClient(transport=AsyncReplayTransport(player)))
        else:
            cls, http = (module.OpenAI if cassette.sdk == "openai" else module.Anthropic,
                         httpx2.Client(transport=ReplayTransport(player)))
        return cls(api_key="replayed", base_url=base_url, http_client=http)  # retries as recorded: default
    genai = sdk_module(cassette.sdk)
    client = genai.Client(api_key="replayed", http_options={
        "base_url": base_url, "httpx_client": httpx2.Client(transport=ReplayTransport(player)),
        "httpx_async_client": httpx2.AsyncClient(transport=AsyncReplayTransport(player))})
    return client.aio if asynchronous else client


__all__ = ["Cassette", "RecordingTransport", "AsyncRecordingTransport", "ReplayTransport", "AsyncReplayTransport",
           "first_difference", "recording", "replay", "sdk_of", "FORMAT"]
