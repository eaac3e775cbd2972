"""``rho worktrees list``: the shared pool's worktrees, each with its setup, size and last use.

Decision: docs/decisions/0604-setup-and-copy.md
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..git._shared_pool import pooled_worktrees
from ..records._places import pool_folder
from ._state import read_state

if TYPE_CHECKING:
    from ..git._repo import GitRepo

__all__ = ["PooledWorktree", "pool_listing"]


@dataclass(frozen=True, slots=True)
class PooledWorktree:
    """One worktree of the pool: its name, who holds it, its setup key (first 16 hex digits;
    None: no setup kept), the one mission its setup serves (it ran on that mission's tasks'
    work; None: any mission), its kept outputs, its size on disk (bytes) and its last use."""

    name: str
    holder: str
    setup_key: str | None
    setup_mission: str | None
    outputs: tuple[str, ...]
    size: int
    last_used: str | None


def pool_listing(repo: GitRepo) -> list[PooledWorktree]:
    """Every worktree of *repo*'s shared pool, sorted by name.

    Raises:
        GitOperationError: git could not list its worktrees.
    """
    folder = pool_folder(repo.root)
    if not folder.is_dir():
        return []
    listed = []
    for path, holder in pooled_worktrees(repo, folder):
        state = read_state(repo.root, path)
        listed.append(
            PooledWorktree(
                name=path.name,
                holder=holder,
                setup_key=state.key[:16] if state is not None else None,
                setup_mission=state.mission_only if state is not None else None,
                outputs=state.outputs if state is not None else (),
                size=_disk_usage(path),
                last_used=_last_use(repo, path),
            )
        )
    return sorted(listed, key=lambda tree: tree.name)


def _disk_usage(folder: Path) -> int:
    """The bytes *folder* takes on disk (``du``), links not followed, other file systems too."""
    total = 0
    pending = [str(folder)]
    while pending:
        current = pending.pop()
        try:
            with os.scandir(current) as entries:
                for entry in entries:
                    found = entry.stat(follow_symlinks=False)
                    total += found.st_blocks * 512
                    if stat.S_ISDIR(found.st_mode):
                        pending.append(entry.path)
        except OSError:
            continue  # vanished or unreadable: counted as far as it was read
    return total


def _last_use(repo: GitRepo, worktree: Path) -> str | None:
    # When a mission last claimed it or gave it back: both rewrite its git dir's lock file.
    for candidate in (repo.common_dir / "worktrees" / worktree.name / "locked", worktree):
        try:
            when = os.lstat(candidate).st_mtime
        except OSError:
            continue
        return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return None
