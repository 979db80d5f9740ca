"""How `connect()` reaches a server: a stdio command, streamable HTTP, or a legacy SSE endpoint, and
which HTTP headers go where.

The token rule (issue "Trust, round three"): `$NBTOOLS_MCP_TOKEN` is the secret of an nbtools server
on this machine, so `connect(url)` sends it only to a loopback address spelled as one (`127.0.0.0/8`,
`::1`, `localhost`). A name is not resolved to decide: a DNS answer can change between the check
and the request. A token or headers passed by the person go wherever they point the client.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, AsyncIterator
from urllib.parse import urlsplit

from .access import TOKEN_ENV, is_loopback


def is_url(target: Any) -> bool:
    """Whether a `connect` target is an HTTP(S) URL (else it is a command)."""
    return isinstance(target, str) and target.startswith(("http://", "https://"))


def request_headers(url: str, token: str | None, headers: dict[str, str] | None) -> dict[str, str]:
    """The headers of every request to `url`: `headers`, plus `Authorization: Bearer <token>`.

    The token: `token` when given (sent wherever `url` points); else `$NBTOOLS_MCP_TOKEN`, only when
    `url`'s host is a loopback address (see the module docstring). An `Authorization` in `headers` wins.
    """
    out = {str(key): str(value) for key, value in (headers or {}).items()}
    if token is None and env_token_withheld(url) is None:
        token = os.environ.get(TOKEN_ENV) or None
    if token is not None and "authorization" not in {key.lower() for key in out}:
        out["Authorization"] = f"Bearer {token}"
    return out


def env_token_withheld(url: str) -> str | None:
    """The host `$NBTOOLS_MCP_TOKEN` is kept from (set, but `url` is not on loopback), else None."""
    host = urlsplit(url).hostname or ""
    if os.environ.get(TOKEN_ENV) and not is_loopback(host):
        return host
    return None


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
