"""Resume with the fix: refresh the features still to run from the task store (or a list).

A user who fixes a failed task's command in the store and resumes expects the fix to run, not
the command mission.json froze at planning time. So a resume of a ``--from-tasks`` mission reads
the store again and takes, for every feature not completed, its subject, description and
command. The shape of the mission stays what was planned and joined: its tasks removed, or
their blockers changed, are refused (they need a new mission); tasks added to the store since
are the next mission's. What changed is journaled as a ``refreshed`` event, with digests only.
A task the store says another mission (or the user) completed since, or holds by its status
now, is never run by a resume: it is refused with the next command.

Decision: docs/decisions/0506-living-store.md
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from graph import sha256_hex as digest
from taskstore import Task, TaskStore

from .._errors import InvalidMissionError, quote
from ..engine._carryover import MISSION_KEY
from ..engine._leases import LEASE_KEY
from ..records._document import Feature, MissionDocument, feature_from_task
from ._claims import ClaimRule, claim_reason
from ._selection import HOLDING_STATUSES
from ._signedplan import check_signed_plan

__all__ = ["refresh_features", "store_features"]


def store_features(mission: MissionDocument) -> list[Feature]:
    """The mission's features as its task store holds them now, once its signed plan (if it
    has one) allows the store as it is.

    A feature's blockers are the mission's features it waits for; a blocker outside the
    mission that is not completed (added since, or reopened) is kept too, so that the shape
    check refuses it: the task would run without that blocker's work.

    Raises:
        InvalidMissionError: the store file is gone; a task still to run was completed since
            by another mission (or by hand), or is held now by its store status.
        TaskStoreError: the store cannot be read.
        SignedPlanError: the plan is refused, or the store is not what it allows.
    """
    config = mission.config
    path = Path(config.task_store or "")
    if not path.is_file():
        raise InvalidMissionError(f"the task store of mission {mission.id} is gone: {path}")
    tasks = TaskStore(path).tasks()
    if config.signed_plan:
        check_signed_plan(config.signed_plan, config.trusted_keys, tasks, config.run_command)
    by_id = {task.id: task for task in tasks}
    _refuse_finished_elsewhere(mission, by_id)
    ours = {feature.id for feature in mission.features}
    fresh = []
    for feature in mission.features:
        task = by_id.get(feature.id)
        if task is None:
            continue  # the shape check names it removed
        new = feature_from_task(task)
        if feature.status != "completed":
            new.blocked_by = [
                b
                for b in new.blocked_by
                if b in ours or b not in by_id or by_id[b].status != "completed"
            ]
        else:
            new.blocked_by = [b for b in new.blocked_by if b in ours]
        fresh.append(new)
    return fresh


def _refuse_finished_elsewhere(mission: MissionDocument, by_id: dict[str, Task]) -> None:
    """Refuse a resume that would run a task the store says is done or held since.

    A task another mission completed (``--continue``, a later mission) has its work there; run
    again here, it would point the store's ``rho.commit`` at this mission instead.
    """
    done: dict[str, list[str]] = {}
    held: list[str] = []
    claims = ClaimRule(mission.config.include_claimed, mission.config.claim_ttl)
    now = claims.at()
    for feature in mission.features:
        task = by_id.get(feature.id)
        if feature.status == "completed" or task is None:
            continue
        by = task.metadata.get(MISSION_KEY)
        # Its own: merged by this mission, or ended by it before a crash (still leased to it).
        own = mission.id in (by, task.metadata.get(LEASE_KEY))
        if task.status == "completed" and not own:
            done.setdefault(by if isinstance(by, str) else "", []).append(task.id)
        elif task.status in HOLDING_STATUSES:
            held.append(f"{quote(task.id)} is {task.status}")
        elif not own and (claimed := claim_reason(task, claims, now)):
            held.append(f"{quote(task.id)} is {claimed}")
    if done:
        raise InvalidMissionError(_superseded(mission.id, done))
    if held:
        raise InvalidMissionError(
            f"mission {mission.id} cannot resume: in the task store {', '.join(held[:5])} "
            "since it was planned; start a new mission with 'rho mission --from-tasks' (or "
            "'rho mission resume --include-claimed' to run claimed tasks anyway)"
        )


def _superseded(mission_id: str, done: dict[str, list[str]]) -> str:
    parts, fixes = [], []
    for by, ids in sorted(done.items()):
        names = ", ".join(quote(i) for i in sorted(ids)[:5])
        if by:
            parts.append(f"{names} completed since by mission {by}")
            fixes.append(f"'rho mission merge {by}'")
        else:
            parts.append(f"{names} marked completed in the task store since")
    bring = f"bring that work in with {' and '.join(fixes)}, then " if fixes else ""
    return (
        f"mission {mission_id} is superseded: {'; '.join(parts)}; a resume never runs finished "
        f"work again: {bring}run what is left with 'rho mission --from-tasks', "
        f"or drop this mission with 'rho mission clean {mission_id}'"
    )


def refresh_features(mission: MissionDocument, fresh: Sequence[Feature]) -> dict[str, str | None]:
    """Take subject, description and command of every feature not completed from *fresh*.

    Returns, for each feature that changed, the digest of its new command (None: no command).

    Raises:
        InvalidMissionError: *fresh* adds or removes features, or changes blockers.
    """
    new = {feature.id: feature for feature in fresh}
    _refuse_new_shape(mission, new)
    changed: dict[str, str | None] = {}
    for feature in mission.features:
        if feature.status == "completed":
            continue
        source = new[feature.id]
        fields = (source.subject, source.description, source.command)
        if fields != (feature.subject, feature.description, feature.command):
            feature.subject, feature.description, feature.command = fields
            changed[feature.id] = digest(source.command) if source.command else None
    return dict(sorted(changed.items()))


def _refuse_new_shape(mission: MissionDocument, new: dict[str, Feature]) -> None:
    old = {feature.id: feature for feature in mission.features}
    differences = [f"{i} added" for i in sorted(new.keys() - old.keys())]
    differences += [f"{i} removed" for i in sorted(old.keys() - new.keys())]
    differences += [
        f"blockers of {i} changed"
        for i in sorted(old.keys() & new.keys())
        if sorted(set(old[i].blocked_by)) != sorted(set(new[i].blocked_by))
    ]
    if differences:
        raise InvalidMissionError(
            f"the tasks of mission {mission.id} changed shape since it was planned "
            f"({', '.join(differences[:5])}); resume takes fixed commands and texts only: "
            "start a new mission with 'rho mission --from-tasks'"
        )
