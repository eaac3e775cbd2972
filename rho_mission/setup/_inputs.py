"""What a setup starts from: the ``--copy`` files and the ``--setup-key`` paths, checked.

A ``--copy`` path names an untracked file of the user's checkout (``.env``, ``config/master.key``)
that every worktree gets before its setup. It is refused, before anything starts, when it lies
outside the repository or in ``.git``/``.rho``, when a link stands on the way to it or at it,
when it is missing or not a plain file, or when git tracks it (a tracked file is in every
worktree already). Copies are read once, with their mode, and never written into a record.

A ``--setup-key`` path names a file (or folder) of the repository whose content at a feature's
start commit is part of the setup key (a lockfile); it must exist at the mission's base.

Decision: docs/decisions/0604-setup-and-copy.md
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from .._errors import InvalidMissionError
from ..containment._folders import open_unfollowed, walk_folders

if TYPE_CHECKING:
    from ..git._repo import GitRepo
    from ..records._document import MissionConfig

__all__ = ["LITERAL_PATHS", "CopiedFile", "check_setup_inputs", "read_copies", "repository_path"]

# A copied file is a secret or a config, not a data set: larger is a mistake.
COPY_LIMIT = 1024 * 1024
# Every path given to git as itself, never as a pattern.
LITERAL_PATHS = {"GIT_LITERAL_PATHSPECS": "1"}
_RESERVED = (".git", ".rho")


@dataclass(frozen=True, slots=True)
class CopiedFile:
    """One ``--copy`` file: its repository-relative path, its bytes and its permission bits."""

    path: str
    data: bytes
    mode: int


def repository_path(root: Path, given: str, what: str) -> str:
    """*given* (absolute, or relative to *root*) as a repository-relative POSIX path.

    Raises:
        InvalidMissionError: it lies outside the repository, is the repository itself, or lies
            in ``.git`` or ``.rho``.
    """
    full = Path(os.path.normpath(root / given))
    if not full.is_relative_to(root) or full == root:
        raise InvalidMissionError(f"{what} {given}: outside the repository")
    relative = PurePosixPath(full.relative_to(root).as_posix())
    if relative.parts[0] in _RESERVED:
        raise InvalidMissionError(f"{what} {given}: in {relative.parts[0]}, rho's or git's own")
    return str(relative)


def check_setup_inputs(repo: GitRepo, config: MissionConfig, base: str) -> MissionConfig:
    """*config* with its ``copy_paths`` and ``setup_key`` made repository-relative and sorted,
    once both are checked: before a mission starts.

    Raises:
        InvalidMissionError: as ``read_copies``; a key path missing at *base*.
    """
    copies = read_copies(repo, config.copy_paths)
    keys = _check_key_paths(repo, config.setup_key, base)
    update = {"copy_paths": [copy.path for copy in copies], "setup_key": keys}
    return config.model_copy(update=update)


def read_copies(repo: GitRepo, paths: Iterable[str]) -> tuple[CopiedFile, ...]:
    """The ``--copy`` files of *repo*'s checkout, read now, sorted by path.

    Raises:
        InvalidMissionError: a path outside the repository, a link on the way or at it, a
            missing or special file, one over ``COPY_LIMIT``, or one git tracks.
    """
    names = sorted({repository_path(repo.root, path, "--copy") for path in paths})
    if not names:
        return ()
    tracked = repo.run("ls-files", "-z", "--", *names, env=LITERAL_PATHS).split("\0")
    for name in names:
        if name in tracked:
            raise InvalidMissionError(
                f"--copy {name}: tracked by git, so every worktree has it already"
            )
    return tuple(_read_copy(repo.root, name) for name in names)


def _read_copy(root: Path, name: str) -> CopiedFile:
    parts = PurePosixPath(name).parts
    top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        folder = walk_folders(top, parts[:-1])
    except FileNotFoundError as exc:
        raise InvalidMissionError(f"--copy {name}: no such file") from exc
    except OSError as exc:
        raise InvalidMissionError(
            f"--copy {name}: {_why(exc)} on the way ({exc.filename})"
        ) from exc
    finally:
        os.close(top)
    try:
        fd = open_unfollowed(parts[-1], os.O_RDONLY | os.O_NONBLOCK, dir_fd=folder)
    except FileNotFoundError as exc:
        raise InvalidMissionError(f"--copy {name}: no such file") from exc
    except OSError as exc:
        raise InvalidMissionError(f"--copy {name}: {_why(exc)}") from exc
    finally:
        os.close(folder)
    found = os.fstat(fd)
    if not stat.S_ISREG(found.st_mode):
        os.close(fd)
        raise InvalidMissionError(f"--copy {name}: not a plain file")
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(COPY_LIMIT + 1)  # what it holds now, not what fstat said
    if len(data) > COPY_LIMIT:
        raise InvalidMissionError(f"--copy {name}: larger than {COPY_LIMIT // 1024} KiB")
    return CopiedFile(name, data, stat.S_IMODE(found.st_mode))


def _why(exc: OSError) -> str:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return "a symbolic link (or a file where a folder should be)"
    return exc.strerror or str(exc)


def _check_key_paths(repo: GitRepo, paths: Iterable[str], base: str) -> list[str]:
    names = sorted({repository_path(repo.root, path, "--setup-key") for path in paths})
    if not names:
        return []
    args = ("ls-tree", "-r", "-z", "--name-only", "--full-tree", base, "--", *names)
    listed = repo.run(*args, env=LITERAL_PATHS)
    found = [entry for entry in listed.split("\0") if entry]
    for name in names:
        if not any(entry == name or entry.startswith(name + "/") for entry in found):
            raise InvalidMissionError(
                f"--setup-key {name}: no such file at the mission's start commit"
            )
    return names
