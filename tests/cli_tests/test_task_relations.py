"""People read a task's dependencies from its own side: ``blocked by``, ``related to``,
``child of``; ``--json`` keeps the stored shape (``{"targetId", "type": "blocks"}``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from support.rho import RunRho
from support.stores import task, write_store


def _rows(stdout: str) -> dict[str, str]:
    rows = (line.strip().split("  ", 1) for line in stdout.splitlines() if line.strip())
    return {name: value.strip() for name, value in rows}


def test_show_says_a_task_is_blocked_by_its_blockers(rho: RunRho, tmp_path: Path) -> None:
    store = "tasks.json"
    for subject in ("lexer", "parser", "docs"):
        rho("task", "add", subject, "--store", store)
    added = rho(
        "task", "add", "tests", "--blocked-by", "task_2", "--blocked-by", "task_1",
        "--related", "task_3", "--store", store,
    )  # fmt: skip
    assert added.stdout == "added task_4: tests\n"

    shown = _rows(rho("task", "show", "task_4", "--store", store).stdout)
    blocker = _rows(rho("task", "show", "task_1", "--store", store).stdout)

    assert (shown["blocked by"], shown["related to"]) == ("task_2, task_1", "task_3")
    assert "blocks" not in shown
    assert "blocked by" not in blocker  # task_1 waits on nothing
    as_json = rho("task", "show", "task_4", "--json", "--store", store).json()
    assert as_json["dependencies"] == [
        {"targetId": "task_3", "type": "related"},
        {"targetId": "task_2", "type": "blocks"},
        {"targetId": "task_1", "type": "blocks"},
    ]


def test_show_names_each_blocker_once_and_the_parent_in_its_own_row(
    rho: RunRho, tmp_path: Path
) -> None:
    store = write_store(
        tmp_path / "tasks.json",
        [
            task("task_1"),
            task("task_9"),
            task(
                "task_1.1",
                "task_9",
                "task_9",
                parentId="task_1",
                dependencies=[
                    {"targetId": "task_1", "type": "parent-child"},
                    {"targetId": "task_9", "type": "blocks"},
                    {"targetId": "task_9", "type": "blocks"},
                ],
            ),
        ],
    )
    shown = _rows(rho("task", "show", "task_1.1", "--store", str(store)).stdout)
    assert (shown["parent"], shown["blocked by"]) == ("task_1", "task_9")
    assert "child of" not in shown


def test_list_heads_the_blockers_column_blocked_by(
    rho: RunRho, tmp_path: Path, plain_table: Callable[..., list[list[str]]]
) -> None:
    store = write_store(tmp_path / "tasks.json", [task("task_1"), task("task_2", "task_1")])
    table = rho("task", "list", "--store", str(store)).stdout
    header, _, row = plain_table(table)
    assert header == ["id", "status", "pri", "subject", "blocked by"]
    assert row[0] == "task_2"
    assert row[4] == "task_1"
