"""The shared worktree pool of a repository, and the claims missions hold on its worktrees.

A *shared* pool (``WorktreePool(shared=True)``, the engine's ``<repo>/.rho/worktrees/pool``)
outlives its mission: ``close`` gives its healthy idle worktrees back to the folder, detached and
locked with the reason ``rho-pool idle`` (``IDLE_REASON``), up to ``limit`` worktrees in the
folder in all (``pool_limit``). A later mission of the repository (or a resume) reclaims one
instead of checking out every file again: only a worktree given back that way, whose claim lock
(``<git common dir>/rho-pool-<name>.lock``, ``flock``; ``Claims``) nobody holds, and that passes
the checks a new one passes (``pin_worktree``: a real folder whose ``.git`` names its own git
directory, which points back; nothing unfinished in it). One that fails is deleted without
running git on it (``drop_unverified``). A worktree whose holder died without giving it back is
never reclaimed (what the holder started may still write there); ``prune_pool`` removes it. One
that a live process still holds open (``someone_works_in``) is left alone: a task could forge
the idle lock reason.

Decision: docs/decisions/0601-worktree-pool.md
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from pathlib import Path

from .._errors import InvalidMissionError
from ..containment._folders import open_unfollowed
from ..containment._pids import pid_alive
from ._leftovers import LOCK_REASON, checked_folder, remove_tampered, remove_unregistered
from ._repo import GitRepo, WorktreeInfo

__all__ = [
    "DEFAULT_POOL_LIMIT",
    "IDLE_REASON",
    "Claims",
    "drop_lock_file",
    "drop_pooled",
    "drop_unverified",
    "held_by",
    "pool_limit",
    "pooled",
    "pooled_worktrees",
    "prune_pool",
    "someone_works_in",
    "try_claim",
]

IDLE_REASON = "rho-pool idle"
# Worktrees a shared pool keeps between missions: one per worker of a usual --workers 4 and as
# many spare (RHO_WORKTREE_POOL=N to change it; 0 keeps none).
DEFAULT_POOL_LIMIT = 8


def pool_limit() -> int:
    """``$RHO_WORKTREE_POOL`` as a count of worktrees, or ``DEFAULT_POOL_LIMIT``.

    Raises:
        InvalidMissionError: the variable is set to anything but a whole number >= 0.
    """
    value = os.environ.get("RHO_WORKTREE_POOL", "").strip()
    if not value:
        return DEFAULT_POOL_LIMIT
    if not value.isdigit() or not value.isascii():
        raise InvalidMissionError(f"RHO_WORKTREE_POOL must be a whole number >= 0, not {value!r}")
    return int(value)


class Claims:
    """The claim locks one pool holds on worktrees of the shared folder; thread-safe.

    A claim is an ``flock`` on the worktree's lock file in the git common directory, held
    through an open descriptor: it ends with the descriptor, so a crashed holder lets go.
    """

    def __init__(self, repo: GitRepo) -> None:
        self._repo = repo
        self._fds: dict[Path, int] = {}  # path -> the descriptor holding its lock
        self._guard = threading.Lock()

    def __contains__(self, path: object) -> bool:
        with self._guard:
            return path in self._fds

    def held(self) -> list[Path]:
        """The worktrees claimed."""
        with self._guard:
            return list(self._fds)

    def take(self, path: Path) -> bool:
        """Take *path*'s claim lock, or False when another process holds it."""
        fd = try_claim(self._repo, path)
        if fd is None:
            return False
        with self._guard:
            self._fds[path] = fd
        return True

    def drop(self, *paths: Path) -> None:
        """Let go of the claims on *paths* that are held (the lock files stay)."""
        with self._guard:
            fds = [self._fds.pop(path) for path in paths if path in self._fds]
        for fd in fds:
            os.close(fd)  # lets go of the flock


def prune_pool(
    repo: GitRepo, folder: str | os.PathLike[str], *, idle_too: bool = False
) -> list[Path]:
    """Remove the worktrees of the shared pool at *folder* that nobody holds; their paths.

    Those whose holder died without giving them back go (what it started may still write
    there), and so do folders git does not know. Idle ones given back stay unless *idle_too*
    (``rho worktrees prune``). No git runs in any of them.

    Raises:
        InvalidMissionError: *folder* is the work tree, holds it, or lies in it unignored.
        GitOperationError: git could not list, unlock or prune its worktrees.
    """
    root = checked_folder(repo, folder)
    with repo.locked():
        trees = repo.worktrees()
        listed = pooled(repo, root, trees)
        candidates = [path for path, reason in listed if idle_too or reason != IDLE_REASON]
        removed = drop_pooled(repo, candidates)  # those a live mission holds stay
        registered = {Path(os.path.abspath(t.path)) for t in trees}.difference(removed)
        removed += remove_unregistered(root, registered)
        if root.is_dir() and not any(root.iterdir()):
            root.rmdir()
    return sorted(removed)


def held_by(repo: GitRepo, folder: Path, mission_id: str) -> list[Path]:
    """The worktrees of the shared pool at *folder* locked for a run of *mission_id*."""
    return sorted(
        path
        for path, reason in pooled(repo, folder)
        if LOCK_REASON.match(reason or "") and (reason or "").split()[1] == mission_id
    )


def pooled_worktrees(repo: GitRepo, folder: Path) -> list[tuple[Path, str]]:
    """The worktrees of the shared pool at *folder*, sorted, each with who holds it: ``idle``
    (given back), ``mission <id> (pid <n>)`` for a live mission's, or ``left by mission <id>``
    for one whose holder died (``prune`` removes it)."""
    found = []
    for path, reason in pooled(repo, folder):
        match = LOCK_REASON.match(reason or "")
        if reason == IDLE_REASON:
            holder = "idle"
        elif match is None:
            holder = "unknown (not locked by rho)"
        else:
            pid, mission = int(match[1]), (reason or "").split()[1]
            alive = pid == os.getpid() or pid_alive(pid)
            holder = f"mission {mission} (pid {pid})" if alive else f"left by mission {mission}"
        found.append((path, holder))
    return sorted(found)


def pooled(
    repo: GitRepo, folder: Path, trees: list[WorktreeInfo] | None = None
) -> list[tuple[Path, str | None]]:
    """The registered worktrees right under the pool's *folder* (of *trees*, default git's
    list), each with its lock reason."""
    listed = repo.worktrees() if trees is None else trees
    found = [(Path(os.path.abspath(tree.path)), tree.locked) for tree in listed]
    return [(path, reason) for path, reason in found if path.parent == folder]


def drop_pooled(repo: GitRepo, paths: list[Path]) -> list[Path]:
    """Remove pooled worktrees nobody holds (as ``prune_pool`` does); the ones removed."""
    removed: list[Path] = []
    with repo.locked():
        for path in paths:
            fd = try_claim(repo, path)
            if fd is None:
                continue  # in use by a live mission
            try:
                drop_unverified(repo, path)
            finally:
                os.close(fd)
            drop_lock_file(repo, path)
            removed.append(path)
    return removed


def _claim_path(repo: GitRepo, path: Path) -> Path:
    return repo.common_dir / f"rho-pool-{path.name}.lock"


def try_claim(repo: GitRepo, path: Path) -> int | None:
    """The descriptor of *path*'s claim lock, now held; None when another process holds it."""
    fd = open_unfollowed(_claim_path(repo, path), os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def drop_lock_file(repo: GitRepo, path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(_claim_path(repo, path))


def drop_unverified(repo: GitRepo, path: Path) -> None:
    # Deleted as a tampered worktree is (no git in it), then git's record unlocked and pruned.
    remove_tampered(path, None)
    repo.run_status("worktree", "unlock", str(path))
    repo.run("worktree", "prune")


def someone_works_in(path: Path) -> bool:
    """Whether a live process holds *path* open: its working folder, an open file or a mapped
    file there (``/proc/<pid>/cwd``, ``fd/``, ``map_files/``).

    A pooled worktree is given back only after its mission ended its processes, and a task
    could forge the ``rho-pool idle`` lock reason; so one that a process still holds (a
    daemon that did ``cd /`` but kept a file of it open) is left alone.
    """
    inside = str(path)
    try:
        entries = [entry.name for entry in os.scandir("/proc") if entry.name.isdigit()]
    except OSError:
        return False  # no /proc: the claim lock and the lock reason are what there is
    return any(_holds(pid, inside) for pid in entries)


def _holds(pid: str, inside: str) -> bool:
    # Another user's (or a vanished) process shows nothing: it is not rho's to find.
    for link in (f"/proc/{pid}/cwd", *_links(f"/proc/{pid}/fd"), *_links(f"/proc/{pid}/map_files")):
        try:
            target = os.readlink(link)
        except OSError:
            continue
        if target == inside or target.startswith(inside + os.sep):
            return True
    return False


def _links(folder: str) -> list[str]:
    try:
        return [f"{folder}/{name}" for name in os.listdir(folder)]
    except OSError:
        return []
