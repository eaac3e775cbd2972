"""The worktree pool: reuse, clean-up, stale worktrees of crashed runs, concurrent features."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from rho_mission._errors import (
    GitOperationError,
    InvalidMissionError,
    RefMovedError,
    WorktreeTamperedError,
)
from rho_mission.git._leftovers import prune_stale
from rho_mission.git._pool import WorktreePool
from rho_mission.git._repo import GitRepo

Git = Callable[..., str]
MISSION = "abc12345"


@pytest.fixture
def folder(repo: GitRepo) -> Path:
    """Where the engine keeps the mission's worktrees: under the excluded ``.rho/``."""
    return repo.root / ".rho" / "worktrees" / MISSION


@pytest.fixture
def pool(repo: GitRepo, folder: Path) -> Iterator[WorktreePool]:
    """A pool for mission ``abc12345``, closed at teardown."""
    with WorktreePool(repo, folder, MISSION) as opened:
        yield opened


def registered(git: Git, repo: GitRepo) -> list[str]:
    """The paths of every registered worktree, as ``git worktree list --porcelain`` has them."""
    out = git(repo.root, "worktree", "list", "--porcelain")
    return [
        line.removeprefix("worktree ") for line in out.splitlines() if line.startswith("worktree ")
    ]


def branch_of(git: Git, path: Path) -> str:
    """The branch checked out in the worktree at *path*."""
    return git(path, "symbolic-ref", "--short", "HEAD").strip()


def wait_for_file(path: Path, timeout: float = 30.0) -> None:
    """Wait until *path* exists; fail after *timeout* seconds."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"timed out waiting for {path}"
        time.sleep(0.01)


def test_acquire_checks_the_branch_out_at_the_start_commit(pool: WorktreePool, git: Git) -> None:
    start = pool.repo.head_commit()
    path = pool.acquire("rho-mission/abc12345/a", "main")
    assert path.parent == pool.folder
    assert branch_of(git, path) == "rho-mission/abc12345/a"
    assert git(path, "rev-parse", "HEAD").strip() == start
    assert git(path, "status", "--porcelain") == ""
    assert (path / "file0002.txt").read_text(encoding="utf-8") == "line 2\n"


def test_a_released_worktree_is_reused_clean_on_the_next_branch(
    pool: WorktreePool, git: Git
) -> None:
    repo = pool.repo
    first = pool.acquire("m/a", repo.head_commit())
    (first / "a.txt").write_text("work of a\n", encoding="utf-8")
    tip_a = repo.commit_all(first, "a").commit_id
    (first / "file0002.txt").write_text("left modified\n", encoding="utf-8")
    (first / "out").mkdir()
    (first / "out" / "result.bin").write_bytes(b"untracked output")
    (first / ".gitignore").write_text("*.log\n", encoding="utf-8")
    (first / "build.log").write_text("ignored output\n", encoding="utf-8")
    pool.release(first)
    assert tip_a is not None
    second = pool.acquire("m/b", tip_a)
    assert second == first
    assert branch_of(git, second) == "m/b"
    assert git(second, "rev-parse", "HEAD").strip() == tip_a
    assert git(second, "status", "--porcelain", "--ignored") == ""
    assert sorted(p.name for p in second.iterdir()) == [
        ".git",
        "a.txt",
        "file0000.txt",
        "file0001.txt",
        "file0002.txt",
    ]
    assert (second / "file0002.txt").read_text(encoding="utf-8") == "line 2\n"
    assert repo.branch_commit("m/a") == tip_a


def test_a_released_worktree_holds_its_branch_until_the_pool_closes(pool: WorktreePool) -> None:
    path = pool.acquire("m/a", "HEAD")
    pool.release(path)
    with pytest.raises(GitOperationError, match="checked out at"):
        pool.repo.delete_branch("m/a")  # git's own guard: the idle worktree is on it
    pool.close()
    assert pool.repo.delete_branch("m/a") is True


def test_busy_worktrees_are_never_shared(pool: WorktreePool) -> None:
    first = pool.acquire("m/a", "HEAD")
    second = pool.acquire("m/b", "HEAD")
    assert first != second
    assert pool.worktrees == sorted([first, second])


def test_close_removes_every_worktree_and_the_folder(repo: GitRepo, folder: Path, git: Git) -> None:
    pool = WorktreePool(repo, folder, MISSION)
    idle = pool.acquire("m/a", "HEAD")
    pool.release(idle)
    pool.acquire("m/b", "HEAD")  # still in use: close removes it too
    pool.close()
    pool.close()
    assert registered(git, repo) == [str(repo.root)]
    assert not folder.exists()
    assert repo.list_branches("m/") == ["m/a", "m/b"]
    with pytest.raises(RuntimeError, match=r"^worktree pool is closed$"):
        pool.acquire("m/c", "HEAD")


def test_release_of_a_foreign_path_is_refused(pool: WorktreePool, tmp_path: Path) -> None:
    message = f"worktree {tmp_path} is not in use from this pool"
    with pytest.raises(ValueError, match=rf"^{re.escape(message)}$"):
        pool.release(tmp_path)


def test_a_mission_id_that_is_not_a_file_name_is_refused(repo: GitRepo, folder: Path) -> None:
    with pytest.raises(InvalidMissionError, match=r"^invalid mission id '\.\./x'$"):
        WorktreePool(repo, folder, "../x")


def test_a_folder_holding_the_repository_is_refused(repo: GitRepo) -> None:
    for folder in (repo.root, repo.root.parent):
        message = f"worktree folder {folder} holds the repository itself"
        with pytest.raises(InvalidMissionError, match=rf"^{re.escape(message)}$"):
            WorktreePool(repo, folder, MISSION)
        with pytest.raises(InvalidMissionError, match=rf"^{re.escape(message)}$"):
            prune_stale(repo, folder)


def test_an_unignored_folder_in_the_work_tree_is_refused(repo: GitRepo) -> None:
    folder = repo.root / "src" / "worktrees"
    message = f"worktree folder {folder} is inside the work tree but not ignored by git"
    with WorktreePool(repo, folder, MISSION) as pool:
        with pytest.raises(InvalidMissionError, match=rf"^{re.escape(message)}$"):
            pool.acquire("m/a", "HEAD")
        assert pool.worktrees == []
    with pytest.raises(InvalidMissionError, match=rf"^{re.escape(message)}$"):
        prune_stale(repo, folder)
    assert not (repo.root / "src").exists()


def test_a_folder_excluded_after_the_pool_was_made_is_accepted(repo_path: Path) -> None:
    repo = GitRepo.open(repo_path)
    pool = WorktreePool(repo, repo.root / ".build" / MISSION, MISSION)
    repo.exclude(".build/")
    assert pool.acquire("m/a", "HEAD").parent == repo.root / ".build" / MISSION
    pool.close()


def test_a_folder_outside_the_work_tree_is_used_then_removed(repo: GitRepo, tmp_path: Path) -> None:
    folder = tmp_path / "elsewhere" / MISSION
    with WorktreePool(repo, folder, MISSION) as pool:
        assert pool.acquire("m/a", "HEAD").parent == folder
    assert not folder.exists()
    assert folder.parent.is_dir()


def test_a_worktree_that_lost_its_git_file_is_replaced(pool: WorktreePool, git: Git) -> None:
    broken = pool.acquire("m/a", "HEAD")
    pool.release(broken)
    (broken / ".git").unlink()
    # git would now find the user's repository above the folder: the repo fixture checks at
    # teardown that nothing ran there.
    fresh = pool.acquire("m/b", "HEAD")
    assert fresh != broken
    assert not broken.exists()
    assert branch_of(git, fresh) == "m/b"
    assert str(broken) not in registered(git, pool.repo)


def test_a_worktree_that_lost_its_git_file_is_dropped_at_release(
    pool: WorktreePool, git: Git
) -> None:
    broken = pool.acquire("m/a", "HEAD")
    (broken / ".git").unlink()
    pool.release(broken)  # a detach run here must not detach the user's HEAD above
    assert not broken.exists()
    assert pool.worktrees == []


def test_commit_all_in_a_worktree_that_lost_its_git_file_fails(pool: WorktreePool) -> None:
    broken = pool.acquire("m/a", "HEAD")
    (broken / ".git").unlink()
    message = (
        f"worktree {broken} was tampered with: its .git file was rewritten or replaced; "
        "rho ran no git there"
    )
    with pytest.raises(WorktreeTamperedError, match=rf"^{re.escape(message)}$"):
        pool.repo.commit_all(broken, "must not commit the user's staged change")


def shared_index(git: Git, path: Path) -> Path:
    """The shared part of the split index of the worktree at *path* (git names it from there)."""
    return Path(os.path.realpath(path / git(path, "rev-parse", "--shared-index-path").strip()))


def test_the_index_of_a_pooled_worktree_is_split_and_the_users_is_left_alone(
    pool: WorktreePool, git: Git
) -> None:
    # Split: each index write in the worktree is what changed, not every entry (git/_repo).
    path = pool.acquire("m/a", "HEAD")
    (path / "a.txt").write_text("a\n", encoding="utf-8")
    pool.repo.commit_all(path, "a")
    shared = shared_index(git, path)
    assert shared.parent == Path(git(path, "rev-parse", "--absolute-git-dir").strip())
    assert git(pool.repo.root, "rev-parse", "--shared-index-path").strip() == ""


def test_a_link_at_a_worktree_shared_index_stops_rhos_git(
    pool: WorktreePool, git: Git, tmp_path: Path
) -> None:
    # git sets the times of the shared index it reads, through a link too.
    path = pool.acquire("m/a", "HEAD")
    shared = shared_index(git, path)
    outside = tmp_path / "outside"
    outside.write_bytes(shared.read_bytes())
    os.utime(outside, (0, 0))
    shared.unlink()
    shared.symlink_to(outside)
    message = (
        f"worktree {path} was tampered with: a link stands at {shared.name} of its git dir; "
        "rho ran no git there"
    )
    with pytest.raises(WorktreeTamperedError, match=rf"^{re.escape(message)}$"):
        pool.repo.commit_all(path, "must not read through the link")
    assert outside.stat().st_mtime == 0


def test_a_worktree_left_mid_rebase_is_replaced(pool: WorktreePool, git: Git) -> None:
    first = pool.acquire("m/a", "HEAD")
    git_dir = Path(git(first, "rev-parse", "--absolute-git-dir").strip())
    pool.release(first)
    (git_dir / "rebase-merge").mkdir()
    second = pool.acquire("m/b", "HEAD")
    assert second != first
    assert not first.exists()


def test_a_released_worktree_stays_on_its_branch_until_the_next_acquire(
    pool: WorktreePool, git: Git
) -> None:
    first = pool.acquire("m/a", "HEAD")
    pool.release(first, spotless=True)
    assert branch_of(git, first) == "m/a"  # no git process at release
    again = pool.acquire("m/b", "HEAD")
    assert again == first
    assert branch_of(git, again) == "m/b"


def _commit_spotless(pool: WorktreePool, path: Path, message: str) -> str:
    """The engine's end of a feature: rho's commit of *path*'s work, its index noted as rho's
    own, the worktree released spotless at its new HEAD; the commit."""
    done = pool.repo.commit_all(path, message)
    assert done.commit_id is not None
    pool.note_index(path, done.commit_id)
    pool.release(path, spotless=True, head=done.commit_id)
    return done.commit_id


def _git_steps(monkeypatch: pytest.MonkeyPatch, repo: GitRepo) -> list[str]:
    """The git subcommands *repo* runs from now on (the real calls, recorded)."""
    steps: list[str] = []
    real = repo.run

    def recorded(*args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None) -> str:
        steps.append(next(arg for arg in args if not arg.startswith("-") and "=" not in arg))
        return real(*args, cwd=cwd, env=env)

    monkeypatch.setattr(repo, "run", recorded)
    return steps


@pytest.mark.parametrize("retry", [False, True], ids=["a new branch", "a retry's branch"])
def test_a_spotless_worktree_moves_to_another_start_by_what_differs(
    pool: WorktreePool, git: Git, retry: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A feature's work committed whole leaves its worktree spotless at its own commit; the next
    # feature starts elsewhere (the wave's start): the entries that differ are written, the
    # others are left as they are, and HEAD goes on the next branch.
    repo = pool.repo
    start = repo.head_commit()
    first = pool.acquire("m/a", start, None)
    (first / "a.txt").write_text("work of a\n", encoding="utf-8")
    (first / "file0000.txt").write_text("changed by a\n", encoding="utf-8")
    (first / "file0001.txt").unlink()
    kept = (first / "file0002.txt").stat()
    tip_a = _commit_spotless(pool, first, "a")
    expected = None
    if retry:  # the branch exists, where an earlier try left it
        git(repo.root, "branch", "m/b", tip_a)
        expected = tip_a
    steps = _git_steps(monkeypatch, repo)
    second = pool.acquire("m/b", start, expected)
    assert second == first
    assert "read-tree" in steps
    assert "checkout" not in steps  # no lstat of every file
    assert "clean" not in steps
    assert branch_of(git, second) == "m/b"
    assert git(second, "rev-parse", "HEAD").strip() == start
    assert git(second, "status", "--porcelain", "--ignored") == ""
    assert sorted(p.name for p in second.iterdir()) == [
        ".git",
        "file0000.txt",
        "file0001.txt",
        "file0002.txt",
    ]
    assert (second / "file0000.txt").read_text(encoding="utf-8") == "line 0\n"
    assert (second / "file0001.txt").read_text(encoding="utf-8") == "line 1\n"
    assert (second / "file0002.txt").stat().st_ino == kept.st_ino  # not written again
    assert repo.branch_commit("m/a") == tip_a


@pytest.mark.parametrize("spotless", [True, False], ids=["spotless", "cleaned"])
def test_head_never_goes_on_a_branch_someone_else_moved(
    pool: WorktreePool, git: Git, spotless: bool
) -> None:
    # A retry expects its branch at the start (its first try committed nothing); someone else
    # has moved it meanwhile. The move is refused, the branch stays theirs, and the worktree
    # is not left with HEAD on their commit over the start's files.
    repo = pool.repo
    start = repo.head_commit()
    first = pool.acquire("m/a", start, None)
    pool.release(first, spotless=spotless, head=start if spotless else None)
    theirs = git(repo.root, "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "theirs").strip()
    git(repo.root, "update-ref", "refs/heads/m/a", theirs)
    with pytest.raises(RefMovedError):
        pool.acquire("m/a", start, start)
    assert repo.branch_commit("m/a") == theirs
    again = pool.acquire("m/b", start, None)
    assert branch_of(git, again) == "m/b"
    assert git(again, "status", "--porcelain", "--ignored") == ""


def test_a_new_branch_starts_at_the_start_though_the_last_one_moved(
    pool: WorktreePool, git: Git
) -> None:
    # A worktree released spotless at the start stays on its branch; someone moves that branch
    # while it is idle. The next feature's branch is made at the start, not where HEAD's old
    # branch now points.
    repo = pool.repo
    start = repo.head_commit()
    first = pool.acquire("m/a", start, None)
    pool.release(first, spotless=True, head=start)
    theirs = git(repo.root, "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "theirs").strip()
    git(repo.root, "update-ref", "refs/heads/m/a", theirs)
    second = pool.acquire("m/b", start, None)
    assert second == first
    assert repo.branch_commit("m/b") == start
    assert git(second, "rev-parse", "HEAD").strip() == start
    assert branch_of(git, second) == "m/b"
    assert git(second, "status", "--porcelain", "--ignored") == ""
    assert repo.branch_commit("m/a") == theirs


def test_a_file_the_move_must_write_but_finds_edited_gets_a_new_worktree(
    pool: WorktreePool, git: Git
) -> None:
    # read-tree looks at the files it writes: one that is not what the index says (edited in
    # the idle worktree after its status) stops it, and the pool replaces the worktree.
    start = pool.repo.head_commit()
    first = pool.acquire("m/a", start, None)
    (first / "file0000.txt").write_text("changed by a\n", encoding="utf-8")
    _commit_spotless(pool, first, "a")
    (first / "file0000.txt").write_text("edited while idle\n", encoding="utf-8")
    second = pool.acquire("m/b", start, None)
    assert second != first
    assert not first.exists()
    assert branch_of(git, second) == "m/b"
    assert (second / "file0000.txt").read_text(encoding="utf-8") == "line 0\n"
    assert git(second, "status", "--porcelain", "--ignored") == ""


def test_a_retry_takes_its_branch_while_an_idle_worktree_still_holds_it(
    pool: WorktreePool, git: Git
) -> None:
    start = git(pool.repo.root, "rev-parse", "HEAD").strip()
    first = pool.acquire("m/a", start, None)
    (first / "work.txt").write_text("first try\n", encoding="utf-8")
    git(first, "add", "work.txt")
    git(first, "commit", "--quiet", "--message=first try")
    tried = git(first, "rev-parse", "HEAD").strip()
    second = pool.acquire("m/b", start, None)
    pool.release(first)  # idle, still on m/a
    pool.release(second)
    retry = pool.acquire("m/a", start, tried)  # the other worktree: the last one released
    assert retry == second
    assert branch_of(git, retry) == "m/a"
    assert git(retry, "rev-parse", "HEAD").strip() == start
    assert not (retry / "work.txt").exists()


def test_keep_leaves_released_worktrees_and_their_files_at_their_branch_head(
    repo: GitRepo, folder: Path, git: Git
) -> None:
    with WorktreePool(repo, folder, MISSION, keep=True) as pool:
        first = pool.acquire("m/a", "HEAD")
        (first / "output.txt").write_text("left for inspection\n", encoding="utf-8")
        pool.release(first)
        second = pool.acquire("m/b", "HEAD")
        pool.release(second)
    assert first != second
    assert (first / "output.txt").read_text(encoding="utf-8") == "left for inspection\n"
    for path, branch in ((first, "m/a"), (second, "m/b")):
        # Detached at the branch's head, so that the branch can still move (a retry elsewhere).
        assert git(path, "rev-parse", "HEAD") == git(repo.root, "rev-parse", branch)
    assert "locked" not in git(repo.root, "worktree", "list", "--porcelain")
    assert prune_stale(repo, folder) == [first, second]


def test_keep_lets_a_retry_take_the_same_branch_in_another_worktree(
    repo: GitRepo, folder: Path
) -> None:
    with WorktreePool(repo, folder, MISSION, keep=True) as pool:
        first = pool.acquire("m/a", "HEAD")
        pool.release(first)
        retry = pool.acquire("m/a", "HEAD")
        assert retry != first
        pool.release(retry)


def test_prune_stale_removes_what_a_crashed_run_left(repo: GitRepo, folder: Path, git: Git) -> None:
    stale = folder / f"{MISSION}-1"
    git(repo.root, "worktree", "add", "--quiet", "-b", "m/crashed", str(stale), "HEAD")
    (stale / "half-done.txt").write_text("output\n", encoding="utf-8")
    leftover = folder / f"{MISSION}-7"
    leftover.mkdir()
    (leftover / "file").write_text("not a worktree any more\n", encoding="utf-8")
    assert prune_stale(repo, folder) == [stale, leftover]
    assert registered(git, repo) == [str(repo.root)]
    assert not folder.exists()
    assert repo.delete_branch("m/crashed") is True  # no longer checked out anywhere
    assert prune_stale(repo, folder) == []


def test_a_pool_never_takes_the_path_of_an_earlier_runs_worktree(
    repo: GitRepo, folder: Path, git: Git
) -> None:
    # A process of a crashed run may still write into its worktree: a new run works elsewhere.
    with WorktreePool(repo, folder, MISSION) as first:
        old = first.acquire("m/crashed", "HEAD")
        (old / "half-done.txt").write_text("output\n", encoding="utf-8")
        with WorktreePool(repo, folder, MISSION) as second:
            path = second.acquire("m/other", "HEAD")
            assert path != old
            assert path.parent == old.parent
            assert (old / "half-done.txt").exists()


def test_prune_stale_keeps_the_worktrees_of_an_open_pool(pool: WorktreePool) -> None:
    busy = pool.acquire("m/a", "HEAD")
    idle = pool.acquire("m/b", "HEAD")
    pool.release(idle)
    assert prune_stale(pool.repo, pool.folder) == []
    assert busy.is_dir()
    assert pool.acquire("m/c", "HEAD") == idle


_CRASHING_RUN = """
import pathlib, sys
from rho_mission.git._repo import GitRepo
from rho_mission.git._pool import WorktreePool
root, folder, event = sys.argv[1:]
pool = WorktreePool(GitRepo.open(root), folder, "abc12345")
path = pool.acquire("rho-mission/abc12345/a", "HEAD")
staged = pathlib.Path(event + ".tmp")
staged.write_text(str(path))
staged.rename(event)  # whole or absent: the test reads it as soon as it exists
sys.stdin.read()
"""


def test_a_killed_process_worktree_is_kept_while_alive_and_pruned_after(
    repo: GitRepo, folder: Path, git: Git, tmp_path: Path
) -> None:
    event = tmp_path / "acquired"
    args = [sys.executable, "-c", _CRASHING_RUN, str(repo.root), str(folder), str(event)]
    run = subprocess.Popen(args, stdin=subprocess.PIPE)
    try:
        wait_for_file(event)
        path = Path(event.read_text(encoding="utf-8"))
        assert prune_stale(repo, folder) == []  # its owner is alive
        assert f"locked rho-mission abc12345 pid {run.pid}" in git(
            repo.root, "worktree", "list", "--porcelain"
        )
    finally:
        run.kill()
        run.wait(timeout=30)
    assert os.path.isdir(path)
    assert prune_stale(repo, folder) == [path]
    assert registered(git, repo) == [str(repo.root)]
    assert not folder.exists()


def test_two_threads_running_features_merge_every_result(
    repo: GitRepo, folder: Path, git: Git
) -> None:
    repo.create_branch("m/integration", repo.head_commit())
    errors: list[BaseException] = []
    with WorktreePool(repo, folder, MISSION) as pool:

        def feature(name: str) -> None:
            start = repo.branch_commit("m/integration") or ""
            path = pool.acquire(f"m/{name}", start)
            try:
                (path / f"{name}.txt").write_text(f"{name}\n", encoding="utf-8")
                assert repo.commit_all(path, name).files_changed == [f"{name}.txt"]
            finally:
                pool.release(path)
            repo.merge_into("m/integration", f"m/{name}", f"merge {name}")

        def work(names: list[str]) -> None:
            try:
                for name in names:
                    feature(name)
            except BaseException as exc:
                errors.append(exc)

        names = [f"t{index}" for index in range(8)]
        threads = [threading.Thread(target=work, args=(names[part::2],)) for part in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert len(pool.worktrees) <= 2
    assert errors == []
    files = git(repo.root, "ls-tree", "--name-only", "m/integration").split()
    assert files == sorted(
        [*(f"{name}.txt" for name in names), *(f"file000{i}.txt" for i in range(3))]
    )
    assert registered(git, repo) == [str(repo.root)]
    assert not folder.exists()
