"""Issue 10: a registry's approval policy holds on every path that runs its tools; re-registering
keeps hints; remote tools take MCP's default hints; the approver sees the arguments as they run;
whatever BaseException a tool raises becomes an error result; no copy, list or other registry escapes
the policy (issue 20); a callback lives no longer than its registry. What a callback answers (Decision)
and the registry's log of decisions are in test_approval_decisions.py."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

import nbtools.mcp as nbmcp
from nbtools import Registry, ToolCallError, ToolContext, tool
from nbtools.call import call_func, call_func_async, mk_ns, run_tool_calls
from tests import providers

ROOT = Path(__file__).resolve().parent.parent
DEADLINE = 30


def make(approve=None, refuse=False):
    """A registry with a destructive `wipe` and a harmless `peek`; `ran` records what ran."""
    ran: list[str] = []

    def wipe(folder: str = "/data", force: bool = False) -> str:
        ran.append(folder)
        return f"wiped {folder}"

    def peek() -> str:
        ran.append("peek")
        return "ok"

    reg = Registry(approve=approve, refuse_destructive=refuse)
    reg.add(wipe, hints="destructive")
    reg.add(peek, hints="read-only")
    return reg, ran


class Asker:
    """An approval callback that records what it was asked and answers `answer`."""

    def __init__(self, answer: bool):
        self.answer = answer
        self.asked: list[tuple[str, dict]] = []

    def __call__(self, tool, args):
        self.asked.append((tool.name, dict(args)))
        return self.answer


def openai_reply(*calls):
    return providers.openai_completion({"role": "assistant", "content": None, "tool_calls": [
        {"id": f"call_{index}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for index, (name, args) in enumerate(calls)]})


def texts_of(answer) -> list[str]:
    return [message["content"] for message in answer]


# -- every path asks, and a denial holds ------------------------------------------------------------
SYNC_PATHS = {
    "registry.call": lambda reg: reg.call("wipe", {"folder": "x"}),
    "call_func(ns=registry)": lambda reg: call_func("wipe", {"folder": "x"}, ns=reg),
    "call_func(ns=mk_ns(registry))": lambda reg: call_func("wipe", {"folder": "x"}, ns=mk_ns(reg)),
    "call_func(ns=list(registry))": lambda reg: call_func("wipe", {"folder": "x"}, ns=list(reg)),
    "registry.get(name).call": lambda reg: reg.get("wipe").call({"folder": "x"}),
    "registry[name].call": lambda reg: reg["wipe"].call({"folder": "x"}),
    "enabled()[i].call": lambda reg: [t for t in reg.enabled() if t.name == "wipe"][0].call({"folder": "x"}),
    "select() view": lambda reg: reg.select("w*").call("wipe", {"folder": "x"}),
    "select() view .get().call": lambda reg: reg.select(hints="destructive").get("wipe").call({"folder": "x"}),
}


@pytest.mark.parametrize("path", list(SYNC_PATHS))
def test_every_sync_path_asks_and_honours_a_denial(path):
    asker = Asker(False)
    reg, ran = make(approve=asker)
    with pytest.raises(ToolCallError, match="the user denied this call"):
        SYNC_PATHS[path](reg)
    assert asker.asked == [("wipe", {"folder": "x", "force": False})] and ran == []
    asker.answer = True
    assert SYNC_PATHS[path](reg) == "wiped x" and ran == ["x"]


@pytest.mark.parametrize("path", list(SYNC_PATHS))
def test_every_sync_path_honours_refuse_destructive(path):
    reg, ran = make(refuse=True)
    with pytest.raises(ToolCallError, match="marked destructive"):
        SYNC_PATHS[path](reg)
    assert ran == []


async def test_async_paths_ask_and_honour_a_denial():
    asker = Asker(False)
    reg, ran = make(approve=asker)
    for attempt in (lambda: reg.acall("wipe", {"folder": "x"}),
                    lambda: call_func_async("wipe", {"folder": "x"}, ns=mk_ns(reg)),
                    lambda: reg.get("wipe").acall({"folder": "x"}),
                    lambda: reg.select().acall("wipe", {"folder": "x"})):
        with pytest.raises(ToolCallError, match="denied"):
            await attempt()
    assert len(asker.asked) == 4 and ran == []


def test_run_tool_calls_with_a_list_of_the_registry_asks():
    asker = Asker(False)
    reg, ran = make(approve=asker)
    for ns in (list(reg), mk_ns(reg), reg):
        texts = texts_of(run_tool_calls(openai_reply(("wipe", {}), ("peek", {})), ns=ns))
        assert "the user denied this call" in texts[0] and texts[1] == "ok"
    assert ran == ["peek"] * 3 and [name for name, _ in asker.asked] == ["wipe"] * 3


def test_a_view_made_before_the_policy_was_set_honours_it():
    reg, ran = make()
    view, tools, one = reg.select(), list(reg), reg.get("wipe")
    reg.approve = Asker(False)
    for attempt in (lambda: view.call("wipe"), lambda: call_func("wipe", ns=tools), lambda: one.call()):
        with pytest.raises(ToolCallError, match="denied"):
            attempt()
    reg.approve = None
    reg.refuse_destructive = True
    for attempt in (lambda: view.call("wipe"), lambda: call_func("wipe", ns=tools), lambda: one.call()):
        with pytest.raises(ToolCallError, match="marked destructive"):
            attempt()
    assert ran == []
    view.refuse_destructive = False  # a view cannot loosen its registry's refusal
    with pytest.raises(ToolCallError, match="marked destructive"):
        view.call("wipe")


def test_explicit_options_and_unbound_tools_keep_working():
    reg, ran = make(approve=Asker(False))
    assert reg.call("wipe", approve=lambda tool, args: True) == "wiped /data"
    assert reg.get("wipe").call(approve=None) == "wiped /data"
    from nbtools import Tool

    def free(a: int) -> int:
        return a

    plain = Tool.from_function(free, hints="destructive")
    assert plain.call({"a": 1}) == 1  # a Tool no registry handed out has no policy
    stored = reg.add(plain)
    assert plain in reg and stored in reg and stored is not plain
    with pytest.raises(ToolCallError, match="denied"):
        stored.call({"a": 1})


# -- the approver sees what runs -------------------------------------------------------------------
def test_the_approver_sees_converted_arguments_with_defaults():
    asker = Asker(True)
    reg = Registry(approve=asker)

    @tool(hints="destructive", registry=reg)
    def wipe(folder: str = "/data", where: Path = Path("/tmp"), *, depth: int = 2) -> str:
        return f"{folder} {where} {depth}"

    assert reg.call("wipe", {"folder": None, "where": "/srv"}) == "/data /srv 2"
    [(name, seen)] = asker.asked
    assert seen == {"folder": "/data", "where": Path("/srv"), "depth": 2}
    assert isinstance(seen["where"], Path)


def test_the_approver_and_the_record_leave_out_an_injected_tool_context():
    """A ToolContext parameter is filled by dispatch, never sent by the model: the approver is not
    shown it (an Edit of the arguments would send it back), nor does the decisions log keep it."""
    asker = Asker(True)
    reg = Registry(approve=asker)

    @tool(hints="destructive", registry=reg)
    def wipe(folder: str, ctx: ToolContext, force: bool = False) -> str:
        return f"{folder} {force} {type(ctx).__name__}"

    assert reg.call("wipe", {"folder": "a"}) == "a False ToolContext"
    assert reg.get("wipe").call({"folder": "b"}) == "b False ToolContext"
    assert [seen for _, seen in asker.asked] == [{"folder": "a", "force": False}, {"folder": "b", "force": False}]
    assert [record.arguments for record in reg.decisions] == [{"folder": "a", "force": False},
                                                               {"folder": "b", "force": False}]


def test_the_decisions_log_keeps_the_arguments_as_run_whatever_the_callback_does_to_its_dict():
    """The callback's `args` is its own: editing it in place edits nothing (an edit is a
    `Decision(True, args=...)`), and the log still records the arguments the call ran with."""
    def meddler(tool, args):
        args["folder"] = "/elsewhere"
        return True

    for how in ("registry", "view", "async"):
        reg, ran = make(approve=meddler)
        if how == "registry":
            assert call_func("wipe", {"folder": "a"}, ns=reg) == "wiped a"
        elif how == "view":
            assert call_func("wipe", {"folder": "a"}, ns=reg.select()) == "wiped a"
        else:
            assert asyncio.run(call_func_async("wipe", {"folder": "a"}, ns=reg)) == "wiped a"
        assert ran == ["a"]
        assert [(each.verdict, each.arguments) for each in reg.decisions] == [
            ("approved", {"folder": "a", "force": False})], how


# -- re-registering keeps hints and group ----------------------------------------------------------
def test_re_registering_keeps_hints_and_group():
    reg = Registry(approve=Asker(False))

    @tool(hints="destructive", group="files", registry=reg)
    def wipe(folder: str) -> str:
        return folder

    for again in (lambda: reg.add(wipe), lambda: tool(registry=reg)(wipe), lambda: reg.add(reg.get("wipe"))):
        again()
        assert reg.get("wipe").hints == {"destructive"} and reg.get("wipe").group == "files"
        with pytest.raises(ToolCallError, match="denied"):
            reg.call("wipe", {"folder": "x"})
    reg.add(wipe, hints="read-only", group="g")  # new ones given: they win
    assert reg.get("wipe").hints == {"read-only"} and reg.get("wipe").group == "g"
    reg.add(wipe, hints=())  # an explicit empty set drops them
    assert reg.get("wipe").hints == frozenset()


def test_percent_tool_keeps_the_destructive_hint(nbtools_kernel):
    nbtools_kernel.run("""
        from nbtools import tool, registry
        @tool(hints="destructive", group="files")
        def wipe(folder: str) -> str:
            return folder
    """)
    nbtools_kernel.run("%tool wipe")
    assert nbtools_kernel.value("[sorted(registry.get('wipe').hints), registry.get('wipe').group]") == \
        [["destructive"], "files"]


# -- remote tools ----------------------------------------------------------------------------------
REMOTE_TOOLS = textwrap.dedent("""
    from nbtools import tool

    def plain(x: int) -> int:
        'No hints at all: served without annotations.'
        return x

    @tool(hints="read-only")
    def look(x: int) -> int:
        'Read-only.'
        return x
""")


def test_an_unannotated_remote_tool_is_destructive_and_refused(tmp_path):
    (tmp_path / "remote_tools.py").write_text(REMOTE_TOOLS)
    env = {"PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    command = [sys.executable, "-m", "nbtools.cli", "serve", "remote_tools.py"]
    with nbmcp.connect(command, cwd=str(tmp_path), env=env, timeout=DEADLINE) as remote:
        tools = {each.name: each for each in remote}
        assert tools["plain"].hints == {"destructive", "open-world"}
        assert "destructive" not in tools["look"].hints and "read-only" in tools["look"].hints
        refusing = Registry(remote, refuse_destructive=True)
        with pytest.raises(ToolCallError, match="marked destructive"):
            refusing.call("plain", {"x": 1})
        assert refusing.call("look", {"x": 2}) == 2
        asker = Asker(False)
        with pytest.raises(ToolCallError, match="denied"):
            Registry(remote, approve=asker).call("plain", {"x": 3})
        assert asker.asked == [("plain", {"x": 3})]


def test_hints_a_server_sets_to_false_stay_false():
    # kept as said (`not-<hint>`), so rendering or serving the tool again says false, not MCP's default
    assert nbmcp.hints_from_annotations({"destructiveHint": False, "openWorldHint": False}) == \
        {"not-destructive", "not-open-world"}
    assert nbmcp.hints_from_annotations({"destructiveHint": False}) == {"not-destructive", "open-world"}
    assert nbmcp.hints_from_annotations({}) == {"destructive", "open-world"}
    assert nbmcp.hints_from_annotations({"idempotentHint": True}) == {"destructive", "open-world", "idempotent"}


# -- the MCP server asks too -----------------------------------------------------------------------
async def test_the_mcp_server_asks_and_honours_a_denial():
    asker = Asker(False)
    reg, ran = make(approve=asker)
    result = await nbmcp.call_result(reg, "wipe", {"folder": None})
    assert result.is_error and "the user denied this call" in result.content[0].text
    assert asker.asked == [("wipe", {"folder": "/data", "force": False})] and ran == []


# -- BaseException from tools -----------------------------------------------------------------------
class Custom(BaseException):
    pass


def raising_registry() -> Registry:
    def exits() -> str:
        raise SystemExit(2)

    def interrupts() -> str:
        raise KeyboardInterrupt("from the tool")

    async def cancels() -> str:
        raise asyncio.CancelledError()

    def custom() -> str:
        raise Custom("odd")

    def fine() -> str:
        return "fine"

    return Registry([exits, interrupts, cancels, custom, fine])


def test_base_exceptions_from_tools_are_error_results():
    reg = raising_registry()
    for name, kind in (("exits", "SystemExit"), ("interrupts", "KeyboardInterrupt"),
                       ("cancels", "CancelledError"), ("custom", "Custom")):
        with pytest.raises(ToolCallError, match=f"the tool raised {kind}"):
            reg.call(name)
    texts = texts_of(run_tool_calls(openai_reply(("exits", {}), ("fine", {}), ("interrupts", {}), ("cancels", {}),
                                                 ("custom", {}), ("fine", {})), ns=reg))
    assert [("the tool raised" in text) for text in texts] == [True, False, True, True, True, False]
    assert texts[1] == texts[5] == "fine"


async def test_base_exceptions_over_the_mcp_handler_and_a_real_cancellation_still_cancels():
    reg = raising_registry()
    for name in ("exits", "interrupts", "cancels", "custom"):
        result = await nbmcp.call_result(reg, name, {})
        assert result.is_error and "the tool raised" in result.content[0].text
    assert (await nbmcp.call_result(reg, "fine", {})).content[0].text == "fine"

    async def slow() -> str:
        await asyncio.sleep(30)
        return "late"

    task = asyncio.ensure_future(Registry([slow]).acall("slow"))
    await asyncio.sleep(0.05)
    task.cancel()  # the caller's cancellation is not the tool's failure: it cancels
    with pytest.raises(asyncio.CancelledError):
        await task


# -- issue 20: no copy, list or re-registration escapes the policy ----------------------------------
import copy as copy_module  # noqa: E402
import dataclasses  # noqa: E402

from nbtools import Tool, tools_from  # noqa: E402
from nbtools.policy import asking_as  # noqa: E402

COPIES = {
    "Tool.replace": lambda reg: reg.get("wipe").replace(description="x"),
    "dataclasses.replace": lambda reg: dataclasses.replace(reg.get("wipe"), description="x"),
    "copy.copy": lambda reg: copy_module.copy(reg.get("wipe")),
    "renamed copy": lambda reg: reg.get("wipe").replace(name="w2"),
    "copy of a view's tool": lambda reg: reg.select().get("wipe").replace(description="y"),
}


@pytest.mark.parametrize("how", list(COPIES))
def test_a_copy_of_a_registered_tool_keeps_the_policy(how):
    reg, ran = make(approve=Asker(False))
    copied = COPIES[how](reg)
    assert copied.source is reg or copied.source._memory is reg._memory
    with pytest.raises(ToolCallError, match="denied"):
        copied.call({"folder": "x"})
    for ns in (mk_ns([copied]), [copied], {copied.name: copied}):  # namespaces built from the copy
        with pytest.raises(ToolCallError, match="denied"):
            call_func(copied.name, {"folder": "x"}, ns=ns)
    assert ran == []


def test_a_changed_copy_calls_and_renders_as_itself_and_keeps_the_policy():
    """The dispatch kept with a Tool (plan, approval view, renders) belongs to its definition: a
    copy with other fields, by `replace` or `dataclasses.replace`, builds its own; `copy.copy`
    shares it. Every copy keeps the registry's policy and its decisions."""
    asker = Asker(True)
    reg, ran = make(approve=asker)
    original = reg.get("wipe")
    assert original.call({"folder": "a"}) == "wiped a" and "moved" not in original.schema()["description"]

    def trash(bin: str, depth: int = 3) -> str:
        ran.append(f"trash {bin} {depth}")
        return bin

    others = [dataclasses.replace(original, description="moved", fn=trash, parameters=Tool.from_function(trash).parameters,
                                  args=Tool.from_function(trash).args, passing=Tool.from_function(trash).passing),
              original.replace(description="moved", fn=trash, args=Tool.from_function(trash).args,
                               parameters=Tool.from_function(trash).parameters, passing=Tool.from_function(trash).passing)]
    for other in others:
        assert other._cache is not original._cache and other.schema()["description"].startswith("moved")
        assert other.call({"bin": "b"}) == "b" and asker.asked[-1] == ("wipe", {"bin": "b", "depth": 3})
        with pytest.raises(ToolCallError, match="unexpected argument"):
            other.call({"folder": "a"})
    assert copy_module.copy(original)._cache is original._cache
    assert original.call({"folder": "c"}) == "wiped c" and asker.asked[-1] == ("wipe", {"folder": "c", "force": False})
    assert ran == ["a", "trash b 3", "trash b 3", "c"]
    assert [(each.tool, each.verdict, each.by) for each in reg.decisions] == [("wipe", "approved", "callback")] * 4


def test_a_bound_tool_holds_declared_fields_only_and_its_identity_follows_its_copies():
    """`policy.bind` records the Tool a bound copy came from in a declared field (`Tool._origin`),
    not an instance attribute of its own: every Tool handed out, and every copy of one, has only
    the fields the record declares; the identity is out of repr and equality, like `source`."""
    reg, _ = make(approve=Asker(True))
    other = Registry()
    bound = reg.get("wipe")
    other.add(bound)
    declared = {each.name for each in dataclasses.fields(Tool)}
    copies = [bound, copy_module.copy(bound), bound.replace(source=None), other.get("wipe"),
              reg.select().get("wipe"), *(make_copy(reg) for make_copy in COPIES.values())]
    for each in copies:
        assert set(vars(each)) <= declared, set(vars(each)) - declared
    assert "_origin" in declared and "_origin" not in repr(bound) and "<" not in repr(bound)
    origin = dataclasses.fields(Tool)[[f.name for f in dataclasses.fields(Tool)].index("_origin")]
    assert origin.compare is False and origin.repr is False
    # the same tool: a copy, a re-bound copy, the copy another registry holds
    for same in (copy_module.copy(bound), bound.replace(source=None), other.get("wipe")):
        assert same in reg and same in other
    # another tool: a copy with a changed field has an identity of its own
    changed = bound.replace(description="changed")
    assert changed._origin is None and changed not in other


def test_another_registry_keeps_the_source_policy_and_the_stricter_wins():
    reg, ran = make(approve=Asker(False))
    again = Registry([reg["wipe"]])  # no policy of its own: the source's still holds
    with pytest.raises(ToolCallError, match="denied"):
        again.call("wipe", {"folder": "x"})
    yes = Asker(True)
    loose = Registry([reg["wipe"]], approve=yes)  # its own yes does not override the source's no
    with pytest.raises(ToolCallError, match="denied"):
        loose.call("wipe")
    assert [name for name, _ in yes.asked] == ["wipe"]
    strict = Registry([make(approve=Asker(True))[0]["wipe"]], refuse_destructive=True)
    with pytest.raises(ToolCallError, match="marked destructive"):
        strict.call("wipe")
    with pytest.raises(ToolCallError, match="denied"):
        Registry([again["wipe"]]).select().call("wipe")  # two hops and a view
    assert ran == []


def test_a_disabled_tool_stays_disabled_on_every_path():
    reg, ran = make()
    reg.disable("wipe")
    reply = openai_reply(("wipe", {}))
    assert "disabled" in texts_of(run_tool_calls(reply, ns=list(reg)))[0]
    for attempt in (lambda: reg.get("wipe").call(), lambda: Registry([reg["wipe"]]).call("wipe"),
                    lambda: call_func("wipe", ns=list(reg)), lambda: copy_module.copy(reg["wipe"]).call()):
        with pytest.raises(ToolCallError, match="disabled"):
            attempt()
    view = make()[0]
    selected = view.select()
    view.disable("wipe")  # disabled after the view was made: the view follows
    with pytest.raises(ToolCallError, match="disabled"):
        selected.call("wipe")
    assert ran == []


def test_chat_and_mcp_start_with_a_list_of_the_registry_keep_the_policy():
    from nbtools.chat.loop import _registry_of
    from nbtools.mcp.server import as_registry

    reg, ran = make(approve=Asker(False))
    for made in (_registry_of(list(reg)), as_registry(list(reg))):
        with pytest.raises(ToolCallError, match="denied"):
            made.call("wipe", {"folder": "x"})
    assert ran == []


async def test_a_served_list_of_the_registry_refuses_over_mcp():
    reg, ran = make(approve=Asker(False))
    result = await nbmcp.call_result(nbmcp.as_registry(list(reg)), "wipe", {"folder": "x"})
    assert result.is_error and "the user denied this call" in result.content[0].text and ran == []


def test_tools_from_a_module_keeps_the_hints_given_by_the_decorator(tmp_path, monkeypatch):
    (tmp_path / "wipers.py").write_text(textwrap.dedent("""
        from nbtools import Registry, tool
        elsewhere = Registry()

        @tool(hints="destructive", registry=elsewhere)
        def wipe(folder: str) -> str:
            return folder
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    import wipers

    (made,) = [each for each in tools_from(wipers) if each.name == "wipers.wipe"]
    assert made.hints == {"destructive"}
    with pytest.raises(ToolCallError, match="marked destructive"):
        Registry([made], refuse_destructive=True).call("wipers.wipe", {"folder": "x"})


def test_python_offered_to_a_model_is_destructive_and_open_world():
    from nbtools import python

    assert Tool.from_function(python).hints == {"destructive", "open-world"}
    asker = Asker(False)
    with pytest.raises(ToolCallError, match="denied"):
        Registry([python], approve=asker).call("python", {"code": "1+1"})
    assert asker.asked == [("python", {"code": "1+1", "timeout": 3600})]


def test_a_tool_disabled_in_its_source_is_not_offered_by_another_registry():
    reg, ran = make()
    again = Registry([reg["wipe"], reg["peek"]])
    reg.disable("wipe")
    assert [tool.name for tool in again.enabled()] == ["peek"]
    assert [each["name"] for each in again.schemas()] == ["peek"]
    view = reg.select()
    reg.disable("peek")
    assert view.enabled() == [] and not view.is_enabled("peek")
    reg.enable("wipe")
    assert [tool.name for tool in again.enabled()] == ["wipe"] and again.call("wipe") == "wiped /data"


def test_an_approval_prompt_and_its_registry_go_once_dropped():
    """The issue-31 note on `call/asking._TRAITS` (a module cache of up to 64 callbacks): no such
    cache is left; what dispatch reads of a callback is kept by its registry, so a real
    `ApprovalPrompt` (its widgets) and the registry it asks for are freed with the last reference,
    after sync and async calls through every path that reads the callback."""
    import gc
    import weakref

    from nbtools.approval import ApprovalPrompt
    from nbtools.call import asking

    assert not hasattr(asking, "_TRAITS")
    prompt = ApprovalPrompt(timeout=1)
    reg, ran = make(approve=prompt)
    for attempt in (lambda: reg.call("wipe", {"folder": "a"}), lambda: reg.get("wipe").call({"folder": "b"}),
                    lambda: asyncio.run(reg.acall("wipe", {"folder": "c"})),
                    lambda: call_func("wipe", {"folder": "d"}, ns=reg.select())):
        with pytest.raises(ToolCallError, match="approval check failed"):  # no kernel here: nobody to click
            attempt()
    assert ran == [] and reg._asker[0] is prompt  # read once, kept by the registry
    gone_prompt, gone_registry = weakref.ref(prompt), weakref.ref(reg)
    del prompt, reg, attempt
    gc.collect()
    assert gone_prompt() is None and gone_registry() is None


def test_dispatch_keeps_no_approval_callback_alive():
    """What dispatch reads of a callback (whether it takes `origin=`, whether a person answers) is
    kept by its registry: a callback (a prompt and its widgets) goes with its registry, and a new
    callback set on the registry is read again."""
    import gc
    import weakref

    class Approver:
        def __call__(self, tool, args):
            return True

    approver = Approver()
    reg, ran = make(approve=approver)
    assert reg.call("wipe", {"folder": "a"}) == "wiped a" and reg.get("wipe").call({"folder": "b"}) == "wiped b"
    gone = weakref.ref(approver)
    del approver, reg
    gc.collect()
    assert gone() is None

    seen = []
    reg, ran = make(approve=Asker(True))
    reg.call("wipe")

    def with_origin(tool, args, origin):
        seen.append(origin)
        return True

    with_origin.asks_a_person = True
    reg.approve = with_origin
    with asking_as("mcp:probe"):
        reg.call("wipe")
    assert seen == ["mcp:probe"] and [(d.by, d.origin) for d in reg.decisions] == [("callback", "call"),
                                                                                  ("person", "mcp:probe")]
