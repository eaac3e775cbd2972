"""The live view of a running mission, rendered to a string instead of a terminal."""

from __future__ import annotations

import io
import re
from pathlib import Path

from rich.console import Console

from rho_mission import Feature, Mission
from rho_mission.cli._progress import LiveProgress
from support.rho import run_rho
from support.stores import import_tasks, spec


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


def test_a_bisections_probes_name_their_logs_and_print_the_failure_once(project: Path) -> None:
    # The checks fail once task b is merged: the join's run prints the output's last lines, each
    # failing probe of the search only where its log is.
    check = "test ! -f b.txt || { echo BROKEN-BY-B; exit 1; }"
    tasks = [spec(name, f"echo {name} > {name}.txt") for name in ("a", "b", "c")]
    import_tasks(project, tasks)
    done = run_rho("mission", "--from-tasks", "--verify", check, cwd=project)
    out = done.stdout + done.stderr
    assert done.code == 1, out
    assert "b failed: checks failed on the merged head after b" in out
    probes = [line for line in out.splitlines() if re.match(r"verify-1-\d+ failed", line)]
    assert probes, out  # the search did fail a probe
    tails = [line for line in out.splitlines() if line.startswith("  | ")]
    assert [line for line in tails if "BROKEN-BY-B" in line] == ["  | BROKEN-BY-B"], out
    assert re.search(r"^  log: .*logs/verify-1-\d+\.log$", out, re.M), out
