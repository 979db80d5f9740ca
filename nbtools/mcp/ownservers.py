"""The HTTP servers this user's nbtools started on this machine, recorded in an owner-only runtime folder.

Why (issue "Trust, round four"): `$NBTOOLS_MCP_TOKEN` is the secret of this user's nbtools servers,
and "on loopback" does not mean "mine": another user on the same host can listen on 127.0.0.1 too,
and would be sent the token. So every HTTP server nbtools starts (`nbtools serve --http`,
`nbtools.mcp.start`, `%tools --serve`) writes a record here while it listens, and `connect(url)`
sends the environment's token only to a loopback address that such a record names (a token passed
with `token=` goes wherever the person points it).

A record counts only when all of these hold: the folder and the file are this user's and nobody
else may write or read them (0700 / 0600, no symbolic link); the process that wrote it still runs
and is this user's; and, where Linux shows who listens on what (`/proc/net/tcp`, `tcp6`), every
socket listening on that port belongs to this user. `localhost` means 127.0.0.1 or ::1: a record of
either counts where that table is read (nobody else listens on the port), else only one covering
both. A record is removed when its server stops; one left by a process that died is ignored.

The folder: `$NBTOOLS_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/nbtools`, else
`~/.local/share/nbtools/runtime`.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import secrets
import stat
import time
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit

RUNTIME_ENV = "NBTOOLS_RUNTIME_DIR"
"""Overrides where the records are kept (tests use their own folder)."""

_WILDCARDS = ("", "0.0.0.0", "::")


def runtime_dir() -> Path:
    """The folder of the records (see the module docs); not created here."""
    given = os.environ.get(RUNTIME_ENV)
    if given:
        return Path(given)
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "nbtools"
    return Path.home() / ".local" / "share" / "nbtools" / "runtime"


def _private(path: Path, kind: int) -> bool:
    """Whether `path` is a `kind` (S_IFDIR/S_IFREG), not a link, this user's, and closed to others."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_IFMT(info.st_mode) == kind and info.st_uid == _uid() and info.st_mode & 0o077 == 0


def _uid() -> int:
    """This user's id (Windows has none: its files report 0, and so does this)."""
    return os.getuid() if hasattr(os, "getuid") else 0


def _folder(create: bool) -> Path | None:
    """The records' folder when it is private (created 0700 when asked), else None."""
    folder = runtime_dir()
    if create:
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            info = os.lstat(folder)
            if stat.S_ISDIR(info.st_mode) and info.st_uid == _uid() and info.st_mode & 0o077:
                os.chmod(folder, 0o700)  # ours but open to others (made by hand?): close it
        except OSError:
            return None
    return folder if _private(folder, stat.S_IFDIR) else None


def _name(host: str, port: int) -> str:
    return f"mcp-{host.strip('[]').replace(':', '_') or 'any'}-{port}.json"


class Record:
    """One server's record: where it is and what it says (`nonce` tells it from a later record of the
    same address, which a server started again on that port in this process writes)."""

    __slots__ = ("path", "nonce")

    def __init__(self, path: Path, nonce: str):
        self.path, self.nonce = path, nonce

    def __repr__(self) -> str:
        return f"Record({str(self.path)!r})"


def record(host: str, port: int) -> Record | None:
    """Record that this process serves MCP on host:port (None when the folder cannot be made private:
    then `connect` does not send the environment's token to this server)."""
    folder = _folder(create=True)
    if folder is None:
        return None
    path = folder / _name(host, port)
    nonce = secrets.token_hex(8)
    temporary = folder / f".{path.name}.{nonce}"
    body = json.dumps({"host": host, "port": port, "pid": os.getpid(), "started": time.time(), "nonce": nonce})
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(body)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        return None
    return Record(path, nonce)


def forget(entry: Record | None) -> None:
    """Remove a record when its server stops (a later record of the same address is left alone)."""
    if entry is None:
        return
    with contextlib.suppress(OSError, ValueError, AttributeError):
        if json.loads(entry.path.read_bytes()).get("nonce") == entry.nonce:
            entry.path.unlink()


def started_here(url: str) -> bool:
    """Whether `url` is served by an MCP server this user's nbtools started on this machine (see the
    module docs for what a record must satisfy)."""
    parts = urlsplit(url)
    try:
        host, port = (parts.hostname or "").lower(), parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return False
    if not _loopback(host):
        return False
    folder = _folder(create=False)
    if folder is None:
        return False
    owners = _listener_owners(port)
    if owners is not None and not (owners and all(owner == _uid() for owner in owners)):
        return False  # nobody listens there, or someone else does too (on any address)
    for path in _records(folder, port):
        try:
            entry = json.loads(path.read_bytes())
        except (OSError, ValueError):
            continue
        # where the listeners are known to be this user's alone, `localhost` may mean either of its
        # addresses; else the record must cover both (another user could hold the other one)
        if (isinstance(entry, dict) and entry.get("port") == port
                and _covers(str(entry.get("host", "")), host, every=owners is None)
                and _ours_and_alive(entry.get("pid"))):
            return True
    return False


def _records(folder: Path, port: int) -> Iterator[Path]:
    with contextlib.suppress(OSError):
        for path in folder.glob(f"mcp-*-{port}.json"):
            if _private(path, stat.S_IFREG):
                yield path


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _addresses(host: str) -> set[ipaddress._BaseAddress]:
    host = host.strip("[]").lower()
    if host == "localhost":
        return {ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")}
    try:
        return {ipaddress.ip_address(host)}
    except ValueError:
        return set()


def _covers(bound: str, host: str, every: bool) -> bool:
    """Whether a server bound to `bound` is what a client reaching `host` talks to: on every address
    `host` may mean (`localhost` is 127.0.0.1 and ::1) when `every`, else on one of them."""
    wanted = _addresses(host)
    if bound in _WILDCARDS:  # "::" is dual-stack on Linux; "0.0.0.0" is IPv4 only
        served = {address for address in wanted if bound == "::" or address.version == 4}
    else:
        served = wanted & _addresses(bound)
    return bool(served) and (served == wanted or not every)


def _ours_and_alive(pid: object) -> bool:
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)  # PermissionError: another user's process holds that number now
    except OSError:
        return False
    try:
        return os.stat(f"/proc/{pid}").st_uid == _uid()
    except OSError:
        return True  # no /proc (not Linux): the signal check is what there is


def _listener_owners(port: int) -> list[int] | None:
    """The user ids of the sockets listening on `port`, on any address, where the kernel shows them
    (Linux `/proc/net/tcp`, `tcp6`); None where it does not."""
    owners: list[int] = []
    readable = False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as rows:
                lines = rows.read().splitlines()[1:]
        except OSError:
            continue
        readable = True
        for line in lines:
            fields = line.split()
            # local_address is HEXADDR:HEXPORT; state 0A is LISTEN; the uid is the eighth column
            if len(fields) > 7 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                owners.append(int(fields[7]))
    return owners if readable else None


__all__ = ["RUNTIME_ENV", "Record", "runtime_dir", "record", "forget", "started_here"]
