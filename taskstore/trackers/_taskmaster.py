"""Task Master: ``.taskmaster/tasks/tasks.json``, tagged (``{"master": {"tasks": [...]}}``) or
the older single list (``{"tasks": [...]}``).

A task: ``id`` (a number), ``title``, ``description``, ``details``, ``status``, ``priority``
(``high``, ``medium``, ``low``), ``dependencies`` (ids of tasks, all blocking, as ``next`` reads
them) and ``subtasks``. A subtask ``S`` of task ``P`` becomes ``P.S``, a child of ``P``; in its
``dependencies`` a number (or a plain number string) is a sibling subtask, ``"Q.T"`` subtask ``T``
of task ``Q``.

A subtask may have subtasks of its own: ``P.S.T``, a child of ``P.S``. Task Master's own
``tasks.json`` has been seen with every subtask of one task carrying the same ``id`` (all eight
``42``): the subtasks of a parent whose ids repeat are numbered by their position under it
(1, 2, ...), the way Task Master numbers them, one warning per parent; the same file gives the
same ids at every import.

Decision: docs/decisions/0104-trackers.md
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


def taskmaster_items(data: Any, tag: str | None, warnings: list[str] | None = None) -> list[Item]:
    """The items of the tag *tag* (default ``master``, or the file's only list); what was
    renumbered is said in *warnings*."""
    said = [] if warnings is None else warnings
    items: list[Item] = []
    for task in _tagged(data, tag):
        _with_subtasks(task, None, None, items, said)
    return items


def _with_subtasks(
    task: dict[str, Any],
    parent: str | None,
    own: str | None,
    items: list[Item],
    warnings: list[str],
) -> None:
    """*task* (numbered *own* under *parent* when given) and its subtasks, depth first."""
    item = _item(task, parent, own)
    items.append(item)
    subtasks = task.get("subtasks") or []
    if not isinstance(subtasks, list) or not all(isinstance(sub, dict) for sub in subtasks):
        raise TrackerFormatError(f'taskmaster: the "subtasks" of {quote(item.id)} are no list')
    item.group = bool(subtasks)  # its subtasks are the work
    numbers = [str(sub.get("id")) for sub in subtasks]
    by_position = len(set(numbers)) != len(numbers)
    if by_position:
        warnings.append(
            f"taskmaster: the subtasks of {quote(item.id)} repeat their ids; numbered "
            f"{item.id}.1 to {item.id}.{len(subtasks)} by their position"
        )
    for position, sub in enumerate(subtasks, start=1):
        _with_subtasks(sub, item.id, str(position) if by_position else None, items, warnings)


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


def _item(task: dict[str, Any], parent: str | None, number: str | None = None) -> Item:
    own = task.get("id") if number is None else number
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
