"""A pooled worktree handed on as new: its git dir as ``git worktree add`` made it, its index
without a bit a task set.

A task works in a worktree that the next feature (of this mission or of a later one) reuses.
What it leaves in the worktree's files is cleaned by the next move (a forced checkout and a clean,
unless its status found nothing beyond HEAD); what it leaves in the
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

rho's git writes a pooled worktree's index split (``core.splitIndex``): most entries in a
``sharedindex.<id>`` file beside it, which git writes once and then only reads, the ``index``
holding what changed since. At 60,000 files each index write is then a few kilobytes, not
5 MB (bench/README.md). The shared part is vouched for like the rest: its bytes are saved
with the index's and compared at every hand-over, since git itself neither checks its
checksum on reading nor leaves its times alone (each read "freshens" it); the one the saved
index names survives the trim, any other goes.

Decision: docs/decisions/0603-worktree-handover.md
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..containment import require_pinned
from ..containment._folders import (
    FileIdentity,
    file_identity,
    open_unfollowed,
    remove_tree,
    replace_unfollowed,
)
from ._repo import GitRepo

__all__ = [
    "IndexIdentity",
    "SavedIndex",
    "SharedIndex",
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
_SHARED_PREFIX = "sharedindex."
_LINK = b"link"
_SHA1_SIZE = 20
_SHA256_SIZE = 32


def trim_git_dir(worktree: Path, saved: SavedIndex | None = None) -> None:
    """Remove from *worktree*'s git dir what ``git worktree add`` does not make, but for the
    shared part of a split index: the one *saved* names, or with no index saved, the one the
    index names (what git then reads of it is checked as the rest of that index)."""
    git_dir = require_pinned(worktree).git_dir
    kept = _KEPT | _kept_shared(git_dir, saved)
    for name in _names(git_dir):
        if name not in kept:
            _remove(git_dir / name)
    logs = git_dir / "logs"
    if os.path.isdir(logs) and not os.path.islink(logs):
        for name in _names(logs):
            if name not in _KEPT_LOGS:
                _remove(logs / name)


def _kept_shared(git_dir: Path, saved: SavedIndex | None) -> set[str]:
    if saved is not None:
        return {saved.shared.name} if saved.shared is not None else set()
    present = _shared_files(git_dir)
    data = _read_unfollowed(git_dir / "index") if present else None
    name = _shared_name(data, present) if data is not None else None
    return {name} if name is not None else set()


def _names(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except FileNotFoundError:
        return []


def _remove(path: Path) -> None:
    # A folder is removed with what it holds; a link is removed, never followed.
    remove_tree(path)


@dataclass(frozen=True, slots=True)
class SharedIndex:
    """A split index's shared part: its file name in the git dir and its bytes."""

    name: str
    data: bytes


@dataclass(frozen=True, slots=True)
class SavedIndex:
    """The index file rho's checkout or commit left in a worktree: its identity, its bytes,
    the commit it was the index of, and the shared part it names (None: not split)."""

    identity: IndexIdentity
    data: bytes
    commit: str
    shared: SharedIndex | None = None


def save_index(worktree: Path, commit: str, known: SavedIndex | None = None) -> SavedIndex | None:
    """The index of *worktree* as it is now (right after rho's own checkout of *commit*, or
    its commit of it), or None: also None when it names a shared part that cannot be read
    (the worktree then goes as one with no saved index). A shared part *known* already saved
    is taken from there, not read again (git never rewrites one under its name)."""
    git_dir = require_pinned(worktree).git_dir
    try:
        fd = open_unfollowed(git_dir / "index", os.O_RDONLY)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        found = os.fstat(handle.fileno())
        data = handle.read()
    shared = None
    present = _shared_files(git_dir)
    if present:
        name = _shared_name(data, present)
        if name is not None:
            shared = _saved_shared(git_dir, name, known)
            if shared is None:
                return None
    return SavedIndex(file_identity(found), data, commit, shared)


def _shared_files(git_dir: Path) -> set[str]:
    return {name for name in _names(git_dir) if name.startswith(_SHARED_PREFIX)}


def _saved_shared(git_dir: Path, name: str, known: SavedIndex | None) -> SharedIndex | None:
    if known is not None and known.shared is not None and known.shared.name == name:
        return known.shared
    data = _read_unfollowed(git_dir / name)
    return None if data is None else SharedIndex(name, data)


def _read_unfollowed(path: Path, limit: int = -1) -> bytes | None:
    # Up to *limit* bytes of the file at *path* (all: -1); None when it cannot be read, a
    # link there included.
    try:
        fd = open_unfollowed(path, os.O_RDONLY)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        try:
            return handle.read(limit)
        except OSError:  # a folder
            return None


def restore_index(worktree: Path, saved: SavedIndex) -> bool:
    """Put *saved* back as *worktree*'s index unless the index is still that file and its
    shared part (if split) still holds the bytes saved; whether it was put back (each file
    written to a new one, renamed over the old: no link followed)."""
    git_dir = require_pinned(worktree).git_dir
    shared = saved.shared
    intact = shared is None or _read_unfollowed(git_dir / shared.name) == shared.data
    if intact and index_identity(worktree) == saved.identity:
        return False
    if not intact and shared is not None:
        replace_unfollowed(git_dir, shared.name, shared.data)
    replace_unfollowed(git_dir, "index", saved.data)
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
    one that cannot be read as an index.

    A split index is read with its shared part, and a bit in either says no: an entry of the
    shared part counts unless one in the index replaces it, so this is never more lenient
    than git's view, and only stricter when a task set a bit that a later entry undid."""
    data = _read_small_index(index)
    if data is None:
        return None
    try:
        flags, shared_id = _scan(data, _SHA1_SIZE)
        if shared_id is not None:
            shared = _read_small_index(index.parent / (_SHARED_PREFIX + shared_id.hex()))
            if shared is None:
                return None
            flags += _entries(shared, _SHA1_SIZE)[0]
    except (IndexError, ValueError):
        return None
    return all(_plain(entry, extended) for entry, extended in flags)


def _read_small_index(path: Path) -> bytes | None:
    # A version 2 or 3 index of up to 1 MiB, else None.
    data = _read_unfollowed(path, _READ_LIMIT + 1)
    if data is None or len(data) > _READ_LIMIT or data[:4] != b"DIRC":
        return None
    return data if _version(data) in (2, 3) else None


def _plain(flags: int, extended: int) -> bool:
    return not (flags & _ASSUME_VALID or flags & _UNMERGED_STAGE or extended & _SKIP_WORKTREE)


def _version(data: bytes) -> int:
    return int.from_bytes(data[4:8], "big")


def _entries(data: bytes, hash_size: int) -> tuple[list[tuple[int, int]], int]:
    """Each entry's flags and extended flags, and the offset where the extensions begin.

    git's index format: a 12-byte header, then per entry 40 bytes of stat data, the object
    id, 2 bytes of flags (the path's length in their low 12 bits), 2 of extended flags when
    the "extended" bit is set (version 3 and up), then the path: up to a multiple of 8 with
    1 to 8 NULs (versions 2, 3), or, in version 4, a varint (how much of the previous path to
    drop) and the rest of the path up to one NUL.

    Raises:
        ValueError, IndexError: *data* is no index of this layout.
    """
    version = _version(data)
    fixed = 40 + hash_size + 2
    found: list[tuple[int, int]] = []
    offset = 12
    for _ in range(int.from_bytes(data[8:12], "big")):
        flags = int.from_bytes(data[offset + fixed - 2 : offset + fixed], "big")
        extended, size = 0, fixed
        if flags & _EXTENDED:
            extended = int.from_bytes(data[offset + fixed : offset + fixed + 2], "big")
            size += 2
        found.append((flags, extended))
        if version == 4:
            offset += size
            while data[offset] & 0x80:
                offset += 1
            offset = data.index(b"\0", offset + 1) + 1
        else:
            length = flags & _NAME_MASK
            if length == _NAME_MASK:
                length = data.index(b"\0", offset + size) - offset - size
            offset += (size + length + 8) & ~7
        if offset > len(data):
            raise ValueError("truncated index")
    return found, offset


def _extensions(data: bytes, offset: int, hash_size: int) -> list[tuple[bytes, bytes]]:
    """The index's extensions from *offset* on (where its entries end): (signature, body)."""
    found: list[tuple[bytes, bytes]] = []
    end = len(data) - hash_size
    while offset + 8 <= end:
        size = int.from_bytes(data[offset + 4 : offset + 8], "big")
        if offset + 8 + size > end:
            raise ValueError("truncated extension")
        found.append((data[offset : offset + 4], data[offset + 8 : offset + 8 + size]))
        offset += 8 + size
    return found


def _scan(data: bytes, hash_size: int) -> tuple[list[tuple[int, int]], bytes | None]:
    """Each entry's flags and extended flags (see ``_entries``), and the id of the shared part
    a split index names (its "link" extension's first field), None when not split.

    Raises:
        ValueError, IndexError: *data* is no index of this layout, or its link names no id.
    """
    flags, end = _entries(data, hash_size)
    links = [body for name, body in _extensions(data, end, hash_size) if name == _LINK]
    if not links:
        return flags, None
    if len(links[0]) < hash_size:
        raise ValueError("link extension too short")
    return flags, links[0][:hash_size]


def _shared_name(data: bytes, present: set[str]) -> str | None:
    """The file name of the shared part that the index *data* names, among *present* (the
    ``sharedindex.*`` files of its git dir), or None: not split, or not readable here."""
    for hash_size in (_SHA1_SIZE, _SHA256_SIZE):
        try:
            _, shared_id = _scan(data, hash_size)
        except (IndexError, ValueError):
            continue
        if shared_id is not None and _SHARED_PREFIX + shared_id.hex() in present:
            return _SHARED_PREFIX + shared_id.hex()
    return None
