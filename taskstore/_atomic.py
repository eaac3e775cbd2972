"""Atomic, durable replacement of a file: temp file, fsync, rename, fsync of the folder."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["ensure_private_dir", "write_atomic"]


def ensure_private_dir(folder: Path) -> None:
    """Create *folder* (and parents) if missing; a folder named ``.rho`` gets mode 0700."""
    folder.mkdir(parents=True, exist_ok=True)
    if folder.name == ".rho":
        folder.chmod(0o700)


def write_atomic(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Replace *path* with *data* so that a crash leaves the old or the new file, never a torn one.

    Raises:
        OSError: the folder is not writable or the disk is full; *path* is unchanged.
    """
    folder = path.parent
    fd, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name)
        raise
    _fsync_dir(folder)


def _fsync_dir(folder: Path) -> None:
    # The rename is durable only once the folder entry itself reaches the disk.
    dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
