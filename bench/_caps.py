"""A task store at the scheduling caps, shared by the benchmarks.

``cap_tasks()`` builds 1,000 tasks with exactly 10,000 unique blocking edges, acyclic, random
but seeded (the same graph on every run and machine). Tasks are dealt to ``levels`` layers; each
task past the first layer has one blocker in the layer just below it (so the graph is exactly
``levels`` waves deep) and the remaining edges join random pairs of lower to higher layers.
Ids are dealt to layers at random, so that code-point order and wave order disagree.

``graphlib_waves()`` is the oracle both benchmarks compare against: the stdlib
``TopologicalSorter`` driven wave by wave, as a plain script would do it.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from graphlib import TopologicalSorter
from typing import Protocol

from taskstore import MAX_EDGES, MAX_TASKS, Dependency, StoreDocument, Task

__all__ = ["cap_document", "cap_tasks", "graphlib_waves"]

_STAMP = "2026-11-01T09:00:00Z"
# Layers 0..COMPLETED_LEVELS-1 are done, so that ``ready`` is a real list, not all or nothing.
_COMPLETED_LEVELS = 4


class _DependencyLike(Protocol):
    @property
    def target_id(self) -> str: ...

    @property
    def type(self) -> str: ...


class _TaskLike(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def dependencies(self) -> Sequence[_DependencyLike]: ...


def cap_tasks(seed: int = 20261129, levels: int = 20) -> list[Task]:
    """1,000 ``Task`` objects with exactly 10,000 unique blocking edges, ``levels`` waves deep."""
    rng = random.Random(seed)
    layer_of = _deal_layers(rng, levels)
    by_layer: list[list[str]] = [[] for _ in range(levels)]
    for task_id, layer in layer_of.items():
        by_layer[layer].append(task_id)
    edges = _edges(rng, layer_of, by_layer)
    blockers: dict[str, list[str]] = {task_id: [] for task_id in layer_of}
    for dependent, blocker in sorted(edges):
        blockers[dependent].append(blocker)
    return [_task(task_id, layer_of[task_id], blockers[task_id]) for task_id in sorted(layer_of)]


def cap_document(seed: int = 20261129, levels: int = 20) -> StoreDocument:
    """``cap_tasks()`` as a whole store document, as ``rho task add`` would have left it."""
    return StoreDocument(revision=MAX_TASKS, next_id=MAX_TASKS + 1, tasks=cap_tasks(seed, levels))


def graphlib_waves(tasks: Iterable[_TaskLike]) -> list[list[str]]:
    """The waves of the blocking graph by stdlib graphlib: get_ready, sort, done, repeat.

    Raises:
        graphlib.CycleError: the blocking dependencies form a cycle.
    """
    sorter: TopologicalSorter[str] = TopologicalSorter()
    for task in tasks:
        sorter.add(task.id, *[d.target_id for d in task.dependencies if d.type == "blocks"])
    sorter.prepare()
    waves: list[list[str]] = []
    while sorter.is_active():
        wave = sorted(sorter.get_ready())
        waves.append(wave)
        sorter.done(*wave)
    return waves


def _deal_layers(rng: random.Random, levels: int) -> dict[str, int]:
    ids = [f"task_{n}" for n in range(1, MAX_TASKS + 1)]
    rng.shuffle(ids)
    return {task_id: position * levels // MAX_TASKS for position, task_id in enumerate(ids)}


def _edges(
    rng: random.Random, layer_of: dict[str, int], by_layer: list[list[str]]
) -> set[tuple[str, str]]:
    """Exactly MAX_EDGES unique (dependent, blocker) pairs, blocker always in a lower layer."""
    edges = {
        (task_id, rng.choice(by_layer[layer - 1]))
        for task_id, layer in layer_of.items()
        if layer > 0
    }
    upper = [task_id for task_id, layer in layer_of.items() if layer > 0]
    while len(edges) < MAX_EDGES:
        dependent = rng.choice(upper)
        blocker_layer = rng.randrange(layer_of[dependent])
        edges.add((dependent, rng.choice(by_layer[blocker_layer])))
    return edges


def _task(task_id: str, layer: int, blockers: list[str]) -> Task:
    return Task(
        id=task_id,
        subject=f"Step {task_id} of layer {layer}",
        description=f"Generated at the caps: layer {layer}, {len(blockers)} blocker(s).",
        status="completed" if layer < _COMPLETED_LEVELS else "pending",
        dependencies=[Dependency(target_id=blocker, type="blocks") for blocker in blockers],
        metadata={"command": f"make step-{task_id}"},
        created_at=_STAMP,
        updated_at=_STAMP,
    )
