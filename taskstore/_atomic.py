"""Atomic, durable replacement of a file: temp file, fsync, rename, fsync of the folder.

taskstore's one home for durable writes, and rho_mission's too (it imports ``write_atomic``,
``stage_atomic``, ``commit_in_order`` from here). ``graph`` may import neither package and
keeps its own. A reader sees the old file or the new one, never a part; a crash leaves no
temporary file that a later write would trip on (a new name each time, ``O_EXCL``).

Decision: docs/decisions/0101-task-store-file.md, docs/decisions/0510-mission-records.md
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Sequence
from pathlib import Path

from ._beneath import anchor_of, open_beneath, open_folder

__all__ = [
    "StagedFile",
    "commit_in_order",
    "ensure_private_dir",
    "ensure_private_file",
    "stage_atomic",
    "write_atomic",
]


def ensure_private_dir(folder: Path) -> None:
    """Create *folder* (and parents) if missing; a folder named ``.rho`` gets mode 0700.

    Below a ``.rho`` folder nothing is followed (``_beneath``): a link planted at ``.rho`` or
    under it is refused, never chmodded or written through.

    Raises:
        OSError: a component is a link or not a folder (``ELOOP``), or cannot be made.
    """
    if len(anchor_of(folder / "_")[1]) == 1:  # no .rho on the way: the caller's own folder
        folder.mkdir(parents=True, exist_ok=True)
        return
    fd = open_folder(folder, create=True)  # each new one made 0700 from the start
    try:
        if folder.name == ".rho":
            os.fchmod(fd, 0o700)  # an existing one is narrowed
    finally:
        os.close(fd)


def ensure_private_file(path: Path, mode: int = 0o600) -> None:
    """Create *path* empty with *mode* under any umask, or narrow it to *mode* if it exists.

    A file of another user is left as it is (only its owner may change its mode); a symbolic
    link in its place, or on the way below ``.rho``, is refused rather than followed.

    Raises:
        OSError: the folder is not writable, or *path* is a symbolic link or a folder.
    """
    try:
        fd = open_beneath(path, os.O_RDONLY | os.O_CREAT, mode)
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

    `commit` puts them in place; `discard` removes them (nothing once committed). The folder
    is held open from staging to the end: the rename and the fsync happen in that folder even
    if a link has replaced its path meanwhile.
    """

    def __init__(self, path: Path, folder_fd: int, temp_name: str) -> None:
        self.path = path
        self._folder_fd = folder_fd
        self._temp_name: str | None = temp_name

    @property
    def folder_fd(self) -> int:
        """The descriptor of the folder the file is staged in (-1 once committed or discarded):
        for a caller that must act in that same folder (``os.dup`` it to keep it longer)."""
        return self._folder_fd

    def commit(self) -> None:
        """Rename the new contents over the file, then fsync the folder.

        Raises:
            OSError: the rename failed (the new contents are removed; the file is unchanged),
                or the folder could not be flushed (the file may hold the new contents).
        """
        try:
            self._rename()
            _fsync_dir(self.path.parent, self._folder_fd)
        finally:
            self._close()

    def _rename(self) -> None:
        temp_name, self._temp_name = self._temp_name, None
        if temp_name is None:
            raise RuntimeError(f"{self.path}: committed or discarded already")
        fd = self._folder_fd
        try:
            os.replace(temp_name, self.path.name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            _remove(fd, temp_name)
            raise

    def discard(self) -> None:
        """Remove the new contents, unless committed."""
        temp_name, self._temp_name = self._temp_name, None
        if temp_name is not None:
            _remove(self._folder_fd, temp_name)
        self._close()

    def _close(self) -> None:
        fd, self._folder_fd = self._folder_fd, -1
        if fd >= 0:
            os.close(fd)


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
        folders: dict[Path, int] = {}
        for file in renamed:
            folders.setdefault(file.path.parent, file._folder_fd)
        try:
            for folder, fd in folders.items():
                _fsync_dir(folder, fd)
        finally:
            for file in renamed:
                file._close()


def stage_atomic(path: Path, data: bytes, mode: int = 0o600) -> StagedFile:
    """Write *data* to a temporary file beside *path* and fsync it; `StagedFile.commit` then
    puts it in place. *path* is unchanged until then.

    Raises:
        OSError: the folder is not writable or the disk is full (nothing is left behind), or
            a link stands on the way below ``.rho`` (``ELOOP``).
    """
    folder = open_folder(path.parent)
    try:
        temp_name, fd = _create_temp(folder, path.name, mode)
    except BaseException:
        os.close(folder)
        raise
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        _remove(folder, temp_name)
        os.close(folder)
        raise
    return StagedFile(path, folder, temp_name)


def _create_temp(folder: int, name: str, mode: int) -> tuple[str, int]:
    # mkstemp's contract (a new name, O_EXCL, never a link followed), relative to a folder fd.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(100):
        # os.urandom, not secrets: importing secrets (hmac, random) costs agents' writes ~5 ms.
        temp_name = f".{name}.{os.urandom(4).hex()}.tmp"
        try:
            return temp_name, os.open(temp_name, flags, mode, dir_fd=folder)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary name", name)


def _remove(folder: int, name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=folder)


def _fsync_dir(folder: Path, fd: int) -> None:
    # The rename is durable only once the folder entry itself reaches the disk. *folder* names
    # it for those who watch; *fd* is what was renamed in.
    os.fsync(fd)
