"""Which tasks of the store a ``--from-tasks`` mission runs, and which it holds back, and why.

A mission's features are the work it will do: the tasks not yet ``completed``, narrowed by a
selection (``only``: those tasks; ``labels``: the tasks with one of those labels), each with
its not-completed blockers, transitively (a task never runs without its blockers' work).
A completed blocker is not a feature: its work is in the base (``engine._carryover`` checks it).

The store's own statuses are kept: a ``cancelled``, ``skipped`` or ``reviewing`` task is not
run, and the tasks downstream of one are held with it, as by a failed blocker (the store's
readiness rule). So is a task an agent claimed (``_claims``). Held tasks are not features
either: the mission lists them apart, each with the task whose status holds it, so that
``show``, ``--dry-run`` and the run say why.

A group (a tracker's epic, ``Task.is_group``) is no work of its own: selecting it selects the
work it stands for (its descendants that are no group), a task it blocks waits for that work,
and the store marks it completed when its children are (``engine._leases.release_tasks``).

The mission's waves are the validator's waves of the tasks it runs, with the blocking edges
among them: a new task blocked only by completed work starts in the first wave.

Decision: docs/decisions/0506-living-store.md
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from taskstore import Task, leaves_of, standing_for

from .._errors import InvalidMissionError, quote
from ..records._document import Feature, HeldTask, feature_from_task
from ._claims import ClaimRule, claim_reason
from ._waves import computed_waves

__all__ = ["HOLDING_STATUSES", "Selection", "select_tasks"]

# Store statuses that keep a task (and what it blocks) out of every mission until changed.
HOLDING_STATUSES = frozenset({"cancelled", "reviewing", "skipped"})


@dataclass(frozen=True)
class Selection:
    """What a mission over the store runs (features in flattened wave order, and its waves),
    what it holds back, and how many completed tasks it leaves out."""

    features: list[Feature]
    waves: list[list[str]]
    held: list[HeldTask]
    completed: int


def select_tasks(
    tasks: Sequence[Task],
    store_waves: Sequence[Sequence[str]],
    *,
    only: Iterable[str] = (),
    labels: Iterable[str] = (),
    claims: ClaimRule | None = None,
) -> Selection:
    """The selection of *tasks* (a store validated into *store_waves*) that a mission runs;
    *claims* says which agents' claims hold tasks back (default: every live one).

    Raises:
        InvalidMissionError: *only* names a task the store does not have, or no task carries
            one of *labels*.
    """
    by_id = {task.id: task for task in tasks}
    chosen = _closure(by_id, _seeds(tasks, by_id, sorted(set(only)), sorted(set(labels))))
    held = _held(by_id, chosen, [list(w) for w in store_waves], claims or ClaimRule())
    running = {i for i in chosen if i not in held}
    features = [_feature(by_id[i], running, by_id) for i in sorted(running)]
    waves = computed_waves(features)
    order = {i: n for n, i in enumerate(i for wave in waves for i in wave)}
    features.sort(key=lambda feature: order[feature.id])
    completed = sum(task.status == "completed" for task in tasks)
    return Selection(features, waves, [held[i] for i in sorted(held)], completed)


def _seeds(
    tasks: Sequence[Task], by_id: dict[str, Task], only: list[str], labels: list[str]
) -> list[str]:
    """The tasks asked for (all of them without a selection), before their blockers."""
    if not only and not labels:
        return sorted(by_id)
    for task_id in only:
        if task_id not in by_id:
            raise InvalidMissionError(f"--only names {quote(task_id)}: no such task in the store")
    labelled = {task.id for task in tasks if set(task.labels) & set(labels)}
    for label in labels:
        if not any(label in task.labels for task in tasks):
            raise InvalidMissionError(f"--label {quote(label)}: no task of the store has it")
    return sorted(set(only) | labelled)


def _closure(by_id: dict[str, Task], seeds: list[str]) -> set[str]:
    """*seeds* not completed, with their not-completed blockers, transitively; a group stands
    for its work (its descendants that are no group)."""
    chosen: set[str] = set()
    stack = [i for i in seeds if by_id[i].status != "completed"]
    while stack:
        task_id = stack.pop()
        if task_id in chosen:
            continue
        if by_id[task_id].is_group:
            stack.extend(
                i for i in leaves_of(by_id[task_id], by_id) if by_id[i].status != "completed"
            )
            continue
        chosen.add(task_id)
        stack.extend(b for b in by_id[task_id].blocker_ids if by_id[b].status != "completed")
    return chosen


def _held(
    by_id: dict[str, Task], chosen: set[str], order: list[list[str]], claims: ClaimRule
) -> dict[str, HeldTask]:
    """The chosen tasks a holding status or a claim keeps out: such tasks, and what they
    block.

    *order* is the store's waves (topological): one pass settles the closure, and each held
    task names the first (by id) of the tasks whose status holds it.
    """
    held: dict[str, HeldTask] = {}
    now = claims.at()
    for task_id in (i for wave in order for i in wave if i in chosen):
        task = by_id[task_id]
        claimed = claim_reason(task, claims, now)
        if task.status in HOLDING_STATUSES or claimed:
            reason = claimed or f"{task.status} in the task store"
            held[task_id] = HeldTask(id=task_id, status=task.status, held_by=task_id, reason=reason)
            continue
        blockers = standing_for(task.blocker_ids, by_id)  # a group: the work it stands for
        roots = sorted(held[b].held_by for b in blockers if b in held)
        if roots:
            root = roots[0]
            reason = f"blocked by {quote(root)} ({by_id[root].status})"
            held[task_id] = HeldTask(id=task_id, status=task.status, held_by=root, reason=reason)
    return held


def _feature(task: Task, running: set[str], by_id: dict[str, Task]) -> Feature:
    """*task*'s feature, blocked by the tasks of this mission only (the others are done); a
    blocker that is a group stands for its work."""
    feature = feature_from_task(task)
    feature.blocked_by = sorted(b for b in standing_for(feature.blocked_by, by_id) if b in running)
    return feature
