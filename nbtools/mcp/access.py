"""Who may call an HTTP server: its bearer token and the Host/Origin names it answers to.

Both checks use the `mcp` SDK's own hooks (`web.uvicorn_server` passes them in):

* the token: a `TokenVerifier` (`StaticToken`) with `AuthSettings` makes the SDK's bearer
  middleware answer 401 to any request to `/mcp` without `Authorization: Bearer <token>`;
  the comparison is constant-time (`hmac.compare_digest`).
* Host/Origin: explicit `TransportSecuritySettings` for every bind address. The SDK switches its
  DNS-rebinding protection on by itself only for a host spelled `127.0.0.1`, `localhost` or `::1`;
  with `127.0.0.2`, `0.0.0.0` or a LAN address it would accept any `Host:` and `Origin:`.

Stdio serving has no token: whoever started the process owns it.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import secrets
import warnings
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken

TOKEN_ENV = "NBTOOLS_MCP_TOKEN"
"""The environment variable a server (when no token is given) and `connect` read the token from."""

_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def resolve_token(token: str | bool | None) -> str | None:
    """The token a server requires: `token` itself, else `$NBTOOLS_MCP_TOKEN`, else a fresh random one.

    `token=False` (`--no-token`) means none: anyone who can reach the port may call every tool, so
    this warns. A fresh token has 256 bits (`secrets.token_urlsafe(32)`).
    """
    if token is False:
        warnings.warn("serving MCP over HTTP without a token (token=False / --no-token): any process or "
                      "user that can reach the port can call every enabled tool", UserWarning, stacklevel=3)
        return None
    if token is None or token is True:
        token = os.environ.get(TOKEN_ENV) or secrets.token_urlsafe(32)
    if not isinstance(token, str) or not token.strip() or any(ch.isspace() for ch in token):
        raise ValueError(f"the MCP server token must be a non-empty string without spaces, got {token!r} "
                         "(token=None picks a random one; token=False turns authentication off)")
    return token


class StaticToken:
    """The SDK's `TokenVerifier` for one shared secret (constant-time comparison)."""

    def __init__(self, token: str):
        self._token = token.encode()

    async def verify_token(self, token: str) -> "AccessToken | None":
        from mcp.server.auth.provider import AccessToken

        if hmac.compare_digest(token.encode(), self._token):
            return AccessToken(token="<redacted>", client_id="nbtools-token", scopes=[])
        return None


def auth_hooks(token: str | None, url: str) -> dict[str, Any]:
    """The `streamable_http_app` keyword arguments that require `token` (none when `token` is None).

    `AuthSettings` wants an issuer URL; the token's issuer is this server itself (`url`). No
    `resource_server_url`: there is no OAuth metadata to advertise for a static token.
    """
    if token is None:
        return {}
    from mcp.server.auth.settings import AuthSettings

    return {"auth": AuthSettings(issuer_url=url, resource_server_url=None), "token_verifier": StaticToken(token)}


def is_loopback(host: str) -> bool:
    """Whether `host` names this machine only (`localhost`, 127.0.0.0/8, ::1)."""
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_form(name: str) -> str:
    """`name` as it appears in a Host header: IPv6 addresses in brackets."""
    name = name.strip()
    if ":" in name and not name.startswith("["):
        try:
            ipaddress.IPv6Address(name)
            return f"[{name}]"
        except ValueError:
            pass  # `name:port`
    return name


def allowed_names(host: str, allow_hosts: Iterable[str] = ()) -> list[str]:
    """The Host names a server bound to `host` answers to, in Host-header form.

    The bound host (unless it is a wildcard: `0.0.0.0`/`::` say nothing about the name clients
    use), the loopback names when bound to loopback or a wildcard, and `allow_hosts` (a name, or
    `name:port` for one port only).
    """
    names: list[str] = []
    wildcard = host in ("", "0.0.0.0", "::")
    if not wildcard:
        names.append(_host_form(host))
    if wildcard or is_loopback(host):
        names.extend(_LOOPBACK_NAMES)
    for extra in allow_hosts or ():
        if not isinstance(extra, str) or not extra.strip() or "/" in extra:
            raise ValueError(f"allow_hosts: {extra!r} is not a host name (give e.g. 'myhost.local' or "
                             "'192.168.1.5', optionally with ':PORT')")
        names.append(_host_form(extra))
    return list(dict.fromkeys(names))


def transport_security(host: str, allow_hosts: Iterable[str] = ()) -> Any:
    """`TransportSecuritySettings` allowing exactly `allowed_names(host, allow_hosts)` as Host, and
    `http(s)://` of them as Origin (a request without Origin, as non-browser clients send, passes)."""
    from mcp.server.transport_security import TransportSecuritySettings

    hosts: list[str] = []
    origins: list[str] = []
    for name in allowed_names(host, allow_hosts):
        has_port = name.rsplit("]", 1)[-1].count(":") == 1
        hosts.extend([name] if has_port else [name, f"{name}:*"])
        for scheme in ("http", "https"):
            origins.extend([f"{scheme}://{name}"] if has_port else [f"{scheme}://{name}", f"{scheme}://{name}:*"])
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=origins)


__all__ = ["TOKEN_ENV", "resolve_token", "StaticToken", "auth_hooks", "is_loopback", "allowed_names",
           "transport_security"]

