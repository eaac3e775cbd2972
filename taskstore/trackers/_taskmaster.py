"""Task Master: ``.taskmaster/tasks/tasks.json``, tagged (``{"master": {"tasks": [...]}}``) or
the older single list (``{"tasks": [...]}``).

A task: ``id`` (a number), ``title``, ``description``, ``details``, ``status``, ``priority``
(``high``, ``medium``, ``low``), ``dependencies`` (ids of tasks, all blocking, as ``next`` reads
them) and ``subtasks``. A subtask ``S`` of task ``P`` becomes ``P.S``, a child of ``P``; in its
``dependencies`` a number (or a plain number string) is a sibling subtask, ``"Q.T"`` subtask ``T``
of task ``Q``.
"""

from __future__ import annotations

from typing import Any

from .._errors import quote
from ._items import Item, TrackerFormatError

__all__ = ["FROM_TASKMASTER", "TO_TASKMASTER", "taskmaster_items"]

FROM_TASKMASTER = {
    "pending": "pending",
    "in-progress": "in_progress",
    "blocked": "skipped",
    "review": "reviewing",
    "deferred": "skipped",
    "cancelled": "cancelled",
    "done": "completed",
}
TO_TASKMASTER = {
    "pending": "pending",
    "in_progress": "in-progress",
    "reviewing": "review",
    "completed": "done",
    "failed": "pending",
    "skipped": "deferred",
    "cancelled": "cancelled",
}
_PRIORITIES = {"critical": 0, "high": 1, "medium": 2, "low": 3}
DEFAULT_TAG = "master"


def taskmaster_items(data: Any, tag: str | None) -> list[Item]:
    """The items of the tag *tag* (default ``master``, or the file's only list)."""
    tasks = _tagged(data, tag)
    items: list[Item] = []
    for task in tasks:
        parent = _item(task, None)
        items.append(parent)
        items.extend(_item(sub, parent.id) for sub in task.get("subtasks") or [])
    return items


def _tagged(data: Any, tag: str | None) -> list[dict[str, Any]]:
    if not isinstance(data, dict):
        raise TrackerFormatError("taskmaster: expected the object of tasks.json")
    if tag is None and isinstance(data.get("tasks"), list):
        return _tasks(data["tasks"])
    tags = sorted(k for k, v in data.items() if isinstance(v, dict) and "tasks" in v)
    wanted = tag or (DEFAULT_TAG if DEFAULT_TAG in tags else (tags[0] if len(tags) == 1 else None))
    if wanted is None or wanted not in tags:
        shown = ", ".join(tags) or "none"
        asked = f"no tag {quote(wanted)}" if wanted else "several tags and no --tag"
        raise TrackerFormatError(f"taskmaster: {asked} in the file (its tags: {shown})")
    return _tasks(data[wanted]["tasks"])


def _tasks(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(task, dict) for task in value):
        raise TrackerFormatError('taskmaster: "tasks" must be a list of task objects')
    return value


def _item(task: dict[str, Any], parent: str | None) -> Item:
    own = task.get("id")
    if not isinstance(own, int | str) or isinstance(own, bool) or str(own) == "":
        raise TrackerFormatError("taskmaster: a task without an id")
    ident = f"{parent}.{own}" if parent is not None else str(own)
    status = str(task.get("status", "pending"))
    if status not in FROM_TASKMASTER:
        raise TrackerFormatError(
            f"taskmaster: task {quote(ident)} has an unknown status {quote(status)}"
        )
    parts = [str(task.get("description") or "")]
    if task.get("details"):
        parts.append(f"Details:\n{task['details']}")
    if task.get("testStrategy"):
        parts.append(f"Test strategy:\n{task['testStrategy']}")
    item = Item(
        id=ident,
        subject=str(task.get("title") or ident),
        status=FROM_TASKMASTER[status],
        tool_status=status,
        description="\n\n".join(part for part in parts if part),
        priority=_PRIORITIES.get(str(task.get("priority", "")).lower()),
        parent=parent,
    )
    for dependency in task.get("dependencies") or []:
        item.blockers.append(_dependency(dependency, parent))
    return item


def _dependency(value: Any, parent: str | None) -> str:
    text = str(value)
    if parent is not None and "." not in text:
        return f"{parent}.{text}"  # a subtask's number: its sibling
    return text
