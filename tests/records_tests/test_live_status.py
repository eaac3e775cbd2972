"""A running mission as the views show it: what ran and ended between two joins is there.

mission.json is written at joins; between them the journal says what started and ended. The
page always read both; ``rho mission show``, ``rho mission list`` and the API's list (what the
SDK clients read) now do too (``records/_live``). Real ``rho``: a wave of two tasks, one done,
one waiting on a file, looked at while it waits.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rho_mission import Mission
from rho_mission.serve._source import mission_summary
from support.rho import RhoRuns, run_rho, wait_file_cmd, wait_until
from support.stores import import_tasks, journal_events, mission_dir, spec

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")


def test_show_list_and_the_api_say_what_ran_while_a_wave_runs(
    project: Path, runs: RhoRuns, marks: Path
) -> None:
    go = marks / "go"
    import_tasks(
        project, [spec("a", "echo a > a.txt"), spec("b", f"{wait_file_cmd(go)}; echo b > b.txt")]
    )
    running = runs.start("mission", "--from-tasks", cwd=project)
    wait_until(lambda: _finished(project, "a"), "a's finish in the journal")
    recorded = json.loads((mission_dir(project) / "mission.json").read_text())
    assert {f["id"]: f["status"] for f in recorded["features"]} == {"a": "pending", "b": "pending"}

    shown = run_rho("mission", "show", "latest", cwd=project).stdout_lines
    rows = {line.split()[1]: line.split()[2] for line in shown if line.startswith("1 ")}
    assert rows == {"a": "completed", "b": "in_progress"}
    listed = run_rho("mission", "list", cwd=project).stdout_lines
    assert listed[2].split()[1:4] == ["executing", "2", "1"]  # status, features, completed
    summary = mission_summary(Mission.load(mission_dir(project)))
    assert (summary["counts"]["completed"], summary["counts"]["in_progress"]) == (1, 1)

    go.touch()
    assert runs.wait(running).code == 0
    shown = run_rho("mission", "show", "latest", cwd=project).stdout_lines
    assert {line.split()[1] for line in shown if line.startswith("1 ") and "completed" in line} == {
        "a",
        "b",
    }


def _finished(project: Path, feature_id: str) -> bool:
    folder = project / ".rho" / "missions"
    if not folder.is_dir() or not any(folder.iterdir()):
        return False
    return any(
        e["feature_id"] == feature_id for e in journal_events(mission_dir(project), "finish")
    )
