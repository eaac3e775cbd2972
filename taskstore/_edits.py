"""The one implementation of ``add`` and ``update``: a task's JSON object, as the store dumps
it, changed by the store's rules and checked against the rest of the graph.

Both write paths call it under the store's lock, so they cannot drift apart: ``TaskStore.add``
and ``update`` over the model (the task dumped, changed here, validated back) and the light path
``_fastwrite`` over the file's own JSON objects. The other tasks are read only through ``Node``
(what the graph checks and new ids need), which a ``Task`` is and ``TaskNode`` makes of a JSON
object. Every check runs before the caller writes: a refusal leaves the file as it was.
No pydantic here: the light path imports this.

Decision: docs/decisions/0804-quick-lane.md
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal, Protocol

from ._errors import InvalidTaskError, TaskNotFoundError, quote
from ._fastread import DUMP_ORDER
from ._guard import check_caps, check_new_blockers
from ._rules import READS_AS, check_changes, child_id, next_number, now_rfc3339_seconds
from ._triage import change_labels, read_labels, set_priority

__all__ = ["Addition", "JsonTask", "Node", "TaskNode", "Update"]

JsonTask = dict[str, Any]


class Node(Protocol):
    """What an edit reads of a task of the store: a ``Task``, or a ``TaskNode``."""

    @property
    def id(self) -> str: ...

    @property
    def parent_id(self) -> str | None: ...

    @property
    def blocker_ids(self) -> list[str]: ...


class TaskNode:
    """A task's JSON object read as a ``Node``; it follows the object as an edit changes it."""

    __slots__ = ("task",)

    def __init__(self, task: JsonTask) -> None:
        self.task = task

    @property
    def id(self) -> str:
        return str(self.task["id"])

    @property
    def parent_id(self) -> str | None:
        return self.task.get("parentId")

    @property
    def blocker_ids(self) -> list[str]:
        return [d["targetId"].strip() for d in self.task["dependencies"] if d["type"] == "blocks"]


class Addition:
    """An ``add``: its arguments, checked before the store is read (a refusal then writes
    nothing, not even the store's folder); ``apply`` makes the task under the lock."""

    def __init__(
        self,
        subject: str,
        *,
        description: str = "",
        blocked_by: Iterable[str] = (),
        related: Iterable[str] = (),
        parent: str | None = None,
        command: str | None = None,
        priority: int | None = None,
        labels: Iterable[str] = (),
    ) -> None:
        """Raises: InvalidTaskError, FieldLimitError: a blank subject, a text beyond its limit."""
        check_changes({"subject": subject, "description": description, "command": command})
        self.subject, self.description = subject, description
        self.blocked_by, self.related = tuple(blocked_by), tuple(related)
        self.parent, self.command = parent, command
        self.priority, self.labels = priority, tuple(labels)

    def apply(self, tasks: Sequence[Node], next_id: int) -> tuple[JsonTask, int]:
        """A new pending task beside *tasks* (every task of the store), and the store's next
        counter; the caller adds the task to the store. See ``TaskStore.add`` for the rules.

        Raises:
            TaskStoreError: what ``TaskStore.add`` refuses.
        """
        if self.parent is None:
            number = next_number(next_id, (task.id for task in tasks))
            task_id, next_id = f"task_{number}", number + 1
        else:
            family = [(task.id, task.parent_id) for task in tasks]
            task_id = child_id(_find(tasks, self.parent).id, family)
        task = _new_task(task_id, self.subject, self.description, self.parent, self.command)
        node = TaskNode(task)
        for related_id in self.related:
            _link(tasks, node, related_id, "related")
        for blocker in self.blocked_by:
            _link(tasks, node, blocker, "blocks")
        _triage(task, self.priority, self.labels, ())
        check_caps([*tasks, node])
        return task, next_id


class Update:
    """An ``update`` of one task: its arguments, checked before the store is read; ``apply``
    changes the task under the lock."""

    def __init__(
        self,
        task_id: str,
        *,
        status: str | None = None,
        subject: str | None = None,
        description: str | None = None,
        add_blockers: Iterable[str] = (),
        remove_blockers: Iterable[str] = (),
        add_related: Iterable[str] = (),
        command: str | None = None,
        last_error: str | None = None,
        attempts: int | None = None,
        priority: int | None = None,
        add_labels: Iterable[str] = (),
        remove_labels: Iterable[str] = (),
        labels: Iterable[str] | None = None,
        owner: str | None = None,
    ) -> None:
        """Raises: InvalidTaskError, FieldLimitError: an unknown status, a blank subject, a
        text beyond its limit."""
        texts = {"subject": subject, "description": description, "command": command}
        check_changes(texts | {"lastError": last_error, "owner": owner}, status)
        self.task_id = task_id
        self.fields: dict[str, object] = {
            "status": status,
            "subject": subject,
            "description": description,
        }
        self.fields |= {"lastError": last_error, "attempts": attempts}
        self.add_blockers, self.remove_blockers = tuple(add_blockers), tuple(remove_blockers)
        self.add_related, self.command, self.priority = tuple(add_related), command, priority
        self.add_labels, self.remove_labels = tuple(add_labels), tuple(remove_labels)
        self.labels = None if labels is None else tuple(labels)
        self.owner = owner

    def apply(self, tasks: Sequence[Node], task: JsonTask) -> JsonTask:
        """*task* changed in place, returned with its keys in the dump's order (a new dict).

        *tasks* holds every task of the store, *task* among them as a ``TaskNode``. See
        ``TaskStore.update`` for the rules.

        Raises:
            TaskStoreError: what ``TaskStore.update`` refuses.
        """
        node = TaskNode(task)
        for blocker in self.remove_blockers:
            _unlink_blocker(task, blocker)
        for related_id in self.add_related:
            _link(tasks, node, related_id, "related")
        for blocker in self.add_blockers:
            _link(tasks, node, blocker, "blocks")
        task.update((key, value) for key, value in self.fields.items() if value is not None)
        if self.command is not None:
            task["metadata"]["command"] = self.command
        task["updatedAt"] = now_rfc3339_seconds()
        _triage(task, self.priority, *self._labels(task))
        if self.owner is not None:  # "" clears it
            task["owner"] = self.owner or None
        check_caps(tasks)
        return _in_dump_order(task)

    def _labels(self, task: JsonTask) -> tuple[list[str], list[str]]:
        """The labels to add and to remove; a whole set (``labels``) adds to both."""
        adding, removing = list(self.add_labels), list(self.remove_labels)
        if self.labels is not None:
            wanted, present = set(self.labels), read_labels(task["metadata"])
            removing += [label for label in present if label not in wanted]
            adding += sorted(wanted - set(present))
        return adding, removing


def _in_dump_order(task: JsonTask) -> JsonTask:
    """*task* without None values, its fields in the dump's order, then other tools' keys."""
    ordered = {key: task[key] for key in DUMP_ORDER if task.get(key) is not None}
    return ordered | {key: value for key, value in task.items() if value is not None}


def _new_task(
    task_id: str, subject: str, description: str, parent: str | None, command: str | None
) -> JsonTask:
    stamp = now_rfc3339_seconds()
    task: JsonTask = {"id": task_id}
    if parent is not None:
        task["parentId"] = parent
    task.update(subject=subject, description=description, status="pending")
    dependencies = [{"targetId": parent, "type": "parent-child"}] if parent is not None else []
    metadata = {"command": command} if command is not None else {}
    task.update(dependencies=dependencies, metadata=metadata, createdAt=stamp, updatedAt=stamp)
    task["attempts"] = 0
    return task


def _find(tasks: Sequence[Node], task_id: str) -> Node:
    for task in tasks:
        if task.id == task_id:
            return task
    raise TaskNotFoundError(task_id)


def _link(
    tasks: Sequence[Node], node: TaskNode, target: str, kind: Literal["blocks", "related"]
) -> None:
    """``_links.link`` for the two kinds ``add`` and ``update`` make."""
    if kind == "blocks":
        check_new_blockers(tasks, node, target)
        target = target.strip()
    else:
        target = _find(tasks, target.strip()).id
        if target == node.id:
            raise InvalidTaskError(f"task {quote(node.id)} cannot be {READS_AS[kind]} itself")
    dependencies: list[dict[str, str]] = node.task["dependencies"]
    if not any(d["targetId"].strip() == target and d["type"] == kind for d in dependencies):
        dependencies.append({"targetId": target, "type": kind})


def _unlink_blocker(task: JsonTask, target: str) -> None:
    """``_links.unlink`` of a ``blocks`` dependency."""
    target = target.strip()
    dependencies: list[dict[str, str]] = task["dependencies"]
    kept = [
        d for d in dependencies if not (d["type"] == "blocks" and d["targetId"].strip() == target)
    ]
    if len(kept) == len(dependencies):
        raise InvalidTaskError(f"task {quote(task['id'])} is not blocked by {quote(target)}")
    task["dependencies"] = kept


def _triage(
    task: JsonTask, priority: int | None, add_labels: Iterable[str], remove_labels: Iterable[str]
) -> None:
    if priority is not None:
        set_priority(task["metadata"], priority)
    added, removed = list(add_labels), list(remove_labels)
    if added or removed:  # otherwise a hand-written labels value stays as it is
        change_labels(task["metadata"], added, removed, task["id"])
