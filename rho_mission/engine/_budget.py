"""Budgets (``--budget-usd``, ``--budget-tokens``): what a run may still spend, and the stop.

The keeper holds the mission's recorded spend, kept up to date as each attempt's usage is
read (an attempt's record replaces the one read before for it, so a number read twice counts
once). Before an attempt starts the loop asks `BudgetKeeper.reached`: at or over a budget, no
attempt starts, the running ones finish (``budget_hard``: they are stopped too) and the mission
ends ``partial`` with the reason, to be resumed with a higher budget. Attempts whose usage is
unknown add nothing: the views say how many there are.

Decision: docs/decisions/0509-usage-and-budgets.md
"""

from __future__ import annotations

from ..agents import PROFILES
from ..records._document import MissionConfig, MissionDocument
from ..records._missionwords import dollars
from ..records._usage import AttemptUsage, UsageTotal, sum_usage

__all__ = ["BudgetKeeper", "budget_note", "budget_warnings"]


def budget_note(mission_id: str, reason: str, config: MissionConfig) -> str:
    """The ``lastError`` of a task a budget kept from running (the store has it ``pending``)."""
    raise_it = "--budget-usd" if config.budget_usd is not None else "--budget-tokens"
    return (
        f"{reason}; 'rho mission resume {mission_id} {raise_it} ...' with a higher budget runs it"
    )


def budget_warnings(config: MissionConfig) -> list[str]:
    """What a budget run should know at its start: the tasks' agent reports no usage rho
    reads (only ``$RHO_USAGE_FILE`` then counts), or no cost for a dollar budget."""
    if config.budget_usd is None and config.budget_tokens is None:
        return []
    if config.agent is None:
        return [
            "the budget counts only attempts that write $RHO_USAGE_FILE: the tasks' command "
            "has no usage reader (name its agent with --agent claude|codex|gemini|aider)"
        ]
    agent = PROFILES.get(config.agent)
    if config.budget_usd is not None and agent is not None and agent.reports == "tokens":
        return [
            f"{config.agent} reports tokens, not a cost: --budget-usd counts only attempts "
            "that write a cost to $RHO_USAGE_FILE; --budget-tokens counts its tokens"
        ]
    return []


class BudgetKeeper:
    """The spend of one run's mission against its budgets (see the module)."""

    def __init__(self, mission: MissionDocument) -> None:
        config = mission.config
        self.usd = config.budget_usd
        self.tokens = config.budget_tokens
        self.hard = config.budget_hard
        self._cost = 0.0
        self._used_tokens = 0
        # What each owner (a feature, a join's checks, the planning) was last known to spend.
        self._owners: dict[str, tuple[float, int]] = {}
        for feature in mission.features:
            self.note(f"feature:{feature.id}", feature.usage)
        self.note_records("stages", mission.stage_usage)

    @property
    def active(self) -> bool:
        """Whether the mission has a budget at all."""
        return self.usd is not None or self.tokens is not None

    def note_records(self, owner: str, records: list[AttemptUsage]) -> None:
        """*owner*'s spend is now the sum of *records*."""
        self.note(owner, sum_usage(records) if records else None)

    def note(self, owner: str, total: UsageTotal | None) -> None:
        """*owner*'s spend is now *total* (its earlier one replaced)."""
        cost = (total.cost_usd or 0.0) if total is not None else 0.0
        tokens = (total.tokens or 0) if total is not None else 0
        old_cost, old_tokens = self._owners.get(owner, (0.0, 0))
        self._owners[owner] = (cost, tokens)
        self._cost += cost - old_cost
        self._used_tokens += tokens - old_tokens

    @property
    def spent_usd(self) -> float:
        """Dollars recorded so far (attempts whose cost is unknown add nothing)."""
        return max(0.0, round(self._cost, 6))

    def reached(self) -> str | None:
        """Why no attempt may start (``budget reached: $4.12 of $4.00``), or None."""
        return self._reached(self.spent_usd, self._used_tokens)

    def final_stop(self, stop: str, recorded: UsageTotal | None) -> str:
        """The stop line a run that a budget stopped ends with: *stop* with the figures of
        *recorded*, the mission's recorded spend at its end (the attempts running when the
        budget was reached finish and add theirs), so that the line and the usage agree."""
        cost = (recorded.cost_usd or 0.0) if recorded is not None else 0.0
        tokens = (recorded.tokens or 0) if recorded is not None else 0
        return self._reached(max(0.0, round(cost, 6)), tokens) or stop

    def _reached(self, cost: float, tokens: int) -> str | None:
        if self.usd is not None and cost >= self.usd:
            return f"budget reached: {dollars(cost)} of {dollars(self.usd)}"
        if self.tokens is not None and tokens >= self.tokens:
            return f"budget reached: {tokens:,} tokens of {self.tokens:,}"
        return None

    def left_usd(self) -> float | None:
        """What is left of the dollar budget (None: no dollar budget), never below zero."""
        if self.usd is None:
            return None
        return max(0.0, round(self.usd - self.spent_usd, 4))
