"""No test depends on where the checkout lives: README's test command runs from a clone in a folder
named `nbtools`, the most natural name, as well as from any other.

A test once asserted that the word "nbtools" was absent from a traceback that contained the test
file's own path, so it failed in exactly that clone and passed in CI only because of where CI clones.
This runs the tests that look at paths in tracebacks and outputs from such a clone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Tests that inspect file paths in tracebacks or outputs (where a checkout path could leak in).
PATH_SENSITIVE = [
    "tests/test_call.py",
    "tests/test_interp.py::test_error_is_a_short_traceback_with_the_codes_lines",
    "tests/test_cli.py::test_bad_targets_say_what_is_wrong",
    "tests/test_cli.py::test_a_missing_attribute_of_a_file_names_the_file_not_an_internal_module",
]


def test_path_sensitive_tests_pass_from_a_clone_in_a_folder_named_nbtools(tmp_path):
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout (this is not one): nothing to clone")
    clone = tmp_path / "nbtools"
    # The committed tree, as a newcomer gets it (uncommitted edits are not part of a clone).
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=120)
    environment = {**os.environ, "PYTHONPATH": str(clone)}  # the clone's nbtools, not this checkout's
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", *PATH_SENSITIVE],
                            cwd=clone, env=environment, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "error" not in result.stdout.splitlines()[-1]
    # and it really ran the clone's code
    probe = subprocess.run([sys.executable, "-c", "import nbtools; print(nbtools.__file__)"], cwd=clone,
                           env=environment, capture_output=True, text=True, timeout=60)
    assert probe.stdout.strip().startswith(str(clone))
