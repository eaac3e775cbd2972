"""The writes agents call in loops, ``add`` and ``update``, without pydantic.

Over a store rho wrote (every task exactly its model's dump, as ``read_task_dicts`` checks, and
only values both serializers write alike), the file's own JSON objects are changed by the rules
``TaskStore`` applies (``_rules``, ``_guard``, ``_limits``, ``_triage``), under the same lock
(``flock`` of ``<store>.lock``, which is what filelock takes on POSIX), and written back with
``json.dumps``: the bytes ``dump_document`` writes for the same document. For any other store the
functions return None before anything is written, and the caller writes through ``TaskStore``.
A refusal raises as ``TaskStore`` would, before anything is written too.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal, NamedTuple, TypeVar

from ._atomic import ensure_private_dir, ensure_private_file, write_atomic
from ._errors import InvalidTaskError, TaskNotFoundError, quote
from ._fastread import DUMP_ORDER, dumped_tasks
from ._guard import check_caps, check_new_blockers
from ._limits import MAX_METADATA_DEPTH, json_depth
from ._rules import (
    READS_AS,
    check_changes,
    child_id,
    next_number,
    now_rfc3339_seconds,
)
from ._triage import change_labels, set_priority

__all__ = ["fast_add", "fast_update"]

R = TypeVar("R")
JsonTask = dict[str, Any]
# The document keys in the order the model dumps them; every one written.
_DOCUMENT_ORDER = ["schema_version", "revision", "next_id", "tasks"]


class _Node(NamedTuple):
    """What the graph checks read of a task (``_guard.Blocking``)."""

    id: str
    blocker_ids: list[str]


def fast_add(
    path: Path,
    subject: str,
    *,
    description: str = "",
    blocked_by: Iterable[str] = (),
    related: Iterable[str] = (),
    parent: str | None = None,
    command: str | None = None,
    priority: int | None = None,
    labels: Iterable[str] = (),
) -> JsonTask | None:
    """``TaskStore.add`` on a store rho wrote: the new task as dumped, or None for another store.

    Raises:
        TaskStoreError: what ``TaskStore.add`` refuses, for the same reasons.
        OSError: the store, its folder or its lock cannot be read or written.
    """
    check_changes({"subject": subject, "description": description, "command": command})

    def change(document: dict[str, Any]) -> JsonTask:
        tasks: list[JsonTask] = document["tasks"]
        task = _new_task(document, subject, description, parent, command)
        for related_id in related:
            _link(tasks, task, related_id, "related")
        for blocker in blocked_by:
            _link(tasks, task, blocker, "blocks")
        _triage(task, priority, labels, ())
        tasks.append(task)
        check_caps(_nodes(tasks))
        return task

    return _mutate(path, change)


def fast_update(
    path: Path,
    task_id: str,
    *,
    status: str | None = None,
    subject: str | None = None,
    description: str | None = None,
    add_blockers: Iterable[str] = (),
    remove_blockers: Iterable[str] = (),
    add_related: Iterable[str] = (),
    command: str | None = None,
    priority: int | None = None,
    add_labels: Iterable[str] = (),
    remove_labels: Iterable[str] = (),
) -> JsonTask | None:
    """``TaskStore.update`` on a store rho wrote: the task as dumped, or None for another store.

    Raises:
        TaskStoreError: what ``TaskStore.update`` refuses, for the same reasons.
        OSError: the store, its folder or its lock cannot be read or written.
    """
    check_changes({"subject": subject, "description": description, "command": command}, status)

    def change(document: dict[str, Any]) -> JsonTask:
        tasks: list[JsonTask] = document["tasks"]
        task = _find(tasks, task_id)
        for blocker in remove_blockers:
            _unlink_blocker(task, blocker)
        for related_id in add_related:
            _link(tasks, task, related_id, "related")
        for blocker in add_blockers:
            _link(tasks, task, blocker, "blocks")
        for key, value in (("status", status), ("subject", subject), ("description", description)):
            if value is not None:
                task[key] = value
        if command is not None:
            task["metadata"]["command"] = command
        task["updatedAt"] = now_rfc3339_seconds()
        _triage(task, priority, add_labels, remove_labels)
        check_caps(_nodes(tasks))
        return _in_dump_order(tasks, task)

    return _mutate(path, change)


def _mutate(path: Path, change: Callable[[dict[str, Any]], R]) -> R | None:
    """``TaskStore.mutate`` for a store rho wrote; None, with nothing written, for another."""
    ensure_private_dir(path.parent)
    lock_path = Path(f"{path}.lock")
    ensure_private_file(lock_path)
    lock = os.open(lock_path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the descriptor closes
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None  # a new store: TaskStore makes it
        try:
            document = json.loads(raw, parse_float=_refuse_float, parse_constant=_refuse_float)
        except (ValueError, RecursionError):  # a float, or not JSON: TaskStore says which
            return None
        if not _written_by_rho(document):
            return None
        result = change(document)
        document["revision"] += 1
        document["tasks"].sort(key=lambda task: task["id"])
        text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
        write_atomic(path, text.encode())  # a lone surrogate fails here, before the write
        return result
    finally:
        os.close(lock)


def _refuse_float(text: str) -> Any:
    # ``json.dumps`` and pydantic write some floats apart (``1e+16`` against ``1e16``).
    raise ValueError(f"a float: {text}")


def _written_by_rho(document: Any) -> bool:
    """Whether *document* (parsed without floats) is a model dump that ``json.dumps`` writes as
    pydantic does: not nested so deep that one serializer may refuse it where the other does not.
    """
    if type(document) is not dict or list(document) != _DOCUMENT_ORDER:
        return False
    tasks = dumped_tasks(document)  # only metadata may nest in such tasks
    return tasks is not None and all(
        json_depth(task["metadata"]) <= MAX_METADATA_DEPTH for task in tasks
    )


def _new_task(
    document: dict[str, Any],
    subject: str,
    description: str,
    parent: str | None,
    command: str | None,
) -> JsonTask:
    tasks: list[JsonTask] = document["tasks"]
    if parent is None:
        number = next_number(document["next_id"], (task["id"] for task in tasks))
        task_id = f"task_{number}"
        document["next_id"] = number + 1
    else:
        family = [(task["id"], task.get("parentId")) for task in tasks]
        task_id = child_id(_find(tasks, parent)["id"], family)
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


def _find(tasks: list[JsonTask], task_id: str) -> JsonTask:
    for task in tasks:
        if task["id"] == task_id:
            return task
    raise TaskNotFoundError(task_id)


def _node(task: JsonTask) -> _Node:
    blockers = [d["targetId"].strip() for d in task["dependencies"] if d["type"] == "blocks"]
    return _Node(task["id"], blockers)


def _nodes(tasks: list[JsonTask]) -> list[_Node]:
    return [_node(task) for task in tasks]


def _link(
    tasks: list[JsonTask], task: JsonTask, target: str, kind: Literal["blocks", "related"]
) -> None:
    """``_links.link`` for the two kinds ``add`` and ``update`` make."""
    if kind == "blocks":
        check_new_blockers(_nodes(tasks), _node(task), target)
        target = target.strip()
    else:
        target = _find(tasks, target.strip())["id"]
        if target == task["id"]:
            raise InvalidTaskError(f"task {quote(task['id'])} cannot be {READS_AS[kind]} itself")
    dependencies: list[dict[str, str]] = task["dependencies"]
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


def _in_dump_order(tasks: list[JsonTask], task: JsonTask) -> JsonTask:
    """*task* with its keys in the dump's order (a new ``updatedAt`` lands last), in place in
    *tasks*."""
    ordered = {key: task[key] for key in DUMP_ORDER if key in task}
    tasks[next(n for n, other in enumerate(tasks) if other is task)] = ordered
    return ordered
