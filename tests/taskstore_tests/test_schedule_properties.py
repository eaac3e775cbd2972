"""Property tests of the scheduling validator against its definition and stdlib graphlib."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from graphlib import CycleError
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taskstore import ScheduleCycleError, Task, compute_schedule, waves_to_run

from ._graphs import (
    GenTask,
    blocking_graph,
    dags,
    digraphs,
    graphlib_waves,
    messy_graphs,
    outcome,
    task,
    write_document,
)

CHEAP = settings(max_examples=200, deadline=None)


def build(gens: list[GenTask]) -> list[Task]:
    return [gen.build() for gen in gens]


@CHEAP
@given(dags())
def test_waves_are_a_valid_layering(gens: list[GenTask]) -> None:
    tasks = build(gens)
    waves = compute_schedule(tasks).waves
    level = {task_id: n for n, wave in enumerate(waves) for task_id in wave}
    assert sorted(level) == sorted(t.id for t in tasks)
    assert sum(map(len, waves)) == len(tasks)
    for task_id, blockers in blocking_graph(tasks).items():
        assert all(level[b] < level[task_id] for b in blockers)
        assert level[task_id] == max((level[b] + 1 for b in blockers), default=0)
    assert all(wave == sorted(wave) and wave for wave in waves)


@CHEAP
@given(dags())
def test_waves_equal_graphlib_layering(gens: list[GenTask]) -> None:
    tasks = build(gens)
    assert compute_schedule(tasks).waves == graphlib_waves(blocking_graph(tasks))


@CHEAP
@given(dags())
def test_ready_is_pending_with_every_blocker_completed(gens: list[GenTask]) -> None:
    tasks = build(gens)
    status = {t.id: t.status for t in tasks}
    expected = sorted(
        task_id
        for task_id, blockers in blocking_graph(tasks).items()
        if status[task_id] == "pending" and all(status[b] == "completed" for b in blockers)
    )
    assert [t.id for t in compute_schedule(tasks).ready] == expected


@CHEAP
@given(messy_graphs(), st.randoms(use_true_random=False))
def test_any_order_of_tasks_and_dependencies_gives_the_same_result(
    gens: list[GenTask], rng: random.Random
) -> None:
    expected = outcome(build(gens))
    shuffled = [GenTask(g.id, g.status, rng.sample(g.links, len(g.links))) for g in gens]
    rng.shuffle(shuffled)
    assert outcome(build(shuffled)) == expected


@CHEAP
@given(digraphs())
def test_cycle_reported_exactly_when_graphlib_finds_one(gens: list[GenTask]) -> None:
    tasks = build(gens)
    graph = blocking_graph(tasks)
    try:
        reference = graphlib_waves(graph)
    except CycleError:
        reference = None
    if reference is not None:
        assert compute_schedule(tasks).waves == reference
        return
    with pytest.raises(ScheduleCycleError) as caught:
        compute_schedule(tasks)
    cycle = caught.value.cycle
    assert str(caught.value) == "cycle detected in blocking task dependency graph: " + " -> ".join(
        cycle
    )
    assert len(cycle) >= 3
    assert cycle[0] == cycle[-1]
    assert len(set(cycle[:-1])) == len(cycle) - 1, "a cycle passes each task once"
    for dependent, blocker in pairwise(cycle):
        assert blocker in graph[dependent], f"{dependent} -> {blocker} is no blocking edge"


def test_cycle_message_names_a_cycle_not_the_tasks_behind_it() -> None:
    tasks = [task("a", "m"), task("m", "n"), task("n", "m"), task("b", "a")]
    with pytest.raises(ScheduleCycleError) as caught:
        compute_schedule(tasks)
    assert caught.value.cycle == ["m", "n", "m"]


SCRIPT = """
import json, sys
from pathlib import Path
from taskstore import ScheduleError, TaskStore, compute_schedule, read_task_views

result = {}
for name in sys.argv[1:]:
    for label, tasks in (("model", TaskStore(name).tasks()), ("fast", read_task_views(Path(name)))):
        try:
            schedule = compute_schedule(tasks)
            result[name + ":" + label] = [schedule.waves, [t.id for t in schedule.ready]]
        except ScheduleError as exc:
            result[name + ":" + label] = str(exc)
print(json.dumps(result, sort_keys=True))
"""


def random_store(rng: random.Random, *, cyclic: bool) -> list[Task]:
    """A 150-task graph in shuffled order; *cyclic* turns three edges back into cycles."""
    ids = [f"task_{n}" for n in rng.sample(range(1, 400), 150)]
    blockers = {i: rng.sample(ids[:n], min(n, rng.randint(0, 4))) for n, i in enumerate(ids)}
    if cyclic:
        for dependent in rng.sample([i for i in ids if blockers[i]], 3):
            blockers[rng.choice(blockers[dependent])].append(dependent)
    statuses = ["pending", "completed", "failed", "in_progress"]
    tasks = [task(i, *b, status=rng.choice(statuses)) for i, b in blockers.items()]
    rng.shuffle(tasks)
    return tasks


def test_result_is_identical_under_every_pythonhashseed(tmp_path: Path) -> None:
    rng = random.Random(20261129)
    paths = []
    for name, cyclic in (("valid.json", False), ("cyclic.json", True)):
        write_document(tmp_path / name, random_store(rng, cyclic=cyclic))
        paths.append(str(tmp_path / name))
    outputs = set()
    for seed in ("0", "1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        run = subprocess.run(
            [sys.executable, "-c", SCRIPT, *paths],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        outputs.add(run.stdout)
    assert len(outputs) == 1
    result = json.loads(outputs.pop())
    assert isinstance(result[f"{paths[0]}:model"], list), "the valid graph schedules"
    assert result[f"{paths[1]}:model"].startswith("cycle detected in blocking task dependency")
    assert result[f"{paths[0]}:model"] == result[f"{paths[0]}:fast"]
    assert result[f"{paths[1]}:model"] == result[f"{paths[1]}:fast"]


@CHEAP
@given(dags(), st.randoms(use_true_random=False))
def test_waves_to_run_are_graphlibs_layering_of_the_unfinished_tasks(
    gens: list[GenTask], chance: random.Random
) -> None:
    tasks = [
        task.model_copy(update={"status": chance.choice(["completed", "pending"])})
        for task in build(gens)
    ]
    left = {t.id for t in tasks if t.status != "completed"}
    graph = {k: {b for b in v if b in left} for k, v in blocking_graph(tasks).items() if k in left}
    assert waves_to_run(tasks) == graphlib_waves(graph)
