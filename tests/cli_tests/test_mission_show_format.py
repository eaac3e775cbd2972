"""``rho mission show MISSION --format mermaid|dot``: the mission as a diagram, by wave."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from support.rho import run_rho
from support.stores import import_tasks, mission_dir, spec


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [
        ("mermaid", ['subgraph g1["wave 1"]', 'subgraph g2["wave 2"]', "n1 --> n2"]),
        ("dot", ['label="wave 1"', 'label="wave 2"', "n1 -> n2"]),
    ],
)
def test_show_draws_the_mission_grouped_by_wave(
    project: Path, fmt: str, expected: list[str]
) -> None:
    import_tasks(project, [spec("task_1", "true"), spec("task_2", "exit 1", "task_1")])
    run_rho("mission", "--from-tasks", cwd=project)

    result = run_rho("mission", "show", mission_dir(project).name, "--format", fmt, cwd=project)

    assert result.code == 0, result.stderr
    for line in expected:
        assert line in result.stdout, result.stdout
    assert "do task_2" in result.stdout  # subjects, for people (the portable graph has none)


def test_show_refuses_an_unknown_format(project: Path) -> None:
    import_tasks(project, [spec("task_1", "true")])
    run_rho("mission", "--from-tasks", cwd=project)

    result = run_rho("mission", "show", "latest", "--format", "svg", cwd=project)

    assert result.code == 2
    assert result.stderr_lines[0].startswith("error: Invalid value for '--format'")


def test_took_counts_the_time_rho_ran_not_the_time_between_runs(
    project: Path, tmp_path: Path
) -> None:
    fixed = tmp_path / "fixed"
    import_tasks(project, [spec("a", f"test -f {fixed}")])
    assert run_rho("mission", "--from-tasks", cwd=project).code == 1
    path = mission_dir(project) / "mission.json"
    first = json.loads(path.read_text())
    assert 0 < first["run_seconds"] < 60
    # The user comes back ten minutes later (the first start moved back), fixes, resumes.
    started = datetime.fromisoformat(first["started_at"]) - timedelta(minutes=10)
    first["started_at"] = started.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    path.write_text(json.dumps(first, indent=2))
    fixed.touch()
    assert run_rho("mission", "resume", "latest", cwd=project).code == 0
    second = json.loads(path.read_text())
    assert first["run_seconds"] < second["run_seconds"] < 120
    [took] = [line for line in run_rho("mission", "show", "latest", cwd=project).stdout_lines
              if line.startswith("started ")]  # fmt: skip
    ran = f"{second['run_seconds']:.1f}s"
    assert re.search(rf"took {re.escape(ran)} \(6\d\d\.\ds from start to end, over more", took)
