"""Resume with the fix: refresh the features still to run from the task store (or a list).

A user who fixes a failed task's command in the store and resumes expects the fix to run, not
the command mission.json froze at planning time. So a resume of a ``--from-tasks`` mission reads
the store again and takes, for every feature not completed, its subject, description and
command. The shape of the mission stays what was planned and joined: tasks added or removed, or
blockers changed, are refused (they need a new mission). What changed is journaled as a
``refreshed`` event, with digests only.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from graph import sha256_hex as digest
from taskstore import Task, TaskStore

from ._errors import InvalidMissionError
from ._models import Feature, MissionConfig, MissionDocument
from ._signedplan import check_signed_plan

__all__ = ["feature_from_task", "refresh_features", "store_features"]


def feature_from_task(task: Task) -> Feature:
    """The feature that runs *task*: its id, subject, description, command and blockers."""
    feature = Feature(
        task.id,
        task.subject,
        task.description or task.subject,
        command=task.command,
        blocked_by=sorted(set(task.blocker_ids)),
    )
    if task.status == "completed":
        feature.status = "completed"
    return feature


def store_features(config: MissionConfig) -> list[Feature]:
    """One feature per task of the mission's task store, once its signed plan (if it has one)
    allows the store as it is now.

    Raises:
        TaskStoreError: the store cannot be read.
        SignedPlanError: the plan is refused, or the store is not what it allows.
    """
    tasks = TaskStore(Path(config.task_store or "")).tasks()
    if config.signed_plan:
        check_signed_plan(config.signed_plan, config.trusted_keys, tasks, config.run_command)
    return [feature_from_task(task) for task in tasks]


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
        fields = (source.description, source.expected_behavior, source.command)
        if fields != (feature.description, feature.expected_behavior, feature.command):
            feature.description, feature.expected_behavior, feature.command = fields
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
