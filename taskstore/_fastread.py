"""The read path agents call in loops: plain JSON into light records, no pydantic import.

``read_task_views`` accepts only the canonical shape that ``Task`` itself writes (exact types,
known dependency types). Anything else falls back to the full model, which then reports the
problem precisely; so both paths always agree, and the common case stays cheap.

Decision: docs/decisions/0101-task-store-file.md
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ._decode import decode_json
from ._errors import StoreReadError

if TYPE_CHECKING:
    from ._model import Task

__all__ = [
    "DUMP_ORDER",
    "DependencyView",
    "TaskView",
    "dumped_tasks",
    "read_task_dicts",
    "read_task_views",
]

_DEPENDENCY_TYPES = frozenset({"blocks", "related", "parent-child"})
_DOCUMENT_KEYS = frozenset({"schema_version", "revision", "next_id", "tasks"})
# Known task keys and the exact JSON types the model accepts for them without coercion.
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "id": (str,),
    "subject": (str,),
    "status": (str,),
    "parentId": (str, type(None)),
    "description": (str,),
    "activeForm": (str, type(None)),
    "owner": (str, type(None)),
    "metadata": (dict,),
    "createdAt": (str, type(None)),
    "updatedAt": (str, type(None)),
    "attempts": (int,),
    "maxAttempts": (int, type(None)),
    "lastError": (str, type(None)),
    "dependencies": (list,),
}
_REQUIRED = ("id", "subject", "status")
# The keys a dump of a task writes (``by_alias``, ``exclude_none``), in its order: the model's
# fields. Those with a default that is not None are always written.
DUMP_ORDER = (
    "id",
    "parentId",
    "subject",
    "description",
    "activeForm",
    "status",
    "owner",
    "dependencies",
    "metadata",
    "createdAt",
    "updatedAt",
    "attempts",
    "maxAttempts",
    "lastError",
)
_ALWAYS_DUMPED = frozenset({"id", "subject", "description", "status", "dependencies", "metadata",
                            "attempts"})  # fmt: skip
_DUMP_POSITION = {key: n for n, key in enumerate(DUMP_ORDER)}
# The model also reads its fields by their Python names (populate_by_name); the fast path would
# take such a key for an unknown one and skip its type check, so it leaves those files to the model.
_FIELD_NAMES = frozenset(
    {"parent_id", "active_form", "created_at", "updated_at", "max_attempts", "last_error"}
)


# NamedTuples, not dataclasses: ``dataclasses`` imports ``inspect``, about 12 ms of the 30 ms
# that a whole ``rho task ready --json`` process costs.
class DependencyView(NamedTuple):
    """A dependency as read by the fast path."""

    target_id: str
    type: str


class TaskView(NamedTuple):
    """The fields of a task that scheduling and ``ready --json`` need."""

    id: str
    subject: str
    status: str
    owner: str | None
    dependencies: Sequence[DependencyView]
    is_group: bool = False  # as ``Task.is_group``

    def summary(self) -> dict[str, Any]:
        """The agent-facing view, identical to ``Task.summary()``."""
        return {
            "id": self.id,
            "subject": self.subject,
            "status": self.status,
            "owner": self.owner,
            "dependencies": [{"targetId": d.target_id, "type": d.type} for d in self.dependencies],
        }


def read_task_views(path: Path) -> list[TaskView] | list[Task]:
    """Read the store at *path* for scheduling; a missing file is an empty store.

    Raises:
        StoreReadError: the file is unreadable, not JSON, or not a task store.
    """
    raw = _read(path)
    if raw is None:
        return []
    views = _views(decode_json(raw, str(path)))
    if views is not None:
        return views
    from ._document import parse_document  # the full model explains what the fast path refused

    return sorted(parse_document(raw, str(path)).tasks, key=lambda task: task.id)


def read_task_dicts(path: Path) -> list[dict[str, Any]] | None:
    """The store's tasks as JSON objects when each is exactly what the model's dump of it would
    be, in the model's order (so a read can print them as they are); None when not (the caller
    then reads through the model, which also reports any problem).

    Raises:
        StoreReadError: the file is unreadable or not JSON.
    """
    raw = _read(path)
    if raw is None:
        return None  # the full read says what a missing store is
    return dumped_tasks(decode_json(raw, str(path)))


def dumped_tasks(data: Any) -> list[dict[str, Any]] | None:
    """The tasks of store *data* (parsed JSON) when each is exactly its model's dump, and they
    stand in the order the store writes them (by id, each id once); else None."""
    if _views(data) is None:
        return None
    tasks: list[dict[str, Any]] = data.get("tasks", [])
    ids = [task["id"] for task in tasks]
    # Strictly increasing: unique, and in the order the model's read sorts them into.
    if any(a >= b for a, b in pairwise(ids)):
        return None
    if not all(map(_as_dumped, tasks)):
        return None
    return tasks


def _read(path: Path) -> bytes | None:
    """The store file's bytes, or None when there is no file.

    Raises:
        StoreReadError: it cannot be read.
    """
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreReadError(str(path), exc.strerror or str(exc)) from exc


def _as_dumped(task: dict[str, Any]) -> bool:
    """Whether *task* (a canonical view already) is key for key its model's dump."""
    positions = [_DUMP_POSITION.get(key) for key in task]
    if None in positions or positions != sorted(positions):  # type: ignore[type-var]
        return False  # a key the model does not declare, or out of the dump's order
    if not _ALWAYS_DUMPED.issubset(task):
        return False  # the dump would add a default
    if any(value is None for value in task.values()):
        return False  # the dump leaves None out
    return all(list(dependency) == ["targetId", "type"] for dependency in task["dependencies"])


def _views(data: Any) -> list[TaskView] | None:
    if not isinstance(data, dict) or not _DOCUMENT_KEYS.issuperset(data):
        return None
    if data.get("schema_version", "rho.tasks/v1") != "rho.tasks/v1":
        return None
    for counter in ("revision", "next_id"):
        value = data.get(counter, 1)
        if type(value) is not int or value < (0 if counter == "revision" else 1):
            return None
    tasks = data.get("tasks", [])
    if type(tasks) is not list:
        return None
    views: list[TaskView] = []
    for task in tasks:
        view = _view(task)
        if view is None:
            return None
        views.append(view)
    views.sort(key=lambda view: view.id)
    return views


def _view(task: Any) -> TaskView | None:
    if type(task) is not dict or any(key not in task for key in _REQUIRED):
        return None
    if not _FIELD_NAMES.isdisjoint(task):
        return None
    for key, value in task.items():
        allowed = _FIELD_TYPES.get(key)
        # bool is an int subclass that the model would coerce: leave such files to it.
        if allowed is not None and (type(value) not in allowed):
            return None
    dependencies = _dependencies(task.get("dependencies", []))
    if dependencies is None:
        return None
    metadata = task.get("metadata", {})
    command = metadata.get("command")
    group = metadata.get("rho.group") is True and not (isinstance(command, str) and command.strip())
    return TaskView(
        task["id"], task["subject"], task["status"], task.get("owner"), dependencies, group
    )


def _dependencies(items: list[Any]) -> list[DependencyView] | None:
    views: list[DependencyView] = []
    for item in items:
        if type(item) is not dict or len(item) != 2:
            return None
        target, kind = item.get("targetId"), item.get("type")
        # A non-string kind may be unhashable (a list): test its type before the set lookup.
        if type(target) is not str or type(kind) is not str or kind not in _DEPENDENCY_TYPES:
            return None
        views.append(DependencyView(target, kind))
    return views
