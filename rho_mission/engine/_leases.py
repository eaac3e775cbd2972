"""Leases: the tasks a mission will run are its own until it ends, so no other mission runs them.

When a mission made from the task store starts (or resumes), it leases every task it has still
to run, in one locked write of the store: ``metadata["rho.lease"] = <mission id>`` and
``metadata["rho.lease_place"]`` = where it runs (its git common dir and folder), so the
document stays ``rho.tasks/v1``. Another mission that wants one of those tasks, in this
repository or in another clone that shares the store, is refused while the holder runs (its
run lock, in the holder's own git dir, is held), and while the holder is interrupted (killed,
crashed: its mission.json still says ``executing``) unless it takes the tasks over explicitly
(``--takeover``); the holder's own ``resume`` takes them back. A lease whose mission ended, or
whose folder is gone, is void. A mission releases its leases when its run ends.

Decision: docs/decisions/0105-claims-and-leases.md
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

from taskstore import StoreDocument, TaskStore, complete_groups

from .._errors import TaskLeasedError, quote
from ..git._repo import GitRepo
from ..git._runlock import is_running_in
from ..records._places import mission_folder

__all__ = [
    "LEASE_KEY",
    "PLACE_KEY",
    "TaskLeasedError",
    "claim_tasks",
    "lease_conflict",
    "lease_place",
    "release_tasks",
]

LEASE_KEY = "rho.lease"
# Where the holder runs: its repository's git common dir (its run lock) and its folder. A store
# shared by several clones (RHO_TASK_STORE) is leased by missions of any of them.
PLACE_KEY = "rho.lease_place"


_PLACE_FIELDS = ("git_dir", "folder")


def lease_place(repo: GitRepo, folder: Path) -> dict[str, str]:
    """What a lease records of where its mission runs: the git common dir and the folder."""
    return {"git_dir": str(repo.common_dir), "folder": str(Path(folder).absolute())}


def claim_tasks(
    store: TaskStore,
    task_ids: Iterable[str],
    holder: str,
    conflict: Callable[[str, object], str | None],
    place: dict[str, str] | None = None,
) -> None:
    """Lease *task_ids* to mission *holder* (running at *place*) in one locked write, or refuse
    and write nothing.

    *conflict(other, its_place)* says why a lease of mission *other* still stands (None: it is
    void); *its_place* is what that lease recorded (None for a lease of an older rho).

    Raises:
        TaskLeasedError: a task is leased to another mission whose lease stands.
        TaskStoreError: the store cannot be read or written.
    """
    wanted = sorted(set(task_ids))

    def change(document: StoreDocument) -> None:
        tasks = {task.id: task for task in document.tasks if task.id in wanted}
        for task_id in wanted:
            task = tasks.get(task_id)
            other = task.metadata.get(LEASE_KEY) if task else None
            if isinstance(other, str) and other != holder:
                reason = conflict(other, task.metadata.get(PLACE_KEY) if task else None)
                if reason is not None:
                    raise TaskLeasedError(
                        f"task {quote(task_id)} is leased to mission {other}, {reason}"
                    )
        for task in tasks.values():
            task.metadata[LEASE_KEY] = holder
            if place is not None:
                task.metadata[PLACE_KEY] = dict(place)
            else:
                task.metadata.pop(PLACE_KEY, None)

    store.mutate(change)


def release_tasks(store: TaskStore, holder: str) -> None:
    """Drop every lease of mission *holder*, and complete the groups whose children are.

    Raises:
        TaskStoreError: the store cannot be read or written.
    """

    def change(document: StoreDocument) -> None:
        for task in document.tasks:
            if task.metadata.get(LEASE_KEY) == holder:
                del task.metadata[LEASE_KEY]
                task.metadata.pop(PLACE_KEY, None)
        # In the same write: an epic whose children this mission finished is finished too.
        complete_groups(document.tasks)

    store.mutate(change)


def lease_conflict(
    repo: GitRepo, other: str, place: object = None, *, takeover: bool
) -> str | None:
    """Why a lease of mission *other* stands, or None when it is void.

    *place* is where the lease says *other* runs (``lease_place``), whichever clone that is;
    a lease without one (an older rho's) is of *repo*.
    """
    common_dir, folder = repo.common_dir, mission_folder(repo.root, other)
    if isinstance(place, dict) and all(isinstance(place.get(k), str) for k in _PLACE_FIELDS):
        common_dir, folder = Path(place["git_dir"]), Path(place["folder"])
    if is_running_in(common_dir, other):
        return "which is running; wait for it to end"
    if _recorded_status(folder / "mission.json") != "executing" or takeover:
        return None
    return (
        f"which was interrupted; resume it with 'rho mission resume {folder}', "
        "or pass --takeover to run its tasks in this mission"
    )


def _recorded_status(record: Path) -> object:
    try:
        document = json.loads(record.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None  # gone or unreadable: no mission holds the lease any more
    return document.get("status") if isinstance(document, dict) else None
