"""Groups: parents that are no work of their own (``Task.is_group``, a tracker's epic).

A group is done when its children are: ``complete_groups`` marks every group whose children
(by ``parentId``) are all ``completed`` completed too, nested groups included, in one pass over
a document about to be written. ``leaves_of`` names the work a group stands for (its
descendants that are no group), and ``standing_for`` a task's blockers with each group among
them replaced by that work: what the task waits for.

Decision: docs/decisions/0104-trackers.md
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ._model import Task

__all__ = ["complete_groups", "leaves_of", "standing_for"]


def _children(tasks: Iterable[Task]) -> dict[str, list[Task]]:
    children: dict[str, list[Task]] = {}
    for task in tasks:
        if task.parent_id is not None:
            children.setdefault(task.parent_id, []).append(task)
    return children


def complete_groups(tasks: Sequence[Task]) -> list[str]:
    """Mark completed each group of *tasks* whose children are all completed; their ids."""
    children = _children(tasks)
    done: list[str] = []
    changed = True
    while changed:  # a group completes once its last child group did
        changed = False
        for task in tasks:
            kids = children.get(task.id, [])
            waiting = task.is_group and task.status != "completed" and bool(kids)
            if waiting and all(kid.status == "completed" for kid in kids):
                task.status = "completed"
                done.append(task.id)
                changed = True
    return done


def leaves_of(group: Task, by_id: Mapping[str, Task]) -> list[str]:
    """The descendants of *group* that are no group (the work it stands for), sorted."""
    children = _children(by_id.values())
    found: set[str] = set()
    stack = [group.id]
    seen: set[str] = set()
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        for kid in children.get(current, []):
            if kid.is_group:
                stack.append(kid.id)
            else:
                found.add(kid.id)
    return sorted(found)


def standing_for(blockers: Iterable[str], by_id: Mapping[str, Task]) -> set[str]:
    """*blockers*, each group among them standing for its work (`leaves_of`): what a task
    blocked by them waits for."""
    found: set[str] = set()
    for blocker in blockers:
        group = by_id.get(blocker)
        found.update(leaves_of(group, by_id) if group is not None and group.is_group else [blocker])
    return found
