"""The event a notifier gets: what happened to a mission, in a few counts, as JSON.

Pure: built from the mission document alone. It says what ``rho mission show`` already says
on this machine in counts and ids, nothing more: the kind, the mission's id and status, its
features counted by outcome, what its attempts spent (``null``: unknown), the culprits' task ids
when a join found some, and the one command to type next. Never a prompt, a task's text or
command, an error's text, a path or a branch name: the event may leave the machine (a webhook).
Its bytes depend on the mission alone (keys sorted, no clock).

Decision: docs/decisions/0806-notifications.md
"""

from __future__ import annotations

import json
from typing import Any, Literal

from ..records._document import MissionDocument, WaveJoin
from ..records._usagelimits import MAX_COST_USD, MAX_TOKENS

__all__ = [
    "EVENT_SCHEMA",
    "EventKind",
    "culprit_event",
    "end_event",
    "event_bytes",
    "feature_counts",
    "higher_budget",
    "next_command",
]

EVENT_SCHEMA = "rho.notify/v1"
EventKind = Literal["mission_ended", "mission_stopped", "budget_reached", "culprit_found"]
# What a notifier sees of a mission's usage: the sums, never the models or the readers.
_COST_FIELDS = (
    "cost_usd",
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "attempts",
    "unknown",
)


def end_event(mission: MissionDocument) -> dict[str, Any]:
    """The event of a run that ended with *mission*'s status: ``mission_ended`` (completed),
    ``budget_reached`` (a budget stopped it), else ``mission_stopped``."""
    kind: EventKind = "mission_stopped"
    if mission.status == "completed":
        kind = "mission_ended"
    elif mission.budget_stop is not None and mission.status == "partial":
        kind = "budget_reached"
    return _event(kind, mission, next_command(mission))


def culprit_event(mission: MissionDocument, join: WaveJoin) -> dict[str, Any]:
    """The event of *join*'s bisection: the features it found to break the checks."""
    event = _event("culprit_found", mission, f"rho mission show {mission.id}")
    event["wave"] = join.wave
    event["culprits"] = sorted(join.verification.culprit_ids)
    return event


def event_bytes(event: dict[str, Any]) -> bytes:
    """*event* as the notifier reads it: JSON, keys sorted, one trailing newline."""
    return (json.dumps(event, sort_keys=True, indent=2) + "\n").encode()


def next_command(mission: MissionDocument) -> str:
    """The one command to type after a run of *mission* ended (its status decides)."""
    ident = mission.id
    if mission.budget_stop is not None and mission.status == "partial":
        flag = "--budget-usd" if mission.config.budget_usd is not None else "--budget-tokens"
        return f"rho mission resume {ident} {flag} {higher_budget(mission)}"
    if mission.status == "completed":
        return f"rho mission merge {ident}"
    if mission.status == "cancelled":
        return f"rho mission resume {ident}"
    return f"rho mission show {ident}"


def higher_budget(mission: MissionDocument) -> str:
    """Twice the budget that stopped *mission*: a value to edit, not a guess at what is left
    (at most the largest budget the option takes)."""
    config = mission.config
    if config.budget_usd is not None:
        return f"{min(config.budget_usd * 2, MAX_COST_USD):g}"
    return str(min((config.budget_tokens or 0) * 2, MAX_TOKENS))


def _event(kind: EventKind, mission: MissionDocument, next_: str) -> dict[str, Any]:
    return {
        "schema_version": EVENT_SCHEMA,
        "kind": kind,
        "mission": mission.id,
        "status": mission.status,
        "counts": feature_counts(mission),
        "cost": _cost(mission),
        "next": next_,
    }


def feature_counts(mission: MissionDocument) -> dict[str, int]:
    """Its features by outcome: ``completed``, ``failed``, ``cancelled``, ``blocked`` and
    ``not_run`` (pending, held back by a failure or cut short, as its joins list them), and
    ``pending`` (not reached yet); ``features`` all of them."""
    stopped: dict[str, str] = {}
    for join in mission.wave_joins:
        stopped.update(dict.fromkeys(join.not_run_ids, "not_run"))
        stopped.update(dict.fromkeys(join.blocked_ids, "blocked"))
    counts = dict.fromkeys(("completed", "failed", "cancelled", "blocked", "not_run"), 0)
    counts["pending"] = 0
    for feature in mission.features:
        outcome: str = feature.status
        if outcome in ("pending", "in_progress"):
            outcome = stopped.get(feature.id, "pending")
        counts[outcome] += 1
    counts["features"] = len(mission.features)
    return counts


def _cost(mission: MissionDocument) -> dict[str, Any] | None:
    total = mission.total_usage()
    if total is None:
        return None  # no attempt reported anything: unknown, never zero
    spent = total.model_dump(mode="json")
    return {name: spent.get(name) for name in _COST_FIELDS}
