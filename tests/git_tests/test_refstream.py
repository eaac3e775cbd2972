"""The start of a feature attempt's branch, moved through one ``git update-ref --stdin``.

Real git, real processes: the stream's compare-and-swap, its recovery from a process that died
or was killed (a task runs as the same user), and the channel no task can write into.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from rho_mission._errors import GitOperationError, RefMovedError
from rho_mission.git._pool import WorktreePool
from rho_mission.git._repo import GitRepo
from support.repos import run_git
from support.rho import WAIT


def _pool(repo: GitRepo) -> WorktreePool:
    return WorktreePool(repo, repo.root / ".rho" / "worktrees" / "abc", "abc")


def _reflog(repo: GitRepo, branch: str) -> list[str]:
    return run_git(repo.root, "reflog", "show", "--format=%gs", branch).splitlines()


def test_a_branch_is_made_and_moved_by_compare_and_swap_with_its_reflog(repo: GitRepo) -> None:
    start = repo.head_commit()
    later = run_git(repo.root, "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "later").strip()
    repo.start_branch("m/a", start, None)
    assert repo.branch_commit("m/a") == start
    with pytest.raises(RefMovedError):
        repo.start_branch("m/a", later, None)  # "must not exist": it does
    with pytest.raises(RefMovedError):
        repo.start_branch("m/a", later, later)  # it holds *start*, not *later*
    assert repo.branch_commit("m/a") == start
    repo.start_branch("m/a", later, start)
    assert repo.branch_commit("m/a") == later
    assert _reflog(repo, "m/a") == ["rho-mission: start of a feature attempt"] * 2
    repo.close()
    assert repo.branch_stream.pid is None


def test_one_process_serves_every_move_and_a_killed_one_is_replaced(repo: GitRepo) -> None:
    start = repo.head_commit()
    repo.start_branch("m/a", start, None)
    first = repo.branch_stream.pid
    assert first is not None
    repo.start_branch("m/b", start, None)
    assert repo.branch_stream.pid == first
    # A task of the same user kills it between two moves: the next move starts another.
    os.kill(first, signal.SIGKILL)
    repo.start_branch("m/c", start, None)
    assert repo.branch_stream.pid not in (None, first)
    assert {repo.branch_commit(name) for name in ("m/a", "m/b", "m/c")} == {start}
    repo.close()


def test_a_stopped_stream_is_ended_and_the_next_move_goes_to_a_new_one(repo: GitRepo) -> None:
    start = repo.head_commit()
    repo.start_branch("m/a", start, None)
    first = repo.branch_stream.pid
    assert first is not None
    # A task of the same user stops it between two moves: the next move's transaction gets no
    # "start: ok" within the deadline; the process is ended (stopped as it is) and another
    # takes the move.
    os.kill(first, signal.SIGSTOP)
    pool = ThreadPoolExecutor(1)
    try:
        pool.submit(repo.start_branch, "m/b", start, None).result(timeout=WAIT)
    finally:
        pool.shutdown(wait=False)
        with contextlib.suppress(ProcessLookupError):  # a hang: what holds it ends
            os.kill(first, signal.SIGKILL)
    assert repo.branch_commit("m/b") == start
    assert repo.branch_stream.pid not in (None, first)
    assert not Path(f"/proc/{first}").exists()  # ended and reaped: not even a zombie
    # Stopped again, then closed (the pool's close, rho's end): ended within the deadline.
    second = repo.branch_stream.pid
    assert second is not None
    os.kill(second, signal.SIGSTOP)
    repo.close()
    assert not Path(f"/proc/{second}").exists()


def test_no_other_process_can_write_to_the_stream_or_answer_for_it(repo: GitRepo) -> None:
    repo.start_branch("m/a", repo.head_commit(), None)
    pid = repo.branch_stream.pid
    assert pid is not None
    # A pipe can be opened again through /proc by any process of the user; a socket cannot.
    assert [_reopened(f"/proc/{pid}/fd/{fd}") for fd in (0, 1, 2)] == [errno.ENXIO] * 3
    # Its own process group (the terminal's Ctrl-C is rho's), in rho's session (never taken
    # for a task's orphan).
    assert os.getpgid(pid) == pid
    assert os.getsid(pid) == os.getsid(0)
    repo.close()


@pytest.mark.parametrize(
    "name", ["m/a {start}\ndelete refs/heads/main", "m/a\ndelete refs/heads/main", "m/a b"]
)
def test_a_name_that_would_be_another_command_or_field_is_refused(repo: GitRepo, name: str) -> None:
    # The stream reads one command per line, fields split at spaces: such a name is refused
    # before anything is sent, as "update-ref" refuses it in argv. The first would be a whole
    # second command of the same transaction, which git would carry out: main deleted.
    start = repo.head_commit()
    main = repo.branch_commit("main")
    with pytest.raises(GitOperationError, match="invalid ref move"):
        repo.start_branch(name.format(start=start), start, None)
    assert repo.branch_commit("main") == main
    assert repo.branch_stream.pid is None  # nothing was sent: no process started
    repo.close()


def test_pooled_worktrees_start_on_their_branch_without_a_process_per_move(
    repo: GitRepo,
) -> None:
    start = repo.head_commit()
    with _pool(repo) as pool:
        path = pool.acquire("m/a", start, None)
        pool.release(path, spotless=True, head=start)
        stream = repo.branch_stream.pid
        again = pool.acquire("m/b", start, None)
        assert again == path
        assert repo.branch_stream.pid == stream
        assert run_git(path, "symbolic-ref", "HEAD") == "refs/heads/m/b\n"
        assert run_git(path, "status", "--porcelain", "--ignored") == ""
        assert run_git(path, "rev-parse", "HEAD").strip() == start
    assert repo.branch_stream.pid is None  # the pool's close ended it


def _reopened(path: str) -> int:
    # 0 when *path* opens for writing, else the errno of the refusal.
    try:
        os.close(os.open(path, os.O_WRONLY))
    except OSError as exc:
        return exc.errno or -1
    return 0
