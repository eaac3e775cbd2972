"""The run lock of a mission: held by the one process that runs it, wherever its folder is.

``<git common dir>/rho-mission-<id>.lock`` (a ``filelock``, 0600): keyed by the mission id, so a
copy of the mission folder (``resume COPY_DIR``) shares it with the original, as it shares its
branches. Whether a mission is alive is whether its lock is held: the operating system drops
the lock of a process that dies, however it dies.
"""

from __future__ import annotations

from pathlib import Path

from filelock import FileLock, Timeout

from ._git import GitRepo

__all__ = ["is_running", "is_running_in", "run_lock"]


def run_lock(repo: GitRepo, mission_id: str) -> FileLock:
    """The run lock of mission *mission_id* in *repo* (not yet acquired)."""
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
    lock = FileLock(str(path), mode=0o600)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return True
    lock.release()
    return False
