"""What a Chat spends: prices (per million tokens) → the cost of a step, and the budget that stops
the loop.

`prices={model: {"input": ..., "output": ..., "cache_read": ..., "cache_write": ...}}`: dollars (or
any currency) per million tokens. The input price applies to uncached input (all input minus cache
reads and writes); a missing cache price is the input price. `budget={"tokens": N}` counts input
and output tokens together; `budget={"cost": X}` needs the chat's model priced.
"""

from __future__ import annotations

import contextvars
import dataclasses
import math
from typing import Any

from ..errors import NbtoolsError
from ..formats.turns import Usage

# The usage of Chats called while another Chat runs its tools (a sub-agent: `as_tool`), collected
# for the caller, whose usage, cost and budget they count in.
_SPENT: contextvars.ContextVar[list | None] = contextvars.ContextVar("nbtools_chat_spent", default=None)

PRICE_KEYS = ("input", "output", "cache_read", "cache_write")
BUDGET_KEYS = ("tokens", "cost")


class BudgetExceeded(NbtoolsError):
    """The chat's budget (`budget={"tokens": N}` or `{"cost": X}`) was used up.

    Fields: `budget` (the budget), `usage` (the chat's total usage), `text` (what the last reply
    said besides its calls). Calls still pending were answered "not run" in the history, so the
    conversation stays valid: raise the budget (`chat.budget = {...}`) and call the chat again.
    """

    def __init__(self, budget: dict, usage: Usage, text: str = ""):
        self.budget, self.usage, self.text = budget, usage, text
        spent = f"{usage.tokens} tokens" + (f", cost {usage.cost:.6g}" if usage.cost is not None else "")
        super().__init__(f"the chat's budget {budget} is used up ({spent}); pending tool calls were not run. "
                         "Raise it (chat.budget = {...}) and call the chat again to go on")


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


__all__ = ["BudgetExceeded", "check_prices", "check_budget", "priced", "over", "PRICE_KEYS"]
