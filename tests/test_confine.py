"""The capability policy as a record and as part of the approval (DESIGN.md "What model code may
touch"): `Allow` itself, `registry.python_allow` (a default the model cannot widen, shown to whoever
approves and kept in `registry.decisions`), and the confined runs it gives, on this real kernel.
The attacks on the boundary itself are in test_confine_attacks.py."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import os
import sys
from pathlib import Path

import pytest

import nbtools
from nbtools import Allow, Decision, Registry, ToolCallError, python, python_async
from nbtools.interp import confine

# Skipped where the kernel lacks what `allow=` needs, unless NBTOOLS_REQUIRE_CONFINEMENT=1 (set by
# .ci/run): then they run and fail with ConfinementUnavailable naming what is missing.
needs_confinement = pytest.mark.skipif(
    confine.missing() is not None and os.environ.get("NBTOOLS_REQUIRE_CONFINEMENT") != "1",
    reason=f"{confine.missing()}")


def refused(answer: str) -> str:
    """A confined run's answer without its last line, which must say the run is confined."""
    *before, last = answer.splitlines()
    assert last.startswith("[this run is confined (allow=): "), answer
    return "\n".join(before)


# ----------------------------------------------------------------------------------------------
# The record
# ----------------------------------------------------------------------------------------------


def test_allow_is_a_frozen_record_with_the_documented_defaults(tmp_path):
    allow = Allow()
    assert (allow.write, allow.read, allow.connect, allow.run) == ((), None, (), False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        allow.run = True  # type: ignore[misc]
    assert nbtools.Allow is Allow and "Allow" in nbtools.__all__
    given = Allow(write=[tmp_path, "relative"], read=[str(tmp_path)], connect=[("localhost", 8080)], run=True)
    assert given.write == (str(tmp_path), os.path.abspath("relative"))
    assert given.read == (str(tmp_path),) and given.connect == (("localhost", 8080),)
    assert hash(given) == hash(Allow(write=[str(tmp_path), "relative"], read=[tmp_path],
                                     connect=[("localhost", 8080)], run=True))
    assert str(Allow()) == "write only a fresh temporary folder; read anything; connect nowhere; run no program"
    assert copy.deepcopy(given) == given and copy.copy(given) == given


def test_the_text_of_a_read_policy_names_every_path_it_opens(tmp_path, monkeypatch):
    """`read=` also opens the interpreter's paths and every absolute sys.path entry: a PYTHONPATH
    holding the home folder opens all of it, so the approval text names them."""
    monkeypatch.syspath_prepend(str(tmp_path))
    text = str(Allow(read=["/srv/data"]))
    assert "read only /srv/data and what Python needs (" in text, text
    for path in (str(tmp_path), sys.base_prefix):
        assert path in text or any(path.startswith(shown) for shown in text.split("(", 1)[1].split(")")[0].split(", ")), (path, text)


@pytest.mark.parametrize("arguments, problem", [
    ({"write": 3}, "Allow(write=...) takes a list of paths, got int"),
    ({"read": [None]}, "Allow(read=...) takes paths (str or pathlib.Path), got None"),
    ({"connect": [("host", 0)]}, "port from 1 to 65535"),
    ({"connect": [8080]}, "(host, port) pairs"),
    ({"run": "yes"}, "Allow(run=...) takes True or False"),
])
def test_allow_refuses_what_it_cannot_mean(arguments, problem):
    with pytest.raises(TypeError, match=problem.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        Allow(**arguments)


def test_narrowed_keeps_only_what_both_allow():
    wide = Allow(write=["/srv/data", "/srv/logs"], connect=[("db", 5432), ("api", 443)], run=True)
    narrow = Allow(write=["/srv/data/today", "/home"], read=["/srv"], connect=[("api", 443)])
    both = wide.narrowed(narrow)
    assert both == narrow.narrowed(wide)
    assert both.write == ("/srv/data/today",) and both.read == ("/srv",)
    assert both.connect == (("api", 443),) and both.run is False
    assert wide.narrowed(None) is wide


def test_python_tools_do_not_offer_allow_to_the_model():
    for fn in (python, python_async):
        properties = nbtools.get_schema(fn)["parameters"]["properties"]
        assert set(properties) == {"code", "timeout"}, properties
        description = nbtools.Tool.from_function(fn).description
        assert "Landlock" not in description and "Allow" not in description, description  # the caller's docs


# ----------------------------------------------------------------------------------------------
# Running confined (the pytest process forks; the attacks are in test_confine_attacks.py)
# ----------------------------------------------------------------------------------------------


@needs_confinement
def test_allow_implies_an_isolated_run_and_an_empty_folder_is_removed():
    namespace = {"x": 1}
    folder = python("import os\nx = 2\nos.getcwd()", namespace, timeout=20, allow=Allow())
    assert namespace["x"] == 1  # the child's assignment stayed there
    assert Path(folder).name.startswith("nbtools-run-") and not Path(folder).exists()


@needs_confinement
def test_bad_policies_come_back_as_one_line_and_run_nothing(tmp_path):
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'w')"
    assert python(code, {}, allow="everything") == "Error: allow must be an nbtools.Allow, got str"  # type: ignore[arg-type]
    missing = tmp_path / "missing"
    assert python(code, {}, allow=Allow(write=[missing])) == (
        f"Error: Allow: cannot use {str(missing)!r} (No such file or directory); give an existing path")
    assert asyncio.run(python_async(code, {}, allow=Allow(write=[missing]))).startswith("Error: Allow: cannot use")
    assert not marker.exists()


@needs_confinement
def test_a_refusal_tells_the_model_what_the_run_may_do(tmp_path):
    # the model got a bare "PermissionError: [Errno 13] Permission denied: ..." (or "[Errno 1]
    # Operation not permitted: 'ls'") and no word that a policy refused it, nor where it may write
    # (the python tool's description says nothing of a registry's python_allow)
    outside = tmp_path / "out.txt"
    answer = python(f"open({str(outside)!r}, 'w')", {}, timeout=20, allow=Allow())
    lines = answer.splitlines()
    assert lines[-2].startswith("PermissionError: [Errno 13] Permission denied"), answer
    assert lines[-1].startswith("[this run is confined (allow=): write only a fresh temporary folder; read anything; "
                                "connect nowhere; run no program. The fresh folder is the working directory: /"), answer
    assert not outside.exists()
    answer = python("import subprocess\nsubprocess.run(['ls'])", {}, timeout=20, allow=Allow(write=[tmp_path]))
    assert "PermissionError: [Errno 1] Operation not permitted: 'ls'" in answer
    assert answer.splitlines()[-1].startswith(f"[this run is confined (allow=): write only a fresh temporary folder and "
                                              f"{tmp_path}; read anything; connect nowhere; run no program.")
    answer = asyncio.run(python_async("import socket\nsocket.create_connection(('127.0.0.1', 9))", {}, allow=Allow()))
    assert answer.splitlines()[-1].startswith("[this run is confined (allow=): "), answer
    # other failures, and the same refusal outside a confined run, carry no such line
    assert "confined" not in python("1 / 0", {}, timeout=20, allow=Allow())
    assert "confined" not in python("raise PermissionError(13, 'Permission denied')", {}, timeout=20, isolated=True)


# ----------------------------------------------------------------------------------------------
# registry.python_allow: part of the approval
# ----------------------------------------------------------------------------------------------


def _registry(tmp_path, approve=None):
    registry = Registry(approve=approve)
    registry.add(python)
    registry.add(python_async)
    return registry


def test_python_allow_takes_an_allow_or_none():
    registry = Registry()
    with pytest.raises(TypeError, match="python_allow takes an nbtools.Allow or None, got dict"):
        registry.python_allow = {"run": True}
    registry.python_allow = Allow(run=True)
    registry.python_allow = None
    assert registry.python_allow is None


@needs_confinement
def test_the_registry_confines_every_python_call_and_the_approval_shows_and_records_it(tmp_path):
    seen = []

    def approve(tool, args):
        seen.append(dict(args))
        return True

    registry = _registry(tmp_path, approve)
    registry.python_allow = Allow()
    target = tmp_path / "out.txt"
    code = f"open({str(target)!r}, 'w')"
    for name in ("python", "python_async"):
        answer = registry.call(name, {"code": code, "timeout": 20})
        assert refused(answer).endswith(f"PermissionError: [Errno 13] Permission denied: '{target}'"), answer
    assert not target.exists()
    assert [shown["allow"] for shown in seen] == [Allow(), Allow()]
    assert [record.arguments["allow"] for record in registry.decisions] == [Allow(), Allow()]
    # another registry given the tool keeps its policy
    assert refused(Registry([registry["python"]]).call("python", {"code": code, "timeout": 20})).endswith(
        f"PermissionError: [Errno 13] Permission denied: '{target}'")
    # a view reads its registry's policy live, set after the view was made
    view = registry.select(allow="python")
    registry.python_allow = Allow(write=[tmp_path])
    assert view.call("python", {"code": code + ".write('x')", "timeout": 20}) == 1
    assert target.read_text() == "x"


@needs_confinement
def test_a_model_cannot_widen_the_policy(tmp_path):
    registry = _registry(tmp_path)
    registry.python_allow = Allow()
    with pytest.raises(ToolCallError, match="allow"):
        registry.call("python", {"code": "1", "allow": {"run": True, "write": ["/"]}})
    # the caller's own narrower allow is kept narrower; never wider than the registry's
    registry.python_allow = Allow(run=True)
    tool = registry.get("python")
    assert tool.fn(code="import subprocess\nsubprocess.run(['true']).returncode", glb={}, timeout=20,
                   allow=Allow(run=True)) == 0
    answer = registry.call("python", {"code": "import subprocess\nsubprocess.run(['true']).returncode",
                                      "timeout": 20})
    assert answer == 0  # run=True given by the registry
    registry.python_allow = Allow()
    answer = registry.call("python", {"code": "import subprocess\nsubprocess.run(['true'])", "timeout": 20})
    assert refused(answer).endswith("PermissionError: [Errno 1] Operation not permitted: 'true'"), answer


@needs_confinement
def test_an_edited_call_stays_confined(tmp_path):
    target = tmp_path / "edited.txt"

    def approve(tool, args):
        return Decision(True, args={"code": f"open({str(target)!r}, 'w')", "timeout": 20})

    registry = _registry(tmp_path, approve)
    registry.python_allow = Allow()
    answer = registry.call("python", {"code": "1"})
    assert refused(answer).endswith("PermissionError: [Errno 13] Permission denied: " + repr(str(target))), answer
    record = registry.decisions[-1]
    assert record.edited and record.arguments["allow"] == Allow()
    # a callback cannot hand the model's code a policy either
    registry.approve = lambda tool, args: Decision(True, args={"code": "1", "allow": {"run": True}})
    with pytest.raises(ToolCallError, match="edited by the user are invalid"):
        registry.call("python", {"code": "1"})


def test_without_a_policy_the_approval_shows_no_allow(tmp_path):
    seen = []
    registry = _registry(tmp_path, lambda tool, args: seen.append(dict(args)) or True)
    assert registry.call("python", {"code": "6 * 7"}) == 42
    assert seen == [{"code": "6 * 7", "timeout": 3600}]


@needs_confinement
async def test_the_prompt_shows_the_policy_and_an_edit_keeps_it(tmp_path, monkeypatch):
    import comm
    from comm.base_comm import BaseComm

    import nbtools.approval as approval_module
    from nbtools.approval import ApprovalPrompt

    class QuietComm(BaseComm):  # the browser's side is played below, by the widgets' own handlers
        def publish_msg(self, *args, **kwargs):
            pass

    monkeypatch.setattr(comm, "create_comm", QuietComm)
    monkeypatch.setattr(approval_module, "_in_kernel", lambda: True)
    prompt = ApprovalPrompt()
    registry = _registry(tmp_path, prompt)
    registry.python_allow = Allow(connect=[("127.0.0.1", 8000)])
    target = tmp_path / "edited.txt"
    call = asyncio.create_task(registry.acall("python", {"code": "1", "timeout": 20}))
    while prompt.widget is None:
        await asyncio.sleep(0.01)
    question = prompt.widget.children[0].value
    assert ("write only a fresh temporary folder; read anything; connect to 127.0.0.1:8000 (TCP ports); "
            "run no program") in question
    assert "allow" not in prompt.editor.value  # the person edits what the model sent, not the policy
    edited = '{"code": "open(%r, \\"w\\")", "timeout": 20}' % str(target)
    prompt.editor.value = edited
    prompt.edit_button.click()
    prompt.approve_button.click()
    answer = await call
    assert refused(answer).endswith(f"PermissionError: [Errno 13] Permission denied: '{target}'"), answer
    assert registry.decisions[-1].arguments["allow"] == Allow(connect=[("127.0.0.1", 8000)])
    assert registry.decisions[-1].edited and registry.decisions[-1].by == "person"
