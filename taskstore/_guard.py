"""Checks that keep mutations from making a valid store unschedulable.

A mutation is judged on what it adds, not on the whole graph: a hand-edited store with an old
problem can still be repaired one command at a time.

Decision: docs/decisions/0101-task-store-file.md
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Protocol

from ._errors import (
    EmptyBlockerError,
    MissingBlockerError,
    ScheduleCycleError,
    ScheduleLimitError,
    SelfBlockerError,
)
from ._vocabulary import MAX_EDGES, MAX_TASKS

__all__ = ["Blocking", "check_caps", "check_new_blockers"]


class Blocking(Protocol):
    """What these checks read of a task: a ``Task``, or the light write path's record of one."""

    @property
    def id(self) -> str: ...

    @property
    def blocker_ids(self) -> list[str]: ...


def check_new_blockers(tasks: Sequence[Blocking], task: Blocking, target: str) -> None:
    """Refuse making *target* a blocker of *task* if it is blank, itself, missing or cyclic.

    Raises:
        EmptyBlockerError, SelfBlockerError, MissingBlockerError, ScheduleCycleError.
    """
    target = target.strip()
    if not target:
        raise EmptyBlockerError(task.id)
    if target == task.id:
        raise SelfBlockerError(task.id)
    blockers_of = {other.id: other.blocker_ids for other in tasks}
    if target not in blockers_of:
        raise MissingBlockerError(task.id, target)
    path = _blocking_path(blockers_of, target, task.id)
    if path is not None:
        raise ScheduleCycleError([task.id, *path])


def _blocking_path(blockers_of: dict[str, list[str]], start: str, goal: str) -> list[str] | None:
    """The shortest chain start -> ... -> goal that follows blockers, or None."""
    previous: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if node == goal:
            return _unwind(previous, goal)
        for blocker in sorted(set(blockers_of.get(node, ()))):
            if blocker not in previous:
                previous[blocker] = node
                queue.append(blocker)
    return None


def _unwind(previous: dict[str, str | None], goal: str) -> list[str]:
    chain: list[str] = []
    node: str | None = goal
    while node is not None:
        chain.append(node)
        node = previous[node]
    return chain[::-1]


def check_caps(tasks: Sequence[Blocking]) -> None:
    """Refuse a store beyond 1,000 tasks or 10,000 unique blocking edges.

    Raises:
        ScheduleLimitError: a cap is exceeded.
    """
    if len(tasks) > MAX_TASKS:
        raise ScheduleLimitError("task", MAX_TASKS)
    edges = sum(len(set(task.blocker_ids)) for task in tasks)
    if edges > MAX_EDGES:
        raise ScheduleLimitError("dependency", MAX_EDGES)
