"""How `connect()` reaches a server: a stdio command, streamable HTTP, or a legacy SSE endpoint, and
which HTTP headers go where.

The token rule (issues "Trust, round three" and "four"): `$NBTOOLS_MCP_TOKEN` is the secret of this
user's nbtools servers, so `connect(url)` sends it only to a loopback address spelled as one
(`127.0.0.0/8`, `::1`, `localhost`; a name is not resolved to decide: a DNS answer can change between
the check and the request) where this user's nbtools started a server (`ownservers`: a record in an
owner-only runtime folder; another user's server on the same host gets nothing). A token or headers
passed by the person go wherever they point the client.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import shlex
import sys
from typing import Any, AsyncIterator
from urllib.parse import urlsplit

from . import ownservers
from .access import TOKEN_ENV, is_loopback
from .background import serves_on_loop


def is_url(target: Any) -> bool:
    """Whether a `connect` target is an HTTP(S) URL (else it is a command)."""
    return isinstance(target, str) and target.startswith(("http://", "https://"))


def request_headers(url: str, token: str | None, headers: dict[str, str] | None) -> dict[str, str]:
    """The headers of every request to `url`: `headers`, plus `Authorization: Bearer <token>`.

    The token: `token` when given (sent wherever `url` points); else `$NBTOOLS_MCP_TOKEN`, only when
    `url` is a server this user's nbtools started on this machine (see the module docstring). An
    `Authorization` in `headers` wins.
    """
    out = {str(key): str(value) for key, value in (headers or {}).items()}
    if token is None and env_token_withheld(url) is None:
        token = os.environ.get(TOKEN_ENV) or None
    if token is not None and "authorization" not in {key.lower() for key in out}:
        out["Authorization"] = f"Bearer {token}"
    return out


def env_token_withheld(url: str) -> str | None:
    """The address `$NBTOOLS_MCP_TOKEN` is kept from (it is set, but `url` is not a server this
    user's nbtools started on this machine), else None."""
    if not os.environ.get(TOKEN_ENV):
        return None
    parts = urlsplit(url)
    if is_loopback(parts.hostname or "") and ownservers.started_here(url):
        return None
    return parts.netloc or url


def refused_status(url: str, headers: dict[str, str]) -> int | None:
    """After a failed connect: the HTTP status a plain JSON-RPC POST gets (the SDK's errors hide it)."""
    try:
        import httpx2

        return httpx2.post(url, headers={**headers, "Content-Type": "application/json",
                                         "Accept": "application/json, text/event-stream"},
                           content=b'{"jsonrpc":"2.0","id":0,"method":"ping"}', timeout=5).status_code
    except Exception:  # unreachable, or no httpx2: the original reason stands
        return None


@contextlib.asynccontextmanager
async def streamable_http(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    """The SDK's streamable HTTP transport with `headers` on every request."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with create_mcp_http_client(headers=headers) as http_client:
        async with streamable_http_client(url, http_client=http_client) as streams:
            yield streams


@contextlib.asynccontextmanager
async def legacy_sse(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    """The SDK's client for the HTTP+SSE transport of protocol 2024-11-05 (`GET /sse`)."""
    from mcp.client.sse import sse_client

    async with sse_client(url, headers=headers) as streams:
        yield streams


def stdio(argv: list[str], env: dict | None, cwd: str | None, errlog: Any) -> Any:
    """The SDK's stdio transport: starts `argv` and speaks over its stdin/stdout."""
    from mcp import StdioServerParameters, stdio_client

    return stdio_client(StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=cwd), errlog=errlog)


def sse_worth_trying(url: str, headers: dict[str, str]) -> bool:
    """The fallback the MCP spec describes for old servers: a POST refused with a 4xx other than an
    authentication answer (401/403) means no streamable HTTP endpoint here; try `GET` for SSE."""
    status = refused_status(url, headers) if url else None
    return status is not None and 400 <= status < 500 and status not in (401, 403)


def describe(target: Any) -> str:
    return target if isinstance(target, str) else shlex.join(str(part) for part in target)


def server_errlog() -> Any:
    """Where a stdio server's stderr goes: the process's real stderr (a kernel's sys.stderr has no fd)."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.fileno()
                return stream
        except (AttributeError, OSError, ValueError):
            continue
    return open(os.devnull, "w")  # noqa: SIM115 - lives as long as the server process


@functools.cache
def quiet_unreachable_session_end() -> None:
    """Closing a connection whose HTTP server has gone makes the `mcp` client warn that it could not
    end the session: nothing is left to end, so that one warning is dropped."""
    import logging

    def keep(record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Session termination failed: All connection attempts failed")

    logging.getLogger("mcp.client.streamable_http").addFilter(keep)


def refuse_own_loop_server(url: str) -> None:
    """A blocking call from the thread whose loop runs the target server's calls would wait for itself
    forever (the transport answers on its own thread; the call itself waits for this thread)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    from urllib.parse import urlsplit

    port = urlsplit(url).port
    if port is not None and serves_on_loop(port, loop) is not None:
        raise RuntimeError(
            f"the MCP server at {url} runs its calls on this thread's event loop (started with "
            "`%tools --serve` or nbtools.mcp.start here), so a blocking call to it from this thread "
            "would wait for itself forever. Call the tools directly here, or serve them from another process "
            "(`nbtools serve NOTEBOOK --http PORT`) and connect to that.")


def explain_failure(reason: str, url: str | None, headers: dict[str, str], timeout: float) -> str:
    """Why connecting failed, for a person: `reason` (the SDK's error), with what to do about it."""
    from .web import MCP_PATH

    if reason in ("TimeoutError", "CancelledError"):
        silent = f"no answer to the handshake (`server/discover`, `initialize`) within {timeout:g} s"
        return silent + (" (does the command start an MCP server that speaks on its stdout?)" if url is None else "")
    if url is None:
        return reason
    status = refused_status(url, headers)
    if status == 401 or "401" in reason:
        if "authorization" in {key.lower() for key in headers}:
            return "401 Unauthorized (the token was refused)"
        withheld = env_token_withheld(url)
        if withheld is not None:
            return (f"401 Unauthorized: $NBTOOLS_MCP_TOKEN is set but is sent only to an MCP server this user's "
                    f"nbtools started on this machine (recorded in {ownservers.runtime_dir()}), and {withheld} is not "
                    "one; pass connect(url, token=...) to send a token there")
        return ("401 Unauthorized (the server wants a bearer token: connect(url, token=...) or "
                "$NBTOOLS_MCP_TOKEN; nbtools prints it when it starts serving)")
    if status == 404 or reason.endswith("Not Found"):
        return f"{reason} (is the path right? nbtools, like most MCP servers, serves at {MCP_PATH})"
    return reason
