"""Errors raised by the task store and its scheduling validator.

The tree::

    TaskStoreError
    ├── StoreReadError          the store file cannot be read or parsed
    ├── StoreWriteError         the store file cannot be replaced
    ├── TaskNotFoundError       an id names no task (also LookupError)
    ├── InvalidTaskError        a mutation carries a bad value (also ValueError)
    │   ├── FieldLimitError         a field longer (or nested deeper) than its limit
    │   ├── TaskInUseError          a task to delete has subtasks or other tasks link to it
    │   └── ClaimError              a task to claim is not pending, or not ready
    └── ScheduleError           the blocking graph cannot be scheduled (also ValueError)
        ├── ScheduleLimitError      more than 1,000 tasks or 10,000 blocking edges
        ├── TaskIdentityError       a blank id, or an id that two tasks share
        ├── TaskStatusError         a status outside the known set
        ├── EmptyBlockerError       a ``blocks`` dependency with a blank target
        ├── SelfBlockerError        a task that blocks itself
        ├── MissingBlockerError     a blocker that names no task
        └── ScheduleCycleError      a blocking cycle; ``.cycle`` holds one concrete cycle

Messages are lowercase, carry no trailing period, and quote values as JSON strings.

Decision: docs/decisions/0101-task-store-file.md
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

__all__ = [
    "ClaimError",
    "EmptyBlockerError",
    "FieldLimitError",
    "InvalidTaskError",
    "MissingBlockerError",
    "ScheduleCycleError",
    "ScheduleError",
    "ScheduleLimitError",
    "SelfBlockerError",
    "StoreReadError",
    "StoreWriteError",
    "TaskIdentityError",
    "TaskInUseError",
    "TaskNotFoundError",
    "TaskStatusError",
    "TaskStoreError",
    "quote",
]


def quote(value: str) -> str:
    """Return *value* as a JSON string, the quoting every message uses."""
    return json.dumps(value, ensure_ascii=False)


class TaskStoreError(Exception):
    """Raised for every failure of the task store; the root of this tree."""


class StoreReadError(TaskStoreError):
    """Raised when the store file cannot be read, decoded or parsed."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"read task store {path}: {reason}")
        self.path = path
        self.reason = reason


class StoreWriteError(TaskStoreError):
    """Raised when the store file cannot be written; the previous file stays intact."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"write task store {path}: {reason}")
        self.path = path
        self.reason = reason


class TaskNotFoundError(TaskStoreError, LookupError):
    """Raised when an id names no task of the store."""

    def __init__(self, task_id: str) -> None:
        super().__init__(f"task {quote(task_id)} not found")
        self.task_id = task_id

    def __str__(self) -> str:
        # LookupError would repr() the message; keep it plain.
        return str(self.args[0])


class InvalidTaskError(TaskStoreError, ValueError):
    """Raised when a mutation carries a value the store refuses (status, subject, id)."""


class FieldLimitError(InvalidTaskError):
    """Raised when a field that a mutation brings exceeds its limit (see ``taskstore._limits``).

    ``field`` is the JSON name (``subject``, ``id``, ``metadata``, ...), ``size`` what was found
    and ``limit`` the maximum, counted in ``unit``; ``task_id`` names the task when the caller
    gave it (an import), else None.
    """

    def __init__(
        self,
        field: str,
        size: int,
        limit: int,
        *,
        task_id: str | None = None,
        unit: str = "characters",
    ) -> None:
        who = "task" if task_id is None else f"task {quote(task_id)}"
        super().__init__(f"{who} {field} is {size} {unit}; the limit is {limit}")
        self.field = field
        self.size = size
        self.limit = limit
        self.task_id = task_id
        self.unit = unit


class TaskInUseError(InvalidTaskError):
    """Raised when a task cannot be deleted: it has subtasks, or other tasks link to it.

    ``subtasks`` lists the ids of its children (``parentId``), which block a deletion even when
    forced; ``dependents`` maps each task that links to it to the kinds of those links
    (``blocks``, ``related``, ``parent-child``), which a forced deletion removes.
    """

    def __init__(
        self,
        task_id: str,
        *,
        subtasks: Sequence[str] = (),
        dependents: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        self.task_id = task_id
        self.subtasks = list(subtasks)
        self.dependents = {key: list(kinds) for key, kinds in (dependents or {}).items()}
        if self.subtasks:
            reason = f"it has subtasks {_some(quote(child) for child in self.subtasks)}"
        else:
            named = (f"{quote(key)} ({', '.join(kinds)})" for key, kinds in self.dependents.items())
            reason = f"it is referenced by {_some(named)}"
        super().__init__(f"cannot delete task {quote(task_id)}: {reason}")


def _some(items: Iterable[str], shown: int = 10) -> str:
    """The first *shown* items joined by commas, then how many more (a message stays short)."""
    listed = list(items)
    head = ", ".join(listed[:shown])
    return head if len(listed) <= shown else f"{head} and {len(listed) - shown} more"


class ScheduleError(TaskStoreError, ValueError):
    """Raised when the blocking graph cannot be scheduled; the root of validator errors."""


class ScheduleLimitError(ScheduleError):
    """Raised when the graph exceeds the task cap or the blocking-edge cap."""

    def __init__(self, what: str, limit: int) -> None:
        super().__init__(f"task schedule exceeds {limit}-{what} limit")
        self.what = what
        self.limit = limit


class TaskIdentityError(ScheduleError):
    """Raised for a blank task id or an id that two tasks share."""

    def __init__(self, task_id: str) -> None:
        super().__init__(f"task schedule contains invalid task identity {quote(task_id)}")
        self.task_id = task_id


class TaskStatusError(ScheduleError):
    """Raised for a status outside the known set."""

    def __init__(self, task_id: str, status: str) -> None:
        super().__init__(f"task {quote(task_id)} has invalid status {quote(status)}")
        self.task_id = task_id
        self.status = status


class EmptyBlockerError(ScheduleError):
    """Raised for a ``blocks`` dependency whose target is blank."""

    def __init__(self, task_id: str) -> None:
        super().__init__(f"task {quote(task_id)} has an empty blocking dependency")
        self.task_id = task_id


class SelfBlockerError(ScheduleError):
    """Raised for a task that lists itself as a blocker."""

    def __init__(self, task_id: str) -> None:
        super().__init__(f"task {quote(task_id)} blocks itself")
        self.task_id = task_id


class MissingBlockerError(ScheduleError):
    """Raised for a blocker that names no task of the graph."""

    def __init__(self, task_id: str, blocker_id: str) -> None:
        super().__init__(f"task {quote(task_id)} depends on missing blocker {quote(blocker_id)}")
        self.task_id = task_id
        self.blocker_id = blocker_id


class ScheduleCycleError(ScheduleError):
    """Raised when blocking dependencies form a cycle.

    ``cycle`` lists one concrete cycle, first element equal to the last, each task followed by
    one of its blockers: ``["a", "b", "a"]`` means a waits on b and b waits on a.
    """

    def __init__(self, cycle: list[str]) -> None:
        path = " -> ".join(cycle)
        super().__init__(f"cycle detected in blocking task dependency graph: {path}")
        self.cycle = cycle


class ClaimError(InvalidTaskError):
    """Raised when a claim (pending -> in_progress, with an owner) is refused: the task is
    claimed already, not pending, or has a blocker that is not completed."""
