"""What a setup left, in one digest: taken right after the setup, compared before each reuse.

A task may change a kept output (install a package into ``.venv``, patch a file of
``node_modules``, plant a ``.pth``). Before a worktree's kept outputs reach the next feature,
they are walked again and must give the digest taken when the setup ended. Each entry counts
with its path, type and permission bits, size, modification and change times and inode; a link
with its target. The walk opens every folder ``O_NOFOLLOW`` from the one before (a link planted
where a folder was is an entry, never followed).

The change time is what makes this cheap and still sound: the kernel sets it at every write,
rename, chmod or ``utime``, and no process can set it back, so a file rewritten with its old
size and modification time still differs. No content is read: one ``lstat`` per entry.

Decision: docs/decisions/0604-setup-and-copy.md
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..containment._folders import walk_folders

__all__ = ["Manifest", "take_manifest"]

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True, slots=True)
class Manifest:
    """The digest of a worktree's outputs, with their count of entries and bytes."""

    digest: str
    entries: int
    size: int


class _Walk:
    def __init__(self) -> None:
        self.digest = hashlib.sha256(b"rho.setup-manifest/v1\0")
        self.entries = 0
        self.size = 0

    def note(self, path: str, found: os.stat_result, target: str = "") -> None:
        self.entries += 1
        self.size += found.st_size
        line = (
            f"{path}\0{found.st_mode:o}\0{found.st_size}\0{found.st_mtime_ns}\0"
            f"{found.st_ctime_ns}\0{found.st_ino}\0{target}\n"
        )
        self.digest.update(line.encode("utf-8", "surrogateescape"))

    def missing(self, path: str) -> None:
        self.digest.update(f"{path}\0missing\n".encode("utf-8", "surrogateescape"))


def take_manifest(worktree: Path, outputs: Sequence[str]) -> Manifest:
    """The manifest of *outputs* (repository-relative paths) in *worktree*, in sorted order.

    A path that cannot be reached (missing, or a link on the way) counts as missing: the
    digest then differs from one taken while it was there.
    """
    walk = _Walk()
    top = os.open(worktree, _FOLDER)
    try:
        for output in sorted(outputs):
            _walk_output(top, output, walk)
    finally:
        os.close(top)
    return Manifest(walk.digest.hexdigest(), walk.entries, walk.size)


def _walk_output(top: int, output: str, walk: _Walk) -> None:
    parts = PurePosixPath(output).parts
    try:
        folder = walk_folders(top, parts[:-1])
    except OSError:
        walk.missing(output)
        return
    try:
        _walk_entry(folder, parts[-1], output, walk)
    except OSError:
        walk.missing(output)
    finally:
        os.close(folder)


def _walk_entry(folder: int, name: str, path: str, walk: _Walk) -> None:
    found = os.stat(name, dir_fd=folder, follow_symlinks=False)
    if stat.S_ISLNK(found.st_mode):
        walk.note(path, found, os.readlink(name, dir_fd=folder))
        return
    walk.note(path, found)
    if not stat.S_ISDIR(found.st_mode):
        return
    child = os.open(name, _FOLDER, dir_fd=folder)
    try:
        with os.scandir(child) as entries:
            names = sorted(entry.name for entry in entries)
        for inner in names:
            _walk_entry(child, inner, f"{path}/{inner}", walk)
    finally:
        os.close(child)
