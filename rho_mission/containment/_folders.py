"""rho's own folders: created 0700, and never a symbolic link that would lead elsewhere.

rho creates, chmods, writes and deletes only below ``<repo>/.rho/`` (and in the git directory).
A symbolic link where rho expects one of its folders (``.rho``, ``.rho/missions/<id>``,
``.rho/worktrees/<id>``, a mission's ``logs/``) would send a ``chmod``, a rewrite or an
``rmtree`` to whatever it points at, so every component from the anchor down is checked with
``lstat`` (never followed) before it is used, and a link is refused with ``UnsafePathError``.

The one home of rho_mission's file openers (``open_private``, ``open_unfollowed``) and of the
replacement of a file by rename in a folder rho trusts (``replace_unfollowed``, for git's own
directories); durable atomic writes under ``.rho`` are ``taskstore.write_atomic``, and digests
``graph.sha256_hex``: rho_mission keeps no copy of either.

Decision: docs/decisions/0702-safety-invariants.md
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from taskstore import open_beneath

from .._errors import UnsafePathError

__all__ = [
    "FileIdentity",
    "check_own_folder",
    "file_identity",
    "folder_anchor",
    "open_private",
    "open_unfollowed",
    "private_folder",
    "remove_tree",
    "remove_tree_at",
    "replace_unfollowed",
    "walk_folders",
]

# Device, inode, size, modification and change times: any write changes the change time,
# which no user can set back.
FileIdentity = tuple[int, int, int, int, int]


def file_identity(found: os.stat_result) -> FileIdentity:
    """The identity of the file *found* describes: equal while nobody wrote or replaced it."""
    return (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)


def folder_anchor(folder: Path, root: Path) -> Path:
    """Where the link checks of rho's *folder* start: the repository *root* when the folder
    lies below it (every component from there is rho's to check), else the folder's parent
    (a folder the user put elsewhere: what holds it is the user's)."""
    folder = Path(os.path.abspath(folder))
    return root if folder.is_relative_to(root) else folder.parent


def private_folder(path: Path, anchor: Path) -> Path:
    """Create *path* and the folders between *anchor* and it, each a real folder with mode 0700.

    *anchor* (the repository root, or a folder the caller chose) is trusted as it is, and
    created if missing; every component below it must be a real folder or missing (then it is
    created).

    Raises:
        UnsafePathError: a component is a symbolic link or not a folder.
    """
    anchor.mkdir(parents=True, exist_ok=True)
    for folder in _components(path, anchor):
        # Looked at first, made only when missing: most calls find every folder in place.
        mode = _mode_unfollowed(folder)
        if mode is None:
            with contextlib.suppress(FileExistsError):
                os.mkdir(folder, 0o700)
            mode = _mode_unfollowed(folder)
        if stat.S_IMODE(_require_folder_mode(folder, mode)) != 0o700:
            os.chmod(folder, 0o700, follow_symlinks=False)
    return path


def open_private(path: Path, flags: int) -> int:
    """Open *path* (mode 0600, missing folders made 0700), following no link below ``.rho``.

    ``taskstore.open_beneath``, at every open: a task may have swapped a folder of the mission
    (``logs/``, ``prompts/``) for a link since the last one.

    Raises:
        UnsafePathError: a link (or a file) stands at *path* or on the way to it below ``.rho``.
    """
    try:
        return open_beneath(path, flags, 0o600, create_folders=True)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePathError(exc.filename or path, "is a symbolic link") from exc
        raise


def open_unfollowed(
    path: Path | str, flags: int, mode: int = 0o600, *, dir_fd: int | None = None
) -> int:
    """``os.open`` of *path* that never follows a link there and is never inherited by a child.

    For the files whose folder rho trusts but whose name a task could have replaced by a link:
    the locks in git's common directory, a worktree's git directory and ``.git`` file, a log
    below a checked folder, a planner's plan. Below ``.rho``, where any folder may have been
    swapped, `open_private` checks every component instead.

    Raises:
        OSError: as ``os.open`` (``ELOOP`` for a link at *path*).
    """
    return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)


def replace_unfollowed(folder: Path, name: str, data: bytes, mode: int = 0o644) -> None:
    """Replace the file *name* in *folder* by *data*: written to a new file there, renamed over.

    For files in a folder rho trusts whose name a task could have replaced by a link (a
    worktree's ``HEAD``, ``locked`` or index in its pinned git dir): a link at *name* is
    replaced, never followed, and so is a link a task planted at the temporary name. Not
    fsynced: git's own files, which git writes the same way.

    Raises:
        OSError: the file could not be written or renamed.
    """
    temporary = folder / f".{name}.rho-{os.getpid()}.tmp"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temporary)
    fd = open_unfollowed(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.replace(temporary, folder / name)


def walk_folders(top: int, names: Sequence[str]) -> int:
    """A new descriptor of the folder reached from the folder *top* through *names*, each
    opened ``O_DIRECTORY | O_NOFOLLOW`` from the one before (*top* stays open).

    Raises:
        OSError: a name is missing, a link or not a folder (``ELOOP``, ``ENOTDIR``); its
            ``filename`` is that name.
    """
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    folder = os.dup(top)
    try:
        for name in names:
            try:
                child = os.open(name, flags, dir_fd=folder)
            except OSError as exc:
                exc.filename = name
                raise
            os.close(folder)
            folder = child
    except BaseException:
        os.close(folder)
        raise
    return folder


def remove_tree(path: Path, *, writable: bool = False) -> None:
    """Remove *path* and everything below it, as `remove_tree_at` does; *path*'s own folder is
    trusted (the caller's), *path* itself may be anything a task left.

    Raises:
        OSError: as `remove_tree_at`.
    """
    try:
        parent = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return  # nothing there: nothing to remove
    try:
        remove_tree_at(parent, path.name, writable=writable)
    finally:
        os.close(parent)


def remove_tree_at(folder: int, name: str, *, writable: bool = False) -> None:
    """Remove *name* in the folder *folder* and everything below it, by descriptor; with
    *writable*, each folder is given its write bit back (through its own descriptor) before it
    is emptied: a task may have taken it.

    Unlike ``shutil.rmtree``, it does not recurse: a task can leave a tree thousands of
    folders deep (rmtree raised RecursionError on 3,000), and every folder is opened
    ``O_NOFOLLOW`` from its parent's descriptor, so a link (left, or swapped in meanwhile) is
    unlinked, never followed. A link or a file at *name* is unlinked; nothing missing is fine.

    Raises:
        OSError: a part could not be removed (a task made it unwritable, a process still adds
            to it, too many open folders); what was removed stays removed.
    """
    try:
        if not stat.S_ISDIR(os.lstat(name, dir_fd=folder).st_mode):
            os.unlink(name, dir_fd=folder)
            return
    except FileNotFoundError:
        return
    stack = [_Level(folder, name, writable)]
    try:
        while stack:
            below = stack[-1].next_folder()
            if below is None:
                stack.pop().remove()
            else:
                stack.append(_Level(stack[-1].fd, below, writable))
    finally:
        for level in stack:
            os.close(level.fd)


class _Level:
    """One open folder of `remove_tree_at`'s walk: its files unlinked on the first look,
    its folders then handed out one at a time."""

    def __init__(self, parent: int, name: str, writable: bool) -> None:
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        self.parent, self.name = parent, name
        self.fd = os.open(name, flags, dir_fd=parent)
        if writable:
            os.fchmod(self.fd, 0o700)
        self.folders: list[str] | None = None

    def next_folder(self) -> str | None:
        if self.folders is None:
            self.folders = []
            with os.scandir(self.fd) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        self.folders.append(entry.name)
                    else:
                        os.unlink(entry.name, dir_fd=self.fd)
        return self.folders.pop() if self.folders else None

    def remove(self) -> None:
        os.close(self.fd)
        os.rmdir(self.name, dir_fd=self.parent)


def check_own_folder(path: Path, anchor: Path) -> bool:
    """Return whether *path* exists, having checked every existing component below *anchor*.

    Raises:
        UnsafePathError: a component is a symbolic link or not a folder.
    """
    for folder in _components(path, anchor):
        if not os.path.lexists(folder):
            return False
        _require_real_folder(folder)
    return True


def _components(path: Path, anchor: Path) -> list[str]:
    # The folders from below *anchor* down to *path*, as strings: walked at every open of a
    # mission's files, where pathlib's parsing of each step cost more than its lstat.
    top, below = os.path.abspath(anchor), os.path.abspath(path)
    if below == top:
        return []
    prefix = top if top.endswith(os.sep) else top + os.sep
    if not below.startswith(prefix):
        raise ValueError(f"{below!r} is not in the subpath of {top!r}")
    folders, current = [], top
    for name in below[len(prefix) :].split(os.sep):
        current = os.path.join(current, name)
        folders.append(current)
    return folders


def _mode_unfollowed(folder: str) -> int | None:
    try:
        return os.lstat(folder).st_mode
    except FileNotFoundError:
        return None


def _require_real_folder(folder: str) -> None:
    _require_folder_mode(folder, os.lstat(folder).st_mode)


def _require_folder_mode(folder: str, mode: int | None) -> int:
    # The mode of a real folder; a link or anything else is refused.
    if mode is None:
        raise FileNotFoundError(2, "No such file or directory", str(folder))
    if stat.S_ISLNK(mode):
        raise UnsafePathError(folder, "is a symbolic link")
    if not stat.S_ISDIR(mode):
        raise UnsafePathError(folder, "is not a folder")
    return mode
