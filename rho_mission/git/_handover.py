"""A pooled worktree handed on as new: its git dir as ``git worktree add`` made it, its index
without a bit a task set.

A task works in a worktree that the next feature (of this mission or of a later one) reuses.
What it leaves in the worktree's files is cleaned by the next checkout; what it leaves in the
worktree's *git dir* is not: per-worktree refs (``refs/bisect/*``, ``refs/worktree/*``),
``info/exclude`` and ``info/sparse-checkout``, ``config.worktree``, ``COMMIT_EDITMSG``... And
an index bit survives every checkout: with ``git update-index --skip-worktree Makefile`` (or
``--assume-unchanged``) a poisoned Makefile stays in the folder while git calls the tree
clean, and the next task runs it.

So before a worktree is handed on (``WorktreePool.acquire`` of a reused or reclaimed one):

- ``trim_git_dir`` removes from its git dir all that ``git worktree add`` does not make (its
  ``HEAD``, ``commondir``, ``gitdir``, ``index``, ``logs/HEAD``, and rho's ``locked``),
  never following a link;
- ``index_is_plain`` tells whether its index holds only plain entries (``git ls-files -v``
  tags each ``H``); one that does not is replaced by a new worktree. git is asked only when
  the index is not the file rho's own last checkout left there (``index_identity``): a task
  that ran no git in it costs no process.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from pathlib import Path

from ..containment import require_pinned
from ._repo import GitRepo

__all__ = ["IndexIdentity", "index_identity", "index_is_plain", "trim_git_dir"]

# What "git worktree add" makes in a worktree's git dir, and the lock rho puts there.
_KEPT = frozenset({"HEAD", "commondir", "gitdir", "index", "locked", "logs"})
_KEPT_LOGS = frozenset({"HEAD"})

IndexIdentity = tuple[int, int, int, int, int] | None


def trim_git_dir(worktree: Path) -> None:
    """Remove from *worktree*'s git dir what ``git worktree add`` does not make."""
    git_dir = require_pinned(worktree).git_dir
    for name in _names(git_dir):
        if name not in _KEPT:
            _remove(git_dir / name)
    logs = git_dir / "logs"
    if os.path.isdir(logs) and not os.path.islink(logs):
        for name in _names(logs):
            if name not in _KEPT_LOGS:
                _remove(logs / name)


def _names(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except FileNotFoundError:
        return []


def _remove(path: Path) -> None:
    # A folder is removed with what it holds; a link is removed, never followed.
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISDIR(os.lstat(path).st_mode):
            shutil.rmtree(path)
        else:
            os.unlink(path)


def index_identity(worktree: Path) -> IndexIdentity:
    """The identity of *worktree*'s index file (device, inode, size, times), None if absent."""
    try:
        found = os.lstat(require_pinned(worktree).git_dir / "index")
    except FileNotFoundError:
        return None
    return (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)


def index_is_plain(repo: GitRepo, worktree: Path, left: IndexIdentity) -> bool:
    """Whether *worktree*'s index holds only plain entries: no ``skip-worktree``, no
    ``assume-unchanged`` bit, no unmerged path. *left* is the identity of the index that
    rho's last checkout there left: while the index is still that file, git is not asked.

    Raises:
        GitOperationError: git could not read the index.
        WorktreeTamperedError: the worktree is no longer the one rho made.
    """
    if left is not None and index_identity(worktree) == left:
        return True
    listed = repo.run("ls-files", "-v", "-z", cwd=worktree)
    return all(entry.startswith("H ") for entry in listed.split("\0") if entry)
