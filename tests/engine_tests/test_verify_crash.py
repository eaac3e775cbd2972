"""A crash (kill -9) while a wave's checks run resumes into those checks, never past them."""

from __future__ import annotations

import json
import shlex
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from support.rho import RhoRuns, run_rho, wait_file_cmd, wait_until
from support.stores import import_tasks, journal_events, mission_dir, spec

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")


def _record(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "mission.json").read_text())
    return data


def test_kill_9_during_verification_resumes_into_it(
    make_repo: Callable[[str, int], Path], marks: Path, runs: RhoRuns
) -> None:
    project = make_repo("repo", 1)
    ran, checks = shlex.quote(str(marks / "ran")), shlex.quote(str(marks / "checks"))
    verifying, gate = marks / "verifying", marks / "gate"
    # The checks of wave 1 wait on the gate, so that the kill lands while they run.
    wait = f"touch {shlex.quote(str(verifying))}; {wait_file_cmd(gate)}"
    verify = f'echo "$RHO_WAVE" >> {checks}; [ "$RHO_WAVE" != 1 ] || {{ {wait}; }}'
    import_tasks(
        project,
        [
            spec("first", f"echo first >> {ran}; echo 1 > first.txt"),
            spec("second", f"echo second >> {ran}; cat first.txt > second.txt", "first"),
        ],
    )
    first_run = runs.start("mission", "--from-tasks", "--verify", verify, cwd=project)
    wait_until(verifying.exists, "the checks of wave 1 to start")
    folder = mission_dir(project)
    crashed = _record(folder)  # durable before the checks started
    [join] = crashed["wave_joins"]
    assert join["verification"]["status"] == "running"
    assert join["summary"] == "wave 1 joined 1 feature(s), 1 completed, 0 failed, verifying"
    first_run.kill()
    assert runs.wait(first_run).code == -signal.SIGKILL
    shown = run_rho("mission", "show", "latest", cwd=project)
    assert "  verification: running, 0 check(s)" in shown.stdout_lines
    gate.touch()

    result = run_rho("mission", "resume", "latest", cwd=project)

    assert result.code == 0, result.stdout + result.stderr
    record = _record(folder)
    assert [j["summary"] for j in record["wave_joins"]] == [
        "wave 1 joined 1 feature(s), 1 completed, 0 failed, verified",
        "wave 2 joined 1 feature(s), 1 completed, 0 failed, verified",
    ]
    assert (marks / "checks").read_text() == "1\n1\n2\n"  # wave 1 checked again, then wave 2
    assert (marks / "ran").read_text() == "first\nsecond\n"
    # The resume went back into the checks of wave 1 before wave 2 started.
    passed = [e for e in journal_events(folder, "verify") if e["status"] == "passed"]
    entries = sorted(passed + journal_events(folder, "dispatch"), key=_seq)
    order = [e["feature_id"] if "feature_id" in e else f"verify {e['wave']}" for e in entries]
    assert order == ["first", "verify 1", "second", "verify 2"]
    log = (folder / "logs" / "verify-1.log").read_text()
    assert log.count("== rho: verify-1 attempt 1 on ") == 2


def _seq(entry: dict[str, Any]) -> int:
    seq: int = entry["seq"]
    return seq
