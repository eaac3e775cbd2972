"""``--keep-going``: after a failure, what does not depend on it still runs; the default stops."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

from support.repos import tree_files
from support.rho import run_rho
from support.stores import import_tasks, mission_dir, spec, store_tasks


@pytest.fixture
def project(make_repo: Callable[[str, int], Path], tmp_path: Path) -> Path:
    """Two chains: task_1 fails, task_3 needs it, task_4 needs task_3; task_2 -> task_5 -> task_6
    are independent of it, spread over the same waves."""
    repo = make_repo("repo", 1)
    ran = shlex.quote(str(tmp_path / "ran"))
    ok = f'echo "$RHO_TASK_ID" >> {ran}; echo "$RHO_TASK_ID" > "$RHO_TASK_ID.txt"'
    import_tasks(
        repo,
        [
            spec("task_1", f"{ok}; exit 1"),
            spec("task_2", ok),
            spec("task_3", ok, "task_1"),
            spec("task_4", ok, "task_3"),
            spec("task_5", ok, "task_2"),
            spec("task_6", ok, "task_5", "task_2"),
        ],
    )
    return repo


def _record(repo: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((mission_dir(repo) / "mission.json").read_text())
    return data


def _ran(tmp_path: Path) -> list[str]:
    return sorted((tmp_path / "ran").read_text().split())


def test_keep_going_runs_the_independent_chain_and_never_the_failed_ones_downstream(
    project: Path, tmp_path: Path
) -> None:
    result = run_rho("mission", "--from-tasks", "--keep-going", cwd=project)

    assert result.code == 1, result.stderr
    assert _ran(tmp_path) == ["task_1", "task_2", "task_5", "task_6"]
    record = _record(project)
    assert record["status"] == "partial"
    joins = record["wave_joins"]
    assert isinstance(joins, list)
    assert [j["blocked_ids"] for j in joins] == [["task_3", "task_4"], ["task_4"], []]
    assert joins[0]["summary"] == (
        "wave 1 joined 2 feature(s), 1 completed, 1 failed, 2 downstream blocked"
    )
    # A later wave's join counts its own features that a failure kept from running (before the fix:
    # it read "1 feature(s), 0 completed, 0 failed").
    assert [j["summary"].split(", ", 1)[1] for j in joins[1:]] == [
        "1 completed, 0 failed, 1 blocked, 1 downstream blocked",
        "1 completed, 0 failed, 1 blocked",
    ]
    statuses = {i: t["status"] for i, t in store_tasks(project).items()}
    assert statuses == {
        "task_1": "failed",
        "task_2": "completed",
        "task_3": "pending",
        "task_4": "pending",
        "task_5": "completed",
        "task_6": "completed",
    }
    files = tree_files(project, str(record["integration_branch"]))
    assert {"task_2.txt", "task_5.txt", "task_6.txt"} <= set(files)
    assert "task_1.txt" not in files


def test_without_keep_going_nothing_after_the_failed_wave_runs(
    project: Path, tmp_path: Path
) -> None:
    result = run_rho("mission", "--from-tasks", cwd=project)

    assert result.code == 1, result.stderr
    assert _ran(tmp_path) == ["task_1", "task_2"]
    joins = _record(project)["wave_joins"]
    assert isinstance(joins, list)
    # task_5 and task_6 do not depend on task_1: not run, for the stop, but not blocked.
    assert [j["blocked_ids"] for j in joins] == [["task_3", "task_4"]]
    assert [j["not_run_ids"] for j in joins] == [["task_5", "task_6"]]


def test_a_wave_that_merged_nothing_says_its_head_was_checked_before(
    make_repo: Callable[[str, int], Path],
) -> None:
    # b fails: wave 2 merges nothing, and its head is the one wave 1's checks passed. It is
    # not checked again, and says so (it was shown "verified", "passed, 0 check(s)").
    project = make_repo("plain", 1)
    import_tasks(project, [spec("a", "echo a > a.txt"), spec("b", "exit 1", "a")])
    done = run_rho("mission", "--from-tasks", "--keep-going", "--verify", "true", cwd=project)
    assert done.code == 1, done.stderr
    summary = "wave 2 joined 1 feature(s), 0 completed, 1 failed, its head unchanged since "
    assert f"{summary}its checks passed" in done.stdout
    shown = run_rho("mission", "show", "latest", cwd=project).stdout_lines
    assert "  verification: no check run: its head is unchanged since its checks passed" in shown
    assert not any("0 check(s)" in line for line in shown)
    page = project.parent / "report.html"
    assert run_rho("mission", "report", "latest", "--html", str(page), cwd=project).code == 0
    assert f"{summary}its checks passed" in page.read_text()
