"""The approval prompt: a registry's approval callback that asks the person in the notebook.

`registry.approve = ApprovalPrompt()` shows, before a destructive tool runs, who asks (a call in
the notebook, a Chat's model, an MCP client), the tool and the arguments as they will run, with
Approve, Deny (an optional reason goes to the model), Edit (the arguments as JSON, validated again),
Always allow and Always deny. Once decided the widget is replaced by a static record.

It works from `await` and from synchronous calls alike: in an ipykernel 7 kernel the prompt's comm
messages are answered on a kernel subshell (a thread of its own), so a click arrives even while a
synchronous `call_func`, `run_tool_calls` or `chat(...)` blocks the cell. (`jupyter-ui-poll` does
not work on ipykernel 7.4.) Everything a tool's author or a model wrote is HTML-escaped.
This module imports ipywidgets at the top; `nbtools` imports it only when `ApprovalPrompt` is used.
"""

from __future__ import annotations

import asyncio
import html
import json
import math
import threading
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets

from .errors import ToolCallError
from .listing import first_line
from .policy import DEFAULT_LIMITS, Decision

# Kept short: the call's error text quotes at most 200 characters of it.
NEEDS_SUBSHELLS = ("ApprovalPrompt from a synchronous call needs a kernel with subshells (ipykernel 7); "
                   "here use the async form: await registry.acall(...), await arun_tool_calls(...), "
                   "await chat.acall(...)")

NEEDS_KERNEL = ("ApprovalPrompt needs a Jupyter kernel whose front end shows widgets; here (a terminal or "
                "a script) nobody could click, so the call would only wait for the time-out. Give the "
                "registry an approve callback of your own instead (for example one that asks with input())")

# JupyterLab's theme variables, each followed by a colour for viewers without the theme (nbviewer, an HTML
# export: on white). The badge is the `%tools` table's and the panel's (white on it: 6.6:1 Light, 5.0:1 Dark);
# an error's text 5.0:1 on Light's white, 5.1:1 on Dark's #111; dimmed text 4.6:1 and 6.0:1. The main
# text's colour has no fallback: without the theme it inherits the page's, readable on any background.
_DESTRUCTIVE = "var(--jp-error-color0, #b3261e)"
_ERROR_TEXT = "var(--jp-error-color1, #b3261e)"
_QUIET = "var(--jp-ui-font-color2, #666)"


def _shell() -> Any:
    import sys

    ipython = sys.modules.get("IPython")
    return ipython.get_ipython() if ipython is not None else None


def _in_kernel() -> bool:
    """Whether this runs in a Jupyter kernel (the only place a widget's buttons can be clicked)."""
    shell = _shell()
    return shell is not None and getattr(shell, "kernel", None) is not None


_subshells: dict[int, str] = {}  # id(kernel) -> the subshell that answers prompts
_subshell_lock = threading.Lock()


def answering_subshell() -> str | None:
    """The id of this kernel's subshell that handles prompt clicks (made once), or None when the
    kernel has no subshells (ipykernel < 7) or this is no kernel.

    The subshell is created on the kernel's shell-channel thread, as a `create_subshell_request`
    would; the prompt's widgets then route the browser's messages to it (ipykernel 7.4 asks a comm
    where its replies go through `comm._reply_subshell_for`)."""
    shell = _shell()
    kernel = getattr(shell, "kernel", None) if shell is not None else None
    channel = getattr(kernel, "shell_channel_thread", None)
    manager = getattr(channel, "manager", None)
    if manager is None or not hasattr(manager, "_create_subshell"):
        return None
    with _subshell_lock:
        known = _subshells.get(id(kernel))
        if known is not None and known in manager.list_subshell():
            return known
        made: dict[str, Any] = {}
        done = threading.Event()

        def create() -> None:
            try:
                made["id"] = manager._create_subshell()
            except BaseException as error:  # reported below as "no subshell"
                made["error"] = error
            finally:
                done.set()

        channel.io_loop.add_callback(create)
        if not done.wait(10) or "id" not in made:
            return None
        _subshells[id(kernel)] = made["id"]
        return made["id"]


def _route_to(widget: widgets.Widget, subshell: str) -> None:
    """Have the browser's messages for `widget` handled on `subshell` (not the blocked main shell)."""
    comm = getattr(widget, "comm", None)
    if comm is not None:
        comm._reply_subshell_for = lambda data, default: subshell


class ApprovalTimedOut(TimeoutError):
    """Nobody answered the prompt in time: the call does not run, and the model is told the time
    ran out (not that the person said no)."""


class ApprovalInterrupted(asyncio.CancelledError):
    """The wait for an answer ended (the kernel was interrupted, or the MCP client gave up): the call
    does not run. Still a CancelledError (cancellation goes on up), shown by IPython as one line."""

    def _render_traceback_(self) -> list[str]:
        return [str(self)]


def who_asks(origin: str) -> str:
    """The asker, in words: "call" -> this notebook, "chat:M" -> the model M, "mcp:C" -> the MCP client C,
    "mcp:C@U" -> the MCP client C as the Jupyter user U."""
    kind, _, name = origin.partition(":")
    if kind == "chat":
        return f"The model {name or '?'} (Chat)"
    if kind == "mcp":
        client, at, user = name.partition("@")  # `mcp:<client>@<user>`: through Jupyter, for that user
        return f"The MCP client {client or '?'} as {user}" if at else f"The MCP client {name or '?'}"
    return "A call in this notebook"


@dataclass(frozen=True)
class ApprovalRecord:
    """What was asked and decided, as static output: a decided prompt's widget is replaced by it, so a
    saved notebook reopened without its kernel still shows the record (a widget shows nothing there)."""

    tool: str
    arguments: str  # JSON text, as the call runs (edited ones when edited)
    verdict: str
    origin: str = "call"

    def _repr_html_(self) -> str:
        return (f"<div style='color:var(--jp-ui-font-color1)'>Approval for <code><b>{html.escape(self.tool)}"
                f"</b></code> ({html.escape(who_asks(self.origin))}): <b>{html.escape(self.verdict)}</b>"
                f"<pre style='margin:4px 0'>{html.escape(self.arguments)}</pre></div>")

    def __repr__(self) -> str:
        return f"Approval for {self.tool} ({who_asks(self.origin)}): {self.verdict}\n{self.arguments}"


class ApprovalBox(widgets.VBox):
    """The widget one approval question shows: the question, the buttons, the reason and editor, the verdict."""

    def __init__(self, tool_name: str, children: list[widgets.Widget]):
        self.tool_name = tool_name
        super().__init__(children=children)

    def __repr__(self) -> str:
        return f"ApprovalBox(tool={self.tool_name!r})"


def _as_json(args: Any) -> str:
    try:
        return json.dumps(args, indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(args)


class ApprovalPrompt:
    """An approval callback that asks in the notebook: `registry.approve = ApprovalPrompt()`.

    Answers with a `Decision`: Approve; Deny, with the reason typed beside it (if any) for the
    model; Edit shows the arguments as JSON, and Approve then runs the edited ones once they pass
    the tool's schema (an invalid edit keeps the prompt open, naming the argument); Always allow /
    Always deny answer for this tool for the rest of the session (`registry.forget()` undoes it).
    No answer within `timeout` seconds (None: no limit) raises ApprovalTimedOut: the call does not
    run and the model reads that nobody answered in time. If the wait ends otherwise (the kernel is
    interrupted, the MCP client gives up), the call never runs, whatever is clicked later.

    Fields: `timeout`; `widget` (the latest prompt), `record` (its decision), and its buttons
    `approve_button`, `deny_button`, `edit_button`, `always_allow_button`, `always_deny_button`,
    the `reason` text box and the `editor` (for tests, and for closing it).
    """

    asks_a_person = True  # registry.decisions says "by person"

    def __init__(self, timeout: float | None = 300.0):
        self.timeout = timeout
        self.widget: ApprovalBox | None = None
        self.record: ApprovalRecord | None = None
        self.approve_button: widgets.Button | None = None
        self.deny_button: widgets.Button | None = None
        self.edit_button: widgets.Button | None = None
        self.always_allow_button: widgets.Button | None = None
        self.always_deny_button: widgets.Button | None = None
        self.reason: widgets.Text | None = None
        self.editor: widgets.Textarea | None = None

    async def __call__(self, tool: Any, args: Any, *, origin: str = "call") -> Decision:
        # 1. Refuse at once where no click can ever arrive.
        if not _in_kernel():
            raise RuntimeError(NEEDS_KERNEL)
        subshell = answering_subshell()
        if subshell is None and threading.current_thread() is not threading.main_thread():
            raise RuntimeError(NEEDS_SUBSHELLS)
        # 2. The question and its controls.
        loop = asyncio.get_running_loop()
        decision: asyncio.Future[Decision] = loop.create_future()
        name = getattr(tool, "name", None) or str(tool)
        shown_args = _as_json(args)
        button = lambda text, style, icon, tip: widgets.Button(  # noqa: E731
            description=text, button_style=style, icon=icon, tooltip=tip, layout=widgets.Layout(width="auto"))
        approve = button("Approve", "success", "check", f"run {name} with these arguments")
        deny = button("Deny", "danger", "times", f"do not run {name}; the reason (if any) goes to the model")
        edit = button("Edit", "", "pencil", "change the arguments before approving")
        always_allow = button("Always allow", "", "check-circle", f"run {name} without asking for this session")
        always_deny = button("Always deny", "", "ban", f"refuse {name} without asking for this session")
        reason = widgets.Text(placeholder="reason for the model (optional)", layout=widgets.Layout(width="28em"))
        fixed = getattr(getattr(tool, "fn", None), "__tool_shown__", ())  # shown, not the model's to send: not edited
        editable = _as_json({key: value for key, value in args.items() if key not in fixed}) \
            if fixed and isinstance(args, dict) else shown_args
        editor = widgets.Textarea(value=editable, rows=min(12, editable.count("\n") + 2),
                                  layout=widgets.Layout(width="100%", display="none"))
        clock, outcome = widgets.HTML(), widgets.HTML()
        controls = [approve, deny, edit, always_allow, always_deny, reason, editor]

        def decide(answer: Decision) -> None:
            # The click arrives on the subshell's thread (or between awaits): hand it to our loop.
            loop.call_soon_threadsafe(lambda: decision.done() or decision.set_result(answer))

        def approve_clicked(_: Any) -> None:
            if editor.layout.display == "none":
                decide(Decision(True))
                return
            problem = _invalid_edit(tool, editor.value)
            if problem:
                outcome.value = f"<span style='color:{_ERROR_TEXT}'>{html.escape(problem)}</span>"
                return
            decide(Decision(True, args=json.loads(editor.value)))

        def edit_clicked(_: Any) -> None:
            editor.layout.display = None
            approve.description = "Approve edited"

        approve.on_click(approve_clicked)
        deny.on_click(lambda _: decide(Decision(False, reason=reason.value.strip() or None)))
        edit.on_click(edit_clicked)
        always_allow.on_click(lambda _: decide(Decision(True, remember="tool")))
        always_deny.on_click(lambda _: decide(Decision(False, remember="tool", reason=reason.value.strip() or None)))
        self.widget = ApprovalBox(name, [
            widgets.HTML(approval_question_html(tool, name, shown_args, origin)),
            widgets.HBox([approve, deny, edit, always_allow, always_deny, clock],
                         layout=widgets.Layout(flex_flow="row wrap", align_items="center")),
            reason, editor, outcome])
        (self.approve_button, self.deny_button, self.edit_button, self.always_allow_button,
         self.always_deny_button, self.reason, self.editor) = controls
        self.record = None
        if subshell is not None:
            for control in controls:
                _route_to(control, subshell)
        handle = _display(self.widget)
        # 3. Wait for a click, the time-out or the end of the wait; always leave a verdict, never live buttons.
        verdict = "Interrupted: not run."
        record_args = shown_args
        try:
            answer = await self._wait(decision, clock, loop)
            verdict = _verdict_text(answer)
            if answer.args is not None:
                record_args = _as_json(answer.args)
            return answer
        except ApprovalTimedOut:
            verdict = f"No answer within {self.timeout:g} s (the time ran out): not run."
            raise
        except asyncio.CancelledError:
            if origin.startswith("mcp:"):
                verdict = f"{who_asks(origin)} gave up waiting: not run."
                raise ApprovalInterrupted(f"{who_asks(origin)} gave up waiting for approval of {name!r}: "
                                          "not run.") from None
            raise ApprovalInterrupted(f"Interrupted while waiting for approval of {name!r}: not run.") from None
        except KeyboardInterrupt:
            # a served call whose code held the main thread when its client gave up is stopped with
            # SIGINT (`mcp.stopping.cancel_served`), not cancelled: read as the cancellation above
            if origin.startswith("mcp:"):
                verdict = f"{who_asks(origin)} gave up waiting: not run."
            raise
        finally:
            for control in controls:
                control.disabled = True
            clock.value = ""
            outcome.value = f"<b>{html.escape(verdict)}</b>"
            self.record = ApprovalRecord(name, record_args, verdict, origin)
            if handle is not None:
                handle.update(self.record)

    async def _wait(self, decision: "asyncio.Future[Decision]", clock: widgets.HTML,
                    loop: asyncio.AbstractEventLoop) -> Decision:
        """The click's answer; ApprovalTimedOut when `timeout` passes first. `clock` shows the seconds left."""
        deadline = None if self.timeout is None else loop.time() + self.timeout
        while not decision.done():
            left = None if deadline is None else deadline - loop.time()
            if left is not None and left <= 0:
                raise ApprovalTimedOut(f"no answer within {self.timeout:g} s (the time ran out)")
            if left is not None:
                clock.value = (f"<span style='color:{_QUIET};margin-left:8px'>"
                               f"denies by itself in {math.ceil(left)} s</span>")
            await asyncio.wait({decision}, timeout=None if left is None else min(left, 1.0))
        return decision.result()


def _verdict_text(answer: Decision) -> str:
    if answer.allow:
        text = "Always allowed for this session." if answer.remember else "Approved."
        return text[:-1] + " with edited arguments." if answer.args is not None else text
    text = "Always denied for this session." if answer.remember else "Denied."
    return text[:-1] + f": {answer.reason}" if answer.reason else text


def _invalid_edit(tool: Any, text: str) -> str | None:
    """Why the edited arguments cannot run (naming the argument), or None when they pass the schema."""
    try:
        edited = json.loads(text)
    except ValueError as error:
        return f"The edit is not JSON ({error}); fix it or click Deny."
    if not isinstance(edited, dict):
        return "The edit must be a JSON object of arguments; fix it or click Deny."
    from .call.plan import prepare

    source = getattr(tool, "source", None)
    try:
        prepare(tool, edited, source.limits if source is not None else DEFAULT_LIMITS)
    except ToolCallError as error:
        where = f"argument {error.argument!r}: " if error.argument else ""
        return f"Invalid edit, {where}{error.problem}"
    return None


def approval_question_html(tool: Any, name: str, shown_args: str, origin: str = "call") -> str:
    """The question: who asks, the tool with its destructive badge, the description's first line, the arguments."""
    destructive = "destructive" in getattr(tool, "hints", ())
    warning = (f"<span style='background:{_DESTRUCTIVE};color:white;border-radius:3px;padding:0 4px;"
               f"margin-left:4px;font-size:85%'>destructive</span>") if destructive else ""
    description = first_line(getattr(tool, "description", "") or "", limit=160)
    about = (f"<div style='color:{_QUIET};margin:2px 0'>{html.escape(description)}</div>"
             if description else "")
    return (f"<div style='color:var(--jp-ui-font-color1)'>{html.escape(who_asks(origin))} asks to run tool "
            f"<code><b>{html.escape(name)}</b></code>{warning} with these arguments:{about}"
            f"<pre style='margin:4px 0'>{html.escape(shown_args)}</pre></div>")


def _display(widget: widgets.Widget) -> Any:
    """Show `widget`; the handle that replaces it later (None outside IPython)."""
    from IPython.display import display

    return display(widget, display_id=True)


__all__ = ["ApprovalPrompt", "ApprovalBox", "ApprovalRecord", "ApprovalTimedOut", "ApprovalInterrupted",
           "approval_question_html", "answering_subshell", "who_asks", "NEEDS_KERNEL", "NEEDS_SUBSHELLS"]
