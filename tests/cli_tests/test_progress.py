"""The live view of a running mission, rendered to a string instead of a terminal."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from rho_mission import Feature, Mission
from rho_mission.cli._progress import LiveProgress


def _render(mission: Mission) -> str:
    buffer = io.StringIO()
    out = Console(file=buffer, width=120)
    out.print(LiveProgress(mission, out)._table())
    return buffer.getvalue()


def _mission(repo: Path, count: int) -> Mission:
    mission = Mission.new(repo, "p", [Feature(f"t{i}", f"parse [a-z] {i}") for i in range(count)])
    mission.waves = [[f"t{i}" for i in range(count)]]
    mission.features[0].status = "completed"
    return mission


def test_a_small_mission_shows_one_row_per_feature_with_its_subject_as_written(
    repo_path: Path,
) -> None:
    lines = _render(_mission(repo_path, 3)).splitlines()
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in lines if "│ t" in line]
    assert rows == [
        ["1", "t0", "completed", "0", "parse [a-z] 0"],
        ["1", "t1", "pending", "0", "parse [a-z] 1"],
        ["1", "t2", "pending", "0", "parse [a-z] 2"],
    ]


def test_a_large_mission_shows_one_row_per_wave_with_counts(repo_path: Path) -> None:
    text = _render(_mission(repo_path, LiveProgress.FEATURE_ROWS + 1))
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in text.splitlines()]
    assert ["1", "41", "", "1", "", "", "40"] in rows
    assert "t1 " not in text
