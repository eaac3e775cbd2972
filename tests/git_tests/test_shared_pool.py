"""The worktree pool outlives its mission: later missions reuse its worktrees, checked as
strictly as new ones, one mission at a time each, bounded in number, and pruned on demand."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from support.rho import RHO, run_rho
from support.stores import import_tasks, spec

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout


def _pooled(repo: Path) -> dict[Path, str]:
    """The pool's registered worktrees and their lock reasons."""
    found: dict[Path, str] = {}
    path: Path | None = None
    for line in _git(repo, "worktree", "list", "--porcelain").splitlines():
        if line.startswith("worktree "):
            path = Path(line.removeprefix("worktree "))
        elif line.startswith("locked") and path is not None and path.parent.name == "pool":
            found[path] = line.removeprefix("locked").strip()
    return found


def _tasks(prefix: str, count: int) -> list[dict[str, object]]:
    return [spec(f"{prefix}{n}", f"echo {n} > {prefix}{n}.txt") for n in range(1, count + 1)]


def _mission(project: Path, *args: str, env: dict[str, str] | None = None) -> None:
    result = run_rho("mission", "--from-tasks", "--workers", "2", *args, cwd=project, env=env)
    assert result.code == 0, result.stderr


def _integrated(project: Path) -> set[str]:
    branches = _git(project, "branch", "--list", "rho-mission/*/integration", "--format=%(refname)")
    return {
        name
        for branch in branches.split()
        for name in _git(project, "ls-tree", "--name-only", branch).split()
    }


def test_a_second_mission_reuses_the_first_ones_worktrees(project: Path) -> None:
    import_tasks(project, _tasks("a", 4))
    _mission(project)
    first = _pooled(project)
    assert len(first) == 2
    assert set(first.values()) == {"rho-pool idle"}
    for path in first:
        assert _git(path, "status", "--porcelain", "--ignored") == ""
        # Given back detached (HEAD names a commit, not a branch; git's own words for it depend
        # on HEAD's reflog, which rho's moves by file do not write).
        head = (Path(_git(path, "rev-parse", "--absolute-git-dir").strip()) / "HEAD").read_text()
        assert not head.startswith("ref:"), "given back detached"
    import_tasks(project, _tasks("b", 4))
    _mission(project)
    assert set(_pooled(project)) == set(first), "no new worktree"
    assert {f"b{n}.txt" for n in range(1, 5)} <= _integrated(project)
    assert not (project / "a1.txt").exists(), "the user's checkout is untouched"


def test_the_pool_keeps_at_most_its_limit(project: Path) -> None:
    import_tasks(project, _tasks("a", 4))
    _mission(project, env={"RHO_WORKTREE_POOL": "1"})
    assert len(_pooled(project)) == 1
    import_tasks(project, _tasks("b", 2))
    _mission(project, env={"RHO_WORKTREE_POOL": "0"})
    assert len(_pooled(project)) == 1, "a mission without a pool leaves the pool alone"
    assert not (project / ".rho" / "worktrees").joinpath("latest").exists()


def test_a_bad_pool_limit_is_bad_input(project: Path) -> None:
    import_tasks(project, _tasks("a", 1))
    result = run_rho("mission", "--from-tasks", cwd=project, env={"RHO_WORKTREE_POOL": "many"})
    assert result.code == 2
    assert result.stderr.startswith("error: RHO_WORKTREE_POOL must be a whole number >= 0")


@pytest.mark.parametrize("attack", ["git file to the main repository", "folder made a link"])
def test_a_pooled_worktree_tampered_between_missions_is_never_used(
    project: Path, tmp_path: Path, snapshot: Callable[[Path], str], attack: str
) -> None:
    """What a task (or a daemon it left) does to a pooled worktree after its mission: rho
    neither runs git through it nor writes where it points; it deletes it and adds a new one."""
    import_tasks(project, _tasks("a", 1))
    _mission(project, "--workers", "1")
    (victim,) = _pooled(project)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("mine\n")
    if attack.startswith("git file"):
        (victim / ".git").write_text(f"gitdir: {project / '.git'}\n")
    else:
        shutil.rmtree(victim)
        victim.symlink_to(elsewhere)
    before = snapshot(project)
    import_tasks(project, _tasks("b", 2))
    _mission(project, "--workers", "1")
    assert snapshot(project) == before, "the user's branch, HEAD and index are as they were"
    assert sorted(p.name for p in elsewhere.iterdir()) == ["keep.txt"]
    assert victim not in _pooled(project)
    assert not os.path.lexists(victim) or not victim.is_symlink()
    assert {"b1.txt", "b2.txt"} <= _integrated(project)


def test_a_worktree_whose_holder_died_is_not_reused_and_is_pruned(project: Path) -> None:
    import_tasks(project, _tasks("a", 1))
    _mission(project, "--workers", "1")
    (path,) = _pooled(project)
    _git(project, "worktree", "unlock", str(path))
    _git(project, "worktree", "lock", "--reason", "rho-mission deadbeef pid 999999", str(path))
    import_tasks(project, _tasks("b", 1))
    _mission(project, "--workers", "1")
    pooled = _pooled(project)
    assert path not in pooled, "its holder's processes may still write there"
    assert len(pooled) == 1


def test_two_missions_at_once_share_the_pool_without_sharing_a_worktree(project: Path) -> None:
    import_tasks(project, _tasks("a", 2))
    _mission(project)
    import_tasks(project, [*_tasks("b", 3), *_tasks("c", 3)])
    env = {**os.environ, "RHO_WORKTREE_POOL": "3"}

    def start(prefix: str) -> subprocess.Popen[bytes]:
        only = ",".join(f"{prefix}{n}" for n in range(1, 4))
        argv = [str(RHO), "mission", "--from-tasks", "--workers", "2", "--only", only]
        return subprocess.Popen(argv, cwd=project, env=env, stdout=subprocess.DEVNULL)

    runs = [start("b"), start("c")]
    assert [run.wait(timeout=120) for run in runs] == [0, 0]
    assert {f"{p}{n}.txt" for p in "bc" for n in range(1, 4)} <= _integrated(project)
    assert len(_pooled(project)) <= 3


def test_prune_and_clean_finished_empty_the_pool(project: Path) -> None:
    import_tasks(project, _tasks("a", 2))
    _mission(project)
    assert len(_pooled(project)) == 2
    pruned = run_rho("worktrees", "prune", cwd=project)
    assert pruned.stdout == "removed 2 pooled worktree(s)\n"
    assert _pooled(project) == {}
    import_tasks(project, _tasks("b", 1))
    _mission(project)
    assert run_rho("mission", "merge", "latest", cwd=project).code == 0
    cleaned = run_rho("mission", "clean", "--finished", "--force", cwd=project)
    assert cleaned.code == 0, cleaned.stderr
    assert cleaned.stdout.endswith("removed 1 pooled worktree(s)\n")
    assert _git(project, "branch", "--list", "rho-mission/*") == ""


def test_a_worktree_a_process_still_works_in_is_left_alone(project: Path) -> None:
    """A process left in a pooled worktree (a daemon that forged the idle lock reason, say)
    keeps it from reuse: the next mission takes another one and leaves that one as it is."""
    import_tasks(project, _tasks("a", 1))
    _mission(project, "--workers", "1")
    (busy,) = _pooled(project)
    lingering = subprocess.Popen(["sleep", "60"], cwd=busy)
    try:
        head = _git(busy, "rev-parse", "HEAD")
        import_tasks(project, _tasks("b", 1))
        _mission(project, "--workers", "1")
        assert _git(busy, "rev-parse", "HEAD") == head, "not checked out over"
        assert len(_pooled(project)) == 2
    finally:
        lingering.kill()
        lingering.wait()
