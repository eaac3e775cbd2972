"""What a bisected join leaves for people: its check runs' logs, ``show``, ``clean``, the task
store.

The project is a small Python package with a real unittest suite (``python3 -m unittest``),
the mission's ``--verify`` checks; ``breaker`` breaks ``calc.add``, ``docs`` does not. The
join's checks fail, the bisection runs them on the base (``verify-1-2``), then on the prefix
``[breaker]`` (``verify-1-3``, which blames it), then on ``[docs]`` (``verify-1-4``).
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from support.repos import branches, run_git, worktree_paths
from support.rho import RhoRuns, run_rho, wait_file_cmd, wait_until
from support.stores import import_tasks, mission_dir, spec

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")

CHECK = "python3 -B -m unittest -q"
TESTS = """\
import unittest

import calc


class Calc(unittest.TestCase):
    def test_add(self):
        self.assertEqual(calc.add(2, 3), 5)
"""
BREAK_ADD = "sed -i 's/a + b/a - b/' calc.py"


def _project(make_repo: Callable[[str, int], Path]) -> Path:
    repo = make_repo("repo", 1)
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "test_calc.py").write_text(TESTS)
    (repo / ".gitignore").write_text("__pycache__/\n")
    run_git(repo, "add", ".")
    run_git(repo, "commit", "--quiet", "--message=calc and its test")
    return repo


def _bisected(make_repo: Callable[[str, int], Path], *args: str, code: int = 1) -> Path:
    """A finished mission whose wave 1 was bisected: ``breaker`` blamed, ``docs`` landed."""
    repo = _project(make_repo)
    import_tasks(repo, [spec("breaker", BREAK_ADD), spec("docs", "echo docs > README.txt")])
    result = run_rho("mission", "--from-tasks", "--verify", CHECK, *args, cwd=repo)
    assert result.code == code, result.stdout + result.stderr
    return repo


def _record(repo: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((mission_dir(repo) / "mission.json").read_text())
    return data


def test_mission_log_prints_each_check_run_of_a_bisection(
    make_repo: Callable[[str, int], Path],
) -> None:
    repo = _bisected(make_repo)
    folder = mission_dir(repo)

    blamed = run_rho("mission", "log", "latest", "verify-1-3", cwd=repo)
    base = run_rho("mission", "log", "latest", "verify-1-2", cwd=repo)
    beyond = run_rho("mission", "log", "latest", "verify-1-9", cwd=repo)

    assert blamed.code == 0, blamed.stderr
    assert blamed.stdout == (folder / "logs" / "verify-1-3.log").read_text()
    assert "FAIL: test_add" in blamed.stdout
    assert base.code == 0, base.stderr
    assert "FAIL" not in base.stdout
    assert "OK" in base.stdout
    assert (beyond.code, beyond.stderr_lines) == (
        2,
        [
            f"error: verify-1-9 of mission {folder.name} has no log: wave 1's checks were not "
            "run that many times (a bisection's runs)"
        ],
    )


def test_clean_deletes_the_probe_branches_and_their_worktrees(
    make_repo: Callable[[str, int], Path],
) -> None:
    repo = _bisected(make_repo)
    mission_id = mission_dir(repo).name
    prefix = f"rho-mission/{mission_id}/"
    probes = {f"{prefix}verify-1-{n}" for n in (2, 3, 4)}
    assert probes <= branches(repo)

    result = run_rho("mission", "clean", "latest", "--force", cwd=repo)

    assert result.code == 0, result.stdout + result.stderr
    assert not {b for b in branches(repo) if b.startswith(prefix)}
    assert worktree_paths(repo) == [str(repo)]  # the pool's idle ones are on no branch
    listed = run_git(repo, "worktree", "list", "--porcelain")
    assert "branch refs/heads/rho-mission/" not in listed


def test_mission_show_says_what_the_bisection_did_and_where_each_culprit_was_blamed(
    make_repo: Callable[[str, int], Path],
) -> None:
    repo = _bisected(make_repo)
    folder = mission_dir(repo)

    result = run_rho("mission", "show", "latest", cwd=repo)

    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    at = lines.index("  bisection: 3 check run(s), 1 culprit(s): breaker")
    assert lines[at + 1] == f"  culprit breaker: log {folder / 'logs' / 'verify-1-3.log'}"
    assert lines[at - 1].startswith("  verification: passed, 4 check(s)")
    assert any(
        line.startswith("breaker: failed, 1 attempt(s), ")
        and ": checks failed on the merged head after breaker: " in line
        for line in lines
    ), result.stdout
    checked = _record(repo)["wave_joins"][0]["verification"]
    assert checked["culprit_logs"] == {"breaker": "logs/verify-1-3.log"}
    shown = run_rho("mission", "show", "latest", "--json", cwd=repo).json()
    assert shown["wave_joins"][0]["verification"]["culprit_logs"] == checked["culprit_logs"]


def test_mission_show_says_when_the_base_failed_too(
    make_repo: Callable[[str, int], Path],
) -> None:
    repo = _project(make_repo)
    (repo / "test_broken.py").write_text(
        "import unittest\n\n\nclass Broken(unittest.TestCase):\n"
        "    def test_it(self):\n        self.fail('broken before the mission')\n"
    )
    run_git(repo, "add", ".")
    run_git(repo, "commit", "--quiet", "--message=a test that fails")
    import_tasks(repo, [spec("docs", "echo docs > README.txt")])
    assert run_rho("mission", "--from-tasks", "--verify", CHECK, cwd=repo).code == 1

    result = run_rho("mission", "show", "latest", cwd=repo)

    assert result.code == 0, result.stderr
    assert (
        "  bisection: 1 check run(s): the checks fail on the wave's base too, nobody blamed"
        in result.stdout.splitlines()
    )


def _task(repo: Path, task_id: str) -> dict[str, Any]:
    shown = run_rho("task", "show", task_id, "--json", cwd=repo)
    assert shown.code == 0, shown.stderr
    data: dict[str, Any] = shown.json()
    return data


def _landed_in(repo: Path, commit: str) -> bool:
    branch = _record(repo)["integration_branch"]
    found = subprocess.run(["git", "merge-base", "--is-ancestor", commit, branch], cwd=repo)
    return found.returncode == 0


def test_the_task_store_fails_a_culprit_and_notes_only_the_work_that_landed(
    make_repo: Callable[[str, int], Path],
) -> None:
    repo = _bisected(make_repo)
    landed = _record(repo)["wave_joins"][0]["verification"]["head"]

    breaker, docs = _task(repo, "breaker"), _task(repo, "docs")

    assert breaker["status"] == "failed"
    assert breaker["lastError"].startswith("checks failed on the merged head after breaker: ")
    # Its work is in no head that landed: a later mission must not count on it.
    assert "rho.commit" not in breaker["metadata"]
    assert "rho.mission" not in breaker["metadata"]
    assert docs["status"] == "completed"
    assert docs["metadata"]["rho.commit"] == landed
    assert _landed_in(repo, landed)


def test_a_replayed_culprit_that_lands_is_completed_in_the_store_with_its_work(
    make_repo: Callable[[str, int], Path],
) -> None:
    repo = _project(make_repo)
    replayed = f'if [ -s "$RHO_VERIFY_LOG" ]; then echo "Z = 3" > z.py; else {BREAK_ADD}; fi'
    import_tasks(repo, [spec("breaker", replayed), spec("docs", "echo docs > README.txt")])
    args = ("--verify", CHECK, "--replay-culprits", "1")
    result = run_rho("mission", "--from-tasks", *args, cwd=repo)
    assert result.code == 0, result.stdout + result.stderr
    landed = _record(repo)["wave_joins"][0]["verification"]["head"]

    breaker = _task(repo, "breaker")

    assert breaker["status"] == "completed"
    assert breaker["metadata"]["rho.commit"] == landed
    assert run_git(repo, "show", f"{landed}:z.py") == "Z = 3\n"
    assert _landed_in(repo, landed)


def test_a_notifier_hears_of_the_culprit_and_the_counts_report_its_replay_landing(
    make_repo: Callable[[str, int], Path], tmp_path: Path
) -> None:
    repo = _project(make_repo)
    replayed = f'if [ -s "$RHO_VERIFY_LOG" ]; then echo "Z = 3" > z.py; else {BREAK_ADD}; fi'
    import_tasks(repo, [spec("breaker", replayed), spec("docs", "echo docs > README.txt")])
    heard = tmp_path / "heard"
    heard.mkdir()
    notify = f'cp "$RHO_EVENT_FILE" "$(mktemp {shlex.quote(str(heard))}/event-XXXXXX)"'
    args = ("--verify", CHECK, "--replay-culprits", "1", "--notify", notify)

    result = run_rho("mission", "--from-tasks", *args, cwd=repo)

    assert result.code == 0, result.stdout + result.stderr
    events = {e["kind"]: e for e in (json.loads(p.read_text()) for p in heard.iterdir())}
    assert sorted(events) == ["culprit_found", "mission_ended"]
    found = events["culprit_found"]
    mission_id = mission_dir(repo).name
    assert (found["mission"], found["wave"], found["culprits"]) == (mission_id, 1, ["breaker"])
    # The merged head (failed), then the bisection's base (passed), [breaker] (failed) and
    # [docs] (passed), then the replayed breaker's head (passed: a check run of the join, not
    # of the bisection). The probes that passed are passed runs.
    joined = {"runs": 5, "passed": 3, "failed": 2, "bisect": 3, "flaky": 0}
    shown = run_rho("mission", "show", "latest", "--json", cwd=repo).json()["integration"]
    [join] = shown["joins"]
    assert (join["checks"], join["culprits"], join["merges"]) == (joined, 1, 2)
    assert (shown["culprits"], shown["culprits_landed"]) == (1, 1)
    stats = run_rho("mission", "stats", "--json", cwd=repo)
    assert stats.code == 0, stats.stderr
    summed = stats.json()
    assert (summed["culprits"], summed["culprits_landed"], summed["merges"]) == (1, 1, 2)
    assert summed["culprit_rate"] == 0.5
    assert summed["checks"]["bisect"] == 3


def test_mission_log_follows_a_check_run_of_a_bisection_until_its_wave_joins(
    make_repo: Callable[[str, int], Path], marks: Path, runs: RhoRuns
) -> None:
    repo = _project(make_repo)
    import_tasks(repo, [spec("breaker", BREAK_ADD), spec("docs", "echo docs > README.txt")])
    probing, gate = marks / "probing", marks / "gate"
    # The run that blames the breaker prints, then waits on the gate while it is followed.
    wait = f"echo probing; touch {shlex.quote(str(probing))}; {wait_file_cmd(gate)}"
    check = f'[ "$RHO_TASK_ID" != verify-1-3 ] || {{ {wait}; }}; {CHECK}'
    mission = runs.start("mission", "--from-tasks", "--verify", check, cwd=repo)
    wait_until(probing.exists, "the bisection's second run to start")

    follower = runs.start("mission", "log", "latest", "verify-1-3", "--follow", cwd=repo)
    printed = runs.folder / "rho-1.out"  # the second run's stdout (``RhoRuns.start``)
    # Printed while the run is held: followed live, not read once it ended.
    wait_until(lambda: b"probing" in printed.read_bytes(), "the follower to print the run")
    gate.touch()
    followed = runs.wait(follower)

    assert runs.wait(mission).code == 1
    assert followed.code == 0, followed.stderr
    assert followed.stdout == (mission_dir(repo) / "logs" / "verify-1-3.log").read_text()
    assert "probing" in followed.stdout
    assert "FAIL: test_add" in followed.stdout
