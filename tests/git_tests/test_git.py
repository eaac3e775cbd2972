"""The git layer: opening, refs, branches, exclude, commits, merges, errors and the lock."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rho_mission._errors import (
    BranchCheckedOutError,
    GitOperationError,
    MergeConflictError,
    NotAGitRepositoryError,
    RepositoryLockTimeoutError,
    UnknownRefError,
)
from rho_mission.git._commit import cleaned_message
from rho_mission.git._repo import GitRepo

Git = Callable[..., str]
IDENTITY_VARIABLES = (
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
)


def commit_on(
    git: Git, repo: GitRepo, branch: str, start: str, files: dict[str, str | None]
) -> str:
    """Commit *files* (None deletes) on *branch* made at *start*, with the plain git CLI."""
    scratch = repo.root.parent / f"scratch-{branch.replace('/', '-')}"
    git(repo.root, "worktree", "add", "--quiet", "-B", branch, str(scratch), start)
    for name, text in files.items():
        if text is None:
            (scratch / name).unlink()
        else:
            (scratch / name).write_text(text, encoding="utf-8")
    git(scratch, "add", "--all")
    git(scratch, "commit", "--quiet", f"--message=on {branch}")
    git(repo.root, "worktree", "remove", str(scratch))
    return git(repo.root, "rev-parse", branch).strip()


def scratch_worktree(git: Git, repo: GitRepo, branch: str) -> Path:
    """A linked worktree on a new *branch* at HEAD, made with the plain git CLI."""
    path = repo.root.parent / f"wt-{branch}"
    git(repo.root, "worktree", "add", "--quiet", "-b", branch, str(path), "HEAD")
    return path


def wait_for_file(path: Path, timeout: float = 30.0) -> None:
    """Wait until *path* exists; fail after *timeout* seconds."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"timed out waiting for {path}"
        time.sleep(0.01)


# -- opening and refs ------------------------------------------------------------------------


def test_open_from_a_subfolder_finds_the_top_level(repo_path: Path) -> None:
    (repo_path / "deep" / "er").mkdir(parents=True)
    opened = GitRepo.open(repo_path / "deep" / "er")
    assert opened.root == repo_path.resolve()
    assert opened.common_dir == (repo_path / ".git").resolve()


def test_open_outside_any_repository_names_the_path(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(
        NotAGitRepositoryError, match=rf"^not a git repository: {re.escape(str(plain))}$"
    ):
        GitRepo.open(plain)


def test_open_a_bare_repository_is_refused(tmp_path: Path, git: Git) -> None:
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "--quiet", "--bare", str(bare))
    with pytest.raises(
        NotAGitRepositoryError, match=rf"^not a git work tree: {re.escape(str(bare))}$"
    ):
        GitRepo.open(bare)


def test_open_a_linked_worktree_shares_the_common_dir(repo: GitRepo, git: Git) -> None:
    linked = GitRepo.open(scratch_worktree(git, repo, "side"))
    assert linked.root == (repo.root.parent / "wt-side").resolve()
    assert linked.common_dir == repo.common_dir
    assert linked.lock_path == repo.lock_path


def test_resolve_commit_returns_the_full_sha(repo: GitRepo, git: Git) -> None:
    head = git(repo.root, "rev-parse", "HEAD").strip()
    assert repo.resolve_commit("main") == head
    assert repo.resolve_commit(head[:7]) == head
    assert repo.head_commit() == head


@pytest.mark.parametrize("ref", ["nope", "HEAD~5", "", "--all", "main..HEAD"])
def test_resolve_commit_of_an_unknown_ref_names_it(repo: GitRepo, ref: str) -> None:
    message = "unknown git ref " + '"' + ref + '"'
    with pytest.raises(UnknownRefError, match=rf"^{re.escape(message)}$"):
        repo.resolve_commit(ref)


# -- branches and exclude --------------------------------------------------------------------


def test_create_branch_creates_then_force_resets(repo: GitRepo, git: Git) -> None:
    base = repo.head_commit()
    tip = commit_on(git, repo, "feature", base, {"a.txt": "a\n"})
    repo.create_branch("rho-mission/m1/integration", tip)
    assert repo.branch_commit("rho-mission/m1/integration") == tip
    repo.create_branch("rho-mission/m1/integration", base)
    assert repo.branch_commit("rho-mission/m1/integration") == base


def test_branch_listing_and_deletion(repo: GitRepo) -> None:
    base = repo.head_commit()
    for name in ("rho-mission/m1/b", "rho-mission/m1/a", "rho-mission/m2/a"):
        repo.create_branch(name, base)
    assert repo.list_branches("rho-mission/m1/") == ["rho-mission/m1/a", "rho-mission/m1/b"]
    assert repo.delete_branch("rho-mission/m1/a") is True
    assert repo.delete_branch("rho-mission/m1/a") is False
    assert repo.branch_commit("rho-mission/m1/a") is None
    assert repo.list_branches() == ["main", "rho-mission/m1/b", "rho-mission/m2/a"]


def test_create_branch_refuses_the_users_current_branch(repo: GitRepo) -> None:
    refusal = f"fatal: cannot force update the branch 'main' checked out at '{repo.root}'"
    message = f"git branch failed: {refusal}"
    with pytest.raises(GitOperationError, match=rf"^{re.escape(message)}$"):
        repo.create_branch("main", repo.head_commit())


def test_create_branch_refuses_an_option_like_name(repo: GitRepo) -> None:
    message = "git branch failed: fatal: '-x' is not a valid branch name"
    with pytest.raises(GitOperationError, match=rf"^{re.escape(message)}$"):
        repo.create_branch("-x", repo.head_commit())


def test_exclude_adds_the_line_once(repo: GitRepo) -> None:
    exclude = repo.common_dir / "info" / "exclude"
    assert repo.exclude("build/") is True
    assert repo.exclude("build/") is False
    assert repo.exclude(".rho/") is False  # the fixture added it
    lines = exclude.read_text(encoding="utf-8").splitlines()
    assert lines.count("build/") == 1
    assert lines.count(".rho/") == 1


def test_exclude_from_a_linked_worktree_writes_the_common_file(repo: GitRepo, git: Git) -> None:
    exclude = repo.common_dir / "info" / "exclude"
    exclude.write_text("# no trailing newline", encoding="utf-8")
    GitRepo.open(scratch_worktree(git, repo, "side")).exclude(".rho/")
    assert exclude.read_text(encoding="utf-8") == "# no trailing newline\n.rho/\n"


# -- errors ----------------------------------------------------------------------------------


def test_a_failed_command_reports_gits_error_line(repo: GitRepo) -> None:
    message = "git rev-parse failed: fatal: Needed a single revision"
    with pytest.raises(GitOperationError, match=rf"^{re.escape(message)}$") as caught:
        repo.run("rev-parse", "--verify", "no-such-thing")
    assert caught.value.status == 128
    assert caught.value.command == ["git", "rev-parse", "--verify", "no-such-thing"]


@pytest.mark.parametrize(
    ("command", "stderr", "message"),
    [
        (
            ["git", "-C", "/r", "-c", "a=b", "worktree", "add", "--detach", "p"],
            "hint: use --force\nfatal: 'p' already exists\n",
            "git worktree add failed: fatal: 'p' already exists",
        ),
        (["git", "checkout", "-B", "x"], "\nsomething odd\n", "git checkout failed: something odd"),
        (["git", "merge-tree"], "", "git merge-tree failed: exit status 2"),
    ],
)
def test_git_operation_error_message(command: list[str], stderr: str, message: str) -> None:
    assert str(GitOperationError(command, 2, stderr)) == message


def test_merge_conflict_error_lists_files_sorted_once() -> None:
    error = MergeConflictError(["b.txt", "a.txt", "b.txt"], target="t", source="s")
    assert str(error) == "merge conflict in a.txt, b.txt"
    assert error.files == ["a.txt", "b.txt"]


# -- commits ---------------------------------------------------------------------------------


def test_commit_all_without_changes_commits_nothing(repo: GitRepo, git: Git) -> None:
    worktree = scratch_worktree(git, repo, "feature")
    assert repo.commit_all(worktree, "nothing") == (None, [])
    assert repo.branch_commit("feature") == repo.head_commit()


def test_commit_all_commits_every_change_on_the_branch(repo: GitRepo, git: Git) -> None:
    worktree = scratch_worktree(git, repo, "feature")
    (worktree / "z.txt").write_text("new\n", encoding="utf-8")
    (worktree / "dir").mkdir()
    (worktree / "dir" / "a.txt").write_text("new\n", encoding="utf-8")
    (worktree / "file0000.txt").write_text("changed\n", encoding="utf-8")
    (worktree / "file0001.txt").unlink()
    result = repo.commit_all(worktree, "# feature: done")
    assert result.commit_id == repo.branch_commit("feature")
    assert result.files_changed == ["dir/a.txt", "file0000.txt", "file0001.txt", "z.txt"]
    assert git(worktree, "log", "-1", "--format=%s").strip() == "# feature: done"
    assert git(worktree, "status", "--porcelain") == ""


def test_commit_all_counts_the_workers_own_commits(repo: GitRepo, git: Git) -> None:
    base = repo.head_commit()
    worktree = scratch_worktree(git, repo, "feature")
    (worktree / "a.txt").write_text("by the worker\n", encoding="utf-8")
    git(worktree, "add", "a.txt")
    git(worktree, "commit", "--quiet", "--message=worker commit")
    worker_commit = git(worktree, "rev-parse", "HEAD").strip()
    assert repo.commit_all(worktree, "rho", base=base) == (worker_commit, ["a.txt"])
    (worktree / "b.txt").write_text("left uncommitted\n", encoding="utf-8")
    result = repo.commit_all(worktree, "rho", base=base)
    assert result.files_changed == ["a.txt", "b.txt"]
    assert git(worktree, "rev-parse", "HEAD~1").strip() == worker_commit


def test_commit_all_uses_a_fixed_identity_when_none_is_configured(
    repo: GitRepo, git: Git, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in IDENTITY_VARIABLES:
        monkeypatch.delenv(name)
    worktree = scratch_worktree(git, repo, "feature")
    (worktree / "a.txt").write_text("a\n", encoding="utf-8")
    repo.commit_all(worktree, "anonymous")
    ident = git(worktree, "log", "-1", "--format=%an <%ae> / %cn <%ce>").strip()
    assert ident == "rho-mission <rho-mission@localhost> / rho-mission <rho-mission@localhost>"


def test_commit_all_keeps_the_users_identity(
    repo: GitRepo, git: Git, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in IDENTITY_VARIABLES:
        monkeypatch.delenv(name)
    git(repo.root, "config", "user.name", "Ada")
    git(repo.root, "config", "user.email", "ada@example.com")
    worktree = scratch_worktree(git, repo, "feature")
    (worktree / "a.txt").write_text("a\n", encoding="utf-8")
    repo.commit_all(worktree, "mine")
    assert git(worktree, "log", "-1", "--format=%an <%ae>").strip() == "Ada <ada@example.com>"


def test_commit_all_is_not_blocked_by_hooks_or_signing(repo: GitRepo, git: Git) -> None:
    hooks = repo.common_dir / "hooks"
    for hook in ("pre-commit", "commit-msg", "prepare-commit-msg"):
        (hooks / hook).write_text("#!/bin/sh\nexit 1\n", encoding="utf-8")
        (hooks / hook).chmod(0o755)
    git(repo.root, "config", "commit.gpgSign", "true")
    git(repo.root, "config", "gpg.program", "false")
    worktree = scratch_worktree(git, repo, "feature")
    (worktree / "a.txt").write_text("a\n", encoding="utf-8")
    git(worktree, "add", "a.txt")
    with pytest.raises(subprocess.CalledProcessError):  # the hooks and signing do block git
        git(worktree, "commit", "--quiet", "--message=blocked")
    git(worktree, "reset", "--quiet")
    assert repo.commit_all(worktree, "unblocked").files_changed == ["a.txt"]


# Messages of whitespace, "#" and a few letters: what git's cleanup of whitespace treats apart.
_MESSAGE_TEXT = st.text(alphabet=st.sampled_from(" \t\r\n\v\f#ab\u00e9"), max_size=40)


@settings(max_examples=60, deadline=None)
@given(message=_MESSAGE_TEXT)
def test_a_commit_message_is_cleaned_as_git_cleans_it(message: str) -> None:
    # "git stripspace" is git's own cleanup of whitespace, the one "git commit" applies.
    done = subprocess.run(
        ["git", "stripspace"], input=message.encode(), capture_output=True, check=True
    )
    assert cleaned_message(message) == done.stdout.decode()


@pytest.mark.parametrize(
    "message", ["", "x", "# feature: a\n", "\n\n subject  \r\n\n\n\tbody\t\n \n", "a\vb\f"]
)
def test_commit_all_writes_the_commit_git_commit_writes(
    repo: GitRepo, git: Git, monkeypatch: pytest.MonkeyPatch, message: str
) -> None:
    # Byte for byte: the same tree, parent, identity, dates and message, so the same id.
    for name in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        monkeypatch.setenv(name, "2026-01-02T03:04:05Z")
    ours = scratch_worktree(git, repo, "ours")
    theirs = scratch_worktree(git, repo, "theirs")
    for worktree in (ours, theirs):
        (worktree / "a.txt").write_text("a\n", encoding="utf-8")
        (worktree / "file0000.txt").unlink()
    committed = repo.commit_all(ours, message).commit_id
    git(theirs, "add", "--all")
    git(theirs, "commit", "--quiet", "--allow-empty-message", "--cleanup=whitespace", "-m", message)
    assert committed == git(theirs, "rev-parse", "HEAD").strip()
    assert git(ours, "status", "--porcelain") == ""


def test_commit_all_of_a_change_staged_then_undone_commits_nothing(repo: GitRepo, git: Git) -> None:
    worktree = scratch_worktree(git, repo, "feature")
    original = (worktree / "file0000.txt").read_text(encoding="utf-8")
    (worktree / "file0000.txt").write_text("changed\n", encoding="utf-8")
    git(worktree, "add", "file0000.txt")
    (worktree / "file0000.txt").write_text(original, encoding="utf-8")  # "MM": HEAD's again
    assert repo.commit_all(worktree, "nothing") == (None, [])
    assert repo.branch_commit("feature") == repo.head_commit()


def test_commit_all_moves_no_head_that_moved_meanwhile(
    repo: GitRepo, git: Git, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The commit's parent is the HEAD the status read; HEAD moves only if it still holds it.
    worktree = scratch_worktree(git, repo, "feature")
    (worktree / "a.txt").write_text("a\n", encoding="utf-8")
    elsewhere = commit_on(git, repo, "other", repo.head_commit(), {"b.txt": "b\n"})
    real_commit_tree = repo.commit_tree

    def moved_first(tree: str, parents: Sequence[str], message: str) -> str:
        git(worktree, "update-ref", "HEAD", elsewhere)  # another writer, between the two
        return real_commit_tree(tree, parents, message)

    monkeypatch.setattr(repo, "commit_tree", moved_first)
    with pytest.raises(GitOperationError, match="update-ref"):
        repo.commit_all(worktree, "late")
    assert repo.branch_commit("feature") == elsewhere


# -- merges ----------------------------------------------------------------------------------


def test_merge_fast_forwards_a_target_that_is_behind(repo: GitRepo, git: Git) -> None:
    base = repo.head_commit()
    repo.create_branch("integration", base)
    tip = commit_on(git, repo, "feature-a", base, {"a.txt": "a\n"})
    assert repo.merge_into("integration", "feature-a", "merge a") == tip
    assert repo.branch_commit("integration") == tip


def test_merge_of_diverged_branches_writes_a_merge_commit(repo: GitRepo, git: Git) -> None:
    base = repo.head_commit()
    repo.create_branch("integration", base)
    tip_a = commit_on(git, repo, "feature-a", base, {"a.txt": "a\n", "file0000.txt": "a\n"})
    tip_b = commit_on(git, repo, "feature-b", base, {"b.txt": "b\n", "file0002.txt": None})
    repo.merge_into("integration", "feature-a", "merge a")
    merged = repo.merge_into("integration", "feature-b", "merge b")
    assert repo.branch_commit("integration") == merged
    parents_and_subject = git(repo.root, "log", "-1", "--format=%P %s", merged).strip()
    assert parents_and_subject == f"{tip_a} {tip_b} merge b"
    files = git(repo.root, "ls-tree", "--name-only", merged).split()
    assert files == ["a.txt", "b.txt", "file0000.txt", "file0001.txt"]
    assert git(repo.root, "show", f"{merged}:file0000.txt") == "a\n"


def test_merge_of_a_contained_branch_changes_nothing(repo: GitRepo, git: Git) -> None:
    base = repo.head_commit()
    tip = commit_on(git, repo, "integration", base, {"a.txt": "a\n"})
    repo.create_branch("old", base)
    assert repo.merge_into("integration", "old", "noop") == tip
    assert repo.merge_into("integration", "integration", "noop") == tip
    assert repo.branch_commit("integration") == tip


def test_merge_conflict_names_the_files_and_leaves_the_target(repo: GitRepo, git: Git) -> None:
    base = repo.head_commit()
    repo.create_branch("integration", base)
    commit_on(git, repo, "feature-a", base, {"z.txt": "a\n", "file0002.txt": "a\n", "a.txt": "a\n"})
    commit_on(git, repo, "feature-b", base, {"z.txt": "b\n", "file0002.txt": "b\n", "b.txt": "b\n"})
    first = repo.merge_into("integration", "feature-a", "merge a")
    with pytest.raises(
        MergeConflictError, match=r"^merge conflict in file0002\.txt, z\.txt$"
    ) as caught:
        repo.merge_into("integration", "feature-b", "merge b")
    assert (caught.value.target, caught.value.source) == ("integration", "feature-b")
    assert repo.branch_commit("integration") == first


def test_merge_refuses_to_move_a_checked_out_branch(repo: GitRepo, git: Git) -> None:
    commit_on(git, repo, "feature-a", repo.head_commit(), {"a.txt": "a\n"})
    message = f'branch "main" is checked out at {repo.root}; refusing to move it'
    with pytest.raises(BranchCheckedOutError, match=rf"^{re.escape(message)}$"):
        repo.merge_into("main", "feature-a", "merge a")


@pytest.mark.parametrize(("target", "source"), [("nope", "main"), ("main", "nope")])
def test_merge_of_a_missing_branch_names_it(repo: GitRepo, target: str, source: str) -> None:
    message = 'unknown git ref "nope"'
    with pytest.raises(UnknownRefError, match=rf"^{re.escape(message)}$"):
        repo.merge_into(target, source, "merge")


# -- the repository-wide lock ----------------------------------------------------------------


def test_lock_is_reentrant_within_a_thread(repo: GitRepo) -> None:
    with repo.locked(), repo.locked(timeout=0):
        repo.create_branch("inside", repo.head_commit())
    assert repo.branch_commit("inside") == repo.head_commit()


def test_lock_excludes_another_thread_through_any_repo_object(repo: GitRepo) -> None:
    held, done = threading.Event(), threading.Event()

    def hold() -> None:
        with repo.locked():
            held.set()
            done.wait(timeout=30)

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(timeout=30)
    other = GitRepo.open(repo.root)
    message = f"repository lock {other.lock_path} still held after 0s"
    with (
        pytest.raises(RepositoryLockTimeoutError, match=rf"^{re.escape(message)}$"),
        other.locked(0),
    ):
        pass
    done.set()
    holder.join(timeout=30)
    with other.locked(timeout=0):
        pass


def test_two_threads_creating_branches_and_merging_stay_consistent(repo: GitRepo, git: Git) -> None:
    base = repo.head_commit()
    repo.create_branch("integration", base)
    scratch = repo.root.parent / "scratch"
    git(repo.root, "worktree", "add", "--quiet", "--detach", str(scratch), base)
    for index in range(16):
        git(scratch, "checkout", "--quiet", "-B", f"f{index:02d}", base)
        (scratch / f"f{index:02d}.txt").write_text(f"{index}\n", encoding="utf-8")
        git(scratch, "add", "--all")
        git(scratch, "commit", "--quiet", f"--message=f{index:02d}")
    git(repo.root, "worktree", "remove", "--force", str(scratch))
    errors: list[BaseException] = []

    def work(names: list[str]) -> None:
        try:
            for name in names:
                repo.create_branch(f"copy/{name}", name)
                repo.merge_into("integration", f"copy/{name}", f"merge {name}")
        except BaseException as exc:
            errors.append(exc)

    names = [f"f{index:02d}" for index in range(16)]
    threads = [threading.Thread(target=work, args=(names[part::2],)) for part in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    files = git(repo.root, "ls-tree", "--name-only", "integration").split()
    assert files == sorted(
        [*(f"{name}.txt" for name in names), *(f"file000{i}.txt" for i in range(3))]
    )
    assert repo.list_branches("copy/") == [f"copy/{name}" for name in names]


_HOLDER = """
import pathlib, sys, time
import filelock
lock_path, held, go, log = sys.argv[1:]
with filelock.FileLock(lock_path):
    pathlib.Path(held).write_text("held")
    deadline = time.monotonic() + 30
    while not pathlib.Path(go).exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    with open(log, "a") as handle:
        handle.write("other process released\\n")
"""


def test_lock_makes_this_process_wait_for_another(repo: GitRepo, tmp_path: Path) -> None:
    held, go, log = tmp_path / "held", tmp_path / "go", tmp_path / "log"
    args = [sys.executable, "-c", _HOLDER, str(repo.lock_path), str(held), str(go), str(log)]
    holder = subprocess.Popen(args)
    try:
        wait_for_file(held)
        with pytest.raises(RepositoryLockTimeoutError), repo.locked(timeout=0):
            pass

        def create() -> None:
            repo.create_branch("after-the-other", repo.head_commit())
            with log.open("a") as handle:
                handle.write("this process created a branch\n")

        waiter = threading.Thread(target=create)
        waiter.start()
        go.touch()
        waiter.join(timeout=30)
        assert not waiter.is_alive()
        assert holder.wait(timeout=30) == 0
    finally:
        holder.kill()
        holder.wait(timeout=30)
    lines = log.read_text(encoding="utf-8").splitlines()
    assert lines == ["other process released", "this process created a branch"]
