"""What a run's attempts and stages spend, and the budget stop it leads to.

Every attempt's usage (a task's, a resolver's, a check's or a fix's) is kept in the mission and
journaled (numbers and digests only), and counted against the budgets (``_budget``). Once a
budget is reached the stop is recorded once, durably in the journal; with ``budget_hard`` the
running wave is stopped too (the runner's *stop_wave*). The runner asks `SpendKeeper.reached`
before any attempt starts.

Decision: docs/decisions/0509-usage-and-budgets.md
"""

from __future__ import annotations

from collections.abc import Callable

from graph import sha256_hex as digest

from ..records._clock import now_rfc3339_millis
from ..records._document import Feature, MissionDocument
from ..records._journal import Journal
from ..records._missionwords import dollars
from ..records._usage import AttemptUsage
from ._budget import BudgetKeeper

__all__ = ["SpendKeeper"]


class SpendKeeper:
    """The spend of one run and its budget stop (see the module)."""

    def __init__(
        self, mission: MissionDocument, journal: Journal, stop_wave: Callable[[], None]
    ) -> None:
        self.mission = mission
        self.journal = journal
        self.stop_wave = stop_wave
        self.budget = BudgetKeeper(mission)
        # What was left of the dollar budget when each feature's last attempt started.
        self.caps: dict[str, float | None] = {}

    def recount(self) -> None:
        """Count the mission's recorded spend anew (after a resume adopted a crashed run's)."""
        self.budget = BudgetKeeper(self.mission)

    def left_usd(self) -> float | None:
        """What is left of the dollar budget now (None: no dollar budget)."""
        return self.budget.left_usd()

    def cap(self, feature: Feature) -> float | None:
        """Note and return what is left of the dollar budget as *feature*'s attempt starts."""
        self.caps[feature.id] = self.budget.left_usd()
        return self.caps[feature.id]

    def note_feature_usage(self, feature: Feature, record: AttemptUsage) -> None:
        """Keep what an attempt of *feature* (its task's, its resolver's) spent."""
        feature.record_usage(record)
        self.budget.note(f"feature:{feature.id}", feature.usage)
        self._journal_usage(record, feature_id=feature.id)
        self._spent()

    def note_stage_usage(self, record: AttemptUsage) -> None:
        """Keep what a join's check or fix spent."""
        self.mission.record_stage_usage(record)
        self.budget.note_records("stages", self.mission.stage_usage)
        self._journal_usage(record, feature_id=None)
        self._spent()

    def _journal_usage(self, record: AttemptUsage, *, feature_id: str | None) -> None:
        # Numbers and the model's digest only (the journal is metadata).
        self.journal.record(
            "usage",
            now_rfc3339_millis(),
            feature_id=feature_id,
            stage=record.stage,
            wave=record.wave,
            attempt=record.attempt,
            source=record.source,
            agent=record.agent,
            cost_usd=record.cost_usd,
            input_tokens=record.input_tokens,
            output_tokens=record.output_tokens,
            cached_input_tokens=record.cached_input_tokens,
            model_sha256=digest(record.model) if record.model else None,
            stopped_by_budget=record.stopped_by_budget,
        )

    def _spent(self) -> None:
        """After a spend: once a budget is reached, say so (durably in the journal) and, with
        ``budget_hard``, stop the wave's running attempts."""
        if self.mission.budget_stop is not None or not self.budget.active:
            return
        reason = self.budget.reached()
        if reason is None:
            return
        self.mission.budget_stop = reason
        self.journal.record(
            "budget",
            now_rfc3339_millis(),
            durable=True,
            decision="stop",
            hard=self.budget.hard,
            spent_usd=self.budget.spent_usd,
            budget_usd=self.budget.usd,
            budget_tokens=self.budget.tokens,
        )
        if self.budget.hard:
            self.stop_wave()

    def reached(self) -> str | None:
        """Why no attempt may start now (a budget reached), or None."""
        if self.mission.budget_stop is not None:
            return self.mission.budget_stop
        if self.budget.active:
            self._spent()
        return self.mission.budget_stop

    def stopped_by_agent_budget(self, feature: Feature) -> str | None:
        """The reason when the agent's own budget cap ended *feature*'s last attempt."""
        last = [r for r in feature.attempt_usage if r.stage == "task"]
        if not last or last[-1].attempt != feature.attempts or not last[-1].stopped_by_budget:
            return None
        left = self.caps.get(feature.id)
        cap = f" (the {dollars(left)} left when it started)" if left is not None else ""
        reason = f"stopped by budget: the agent reached its --max-budget-usd{cap}"
        if self.mission.budget_stop is None:
            self.mission.budget_stop = self.budget.reached() or reason
        return reason
