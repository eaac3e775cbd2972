"""The ``TaskList`` action API: the agent tool's JSON view of a store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from taskstore import TaskList, TaskStore

from ._graphs import task, write_document


@pytest.fixture
def tasklist(store: TaskStore) -> TaskList:
    """task_1 completed; task_2 (owned, blocked by task_1) ready; task_3 failed; task_4 waits."""
    store.add("design")
    store.add("build", blocked_by=["task_1"], related=["task_1"])
    store.add("test", command="pytest")
    store.add("ship", blocked_by=["task_2", "task_3"])
    store.update("task_1", status="completed")
    store.update("task_3", status="failed", last_error="exit 1", attempts=2)
    document = store.load()
    document.tasks[1].owner = "agent-7"
    write_document(store.path, document.tasks, revision=document.revision)
    return TaskList(store)


def test_ready_returns_ready_task_summaries_and_waves(tasklist: TaskList) -> None:
    assert tasklist.run({"action": "ready"}) == {
        "tasks": [
            {
                "id": "task_2",
                "subject": "build",
                "status": "pending",
                "owner": "agent-7",
                "dependencies": [
                    {"targetId": "task_1", "type": "related"},
                    {"targetId": "task_1", "type": "blocks"},
                ],
            }
        ],
        "waves": [["task_1", "task_3"], ["task_2"], ["task_4"]],
    }


def test_ready_answer_is_plain_json(tasklist: TaskList) -> None:
    answer = tasklist.run({"action": "ready"})
    assert json.loads(json.dumps(answer)) == answer


def test_ready_of_an_empty_store(store: TaskStore) -> None:
    assert TaskList(store).run({"action": "ready"}) == {"tasks": [], "waves": []}


@pytest.mark.parametrize(
    ("tasks", "message"),
    [
        pytest.param(
            [task("task_1", "ghost")],
            'task "task_1" depends on missing blocker "ghost"',
            id="missing",
        ),
        pytest.param(
            [task("a", "b"), task("b", "a")],
            "cycle detected in blocking task dependency graph: a -> b -> a",
            id="cycle",
        ),
        pytest.param([task("a", status="done")], 'task "a" has invalid status "done"', id="status"),
    ],
)
def test_ready_on_an_invalid_graph_returns_the_validator_error(
    store: TaskStore, store_path: Path, tasks: list[Any], message: str
) -> None:
    write_document(store_path, [*tasks, task("z")])
    assert TaskList(store).run({"action": "ready"}) == {
        "error": f"validate task schedule: {message}"
    }


def test_list_returns_every_task_summary_sorted(tasklist: TaskList) -> None:
    answer = tasklist.run({"action": "list"})
    assert [t["id"] for t in answer["tasks"]] == ["task_1", "task_2", "task_3", "task_4"]
    assert answer["tasks"][3] == {
        "id": "task_4",
        "subject": "ship",
        "status": "pending",
        "owner": None,
        "dependencies": [
            {"targetId": "task_2", "type": "blocks"},
            {"targetId": "task_3", "type": "blocks"},
        ],
    }


def test_list_works_on_an_invalid_graph(store: TaskStore, store_path: Path) -> None:
    write_document(store_path, [task("a", "ghost")])
    assert [t["id"] for t in TaskList(store).run({"action": "list"})["tasks"]] == ["a"]


def test_failed_returns_failed_tasks_with_last_error_and_attempts(tasklist: TaskList) -> None:
    assert tasklist.run({"action": "failed"}) == {
        "tasks": [
            {
                "id": "task_3",
                "subject": "test",
                "status": "failed",
                "owner": None,
                "dependencies": [],
                "lastError": "exit 1",
                "attempts": 2,
            }
        ]
    }


def test_compact_counts_statuses_and_lists_unfinished_tasks(tasklist: TaskList) -> None:
    assert tasklist.run({"action": "compact"}) == {
        "counts": {"completed": 1, "failed": 1, "pending": 2},
        "open": [
            "task_2 [pending] build (blocked by task_1)",
            "task_3 [failed] test",
            "task_4 [pending] ship (blocked by task_2, task_3)",
        ],
    }


def test_compact_leaves_out_skipped_and_cancelled_tasks(store: TaskStore, store_path: Path) -> None:
    tasks = [
        task("a", status="skipped"),
        task("b", status="cancelled"),
        task("c", status="reviewing"),
    ]
    write_document(store_path, tasks)
    assert TaskList(store).run({"action": "compact"}) == {
        "counts": {"cancelled": 1, "reviewing": 1, "skipped": 1},
        "open": ["c [reviewing] subject of c"],
    }


@pytest.mark.parametrize(
    ("request_", "shown"),
    [
        pytest.param({"action": "delete"}, '"delete"', id="unknown-name"),
        pytest.param({}, "null", id="no-action"),
        pytest.param({"action": 5}, "5", id="not-a-string"),
        pytest.param({"action": "READY"}, '"READY"', id="case-sensitive"),
    ],
)
def test_unknown_action_returns_an_error(
    tasklist: TaskList, request_: dict[str, Any], shown: str
) -> None:
    assert tasklist.run(request_) == {
        "error": f"unknown action {shown}; expected compact, failed, list or ready"
    }
