"""Keep the task store in step with a ``--from-tasks`` mission.

Features map to tasks one to one and their statuses share names. A store update never stops
the mission: a task deleted or a store made unwritable while the mission runs is recorded in
``problems`` and reported by the caller, because the mission files stay the record of truth.

Updates are group-committed: ``set_status`` returns once its change is in the file, but changes
that arrive while a rewrite is under way are written together by the next one. With 4 workers a
wave's dispatches would otherwise queue on the store's file lock, which a waiting thread polls
every 50 ms, and each pay a whole locked rewrite (``bench/bench_mission_overhead.py``).

A feature's start is written before its worker runs (an agent that asks the store sees its task
``in_progress``); its end is queued (``wait=False``) and goes out with the next write, at the
latest with the join's ``flush``: a rewrite of a 1,000-task store costs tens of milliseconds,
and a finished feature must not hold its worker slot for it. mission.json never says a feature
completed before the store does when the run can help it: a join, and a resume's start (the
features it adopts), flush first. A save that cannot wait (a ladder's durable landing) may come
first; a resume then completes the tasks left ``in_progress`` under its lease whose features
mission.json holds completed (`left_started`).

Decision: docs/decisions/0506-living-store.md
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from taskstore import StatusChange, TaskNotFoundError, TaskStore, TaskStoreError

from ._carryover import forget_work, record_work
from ._leases import LEASE_KEY, claim_tasks, lease_conflict, lease_place, release_tasks

if TYPE_CHECKING:
    from ..git._repo import GitRepo
    from ..records._document import FeatureStatus, MissionDocument

__all__ = ["StoreSync"]


@dataclass
class _Pending:
    change: StatusChange
    done: bool = False


class StoreSync:
    """Writes feature transitions to the mission's task store, if it has one."""

    def __init__(self, store: TaskStore | None) -> None:
        self.store = store
        self.problems: list[str] = []
        self._queue: list[_Pending] = []
        self._writing: anyio.Lock | None = None

    @classmethod
    def for_mission(cls, mission: MissionDocument) -> StoreSync:
        """A sync for the store named in the mission's config (a no-op without one)."""
        path = mission.config.task_store
        return cls(TaskStore(Path(path)) if path else None)

    async def set_status(
        self,
        task_id: str,
        status: FeatureStatus,
        *,
        attempts: int,
        error: str | None = None,
        wait: bool = True,
    ) -> None:
        """Record *status* (and on failure ``lastError``) for *task_id*; return once written,
        or at once without *wait* (the next write, or `flush`, takes it)."""
        if self.store is None:
            return
        change = _Pending(StatusChange(task_id, status, attempts, error))
        self._queue.append(change)
        if wait:
            await self._written(change)

    async def flush(self) -> None:
        """Write every change still queued; return once they are in the file."""
        if self.store is not None and self._queue:
            await self._written(self._queue[-1])

    async def _written(self, change: _Pending) -> None:
        assert self.store is not None
        if self._writing is None:
            self._writing = anyio.Lock()  # made here: it needs the running event loop
        async with self._writing:
            if change.done:  # written by the rewrite this call waited for
                return
            batch, self._queue = self._queue, []
            await anyio.to_thread.run_sync(self._write, self.store, batch)

    def claim(
        self, task_ids: list[str], holder: str, repo: GitRepo, folder: Path, *, takeover: bool
    ) -> None:
        """Lease *task_ids* to mission *holder*, whose folder is *folder*, before they run
        (see ``_leases``).

        Raises:
            TaskLeasedError: another mission holds one of them.
            TaskStoreError: the store cannot be read or written.
        """
        if self.store is not None and task_ids:
            claim_tasks(
                self.store,
                task_ids,
                holder,
                lambda other, place: lease_conflict(repo, other, place, takeover=takeover),
                lease_place(repo, folder),
            )

    def left_started(self, task_ids: list[str], holder: str) -> list[str]:
        """Those of *task_ids* the store still has ``in_progress`` under mission *holder*'s
        lease: started by it, their end lost to a crash (a failure to read is a problem).

        A resume completes those whose features mission.json holds completed: mission.json
        can reach the disk before a queued end does (a kill between the two), and nothing
        else would ever write that end again.
        """
        if self.store is None or not task_ids:
            return []
        try:
            tasks = self.store.tasks()
        except TaskStoreError as exc:
            self.problems.append(f"task store not read for the tasks a crash left: {exc}")
            return []
        wanted = set(task_ids)
        return [
            task.id
            for task in tasks
            if task.id in wanted
            and task.status == "in_progress"
            and task.metadata.get(LEASE_KEY) == holder
        ]

    def record_work(self, task_ids: list[str], commit: str, mission_id: str) -> None:
        """Note where the work of *task_ids* is: *commit* (an integration head holding it).

        ``metadata["rho.commit"]`` and ``metadata["rho.mission"]``: a later mission checks that
        its base holds the work of every completed blocker (see ``_carryover``). A failure is a
        problem, not an error.
        """
        if self.store is None or not task_ids:
            return
        try:
            record_work(self.store, task_ids, commit, mission_id)
        except TaskStoreError as exc:
            self.problems.append(f"task store not updated with where the work is: {exc}")

    def forget_work(self, task_ids: list[str], mission_id: str) -> None:
        """Drop this mission's note of where the work of *task_ids* is (a bisection blamed
        them: the head that landed lacks it). A failure is a problem, not an error."""
        if self.store is None or not task_ids:
            return
        try:
            forget_work(self.store, task_ids, mission_id)
        except TaskStoreError as exc:
            self.problems.append(f"task store not updated with where the work is: {exc}")

    def release(self, holder: str) -> None:
        """Drop the leases of mission *holder*; a failure is a problem, not an error."""
        if self.store is None:
            return
        try:
            release_tasks(self.store, holder)
        except TaskStoreError as exc:
            self.problems.append(f"task store leases not released: {exc}")

    def _write(self, store: TaskStore, batch: list[_Pending]) -> None:
        """One locked rewrite applying *batch* in order (runs in a worker thread)."""
        # Problems are added from this thread: a list extend is atomic, and a cancellation of
        # the waiting caller must not lose them.
        try:
            missing = store.record_progress([pending.change for pending in batch])
        except TaskStoreError as exc:
            self.problems += [_problem(p.change.task_id, exc) for p in batch]
        else:
            self.problems += [_problem(i, TaskNotFoundError(i)) for i in missing]
        finally:
            for pending in batch:
                pending.done = True


def _problem(task_id: str, exc: Exception) -> str:
    return f"task store not updated for {task_id}: {exc}"
