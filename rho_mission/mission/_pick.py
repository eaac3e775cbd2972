"""A mission's work task by task: what each task's merge brought into the integration branch.

At a join, each completed task's commit is merged into the integration branch (a fast-forward
or a merge commit whose second parent is the task's commit), so the first-parent history of the
integration branch, from the mission's base, holds one step per merged task. The change of that
step is the task's work *as merged* (with what the merge resolved), which is what
``rho mission diff MISSION TASK`` shows and what ``rho mission merge --only TASK...`` brings:
the steps of the chosen tasks, applied in their order onto the mission's base, through a private
index (``GitRepo.apply_change``), never a work tree.

A chosen task whose blocker (in the mission) is not chosen too is refused: its work was made on
top of that blocker's, and without it the result would be a tree nobody ran.

Decision: docs/decisions/0508-mission-commands.md
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .._errors import InvalidMissionError, PickRefusedError, quote
from ..git._repo import GitRepo
from ..records._document import MissionDocument

__all__ = ["PickRefusedError", "TaskStep", "compose_tasks", "task_step", "task_steps"]


@dataclass(frozen=True)
class TaskStep:
    """The integration branch's step that merged *task*: from *before* to *after*."""

    task: str
    before: str
    after: str


def task_steps(repo: GitRepo, mission: MissionDocument, head: str) -> dict[str, TaskStep]:
    """Each merged task's step on the first-parent history from the base to *head*, oldest
    first."""
    commits = {f.work_commit: f.id for f in mission.features if f.work_commit is not None}
    out = repo.run("rev-list", "--first-parent", "--parents", f"{mission.base_commit}..{head}")
    newest_first: list[TaskStep] = []
    for line in out.splitlines():
        commit, *parents = line.split()
        if not parents:
            continue
        # A fast-forward puts the task's commit itself on the line; a merge, as second parent.
        merged = next((c for c in (commit, *parents[1:]) if c in commits), None)
        if merged is not None:
            newest_first.append(TaskStep(commits[merged], parents[0], commit))
    return {step.task: step for step in reversed(newest_first)}


def task_step(repo: GitRepo, mission: MissionDocument, head: str, task: str) -> TaskStep:
    """The step of one task.

    Raises:
        InvalidMissionError: the mission has no such task, or it merged no work.
    """
    ids = {feature.id for feature in mission.features}
    if task not in ids:
        raise InvalidMissionError(f"mission {mission.id} has no task {quote(task)}")
    step = task_steps(repo, mission, head).get(task)
    if step is None:
        status = mission.feature(task).status
        why = "it changed no file" if status == "completed" else f"it is {status}"
        raise InvalidMissionError(
            f"task {quote(task)} merged no work into mission {mission.id}: {why}"
        )
    return step


def compose_tasks(
    repo: GitRepo, mission: MissionDocument, head: str, chosen: Iterable[str]
) -> tuple[str, list[str]]:
    """A commit on the mission's base holding the work of *chosen* as merged, and the chosen
    tasks that brought work (in merge order).

    Raises:
        PickRefusedError: a chosen task is unknown or not completed, needs the work of a task
            not chosen, or its work does not apply without the others'.
    """
    wanted = sorted(set(chosen))
    steps = task_steps(repo, mission, head)
    _refuse_apart(mission, wanted, steps)
    tip = mission.base_commit
    taken = [step for step in steps.values() if step.task in wanted]
    for step in taken:
        tree = repo.apply_change(tip, step.before, step.after)
        if tree is None:
            raise PickRefusedError(
                f"the work of task {quote(step.task)} does not apply without the tasks merged "
                f"before it in mission {mission.id}: merge the whole mission, or add them to --only"
            )
        subject = mission.feature(step.task).subject
        message = f"rho-mission {mission.id}: {step.task} {subject}".rstrip()
        tip = repo.commit_tree(tree, [tip], message)
    return tip, [step.task for step in taken]


def _refuse_apart(
    mission: MissionDocument, wanted: Sequence[str], steps: dict[str, TaskStep]
) -> None:
    ids = {feature.id for feature in mission.features}
    for task in wanted:
        if task not in ids:
            raise PickRefusedError(f"mission {mission.id} has no task {quote(task)}")
        status = mission.feature(task).status
        if status != "completed":
            raise PickRefusedError(f"task {quote(task)} of mission {mission.id} is {status}")
    chosen = set(wanted)
    for task in wanted:
        # A blocker that brought no step (done before the mission, or no change) is in the base.
        needed = [b for b in _blockers(mission, task) if b in steps and b not in chosen]
        if needed:
            raise PickRefusedError(
                f"task {quote(task)} needs the work of {quote(needed[0])} (it waits for it): "
                f"add it with '--only {needed[0]}'"
            )


def _blockers(mission: MissionDocument, task: str) -> list[str]:
    """The mission's features *task* waits for, transitively, sorted."""
    ids = {feature.id for feature in mission.features}
    seen: set[str] = set()
    stack = [b for b in mission.feature(task).blocked_by if b in ids]
    while stack:
        blocker = stack.pop()
        if blocker in seen:
            continue
        seen.add(blocker)
        stack.extend(b for b in mission.feature(blocker).blocked_by if b in ids)
    return sorted(seen)
