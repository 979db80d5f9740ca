"""An approval callback's answers and the registry's record of them: a destructive tool asks its
callback (or is refused outright), sync or async, with options per call; the answer is True or False
(plain or as a Decision, numpy's too) and anything else is a denial; a Decision edits the arguments,
gives a reason, remembers; `registry.decisions`, the log, stays bounded, reads as a list, keeps the
arguments as they ran and shares nothing mutable with the caller or the callback (snapshots).
Which paths ask, copies of tools and the callback's lifetime are in test_approvals.py.
"""

from __future__ import annotations

import asyncio
import copy as copy_module
from typing import Any

import pytest
from test_approvals import Asker, make
from test_call import add

from nbtools import Decision, Registry, ToolCallError
from nbtools.call import call_func, call_func_async
from nbtools.policy import asking_as


# -- approval of destructive tools --------------------------------------------------------------------

class Recorder:
    def __init__(self):
        self.calls: list[Any] = []

    def delete(self, path: str) -> str:
        self.calls.append(path)
        return f"deleted {path}"


def destructive_registry(**settings) -> tuple[Registry, Recorder]:
    recorder = Recorder()
    reg = Registry(**settings)
    reg.add(recorder.delete, hints="destructive")
    reg.add(add)
    return reg, recorder


def test_refuse_destructive():
    reg, recorder = destructive_registry(refuse_destructive=True)
    with pytest.raises(ToolCallError, match="refused: this tool is marked destructive"):
        reg.call("delete", {"path": "x"})
    assert reg.call("add", {"a": 1}) == 2
    assert recorder.calls == []


def test_approval_callback_sees_the_tool_and_arguments():
    asked = []

    def approve(tool, args):
        asked.append((tool.name, args))
        return args["path"] != "/"

    reg, recorder = destructive_registry(approve=approve)
    assert reg.call("delete", '{"path": "tmp"}') == "deleted tmp"
    with pytest.raises(ToolCallError, match="refused: the user denied this call"):
        reg.call("delete", {"path": "/"})
    assert reg.call("add", {"a": 1}) == 2  # only destructive tools are asked about
    assert asked == [("delete", {"path": "tmp"}), ("delete", {"path": "/"})]
    assert recorder.calls == ["tmp"]
    # invalid arguments are refused before anyone is asked
    with pytest.raises(ToolCallError, match="expected a string"):
        reg.call("delete", {"path": 1})
    assert len(asked) == 2


def test_call_options_override_the_registry():
    reg, recorder = destructive_registry()
    assert reg.call("delete", {"path": "a"}) == "deleted a"
    assert "denied" in reg.call("delete", {"path": "b"}, approve=lambda tool, args: False, raise_on_err=False)
    with pytest.raises(TypeError, match="unknown call option"):
        reg.call("add", {"a": 1}, aprove=None)
    assert recorder.calls == ["a"]


def test_approval_callback_failure_is_a_refusal():
    def broken(tool, args):
        raise RuntimeError("no display")

    reg, recorder = destructive_registry(approve=broken)
    with pytest.raises(ToolCallError, match=r"refused: the approval check failed \(RuntimeError: no display\)"):
        reg.call("delete", {"path": "x"})
    assert recorder.calls == []


async def test_async_approval_in_async_and_sync_calls():
    async def approve(tool, args):
        await asyncio.sleep(0)
        return args["path"].startswith("tmp")

    reg, recorder = destructive_registry(approve=approve)
    assert await reg.acall("delete", {"path": "tmp1"}) == "deleted tmp1"
    assert "denied" in await reg.acall("delete", {"path": "home"}, raise_on_err=False)
    assert reg.call("delete", {"path": "tmp2"}) == "deleted tmp2"  # a loop runs here: worker thread
    assert recorder.calls == ["tmp1", "tmp2"]


def test_async_approval_in_sync_call_without_loop():
    async def deny(tool, args):
        return False

    reg, recorder = destructive_registry(approve=deny)
    assert "the user denied this call" in reg.call("delete", {"path": "x"}, raise_on_err=False)
    assert recorder.calls == []


# -- an answer is True or False, anything else a denial -----------------------------------------------

@pytest.mark.parametrize("answer", ["no", "False", {"approved": False}, [False], 0.5, object()])
def test_an_approval_answer_that_is_not_a_boolean_is_a_denial(answer):
    reg, recorder = destructive_registry(approve=lambda tool, args: answer)
    with pytest.raises(ToolCallError, match="instead of True or False, which counts as a denial"):
        reg.call("delete", {"path": "x"})
    assert recorder.calls == []


@pytest.mark.parametrize(("answer", "runs"), [(True, True), (1, True), (False, False), (0, False), (None, False)])
def test_boolean_approval_answers(answer, runs):
    _check_boolean_answer(answer, runs)


def test_one_rule_for_a_yes_plain_or_in_a_decision():
    # one rule (policy.yes_or_no): True/1 allow, False/0 refuse, plain or as Decision(allow=...); numpy's
    # booleans and integers alike; any other value is refused, never taken for a truthy yes
    import numpy

    from nbtools import Decision

    yes, no = (True, 1, numpy.True_, numpy.int64(1)), (False, 0, numpy.False_, numpy.int8(0))
    for answer in yes + no:
        runs = any(answer is each for each in yes)
        _check_boolean_answer(answer, runs)
        decision = Decision(answer)
        assert decision.allow is runs and decision == Decision(runs)
        _check_boolean_answer(decision, runs)
    for wrong in ("yes", 2, -1, None, 1.0, [True]):
        with pytest.raises(TypeError, match=r"Decision\(allow=...\) takes True or False \(or 1 or 0\), got"):
            Decision(wrong)
    for wrong in (2, -1, numpy.int64(7), 1.0):  # truthy, but not a yes
        reg, recorder = destructive_registry(approve=lambda tool, args: wrong)
        with pytest.raises(ToolCallError, match="instead of True or False, which counts as a denial"):
            reg.call("delete", {"path": "x"})
        assert recorder.calls == []


def _check_boolean_answer(answer, runs):
    reg, recorder = destructive_registry(approve=lambda tool, args: answer)
    text = reg.call("delete", {"path": "x"}, raise_on_err=False)
    assert (recorder.calls == ["x"]) is runs
    assert runs or "the user denied this call" in text


# -- a Decision: edits, reasons, origin, remembering --------------------------------------------------

def test_decisions_edits_reasons_and_origin():
    seen = []

    def approve(tool, args, *, origin):
        seen.append(origin)
        if args["folder"] == "/etc":
            return Decision(False, reason="not system folders")
        return Decision(True, args={"folder": args["folder"] + "/tmp"})

    reg, ran = make(approve=approve)
    assert reg.call("wipe", {"folder": "/data"}) == "wiped /data/tmp"
    with asking_as("chat:test-model"):
        text = reg.call("wipe", {"folder": "/etc"}, raise_on_err=False)
    assert "the user denied this call; their reason: not system folders" in text
    assert seen == ["call", "chat:test-model"] and ran == ["/data/tmp"]
    first, second = reg.decisions
    assert (first.verdict, first.by, first.edited, first.arguments) == \
        ("approved", "callback", True, {"folder": "/data/tmp", "force": False})
    assert (second.verdict, second.origin, second.reason) == ("denied", "chat:test-model", "not system folders")
    assert reg.select().decisions is reg.decisions  # a view shares the log


def test_an_invalid_edit_is_refused_naming_the_argument():
    reg, ran = make(approve=lambda tool, args: Decision(True, args={"folder": 5}))
    with pytest.raises(ToolCallError, match="the arguments as edited by the user are invalid \\(argument 'folder'\\)"):
        reg.call("wipe")
    assert ran == [] and reg.decisions[-1].verdict == "invalid edit"


async def test_async_callbacks_may_answer_with_a_decision_and_remember():
    async def approve(tool, args):
        await asyncio.sleep(0)
        return Decision(True, remember="tool")

    reg, ran = make(approve=approve)
    assert await reg.acall("wipe") == "wiped /data"
    reg.approve = Asker(False)  # remembered: not asked
    assert reg.call("wipe") == "wiped /data"
    assert [d.by for d in reg.decisions] == ["callback", "remembered"]
    assert reg.forget("wipe") == ["wipe"]
    with pytest.raises(ToolCallError, match="denied"):
        reg.call("wipe")


# -- the decisions log --------------------------------------------------------------------------------

def test_the_audit_log_stays_bounded(monkeypatch):
    from nbtools.policy import Decisions

    monkeypatch.setattr(Decisions, "MAX", 20)
    reg, ran = make(approve=Asker(True))
    for index in range(25):
        reg.call("wipe", {"folder": str(index)})
    assert 10 < len(reg.decisions) <= 20 and reg.decisions[-1].arguments["folder"] == "24"


def test_the_audit_log_reads_as_the_list_it_was():
    """`registry.decisions` keeps its fields flat and makes each record when read: it indexes,
    slices, iterates, compares and clears like a list of DecisionRecords, the arguments as run
    with their defaults filled, whichever path recorded them."""
    reg, ran = make(approve=Asker(True))
    assert len(reg.decisions) == 0 and not reg.decisions and reg.decisions == [] and repr(reg.decisions) == \
        "Decisions(none yet)"
    reg.call("wipe", {"folder": "a"})  # the one-step path (a plain yes)
    reg.call("wipe", '{"folder": "b", "force": true}')
    call_func("wipe", {"folder": "c"}, ns=reg.select())  # the layered path (a view)
    reg.approve = lambda tool, args: Decision(True, args={"folder": "d"})
    reg.call("wipe", {"folder": "x"})  # an edit
    expected = [("a", False, False), ("b", True, False), ("c", False, False), ("d", False, True)]
    assert [(d.arguments["folder"], d.arguments["force"], d.edited) for d in reg.decisions] == expected
    assert ran == ["a", "b", "c", "d"] and len(reg.decisions) == 4
    assert reg.decisions[0].arguments == {"folder": "a", "force": False} and reg.decisions[-1].arguments == \
        {"folder": "d", "force": False}
    assert reg.decisions[1:3] == list(reg.decisions)[1:3] and [d.tool for d in reg.decisions[::-1]] == ["wipe"] * 4
    assert [d.arguments["folder"] for d in reversed(reg.decisions)] == ["d", "c", "b", "a"]
    assert reg.decisions == list(reg.decisions) and reg.decisions[-4] == reg.decisions[0]
    for wrong in (4, -5):
        with pytest.raises(IndexError):
            reg.decisions[wrong]
    first = reg.decisions[0]
    first.arguments["folder"] = "changed"  # a record read is the reader's: the log stays as it was
    assert reg.decisions[0].arguments["folder"] == "a"
    assert reg.decisions.count(reg.decisions[2]) == 1 and reg.decisions.index(reg.decisions[2]) == 2
    assert repr(reg.decisions).startswith("Decisions:\n  ") and repr(reg.decisions).count("wipe approved") == 4
    reg.decisions.clear()
    assert list(reg.decisions) == [] and list(reg.select().decisions) == []


def test_the_log_keeps_the_arguments_that_ran_not_the_callers_dict():
    """The log keeps the call's own converted arguments: the dict a caller passed, changed after
    the call, does not change what the log says ran."""
    for how in ("registry", "async"):
        reg, ran = make(approve=Asker(True))
        given = {"folder": "a"}
        if how == "registry":
            call_func("wipe", given, ns=reg)
        else:
            asyncio.run(call_func_async("wipe", given, ns=reg))
        given["folder"] = "b"
        given["force"] = True
        assert ran == ["a"] and [d.arguments for d in reg.decisions] == [{"folder": "a", "force": False}], how


def test_a_copy_of_the_audit_log_is_its_own():
    """`copy.copy`/`copy.deepcopy` of `registry.decisions` (a list before) hold the same records
    and record apart from the registry's log."""
    reg, ran = make(approve=Asker(True))
    reg.call("wipe", {"folder": "a"})
    for copier in (copy_module.copy, copy_module.deepcopy):
        copied = copier(reg.decisions)
        assert copied == reg.decisions and len(copied) == 1
        copied.add(reg.decisions[0])
        reg.call("wipe", {"folder": "b"})
        assert [d.arguments["folder"] for d in copied] == ["a", "a"]
        assert [d.arguments["folder"] for d in reg.decisions][-1] == "b"
        reg.decisions.clear()
        reg.call("wipe", {"folder": "a"})
    copied_registry = copy_module.deepcopy(reg)  # its log goes with it
    copied_registry.call("wipe", {"folder": "c"})
    assert [d.arguments["folder"] for d in reg.decisions] == ["a"]
    assert [d.arguments["folder"] for d in copied_registry.decisions] == ["a", "c"]


def test_a_snapshot_of_arguments_shares_nothing_mutable_and_keeps_what_cannot_change():
    """`policy.snapshot` (the log's record and the callback's copy): immutable values kept as they
    are, containers and objects copied deeply (plain objects by hand, others by deepcopy), a value
    that cannot be copied kept as a marked repr."""
    import dataclasses
    import datetime
    import enum
    import pathlib
    import threading

    from nbtools.policy import snapshot

    class Colour(enum.Enum):
        RED = "red"

    @dataclasses.dataclass
    class Box:
        items: list

    @dataclasses.dataclass(frozen=True)
    class Frozen:
        tags: tuple

    class Slotted:
        __slots__ = ("items",)

        def __init__(self, items):
            self.items = items

        def __eq__(self, other):
            return type(other) is Slotted and other.items == self.items

    class Locked:
        def __init__(self):
            self.lock = threading.Lock()

        def __repr__(self):
            return "Locked()"

    when, path = datetime.date(2026, 1, 2), pathlib.Path("/data")
    given = {"box": Box([[1], {"k": [2]}]), "frozen": Frozen(([3],)), "slotted": Slotted([4]), "colour": Colour.RED,
             "when": when, "path": path, "locked": Locked(), "plain": "text"}
    copied = snapshot(given)
    assert copied["box"] == given["box"] and copied["box"] is not given["box"]
    assert copied["box"].items[1]["k"] is not given["box"].items[1]["k"]
    assert copied["frozen"] == given["frozen"] and copied["frozen"].tags[0] is not given["frozen"].tags[0]
    assert copied["slotted"] == given["slotted"] and copied["slotted"].items is not given["slotted"].items
    assert copied["colour"] is Colour.RED and copied["when"] is when and copied["path"] is path
    assert copied["locked"].startswith("<not copyable (TypeError): Locked()")
    given["box"].items[1]["k"].append(99)  # the original changes: the snapshot does not
    assert copied["box"].items[1]["k"] == [2]


def test_the_two_snapshots_of_a_call_equal_deepcopies_and_share_nothing_mutable():
    """`policy.snapshots` (the log's and the callback's copy in one pass) gives what two
    `copy.deepcopy`s give, sharing no list, dict or object with the original nor each other."""
    import copy
    import dataclasses
    import enum

    from nbtools.policy import snapshots

    class Side(enum.Enum):
        BUY = "buy"

    @dataclasses.dataclass
    class Line:
        symbol: str
        tags: list

    @dataclasses.dataclass
    class Flat:
        symbol: str
        side: Side

    given = {"lines": [Line("A", ["x"]), Line("B", [])], "flat": [Flat("C", Side.BUY)], "words": ["a", "b"],
             "sides": [Side.BUY], "map": {"k": 1.5}, "deep": {"k": [[1], {"n": [2]}]}, "pair": ([1], 2),
             "frozen": (1, "a"), "n": 3, "none": None}
    expected = copy.deepcopy(given)
    log, mine = snapshots(given)
    assert log == mine == expected

    def containers(value, found):
        if isinstance(value, (list, dict)) or dataclasses.is_dataclass(value):
            found.append(id(value))
        items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else \
            vars(value).values() if dataclasses.is_dataclass(value) else ()
        for item in items:
            containers(item, found)
        return found

    ours, theirs, original = (set(containers(each, [])) for each in (log, mine, given))
    assert not ours & theirs and not ours & original and not theirs & original
    mine["lines"][0].tags.append("edited")
    mine["deep"]["k"][1]["n"].append(9)
    assert log == given == expected


class Connection:
    """A plain class holding a lock: built from validated arguments, it cannot be copied."""

    def __init__(self, host: str):
        import threading

        self.host, self.lock = host, threading.Lock()

    def __repr__(self):
        return f"Connection({self.host!r})"


def test_a_callback_sees_an_argument_that_cannot_be_copied_as_it_is_and_the_log_a_marked_repr():
    seen = []

    def use(conn: Connection) -> str:
        return conn.host

    reg = Registry(approve=lambda tool, args: seen.append(args["conn"]) or True)
    reg.add(use, hints="destructive")
    assert call_func("use", {"conn": {"host": "db"}}, ns=reg) == "db"
    assert type(seen[-1]).__name__ == "Connection" and seen[-1].host == "db"
    assert reg.decisions[-1].arguments["conn"].startswith("<not copyable (TypeError): Connection('db')")
