"""What an attempt spent, as mission.json records it: `AttemptUsage`, summed into `UsageTotal`.

Usage is keyed by attempt (its stage and number): recording the same attempt twice (a resume
that reads the same log again) replaces the record, never adds to it. An attempt whose usage
could not be read is *unknown*: counted in ``UsageTotal.unknown``, never taken as zero. A sum
field is None when no attempt reported it (codex reports tokens, not a cost): None is "not
known", 0 is "known to be nothing". Token counts follow one meaning whatever the agent:
``input_tokens`` are all the tokens the model read, ``cached_input_tokens`` the part of them
served from a prompt cache, ``output_tokens`` all it wrote (its reasoning included).

Every figure has bounds (``records._usagelimits``), held by the models themselves, so that
every way in (a usage file, an agent's output, a record written before the bounds or edited
by hand) meets them: an attempt's figure outside them (``Infinity``,
``1e308`` dollars, a count of 400 digits) makes that attempt's usage unknown with the reason,
and a sum's reads as not known (None), one of its attempts at least unknown. So no sum
overflows, and no view meets a number it cannot print. The usage file's own model refuses
such a figure (the reason names it).

Decision: docs/decisions/0509-usage-and-budgets.md
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ._usagelimits import (
    FIGURES,
    MAX_COST_USD,
    MAX_SUMMED,
    MAX_TOKENS,
    MAX_TOTAL_COST_USD,
    MAX_TOTAL_TOKENS,
    bounds_words,
    figures_out_of_bounds,
)

__all__ = [
    "USAGE_SCHEMA",
    "AttemptUsage",
    "UsageFile",
    "UsageSource",
    "UsageStage",
    "UsageTotal",
    "add_usage",
    "sum_usage",
    "usage_problem",
]

USAGE_SCHEMA = "rho.usage/v1"
UsageStage = Literal["task", "resolve", "verify", "fix", "plan"]
# Where an attempt's usage was read: its $RHO_USAGE_FILE, its agent's report, or both (each
# figure then the larger of the two).
UsageSource = Literal["usage_file", "agent", "usage_file_and_agent"]
# Dollars are summed to the micro-dollar: the same attempts give the same bytes in any order.
_COST_DIGITS = 6

# The figures of one attempt, and of a sum of attempts (``records._usagelimits``).
TokenCount = Annotated[int, Field(ge=0, lt=MAX_TOKENS)]
Dollars = Annotated[float, Field(ge=0, lt=MAX_COST_USD, allow_inf_nan=False)]
TotalTokens = Annotated[int, Field(ge=0, lt=MAX_TOTAL_TOKENS)]
TotalDollars = Annotated[float, Field(ge=0, lt=MAX_TOTAL_COST_USD, allow_inf_nan=False)]
Summed = Annotated[int, Field(ge=0, lt=MAX_SUMMED)]


class UsageFile(BaseModel):
    """The ``rho.usage/v1`` object a task (or its wrapper) writes to ``$RHO_USAGE_FILE``.

    Every field is optional; ``schema_version``, when given, must be ``rho.usage/v1``. Other
    keys are refused: a misspelt ``cost`` must not pass for a reading of nothing.
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    schema_version: Literal["rho.usage/v1"] | None = None
    input_tokens: TokenCount | None = None
    output_tokens: TokenCount | None = None
    cached_input_tokens: TokenCount | None = None
    # Strict: an int is a number of dollars too, a bool is not.
    cost_usd: Dollars | None = None
    model: str | None = Field(default=None, max_length=200)


class AttemptUsage(BaseModel):
    """The usage of one attempt of one stage: a task's, its resolver's, a join's checks or
    fix, the planner's.

    ``source`` says where it was read: ``usage_file`` (``$RHO_USAGE_FILE``), ``agent`` (the
    agent profile's reader over the attempt's output, ``agent`` naming the profile),
    ``usage_file_and_agent`` (both said: each figure is the larger), or None: unknown, with
    ``problem`` saying why. ``stopped_by_budget``: the agent's own budget cap
    (claude's ``--max-budget-usd``) ended it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    stage: UsageStage = "task"
    # The join whose checks or fix it was (None: a feature's or the planner's attempt).
    wave: int | None = Field(default=None, ge=1)
    attempt: int = Field(ge=1)
    source: UsageSource | None = None
    agent: str | None = None
    input_tokens: TokenCount | None = None
    output_tokens: TokenCount | None = None
    cached_input_tokens: TokenCount | None = None
    cost_usd: Dollars | None = None
    model: str | None = None
    stopped_by_budget: bool = False
    problem: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _unknown_out_of_bounds(cls, data: Any) -> Any:
        # What was read (or recorded before the bounds) said an impossible figure: the
        # attempt's usage is unknown, and the reason names it (never its hundreds of digits).
        wrong = figures_out_of_bounds(data, total=False)
        if not wrong:
            return data
        problem = f"{_said_by(data)} reported out of bounds: {', '.join(map(bounds_words, wrong))}"
        return {**data, **dict.fromkeys(FIGURES), "source": None, "problem": problem}

    @property
    def known(self) -> bool:
        """Whether anything of its usage could be read."""
        return self.source is not None

    @property
    def key(self) -> tuple[str, int, int]:
        """What names the attempt: its stage, its wave (0: none) and its number."""
        return (self.stage, self.wave or 0, self.attempt)


def _said_by(data: Mapping[str, Any]) -> str:
    """Who reported the figures of a record *data*, in a reason's words."""
    source, agent = data.get("source"), data.get("agent")
    agent = agent if isinstance(agent, str) else "the agent"
    said_by = {
        "usage_file": "$RHO_USAGE_FILE",
        "agent": agent,
        "usage_file_and_agent": f"$RHO_USAGE_FILE or {agent}",
    }
    return said_by.get(source, "the record") if isinstance(source, str) else "the record"


class UsageTotal(BaseModel):
    """The sum of attempts' usage (a feature's, a join's, the mission's).

    ``attempts`` counts the attempts summed, ``unknown`` those of them whose usage could not
    be read; a field is None when none of the known ones reported it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    cost_usd: TotalDollars | None = None
    input_tokens: TotalTokens | None = None
    output_tokens: TotalTokens | None = None
    cached_input_tokens: TotalTokens | None = None
    attempts: Summed = 0
    unknown: Summed = 0

    @model_validator(mode="before")
    @classmethod
    def _not_known_out_of_bounds(cls, data: Any) -> Any:
        # No sum of bounded records leaves its bounds: a mission.json written before the
        # bounds, or edited by hand, holds this one. Its figure is not known, and at least
        # one of the attempts it sums is unknown: the one that reported it.
        wrong = [name for name in figures_out_of_bounds(data, total=True) if name in FIGURES]
        if not wrong:
            return data  # (attempts or unknown out of bounds: the validation refuses them)
        unknown = data.get("unknown")
        at_least = max(unknown, 1) if isinstance(unknown, int) else unknown
        return {**data, **dict.fromkeys(wrong), "unknown": at_least}

    @property
    def tokens(self) -> int | None:
        """Tokens read and written (what ``--budget-tokens`` counts), None when unknown."""
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)


def usage_problem(exc: ValidationError) -> str:
    """The first thing *exc* found wrong with a usage record, in one line:
    ``input_tokens: input should be less than 1000000000000000``."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "the record"
    message = str(first["msg"])
    return f"{where}: {message[:1].lower()}{message[1:]}"


_SUMMED = ("input_tokens", "output_tokens", "cached_input_tokens")


def sum_usage(records: Iterable[AttemptUsage]) -> UsageTotal:
    """The total of *records*, in the order of their keys (the same bytes in any order)."""
    ordered = sorted(records, key=lambda record: record.key)
    return add_usage(UsageTotal(), *(_as_total(record) for record in ordered))


def add_usage(*totals: UsageTotal | None) -> UsageTotal:
    """The sum of *totals* (None: nothing to add)."""
    sums: dict[str, int | None] = dict.fromkeys(_SUMMED)
    cost: float | None = None
    attempts = unknown = 0
    for total in totals:
        if total is None:
            continue
        attempts += total.attempts
        unknown += total.unknown
        for name in _SUMMED:
            value = getattr(total, name)
            if value is not None:
                sums[name] = (sums[name] or 0) + value
        if total.cost_usd is not None:
            cost = round((cost or 0.0) + total.cost_usd, _COST_DIGITS)
    return UsageTotal(cost_usd=cost, attempts=attempts, unknown=unknown, **sums)


def _as_total(record: AttemptUsage) -> UsageTotal:
    if not record.known:
        return UsageTotal(attempts=1, unknown=1)
    cost = None if record.cost_usd is None else round(record.cost_usd, _COST_DIGITS)
    return UsageTotal(
        cost_usd=cost,
        input_tokens=record.input_tokens,
        output_tokens=record.output_tokens,
        cached_input_tokens=record.cached_input_tokens,
        attempts=1,
    )
