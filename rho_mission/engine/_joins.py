"""What a wave's end records: pure functions over features and waves, no I/O.

The wave loop (``_loop``) decides when a join happens; this module says what it holds: which
features completed, failed, were cancelled, and which features of later waves are blocked.

Blocked features are the features of later waves downstream of a failure: those with a blocker
(``blocked_by``, transitively) that failed, was cancelled or is itself blocked. When no feature
declares a blocker (a library caller's staged waves), every feature of a wave counts as
blocked by the wave before it: the waves are the only order there is. By default a
failed or cancelled feature stops the mission after its wave: the other features of later
waves that are not completed are "not run" (``not_run_ids``), never called blocked by work
they do not depend on. With ``keep_going`` (like ``make -k``) they still run. A cancellation
stops everything.

A verified join (``--verify``, see ``_verify``) is clean only once its checks passed: a failed
or cancelled verification stops the mission after its wave like a failure without
``keep_going`` (a later wave never starts from an unverified head), and so does one that a
crash left ``running``. Downstream of a failed verification are the features that wait for
one of that wave's features: their blockers' work together did not pass.

Decision: docs/decisions/0501-missions.md
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .._errors import MergeConflictError
from ..records._clock import now_rfc3339_millis
from ..records._document import Conflict, Feature, MissionStatus, Verification, WaveJoin
from ..records._usage import UsageTotal

__all__ = [
    "blocked_downstream",
    "conflict_record",
    "conflict_text",
    "final_status",
    "first_unfinished",
    "interrupted_note",
    "join_record",
]

_ENDED_BADLY = ("failed", "cancelled")
# What a join's verification may say for the mission to go on from its head.
_VERIFIED = ("passed", "skipped")
_SUFFIX = {
    "running": ", verifying",
    "passed": ", verified",
    "failed": ", verification failed",
    "cancelled": ", verification cancelled",
}
# A wave that merged nothing leaves a head an earlier join's checks passed: not checked again.
_UNCHANGED = ", its head unchanged since its checks passed"


def _verification_suffix(checked: Verification) -> str:
    if checked.status == "passed" and checked.attempts == 0:
        return _UNCHANGED
    return _SUFFIX.get(checked.status, "")


def first_unfinished(
    features: list[Feature],
    waves: list[list[str]],
    joins: list[WaveJoin],
    *,
    verifying: bool = False,
) -> int:
    """Index of the first wave not cleanly joined or with a feature not completed.

    A wave whose features all completed but whose join was never recorded (a crash, or a join
    that failed) runs again: its completed features are not rerun, but they are merged, and
    its head verified again when its verification did not pass. With *verifying* (the run has
    a verify stage), a head the last clean join did not verify (the stage was added at resume,
    or a cancellation came first) is verified before a wave starts from it: that wave's join
    is made again.
    """
    done = {f.id for f in features if f.status == "completed"}
    for index, wave in enumerate(waves):
        if not (index < len(joins) and _clean(joins[index])) or not done.issuperset(wave):
            break
    else:
        index = len(waves)
    if verifying and index > 0 and joins[index - 1].verification.status == "skipped":
        return index - 1
    return index


def _clean(join: WaveJoin) -> bool:
    ended_badly = join.failed_ids or join.cancelled_ids
    return not ended_badly and join.verification.status in _VERIFIED


def blocked_downstream(
    features: Iterable[Feature],
    waves: Sequence[Sequence[str]],
    unverified: Iterable[str] = (),
    *,
    ended_badly: Sequence[str] = _ENDED_BADLY,
) -> set[str]:
    """The features not completed that have a failed, cancelled or blocked blocker.

    The features of *unverified* (a wave whose checks failed) count as failed: their merged
    work did not pass. *waves* are in topological order (``mission._waves`` checks it), so one pass
    settles the closure. *ended_badly*: the statuses that block (a join's words leave a
    cancellation out: what it left unreached is not run, not blocked).
    """
    by_id = {feature.id: feature for feature in features}
    bad = {i for i, feature in by_id.items() if feature.status in ended_badly}
    bad.update(unverified)
    # Features that declare no blocker at all: the caller's waves are the only order there is
    # (a staged pipeline), so each wave waits for the one before it, as in the seed.
    staged = not any(feature.blocked_by for feature in by_id.values())
    blocked: set[str] = set()
    before: Sequence[str] = ()
    for wave in waves:
        for feature_id in wave:
            feature = by_id[feature_id]
            if feature.status == "completed" or feature_id in bad:
                continue
            blockers = before if staged else feature.blocked_by
            if any(b in bad or b in blocked for b in blockers):
                blocked.add(feature_id)
        before = wave
    return blocked


def _met(conflict: MergeConflictError, merged: Sequence[Feature]) -> list[Feature]:
    # The features merged before it whose work changed a conflicted path.
    paths = set(conflict.files)
    return [
        feature
        for feature in merged
        if feature.handoff is not None and paths & set(feature.handoff.files_changed)
    ]


def conflict_text(conflict: MergeConflictError, merged: Sequence[Feature]) -> str:
    """Why a feature's merge failed, with whom: ``merge conflict in a.py with task_1 (add
    y)``: the features merged before it in this join whose work changed a conflicted path,
    each with its subject; or the work already on the integration branch when none did."""
    met = [
        f"{feature.id} ({feature.subject})" if feature.subject else feature.id
        for feature in _met(conflict, merged)
    ]
    whom = ", ".join(met) if met else "the work already on the integration branch"
    return f"{conflict} with {whom}"


def interrupted_note(mission_id: str) -> str:
    """The ``lastError`` of a task whose run a mission's stop cut short (the store has it back
    ``pending``)."""
    return (
        f"interrupted: mission {mission_id} was stopped before it finished; "
        f"'rho mission resume {mission_id}' runs it again"
    )


def conflict_record(conflict: MergeConflictError, merged: Sequence[Feature]) -> Conflict:
    """The ``conflict`` of a feature whose merge met *conflict* after *merged*: its paths and
    the features it met (sorted), its outcome still to come."""
    met = sorted({feature.id for feature in _met(conflict, merged)})
    return Conflict(paths=list(conflict.files), with_=met)


def join_record(
    features: list[Feature],
    waves: Sequence[Sequence[str]],
    number: int,
    started: str,
    *,
    keep_going: bool = False,
    verification: Verification | None = None,
    usage: UsageTotal | None = None,
    budget_stopped: bool = False,
) -> WaveJoin:
    """The join of wave *number* (1-based) of *waves*, with *verification* of its head and
    *usage*, what its attempts spent; *budget_stopped*: a budget stops the mission after it."""
    checked = verification or Verification()
    by_id = {f.id: f for f in features}
    ids, later = list(waves[number - 1]), waves[number:]

    def having(status: str) -> list[str]:
        return sorted(i for i in ids if by_id[i].status == status)

    completed, failed, cancelled = having("completed"), having("failed"), having("cancelled")
    # Its own features that never ran: downstream of a failure in an earlier wave (keep_going).
    held_back = having("pending")
    conflicted = sorted(i for i in ids if by_id[i].conflict is not None)
    waiting = [i for wave in later for i in wave if by_id[i].status != "completed"]
    unverified = checked.status in ("failed", "cancelled")
    # Blocked: downstream of a failure, or of checks that failed. Downstream of a cancellation
    # (Ctrl-C) is only not reached: it is not run, and a resume runs it.
    failed_checks = checked.status == "failed"
    downstream = blocked_downstream(
        features, waves, ids if failed_checks else (), ended_badly=("failed",)
    )
    blocked = sorted(i for i in waiting if i in downstream)
    stopped = cancelled or (failed and not keep_going) or unverified or budget_stopped
    # The mission stops after this wave: what is not downstream of a failure did not run only
    # because of the stop.
    not_run = sorted(i for i in waiting if i not in downstream) if stopped else []
    summary = (
        f"wave {number} joined {len(ids)} feature(s), "
        f"{len(completed)} completed, {len(failed)} failed"
    )
    if cancelled:
        summary += f", {len(cancelled)} cancelled"
    if held_back:
        summary += f", {len(held_back)} blocked"
    if blocked:
        summary += f", {len(blocked)} downstream blocked"
    if conflicted:
        summary += f", {len(conflicted)} conflicted"
    summary += _verification_suffix(checked)
    return WaveJoin(
        wave=number,
        feature_ids=sorted(ids),
        completed_ids=completed,
        failed_ids=failed,
        cancelled_ids=cancelled,
        blocked_ids=blocked,
        not_run_ids=not_run,
        conflicted_ids=conflicted,
        started_at=started,
        completed_at=now_rfc3339_millis(),
        summary=summary,
        verification=checked,
        usage=usage,
    )


def final_status(
    features: list[Feature],
    cancelled: bool,
    *,
    unverified: bool = False,
    budget_stopped: bool = False,
) -> MissionStatus:
    """The mission's status once its run ended (docs/architecture.md); a join whose check failed
    (*unverified*) counts as a failure: the mission is ``partial`` (or ``failed``), never
    ``completed``. A budget that stopped the run (*budget_stopped*) leaves it ``partial``:
    resumable with a higher budget."""
    if cancelled:
        return "cancelled"
    statuses = {f.status for f in features} | ({"failed"} if unverified else set())
    if statuses <= {"completed"}:
        return "completed"
    if budget_stopped:
        return "partial"
    if "completed" not in statuses:
        return "failed"
    return "partial"
