"""The run lock of a mission: held by the one process that runs it, wherever its folder is.

``<git common dir>/rho-mission-<id>.lock`` (a ``filelock``, 0600): keyed by the mission id, so a
copy of the mission folder (``resume COPY_DIR``) shares it with the original, as it shares its
branches. Whether a mission is alive is whether its lock is held: the operating system drops
the lock of a process that dies, however it dies.

Decision: docs/decisions/0702-safety-invariants.md
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..containment._folders import open_unfollowed

if TYPE_CHECKING:
    from filelock import FileLock

    from ._repo import GitRepo

__all__ = ["is_running", "is_running_in", "run_lock"]


def run_lock(repo: GitRepo, mission_id: str) -> FileLock:
    """The run lock of mission *mission_id* in *repo* (not yet acquired)."""
    from filelock import FileLock  # here: ``rho mission show`` only asks whether it is held

    return FileLock(str(repo.common_dir / f"rho-mission-{mission_id}.lock"), mode=0o600)


def is_running(repo: GitRepo, mission_id: str) -> bool:
    """Whether some process holds the run lock of *mission_id* (this one included)."""
    return is_running_in(repo.common_dir, mission_id)


def is_running_in(common_dir: Path, mission_id: str) -> bool:
    """``is_running`` for the repository whose git common dir is *common_dir* (another clone
    sharing a task store): a lock file that is not there was never held, and none is made."""
    path = common_dir / f"rho-mission-{mission_id}.lock"
    if not path.is_file():
        return False
    # What FileLock.acquire(timeout=0) does on POSIX, without importing filelock: flock on a
    # descriptor of its own, so a lock this process holds through another counts as held.
    fd = open_unfollowed(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # also lets go of a lock this probe took
    return False
