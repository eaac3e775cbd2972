"""Files under ``.rho/``, reached one folder at a time without following a link on any of them.

A task runs with the user's uid: it can swap ``.rho/missions/<id>/logs`` (or ``.rho`` itself)
for a link while rho runs. ``O_NOFOLLOW`` covers only the last component of a path, and a
check made once before a run says nothing about the next open. So every open here starts at the
*anchor* (the folder that holds ``.rho``: the user's own, trusted as it is) and walks down with
``openat``: each folder opened ``O_DIRECTORY | O_NOFOLLOW`` relative to the one before, the file
itself ``O_NOFOLLOW`` relative to the last. A link (or a file) where a folder should be fails
the open with ``ELOOP`` and names the component.

A path with no ``.rho`` folder in it (a store named by ``--store``, a Dask worker's scratch
folder) is anchored at its own folder: only the file itself is opened without following.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

__all__ = ["anchor_of", "open_beneath", "open_folder"]

_RHO = ".rho"
_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def anchor_of(path: Path) -> tuple[Path, tuple[str, ...]]:
    """The trusted folder of *path* and the components below it (the file's name last).

    The anchor is the folder holding the last ``.rho`` folder of the path; else the path's
    own folder.
    """
    parts = Path(os.path.abspath(path)).parts
    for index in range(len(parts) - 2, 0, -1):
        if parts[index] == _RHO:
            return Path(*parts[:index]), parts[index:]
    return Path(*parts[:-1]), parts[-1:]


def open_folder(path: Path, *, create: bool = False) -> int:
    """A descriptor (``O_DIRECTORY``) of folder *path*, reached without following a link.

    With *create*, missing folders below the anchor are made with mode 0700.

    Raises:
        OSError: a component is missing (``ENOENT``, without *create*), a link or not a
            folder (``ELOOP``, its path as ``filename``).
    """
    anchor, below = anchor_of(path / "_")
    return _walk(anchor, below[:-1], create)


def open_beneath(path: Path, flags: int, mode: int = 0o600, *, create_folders: bool = False) -> int:
    """``os.open(path, flags | O_NOFOLLOW | O_CLOEXEC, mode)``, every folder reached as above.

    Raises:
        OSError: as ``os.open``; ``ELOOP`` (with the component's path) for a link on the way.
    """
    anchor, below = anchor_of(path)
    folder = _walk(anchor, below[:-1], create_folders)
    try:
        flags |= os.O_NOFOLLOW | os.O_CLOEXEC
        return _open_at(folder, below[-1], flags, mode, path, "is a symbolic link")
    finally:
        os.close(folder)


def _walk(anchor: Path, names: tuple[str, ...], create: bool) -> int:
    if create:
        anchor.mkdir(mode=0o700, parents=True, exist_ok=True)  # its parents: the default mode
    fd = os.open(anchor, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    shown = anchor
    try:
        for name in names:
            shown = shown / name
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o700, dir_fd=fd)
            child = _open_at(
                fd, name, _FOLDER_FLAGS, 0, shown, "is a symbolic link or not a folder"
            )
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_at(folder: int, name: str, flags: int, mode: int, shown: Path, problem: str) -> int:
    try:
        return os.open(name, flags, mode, dir_fd=folder)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            # O_NOFOLLOW on a link fails with ELOOP; a file where a folder goes, ENOTDIR.
            raise OSError(errno.ELOOP, problem, str(shown)) from exc
        raise
