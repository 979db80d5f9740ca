"""A Chat as a tool of another Chat (a sub-agent): `chat.as_tool(name=None, description=None)`.

The Tool has one required string parameter, `task`. Each call runs the sub-agent on the task from
the history it had when `as_tool` was called (its system prompt, any turns given it before), so
calls are independent and may run concurrently; the sub-agent's `messages` and `steps` are then
those of its last task. What it spends is added to its own `usage` and, while another Chat runs it
as a tool, to that Chat's usage, cost and budget (`loop._SPENT`).

Budgets hold across runs: each request of a sub-agent is checked against the budgets of the Chats
running it (`spend.Account`, counted reply by reply) and, when the sub-agent has a budget of its own,
against what all of its runs in flight spent together: parallel calls do not each start from the
amount spent before them. Under a budget, parallel sub-agents' requests therefore go one at a time
(`spend.Turn`: each waits for the one in flight, from a thread or an event loop). A run refused by a
used-up budget raises `BudgetExceeded` ("not run"); a synchronous sub-agent on the thread of an event
loop whose task holds the turn (beside an async sub-agent under an async Chat) cannot wait for it
without stopping that loop, and raises `TurnRefused` ("not run") instead of passing the budget.
"""

from __future__ import annotations

import copy
import dataclasses
import re
import threading
from typing import Any

from ..formats.turns import Usage
from ..tool import Tool
from .spend import _ACCOUNTS, _SPENT, Account


def as_tool(chat: Any, name: str | None = None, description: str | None = None) -> Tool:
    """`chat` as a Tool with one required string parameter, `task` (see the module docstring)."""
    if not (hasattr(chat, "acall") and hasattr(chat, "endpoint")):
        raise TypeError(f"as_tool: expected a nbtools Chat; got a {type(chat).__name__}")
    snapshot = list(chat.messages)
    name = name or "ask_" + (re.sub(r"[^A-Za-z0-9_]+", "_", chat.model).strip("_")[:56] or "agent")
    if description is None:
        description = (f"Hand a task to a sub-agent (model {chat.model}) that can use its own tools; it answers "
                       "with its final text. Say everything it needs in `task`: it does not see this conversation.")
        if chat.system:
            description += f" Its instructions: {chat.system[:300]}"

    def worker() -> Any:
        run = copy.copy(chat)
        run.messages, run.steps = list(snapshot), []
        run._first_usage = run.usage  # type: ignore[attr-defined]
        if run.show is None:  # its steps are shown only if asked for (show=True)
            run.show = False
        return run

    def joined() -> tuple[Any, Any]:
        """(the account of `chat`'s own budget shared by its runs in flight, or None; the token that
        puts it after the accounts of the Chats running this one)."""
        if not chat.budget:
            return None, None
        with _LIVE:
            live = chat.__dict__.get("_live")
            if live is None or live[0].budget != chat.budget:
                live = chat.__dict__["_live"] = [Account(dict(chat.budget), chat.usage), 0]
            live[1] += 1
        return live, _ACCOUNTS.set((*_ACCOUNTS.get(), live[0]))

    def left(live: Any, token: Any) -> None:
        if live is None:
            return
        _ACCOUNTS.reset(token)
        with _LIVE:
            live[1] -= 1
            if not live[1] and chat.__dict__.get("_live") is live:
                del chat.__dict__["_live"]

    def settle(run: Any, spent: list[Usage]) -> None:
        total = Usage()
        for usage in spent:
            total = total + usage
        new_steps = run.usage.steps[len(run._first_usage.steps):]
        chat.usage = dataclasses.replace(chat.usage + total, steps=chat.usage.steps + tuple(new_steps))
        chat.messages, chat.steps = run.messages, run.steps
        outer = _SPENT.get()
        if outer is not None:
            outer.append(total)

    if chat.endpoint.is_async:
        async def run_task(task: str) -> str:
            run, spent = worker(), []
            token, (live, accounts) = _SPENT.set(spent), joined()
            try:
                return str(await run.acall(task))
            finally:
                left(live, accounts)
                _SPENT.reset(token)
                settle(run, spent)
    else:
        def run_task(task: str) -> str:  # type: ignore[misc]
            run, spent = worker(), []
            token, (live, accounts) = _SPENT.set(spent), joined()
            try:
                return str(run(task))
            finally:
                left(live, accounts)
                _SPENT.reset(token)
                settle(run, spent)

    run_task.__doc__ = (description + "\n\nArgs:\n    task: the task in full: what to do and everything "
                        "needed to do it")
    run_task.__name__ = run_task.__qualname__ = name
    return Tool.from_function(run_task, name=name, description=description)


_LIVE = threading.Lock()  # guards the `_live` accounts of Chats run as tools


__all__ = ["as_tool"]
