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

taskstore's one home of this walk, and rho_mission's (``containment._folders.open_private``
wraps it).

Decision: docs/decisions/0701-threat-model.md, docs/decisions/0510-mission-records.md
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
    anchor, below = _split(os.path.abspath(path))
    return Path(anchor), below


def _split(absolute: str) -> tuple[str, tuple[str, ...]]:
    # anchor_of on strings: called at every open below .rho, where pathlib's parsing of each
    # intermediate path cost more than the opens themselves.
    marker = f"{os.sep}{_RHO}{os.sep}"
    at = absolute.rfind(marker)
    if at < 0:
        head, _, name = absolute.rpartition(os.sep)
        return head or os.sep, (name,)
    return absolute[:at] or os.sep, tuple(absolute[at + 1 :].split(os.sep))


def open_folder(path: Path, *, create: bool = False) -> int:
    """A descriptor (``O_DIRECTORY``) of folder *path*, reached without following a link.

    With *create*, missing folders below the anchor are made with mode 0700.

    Raises:
        OSError: a component is missing (``ENOENT``, without *create*), a link or not a
            folder (``ELOOP``, its path as ``filename``).
    """
    anchor, below = _split(os.path.join(os.path.abspath(path), "_"))
    return _walk(anchor, below[:-1], create)


def open_beneath(path: Path, flags: int, mode: int = 0o600, *, create_folders: bool = False) -> int:
    """``os.open(path, flags | O_NOFOLLOW | O_CLOEXEC, mode)``, every folder reached as above.

    Raises:
        OSError: as ``os.open``; ``ELOOP`` (with the component's path) for a link on the way.
    """
    anchor, below = _split(os.path.abspath(path))
    folder = _walk(anchor, below[:-1], create_folders)
    try:
        flags |= os.O_NOFOLLOW | os.O_CLOEXEC
        return _open_at(folder, below[-1], flags, mode, below, anchor, "is a symbolic link")
    finally:
        os.close(folder)


def _walk(anchor: str, names: tuple[str, ...], create: bool) -> int:
    # Each folder is opened first and made only when missing: at every open of a journal or a
    # log all of them exist, and a mkdir that fails costs a raised exception each.
    try:
        fd = os.open(anchor, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        if not create:
            raise
        Path(anchor).mkdir(mode=0o700, parents=True, exist_ok=True)  # its parents: the default
        fd = os.open(anchor, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for index, name in enumerate(names):
            child = _open_child(fd, name, create, anchor, names[: index + 1])
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_child(fd: int, name: str, create: bool, anchor: str, shown: tuple[str, ...]) -> int:
    problem = "is a symbolic link or not a folder"
    try:
        return _open_at(fd, name, _FOLDER_FLAGS, 0, shown, anchor, problem)
    except FileNotFoundError:
        if not create:
            raise
    with contextlib.suppress(FileExistsError):  # made meanwhile by another writer
        os.mkdir(name, 0o700, dir_fd=fd)
    return _open_at(fd, name, _FOLDER_FLAGS, 0, shown, anchor, problem)


def _open_at(
    folder: int,
    name: str,
    flags: int,
    mode: int,
    shown: tuple[str, ...],
    anchor: str,
    problem: str,
) -> int:
    try:
        return os.open(name, flags, mode, dir_fd=folder)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            # O_NOFOLLOW on a link fails with ELOOP; a file where a folder goes, ENOTDIR.
            raise OSError(errno.ELOOP, problem, os.path.join(anchor, *shown)) from exc
        raise
