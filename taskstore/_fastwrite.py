"""The light write path of ``add`` and ``update``: the store's own JSON objects, no pydantic.

The change itself is ``_edits`` (the one implementation ``TaskStore.add`` and ``update`` call
too); this module is what the light path does around it. Over a store rho wrote (every task
exactly its model's dump, as ``read_task_dicts`` checks, and only values both serializers write
alike) it takes the same lock (``flock`` of ``<store>.lock``, which is what filelock takes on
POSIX), applies the edit to the file's JSON objects and writes them back with ``json.dumps``:
the bytes ``dump_document`` writes for the same document. For any other store the functions
return None before anything is written, and the caller writes through ``TaskStore``. A refusal
raises as ``TaskStore`` would, before anything is written too.

Decision: docs/decisions/0804-quick-lane.md
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from . import _edits
from ._atomic import ensure_private_dir, ensure_private_file, write_atomic
from ._errors import TaskNotFoundError
from ._fastread import dumped_tasks
from ._limits import MAX_METADATA_DEPTH, json_depth

__all__ = ["fast_add", "fast_update"]

R = TypeVar("R")
JsonTask = dict[str, Any]
# The document keys in the order the model dumps them; every one written.
_DOCUMENT_ORDER = ["schema_version", "revision", "next_id", "tasks"]


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
    addition = _edits.Addition(
        subject,
        description=description,
        blocked_by=blocked_by,
        related=related,
        parent=parent,
        command=command,
        priority=priority,
        labels=labels,
    )

    def change(document: dict[str, Any]) -> JsonTask:
        tasks: list[JsonTask] = document["tasks"]
        task, document["next_id"] = addition.apply(_nodes(tasks), document["next_id"])
        tasks.append(task)
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
    update = _edits.Update(
        task_id,
        status=status,
        subject=subject,
        description=description,
        add_blockers=add_blockers,
        remove_blockers=remove_blockers,
        add_related=add_related,
        command=command,
        priority=priority,
        add_labels=add_labels,
        remove_labels=remove_labels,
    )

    def change(document: dict[str, Any]) -> JsonTask:
        tasks: list[JsonTask] = document["tasks"]
        place = next((n for n, task in enumerate(tasks) if task["id"] == task_id), None)
        if place is None:
            raise TaskNotFoundError(task_id)
        tasks[place] = update.apply(_nodes(tasks), tasks[place])
        return tasks[place]

    return _mutate(path, change)


def _nodes(tasks: list[JsonTask]) -> list[_edits.TaskNode]:
    return [_edits.TaskNode(task) for task in tasks]


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
