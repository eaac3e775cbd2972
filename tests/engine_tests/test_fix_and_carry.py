"""The user's loop: fix a task in the store, resume with the fix; later missions see
the work of earlier ones, or refuse to run without it."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rho_mission import Feature, InvalidMissionError, Mission
from support.library import git_out
from support.repos import tree_files
from support.rho import run_rho
from support.stores import import_tasks, journal_events, mission_dir, spec, store_tasks


@pytest.fixture
def project(make_repo: Callable[[str, int], Path]) -> Path:
    """A repository with one committed file."""
    return make_repo("repo", 1)


def _record(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "mission.json").read_text())
    return data


def test_resume_runs_the_command_fixed_in_the_store(project: Path) -> None:
    import_tasks(
        project,
        [spec("task_1", "echo one > one.txt"), spec("task_2", "exit 3", "task_1")],
    )
    assert run_rho("mission", "--from-tasks", cwd=project).code == 1
    folder = mission_dir(project)
    fixed = run_rho("task", "update", "task_2", "--command", "echo two > two.txt", cwd=project)
    assert fixed.code == 0, fixed.stderr

    result = run_rho("mission", "resume", str(folder), cwd=project)

    assert result.code == 0, result.stdout + result.stderr
    record = _record(folder)
    assert record["status"] == "completed"
    assert record["features"][1]["command"] == "echo two > two.txt"
    files = tree_files(project, record["integration_branch"])
    assert (files["one.txt"], files["two.txt"]) == ("one\n", "two\n")
    (event,) = journal_events(folder, "refreshed")
    assert event["changed"] == ["task_2"]
    assert "echo two" not in json.dumps(event)


def test_resume_refuses_a_store_whose_shape_changed(project: Path) -> None:
    import_tasks(project, [spec("task_1", "exit 3")])
    assert run_rho("mission", "--from-tasks", cwd=project).code == 1
    folder = mission_dir(project)
    record = (folder / "mission.json").read_bytes()
    assert run_rho("task", "add", "late", "--command", "true", cwd=project).code == 0
    # task_1 now waits for work the mission does not hold: it would run without it.
    assert run_rho("task", "update", "task_1", "--add-blocker", "task_2", cwd=project).code == 0

    result = run_rho("mission", "resume", str(folder), cwd=project)

    assert result.code == 2
    assert result.stderr_lines == [
        f"error: the tasks of mission {folder.name} changed shape since it was planned "
        "(blockers of task_1 changed); resume takes fixed commands and texts only: start a "
        "new mission with 'rho mission --from-tasks'"
    ]
    assert (folder / "mission.json").read_bytes() == record


def test_a_task_added_to_the_store_does_not_stop_a_resume(project: Path) -> None:
    import_tasks(project, [spec("task_1", "exit 3")])
    assert run_rho("mission", "--from-tasks", cwd=project).code == 1
    assert run_rho("task", "add", "late", "--command", "true", cwd=project).code == 0
    assert run_rho("task", "update", "task_1", "--command", "true", cwd=project).code == 0

    result = run_rho("mission", "resume", "latest", cwd=project)

    assert result.code == 0, result.stderr
    record = json.loads((mission_dir(project) / "mission.json").read_text())
    assert [f["id"] for f in record["features"]] == ["task_1"]
    assert store_tasks(project)["task_2"]["status"] == "pending"  # the next mission's work


def _partial_mission(project: Path) -> Path:
    """task_1 writes lib.txt and completes; task_2 (blocked by it) fails the first time."""
    once = project.parent / "failed-once"
    import_tasks(
        project,
        [
            spec("task_1", "echo lib > lib.txt"),
            spec(
                "task_2",
                f"test -f lib.txt && {{ test -e {once} || {{ touch {once}; exit 1; }}; }} "
                "&& echo app > app.txt",
                "task_1",
            ),
        ],
    )
    assert run_rho("mission", "--from-tasks", cwd=project).code == 1
    return mission_dir(project)


def test_a_completed_task_records_where_its_work_is(project: Path) -> None:
    folder = _partial_mission(project)

    metadata = store_tasks(project)["task_1"]["metadata"]

    head = git_out(project, "rev-parse", _record(folder)["integration_branch"])
    assert (metadata["rho.commit"], metadata["rho.mission"]) == (head, folder.name)
    assert "rho.commit" not in store_tasks(project)["task_2"]["metadata"]


def test_a_new_mission_on_a_base_without_a_blockers_work_is_refused(project: Path) -> None:
    folder = _partial_mission(project)
    store = (project / ".rho" / "tasks.json").read_bytes()

    result = run_rho("mission", "--from-tasks", cwd=project)

    assert result.code == 2
    base = git_out(project, "rev-parse", "HEAD")[:12]
    assert result.stderr_lines == [
        f'error: task "task_2" needs the work of "task_1", completed by mission {folder.name}, '
        f"which the base {base} does not contain: bring it in with "
        f"'rho mission merge {folder.name}', or start from it with '--continue {folder.name}'"
    ]
    assert (project / ".rho" / "tasks.json").read_bytes() == store
    assert [p.name for p in (project / ".rho" / "missions").iterdir()] == [folder.name]


def test_after_the_blockers_mission_was_cleaned_the_refusal_names_what_exists(
    project: Path,
) -> None:
    # Before the fix: the advice named 'rho mission merge M' and '--continue M' for a mission that
    # was cleaned; both then failed.
    folder = _partial_mission(project)
    commit = store_tasks(project)["task_1"]["metadata"]["rho.commit"]
    assert run_rho("mission", "clean", folder.name, "--force", cwd=project).code == 0

    result = run_rho("mission", "--from-tasks", cwd=project)

    assert result.code == 2
    (line,) = result.stderr_lines
    assert f"rho mission merge {folder.name}" not in line
    assert "--continue" not in line
    assert line.endswith(
        f"merge its commit with 'git merge {commit[:12]}' (mission {folder.name} was "
        "cleaned), or run it again with 'rho task update task_1 --status pending'"
    )
    merged = subprocess.run(
        ["git", "merge", "--quiet", "--no-edit", commit[:12]], cwd=project, check=False
    )
    assert merged.returncode == 0  # what it said works
    assert run_rho("mission", "--from-tasks", cwd=project).code == 0


def test_a_new_mission_based_on_the_earlier_integration_branch_sees_its_work(
    project: Path,
) -> None:
    folder = _partial_mission(project)
    base = _record(folder)["integration_branch"]

    result = run_rho("mission", "--from-tasks", "--base", base, cwd=project)

    assert result.code == 0, result.stdout + result.stderr
    second = next(p for p in (project / ".rho" / "missions").iterdir() if p != folder)
    files = tree_files(project, _record(second)["integration_branch"])
    assert (files["lib.txt"], files["app.txt"]) == ("lib\n", "app\n")


def test_the_library_resumes_with_refreshed_features(repo_path: Path) -> None:
    mission = Mission.new(
        repo_path, "lib", [Feature("a", "A", command="exit 4"), Feature("b", command="true")]
    )
    mission.run_staged_sync(waves=[["a", "b"]])
    assert mission.feature("a").status == "failed"

    fixed = [Feature("a", "A fixed", command="echo a > a.txt"), Feature("b", command="true")]
    mission.resume_sync(refresh=fixed)

    assert mission.status == "completed"
    assert mission.feature("a").subject == "A fixed"
    with pytest.raises(InvalidMissionError, match=r"\(c added\)"):
        mission.resume_sync(refresh=[*fixed, Feature("c")])


def test_continue_latest_starts_from_the_earlier_missions_integration_head(
    project: Path,
) -> None:
    folder = _partial_mission(project)

    result = run_rho("mission", "--from-tasks", "--continue", "latest", cwd=project)

    assert result.code == 0, result.stdout + result.stderr
    second = next(p for p in (project / ".rho" / "missions").iterdir() if p != folder)
    record = _record(second)
    earlier = git_out(project, "rev-parse", _record(folder)["integration_branch"])
    assert record["base_commit"] == earlier
    assert tree_files(project, record["integration_branch"])["app.txt"] == "app\n"


def test_continue_and_base_together_are_refused(project: Path) -> None:
    _partial_mission(project)

    result = run_rho(
        "mission", "--from-tasks", "--continue", "latest", "--base", "HEAD", cwd=project
    )

    assert result.code == 2
    assert result.stderr_lines[0] == "error: pass --base or --continue, not both"


def test_resume_takes_a_new_run_command(project: Path) -> None:
    import_tasks(project, [spec("task_1", None)])
    assert run_rho("mission", "--from-tasks", "--run", "exit 5", cwd=project).code == 1
    folder = mission_dir(project)

    result = run_rho("mission", "resume", folder.name, "--run", "echo ok > ok.txt", cwd=project)

    assert result.code == 0, result.stdout + result.stderr
    record = _record(folder)
    assert record["config"]["run_command"] == "echo ok > ok.txt"
    assert tree_files(project, record["integration_branch"])["ok.txt"] == "ok\n"
