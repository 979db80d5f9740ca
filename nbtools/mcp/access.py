"""Who may call an HTTP server: its bearer token and the Host/Origin names it answers to.

Both checks use the `mcp` SDK's own hooks (`web.uvicorn_server` passes them in):

* the token: a `TokenVerifier` (`StaticToken`) with `AuthSettings` makes the SDK's bearer
  middleware answer 401 to any request to `/mcp` without `Authorization: Bearer <token>`;
  the comparison is constant-time (`hmac.compare_digest`).
* Host/Origin: explicit `TransportSecuritySettings` for every bind address. The SDK switches its
  DNS-rebinding protection on by itself only for a host spelled `127.0.0.1`, `localhost` or `::1`;
  with `127.0.0.2`, `0.0.0.0` or a LAN address it would accept any `Host:` and `Origin:`.

* the proxy's token: a kernel started by a Jupyter Server with the extension `nbtools.jupyter` serves
  with a second, private token that only the extension holds (`nbtools.jupyter.registration`). A
  request bearing it comes through Jupyter's own authentication, and only such a request may name
  the Jupyter user (`registration.USER_HEADER`; `proxied_user`): with the public token, or without
  the private one, the header is ignored, so a client cannot claim to be someone else.

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


PROXY_CLIENT = "nbtools-jupyter"
"""The client id of a request that bore the private token of the Jupyter Server extension."""


class StaticToken:
    """The SDK's `TokenVerifier` for one shared secret, and the proxy's private one if any
    (constant-time comparisons, both always made)."""

    def __init__(self, token: str, proxy_token: str | None = None):
        self._token = token.encode()
        self._proxy = proxy_token.encode() if proxy_token else None

    async def verify_token(self, token: str) -> "AccessToken | None":
        from mcp.server.auth.provider import AccessToken

        given = token.encode()
        public = hmac.compare_digest(given, self._token)
        proxied = self._proxy is not None and hmac.compare_digest(given, self._proxy)
        if proxied:
            return AccessToken(token="<redacted>", client_id=PROXY_CLIENT, scopes=[])
        if public:
            return AccessToken(token="<redacted>", client_id="nbtools-token", scopes=[])
        return None


def auth_hooks(token: str | None, url: str, proxy_token: str | None = None) -> dict[str, Any]:
    """The `streamable_http_app` keyword arguments that require `token` (none when `token` is None),
    or the Jupyter extension's `proxy_token`.

    `AuthSettings` wants an issuer URL; the token's issuer is this server itself (`url`). No
    `resource_server_url`: there is no OAuth metadata to advertise for a static token.
    """
    if token is None:
        return {}
    from mcp.server.auth.settings import AuthSettings

    return {"auth": AuthSettings(issuer_url=url, resource_server_url=None),
            "token_verifier": StaticToken(token, proxy_token)}


def proxied_user(request_ctx: Any) -> str | None:
    """The Jupyter user a request came through the extension for, or None (see the module docs).

    Read from the HTTP request the SDK attaches to the request context: believed only when the SDK's
    bearer middleware authenticated it with the proxy's private token.
    """
    from urllib.parse import unquote

    from ..jupyter.registration import USER_HEADER

    request = getattr(request_ctx, "request", None)
    scope = getattr(request, "scope", None)
    user = scope.get("user") if isinstance(scope, dict) else None
    access = getattr(user, "access_token", None)
    if getattr(access, "client_id", None) != PROXY_CLIENT:
        return None
    raw = request.headers.get(USER_HEADER)
    name = unquote(raw).strip() if raw else ""
    return "".join(ch for ch in name if ch.isprintable())[:120] or None


def origin_of(client: str, user: str | None) -> str:
    """The approval origin of a served call: `mcp:<client>`, or `mcp:<client>@<user>` for a Jupyter
    user (an "@" in the client's name is written "(at)", so an "@" always starts the user's name)."""
    client = client.replace("@", "(at)")
    return f"mcp:{client}" if user is None else f"mcp:{client}@{user}"


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


__all__ = ["TOKEN_ENV", "PROXY_CLIENT", "resolve_token", "StaticToken", "auth_hooks", "proxied_user", "origin_of", "is_loopback", "allowed_names",
           "transport_security"]

