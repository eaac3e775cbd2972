"""Bisecting a failed join: the checks find the tasks that broke them, the rest lands.

The project is a small Python package with a real unittest suite (``python3 -m unittest``),
the mission's ``--verify`` checks. ``calc.py`` adds and ``lib.py`` defines ``old()``; the tests
check both, and ``b.py``'s use of ``lib``.
"""

from __future__ import annotations

import json
import shlex
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from support.repos import run_git, tree_files
from support.rho import RhoRuns, run_rho, wait_file_cmd, wait_until
from support.stores import import_tasks, journal_events, mission_dir, spec, store_tasks

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")

CHECK = "python3 -B -m unittest -q"
TESTS = """\
import unittest

import b
import calc


class Calc(unittest.TestCase):
    def test_add(self):
        self.assertEqual(calc.add(2, 3), 5)

    def test_b_uses_lib(self):
        self.assertEqual(b.X, 1)
"""
BREAK_ADD = "sed -i 's/a + b/a - b/' calc.py"
RENAME = "sed -i s/old/new/ lib.py"
CALLER = "printf 'import lib\\nX = lib.old()\\n' > b.py"


def _project(make_repo: Callable[[str, int], Path], name: str, *, failing: bool = False) -> Path:
    repo = make_repo(name, 1)
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "lib.py").write_text("def old():\n    return 1\n")
    (repo / "b.py").write_text("X = 1\n")
    (repo / "test_calc.py").write_text(TESTS)
    if failing:
        (repo / "test_broken.py").write_text(
            "import unittest\n\n\nclass Broken(unittest.TestCase):\n"
            "    def test_it(self):\n        self.fail('broken before the mission')\n"
        )
    (repo / ".gitignore").write_text("__pycache__/\n")
    run_git(repo, "add", ".")
    run_git(repo, "commit", "--quiet", "--message=calc, lib and their tests")
    return repo


def _record(repo: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((mission_dir(repo) / "mission.json").read_text())
    return data


def _features(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["id"]: f for f in record["features"]}


def _one_breaker(repo: Path, sleeps: dict[str, float] | None = None) -> None:
    """Wave 1: ``breaker`` breaks a test alone, ``docs`` and ``extra`` do not; wave 2:
    ``after_breaker`` and ``after_docs`` each need one of them."""
    pause = {k: f"sleep {v}; " for k, v in (sleeps or {}).items()}
    import_tasks(
        repo,
        [
            spec("breaker", pause.get("breaker", "") + BREAK_ADD),
            spec("docs", pause.get("docs", "") + "echo docs > README.txt"),
            spec("extra", pause.get("extra", "") + "echo 'Y = 2' > extra.py"),
            spec("after_breaker", "echo after > after_breaker.txt", "breaker"),
            spec("after_docs", "echo after > after_docs.txt", "docs"),
        ],
    )


def test_a_task_that_breaks_the_checks_alone_fails_and_the_rest_lands(
    make_repo: Callable[[str, int], Path],
) -> None:
    repo = _project(make_repo, "repo")
    _one_breaker(repo)

    result = run_rho("mission", "--from-tasks", "--verify", CHECK, cwd=repo)

    assert result.code == 1, result.stdout + result.stderr
    record = _record(repo)
    features = _features(record)
    assert {i: f["status"] for i, f in features.items()} == {
        "breaker": "failed",
        "docs": "completed",
        "extra": "completed",
        "after_breaker": "pending",
        "after_docs": "completed",
    }
    error = features["breaker"]["error"]
    assert error.startswith("checks failed on the merged head after breaker: ")
    # The checks' own last word, then where their output is.
    assert error.endswith(": FAILED (failures=1) (log: logs/verify-1-3.log)"), error
    first, second = record["wave_joins"]
    checked = first["verification"]
    # The merged head, the base, the prefix [breaker], the order without it: [docs, extra].
    assert (checked["status"], checked["attempts"], checked["bisect_runs"]) == ("passed", 4, 3)
    assert (checked["culprit_ids"], checked["base_failed"]) == (["breaker"], False)
    assert first["failed_ids"] == ["breaker"]
    assert first["blocked_ids"] == ["after_breaker"]
    assert second["completed_ids"] == ["after_docs"]
    assert record["status"] == "partial"
    folder = mission_dir(repo)
    for n in (2, 3, 4):
        assert (folder / "logs" / f"verify-1-{n}.log").is_file()
    # The integration branch holds the work that passed, never the breaker's.
    files = tree_files(repo, record["integration_branch"])
    assert files["calc.py"] == "def add(a, b):\n    return a + b\n"
    assert {"README.txt", "extra.py", "after_docs.txt"} <= set(files)
    assert "after_breaker.txt" not in files
    assert (
        checked["head"] == run_git(repo, "rev-parse", f"{record['integration_branch']}~1").strip()
    )
    statuses = {i: t["status"] for i, t in store_tasks(repo).items()}
    assert (statuses["breaker"], statuses["docs"], statuses["after_breaker"]) == (
        "failed",
        "completed",
        "pending",
    )
    assert len(journal_events(folder, "bisect")) == 3
    exported = run_rho("graph", "export", "--mission-dir", str(folder), cwd=repo).json()
    nodes = {node["id"]: node for node in exported["nodes"]}
    attributes = nodes[f"rho/verification/{folder.name}/1"]["attributes"]
    assert (attributes["bisect_run_count"], attributes["culprit_count"]) == ("3", "1")
    assert "culprit_count" not in nodes[f"rho/verification/{folder.name}/2"]["attributes"]


def test_two_that_pass_alone_and_fail_together_blame_the_later_in_merge_order(
    make_repo: Callable[[str, int], Path],
) -> None:
    repo = _project(make_repo, "repo")
    # Merged in id order: "a_caller" (a new caller of lib.old) first, then "b_rename".
    import_tasks(repo, [spec("a_caller", CALLER), spec("b_rename", RENAME)])

    result = run_rho("mission", "--from-tasks", "--verify", CHECK, cwd=repo)

    assert result.code == 1, result.stdout + result.stderr
    record = _record(repo)
    features = _features(record)
    assert (features["a_caller"]["status"], features["b_rename"]["status"]) == (
        "completed",
        "failed",
    )
    assert features["b_rename"]["error"].startswith(
        "checks failed on the merged head after b_rename: "
    )
    [join] = record["wave_joins"]
    assert join["verification"]["culprit_ids"] == ["b_rename"]
    files = tree_files(repo, record["integration_branch"])
    assert (files["lib.py"], files["b.py"]) == (
        "def old():\n    return 1\n",
        "import lib\nX = lib.old()\n",
    )


def test_checks_that_fail_on_the_base_blame_nobody(
    make_repo: Callable[[str, int], Path],
) -> None:
    repo = _project(make_repo, "repo", failing=True)
    import_tasks(repo, [spec("docs", "echo docs > README.txt"), spec("extra", "echo 1 > e.txt")])

    result = run_rho("mission", "--from-tasks", "--verify", CHECK, cwd=repo)

    assert result.code == 1, result.stdout + result.stderr
    record = _record(repo)
    [join] = record["wave_joins"]
    checked = join["verification"]
    assert (checked["status"], checked["base_failed"], checked["culprit_ids"]) == (
        "failed",
        True,
        [],
    )
    assert checked["bisect_runs"] == 1
    assert checked["error"].startswith("the checks fail on the wave's base too: ")
    assert {f["status"] for f in record["features"]} == {"completed"}


def test_no_bisect_stops_the_mission_at_the_failed_join_as_without_bisection(
    make_repo: Callable[[str, int], Path],
) -> None:
    repo = _project(make_repo, "repo")
    _one_breaker(repo)

    result = run_rho("mission", "--from-tasks", "--verify", CHECK, "--no-bisect", cwd=repo)

    assert result.code == 1, result.stdout + result.stderr
    record = _record(repo)
    assert record["config"]["bisect"] is False
    [join] = record["wave_joins"]
    checked = join["verification"]
    assert (checked["status"], checked["attempts"], checked["bisect_runs"]) == ("failed", 1, 0)
    assert join["completed_ids"] == ["breaker", "docs", "extra"]
    assert sorted(join["blocked_ids"]) == ["after_breaker", "after_docs"]
    assert not (mission_dir(repo) / "logs" / "verify-1-2.log").exists()


def test_the_same_culprits_and_tree_whatever_order_the_tasks_finish_in(
    make_repo: Callable[[str, int], Path],
) -> None:
    trees = []
    for name, sleeps in (
        ("early", {"docs": 0.4, "extra": 0.2}),
        ("late", {"breaker": 0.4, "extra": 0.2}),
    ):
        repo = _project(make_repo, name)
        _one_breaker(repo, sleeps)
        result = run_rho("mission", "--from-tasks", "--verify", CHECK, "--workers", "3", cwd=repo)
        assert result.code == 1, result.stdout + result.stderr
        record = _record(repo)
        assert record["wave_joins"][0]["verification"]["culprit_ids"] == ["breaker"]
        branch = record["integration_branch"]
        trees.append(run_git(repo, "rev-parse", f"{branch}^{{tree}}").strip())
    assert trees[0] == trees[1]


def test_a_kill_9_during_a_bisection_then_resume_lands_no_unchecked_merge(
    make_repo: Callable[[str, int], Path], marks: Path, runs: RhoRuns
) -> None:
    repo = _project(make_repo, "repo")
    _one_breaker(repo)
    probing, gate = marks / "probing", marks / "gate"
    # The bisection's probe of the prefix [breaker] waits on the gate: the kill lands there.
    wait = f"touch {shlex.quote(str(probing))}; {wait_file_cmd(gate)}"
    gated = f'[ "$RHO_TASK_ID" != verify-1-3 ] || [ -e {shlex.quote(str(gate))} ]'
    check = f"{gated} || {{ {wait}; }}; {CHECK}"
    first = runs.start("mission", "--from-tasks", "--verify", check, cwd=repo)
    wait_until(probing.exists, "the bisection's second probe to start")
    crashed = _record(repo)  # written before the bisection began
    merged_head = crashed["integration_head"]
    first.kill()
    assert runs.wait(first).code == -signal.SIGKILL
    branch = crashed["integration_branch"]
    # Nothing landed after the merged head while the bisection ran.
    assert run_git(repo, "rev-parse", branch).strip() == merged_head
    gate.touch()

    result = run_rho("mission", "resume", "latest", cwd=repo)

    assert result.code == 1, result.stdout + result.stderr
    record = _record(repo)
    features = _features(record)
    assert features["breaker"]["status"] == "failed"
    assert {features[i]["status"] for i in ("docs", "extra", "after_docs")} == {"completed"}
    first_join = record["wave_joins"][0]["verification"]
    assert (first_join["status"], first_join["culprit_ids"]) == ("passed", ["breaker"])
    files = tree_files(repo, branch)
    assert files["calc.py"] == "def add(a, b):\n    return a + b\n"
    assert {"README.txt", "extra.py", "after_docs.txt"} <= set(files)


def test_a_kill_9_during_a_replay_then_resume_loses_nothing_and_lands_no_unchecked_merge(
    make_repo: Callable[[str, int], Path], marks: Path, runs: RhoRuns
) -> None:
    repo = _project(make_repo, "repo")
    replaying, gate = marks / "replaying", marks / "gate"
    # Sent back, the culprit waits on the gate (the kill lands there), then does its part
    # without breaking calc.add.
    wait = f"touch {shlex.quote(str(replaying))}; {wait_file_cmd(gate)}"
    replayed = (
        f'if [ -s "$RHO_VERIFY_LOG" ]; then {wait}; echo "Z = 3" > z.py; else {BREAK_ADD}; fi'
    )
    import_tasks(
        repo,
        [
            spec("breaker", replayed),
            spec("docs", "echo docs > README.txt"),
            spec("after_breaker", "echo after > after_breaker.txt", "breaker"),
        ],
    )
    args = ("--verify", CHECK, "--replay-culprits", "1")
    first = runs.start("mission", "--from-tasks", *args, cwd=repo)
    wait_until(replaying.exists, "the culprit's replay to start")
    first.kill()
    assert runs.wait(first).code == -signal.SIGKILL
    branch = _record(repo)["integration_branch"]
    # Whatever the integration branch holds now passed the checks: never the breaker's merge.
    assert tree_files(repo, branch)["calc.py"] == "def add(a, b):\n    return a + b\n"
    gate.touch()

    result = run_rho("mission", "resume", "latest", cwd=repo)

    assert result.code == 0, result.stdout + result.stderr
    record = _record(repo)
    features = _features(record)
    assert {f["status"] for f in features.values()} == {"completed"}
    assert features["breaker"]["culprit_replays"] == 1  # at most N replays, a crash or not
    files = tree_files(repo, branch)
    assert files["calc.py"] == "def add(a, b):\n    return a + b\n"
    assert {"z.py", "README.txt", "after_breaker.txt"} <= set(files)
    assert store_tasks(repo)["breaker"]["status"] == "completed"


def test_a_replayed_culprit_that_passes_the_checks_lands_in_the_same_join(
    make_repo: Callable[[str, int], Path], marks: Path
) -> None:
    repo = _project(make_repo, "repo")
    told = shlex.quote(str(marks / "told"))
    # Alone it breaks calc.add; told what failed, it does its part without breaking it.
    replayed = (
        f'if [ -s "$RHO_VERIFY_LOG" ]; then echo "$RHO_VERIFY_LOG" > {told}; '
        f'cp "$RHO_TASK_PROMPT_FILE" {told}.md; echo "Z = 3" > z.py; else {BREAK_ADD}; fi'
    )
    import_tasks(
        repo,
        [
            spec("breaker", replayed),
            spec("docs", "echo docs > README.txt"),
            spec("after_breaker", "echo after > after_breaker.txt", "breaker"),
        ],
    )

    args = ("--verify", CHECK, "--replay-culprits", "1")
    result = run_rho("mission", "--from-tasks", *args, cwd=repo)

    assert result.code == 0, result.stdout + result.stderr
    record = _record(repo)
    features = _features(record)
    assert {f["status"] for f in features.values()} == {"completed"}
    assert features["breaker"]["culprit_replays"] == 1
    first = record["wave_joins"][0]
    assert first["completed_ids"] == ["breaker", "docs"]
    assert first["verification"]["culprit_ids"] == ["breaker"]
    folder = mission_dir(repo)
    # The probe of the prefix [breaker] (after the base's run) named it: its log is told.
    assert (marks / "told").read_text() == f"{folder / 'logs' / 'verify-1-3.log'}\n"
    assert "the project's checks failed after it was merged" in (marks / "told.md").read_text()
    files = tree_files(repo, record["integration_branch"])
    assert files["calc.py"] == "def add(a, b):\n    return a + b\n"
    assert {"z.py", "README.txt", "after_breaker.txt"} <= set(files)


def test_a_culprit_whose_replays_break_the_checks_again_stays_failed(
    make_repo: Callable[[str, int], Path],
) -> None:
    repo = _project(make_repo, "repo")
    import_tasks(repo, [spec("breaker", BREAK_ADD), spec("docs", "echo docs > README.txt")])

    args = ("--verify", CHECK, "--replay-culprits", "2")
    result = run_rho("mission", "--from-tasks", *args, cwd=repo)

    assert result.code == 1, result.stdout + result.stderr
    breaker = _features(_record(repo))["breaker"]
    assert (breaker["status"], breaker["culprit_replays"]) == ("failed", 2)
    assert breaker["error"].startswith("checks failed on the merged head after breaker: ")
    assert breaker["error"].endswith("; replay 2: the checks failed again")


def test_replay_culprits_without_bisection_is_bad_input(
    make_repo: Callable[[str, int], Path],
) -> None:
    repo = _project(make_repo, "repo")
    import_tasks(repo, [spec("docs", "echo docs > README.txt")])
    args = ("--verify", CHECK, "--no-bisect", "--replay-culprits", "1")
    done = run_rho("mission", "--from-tasks", *args, cwd=repo)
    assert (done.code, done.stderr_lines[0]) == (
        2,
        "error: --replay-culprits needs --verify and bisection: it replays the tasks it blamed",
    )
    assert not (repo / ".rho" / "missions").exists()


def test_a_flaky_run_during_the_bisection_is_run_again_before_anyone_is_blamed(
    make_repo: Callable[[str, int], Path], marks: Path
) -> None:
    repo = _project(make_repo, "repo")
    import_tasks(repo, [spec("breaker", BREAK_ADD), spec("docs", "echo docs > README.txt")])
    seen = shlex.quote(str(marks))
    # The first run of the checks on each tree fails, whatever the tree holds: flaky.
    flaky = (
        f"t={seen}/$(git rev-parse 'HEAD^{{tree}}'); "
        f'if [ ! -e "$t" ]; then touch "$t"; exit 1; fi; {CHECK}'
    )

    args = ("--verify", flaky, "--verify-retries", "1")
    result = run_rho("mission", "--from-tasks", *args, cwd=repo)

    assert result.code == 1, result.stdout + result.stderr
    [join] = _record(repo)["wave_joins"]
    checked = join["verification"]
    # Without the second runs the base would have failed: nobody would have been blamed.
    assert (checked["culprit_ids"], checked["base_failed"]) == (["breaker"], False)
    assert checked["flaky"] == 2  # the base, and the head without the breaker
    assert join["completed_ids"] == ["docs"]
