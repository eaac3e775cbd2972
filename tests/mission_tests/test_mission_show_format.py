"""``rho mission show MISSION --format mermaid|dot``: the mission as a diagram, by wave."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._cli_helpers import import_tasks, mission_dir, run_rho, spec


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
