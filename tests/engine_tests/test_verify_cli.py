"""``rho mission --verify CMD [--fix CMD]``: the project's checks on every wave's merged result.

The project: ``a.py`` defines ``old()``, ``b.py`` imports ``a``. In wave 1 ``rename`` renames
``old`` to ``new`` and ``caller`` adds a caller of ``old`` to ``b.py``: the two merge cleanly and
break together, which only the check (``python3 -c "import b"``) sees. ``later`` (wave 2) needs
``rename``. Each run here passes ``--no-bisect``: these tests pin the checks and the fix stage
as they are without bisection (``test_bisect_join`` pins bisection).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from graph import sha256_hex
from support.repos import run_git, tree_files
from support.rho import run_rho
from support.stores import import_tasks, journal_events, mission_dir, spec, store_tasks

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")

CHECK = 'python3 -c "import b"'
REPAIR = "sed -i s/a.old/a.new/ b.py"
BROKEN_B = "import a\nX = a.old()\n"
FIXED_B = "import a\nX = a.new()\n"


@pytest.fixture
def project(make_repo: Callable[[str, int], Path], marks: Path) -> Path:
    """The repository and its three tasks (see the module's docstring)."""
    repo = make_repo("repo", 1)
    (repo / "a.py").write_text("def old():\n    return 1\n")
    (repo / "b.py").write_text("import a\n")
    run_git(repo, "add", "a.py", "b.py")
    run_git(repo, "commit", "--quiet", "--message=a and b")
    ran = shlex.quote(str(marks / "ran"))
    import_tasks(
        repo,
        [
            spec("rename", f"echo rename >> {ran}; sed -i s/old/new/ a.py"),
            spec("caller", f"echo caller >> {ran}; printf 'import a\\nX = a.old()\\n' > b.py"),
            spec("later", f"echo later >> {ran}; echo later > later.txt", "rename"),
        ],
    )
    return repo


def _record(repo: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((mission_dir(repo) / "mission.json").read_text())
    return data


def _ran(marks: Path) -> list[str]:
    return (marks / "ran").read_text().split()


def test_features_that_break_together_stop_the_mission_at_their_wave(
    project: Path, marks: Path
) -> None:
    result = run_rho("mission", "--from-tasks", "--verify", CHECK, "--no-bisect", cwd=project)

    assert result.code == 1, result.stderr
    record = _record(project)
    [join] = record["wave_joins"]
    assert join["summary"] == (
        "wave 1 joined 2 feature(s), 2 completed, 0 failed, 1 downstream blocked, "
        "verification failed"
    )
    assert join["blocked_ids"] == ["later"]
    checked = join["verification"]
    assert (checked["status"], checked["attempts"], checked["fix_attempts"]) == ("failed", 1, 0)
    assert (checked["error"], checked["log"]) == (
        "command failed: exit code 1",
        "logs/verify-1.log",
    )
    assert checked["command_sha256"] == sha256_hex(CHECK)
    assert record["status"] == "partial"
    assert sorted(_ran(marks)) == ["caller", "rename"]
    assert {i: t["status"] for i, t in store_tasks(project).items()} == {
        "rename": "completed",
        "caller": "completed",
        "later": "pending",
    }
    # The merged work stays on the integration branch, for a fix to build on.
    files = tree_files(project, record["integration_branch"])
    assert (files["a.py"], files["b.py"]) == ("def new():\n    return 1\n", BROKEN_B)
    lines = result.stdout_lines
    assert lines[lines.index("verify-1 running (check 1)") + 1] == (
        "verify-1 failed (check 1): command failed: exit code 1"
    )
    assert "  | AttributeError: module 'a' has no attribute 'old'" in lines
    assert join["summary"] in lines


def test_show_and_log_name_the_checks_of_each_wave(project: Path) -> None:
    run_rho("mission", "--from-tasks", "--verify", CHECK, "--no-bisect", cwd=project)
    folder = mission_dir(project)
    mission_id = folder.name

    shown = run_rho("mission", "show", "latest", cwd=project)
    assert shown.code == 0, shown.stderr
    verification = next(line for line in shown.stdout_lines if "verification:" in line)
    assert verification.startswith("  verification: failed, 1 check(s), ")
    assert verification.endswith("s: command failed: exit code 1")
    assert f"  log: {folder / 'logs' / 'verify-1.log'}" in shown.stdout_lines

    log = run_rho("mission", "log", "latest", "verify-1", cwd=project)
    assert log.code == 0, log.stderr
    assert log.stdout_lines[0].startswith("== rho: verify-1 attempt 1 on ")
    assert log.stdout_lines[-2:] == [
        "AttributeError: module 'a' has no attribute 'old'",
        "== rho: verify-1 attempt 1 failed: command failed: exit code 1 ==",
    ]
    no_fix = run_rho("mission", "log", "latest", "fix-1", cwd=project)
    assert (no_fix.code, no_fix.stderr_lines[0]) == (
        2,
        f"error: fix-1 of mission {mission_id} has no log: no fix ran",
    )
    no_wave = run_rho("mission", "log", "latest", "verify-3", cwd=project)
    assert no_wave.stderr_lines[0] == f"error: mission {mission_id} has no wave 3: it has 2"


def test_a_fix_that_repairs_the_head_completes_the_mission(project: Path, marks: Path) -> None:
    seen = shlex.quote(str(marks / "fix-env"))
    fix = f'echo "$RHO_TASK_ID $RHO_WAVE $RHO_ATTEMPT $RHO_VERIFY_LOG" > {seen}; {REPAIR}'
    result = run_rho(
        "mission", "--from-tasks", "--verify", CHECK, "--no-bisect", "--fix", fix, cwd=project
    )

    assert result.code == 0, result.stdout + result.stderr
    record = _record(project)
    folder = mission_dir(project)
    assert [j["summary"] for j in record["wave_joins"]] == [
        "wave 1 joined 2 feature(s), 2 completed, 0 failed, verified",
        "wave 2 joined 1 feature(s), 1 completed, 0 failed, verified",
    ]
    first = record["wave_joins"][0]["verification"]
    assert (first["status"], first["attempts"], first["fix_attempts"]) == ("passed", 2, 1)
    assert first["fix_command_sha256"] == sha256_hex(fix)
    assert _ran(marks) in (["rename", "caller", "later"], ["caller", "rename", "later"])
    log = folder / "logs" / "verify-1.log"
    assert (marks / "fix-env").read_text() == f"fix-1 1 1 {log}\n"
    # The fix's commit is on the integration branch; wave 2 started from the fixed head.
    branch = record["integration_branch"]
    assert tree_files(project, branch)["b.py"] == FIXED_B
    subjects = run_git(project, "log", "--format=%s", branch).splitlines()
    assert f"rho-mission {record['id']}: fix-1" in subjects
    fixed = run_git(project, "rev-parse", f"rho-mission/{record['id']}/fix-1").strip()
    later_start = run_git(project, "rev-parse", f"rho-mission/{record['id']}/later~1").strip()
    assert later_start == fixed
    assert "fix-1 completed (attempt 1 of 3)" in result.stdout_lines


def test_the_graph_carries_each_verification_and_its_validated_by_edge(project: Path) -> None:
    fix = REPAIR
    run_rho("mission", "--from-tasks", "--verify", CHECK, "--no-bisect", "--fix", fix, cwd=project)
    folder = mission_dir(project)
    mission_id = folder.name

    exported = run_rho("graph", "export", "--mission-dir", str(folder), cwd=project)
    assert exported.code == 0, exported.stderr
    document = exported.json()
    nodes = {node["id"]: node for node in document["nodes"]}
    node = nodes[f"rho/verification/{mission_id}/1"]
    assert node["kind"] == "quality"
    assert {k: node["attributes"][k] for k in ("entity_type", "status", "attempts")} == {
        "entity_type": "verification",
        "status": "passed",
        "attempts": "2",
    }
    assert node["attributes"]["command_sha256"] == sha256_hex(CHECK)
    edges = {edge["id"]: edge for edge in document["edges"]}
    edge = edges[f"rho/edge/mission-wave/{mission_id}/1/validated_by"]
    assert (edge["kind"], edge["from"], edge["to"]) == (
        "validated_by",
        {"kind": "operations", "id": f"rho/mission-wave/{mission_id}/1"},
        {"kind": "quality", "id": f"rho/verification/{mission_id}/1"},
    )
    assert f"rho/verification/{mission_id}/2" in nodes
    assert CHECK not in exported.stdout
    assert fix not in exported.stdout


@pytest.mark.parametrize(
    ("fix", "checks", "fix_error"),
    [
        ("echo tried >> tries.txt", 3, None),  # merged each time, never repairs
        ("exit 3", 1, "command failed: exit code 3"),  # fails: nothing merged, nothing rechecked
    ],
)
def test_a_fix_that_never_repairs_stops_after_its_attempts(
    project: Path, fix: str, checks: int, fix_error: str | None
) -> None:
    result = run_rho(
        "mission", "--from-tasks", "--verify", CHECK, "--no-bisect", "--fix", fix,
        "--fix-attempts", "2", cwd=project,
    )  # fmt: skip

    assert result.code == 1, result.stderr
    record = _record(project)
    [join] = record["wave_joins"]
    checked = join["verification"]
    assert (checked["status"], checked["attempts"], checked["fix_attempts"]) == (
        "failed",
        checks,
        2,
    )
    assert checked["fix_error"] == fix_error
    assert join["summary"].endswith(", 1 downstream blocked, verification failed")
    assert record["status"] == "partial"
    assert "fix-1 running (attempt 2 of 2)" in result.stdout_lines


def test_resume_after_a_hand_fix_on_the_integration_branch_verifies_and_goes_on(
    project: Path, marks: Path, tmp_path: Path
) -> None:
    assert (
        run_rho("mission", "--from-tasks", "--verify", CHECK, "--no-bisect", cwd=project).code == 1
    )
    record = _record(project)
    branch = record["integration_branch"]
    hand = tmp_path / "hand"
    run_git(project, "worktree", "add", "--quiet", str(hand), branch)
    (hand / "b.py").write_text(FIXED_B)
    run_git(hand, "commit", "--quiet", "--all", "--message=call the new name")
    run_git(project, "worktree", "remove", str(hand))

    result = run_rho("mission", "resume", "latest", cwd=project)

    assert result.code == 0, result.stdout + result.stderr
    record = _record(project)
    checked = record["wave_joins"][0]["verification"]
    assert (checked["status"], checked["attempts"]) == ("passed", 1)
    assert _ran(marks)[2:] == ["later"]  # once, after the hand fix was verified
    assert "call the new name" in run_git(project, "log", "--format=%s", branch).splitlines()
    assert [e["why"] for e in journal_events(mission_dir(project), "ref")].count("adopt") == 1
    log = (mission_dir(project) / "logs" / "verify-1.log").read_text()
    assert log.count("== rho: verify-1 attempt 1 on ") == 2  # one run per run of rho


def test_usage_errors_of_the_stage_options(project: Path) -> None:
    lonely_fix = run_rho("mission", "--from-tasks", "--fix", REPAIR, cwd=project)
    assert (lonely_fix.code, lonely_fix.stderr_lines[0]) == (
        2,
        "error: --fix needs --verify: the fix repairs what the checks found",
    )
    lonely_attempts = run_rho(
        "mission",
        "--from-tasks",
        "--verify",
        CHECK,
        "--no-bisect",
        "--fix-attempts",
        "2",
        cwd=project,
    )
    assert lonely_attempts.stderr_lines[0] == "error: --fix-attempts needs --fix"
    assert not (project / ".rho" / "missions").exists()
