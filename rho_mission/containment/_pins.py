"""A worktree as rho made it: its folder's identity and its git directory, checked at every use.

A task may rewrite its worktree's ``.git`` file (``gitdir: <the user's .git>``), delete it and
``git init`` a repository of its own, or replace the whole folder with a link to another
checkout. git, run there the usual way (``git -C <worktree>``), would then write the user's
HEAD and index, run a filter the task configured, or clean and commit another checkout.

So rho records, when it makes a worktree and before any task runs in it, the folder's device
and inode and the git directory git made for it (``<common dir>/worktrees/<name>``). Every git
call rho makes on that worktree names the git directory, the common directory and the work
tree itself (``--git-dir``, ``GIT_COMMON_DIR``, ``--work-tree``): nothing in the folder is read
to find them. Right before each call the folder and the git directory are checked to be the
ones recorded (same device and inode, not a link), and the files git appends to there (its
logs) or sets the times of (a split index's shared parts) are checked not to be links. A
mismatch raises ``WorktreeTamperedError``; no git runs.

The check and git's use of the path are not one atomic step: a process could swap the folder
in between. The task's own processes are gone by then (``_reaper``); what remains is another
task running at the same moment, which only ``--sandbox`` keeps out of other worktrees.

Decision: docs/decisions/0703-git-hardening.md
"""

from __future__ import annotations

import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path

from .._errors import UnsafePathError, WorktreeTamperedError
from ._folders import open_unfollowed

__all__ = ["PinnedWorktree", "pin_worktree", "pinned", "require_pinned", "unpin"]

# Per-worktree files git appends to (open with O_APPEND follows a link): a link planted there
# would make rho's own checkout or update-ref append to the link's target.
_APPENDED = ("logs", "logs/HEAD")
# A split index's shared parts: git sets their times at every read ("freshens" them), through
# a link too.
_SHARED_INDEX = "sharedindex."
# Read by git for this worktree when the repository enables extensions.worktreeConfig; rho
# never makes one, so one that appears was written by the task (it could define a filter).
_WORKTREE_CONFIG = "config.worktree"

# Keyed by the absolute path as a string: looked up at every git call rho makes in a worktree.
_PINS: dict[str, PinnedWorktree] = {}
_GUARD = threading.Lock()


@dataclass(frozen=True, slots=True)
class PinnedWorktree:
    """A worktree's folder and git directory as rho recorded them.

    ``identity`` and ``git_dir_identity`` are (device, inode) pairs; ``common_dir`` is the
    repository's shared git directory.
    """

    path: Path
    git_dir: Path
    common_dir: Path
    identity: tuple[int, int]
    git_dir_identity: tuple[int, int]
    git_file: bytes

    def check(self) -> None:
        """Refuse a folder or git directory that is no longer the one recorded.

        Raises:
            WorktreeTamperedError: the folder or the git directory was replaced (a link,
                another folder, gone), or a link or a worktree config was planted in the git
                directory.
        """
        _require_same(self.path, self.identity, "its folder", self.path)
        if _read_git_file(self.path) != self.git_file:
            # Harmless to rho's own calls (they name the git dir), but the next task in this
            # folder would commit into whatever it names, and the work would be lost.
            raise WorktreeTamperedError(self.path, "its .git file was rewritten or replaced")
        _require_same(self.git_dir, self.git_dir_identity, "its git directory", self.path)
        for name in _APPENDED:
            if os.path.islink(self.git_dir / name):
                raise WorktreeTamperedError(self.path, f"a link stands at {name} of its git dir")
        if os.path.lexists(self.git_dir / _WORKTREE_CONFIG):
            raise WorktreeTamperedError(self.path, f"its git dir has a {_WORKTREE_CONFIG}")
        with os.scandir(self.git_dir) as entries:
            for entry in entries:
                if entry.name.startswith(_SHARED_INDEX) and entry.is_symlink():
                    raise WorktreeTamperedError(
                        self.path, f"a link stands at {entry.name} of its git dir"
                    )

    def git_dir_unchanged(self) -> bool:
        """Whether the git directory is still the folder recorded (not a link, not replaced)."""
        try:
            return _identity(self.git_dir, "its git dir", self.path) == self.git_dir_identity
        except WorktreeTamperedError:
            return False

    def git_options(self) -> tuple[str, ...]:
        """git's options that name the repository and work tree, so that nothing is looked up."""
        return (f"--git-dir={self.git_dir}", f"--work-tree={self.path}")

    def git_environ(self) -> dict[str, str]:
        """The variable that names the common dir (the git dir's ``commondir`` file is ignored)."""
        return {"GIT_COMMON_DIR": str(self.common_dir)}


def pin_worktree(path: Path, common_dir: Path) -> PinnedWorktree:
    """Record the worktree at *path* as it is now; call it before any task has run there.

    Its git directory is read from its ``.git`` file once, here, and must lie in
    ``<common_dir>/worktrees/`` and point back at *path*.

    Raises:
        WorktreeTamperedError: *path* is not a real folder, or its ``.git`` file does not name
            a worktree git directory of *common_dir* that points back at it.
    """
    path = Path(os.path.abspath(path))
    identity = _identity(path, "its folder", path)
    git_file = _read_git_file(path)
    try:
        pointer = git_file.decode("utf-8").strip()
    except UnicodeDecodeError as exc:
        raise WorktreeTamperedError(path, "its .git file cannot be read") from exc
    git_dir = Path(os.path.realpath(path / pointer.removeprefix("gitdir:").strip()))
    if git_dir.parent != Path(os.path.realpath(common_dir)) / "worktrees":
        raise WorktreeTamperedError(path, "its .git file names no worktree of this repository")
    if not _points_back(git_dir, path):
        raise WorktreeTamperedError(path, "its git directory does not point back at it")
    git_dir_identity = _identity(git_dir, "its git dir", path)
    pin = PinnedWorktree(path, git_dir, common_dir, identity, git_dir_identity, git_file)
    with _GUARD:
        _PINS[str(path)] = pin
    return pin


def pinned(path: Path) -> PinnedWorktree | None:
    """The record of the worktree at *path*, or None when rho made none."""
    key = os.path.abspath(path)
    with _GUARD:
        return _PINS.get(key)


def require_pinned(path: Path) -> PinnedWorktree:
    """The record of the worktree at *path*.

    Raises:
        UnsafePathError: rho made no worktree there (nothing recorded its git dir).
    """
    pin = pinned(path)
    if pin is None:
        raise UnsafePathError(path, "is no worktree rho made")
    return pin


def unpin(*paths: Path) -> None:
    """Forget the records of worktrees that are gone."""
    with _GUARD:
        for path in paths:
            _PINS.pop(os.path.abspath(path), None)


def _read_git_file(path: Path) -> bytes:
    # The .git file itself, never what a link there points at; b"" when it is not a file.
    try:
        fd = open_unfollowed(path / ".git", os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        return os.read(fd, 4096)
    finally:
        os.close(fd)


def _points_back(git_dir: Path, path: Path) -> bool:
    try:
        target = (git_dir / "gitdir").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return False
    return os.path.realpath(target) == os.path.realpath(path / ".git")


def _identity(path: Path, what: str, worktree: Path) -> tuple[int, int]:
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise WorktreeTamperedError(worktree, f"{what} is gone") from exc
    if stat.S_ISLNK(info.st_mode):
        raise WorktreeTamperedError(worktree, f"{what} is a symbolic link")
    if not stat.S_ISDIR(info.st_mode):
        raise WorktreeTamperedError(worktree, f"{what} is not a folder")
    return info.st_dev, info.st_ino


def _require_same(path: Path, identity: tuple[int, int], what: str, worktree: Path) -> None:
    if _identity(path, what, worktree) != identity:
        raise WorktreeTamperedError(worktree, f"{what} was replaced by another one")
