"""Plan a mission from the task store: one feature per task still to do, in flattened wave order.

Decision: docs/decisions/0506-living-store.md
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from taskstore import TaskStore, compute_schedule

from .._errors import InvalidMissionError, NothingToRunError, quote
from ..engine._carryover import check_blockers_in_base
from ..git._repo import GitRepo
from ..records._document import MissionConfig
from ._claims import ClaimRule
from ._mission import Mission
from ._selection import Selection, select_tasks
from ._signedplan import check_signed_plan

__all__ = ["mission_from_tasks"]


def mission_from_tasks(
    store_path: Path,
    repo: Path,
    config: MissionConfig,
    *,
    base: str = "HEAD",
    only: Iterable[str] = (),
    labels: Iterable[str] = (),
) -> Mission:
    """A planned mission whose features are the store's tasks still to do, in validated waves.

    The store is validated whole; the features are its tasks not yet ``completed`` (narrowed
    to *only* and the tasks carrying one of *labels*, each with its not-completed blockers),
    without the tasks its statuses hold back (``_selection``), which the mission lists in
    ``held``. The base must hold the recorded work of every completed blocker of a task to run
    (``engine._carryover``).

    Raises:
        InvalidMissionError: the store file is missing or holds no task, or the base lacks a
            completed blocker's work, or *only* / *labels* select no task of the store.
        NothingToRunError: every selected task is completed or held; nothing was written.
        TaskStoreError: the store cannot be read (``ScheduleError`` if its graph is invalid).
        SignedPlanError: ``config.signed_plan`` is refused, or the store breaks it.
        NotAGitRepositoryError, UnknownRefError: see ``Mission.new``.
    """
    if not store_path.is_file():
        raise InvalidMissionError(f"no task store at {store_path}: add a task with 'rho task add'")
    tasks = TaskStore(store_path).tasks()
    if not tasks:
        raise InvalidMissionError(f"no tasks to run: the task store {store_path} is empty")
    schedule = compute_schedule(tasks)
    claims = ClaimRule(config.include_claimed, config.claim_ttl)
    selection = select_tasks(tasks, schedule.waves, only=only, labels=labels, claims=claims)
    if not selection.features:
        raise NothingToRunError(_nothing_to_run(selection))
    update: dict[str, str] = {"task_store": str(store_path.resolve())}
    if config.signed_plan:  # the same read of the store that the features come from
        plan = Path(config.signed_plan).resolve()
        update["signed_plan"] = str(plan)
        update["signed_plan_sha256"] = check_signed_plan(
            plan, config.trusted_keys, tasks, config.run_command
        )
    config = config.model_copy(update=update)
    prompt = f"run {len(selection.features)} task(s) of the task store"
    mission = Mission.new(repo, prompt, selection.features, config, base=base)
    mission.waves = selection.waves
    mission.held = selection.held
    running = {feature.id for feature in selection.features}
    to_run = [task for task in tasks if task.id in running]
    check_blockers_in_base(GitRepo.open(repo), to_run, tasks, mission.base_commit)
    return mission


def _nothing_to_run(selection: Selection) -> str:
    parts = [f"{selection.completed} task(s) completed"] if selection.completed else []
    if selection.held:
        shown = ", ".join(f"{quote(h.id)} ({h.reason})" for h in selection.held[:5])
        more = f" and {len(selection.held) - 5} more" if len(selection.held) > 5 else ""
        parts.append(f"{len(selection.held)} held: {shown}{more}")
    return "nothing to run: " + ("; ".join(parts) or "no task selected")
