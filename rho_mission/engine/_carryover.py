"""Work carries across missions: a task completed by one mission is in the base of the next.

When a mission merges a task's work at a join, the store notes where it is:
``metadata["rho.commit"]`` = the integration head that holds it, ``metadata["rho.mission"]`` =
the mission. A later ``--from-tasks`` mission checks, before any worker starts, that the commit
of every completed blocker of a task it will run is an ancestor of its base; a base without it
is refused with the two ways out (merge that mission, or start from its integration branch),
rather than running the task on a tree that silently lacks its blocker's work.

A bisected join (``_bisect``) lands a head other than the one its merges made: the work of the
features that landed is noted again at that head, and a culprit's note is dropped (its task is
``failed``); a replayed culprit that lands is noted at the head it landed in.

Decision: docs/decisions/0506-living-store.md
"""

from __future__ import annotations

from collections.abc import Sequence

from taskstore import StoreDocument, Task, TaskStore, standing_for

from .._errors import GitOperationError, InvalidMissionError, quote
from ..git._repo import GitRepo
from ..records._places import integration_branch, mission_folder

__all__ = ["COMMIT_KEY", "MISSION_KEY", "check_blockers_in_base", "forget_work", "record_work"]

COMMIT_KEY = "rho.commit"
MISSION_KEY = "rho.mission"


def record_work(store: TaskStore, task_ids: Sequence[str], commit: str, mission_id: str) -> None:
    """Note in *store* that the work of *task_ids* is in *commit*, merged by *mission_id*.

    Raises:
        TaskStoreError: the store cannot be read or written.
    """
    wanted = set(task_ids)

    def change(document: StoreDocument) -> None:
        for task in document.tasks:
            if task.id in wanted:
                task.metadata[COMMIT_KEY] = commit
                task.metadata[MISSION_KEY] = mission_id

    store.mutate(change)


def forget_work(store: TaskStore, task_ids: Sequence[str], mission_id: str) -> None:
    """Drop the note of *mission_id*'s work on *task_ids*: a bisection blamed them, and the
    head that landed holds none of it (a note of another mission is left alone).

    Raises:
        TaskStoreError: the store cannot be read or written.
    """
    wanted = set(task_ids)

    def change(document: StoreDocument) -> None:
        for task in document.tasks:
            if task.id in wanted and task.metadata.get(MISSION_KEY) == mission_id:
                task.metadata.pop(COMMIT_KEY, None)
                task.metadata.pop(MISSION_KEY, None)

    store.mutate(change)


def check_blockers_in_base(
    repo: GitRepo, to_run: Sequence[Task], tasks: Sequence[Task], base: str
) -> None:
    """Refuse a base that lacks the recorded work of a completed blocker of a task *to_run*
    (the tasks a mission will run: none of them completed).

    *tasks* is the whole store, where the blockers are looked up.

    Raises:
        InvalidMissionError: names the task, the blocker, its mission and the two fixes.
    """
    by_id = {task.id: task for task in tasks}
    checked: dict[str, bool] = {}
    for task in sorted(to_run, key=lambda t: t.id):
        for blocker_id in sorted(standing_for(task.blocker_ids, by_id)):
            blocker = by_id.get(blocker_id)
            commit = blocker.metadata.get(COMMIT_KEY) if blocker else None
            if blocker is None or blocker.status != "completed" or not isinstance(commit, str):
                continue
            if commit not in checked:
                checked[commit] = _contains(repo, base, commit)
            if not checked[commit]:
                raise InvalidMissionError(_missing(repo, task.id, blocker, base, commit))


def _contains(repo: GitRepo, base: str, commit: str) -> bool:
    try:
        return repo.is_ancestor(commit, base)
    except GitOperationError:
        return False  # an unknown commit (another clone, pruned) is not contained


def _missing(repo: GitRepo, task_id: str, blocker: Task, base: str, commit: str) -> str:
    mission = blocker.metadata.get(MISSION_KEY)
    by = f" by mission {mission}" if isinstance(mission, str) else ""
    return (
        f"task {quote(task_id)} needs the work of {quote(blocker.id)}, completed{by}, "
        f"which the base {base[:12]} does not contain: {_fixes(repo, blocker, mission, commit)}"
    )


def _fixes(repo: GitRepo, blocker: Task, mission: object, commit: str) -> str:
    """The ways to a base with *blocker*'s work that exist now: never a command on a mission
    that was cleaned (its integration branch, or its folder, gone)."""
    again = f"run it again with 'rho task update {blocker.id} --status pending'"
    if isinstance(mission, str) and _mission_kept(repo, mission):
        return (
            f"bring it in with 'rho mission merge {mission}', or start from it with "
            f"'--continue {mission}'"
        )
    if repo.run_status("cat-file", "-e", f"{commit}^{{commit}}")[0] == 0:
        gone = f" (mission {mission} was cleaned)" if isinstance(mission, str) else ""
        return f"merge its commit with 'git merge {commit[:12]}'{gone}, or {again}"
    return f"its work is in no branch or commit here any more; {again}"


def _mission_kept(repo: GitRepo, mission_id: str) -> bool:
    """Whether ``merge`` and ``--continue`` can name *mission_id*: its folder and its
    integration branch are there."""
    folder = mission_folder(repo.root, mission_id) / "mission.json"
    return folder.is_file() and repo.branch_commit(integration_branch(mission_id)) is not None
