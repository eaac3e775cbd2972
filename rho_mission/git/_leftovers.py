"""Stale worktrees: what a crashed mission left under rho's folders, told from what is in use.

A mission's worktree is registered *locked*, with the reason ``rho-mission <mission> pid <pid>``
(``mission_lock_reason``): git's own ``worktree prune`` leaves it alone, and ``prune_stale`` can
tell a worktree that a live process uses from one that a crashed process left behind. The
worktrees of every open pool of this process are marked live (``mark_live``) and are never
stale, whatever their lock says; ``forget`` unmarks and unpins them.

Invariants: a worktree folder rho deletes lies under a folder that is not the work tree, holds
no part of it, and is ignored by git when inside it (``checked_folder``), with no symbolic link
on the way; a worktree that is not the one rho pinned (a link, another folder) is deleted without
running git on it (``remove_tampered``).

Decision: docs/decisions/0601-worktree-pool.md
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from pathlib import Path

from .._errors import InvalidMissionError, WorktreeTamperedError
from ..containment import PinnedWorktree, pinned, unpin
from ..containment._folders import check_own_folder, folder_anchor, remove_tree
from ..containment._pids import pid_alive
from ._repo import GitRepo, WorktreeInfo

__all__ = [
    "LOCK_REASON",
    "checked_folder",
    "forget",
    "in_use",
    "intact",
    "mark_live",
    "mission_lock_reason",
    "prune_stale",
    "remove_tampered",
    "remove_unregistered",
    "remove_worktree",
]

LOCK_REASON = re.compile(r"^rho-mission \S+ pid (\d+)$")

# The worktrees of every open pool of this process: never stale, whatever their lock says.
_LIVE: set[Path] = set()
_LIVE_GUARD = threading.Lock()


def mission_lock_reason(mission_id: str) -> str:
    """The lock reason of a worktree that a run of *mission_id* in this process holds."""
    return f"rho-mission {mission_id} pid {os.getpid()}"


def mark_live(path: Path) -> None:
    """Mark *path* as a worktree of an open pool of this process: never stale."""
    with _LIVE_GUARD:
        _LIVE.add(path)


def forget(*paths: Path) -> None:
    """No longer a live worktree of this process, nor pinned."""
    with _LIVE_GUARD:
        _LIVE.difference_update(paths)
    unpin(*paths)


def prune_stale(repo: GitRepo, folder: str | os.PathLike[str]) -> list[Path]:
    """Remove the worktrees under *folder* that no live process uses; return their paths.

    For ``rho mission resume`` after a crash: registered worktrees under *folder* whose owner
    is gone (or that no rho process registered), and folders under it that git no longer
    knows, are deleted; git's records are pruned; *folder* goes too once empty. Worktrees of
    open pools in this process and of live ``rho`` processes stay.

    Raises:
        InvalidMissionError: *folder* is the work tree, holds it, or lies in it unignored.
        GitOperationError: git could not list or prune its worktrees.
        OSError: a folder could not be deleted.
    """
    root = checked_folder(repo, folder)
    removed: list[Path] = []
    with repo.locked():
        trees = repo.worktrees()
        pruned = True
        for tree in trees:
            path = tree.path.resolve()
            if path.is_relative_to(root) and path != root and not in_use(tree):
                pruned = remove_worktree(repo, path) and pruned
                removed.append(path)
        if not pruned:  # deleted by hand: git's record is still there
            repo.run("worktree", "prune")
        # What git still knows is what it listed, less what was just removed: the rest is in
        # use (locked), and nobody else adds a worktree while the lock is held.
        registered = {tree.path.resolve() for tree in trees}.difference(removed)
        removed += remove_unregistered(root, registered)
        if root.is_dir() and not any(root.iterdir()):
            root.rmdir()
    return sorted(removed)


def checked_folder(repo: GitRepo, folder: str | os.PathLike[str], *, ignored: bool = True) -> Path:
    # Whatever lies under the folder may be deleted, and worktrees in the user's work tree must
    # not show up in their "git status": refuse the work tree itself, or an unignored part, and
    # a symbolic link on the way (its target would be what gets deleted).
    path = Path(os.path.abspath(folder))
    if repo.root.is_relative_to(path):
        raise InvalidMissionError(f"worktree folder {path} holds the repository itself")
    check_own_folder(path, folder_anchor(path, repo.root))
    inside = ignored and path.is_relative_to(repo.root)
    if inside and repo.run_status("check-ignore", "-q", f"{path}/")[0] != 0:
        raise InvalidMissionError(
            f"worktree folder {path} is inside the work tree but not ignored by git"
        )
    return path


def remove_unregistered(root: Path, registered: set[Path]) -> list[Path]:
    if not root.is_dir():
        return []
    with _LIVE_GUARD:
        keep = registered | _LIVE
    leftovers = [child for child in root.iterdir() if child.resolve() not in keep]
    for child in leftovers:
        remove_tree(child)
    return [child.resolve() for child in leftovers]


def remove_worktree(repo: GitRepo, path: Path) -> bool:
    # Double --force: the worktree is locked (by us) and may hold changes or untracked files.
    # git also refuses a folder it does not know: that is a leftover, deleted by hand. Returns
    # whether git removed it, record and all (if not, a "worktree prune" is due).
    check_own_folder(
        path.parent, folder_anchor(path.parent, repo.root)
    )  # what holds it is rho's folder
    pin = pinned(path)
    if not intact(path, pin):
        remove_tampered(path, pin)
        return False
    status, _, _ = repo.run_status("worktree", "remove", "--force", "--force", str(path))
    if status != 0 and path.exists():
        repo.run_status("worktree", "unlock", str(path))
        remove_tree(path)
    return status == 0


def intact(path: Path, pin: PinnedWorktree | None) -> bool:
    # The folder rho made (or, unrecorded, a real folder): git may be run on it.
    if pin is None:
        return not os.path.islink(path)
    try:
        pin.check()
    except WorktreeTamperedError:
        return False
    return True


def remove_tampered(path: Path, pin: PinnedWorktree | None) -> None:
    # What a task left in place of its worktree: a link (removed, never followed) or another
    # folder (deleted: it stands in rho's own folder). No git runs on it. git's record loses
    # its lock, through the git dir only when that is still the one recorded, so that the
    # "worktree prune" due next drops it.
    if pin is not None and pin.git_dir_unchanged():
        with contextlib.suppress(FileNotFoundError):
            os.unlink(pin.git_dir / "locked")
    remove_tree(path)


def in_use(tree: WorktreeInfo) -> bool:
    with _LIVE_GUARD:
        if tree.path.resolve() in _LIVE:
            return True
    if tree.locked is None:
        return False
    match = LOCK_REASON.match(tree.locked)
    if match is None:
        return True  # locked by the user or another tool, for its own reasons
    pid = int(match[1])
    # Our own pid with no open pool here means a previous process that had the same pid.
    return pid != os.getpid() and pid_alive(pid)
