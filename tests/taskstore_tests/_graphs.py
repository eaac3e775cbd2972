"""Shared helpers of the taskstore tests: task builders, graph strategies, a graphlib reference."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from graphlib import TopologicalSorter
from pathlib import Path

from hypothesis import strategies as st

from taskstore import (
    STATUSES,
    Dependency,
    ScheduleError,
    StoreDocument,
    Task,
    compute_schedule,
    dump_document,
)
from taskstore._schedule import SchedulableTask

# Ids whose code-point order differs from a "natural" one: task_10 < task_2, "B" < "a" < "é".
ID_POOL = (
    "task_1",
    "task_2",
    "task_3",
    "task_10",
    "task_11",
    "task_20",
    "task_1.1",
    "task_1.2",
    "B",
    "a",
    "z",
    "é",
)
SORTED_STATUSES = sorted(STATUSES)

Outcome = tuple[list[list[str]], list[str]] | str


def task(
    task_id: str,
    *blockers: str,
    status: str = "pending",
    related: Sequence[str] = (),
    parent: Sequence[str] = (),
) -> Task:
    """A ``Task`` blocked by *blockers* (in that order), plus related and parent-child links."""
    links = [("blocks", b) for b in blockers]
    links += [("related", r) for r in related] + [("parent-child", p) for p in parent]
    return Task(
        id=task_id,
        subject=f"subject of {task_id}",
        status=status,
        dependencies=[Dependency(target_id=target, type=kind) for kind, target in links],
    )


def tasks_of(graph: Mapping[str, Sequence[str]], **statuses: str) -> list[Task]:
    """One pending task per key of *graph* (id -> blockers); ``statuses`` overrides by id."""
    return [task(i, *blockers, status=statuses.get(i, "pending")) for i, blockers in graph.items()]


def outcome(tasks: Iterable[SchedulableTask]) -> Outcome:
    """``(waves, ready ids)`` of a valid graph, or the validator's message."""
    try:
        schedule = compute_schedule(tasks)
    except ScheduleError as exc:
        return str(exc)
    return schedule.waves, [t.id for t in schedule.ready]


def blocking_graph(tasks: Iterable[SchedulableTask]) -> dict[str, set[str]]:
    """id -> set of trimmed ``blocks`` targets: the graph the validator schedules."""
    return {
        t.id: {d.target_id.strip() for d in t.dependencies if d.type == "blocks"} for t in tasks
    }


def graphlib_waves(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The stdlib layering: repeatedly take ``get_ready()``, sort it, mark it ``done()``.

    Raises:
        graphlib.CycleError: the graph has a cycle.
    """
    sorter = TopologicalSorter({node: set(preds) for node, preds in graph.items()})
    sorter.prepare()
    waves: list[list[str]] = []
    while sorter.is_active():
        wave = sorted(sorter.get_ready())
        waves.append(wave)
        sorter.done(*wave)
    return waves


def write_document(path: Path, tasks: Sequence[Task], *, revision: int = 0) -> bytes:
    """Write *tasks* (in the given order) with the real ``dump_document``; return the bytes."""
    document = StoreDocument(revision=revision, next_id=1, tasks=list(tasks))
    data = dump_document(document)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return data


@dataclass
class GenTask:
    """A generated task: id, status and ``(type, target)`` links in declared order."""

    id: str
    status: str = "pending"
    links: list[tuple[str, str]] = field(default_factory=list)

    def build(self) -> Task:
        """The ``Task`` model of this generated task."""
        dependencies = [Dependency(target_id=target, type=kind) for kind, target in self.links]
        return Task(
            id=self.id, subject=f"do {self.id}", status=self.status, dependencies=dependencies
        )


def _pad(target: str, padding: int) -> str:
    # Whitespace around a target must not change anything: the validator trims it.
    return [target, f" {target}", f"{target}\t", f"  {target} "][padding]


@st.composite
def task_ids(draw: st.DrawFn, max_size: int = 12) -> list[str]:
    """Distinct ids from the pool, plus ``task_<n>`` ids, in a random order."""
    pool = draw(st.lists(st.sampled_from(ID_POOL), unique=True, max_size=max_size))
    extra = draw(st.lists(st.integers(0, 200).map(lambda n: f"task_{n}"), max_size=4))
    return list(dict.fromkeys(pool + extra))


@st.composite
def dags(draw: st.DrawFn) -> list[GenTask]:
    """Acyclic graphs: each task is blocked only by tasks earlier in a random order.

    Blockers may repeat and carry whitespace; related and parent-child links (some to missing
    tasks) are sprinkled in; statuses are any valid ones.
    """
    ids = draw(task_ids())
    tasks: list[GenTask] = []
    for position, task_id in enumerate(ids):
        status = draw(st.sampled_from(SORTED_STATUSES))
        earlier = ids[:position]
        links: list[tuple[str, str]] = []
        if earlier:
            blockers = draw(st.lists(st.sampled_from(earlier), max_size=4))
            links += [("blocks", _pad(b, draw(st.integers(0, 3)))) for b in blockers]
        links += draw(_soft_links(ids))
        tasks.append(GenTask(task_id, status, draw(st.permutations(links))))
    return tasks


def _soft_links(ids: list[str]) -> st.SearchStrategy[list[tuple[str, str]]]:
    """related / parent-child links to any id, even missing ones: they never affect scheduling."""
    targets = st.sampled_from([*ids, "ghost", ""]) if ids else st.just("ghost")
    return st.lists(st.tuples(st.sampled_from(["related", "parent-child"]), targets), max_size=2)


@st.composite
def digraphs(draw: st.DrawFn) -> list[GenTask]:
    """Graphs with only well-formed blocking edges (no self, no missing), often cyclic."""
    ids = draw(task_ids(max_size=8))
    tasks: list[GenTask] = []
    for task_id in ids:
        others = [i for i in ids if i != task_id]
        blockers = draw(st.lists(st.sampled_from(others), max_size=3)) if others else []
        status = draw(st.sampled_from(SORTED_STATUSES))
        tasks.append(GenTask(task_id, status, [("blocks", b) for b in blockers]))
    return tasks


@st.composite
def messy_graphs(draw: st.DrawFn) -> list[GenTask]:
    """Any graph: cycles, shared and blank ids, bad statuses, and at most one bad blocker a task.

    One bad blocker a task at most: the validator checks a task's blockers in declared order, so two
    different bad blockers of one task would make the message depend on their order.
    """
    tasks = draw(digraphs())
    if draw(st.booleans()) and tasks:
        tasks.append(GenTask(draw(st.sampled_from([t.id for t in tasks] + ["", "  "]))))
    for gen in tasks:
        if draw(st.integers(0, 9)) == 0:
            gen.status = draw(st.sampled_from(["done", "", "Pending"]))
        if draw(st.integers(0, 5)) == 0:
            gen.links.append(("blocks", draw(st.sampled_from(["", "  ", gen.id, "ghost"]))))
        gen.links += draw(_soft_links([t.id for t in tasks]))
    return tasks
