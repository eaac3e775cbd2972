"""Keep the task store in step with a ``--from-tasks`` mission.

Features map to tasks one to one and their statuses share names. A store update never stops
the mission: a task deleted or a store made unwritable while the mission runs is recorded in
``problems`` and reported by the caller, because the mission files stay the record of truth.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from taskstore import TaskStore, TaskStoreError

if TYPE_CHECKING:
    from ._mission import Mission

__all__ = ["StoreSync"]


class StoreSync:
    """Writes feature transitions to the mission's task store, if it has one."""

    def __init__(self, store: TaskStore | None) -> None:
        self.store = store
        self.problems: list[str] = []

    @classmethod
    def for_mission(cls, mission: Mission) -> StoreSync:
        """A sync for the store named in the mission's config (a no-op without one)."""
        path = mission.config.task_store
        return cls(TaskStore(Path(path)) if path else None)

    async def set_status(
        self, task_id: str, status: str, *, attempts: int, error: str | None = None
    ) -> None:
        """Record *status* (and on failure ``lastError``) for *task_id*."""
        if self.store is None:
            return
        store = self.store

        def update() -> None:
            store.update(task_id, status=status, attempts=attempts, last_error=error)

        try:
            await anyio.to_thread.run_sync(update)
        except TaskStoreError as exc:
            self.problems.append(f"task store not updated for {task_id}: {exc}")
