"""What a Chat spends: prices (per million tokens) → the cost of a step, and the budget that stops
the loop.

`prices={model: {"input": ..., "output": ..., "cache_read": ..., "cache_write": ...}}`: dollars (or
any currency) per million tokens. The input price applies to uncached input (all input minus cache
reads and writes); a missing cache price is the input price. `budget={"tokens": N}` counts input
and output tokens together; `budget={"cost": X}` needs the chat's model priced.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import math
import threading
from typing import Any, Iterator
from contextlib import asynccontextmanager, contextmanager

from ..errors import NbtoolsError
from ..formats.turns import Usage

# The usage of Chats called while another Chat runs its tools (a sub-agent: `as_tool`), collected
# for the caller, whose usage, cost and budget they count in.
_SPENT: contextvars.ContextVar[list | None] = contextvars.ContextVar("nbtools_chat_spent", default=None)

# The budgets a request made here must respect: the `Account`s of the budgeted Chats whose tools
# run this code (outermost first). Empty outside a sub-agent.
_ACCOUNTS: contextvars.ContextVar[tuple] = contextvars.ContextVar("nbtools_chat_accounts", default=())

PRICE_KEYS = ("input", "output", "cache_read", "cache_write")
BUDGET_KEYS = ("tokens", "cost")


class BudgetExceeded(NbtoolsError):
    """The chat's budget (`budget={"tokens": N}` or `{"cost": X}`) was used up.

    Fields: `budget` (the budget), `usage` (the chat's total usage), `text` (what the last reply
    said besides its calls). Calls still pending were answered "not run" in the history, so the
    conversation stays valid: raise the budget (`chat.budget = {...}`) and call the chat again.
    """

    def __init__(self, budget: dict, usage: Usage, text: str = "", *, caller: bool = False):
        self.budget, self.usage, self.text = budget, usage, text
        spent = f"{usage.tokens} tokens" + (f", cost {usage.cost:.6g}" if usage.cost is not None else "")
        if caller:  # the budget of a Chat that runs this one as a tool (a sub-agent), or of its other runs
            super().__init__(f"not run: the budget {budget} of the chat running this sub-agent is used up "
                             f"({spent}, its sub-agents included); no request was sent. Raise that chat's "
                             "budget (chat.budget = {...}) and call it again to go on")
            return
        super().__init__(f"the chat's budget {budget} is used up ({spent}); pending tool calls were not run. "
                         "Raise it (chat.budget = {...}) and call the chat again to go on")


class TurnRefused(NbtoolsError):
    """A synchronous request could not take its turn (see `Turn.acquire`): it was not sent."""


class Turn:
    """The turn of the requests under one budget: one at a time, whoever holds it (a thread, or a
    task of an event loop) and whoever waits. A thread waits blocked; a task waits on a future of
    its own loop, which goes on running. A thread cannot wait for a task of the very loop it is
    running (a synchronous Chat run as a tool of an async Chat, on the loop's thread: that task
    could never go on): then `acquire` raises `TurnRefused` at once, and the request is not sent."""

    __slots__ = ("_guard", "_holder", "_waiters")

    def __init__(self) -> None:
        self._guard = threading.Condition(threading.Lock())
        self._holder: Any = None  # None (free), the loop of the task holding it, or _THREAD
        self._waiters: list[tuple[Any, Any]] = []  # (loop, future) of the tasks waiting

    def acquire(self) -> None:
        """Take the turn from a thread (blocking); TurnRefused when a task of this thread's own
        running loop holds it."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        with self._guard:
            while self._holder is not None:
                if loop is not None and self._holder is loop:
                    raise TurnRefused(
                        "not run: another request under the same budget is in flight on this thread's event loop, "
                        "and this synchronous chat, run on that loop's thread, cannot wait for it without stopping "
                        "it; give the sub-agent an async client (or run it from a thread)")
                self._guard.wait()
            self._holder = _THREAD

    async def aacquire(self) -> None:
        """Take the turn from a task, waiting without blocking its loop."""
        loop = asyncio.get_running_loop()
        while True:
            with self._guard:
                if self._holder is None:
                    self._holder = loop
                    return
                future = loop.create_future()
                self._waiters.append((loop, future))
            try:
                await future
            except BaseException:
                with self._guard:
                    if (loop, future) in self._waiters:
                        self._waiters.remove((loop, future))
                if future.done() and not future.cancelled():  # woken while cancelled: wake another
                    self._wake()
                raise

    def release(self) -> None:
        with self._guard:
            self._holder = None
            self._guard.notify_all()
        self._wake()

    def _wake(self) -> None:
        """Wake the waiting tasks (each on its own loop; they check again which one takes it)."""
        with self._guard:
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            try:
                loop.call_soon_threadsafe(_set, future)
            except RuntimeError:  # its loop is closed: nobody waits there any more
                pass


_THREAD: Any = object()  # `Turn._holder` when a thread holds it


def _set(future: Any) -> None:
    if not future.done():
        future.set_result(None)


class Account:
    """What a budgeted Chat has spent while Chats run by its tools (sub-agents, maybe in parallel)
    make requests: `base` (its usage when they started) plus `spent` (each of their replies'
    usage, added as it arrives, not when they end). A request under accounts takes its turn
    (`turn`/`aturn`, a `Turn`: one request of the tree at a time, so parallel sub-agents' requests
    go one after another and cannot all start from the same amount), checks them (`used_up`) and
    adds its reply to them (`charge`): a budget is passed by at most the one request that found it
    not yet used up."""

    __slots__ = ("budget", "base", "spent", "lock")

    def __init__(self, budget: dict[str, float], base: Usage):
        self.budget, self.base, self.spent = budget, base, Usage()
        self.lock = Turn()  # the turn of the requests under this account (the outermost one's)

    def total(self) -> Usage:
        return self.base + self.spent


def used_up(accounts: tuple) -> Account | None:
    """The first of `accounts` whose budget is used up, or None."""
    for account in accounts:
        if over(account.budget, account.total()):
            return account
    return None


def charge(accounts: tuple, usage: Usage) -> None:
    """Add one reply's usage to every account (inside the request's turn)."""
    step = Usage(usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens,
                 usage.cost)
    for account in accounts:
        account.spent = account.spent + step


@contextmanager
def turn(accounts: tuple) -> Iterator[None]:
    """A synchronous request's turn among the requests under `accounts` (see `Account`, `Turn`)."""
    lock = accounts[0].lock
    lock.acquire()
    try:
        yield
    finally:
        lock.release()


@asynccontextmanager
async def aturn(accounts: tuple) -> Any:
    """An async request's turn among the requests under `accounts`: waits for the request in
    flight (of this loop, another loop or a thread) without blocking the loop."""
    lock = accounts[0].lock
    await lock.aacquire()
    try:
        yield
    finally:
        lock.release()


def check_prices(prices: Any) -> dict[str, dict[str, float]]:
    """`prices=` checked: a dict of model name → a dict of per-million prices (input and output required)."""
    if prices is None:
        return {}
    if not isinstance(prices, dict):
        raise TypeError(f"prices=: expected {{model: {{'input': ..., 'output': ...}}}} (per million tokens); "
                        f"got a {type(prices).__name__}")
    checked = {}
    for model, table in prices.items():
        if not isinstance(table, dict) or not {"input", "output"} <= set(table) or set(table) - set(PRICE_KEYS):
            raise ValueError(f"prices[{model!r}]: expected a dict with 'input' and 'output' (and optionally "
                             f"'cache_read', 'cache_write'), per million tokens; got {table!r}")
        for key, value in table.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ValueError(f"prices[{model!r}][{key!r}]: a price is a number >= 0; got {value!r}")
        checked[model] = {key: float(value) for key, value in table.items()}
    return checked


def check_budget(budget: Any, model: str, prices: dict) -> dict[str, float]:
    """`budget=` checked: {"tokens": N} and/or {"cost": X}; a cost budget needs the model's prices."""
    if budget is None:
        return {}
    if not isinstance(budget, dict) or not budget or set(budget) - set(BUDGET_KEYS):
        raise ValueError(f"budget=: expected {{'tokens': N}} or {{'cost': X}} (or both); got {budget!r}")
    for key, value in budget.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"budget[{key!r}]: a number >= 0; got {value!r}")
    if "cost" in budget and model not in prices:
        raise ValueError(f"budget={{'cost': ...}} needs the model's prices: pass prices={{{model!r}: "
                         "{'input': ..., 'output': ...}} (per million tokens)")
    return dict(budget)


def priced(usage: Usage, table: dict[str, float] | None) -> Usage:
    """`usage` with its cost filled in from a price table (unchanged without one)."""
    if not table:
        return usage
    uncached = max(usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens, 0)
    cost = (uncached * table["input"] + usage.output_tokens * table["output"]
            + usage.cache_read_tokens * table.get("cache_read", table["input"])
            + usage.cache_write_tokens * table.get("cache_write", table["input"])) / 1_000_000
    return dataclasses.replace(usage, cost=cost)


def over(budget: dict[str, float], usage: Usage) -> bool:
    """Whether `usage` has reached the budget (a budget is used up once spending reaches it)."""
    if not budget:
        return False
    return ("tokens" in budget and usage.tokens >= budget["tokens"]) or \
        ("cost" in budget and (usage.cost or 0.0) >= budget["cost"])


__all__ = ["BudgetExceeded", "TurnRefused", "Turn", "Account", "check_prices", "check_budget", "priced", "over", "used_up", "charge",
           "turn", "aturn", "PRICE_KEYS"]
