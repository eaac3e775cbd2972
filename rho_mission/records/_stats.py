"""What integration cost, and how well it went: counts of a join, a mission, many missions.

Pure functions of missions as mission.json holds them (JSON objects: the full CLI passes its
``model_dump(mode="json")``, the quick lane and the page the file's objects), standard library
only. Derived, never stored: a mission written by an older rho gets them too, and mission.json
keeps its bytes.

Per join (``join_stats``):

- ``merges``: the join's features whose own work was merged into the integration branch
  (completed with a commit; a feature that changed nothing merges nothing);
- ``conflicts``: its features whose merge conflicted (``conflicted_ids``), by ``Conflict.outcome``:
  ``driver``, ``resolved``, ``replayed``, ``failed`` (an outcome this rho does not know is counted
  in ``total`` and under its own name);
- ``checks``: runs of the verify stage's checks (``Verification.attempts``), how many
  ``failed`` (``Verification.failed_runs``, the engine's count; for a join recorded before it
  was kept, every ended run but a passed verification's last) and ``passed`` (the others that
  ended: a bisection's passing probes are passed runs),
  the runs a bisection spent (``bisect``: ``bisect_runs``) and the ``flaky`` ones;
- ``culprits``: the features its bisection found to break the checks; ``fixes``: fix runs.

Per mission (``mission_stats``) the joins' sums, and ``culprits_landed`` (features sent back as
culprits, ``culprit_replays > 0``, that completed since), ``landed`` (features this mission
completed: ``attempts > 0``), ``agent_runs`` (every run of an agent or command for its tasks: the
task attempts of every feature, replays included, plus the resolver's runs and the fix runs,
the failed ones too: what landing cost), ``agent_runs_per_landed`` (two decimals; None: nothing
landed) and ``cost_usd`` (the mission's recorded dollars; None: unknown).

Across missions (``repository_stats``): the sums and the rates a person reads; a rate is None
when its denominator is 0.

Decision: docs/decisions/0520-integration-stats.md
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "CONFLICT_OUTCOMES",
    "graph_counts",
    "integration_words",
    "join_stats",
    "mission_stats",
    "repository_stats",
]

JsonObject = Mapping[str, Any]

#: The outcomes of a conflicted merge, in the order the views show them; all but ``failed``
#: landed without a person.
CONFLICT_OUTCOMES = ("driver", "resolved", "replayed", "failed")
_ENDED_CHECK = frozenset({"passed", "failed"})


def join_stats(join: JsonObject, features: Mapping[str, JsonObject]) -> dict[str, Any]:
    """The integration counts of *join*; *features* are the mission's features by id."""
    ids = _strings(join.get("completed_ids"))
    merged = sum(1 for i in ids if _work_commit(features.get(i)))
    checked = _object(join.get("verification"))
    return {
        "wave": _count(join.get("wave")),
        "merges": merged,
        "conflicts": _conflicts(features.get(i) for i in _strings(join.get("conflicted_ids"))),
        "checks": _checks(checked),
        "culprits": len(_strings(checked.get("culprit_ids"))),
        "fixes": _count(checked.get("fix_attempts")),
    }


def mission_stats(mission: JsonObject) -> dict[str, Any]:
    """The integration counts of *mission*: its joins' sums and its own (see the module), with
    each join's under ``joins``."""
    features = [_object(f) for f in _list(mission.get("features"))]
    by_id = {str(f.get("id")): f for f in features}
    joins = [join_stats(_object(j), by_id) for j in _list(mission.get("wave_joins"))]
    landed = sum(1 for f in features if _landed(f))
    runs = sum(_count(f.get("attempts")) for f in features)
    runs += sum(_count(_object(f.get("conflict")).get("resolve_attempts")) for f in features)
    runs += sum(join["fixes"] for join in joins)
    totals = _summed(joins)
    return {
        **totals,
        "culprits_landed": sum(1 for f in features if _culprit_landed(f)),
        "landed": landed,
        "agent_runs": runs,
        "agent_runs_per_landed": _ratio(runs, landed),
        "cost_usd": _cost(mission),
        "joins": joins,
    }


def graph_counts(stats: JsonObject) -> dict[str, int]:
    """The counts of a mission's *stats* its graph node carries, only those that are not 0:
    conflicts by outcome, bisection runs, culprits and the culprits that landed (a mission
    without any keeps its graph's bytes; merges and check runs are in its other nodes)."""
    conflicts = _object(stats.get("conflicts"))
    flat = {f"conflict_{o}_count": _count(conflicts.get(o)) for o in CONFLICT_OUTCOMES}
    flat["bisect_run_count"] = _count(_object(stats.get("checks")).get("bisect"))
    flat["culprit_count"] = _count(stats.get("culprits"))
    flat["culprit_landed_count"] = _count(stats.get("culprits_landed"))
    return {name: value for name, value in flat.items() if value}


def integration_words(stats: JsonObject) -> str | None:
    """A join's or a mission's *stats* in one line of words (None: nothing was integrated);
    only what is not 0 is named."""
    parts = [_plural(_count(stats.get("merges")), "merge")]
    conflicts = _object(stats.get("conflicts"))
    if _count(conflicts.get("total")):
        named = [f"{conflicts[o]} {o}" for o in CONFLICT_OUTCOMES if _count(conflicts.get(o))]
        parts.append(f"{_plural(conflicts['total'], 'conflict')} ({', '.join(named)})")
    checks = _object(stats.get("checks"))
    if _count(checks.get("runs")) or _count(checks.get("bisect")):
        named = [f"{checks[n]} {n}" for n in ("passed", "failed", "flaky") if _count(checks.get(n))]
        if _count(checks.get("bisect")):
            named.append(f"{checks['bisect']} for bisection")
        parts.append(f"{_plural(_count(checks.get('runs')), 'check run')} ({', '.join(named)})")
    culprits = _count(stats.get("culprits"))
    if culprits:
        landed = _count(stats.get("culprits_landed"))
        after = f" ({landed} landed after replay)" if "culprits_landed" in stats else ""
        parts.append(_plural(culprits, "culprit") + after)
    if _count(stats.get("fixes")):
        parts.append(_plural(stats["fixes"], "fix run"))
    per = stats.get("agent_runs_per_landed")
    if isinstance(per, int | float):
        parts.append(f"{per:g} agent run{'' if per == 1 else 's'} per landed task")
    if parts == ["0 merges"]:
        return None
    return ", ".join(parts)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def repository_stats(missions: Sequence[JsonObject]) -> dict[str, Any]:
    """The integration of *missions* (each a ``mission_stats``) summed, with the rates: of
    conflicts per merge tried (``conflict_rate``), of conflicts that landed without a person
    (``conflicts_landed_rate``), of failed check runs (``check_failure_rate``), of culprits per
    merge (``culprit_rate``), and per landed task the dollars (``cost_per_landed``: over the
    missions whose cost is known) and the agent runs (``agent_runs_per_landed``)."""
    totals = _summed(missions)
    landed = sum(_count(m.get("landed")) for m in missions)
    runs = sum(_count(m.get("agent_runs")) for m in missions)
    costed = [m for m in missions if isinstance(m.get("cost_usd"), int | float)]
    conflicts, checks = totals["conflicts"], totals["checks"]
    unattended = conflicts["total"] - conflicts["failed"]
    return {
        "missions": len(missions),
        **totals,
        "culprits_landed": sum(_count(m.get("culprits_landed")) for m in missions),
        "landed": landed,
        "agent_runs": runs,
        "conflict_rate": _ratio(conflicts["total"], totals["merges"] + conflicts["failed"]),
        "conflicts_landed": unattended,
        "conflicts_landed_rate": _ratio(unattended, conflicts["total"]),
        "check_failure_rate": _ratio(checks["failed"], checks["runs"]),
        "culprit_rate": _ratio(totals["culprits"], totals["merges"]),
        "cost_usd": round(sum(m["cost_usd"] for m in costed), 6) if costed else None,
        "cost_per_landed": _cost_per_landed(costed),
        "agent_runs_per_landed": _ratio(runs, landed),
    }


def _summed(parts: Sequence[JsonObject]) -> dict[str, Any]:
    conflicts = {"total": 0, **dict.fromkeys(CONFLICT_OUTCOMES, 0)}
    checks = dict.fromkeys(("runs", "passed", "failed", "bisect", "flaky"), 0)
    for part in parts:
        for name, value in _object(part.get("conflicts")).items():
            conflicts[name] = conflicts.get(name, 0) + _count(value)
        for name in checks:
            checks[name] += _count(_object(part.get("checks")).get(name))
    return {
        "merges": sum(_count(p.get("merges")) for p in parts),
        "conflicts": conflicts,
        "checks": checks,
        "culprits": sum(_count(p.get("culprits")) for p in parts),
        "fixes": sum(_count(p.get("fixes")) for p in parts),
    }


def _conflicts(features: Iterable[JsonObject | None]) -> dict[str, int]:
    counts = {"total": 0, **dict.fromkeys(CONFLICT_OUTCOMES, 0)}
    for feature in features:
        conflict = _object((feature or {}).get("conflict"))
        if not conflict:
            continue
        outcome = str(conflict.get("outcome", "failed"))
        counts["total"] += 1
        counts[outcome] = counts.get(outcome, 0) + 1
    return counts


def _checks(checked: JsonObject) -> dict[str, int]:
    runs = _count(checked.get("attempts"))
    status = checked.get("status")
    # A run still going, or cancelled, has not failed: only the runs that ended count.
    ended = runs if status in _ENDED_CHECK else max(runs - 1, 0)
    failed_runs = checked.get("failed_runs")
    if isinstance(failed_runs, int) and not isinstance(failed_runs, bool):
        failed = min(failed_runs, ended)  # counted by the engine: a bisection's passing probes too
    else:  # recorded before: every ended run but a passed verification's last
        failed = ended - (1 if status == "passed" and runs else 0)
    return {
        "runs": runs,
        "passed": ended - failed,
        "failed": failed,
        "bisect": _count(checked.get("bisect_runs")),
        "flaky": _count(checked.get("flaky")),
    }


def _landed(feature: JsonObject) -> bool:
    # Completed by this mission: a task completed before it (0 attempts) landed nothing here.
    return feature.get("status") == "completed" and _count(feature.get("attempts")) > 0


def _culprit_landed(feature: JsonObject) -> bool:
    return feature.get("status") == "completed" and _count(feature.get("culprit_replays")) > 0


def _work_commit(feature: JsonObject | None) -> bool:
    if feature is None or feature.get("status") != "completed":
        return False
    return bool(_object(feature.get("handoff")).get("commit_id"))


def _cost(mission: JsonObject) -> float | None:
    cost = _object(mission.get("usage")).get("cost_usd")
    return float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None


def _cost_per_landed(costed: Sequence[JsonObject]) -> float | None:
    landed = sum(_count(m.get("landed")) for m in costed)
    if not landed:
        return None
    return round(sum(float(m["cost_usd"]) for m in costed) / landed, 6)


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 2) if whole else None


def _count(value: object) -> int:
    # A hand-edited mission.json never breaks a view: what is no count counts 0.
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _object(value: object) -> JsonObject:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _strings(value: object) -> list[str]:
    return [str(item) for item in _list(value)]
