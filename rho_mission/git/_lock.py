"""The repository-wide lock: one per repository and process, across threads and processes.

A thread lock shared by every ``GitRepo`` of one repository in this process, combined with a
file lock (``filelock``, 0600) at ``<git common dir>/rho-mission.lock`` for other processes.

Decision: docs/decisions/0702-safety-invariants.md
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import filelock

from .._errors import RepositoryLockTimeoutError

__all__ = ["RepoLock", "repo_lock"]


class RepoLock:
    """A reentrant lock that excludes other threads of this process and other processes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._thread_lock = threading.RLock()
        # The thread lock already serialises threads; the file lock counts nested holds itself.
        self._file_lock = filelock.FileLock(path, mode=0o600, thread_local=False)

    @contextlib.contextmanager
    def hold(self, timeout: float | None) -> Iterator[None]:
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._thread_lock.acquire(timeout=_remaining(deadline)):
            raise RepositoryLockTimeoutError(str(self.path), timeout or 0.0)
        try:
            try:
                self._file_lock.acquire(timeout=_remaining(deadline))
            except filelock.Timeout as exc:
                raise RepositoryLockTimeoutError(str(self.path), timeout or 0.0) from exc
            try:
                yield
            finally:
                self._file_lock.release()
        finally:
            self._thread_lock.release()


def _remaining(deadline: float | None) -> float:
    return -1 if deadline is None else max(0.0, deadline - time.monotonic())


_LOCKS: dict[Path, RepoLock] = {}
_LOCKS_GUARD = threading.Lock()


def repo_lock(path: Path) -> RepoLock:
    # One lock object per repository and process, however many GitRepo objects point at it.
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(path, RepoLock(path))
