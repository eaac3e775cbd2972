"""The ``TaskList`` action API: the agent tool's view of a store, as plain JSON-ready dicts.

Decision: docs/decisions/0101-task-store-file.md
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ._errors import ScheduleError
from ._fastread import TaskView, read_task_views
from ._model import Task
from ._schedule import STATUSES, compute_schedule
from ._store import TaskStore

__all__ = ["TaskList"]


class TaskList:
    """Answer ``{"action": ...}`` requests over a store, the way the agent tool does.

    Actions: ``ready`` (``{"tasks": [...], "waves": [[...]]}``), ``list`` (every task),
    ``failed`` (failed tasks with ``lastError`` and ``attempts``), ``compact`` (counts per status
    and one short line per task that is not finished). Failures come back as ``{"error": ...}``;
    a schedule failure reads ``validate task schedule: <message>``.
    """

    def __init__(self, store: TaskStore) -> None:
        self.store = store

    def run(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Answer one request; never raises for a bad request or an invalid graph."""
        action = request.get("action")
        handler = {
            "ready": self._ready,
            "list": self._list,
            "failed": self._failed,
            "compact": self._compact,
        }.get(action if isinstance(action, str) else "")
        if handler is None:
            shown = json.dumps(action, ensure_ascii=False, default=str)
            return {"error": f"unknown action {shown}; expected compact, failed, list or ready"}
        return handler()

    def _ready(self) -> dict[str, Any]:
        try:
            # The scheduling read (``read_task_views``): what `rho task ready --json` reads, at a
            # fraction of the full model's cost; the same answer.
            views: Sequence[TaskView | Task] = read_task_views(self.store.path)
            schedule = compute_schedule(views)
        except ScheduleError as exc:
            return {"error": f"validate task schedule: {exc}"}
        return {"tasks": [task.summary() for task in schedule.ready], "waves": schedule.waves}

    def _list(self) -> dict[str, Any]:
        return {"tasks": [task.summary() for task in self.store.tasks()]}

    def _failed(self) -> dict[str, Any]:
        failed = [task for task in self.store.tasks() if task.status == "failed"]
        return {
            "tasks": [
                {**task.summary(), "lastError": task.last_error, "attempts": task.attempts}
                for task in failed
            ]
        }

    def _compact(self) -> dict[str, Any]:
        tasks = self.store.tasks()
        counts = Counter(task.status for task in tasks)
        open_lines = [
            _compact_line(task.id, task.status, task.subject, task.blocker_ids)
            for task in tasks
            if task.status not in _FINISHED
        ]
        return {"counts": {s: counts[s] for s in sorted(STATUSES) if counts[s]}, "open": open_lines}


_FINISHED = frozenset({"completed", "skipped", "cancelled"})


def _compact_line(task_id: str, status: str, subject: str, blockers: list[str]) -> str:
    line = f"{task_id} [{status}] {subject}"
    if blockers:
        line += f" (blocked by {', '.join(sorted(set(blockers)))})"
    return line
