"""The model-facing tools `python(code, timeout)` and `python_async`.

Apart from the machinery on purpose: making them tools needs only their signatures and docstrings,
so `from nbtools import python` imports none of the interpreter; `execute.py` (and through it
capture, timeouts, process, ...) is imported at the first call, before the run installs the
process-wide patches (`process.py`) as it always did.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:  # `confine.py` is imported at the first run given a policy
    from .confine import Allow

_execute: ModuleType | None = None  # `execute.py` once the first call imported it


def _import_execute() -> ModuleType:
    # kept here after the first call: an import statement in every call cost ~10 % of a short run
    global _execute
    from . import execute

    _execute = execute
    return execute


# `python` and `python_async` have no return annotation on purpose: the tool description would
# gain a useless "Returns: Any"; the docstring says what comes back.


def python(
    code: str,  # Python source code to run
    glb: dict | None = None,
    loc: Mapping | None = None,
    timeout: float = 3600,  # seconds before the run is stopped (fractions allowed)
    *,
    isolated: bool = False,
    allow: Allow | None = None,
):
    """Run Python code in the current session and return its result.

    Variables, imports and functions persist from one call to the next, unless runs are confined
    (then each starts from a copy of them and keeps nothing; a refused action says so). Returns the
    value of the last expression (end the code with `;` to return nothing); if the code printed
    anything, the printed text followed by that value's repr on a final line. Errors come back as a
    short traceback; code still running after `timeout` seconds is stopped and reported as a time-out.

    Args:
        allow: a capability policy, `nbtools.Allow(write=[...], read=None, connect=[(host, port)],
            run=False)`: the code runs in a forked child (as with `isolated=True`) that the Linux
            kernel restricts with Landlock and seccomp. By default it may write only into a fresh
            temporary folder (its working directory, also `$TMPDIR` and `$NBTOOLS_WORKDIR`), connect
            nowhere and run no program; anything else fails at the system call with the ordinary
            PermissionError, whatever route the code takes (a shell and ctypes included). Where
            Landlock (ABI 6) or seccomp is missing, nothing runs and the answer says what is missing.
            Not promised: a run without `allow=` is not contained; reads are allowed unless `read=`
            lists paths; the environment and the namespace's variables are copied into the child;
            UDP and host names (TCP ports only) are not filtered; permissions,
            owners and extended attributes cannot be changed, in the fresh folder either; Linux only.
    """
    return (_execute or _import_execute()).run_for_model(code, glb, loc, timeout, isolated,
                                                          sys._getframe(1) if glb is None else None, allow)


async def python_async(
    code: str,  # Python source code to run; top-level `await` is allowed
    glb: dict | None = None,
    loc: Mapping | None = None,
    timeout: float = 3600,  # seconds before the run is stopped (fractions allowed)
    *,
    allow: Allow | None = None,
):
    """Run Python code in the current session (top-level `await` allowed) and return its result.

    Variables, imports and functions persist from one call to the next, unless runs are confined
    (then each starts from a copy of them and keeps nothing; a refused action says so). Returns the
    value of the last expression (end the code with `;` to return nothing); if the code printed
    anything, the printed text followed by that value's repr on a final line. Errors come back as a
    short traceback; code still running after `timeout` seconds is stopped and reported as a time-out.

    Args:
        allow: a capability policy (`nbtools.Allow`), as for `python()`: the code runs in a
            restricted forked child, the event loop stays free meanwhile.
    """
    return await (_execute or _import_execute()).run_for_model_async(
        code, glb, loc, timeout, sys._getframe(1) if glb is None else None, allow)


# Namespaces, process isolation and the capability policy are the caller's business, not the
# model's: a registry gives its `python_allow` (a model cannot send one), and the person approving
# a run sees it (`__tool_shown__`: left out of the schema, shown with the arguments when passed).
python.__tool_exclude__ = ("glb", "loc", "isolated", "allow")  # type: ignore[attr-defined]
python_async.__tool_exclude__ = ("glb", "loc", "allow")  # type: ignore[attr-defined]
python.__tool_shown__ = python_async.__tool_shown__ = ("allow",)  # type: ignore[attr-defined]
# A model allowed to run code can do whatever the notebook can (change a registry's policy, answer
# its own approvals, read a server's token): offered as a tool, it is destructive and open-world,
# so an approving registry asks before every run.
python.__tool_hints__ = python_async.__tool_hints__ = ("destructive", "open-world")  # type: ignore[attr-defined]
