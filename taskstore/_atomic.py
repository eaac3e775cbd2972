"""Atomic, durable replacement of a file: temp file, fsync, rename, fsync of the folder."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "StagedFile",
    "commit_in_order",
    "ensure_private_dir",
    "ensure_private_file",
    "stage_atomic",
    "write_atomic",
]


def ensure_private_dir(folder: Path) -> None:
    """Create *folder* (and parents) if missing; a folder named ``.rho`` gets mode 0700."""
    private = folder.name == ".rho"
    # Created 0700 from the start (under any umask), and an existing one is narrowed.
    folder.mkdir(mode=0o700 if private else 0o777, parents=True, exist_ok=True)
    if private:
        folder.chmod(0o700)


def ensure_private_file(path: Path, mode: int = 0o600) -> None:
    """Create *path* empty with *mode* under any umask, or narrow it to *mode* if it exists.

    A file of another user is left as it is (only its owner may change its mode); a symbolic
    link in its place is refused rather than followed.

    Raises:
        OSError: the folder is not writable, or *path* is a symbolic link or a folder.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except PermissionError:
        return  # another user's file we cannot open: whoever locks it will say so
    try:
        with contextlib.suppress(PermissionError):
            os.fchmod(fd, mode)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Replace *path* with *data* so that a crash leaves the old or the new file, never a torn one.

    Raises:
        OSError: the folder is not writable or the disk is full; *path* is unchanged.
    """
    stage_atomic(path, data, mode).commit()


class StagedFile:
    """New contents of a file, on disk beside it (fsynced), not yet in its place: the two
    halves of `write_atomic`, for a writer that must put another file in place in between.

    `commit` puts them in place; `discard` removes them (nothing once committed).
    """

    def __init__(self, path: Path, temp_name: str) -> None:
        self.path = path
        self._temp_name: str | None = temp_name

    def commit(self) -> None:
        """Rename the new contents over the file, then fsync the folder.

        Raises:
            OSError: the rename failed (the new contents are removed; the file is unchanged),
                or the folder could not be flushed (the file may hold the new contents).
        """
        self._rename()
        _fsync_dir(self.path.parent)

    def _rename(self) -> None:
        temp_name, self._temp_name = self._temp_name, None
        if temp_name is None:
            raise RuntimeError(f"{self.path}: committed or discarded already")
        try:
            os.replace(temp_name, self.path)
        except BaseException:
            _remove(temp_name)
            raise

    def discard(self) -> None:
        """Remove the new contents, unless committed."""
        temp_name, self._temp_name = self._temp_name, None
        if temp_name is not None:
            _remove(temp_name)


def commit_in_order(files: Sequence[StagedFile]) -> None:
    """`StagedFile.commit` of each of *files*, in order, with one fsync per folder at the end.

    Each fsync of a folder is a commit of the file system's journal (~1-3 ms); one for all the
    renames costs one. A journaling file system (ext4, XFS) writes renames to its journal in
    the order they were made, so a crash before that fsync leaves the first few renamed, never
    a later one without an earlier one.

    Raises:
        OSError: a rename failed (that file and those after it are left as they were, their
            new contents removed), or a folder could not be flushed.
    """
    renamed: list[StagedFile] = []
    try:
        for file in files:
            file._rename()
            renamed.append(file)
    finally:
        for file in files[len(renamed) :]:
            file.discard()
        for folder in dict.fromkeys(file.path.parent for file in renamed):
            _fsync_dir(folder)


def stage_atomic(path: Path, data: bytes, mode: int = 0o600) -> StagedFile:
    """Write *data* to a temporary file beside *path* and fsync it; `StagedFile.commit` then
    puts it in place. *path* is unchanged until then.

    Raises:
        OSError: the folder is not writable or the disk is full (nothing is left behind).
    """
    folder = path.parent
    fd, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        _remove(temp_name)
        raise
    return StagedFile(path, temp_name)


def _remove(name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name)


def _fsync_dir(folder: Path) -> None:
    # The rename is durable only once the folder entry itself reaches the disk.
    dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
