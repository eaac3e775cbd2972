"""Table tests of the scheduling validator: graph -> waves, graph -> ready, graph -> exact error."""

from __future__ import annotations

import re
from typing import Any

import pytest

from taskstore import (
    MAX_EDGES,
    MAX_TASKS,
    EmptyBlockerError,
    MissingBlockerError,
    ScheduleCycleError,
    ScheduleError,
    ScheduleLimitError,
    SelfBlockerError,
    Task,
    TaskIdentityError,
    TaskStatusError,
    TaskStoreError,
    compute_schedule,
)

from ._graphs import task, tasks_of

CYCLE = "cycle detected in blocking task dependency graph: "


def many_tasks(count: int, *also: Task) -> list[Task]:
    """*count* independent pending tasks ``t0000``... and then *also*."""
    return [task(f"t{n:04d}") for n in range(count)] + list(also)


def edge_heavy(*, extra: bool, duplicate: bool = False, also: tuple[Task, ...] = ()) -> list[Task]:
    """100 blockers ``b..`` and 100 dependents ``d..`` blocked by all of them: 10,000 edges.

    *extra* adds ``d100`` blocked by ``b000`` (edge 10,001); *duplicate* makes ``d099`` list
    ``b000`` twice (10,001 declared edges, 10,000 unique).
    """
    blockers = [f"b{n:03d}" for n in range(100)]
    tasks = [task(b) for b in blockers]
    for n in range(100):
        extra_blocker = ["b000"] if duplicate and n == 99 else []
        tasks.append(task(f"d{n:03d}", *blockers, *extra_blocker))
    if extra:
        tasks.append(task("d100", "b000"))
    return tasks + list(also)


WAVE_CASES = [
    pytest.param({}, [], id="empty"),
    pytest.param({"a": []}, [["a"]], id="single"),
    pytest.param({"c": ["b"], "b": ["a"], "a": []}, [["a"], ["b"], ["c"]], id="chain"),
    pytest.param(
        {"d": ["b", "c"], "c": ["a"], "b": ["a"], "a": []},
        [["a"], ["b", "c"], ["d"]],
        id="diamond",
    ),
    pytest.param(
        {"a": [], "b": ["a"], "c": ["b"], "d": ["a", "c"]},
        [["a"], ["b"], ["c"], ["d"]],
        id="task-waits-for-its-longest-chain",
    ),
    pytest.param(
        {"task_2": [], "task_10": [], "task_1": [], "é": [], "a": [], "B": []},
        [["B", "a", "task_1", "task_10", "task_2", "é"]],
        id="code-point-sort",
    ),
    pytest.param(
        {"task_3": ["task_1"], "task_20": ["task_1"], "task_100": ["task_1"], "task_1": []},
        [["task_1"], ["task_100", "task_20", "task_3"]],
        id="code-point-sort-in-later-wave",
    ),
    pytest.param(
        {"x": [], "y": ["x"], "p": [], "q": ["p"], "r": ["q", "y"]},
        [["p", "x"], ["q", "y"], ["r"]],
        id="two-components-merging",
    ),
    pytest.param({"a": [], "b": ["a", "a", " a ", "a\t"]}, [["a"], ["b"]], id="duplicate-blockers"),
    pytest.param({"a": [], "b": ["  a  "]}, [["a"], ["b"]], id="whitespace-around-target"),
]


@pytest.mark.parametrize(("graph", "waves"), WAVE_CASES)
def test_waves_of_valid_graphs(graph: dict[str, list[str]], waves: list[list[str]]) -> None:
    assert compute_schedule(tasks_of(graph)).waves == waves


def test_related_and_parent_child_links_never_affect_waves_even_to_missing_targets() -> None:
    tasks = [
        task("a", related=["b", "ghost"], parent=["b"]),
        task("b", related=["a"], parent=["a", "ghost", ""]),
        task("c", "a", related=["c"], parent=["c"]),
    ]
    schedule = compute_schedule(tasks)
    assert schedule.waves == [["a", "b"], ["c"]]
    assert [t.id for t in schedule.ready] == ["a", "b"]


def test_waves_hold_every_task_whatever_its_status() -> None:
    statuses = [
        "pending",
        "in_progress",
        "reviewing",
        "completed",
        "failed",
        "skipped",
        "cancelled",
    ]
    tasks = [task(f"s{n}", *([f"s{n - 1}"] if n else []), status=s) for n, s in enumerate(statuses)]
    assert compute_schedule(tasks).waves == [[f"s{n}"] for n in range(len(statuses))]


READY_CASES = [
    pytest.param({"a": []}, {}, ["a"], id="pending-without-blockers"),
    pytest.param({"a": []}, {"a": "in_progress"}, [], id="in-progress-is-never-ready"),
    pytest.param({"a": []}, {"a": "reviewing"}, [], id="reviewing-is-not-ready"),
    pytest.param({"a": []}, {"a": "completed"}, [], id="completed-is-not-ready"),
    pytest.param({"a": []}, {"a": "failed"}, [], id="failed-is-not-ready"),
    pytest.param({"a": [], "b": ["a"]}, {"a": "completed"}, ["b"], id="completed-blocker"),
    pytest.param({"a": [], "b": ["a"]}, {}, ["a"], id="pending-blocker"),
    pytest.param({"a": [], "b": ["a"]}, {"a": "in_progress"}, [], id="in-progress-blocker"),
    pytest.param({"a": [], "b": ["a"]}, {"a": "reviewing"}, [], id="reviewing-blocker"),
    pytest.param({"a": [], "b": ["a"]}, {"a": "failed"}, [], id="failed-blocker-blocks"),
    pytest.param({"a": [], "b": ["a"]}, {"a": "skipped"}, [], id="skipped-blocker-blocks"),
    pytest.param({"a": [], "b": ["a"]}, {"a": "cancelled"}, [], id="cancelled-blocker-blocks"),
    pytest.param(
        {"a": [], "b": [], "c": ["a", "b"]},
        {"a": "completed", "b": "failed"},
        [],
        id="one-unfinished-blocker-of-two",
    ),
    pytest.param(
        {"a": [], "b": [], "c": ["a", "b"]},
        {"a": "completed", "b": "completed"},
        ["c"],
        id="every-blocker-completed",
    ),
    pytest.param(
        {"a": [], "b": ["a"], "c": ["b"]},
        {"a": "completed", "b": "completed", "c": "in_progress"},
        [],
        id="in-progress-with-completed-blockers",
    ),
    pytest.param(
        {"task_2": [], "task_10": [], "task_1": []},
        {},
        ["task_1", "task_10", "task_2"],
        id="sorted",
    ),
]


@pytest.mark.parametrize(("graph", "statuses", "ready"), READY_CASES)
def test_ready_is_pending_tasks_whose_blockers_are_all_completed(
    graph: dict[str, list[str]], statuses: dict[str, str], ready: list[str]
) -> None:
    schedule = compute_schedule(tasks_of(graph, **statuses))
    assert [t.id for t in schedule.ready] == ready


def test_ready_returns_the_task_objects_given() -> None:
    tasks = tasks_of({"a": []})
    assert compute_schedule(tasks).ready[0] is tasks[0]


def test_related_link_to_an_unfinished_task_does_not_block() -> None:
    tasks = [task("a"), task("b", related=["a"], parent=["a"])]
    assert [t.id for t in compute_schedule(tasks).ready] == ["a", "b"]


ERROR_CASES = [
    pytest.param(
        many_tasks(MAX_TASKS + 1),
        ScheduleLimitError,
        "task schedule exceeds 1000-task limit",
        id="tasks-cap",
    ),
    pytest.param(
        [task("")],
        TaskIdentityError,
        'task schedule contains invalid task identity ""',
        id="blank-id",
    ),
    pytest.param(
        [task("   ")],
        TaskIdentityError,
        'task schedule contains invalid task identity "   "',
        id="space-id",
    ),
    pytest.param(
        [task("a"), task("b"), task("a")],
        TaskIdentityError,
        'task schedule contains invalid task identity "a"',
        id="shared-id",
    ),
    pytest.param(
        [task("a", status="done")],
        TaskStatusError,
        'task "a" has invalid status "done"',
        id="status",
    ),
    pytest.param(
        [task("a", status="")], TaskStatusError, 'task "a" has invalid status ""', id="empty-status"
    ),
    pytest.param(
        [task("a", status="Pending")],
        TaskStatusError,
        'task "a" has invalid status "Pending"',
        id="status-case",
    ),
    pytest.param(
        [task("a", "")], EmptyBlockerError, 'task "a" has an empty blocking dependency', id="empty"
    ),
    pytest.param(
        [task("a", " \t ")],
        EmptyBlockerError,
        'task "a" has an empty blocking dependency',
        id="blank-target",
    ),
    pytest.param([task("a", "a")], SelfBlockerError, 'task "a" blocks itself', id="self"),
    pytest.param(
        [task("a", "  a ")], SelfBlockerError, 'task "a" blocks itself', id="self-with-spaces"
    ),
    pytest.param(
        [task("a", "ghost")],
        MissingBlockerError,
        'task "a" depends on missing blocker "ghost"',
        id="missing",
    ),
    pytest.param(
        [task("a", " ghost ")],
        MissingBlockerError,
        'task "a" depends on missing blocker "ghost"',
        id="missing-trimmed-in-message",
    ),
    pytest.param(
        [task("b"), task("a", "B")],
        MissingBlockerError,
        'task "a" depends on missing blocker "B"',
        id="ids-are-case-sensitive",
    ),
    pytest.param(
        edge_heavy(extra=True),
        ScheduleLimitError,
        "task schedule exceeds 10000-dependency limit",
        id="edges-cap",
    ),
    pytest.param(
        tasks_of({"a": ["b"], "b": ["a"]}), ScheduleCycleError, f"{CYCLE}a -> b -> a", id="2-cycle"
    ),
    pytest.param(
        tasks_of({"a": ["c"], "b": ["a"], "c": ["b"]}),
        ScheduleCycleError,
        f"{CYCLE}a -> c -> b -> a",
        id="3-cycle",
    ),
    pytest.param(
        tasks_of({"a": ["z"], "y": ["z"], "z": ["y"], "b": []}),
        ScheduleCycleError,
        f"{CYCLE}z -> y -> z",
        id="downstream-task-not-in-cycle",
    ),
    pytest.param(
        tasks_of({"a": ["c", "b"], "b": ["a"], "c": ["d"], "d": ["c"]}),
        ScheduleCycleError,
        f"{CYCLE}a -> b -> a",
        id="smallest-blocker-walked-first",
    ),
    pytest.param(
        [task('say "hi"', status="x"), task("é", status="ok")],
        TaskStatusError,
        'task "say \\"hi\\"" has invalid status "x"',
        id="json-quoting",
    ),
    pytest.param(
        [task("é", status="fini")],
        TaskStatusError,
        'task "é" has invalid status "fini"',
        id="non-ascii-kept",
    ),
]


@pytest.mark.parametrize(("tasks", "error", "message"), ERROR_CASES)
def test_invalid_graph_raises_exact_message(
    tasks: list[Task], error: type[ScheduleError], message: str
) -> None:
    with pytest.raises(error, match=rf"^{re.escape(message)}$") as caught:
        compute_schedule(tasks)
    assert type(caught.value) is error


ORDER_CASES = [
    pytest.param(
        many_tasks(MAX_TASKS, task(""), task("zz", "ghost")),
        "task schedule exceeds 1000-task limit",
        id="task-cap-before-everything",
    ),
    pytest.param(many_tasks(MAX_TASKS), None, id="exactly-1000-tasks-is-fine"),
    pytest.param(
        [task("a", status="bogus"), task("b", "ghost")],
        'task "a" has invalid status "bogus"',
        id="status-of-a-before-blocker-of-b",
    ),
    pytest.param(
        [task("b", status="bogus"), task("a", "ghost")],
        'task "a" depends on missing blocker "ghost"',
        id="blocker-of-a-before-status-of-b",
    ),
    pytest.param(
        [task("b"), task("b"), task("a", status="bogus")],
        'task "a" has invalid status "bogus"',
        id="status-of-a-before-identity-of-b",
    ),
    pytest.param(
        [task("a", status="bogus"), task("a")],
        'task schedule contains invalid task identity "a"',
        id="identity-before-status-of-same-task",
    ),
    pytest.param(
        [task("a", "a", status="bogus")],
        'task "a" has invalid status "bogus"',
        id="status-before-blockers-of-same-task",
    ),
    pytest.param(
        [task("a", "ghost", "a", "")],
        'task "a" depends on missing blocker "ghost"',
        id="declared-order-missing-first",
    ),
    pytest.param(
        [task("a", "a", "ghost", "")], 'task "a" blocks itself', id="declared-order-self-first"
    ),
    pytest.param(
        [task("a", "", "a", "ghost")],
        'task "a" has an empty blocking dependency',
        id="declared-order-empty-first",
    ),
    pytest.param(
        [task("a", related=["ghost"], parent=["a"]), task("b", "a", "a", "ghost")],
        'task "b" depends on missing blocker "ghost"',
        id="soft-links-skipped-before-blocking-checks",
    ),
    pytest.param(
        tasks_of({"a": ["b"], "b": ["a"], "c": ["ghost"]}),
        'task "c" depends on missing blocker "ghost"',
        id="missing-blocker-before-cycle",
    ),
    pytest.param(
        [*tasks_of({"a": ["b"], "b": ["a"]}), task("c", status="bogus")],
        'task "c" has invalid status "bogus"',
        id="status-before-cycle",
    ),
    pytest.param(
        edge_heavy(extra=False, duplicate=True), None, id="10001-declared-edges-one-duplicate-fine"
    ),
    pytest.param(
        edge_heavy(extra=True, also=(task("e", "ghost"),)),
        "task schedule exceeds 10000-dependency limit",
        id="edge-cap-before-later-missing-blocker",
    ),
    pytest.param(
        edge_heavy(extra=True, also=(task("a", "ghost"),)),
        'task "a" depends on missing blocker "ghost"',
        id="earlier-missing-blocker-before-edge-cap",
    ),
    pytest.param(
        edge_heavy(extra=True, also=(task("e", status="bogus"),)),
        "task schedule exceeds 10000-dependency limit",
        id="edge-cap-before-later-status",
    ),
]


@pytest.mark.parametrize(("tasks", "message"), ORDER_CASES)
def test_checks_run_in_design_order(tasks: list[Task], message: str | None) -> None:
    if message is None:
        compute_schedule(tasks)
        return
    with pytest.raises(ScheduleError, match=rf"^{re.escape(message)}$"):
        compute_schedule(tasks)


def test_edge_cap_counts_unique_edges_only() -> None:
    """10,001 declared edges with one duplicate stay under the cap and schedule in two waves."""
    schedule = compute_schedule(edge_heavy(extra=False, duplicate=True))
    assert [len(wave) for wave in schedule.waves] == [100, 100]
    assert MAX_EDGES == 10000


ATTRIBUTE_CASES = [
    pytest.param(
        [task("a", status="x")], TaskStatusError, {"task_id": "a", "status": "x"}, id="status"
    ),
    pytest.param([task("")], TaskIdentityError, {"task_id": ""}, id="identity"),
    pytest.param([task("a", " ")], EmptyBlockerError, {"task_id": "a"}, id="empty"),
    pytest.param([task("a", "a")], SelfBlockerError, {"task_id": "a"}, id="self"),
    pytest.param(
        [task("a", " g ")], MissingBlockerError, {"task_id": "a", "blocker_id": "g"}, id="missing"
    ),
    pytest.param(
        tasks_of({"a": ["b"], "b": ["c"], "c": ["a"]}),
        ScheduleCycleError,
        {"cycle": ["a", "b", "c", "a"]},
        id="cycle",
    ),
    pytest.param(
        many_tasks(MAX_TASKS + 1),
        ScheduleLimitError,
        {"what": "task", "limit": 1000},
        id="tasks-cap",
    ),
    pytest.param(
        edge_heavy(extra=True),
        ScheduleLimitError,
        {"what": "dependency", "limit": 10000},
        id="edges",
    ),
]


@pytest.mark.parametrize(("tasks", "error", "attributes"), ATTRIBUTE_CASES)
def test_errors_carry_the_offending_values(
    tasks: list[Task], error: type[ScheduleError], attributes: dict[str, Any]
) -> None:
    with pytest.raises(error) as caught:
        compute_schedule(tasks)
    assert {name: getattr(caught.value, name) for name in attributes} == attributes


@pytest.mark.parametrize(
    "error",
    [
        ScheduleCycleError,
        ScheduleLimitError,
        TaskIdentityError,
        TaskStatusError,
        EmptyBlockerError,
        SelfBlockerError,
        MissingBlockerError,
    ],
)
def test_every_validator_error_is_a_value_error_and_a_task_store_error(
    error: type[ScheduleError],
) -> None:
    assert issubclass(error, ScheduleError)
    assert issubclass(error, ValueError)
    assert issubclass(error, TaskStoreError)


def test_cycle_error_is_catchable_as_value_error() -> None:
    with pytest.raises(ValueError, match=r"^cycle detected") as caught:
        compute_schedule(tasks_of({"a": ["b"], "b": ["a"]}))
    assert isinstance(caught.value, ScheduleCycleError)
    assert isinstance(caught.value, TaskStoreError)
    assert caught.value.cycle == ["a", "b", "a"]
