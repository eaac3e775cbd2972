"""Leases: the tasks a mission will run are its own until it ends, so no other mission runs them.

When a mission made from the task store starts (or resumes), it leases every task it has still
to run, in one locked write of the store: ``metadata["rho.lease"] = <mission id>``, so the
document stays ``rho.tasks/v1``. Another mission that wants one of those tasks is refused while
the holder runs (its run lock is held), and while the holder is interrupted (killed, crashed:
its mission.json still says ``executing``) unless it takes the tasks over explicitly
(``--takeover``); the holder's own ``resume`` takes them back. A lease whose mission ended, or
whose folder is gone, is void. A mission releases its leases when its run ends.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

from taskstore import StoreDocument, TaskStore

from ._errors import MissionError, quote
from ._git import GitRepo
from ._runlock import is_running

__all__ = ["LEASE_KEY", "TaskLeasedError", "claim_tasks", "lease_conflict", "release_tasks"]

LEASE_KEY = "rho.lease"


class TaskLeasedError(MissionError):
    """Raised when a task a mission would run is leased to another mission that holds it."""


def claim_tasks(
    store: TaskStore, task_ids: Iterable[str], holder: str, conflict: Callable[[str], str | None]
) -> None:
    """Lease *task_ids* to mission *holder* in one locked write, or refuse and write nothing.

    *conflict(other)* says why a lease of mission *other* still stands (None: it is void).

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
                reason = conflict(other)
                if reason is not None:
                    raise TaskLeasedError(
                        f"task {quote(task_id)} is leased to mission {other}, {reason}"
                    )
        for task in tasks.values():
            task.metadata[LEASE_KEY] = holder

    store.mutate(change)


def release_tasks(store: TaskStore, holder: str) -> None:
    """Drop every lease of mission *holder*.

    Raises:
        TaskStoreError: the store cannot be read or written.
    """

    def change(document: StoreDocument) -> None:
        for task in document.tasks:
            if task.metadata.get(LEASE_KEY) == holder:
                del task.metadata[LEASE_KEY]

    store.mutate(change)


def lease_conflict(repo: GitRepo, other: str, *, takeover: bool) -> str | None:
    """Why a lease of mission *other* in *repo* stands, or None when it is void."""
    if is_running(repo, other):
        return "which is running; wait for it to end"
    folder = repo.root / ".rho" / "missions" / other
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
