"""The scheduling validator: check a blocking graph and cut it into stable waves.

A pure function over task-like objects (the ``Task`` model, or the light records of the fast
read path): anything with ``id``, ``status`` and ``dependencies`` whose items have ``target_id``
and ``type``. Work is done on integer indices assigned in code-point order of the ids, so that
sorting a wave is sorting integers and the result never depends on the input order.

Speed matters (agents call ``rho task ready`` in loops, on graphs up to the caps): the common case
of a clean graph goes through ``_quick_graph``, one pass over the edges after bulk checks of ids
and statuses; anything unusual, and every failure, goes through the exact one-by-one checks of
``_resolve_blockers``, so that errors and their order are the same on both lanes.

Decision: docs/decisions/0101-task-store-file.md
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import chain
from operator import attrgetter
from typing import Generic, NamedTuple, Protocol, TypeVar

from ._errors import (
    EmptyBlockerError,
    MissingBlockerError,
    ScheduleCycleError,
    ScheduleLimitError,
    SelfBlockerError,
    TaskIdentityError,
    TaskStatusError,
)
from ._vocabulary import BLOCKS, DEPENDENCY_TYPES, MAX_EDGES, MAX_TASKS, STATUSES

__all__ = [
    "DEPENDENCY_TYPES",
    "MAX_EDGES",
    "MAX_TASKS",
    "STATUSES",
    "SchedulableTask",
    "Schedule",
    "compute_schedule",
    "waves_to_run",
]


class _DependencyLike(Protocol):
    @property
    def target_id(self) -> str: ...

    @property
    def type(self) -> str: ...


class SchedulableTask(Protocol):
    """What the validator reads of a task: its id, status and dependencies."""

    @property
    def id(self) -> str: ...

    @property
    def status(self) -> str: ...

    @property
    def dependencies(self) -> Sequence[_DependencyLike]: ...

    @property
    def is_group(self) -> bool: ...


T = TypeVar("T", bound=SchedulableTask)


# A NamedTuple, not a dataclass: ``dataclasses`` imports ``inspect``, a third of the start-up of
# the ``rho task ready --json`` process that agents poll (``_replace`` makes a changed copy).
class Schedule(NamedTuple, Generic[T]):
    """The waves of a valid blocking graph and its ready tasks.

    ``waves`` holds every task id, whatever its status, one list per topological level, each
    sorted by code point. ``ready`` holds the pending tasks whose every blocker is completed,
    sorted by id.
    """

    waves: list[list[str]]
    ready: list[T]


def compute_schedule(tasks: Iterable[T]) -> Schedule[T]:
    """Validate the blocking graph of *tasks* and return its waves and ready tasks.

    Only ``blocks`` dependencies count; ``related`` and ``parent-child`` links are ignored even
    when their target is missing. The result is the same for every input order.

    Raises:
        ScheduleLimitError: more than 1,000 tasks or 10,000 unique blocking edges.
        TaskIdentityError: a blank id or an id that two tasks share.
        TaskStatusError: a status outside ``STATUSES``.
        EmptyBlockerError, SelfBlockerError, MissingBlockerError: a bad blocking dependency.
        ScheduleCycleError: the blocking dependencies form a cycle.
    """
    ordered = sorted(tasks, key=attrgetter("id"))
    if len(ordered) > MAX_TASKS:
        raise ScheduleLimitError("task", MAX_TASKS)
    ids = [task.id for task in ordered]
    graph = _quick_graph(ordered, ids) or _Graph.of(_resolve_blockers(ordered))
    waves = _layer(graph)
    if sum(map(len, waves)) < len(ordered):
        # The quick lane lets a self-blocker through (it can never be placed): the exact checks
        # report it, as they would have before any cycle.
        blockers = _resolve_blockers(ordered)
        placed = {task for wave in _layer(_Graph.of(blockers)) for task in wave}
        raise ScheduleCycleError(_find_cycle(ordered, blockers, placed))
    return Schedule(
        waves=[[ids[i] for i in wave] for wave in waves],
        ready=_ready(ordered, graph.dependents),
    )


def waves_to_run(tasks: Iterable[T]) -> list[list[str]]:
    """The waves of the tasks not yet completed, as a mission of them would run them: a
    completed blocker holds nothing back any more, so work behind it moves up. Each wave
    sorted by code point, as `compute_schedule`'s.

    Raises:
        as `compute_schedule` (it validates the whole graph first).
    """
    every = list(tasks)
    compute_schedule(every)  # the whole graph is valid: no cycle among what is left either
    left = sorted((task for task in every if task.status != "completed"), key=attrgetter("id"))
    index = {task.id: position for position, task in enumerate(left)}
    blockers = [sorted({index[b] for b in _blocker_ids(task) if b in index}) for task in left]
    return [[left[i].id for i in wave] for wave in _layer(_Graph.of(blockers))]


def _blocker_ids(task: SchedulableTask) -> list[str]:
    return [d.target_id.strip() for d in task.dependencies if d.type == "blocks"]


class _Graph:
    """Per task (by index): the tasks it blocks, and how many blockers it waits for."""

    __slots__ = ("blocker_counts", "dependents")

    def __init__(self, dependents: list[list[int]], blocker_counts: list[int]) -> None:
        self.dependents = dependents
        self.blocker_counts = blocker_counts

    @classmethod
    def of(cls, blockers: list[list[int]]) -> _Graph:
        dependents: list[list[int]] = [[] for _ in blockers]
        for task, mine in enumerate(blockers):
            for blocker in mine:
                dependents[blocker].append(task)
        return cls(dependents, list(map(len, blockers)))


def _quick_graph(ordered: list[T], ids: list[str]) -> _Graph | None:
    """The graph in one pass over the edges when it is plainly clean, else None (exact lane).

    Clean means: unique ids, none blank or padded with whitespace; known statuses; every blocking
    target exactly one of those ids; at most ``MAX_EDGES`` blocking dependencies even counting
    duplicates. A duplicate target is an extra dependent and an extra blocker to wait for, so it
    unlocks its task exactly when the single edge would: waves and ready come out the same.
    Self-blockers pass here (such a task is never placed) and are reported by the exact lane.
    """
    index = dict(zip(ids, range(len(ids)), strict=True))
    if len(index) != len(ids) or "" in index or list(map(str.strip, ids)) != ids:
        return None
    if not STATUSES.issuperset([task.status for task in ordered]):
        return None
    dependents: list[list[int]] = [[] for _ in ids]
    add_dependent = [tasks.append for tasks in dependents]
    counts: list[int] = []
    try:
        for position, task in enumerate(ordered):
            count = 0
            for dependency in task.dependencies:
                if dependency.type == BLOCKS:
                    add_dependent[index[dependency.target_id]](position)
                    count += 1
            counts.append(count)
    except KeyError:  # a missing or whitespace-padded target
        return None
    if sum(counts) > MAX_EDGES:
        return None
    return _Graph(dependents, counts)


def _resolve_blockers(ordered: list[T]) -> list[list[int]]:
    """Check identities, statuses and blocking targets; return unique blocker indices per task."""
    index: dict[str, int] = {}
    shared: set[str] = set()
    for position, task in enumerate(ordered):
        if index.setdefault(task.id, position) != position:
            shared.add(task.id)
    # stamp[j] == i marks blocker j as already seen for task i: duplicate targets count once.
    stamp = [-1] * len(ordered)
    edges = 0
    blockers: list[list[int]] = []
    for position, task in enumerate(ordered):
        task_id = task.id
        if task_id in shared or not task_id.strip():
            raise TaskIdentityError(task_id)
        if task.status not in STATUSES:
            raise TaskStatusError(task_id, task.status)
        mine: list[int] = []
        for dependency in task.dependencies:
            if dependency.type != BLOCKS:
                continue
            target = dependency.target_id.strip()
            if not target:
                raise EmptyBlockerError(task_id)
            if target == task_id:
                raise SelfBlockerError(task_id)
            blocker = index.get(target)
            if blocker is None:
                raise MissingBlockerError(task_id, target)
            if stamp[blocker] == position:
                continue
            stamp[blocker] = position
            mine.append(blocker)
            edges += 1
            if edges > MAX_EDGES:
                raise ScheduleLimitError("dependency", MAX_EDGES)
        blockers.append(mine)
    return blockers


def _layer(graph: _Graph) -> list[list[int]]:
    """Kahn's algorithm level by level; tasks on or behind a cycle are left out."""
    remaining = list(graph.blocker_counts)
    dependents = graph.dependents
    wave = [task for task, count in enumerate(remaining) if not count]
    waves: list[list[int]] = []
    while wave:
        waves.append(wave)
        unlocked: list[int] = []
        for task in wave:
            for dependent in dependents[task]:
                count = remaining[dependent] - 1
                remaining[dependent] = count
                if not count:
                    unlocked.append(dependent)
        unlocked.sort()
        wave = unlocked
    return waves


def _find_cycle(
    ordered: Sequence[SchedulableTask], blockers: list[list[int]], placed: set[int]
) -> list[str]:
    """Return one concrete cycle among the tasks Kahn's algorithm could not place.

    Walks from the smallest unplaced task to its smallest unplaced blocker until a task repeats.
    Every unplaced task has an unplaced blocker, so the walk always closes a cycle.
    """
    unplaced = [task for task in range(len(blockers)) if task not in placed]
    walk = [unplaced[0]]
    seen = {unplaced[0]: 0}
    while True:
        step = min(b for b in blockers[walk[-1]] if b not in placed)
        if step in seen:
            cycle = [*walk[seen[step] :], step]
            return [ordered[task].id for task in cycle]
        seen[step] = len(walk)
        walk.append(step)


def _ready(ordered: list[T], dependents: list[list[int]]) -> list[T]:
    """Pending tasks none of whose blockers is anything but completed."""
    unfinished = (
        mine for task, mine in zip(ordered, dependents, strict=True) if task.status != "completed"
    )
    waiting = set(chain.from_iterable(unfinished))
    # A group (an epic) is no work to start: its children are.
    return [
        task
        for position, task in enumerate(ordered)
        if task.status == "pending" and position not in waiting and not task.is_group
    ]
