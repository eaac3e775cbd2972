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
- its index is rho's own: the bytes its last checkout there left (``SavedIndex``) are put
  back whenever the index is no longer that file (``restore_index``). A task can set a bit in
  the index, and it can also make an entry lie (the original blob's id with the stat data of
  its edited file, so that git takes the edit for the original); rho's own index tells the
  truth, and the forced checkout that follows rewrites every file that is not what it says.
  A task that ran no git in the worktree costs nothing (the index is still rho's file);
- a worktree with no saved index (given back by another mission) must hold only plain entries
  (``index_is_plain``: no ``skip-worktree``, ``assume-unchanged`` or unmerged one), or it is
  replaced by a new one. A small index is read here, a large (or version 4) one by
  ``git ls-files -v``. Under ``--sandbox`` no task reaches another worktree's index; without
  it a task can write any file the user can, those of idle pooled worktrees too.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from ..containment import require_pinned
from ..containment._folders import FileIdentity, file_identity, open_unfollowed
from ._repo import GitRepo

__all__ = [
    "IndexIdentity",
    "SavedIndex",
    "carry_index",
    "index_identity",
    "index_is_plain",
    "restore_index",
    "save_index",
    "trim_git_dir",
]

# What "git worktree add" makes in a worktree's git dir, and the lock rho puts there.
_KEPT = frozenset({"HEAD", "commondir", "gitdir", "index", "locked", "logs"})
_KEPT_LOGS = frozenset({"HEAD"})

IndexIdentity = FileIdentity | None

# Read here up to 1 MiB (about 10,000 entries); a larger index is read by git.
_READ_LIMIT = 1 << 20
_ASSUME_VALID = 0x8000
_EXTENDED = 0x4000
_UNMERGED_STAGE = 0x3000
_NAME_MASK = 0x0FFF
_SKIP_WORKTREE = 0x4000


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


@dataclass(frozen=True, slots=True)
class SavedIndex:
    """The index file rho's checkout or commit left in a worktree: its identity, its bytes,
    and the commit it was the index of."""

    identity: IndexIdentity
    data: bytes
    commit: str


def save_index(worktree: Path, commit: str) -> SavedIndex | None:
    """The index of *worktree* as it is now (right after rho's own checkout of *commit*, or
    its commit of it), or None."""
    try:
        fd = open_unfollowed(require_pinned(worktree).git_dir / "index", os.O_RDONLY)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        found = os.fstat(handle.fileno())
        data = handle.read()
    return SavedIndex(file_identity(found), data, commit)


def restore_index(worktree: Path, saved: SavedIndex) -> bool:
    """Put *saved* back as *worktree*'s index unless the index is still that file; whether it
    was put back (written to a new file, renamed over the index: no link followed)."""
    if index_identity(worktree) == saved.identity:
        return False
    git_dir = require_pinned(worktree).git_dir
    temporary = git_dir / f"index.rho-{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temporary)
    fd = open_unfollowed(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(saved.data)
    os.replace(temporary, git_dir / "index")
    return True


def carry_index(repo: GitRepo, worktree: Path, saved: SavedIndex) -> None:
    """Move the index *saved* put back to the worktree's HEAD, when a task's commits moved HEAD
    since: ``git read-tree --reset HEAD`` keeps the stat data of every entry HEAD shares with
    it (those rho's checkout wrote, told truly) and takes the others from HEAD without any (git
    reads those files again). The index then differs from HEAD by what the worktree holds
    uncommitted, as a task's own index would. A HEAD that names no commit is left for the
    commit step to refuse, in its own words.

    Raises:
        GitOperationError: git refused to read HEAD's tree.
    """
    head = _detached_head(worktree)
    if head is None:
        status, out, _ = repo.run_status("rev-parse", "--verify", "--quiet", "HEAD", cwd=worktree)
        if status != 0:
            return
        head = out.strip()
    if head != saved.commit:
        repo.run("read-tree", "--reset", head, cwd=worktree)


def _detached_head(worktree: Path) -> str | None:
    # A detached HEAD (a sandboxed task's) is its commit's id: no git process to read it.
    try:
        fd = open_unfollowed(require_pinned(worktree).git_dir / "HEAD", os.O_RDONLY)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        text = handle.read(100).decode("ascii", "replace").strip()
    return text if re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", text) else None


def index_identity(worktree: Path) -> IndexIdentity:
    """The identity of *worktree*'s index file (device, inode, size, times), None if absent."""
    try:
        found = os.lstat(require_pinned(worktree).git_dir / "index")
    except FileNotFoundError:
        return None
    return file_identity(found)


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
    plain = _read_plain(require_pinned(worktree).git_dir / "index")
    if plain is not None:
        return plain
    listed = repo.run("ls-files", "-v", "-z", cwd=worktree)
    return all(entry.startswith("H ") for entry in listed.split("\0") if entry)


def _read_plain(index: Path) -> bool | None:
    """Whether the index file holds only plain entries, read here (no git process); None when
    git must say: a version 4 index (paths compressed), a large one (git reads it faster), or
    one that cannot be read as an index."""
    try:
        fd = open_unfollowed(index, os.O_RDONLY)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(_READ_LIMIT + 1)
    if len(data) > _READ_LIMIT or data[:4] != b"DIRC":
        return None
    try:
        return _entries_plain(data)
    except (IndexError, ValueError):
        return None


def _entries_plain(data: bytes) -> bool | None:
    # git's index format: a 12-byte header, then per entry 62 bytes of stat data, name and
    # flags, an extended-flags word when the "extended" bit is set (version 3), the path and
    # 1 to 8 NULs up to a multiple of 8.
    version = int.from_bytes(data[4:8], "big")
    if version not in (2, 3):
        return None
    offset = 12
    for _ in range(int.from_bytes(data[8:12], "big")):
        flags = int.from_bytes(data[offset + 60 : offset + 62], "big")
        if flags & _ASSUME_VALID or flags & _UNMERGED_STAGE:
            return False
        fixed = 62
        if flags & _EXTENDED:
            if int.from_bytes(data[offset + 62 : offset + 64], "big") & _SKIP_WORKTREE:
                return False
            fixed = 64
        length = flags & _NAME_MASK
        if length == _NAME_MASK:
            length = data.index(b"\0", offset + fixed) - offset - fixed
        offset += (fixed + length + 8) & ~7
        if offset > len(data):
            raise ValueError("truncated index")
    return True
