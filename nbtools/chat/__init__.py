"""The agent loop: `Chat` over a provider's own SDK client (`loop`), the records of its steps
(`steps`) and their notebook view (`display`). Provider shapes live in `nbtools.formats.turns`."""

from __future__ import annotations

from .loop import Chat, ChatInterrupted, MaxStepsReached
from .spend import BudgetExceeded
from .steps import CallRecord, Step, Usage

__all__ = ["Chat", "MaxStepsReached", "ChatInterrupted", "BudgetExceeded", "CallRecord", "Step", "Usage"]
