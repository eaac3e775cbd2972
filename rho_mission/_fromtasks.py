"""Plan a mission from the task store: one feature per task, in flattened wave order."""

from __future__ import annotations

from pathlib import Path

from taskstore import TaskStore, compute_schedule

from ._carry import check_blockers_in_base
from ._errors import InvalidMissionError
from ._git import GitRepo
from ._mission import Mission
from ._models import MissionConfig
from ._refresh import feature_from_task
from ._signedplan import check_signed_plan

__all__ = ["mission_from_tasks"]


def mission_from_tasks(
    store_path: Path, repo: Path, config: MissionConfig, *, base: str = "HEAD"
) -> Mission:
    """A planned mission whose features are the store's tasks and whose waves are its schedule.

    Tasks already ``completed`` become completed features and are not run again; the base
    must hold the recorded work of every completed blocker of a task to run (``_carry``).

    Raises:
        InvalidMissionError: the store holds no task.
        TaskStoreError: the store cannot be read (``ScheduleError`` if its graph is invalid).
        InvalidMissionError: also when the base lacks a completed blocker's work.
        SignedPlanError: ``config.signed_plan`` is refused, or the store breaks it.
        NotAGitRepositoryError, UnknownRefError: see ``Mission.new``.
    """
    tasks = TaskStore(store_path).tasks()
    if not tasks:
        raise InvalidMissionError(f"no tasks to run: the task store {store_path} is empty")
    schedule = compute_schedule(tasks)
    by_id = {task.id: task for task in tasks}
    features = [feature_from_task(by_id[i]) for wave in schedule.waves for i in wave]
    update: dict[str, str] = {"task_store": str(store_path.resolve())}
    if config.signed_plan:  # the same read of the store that the features come from
        plan = Path(config.signed_plan).resolve()
        update["signed_plan"] = str(plan)
        update["signed_plan_sha256"] = check_signed_plan(
            plan, config.trusted_keys, tasks, config.run_command
        )
    config = config.model_copy(update=update)
    prompt = f"run {len(tasks)} task(s) of the task store"
    mission = Mission.new(repo, prompt, features, config, base=base)
    mission.waves = schedule.waves
    check_blockers_in_base(GitRepo.open(repo), tasks, mission.base_commit)
    return mission
