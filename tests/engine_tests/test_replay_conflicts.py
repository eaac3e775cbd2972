"""Replays and the ladder's other promises (design §10, rung 3): real ``rho`` runs.

- ``--replay-conflicts N`` runs a conflicted feature's task again from the joined head, in the
  same run and join (``RHO_REPLAY=1``, a new attempt), at most N times;
- with ``--resolve`` too, the resolver comes first;
- ``kill -9`` during a resolve or a replay loses nothing: the integration branch holds the
  merges before the conflicted feature and never a half-made merge, and ``resume`` carries on
  from that feature without running a finished task again;
- Ctrl-C during a resolve stops it, its processes with it;
- the same tasks and resolver give the same join, conflict records and tree, whatever order
  the tasks finished in;
- under ``--sandbox`` the resolver is in the sandbox.
"""

from __future__ import annotations

import shlex
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from support.overlap import (
    NAMES,
    REGISTRY,
    STAND_IN,
    features,
    mission_json,
    package,
    registering_tasks,
    runs_of,
)
from support.repos import integration_branch, run_git, tree_files
from support.rho import RhoRuns, run_rho, wait_file_cmd, wait_until
from support.stores import mission_dir, store_tasks

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")


def _project(project: Path, marks: Path, extra: Callable[[str], str] = lambda n: "") -> Path:
    package(project)
    registering_tasks(project, marks, extra)
    return project


def _says_replay(name: str) -> str:
    return "echo replay=${RHO_REPLAY:-0} attempt=$RHO_ATTEMPT &&"


def test_replays_land_every_task_in_one_run(project: Path, marks: Path) -> None:
    _project(project, marks, _says_replay)

    result = run_rho("mission", "--from-tasks", "--replay-conflicts", "2", cwd=project)

    assert result.code == 0, result.stdout + result.stderr
    assert tree_files(project, integration_branch(project))["pkg/__init__.py"] == (
        "from .a import a\nfrom .b import b\nfrom .c import c\n"
    )
    assert [runs_of(marks, f"add_{n}") for n in NAMES] == [1, 2, 2]
    by_id = features(project)
    assert [by_id[f"add_{n}"]["attempts"] for n in NAMES] == [1, 2, 2]
    assert by_id["add_c"]["conflict"] == {
        "paths": ["pkg/__init__.py"],
        "with": ["add_a"],
        "outcome": "replayed",
        "resolve_attempts": 0,
        "replays": 1,
        "reason": None,
    }
    (join,) = mission_json(project)["wave_joins"]
    assert (join["completed_ids"], join["conflicted_ids"]) == (
        ["add_a", "add_b", "add_c"],
        ["add_b", "add_c"],
    )
    log = (mission_dir(project) / "logs" / "add_b.log").read_text()
    assert "replay=0 attempt=1" in log
    assert "replay=1 attempt=2" in log
    assert "add_b completed (merge conflict in pkg/__init__.py with add_a, replayed)" in (
        result.stdout_lines
    )


def test_the_resolver_comes_first_then_a_replay(project: Path, marks: Path) -> None:
    _project(project, marks)
    args = ("--resolve", "exit 1", "--replay-conflicts", "1")

    result = run_rho("mission", "--from-tasks", *args, cwd=project)

    assert result.code == 0, result.stdout + result.stderr
    conflict = features(project)["add_b"]["conflict"]
    assert (conflict["outcome"], conflict["resolve_attempts"], conflict["replays"]) == (
        "replayed",
        1,
        1,
    )
    assert tree_files(project, integration_branch(project))["pkg/__init__.py"] == REGISTRY


def test_a_replay_that_keeps_failing_fails_its_feature_after_n(project: Path, marks: Path) -> None:
    _project(project, marks, lambda name: '[ -z "$RHO_REPLAY" ] &&')

    result = run_rho("mission", "--from-tasks", "--replay-conflicts", "2", cwd=project)

    assert result.code == 1
    expected = (
        "merge conflict in pkg/__init__.py with add_a (add a); "
        "replay 2 failed: command failed: exit code 1"
    )
    assert store_tasks(project)["add_b"]["lastError"] == expected
    by_id = features(project)
    assert (by_id["add_b"]["conflict"]["replays"], by_id["add_b"]["attempts"]) == (2, 3)
    assert [runs_of(marks, f"add_{n}") for n in NAMES] == [1, 3, 3]


def _wait_then_resolve(marks: Path, go: Path) -> str:
    started = shlex.quote(str(marks / "resolving"))
    return f"touch {started} && {wait_file_cmd(go)} && {STAND_IN}"


def test_kill_9_during_a_resolve_loses_nothing(project: Path, marks: Path, runs: RhoRuns) -> None:
    _project(project, marks)
    go = marks / "go"
    crashed = runs.start(
        "mission", "--from-tasks", "--resolve", _wait_then_resolve(marks, go), cwd=project
    )
    wait_until((marks / "resolving").exists, "the resolver to start")

    crashed.send_signal(signal.SIGKILL)
    crashed.wait(timeout=30)

    # The merges before the conflicted feature are on the integration branch, whole.
    branch = integration_branch(project)
    assert tree_files(project, branch)["pkg/__init__.py"] == "from .a import a\n"
    assert features(project)["add_b"]["status"] == "completed"  # its work waits to be merged
    go.touch()
    resumed = run_rho("mission", "resume", "latest", cwd=project)
    assert resumed.code == 0, resumed.stdout + resumed.stderr
    assert tree_files(project, branch)["pkg/__init__.py"] == REGISTRY
    assert [runs_of(marks, f"add_{n}") for n in NAMES] == [1, 1, 1]  # no task ran again
    assert features(project)["add_b"]["conflict"]["outcome"] == "resolved"


def test_kill_9_during_a_replay_loses_nothing(project: Path, marks: Path, runs: RhoRuns) -> None:
    go = marks / "go"
    replaying = shlex.quote(str(marks / "replaying"))
    wait = f'{{ [ -z "$RHO_REPLAY" ] || {{ touch {replaying} && {wait_file_cmd(go)}; }}; }} &&'
    _project(project, marks, lambda name: wait)
    crashed = runs.start("mission", "--from-tasks", "--replay-conflicts", "1", cwd=project)
    wait_until((marks / "replaying").exists, "a replay to start")

    crashed.send_signal(signal.SIGKILL)
    crashed.wait(timeout=30)

    branch = integration_branch(project)
    assert tree_files(project, branch)["pkg/__init__.py"] == "from .a import a\n"
    go.touch()
    resumed = run_rho("mission", "resume", "latest", cwd=project)
    assert resumed.code == 0, resumed.stdout + resumed.stderr
    assert tree_files(project, branch)["pkg/__init__.py"] == REGISTRY
    assert runs_of(marks, "add_a") == 1


def test_ctrl_c_during_a_resolve_stops_it_and_keeps_what_was_merged(
    project: Path, marks: Path, runs: RhoRuns
) -> None:
    _project(project, marks)
    stopped = runs.start(
        "mission",
        "--from-tasks",
        "--resolve",
        _wait_then_resolve(marks, marks / "never"),
        cwd=project,
    )
    wait_until((marks / "resolving").exists, "the resolver to start")

    stopped.send_signal(signal.SIGINT)
    result = runs.wait(stopped)

    assert result.code == 130, result.stdout + result.stderr
    record = mission_json(project)
    assert record["status"] == "cancelled"
    by_id = features(project)
    assert (by_id["add_a"]["status"], by_id["add_b"]["status"]) == ("completed", "cancelled")
    assert by_id["add_b"]["conflict"]["reason"] == "cancelled"
    assert tree_files(project, integration_branch(project))["pkg/__init__.py"] == (
        "from .a import a\n"
    )


def _delays(order: tuple[str, ...]) -> Callable[[str], str]:
    # The first of *order* finishes last: the tasks end in the reverse of *order*.
    return lambda name: f"sleep {0.4 * (len(order) - 1 - order.index(name)):.1f} &&"


@pytest.mark.parametrize("order", [("a", "b", "c"), ("c", "b", "a")], ids=["abc", "cba"])
def test_the_same_tasks_and_resolver_give_the_same_join_whatever_order_they_end(
    make_repo: Callable[[str, int], Path], tmp_path: Path, order: tuple[str, ...]
) -> None:
    results = []
    for run, finishing in enumerate((order, tuple(reversed(order)))):
        project = make_repo(f"repo{run}", 1)
        marks = tmp_path / f"marks{run}"
        marks.mkdir()
        _project(project, marks, _delays(finishing))
        result = run_rho("mission", "--from-tasks", "--resolve", str(STAND_IN), cwd=project)
        assert result.code == 0, result.stdout + result.stderr
        tree = run_git(project, "rev-parse", f"{integration_branch(project)}^{{tree}}").strip()
        conflicts = {i: f["conflict"] for i, f in features(project).items()}
        (join,) = mission_json(project)["wave_joins"]
        results.append((tree, conflicts, join["conflicted_ids"], join["completed_ids"]))
    assert results[0] == results[1]


@pytest.mark.usefixtures("bwrap")
def test_the_resolver_runs_in_the_sandbox(project: Path) -> None:
    package(project)
    registering_tasks(project, None)  # a sandboxed task leaves no mark outside its worktree
    checkout = shlex.quote(str(project / "file0000.txt"))
    main_ref = shlex.quote(str(project / ".git" / "refs" / "heads" / "main"))
    attacks = f"{{ echo pwned >> {checkout}; rm -f {main_ref}; true; }}"
    before = (project / "file0000.txt").read_bytes()

    # The checkout holding the stand-in may lie where the sandbox shows nothing (a /tmp clone).
    shown = ("--sandbox-allow", str(STAND_IN.parent))
    resolver = f"{attacks} && {STAND_IN}"
    result = run_rho(
        "mission", "--from-tasks", "--sandbox", *shown, "--resolve", resolver, cwd=project
    )

    assert result.code == 0, result.stdout + result.stderr
    assert (project / "file0000.txt").read_bytes() == before
    assert run_git(project, "rev-parse", "--verify", "main").strip()
    assert tree_files(project, integration_branch(project))["pkg/__init__.py"] == REGISTRY
    log = (mission_dir(project) / "logs" / "resolve" / "add_b.log").read_text()
    assert "Read-only file system" in log
