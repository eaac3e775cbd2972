"""What a wave's end records: pure functions over features and waves, no I/O.

The wave loop (``_engine``) decides when a join happens; this module says what it holds: which
features completed, failed, were cancelled, and which features of later waves are blocked.

Blocked features, in the two modes of DESIGN §3:
- by default, a failed or cancelled feature stops the mission after its wave: every feature of
  a later wave that is not completed is blocked;
- with ``keep_going`` (like ``make -k``), only the features downstream of a failure are blocked:
  those with a blocker (``blocked_by``, transitively) that failed, was cancelled or is itself
  blocked. A cancellation still stops everything.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ._clock import now_rfc3339
from ._models import Feature, MissionStatus, WaveJoin

__all__ = ["blocked_downstream", "final_status", "first_unfinished", "join_record"]

_ENDED_BADLY = ("failed", "cancelled")


def first_unfinished(features: list[Feature], waves: list[list[str]], joins: list[WaveJoin]) -> int:
    """Index of the first wave not cleanly joined or with a feature not completed.

    A wave whose features all completed but whose join was never recorded (a crash, or a join
    that failed) runs again: its completed features are not rerun, but they are merged.
    """
    done = {f.id for f in features if f.status == "completed"}
    for index, wave in enumerate(waves):
        joined = index < len(joins) and not (joins[index].failed_ids or joins[index].cancelled_ids)
        if not joined or not done.issuperset(wave):
            return index
    return len(waves)


def blocked_downstream(features: Iterable[Feature], waves: Sequence[Sequence[str]]) -> set[str]:
    """The features not completed that have a failed, cancelled or blocked blocker.

    *waves* are in topological order (``_plan`` checks it), so one pass settles the closure.
    """
    by_id = {feature.id: feature for feature in features}
    bad = {i for i, feature in by_id.items() if feature.status in _ENDED_BADLY}
    blocked: set[str] = set()
    for wave in waves:
        for feature_id in wave:
            feature = by_id[feature_id]
            if feature.status == "completed" or feature_id in bad:
                continue
            if any(b in bad or b in blocked for b in feature.blocked_by):
                blocked.add(feature_id)
    return blocked


def join_record(
    features: list[Feature],
    waves: Sequence[Sequence[str]],
    number: int,
    started: str,
    *,
    keep_going: bool = False,
) -> WaveJoin:
    """The join of wave *number* (1-based) of *waves*."""
    by_id = {f.id: f for f in features}
    ids, later = list(waves[number - 1]), waves[number:]

    def having(status: str) -> list[str]:
        return sorted(i for i in ids if by_id[i].status == status)

    completed, failed, cancelled = having("completed"), having("failed"), having("cancelled")
    waiting = [i for wave in later for i in wave if by_id[i].status != "completed"]
    if cancelled or (failed and not keep_going):
        blocked = sorted(waiting)
    elif keep_going:
        downstream = blocked_downstream(features, waves)
        blocked = sorted(i for i in waiting if i in downstream)
    else:
        blocked = []
    summary = (
        f"wave {number} joined {len(ids)} feature(s), "
        f"{len(completed)} completed, {len(failed)} failed"
    )
    if cancelled:
        summary += f", {len(cancelled)} cancelled"
    if blocked:
        summary += f", {len(blocked)} downstream blocked"
    return WaveJoin(
        wave=number,
        feature_ids=sorted(ids),
        completed_ids=completed,
        failed_ids=failed,
        cancelled_ids=cancelled,
        blocked_ids=blocked,
        started_at=started,
        completed_at=now_rfc3339(),
        summary=summary,
    )


def final_status(features: list[Feature], cancelled: bool) -> MissionStatus:
    if cancelled:
        return "cancelled"
    statuses = {f.status for f in features}
    if statuses <= {"completed"}:
        return "completed"
    if "completed" not in statuses:
        return "failed"
    return "partial"
