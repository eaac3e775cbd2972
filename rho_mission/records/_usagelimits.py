"""The bounds of a figure of usage: what an attempt may be recorded to have spent, and a sum.

A usage file and an agent's output are a task's writing: a count of 400 digits, ``Infinity``
or ``1e308`` dollars is read as easily as 1,200 tokens, and such a figure broke the float
arithmetic and the views downstream for ever after. So every figure has bounds, and one
outside them makes the attempt's usage *unknown* with the reason (``records._usage``), a
mission.json that holds one is refused when read, and a budget outside them is bad input:

- an attempt's count of tokens is a whole number from 0 below ``MAX_TOKENS`` (10**15: a
  thousand times the longest run a model could bill today, and below 2**53, so that the page
  and the SDKs read it exactly);
- an attempt's cost is a finite number of dollars from 0 below ``MAX_COST_USD`` (10**9);
- a sum (a feature's, a join's, a mission's) counts fewer than ``MAX_SUMMED`` attempts, each
  within those bounds, so it stays below ``MAX_TOTAL_TOKENS`` and ``MAX_TOTAL_COST_USD``:
  summing bounded figures can never overflow to ``inf``.

A budget (``--budget-usd``, ``--budget-tokens``) is above 0 and at most what one attempt may
report. The standard library only: the CLI's quick lane checks mission.json's figures here.

Decision: docs/decisions/0509-usage-and-budgets.md
"""

from __future__ import annotations

import math
from collections.abc import Mapping

__all__ = [
    "FIGURES",
    "MAX_COST_USD",
    "MAX_SUMMED",
    "MAX_TOKENS",
    "MAX_TOTAL_COST_USD",
    "MAX_TOTAL_TOKENS",
    "bounds_words",
    "budgets_within",
    "figures_out_of_bounds",
    "figures_within",
]

MAX_TOKENS = 10**15
MAX_COST_USD = 10**9
MAX_SUMMED = 10**15
MAX_TOTAL_TOKENS = MAX_TOKENS * MAX_SUMMED
MAX_TOTAL_COST_USD = MAX_COST_USD * MAX_SUMMED

_TOKENS = ("input_tokens", "output_tokens", "cached_input_tokens")
#: The figures of an attempt's usage, and of a sum's.
FIGURES = (*_TOKENS, "cost_usd")
# Per field: whether it is a whole number, and the bound it stays below.
_RECORD: dict[str, tuple[bool, int]] = {
    **dict.fromkeys(_TOKENS, (True, MAX_TOKENS)),
    "cost_usd": (False, MAX_COST_USD),
}
_TOTAL: dict[str, tuple[bool, int]] = {
    **dict.fromkeys(_TOKENS, (True, MAX_TOTAL_TOKENS)),
    "cost_usd": (False, MAX_TOTAL_COST_USD),
    "attempts": (True, MAX_SUMMED),
    "unknown": (True, MAX_SUMMED),
}


def figures_within(usage: object, *, total: bool) -> bool:
    """Whether every figure of *usage* (an ``AttemptUsage``, or with *total* a ``UsageTotal``,
    as mission.json holds it) is within its bounds; an absent or null one is, and so is
    anything that is no JSON object (the views check shapes)."""
    return not figures_out_of_bounds(usage, total=total)


def figures_out_of_bounds(usage: object, *, total: bool) -> list[str]:
    """The names of the figures of *usage* (see `figures_within`) out of their bounds."""
    if not isinstance(usage, Mapping):
        return []
    bounds = _TOTAL if total else _RECORD
    return [
        name
        for name, (whole, below) in bounds.items()
        if usage.get(name) is not None and not _within(usage[name], whole, below)
    ]


def budgets_within(config: Mapping[str, object]) -> bool:
    """Whether the budgets of a ``MissionConfig`` as mission.json holds it (absent or null:
    none) are what its model takes: dollars above 0 up to ``MAX_COST_USD``, tokens a whole
    number from 1 up to ``MAX_TOKENS``."""
    usd, tokens = config.get("budget_usd"), config.get("budget_tokens")
    usd_ok = usd is None or (_within(usd, False, MAX_COST_USD) or usd == MAX_COST_USD)
    tokens_ok = tokens is None or (_within(tokens, True, MAX_TOKENS) or tokens == MAX_TOKENS)
    return usd_ok and tokens_ok and usd != 0 and tokens != 0


def bounds_words(name: str) -> str:
    """The bounds of an attempt's figure *name*, with it: ``cost_usd (a finite number of
    dollars from 0 below 10**9)``."""
    whole, below = _RECORD[name]
    what = "a whole number" if whole else "a finite number of dollars"
    return f"{name} ({what} from 0 below 10**{len(str(below)) - 1})"


def _within(value: object, whole: bool, below: int) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if whole and not isinstance(value, int):
        return False
    # An int is compared as it is: float() of a 400-digit one would overflow.
    return (isinstance(value, int) or math.isfinite(value)) and 0 <= value < below
