"""Edits of the graph inside one locked write: add and remove dependencies, delete a task.

Pure functions over a ``StoreDocument`` that ``TaskStore.mutate`` calls under its lock: each
either finishes or raises before the document is written, so a refusal leaves the file as it
was. Like every mutation, an edit is judged on what it adds: removing a link that names a task
long gone, or deleting a task of a store that does not schedule, still works.

Decision: docs/decisions/0103-task-commands.md
"""

from __future__ import annotations

from dataclasses import dataclass

from ._errors import InvalidTaskError, TaskInUseError, TaskNotFoundError, quote
from ._guard import check_new_blockers
from ._model import Dependency, StoreDocument, Task
from ._rules import READS_AS, check_dependency_type
from ._vocabulary import DEPENDENCY_TYPES

__all__ = [
    "Deletion",
    "delete_task",
    "find_task",
    "link",
    "unlink",
]


@dataclass(frozen=True, slots=True)
class Deletion:
    """What ``TaskStore.delete`` did: the task removed, and the tasks that lost a link to it."""

    task: Task
    unlinked: list[str]


def find_task(document: StoreDocument, task_id: str) -> Task:
    """The task of *document* with id *task_id*.

    Raises:
        TaskNotFoundError: no task has that id.
    """
    for task in document.tasks:
        if task.id == task_id:
            return task
    raise TaskNotFoundError(task_id)


def link(document: StoreDocument, task: Task, target: str, kind: str) -> None:
    """Give *task* a dependency of type *kind* on *target* (trimmed); an existing one is kept.

    ``parent-child`` makes *task* a subtask of *target* (``parentId``), which needs *task* to
    have no other parent and *target* not to lie inside *task*.

    Raises:
        EmptyBlockerError, SelfBlockerError, MissingBlockerError, ScheduleCycleError: a bad
            blocker, as ``add --blocked-by`` refuses it (the caller checks the caps).
        TaskNotFoundError: a related or parent target that names no task.
        InvalidTaskError: a link to itself, a second parent, or a containment loop.
    """
    check_dependency_type(kind)
    if kind == "blocks":
        check_new_blockers(document.tasks, task, target)
        target = target.strip()
    else:
        target = find_task(document, target.strip()).id
        if target == task.id:
            raise InvalidTaskError(f"task {quote(task.id)} cannot be {READS_AS[kind]} itself")
        if kind == "parent-child":
            _adopt(document, task, target)
    if not any(d.target_id.strip() == target and d.type == kind for d in task.dependencies):
        task.dependencies.append(Dependency.model_validate({"targetId": target, "type": kind}))


def _adopt(document: StoreDocument, task: Task, parent: str) -> None:
    if task.parent_id not in (None, parent):
        raise InvalidTaskError(
            f"task {quote(task.id)} is already a subtask of {quote(task.parent_id or '')}"
        )
    parents = {other.id: other.parent_id for other in document.tasks}
    seen: set[str] = set()
    above: str | None = parent
    while above is not None and above not in seen:  # a hand-written loop of parents ends too
        if above == task.id:
            raise InvalidTaskError(
                f"task {quote(task.id)} cannot be a subtask of {quote(parent)}:"
                f" {quote(parent)} is inside {quote(task.id)}"
            )
        seen.add(above)
        above = parents.get(above)
    task.parent_id = parent


def unlink(task: Task, target: str, kind: str) -> None:
    """Remove *task*'s dependencies of type *kind* on *target* (trimmed); the target may be gone.

    Removing ``parent-child`` on its parent also clears ``parentId``: the task moves to the top.

    Raises:
        InvalidTaskError: an unknown type, or *task* has no such dependency.
    """
    check_dependency_type(kind)
    target = target.strip()
    kept = [d for d in task.dependencies if not (d.type == kind and d.target_id.strip() == target)]
    was_child = kind == "parent-child" and task.parent_id == target
    if len(kept) == len(task.dependencies) and not was_child:
        raise InvalidTaskError(f"task {quote(task.id)} is not {READS_AS[kind]} {quote(target)}")
    task.dependencies = kept
    if was_child:
        task.parent_id = None


def delete_task(document: StoreDocument, task_id: str, *, force: bool) -> Deletion:
    """Remove task *task_id*; with *force*, also every other task's dependencies on it.

    A task with subtasks is refused even when forced: a subtask's id names its parent, and
    orphaning it would leave an id that lies. Delete (or detach) the subtasks first.

    Raises:
        TaskNotFoundError: no task has that id.
        TaskInUseError: it has subtasks, or (without *force*) other tasks link to it.
    """
    task = find_task(document, task_id)
    others = [other for other in document.tasks if other is not task]
    subtasks = sorted(other.id for other in others if other.parent_id == task.id)
    if subtasks:
        raise TaskInUseError(task.id, subtasks=subtasks)
    dependents = _dependents(others, task.id)
    if dependents and not force:
        raise TaskInUseError(task.id, dependents=dependents)
    for other in others:
        if other.id in dependents:
            other.dependencies = [d for d in other.dependencies if d.target_id.strip() != task.id]
    document.tasks = others
    return Deletion(task=task, unlinked=sorted(dependents))


def _dependents(tasks: list[Task], task_id: str) -> dict[str, list[str]]:
    """``{id: [kinds]}`` of the tasks that link to *task_id*, ids sorted, kinds in type order."""
    found: dict[str, set[str]] = {}
    for other in tasks:
        for dependency in other.dependencies:
            if dependency.target_id.strip() == task_id:
                found.setdefault(other.id, set()).add(dependency.type)
    return {key: [kind for kind in DEPENDENCY_TYPES if kind in found[key]] for key in sorted(found)}
