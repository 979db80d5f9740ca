"""What model code may touch: `Allow`, enforced in the isolated child by the kernel's own security
modules (Landlock for files, TCP ports and scoping; seccomp for running programs).

Why plain syscalls through ctypes: no Python library does the job. PyPI's `landlock` (1.0.0.dev5)
has no network rules and no scoping; `pyseccomp` wraps libseccomp (a C library to install) for
what is here one short BPF program. Landlock is three syscalls (444/445/446 on every
architecture) and seccomp one `prctl`; the structures are a few integers.

How a run is confined (`Confinement`):
- In the parent, before the fork: probe what the kernel offers (`landlock_abi()`,
  `seccomp_available()`; missing → `ConfinementUnavailable`, one line, nothing run), make the fresh
  folder the code may write into, build the Landlock ruleset (its rules added by opening each path)
  and the seccomp program. Building a ruleset restricts nobody: the parent stays as it was, also
  while a confined run is in flight.
- In the child, right after the fork (`Confinement.enter`): `prctl(PR_SET_NO_NEW_PRIVS)`,
  `landlock_restrict_self`, `prctl(PR_SET_SECCOMP)` (refusing a file's metadata changes, which
  Landlock does not cover, leaving the process group the child made, so what the code starts is
  killed with the run, and without `run=True` running programs); every capability is dropped
  (a kernel running as root would otherwise hand the code raw sockets, kernel modules, mounts:
  things Landlock does not cover); sockets can be made for IPv4, IPv6 (TCP and UDP only) and
  netlink only (a UNIX socket by path is out of Landlock's reach here, MPTCP out of its TCP
  rules); TCP Fast Open, io_uring and new namespaces are refused (each a route past Landlock or
  past this filter, see the tables below); then every descriptor but the standard streams and the result
  pipe is closed (an inherited socket or file of the kernel's would be a way around the rules:
  Landlock checks opening, not using). Only the forking thread exists in the child, so the
  restriction covers every thread the code starts and every program it runs (both inherit it,
  and it cannot be lifted).
- After the run the parent removes the folder if the code left nothing in it (else it stays, so
  nothing written is lost) and closes the ruleset. A time-out kills the child; nothing else was
  ever restricted.

What is refused comes back as the ordinary `PermissionError` (EACCES from Landlock, EPERM from
seccomp) at the system call, whatever route the code takes: open, pathlib, os, shutil, a shell, ctypes.

Not promised (said in README and `python()`'s docstring too): an in-process run (no `allow=`) is not
contained; reads are allowed unless `read=` lists paths; the environment and the kernel's variables
are copied into the child; UDP and host names (ports only) are not filtered;
files' times can still be changed; permissions, owners and extended attributes cannot, in the
fresh folder either (so `shutil.copy`/`copy2` fail there: `shutil.copyfile` works); Linux only
(x86_64 and aarch64 for the seccomp program).
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Any, Iterable

from ..errors import NbtoolsError
from ..ir import _Frozen

# Landlock (include/uapi/linux/landlock.h)
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_VERSION = 1  # landlock_create_ruleset flag: return the ABI version
_RULE_PATH_BENEATH, _RULE_NET_PORT = 1, 2
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_TRUNCATE, _IOCTL_DEV = 1 << 14, 1 << 15
_FS_ALL = (1 << 16) - 1          # every filesystem right up to IOCTL_DEV (ABI 5)
_READING = _EXECUTE | _READ_FILE | _READ_DIR
_FILE_RIGHTS = _EXECUTE | _WRITE_FILE | _READ_FILE | _TRUNCATE | _IOCTL_DEV  # what a rule on a file may grant
_BIND_TCP, _CONNECT_TCP = 1, 2
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1, 2
NEEDED_ABI = 6  # files (with truncate and device ioctls), TCP ports, scoping: Linux 6.12

# prctl and seccomp (include/uapi/linux/prctl.h, seccomp.h, audit.h)
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2
_SECCOMP_GET_ACTION_AVAIL = 2
_PR_CAPBSET_DROP, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
_CAPABILITY_VERSION_3 = 0x20080522
_CLOSE_RANGE = 436
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_ARCHES = {  # machine: (AUDIT_ARCH_*, seccomp, execve, execveat, x32 bit to refuse or 0)
    "x86_64": (0xC000003E, 317, 59, 322, 0x40000000),
    "aarch64": (0xC00000B7, 277, 221, 281, 0),
}
# A file's metadata, which Landlock does not cover, refused everywhere (a syscall filter cannot
# tell paths apart): permissions (chmod, fchmod, fchmodat, fchmodat2), owners (chown, fchown,
# lchown, fchownat), extended attributes set or removed (set/lset/fsetxattr, remove/lremove/
# fremovexattr, setxattrat, removexattrat). Times (utime...) stay allowed.
_METADATA = {
    "x86_64": (90, 91, 268, 452, 92, 93, 94, 260, 188, 189, 190, 197, 198, 199, 463, 466),
    "aarch64": (52, 53, 452, 55, 54, 5, 6, 7, 14, 15, 16, 463, 466),
}
# Leaving the run's process group (setsid, setpgid), refused so that what the code starts is
# killed with the run.
_GROUP = {"x86_64": (112, 109), "aarch64": (157, 154)}
# socket(): only these address families may be made (UNIX sockets by path, which Landlock ABI 7
# does not cover, and packet, vsock... sockets are refused; socketpair() stays allowed), and for
# IPv4 and IPv6 only these protocols: the default, TCP and UDP (Landlock's port rules hold for TCP
# sockets only: MPTCP (262) or SCTP (132) would pass them; ICMP "ping" sockets are not needed)
_SOCKET = {"x86_64": 41, "aarch64": 198}
_FAMILIES = (2, 10, 16)  # AF_INET, AF_INET6, AF_NETLINK
_INET, _PROTOCOLS = (2, 10), (0, 6, 17)
# Calls whose arguments are checked (number: index of the argument holding the flags):
# TCP Fast Open connects inside sendto/sendmsg/sendmmsg (MSG_FASTOPEN), where Landlock's connect
# rule is never asked; setsockopt(IPPROTO_TCP, TCP_FASTOPEN_CONNECT) is refused too.
_SENDS = {"x86_64": {44: 3, 46: 2, 307: 3}, "aarch64": {206: 3, 211: 2, 269: 3}}
_MSG_FASTOPEN = 0x20000000
_SETSOCKOPT = {"x86_64": 54, "aarch64": 208}
_IPPROTO_TCP, _TCP_FASTOPEN_CONNECT = 6, 30
# Namespaces: a new user namespace hands the process every capability inside it (mounts, raw
# sockets in a network namespace of its own), kernel surface no run needs. unshare and setns are
# refused; clone with any CLONE_NEW* flag too; clone3 (whose flags sit in memory, out of a
# filter's sight) answers ENOSYS, so the C library falls back to clone.
_CLONE = {"x86_64": 56, "aarch64": 220}
_CLONE_NEW = 0x7E020000  # CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
_NAMESPACES = {"x86_64": (272, 308), "aarch64": (97, 268)}  # unshare, setns
_CLONE3 = 435
# io_uring (setup, enter, register: the same numbers everywhere) performs socket, file and xattr
# operations without their system calls: this filter would never see them.
_IO_URING = (425, 426, 427)
_ENOSYS = 38
_EPERM = 1


class ConfinementUnavailable(NbtoolsError, RuntimeError):
    """`allow=` cannot be enforced here (no Landlock of the ABI needed, no seccomp, not Linux)."""


class Allow(_Frozen):
    """What the code of a `python(code, allow=Allow(...))` run may touch (a frozen record).

    - `write`: folders or files it may create, change and remove things in, besides a fresh
      temporary folder made for each run (the code's working directory, `$TMPDIR` and
      `$NBTOOLS_WORKDIR`; removed after the run when left empty).
    - `read`: None (the default) reads anything the user can; a list of paths reads only those
      (plus what the interpreter needs: its own installation, `sys.path`, and the writable paths).
    - `connect`: (host, port) pairs it may open TCP connections to. Landlock filters by port:
      the host is shown and recorded, not enforced. No listening (binding a TCP port) either way.
    - `run`: whether it may run programs (`execve`); the rules above hold for them too.
    """

    __slots__ = ("write", "read", "connect", "run")
    write: tuple[str, ...]
    read: tuple[str, ...] | None
    connect: tuple[tuple[str, int], ...]
    run: bool

    # A plain class, not a dataclass: generating one cost a millisecond of `from nbtools import python`.
    def __init__(self, write: Iterable[str | os.PathLike] = (), read: Iterable[str | os.PathLike] | None = None,
                 connect: Iterable[tuple[str, int]] = (), run: bool = False) -> None:
        if type(run) is not bool:
            raise TypeError(f"Allow(run=...) takes True or False, got {run!r}")
        set_ = object.__setattr__
        set_(self, "write", _paths("write", write))
        set_(self, "read", None if read is None else _paths("read", read))
        set_(self, "connect", _endpoints(connect))
        set_(self, "run", run)

    def _fields(self) -> tuple:
        return self.write, self.read, self.connect, self.run

    def __reduce__(self) -> tuple:  # copy, deepcopy and pickle rebuild it through __init__ (frozen slots)
        return self.__class__, (self.write, self.read, self.connect, self.run)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._fields() == other._fields()  # type: ignore[attr-defined]
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return f"Allow(write={self.write!r}, read={self.read!r}, connect={self.connect!r}, run={self.run!r})"

    def __str__(self) -> str:
        """One line a person approving a run reads."""
        write = ", ".join(self.write)
        parts = [f"write only a fresh temporary folder{' and ' + write if write else ''}",
                 "read anything" if self.read is None else f"read only {_readable(self.read)}",
                 "connect to " + ", ".join(f"{host}:{port}" for host, port in self.connect) + " (TCP ports)"
                 if self.connect else "connect nowhere",
                 "run programs" if self.run else "run no program"]
        return "; ".join(parts)

    def narrowed(self, other: "Allow | None") -> "Allow":
        """What both `self` and `other` allow (the stricter of two policies; `other` None: self)."""
        if other is None or other == self:
            return self
        read = (other.read if self.read is None else self.read if other.read is None
                else _common(self.read, other.read))
        return Allow(write=_common(self.write, other.write), read=read,
                     connect=tuple(pair for pair in self.connect if pair in other.connect),
                     run=self.run and other.run)


def _paths(field: str, paths: Any) -> tuple[str, ...]:
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    try:
        items = list(paths)
    except TypeError:
        raise TypeError(f"Allow({field}=...) takes a list of paths, got {type(paths).__name__}") from None
    out = []
    for item in items:
        if not isinstance(item, (str, os.PathLike)):
            raise TypeError(f"Allow({field}=...) takes paths (str or pathlib.Path), got {item!r}")
        out.append(os.path.abspath(os.fspath(item)))
    return tuple(dict.fromkeys(out))


def _endpoints(pairs: Any) -> tuple[tuple[str, int], ...]:
    if isinstance(pairs, tuple) and len(pairs) == 2 and isinstance(pairs[0], str):
        pairs = [pairs]
    out = []
    for pair in pairs:
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and isinstance(pair[0], str)
                and type(pair[1]) is int and 0 < pair[1] < 65536):
            raise TypeError(f"Allow(connect=...) takes (host, port) pairs with a port from 1 to 65535, got {pair!r}")
        out.append((pair[0], pair[1]))
    return tuple(dict.fromkeys(out))


def _readable(listed: tuple[str, ...]) -> str:
    """What `read=` opens, said in full: the listed paths, then the interpreter's own (its
    installation and every absolute `sys.path` entry, which a PYTHONPATH can point anywhere)."""
    extra = [path for path in _interpreter_paths() if not any(_under(path, folder) for folder in listed)]
    extra = [path for path in extra if not any(other != path and _under(path, other) for other in extra)]
    own = f"what Python needs ({', '.join(extra)})" if extra else "what Python needs"
    return f"{', '.join(listed)} and {own}" if listed else own


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _common(first: Iterable[str], second: Iterable[str]) -> tuple[str, ...]:
    """The paths both lists reach: for each pair, the deeper one when one holds the other."""
    second = tuple(second)
    out = [a for a in first for b in second if _under(a, b)]
    out += [b for b in second for a in first if _under(b, a) and b not in out]
    return tuple(dict.fromkeys(out))


# ------------------------------------------------------------------------------------------------
# Probing what the kernel offers (each a real system call; a test may replace one to simulate an
# older kernel: the refusal that follows is the real one)
# ------------------------------------------------------------------------------------------------

_libc: Any = None


def _c() -> Any:
    global _libc
    if _libc is None:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        libc.prctl.restype = ctypes.c_int
        _libc = libc
    return _libc


_structures: Any = None


def _structs() -> Any:
    """The C structures (made once): seccomp's `sock_filter`/`sock_fprog`, Landlock's ruleset
    attribute and its two rule attributes (the path one packed: 12 bytes)."""
    global _structures
    if _structures is None:
        import ctypes
        from types import SimpleNamespace

        class Instruction(ctypes.Structure):
            _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                        ("k", ctypes.c_uint32)]

        class Program(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Instruction))]

        class RulesetAttr(ctypes.Structure):
            _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]

        class PathBeneath(ctypes.Structure):
            _pack_ = 1
            _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

        class NetPort(ctypes.Structure):
            _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]

        _structures = SimpleNamespace(Instruction=Instruction, Program=Program, RulesetAttr=RulesetAttr,
                                      PathBeneath=PathBeneath, NetPort=NetPort)
    return _structures


def landlock_abi() -> int:
    """The Landlock ABI version this kernel offers; 0 when it has none (not built in, disabled at
    boot, or hidden by a container's seccomp profile)."""
    if not sys.platform.startswith("linux"):
        return 0
    import ctypes

    abi = _c().syscall(ctypes.c_long(_CREATE_RULESET), None, ctypes.c_size_t(0), ctypes.c_uint32(_VERSION))
    return max(int(abi), 0)


def seccomp_available() -> bool:
    """Whether seccomp filters can be installed and can answer with an errno (SECCOMP_RET_ERRNO)."""
    arch = _ARCHES.get(os.uname().machine) if sys.platform.startswith("linux") else None
    if arch is None:
        return False
    import ctypes

    action = ctypes.c_uint32(_RET_ERRNO)
    return _c().syscall(ctypes.c_long(arch[1]), ctypes.c_uint(_SECCOMP_GET_ACTION_AVAIL), ctypes.c_uint(0),
                        ctypes.byref(action)) == 0


def missing() -> str | None:
    """What this system lacks for `allow=`, in one line; None when everything is there."""
    if not sys.platform.startswith("linux"):
        return f"allow= needs Linux (Landlock and seccomp); this is {sys.platform}: nothing was run"
    abi = landlock_abi()
    if abi == 0:
        return ("allow= needs Landlock, which this kernel does not offer (not built in, disabled at boot, "
                "or hidden by a container): nothing was run")
    if abi < NEEDED_ABI:
        return (f"allow= needs Landlock ABI {NEEDED_ABI} (Linux 6.12 or later); this kernel offers ABI {abi}: "
                "nothing was run")
    machine = os.uname().machine
    if machine not in _ARCHES:
        return f"allow= has no seccomp program for this architecture ({machine}): nothing was run"
    if not seccomp_available():
        return ("allow= needs seccomp filters (SECCOMP_RET_ERRNO), which this kernel does not offer: "
                "nothing was run")
    return None


# ------------------------------------------------------------------------------------------------
# Building (in the parent) and entering (in the child)
# ------------------------------------------------------------------------------------------------


def seccomp_program(refused: dict[int, int], machine: str | None = None,
                    families: tuple[int, ...] | None = None, *, arguments: bool = False) -> Any:
    """A BPF program (`sock_fprog`, with its instructions kept alive on it) that answers each
    syscall number in `refused` with that errno and lets every other through; with `families`,
    `socket()` of any other address family (or, for IPv4 and IPv6, of a protocol but TCP and UDP)
    is refused with EPERM; with `arguments`, sends with MSG_FASTOPEN, TCP_FASTOPEN_CONNECT and
    clone with a namespace flag are refused with EPERM too; a call made with another
    architecture's numbers (x32, i386) is refused with EPERM whatever it is."""
    import ctypes

    machine = machine or os.uname().machine
    audit_arch, _, _, _, x32 = _ARCHES[machine]

    def argument(index: int) -> tuple:  # seccomp_data.args[index], its low 32 bits (little-endian)
        return ("ld", 16 + 8 * index)

    # (operation, value, label jumped to when true); a label marks where it stands
    program: list[tuple] = [("ld", 4), ("jeq", audit_arch, "native"), ("ret", _RET_ERRNO | _EPERM),
                            ("label", "native"), ("ld", 0)]  # seccomp_data.arch, then .nr
    if x32:
        program.append(("jge", x32, "deny"))
    program += [("jeq", number, f"refuse {number}") for number in refused]
    if families is not None:
        program.append(("jeq", _SOCKET[machine], "socket"))
    if arguments:
        program += [("jeq", number, f"send {index}") for number, index in _SENDS[machine].items()]
        program += [("jeq", _SETSOCKOPT[machine], "setsockopt"), ("jeq", _CLONE[machine], "clone")]
    program.append(("ret", _RET_ALLOW))
    for number, errno_value in refused.items():
        program += [("label", f"refuse {number}"), ("ret", _RET_ERRNO | (errno_value & 0xFFFF))]
    if families is not None:
        program += [("label", "socket"), argument(0), *[("jeq", family, "inet") for family in _INET if family in families],
                    *[("jeq", family, "allow") for family in families if family not in _INET],
                    ("ret", _RET_ERRNO | _EPERM),
                    ("label", "inet"), argument(2), *[("jeq", protocol, "allow") for protocol in _PROTOCOLS],
                    ("ret", _RET_ERRNO | _EPERM)]
    if arguments:
        for index in sorted(set(_SENDS[machine].values())):
            program += [("label", f"send {index}"), argument(index), ("jset", _MSG_FASTOPEN, "deny"),
                        ("ret", _RET_ALLOW)]
        program += [("label", "setsockopt"), argument(1), ("jeq", _IPPROTO_TCP, "tcp option"), ("ret", _RET_ALLOW),
                    ("label", "tcp option"), argument(2), ("jeq", _TCP_FASTOPEN_CONNECT, "deny"), ("ret", _RET_ALLOW),
                    ("label", "clone"), argument(0), ("jset", _CLONE_NEW, "deny"), ("ret", _RET_ALLOW)]
    program += [("label", "allow"), ("ret", _RET_ALLOW), ("label", "deny"), ("ret", _RET_ERRNO | _EPERM)]
    at: dict[str, int] = {}  # label -> index of the instruction after it
    count = 0
    for item in program:
        if item[0] == "label":
            at[item[1]] = count
        else:
            count += 1
    opcodes = {"ld": 0x20, "jeq": 0x15, "jge": 0x35, "jset": 0x45, "ret": 0x06}  # LD|W|ABS, JMP|JEQ|K, JGE, JSET, RET|K
    code = []
    for item in program:
        if item[0] == "label":
            continue
        jump = at[item[2]] - len(code) - 1 if item[0] in ("jeq", "jge", "jset") else 0
        if not 0 <= jump < 256:  # a BPF jump offset is one byte
            raise ValueError(f"seccomp program too long for a jump of {jump}")
        code.append((opcodes[item[0]], jump, 0, item[1]))
    Instruction = _structs().Instruction
    instructions = (Instruction * len(code))(*[Instruction(*each) for each in code])
    built = _structs().Program(len(code), ctypes.cast(instructions, ctypes.POINTER(Instruction)))
    built._keep = instructions  # type: ignore[attr-defined]
    return built


def install_seccomp(program: Any) -> None:
    """`prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, program)` for this thread and what it starts
    (no-new-privileges must be set first). Raises OSError."""
    import ctypes

    libc = _c()
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0),
                  ctypes.c_ulong(0)) != 0 or libc.prctl(
            _PR_SET_SECCOMP, ctypes.c_ulong(_SECCOMP_MODE_FILTER), ctypes.byref(program),
            ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"seccomp: {os.strerror(number)}")


class Confinement:
    """One confined run: made in the parent (`Confinement(allow)`: the folder, the ruleset, the
    program), entered in the child (`enter`), closed in the parent after the run (`close`)."""

    def __init__(self, allow: Allow) -> None:
        import ctypes
        import tempfile

        problem = missing()
        if problem is not None:
            raise ConfinementUnavailable(problem)
        self.allow = allow
        self.ruleset = -1
        self.folder = tempfile.mkdtemp(prefix="nbtools-run-")
        try:
            self.ruleset = self._ruleset(allow)
        except BaseException:
            self.close()
            raise
        machine = os.uname().machine
        refused = dict.fromkeys((*_METADATA[machine], *_GROUP[machine], *_NAMESPACES[machine], *_IO_URING), _EPERM)
        refused[_CLONE3] = _ENOSYS
        if not allow.run:
            refused.update({_ARCHES[machine][2]: _EPERM, _ARCHES[machine][3]: _EPERM})
        self.program = seccomp_program(refused, machine, _FAMILIES, arguments=True)
        self._restrict = (_c().syscall, ctypes.c_long(_RESTRICT_SELF), ctypes.c_int(self.ruleset), ctypes.c_uint32(0))

    def _ruleset(self, allow: Allow) -> int:
        import ctypes

        handled = _FS_ALL if allow.read is not None else _FS_ALL & ~_READING
        attr = _structs().RulesetAttr(handled, _BIND_TCP | _CONNECT_TCP, _SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL)
        libc = _c()
        fd = libc.syscall(ctypes.c_long(_CREATE_RULESET), ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)),
                          ctypes.c_uint32(0))
        if fd < 0:
            number = ctypes.get_errno()
            raise ConfinementUnavailable(f"allow=: landlock_create_ruleset failed ({os.strerror(number)}): "
                                         "nothing was run")
        try:
            for path in (self.folder, *allow.write):
                self._path_rule(fd, path, handled, required=True)
            for device in ("/dev/null", "/dev/zero", "/dev/full"):  # what `subprocess.DEVNULL` and the like open
                self._path_rule(fd, device, handled & (_FILE_RIGHTS & ~_EXECUTE), required=False)
            if allow.read is not None:
                for path in (*allow.read, *_interpreter_paths(), "/dev/urandom", "/dev/random"):
                    self._path_rule(fd, path, handled & _READING, required=path in allow.read)
            for _, port in allow.connect:
                self._port_rule(fd, port)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _path_rule(self, ruleset: int, path: str, access: int, *, required: bool) -> None:
        import ctypes

        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError as error:
            if not required:
                return
            raise ValueError(f"Allow: cannot use {path!r} ({error.strerror}); give an existing path") from None
        try:
            if not os.path.isdir(path):
                access &= _FILE_RIGHTS
            rule = _structs().PathBeneath(access, fd)
            if _c().syscall(ctypes.c_long(_ADD_RULE), ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                            ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
                number = ctypes.get_errno()
                raise ValueError(f"Allow: Landlock refused a rule for {path!r} ({os.strerror(number)})")
        finally:
            os.close(fd)

    def _port_rule(self, ruleset: int, port: int) -> None:
        import ctypes

        rule = _structs().NetPort(_CONNECT_TCP, port)
        if _c().syscall(ctypes.c_long(_ADD_RULE), ctypes.c_int(ruleset), ctypes.c_int(_RULE_NET_PORT),
                        ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
            number = ctypes.get_errno()
            raise ValueError(f"Allow: Landlock refused a rule for port {port} ({os.strerror(number)})")

    def enter(self, keep_fd: int) -> None:
        """In the child, before any of the code runs: restrict this process for good, then close
        every inherited descriptor but 0-2 and `keep_fd`. Raises OSError if the kernel refuses
        (the child must then not run the code)."""
        import ctypes

        libc = _c()
        os.setpgid(0, 0)  # a process group of its own: what the code leaves running is killed with it
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0),
                      ctypes.c_ulong(0)) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        call, *arguments = self._restrict
        if call(*arguments) != 0:
            number = ctypes.get_errno()
            raise OSError(number, f"landlock_restrict_self: {os.strerror(number)}")
        install_seccomp(self.program)
        _drop_capabilities(libc)
        _close_range(libc, 3, keep_fd - 1)
        _close_range(libc, keep_fd + 1, 0xFFFFFFFF)
        folder = self.folder
        os.chdir(folder)
        os.environ["TMPDIR"] = os.environ["NBTOOLS_WORKDIR"] = folder
        import tempfile

        tempfile.tempdir = folder

    def close(self) -> None:
        """In the parent after the run: close the ruleset; remove the folder if nothing was left in it."""
        if self.ruleset >= 0:
            os.close(self.ruleset)
            self.ruleset = -1
        try:
            os.rmdir(self.folder)
        except OSError:
            pass  # the code left files there: they stay


def _drop_capabilities(libc: Any) -> None:
    """Leave this process no capability (a kernel running as root, common in containers, would
    hand the code raw sockets, kernel modules, mounts...): the bounding set emptied (where the
    process may: CAP_SETPCAP), the ambient set cleared, then effective, permitted and inheritable
    set to none (`capset`). With no-new-privileges set, no program it runs regains any."""
    import ctypes

    for capability in range(64):
        if libc.prctl(_PR_CAPBSET_DROP, ctypes.c_ulong(capability), ctypes.c_ulong(0), ctypes.c_ulong(0),
                      ctypes.c_ulong(0)) != 0 and ctypes.get_errno() == errno.EINVAL:
            break  # past the last capability this kernel knows
    libc.prctl(_PR_CAP_AMBIENT, ctypes.c_ulong(_PR_CAP_AMBIENT_CLEAR_ALL), ctypes.c_ulong(0), ctypes.c_ulong(0),
               ctypes.c_ulong(0))
    header = (ctypes.c_uint32 * 2)(_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # two {effective, permitted, inheritable}, all zero
    if libc.capset(header, data) != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"capset: {os.strerror(number)}")


def _close_range(libc: Any, first: int, last: int) -> None:
    """Close descriptors `first`..`last`: one `close_range` (Linux 5.9; syscall 436 on every
    architecture), where `os.closerange` may close every number up to the limit one by one."""
    import ctypes

    if first > last:
        return
    if libc.syscall(ctypes.c_long(_CLOSE_RANGE), ctypes.c_uint(first), ctypes.c_uint(last), ctypes.c_uint(0)) != 0:
        import resource

        os.closerange(first, min(last + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0]))


def _interpreter_paths() -> list[str]:
    """What Python needs to read to go on importing when `read=` lists paths."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    paths.update(entry for entry in sys.path if entry and os.path.isabs(entry))
    return sorted(path for path in paths if os.path.exists(path))


__all__ = ["Allow", "Confinement", "ConfinementUnavailable", "landlock_abi", "seccomp_available", "missing",
           "seccomp_program", "install_seccomp", "NEEDED_ABI"]
