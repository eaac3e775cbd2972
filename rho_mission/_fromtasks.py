"""Plan a mission from the task store: one feature per task, in flattened wave order."""

from __future__ import annotations

from pathlib import Path

from taskstore import Task, TaskStore, compute_schedule

from ._errors import InvalidMissionError
from ._mission import Mission
from ._models import Feature, MissionConfig

__all__ = ["mission_from_tasks"]


def mission_from_tasks(
    store_path: Path, repo: Path, config: MissionConfig, *, base: str = "HEAD"
) -> Mission:
    """A planned mission whose features are the store's tasks and whose waves are its schedule.

    Tasks already ``completed`` become completed features and are not run again.

    Raises:
        InvalidMissionError: the store holds no task.
        TaskStoreError: the store cannot be read (``ScheduleError`` if its graph is invalid).
        NotAGitRepositoryError, UnknownRefError: see ``Mission.new``.
    """
    tasks = TaskStore(store_path).tasks()
    if not tasks:
        raise InvalidMissionError(f"no tasks to run: the task store {store_path} is empty")
    schedule = compute_schedule(tasks)
    by_id = {task.id: task for task in tasks}
    features = [_feature(by_id[i]) for wave in schedule.waves for i in wave]
    config = config.model_copy(update={"task_store": str(store_path.resolve())})
    prompt = f"run {len(tasks)} task(s) of the task store"
    mission = Mission.new(repo, prompt, features, config, base=base)
    mission.waves = schedule.waves
    return mission


def _feature(task: Task) -> Feature:
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
