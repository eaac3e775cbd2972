"""Flaky checks (``--verify-retries K``): failing checks run again on the same tree before
anyone is blamed or a fix runs; a pass then is counted flaky, both runs in the stage's log.

Real ``rho`` missions; the check is a shell command that fails its first run and passes the
next (a counter outside the repository), as a flaky test does.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from support.rho import run_rho
from support.stores import import_tasks, mission_dir, spec

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")


def _flaky_check(tmp_path: Path) -> str:
    runs = shlex.quote(str(tmp_path / "runs"))
    return f"echo run >> {runs}; [ $(wc -l < {runs}) -ge 2 ]"


def test_a_check_that_passes_on_its_second_run_is_flaky_and_blames_no_one(
    project: Path, tmp_path: Path
) -> None:
    import_tasks(project, [spec("a", "echo a > a.txt")])
    fixed = tmp_path / "fix-ran"
    fix = f"touch {shlex.quote(str(fixed))}"
    args = ("--verify", _flaky_check(tmp_path), "--verify-retries", "1", "--fix", fix)
    done = run_rho("mission", "--from-tasks", *args, cwd=project)
    assert done.code == 0, done.stdout + done.stderr
    [join] = json.loads((mission_dir(project) / "mission.json").read_text())["wave_joins"]
    checked = join["verification"]
    assert (checked["status"], checked["attempts"], checked["flaky"]) == ("passed", 2, 1)
    assert not fixed.exists()  # no fix for a flaky check
    log = (mission_dir(project) / "logs" / "verify-1.log").read_text()
    assert "verify-1 attempt 1 failed" in log
    assert "verify-1 attempt 2 passed" in log
    shown = run_rho("mission", "show", "latest", cwd=project).stdout
    assert "2 check(s), 1 flaky (failed, then passed on the same tree)" in shown
    folder = mission_dir(project)
    exported = run_rho("graph", "export", "--mission-dir", str(folder), cwd=project).json()
    nodes = {node["id"]: node for node in exported["nodes"]}
    assert nodes[f"rho/verification/{folder.name}/1"]["attributes"]["flaky_count"] == "1"


def test_without_retries_the_same_check_fails_the_wave(project: Path, tmp_path: Path) -> None:
    import_tasks(project, [spec("a", "echo a > a.txt")])
    # Without bisection: with it, the next run (the base's) would pass and blame "a".
    args = ("--verify", _flaky_check(tmp_path), "--no-bisect")
    done = run_rho("mission", "--from-tasks", *args, cwd=project)
    assert done.code == 1
    assert "verification failed" in done.stdout


def test_retries_without_checks_are_bad_input(project: Path) -> None:
    import_tasks(project, [spec("a", "echo a > a.txt")])
    done = run_rho("mission", "--from-tasks", "--verify-retries", "2", cwd=project)
    assert done.code == 2
    assert done.stderr_lines[0] == (
        "error: --verify-retries needs --verify: it runs failing checks again"
    )
