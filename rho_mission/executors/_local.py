"""The default executor: each attempt in a worktree of a pool on this machine.

Decision: docs/decisions/0503-executors.md, docs/decisions/0601-worktree-pool.md
"""

from __future__ import annotations

from pathlib import Path

import anyio

from .._errors import MissionError
from ..agents import left_by
from ..containment._folders import private_folder
from ..git._leftovers import prune_stale
from ..git._pool import WorktreePool
from ..git._repo import GitRepo
from ..git._shared_pool import pool_limit, prune_pool
from ..records._document import MissionDocument
from ..records._places import RHO_PATTERN, pool_folder, worktrees_folder
from ..setup import WorktreeSetup, read_copies
from ._attempt import attempt_in_pool
from ._contract import Attempt, AttemptResult

__all__ = ["LocalExecutor", "close_pool"]


class LocalExecutor:
    """Runs features in worktrees of this machine (the default).

    Worktrees are pooled: a wave's next feature reuses an idle, healthy worktree of the pool.
    The pool is the repository's shared one, ``<repo>/.rho/worktrees/pool/``: ``close`` gives
    its worktrees back for the next mission (up to ``$RHO_WORKTREE_POOL``, default 8; see
    ``git._worktrees``). A mission that keeps its worktrees (``keep_worktrees``) has a pool of its
    own under ``<repo>/.rho/worktrees/<mission>/``, left in place for the user.

    It runs a mission's worktree setup (``supports_setup``): the ``--copy`` files are read
    once at ``open``, and each pooled worktree keeps its setup's outputs while its key holds.
    """

    supports_setup = True

    def __init__(self) -> None:
        self._repo: GitRepo | None = None
        self._pool: WorktreePool | None = None
        self._setup: WorktreeSetup | None = None

    async def open(self, mission: MissionDocument) -> None:
        """Create the pool's folder (0700, never through a link) and prune stale worktrees.

        Raises:
            InvalidMissionError: a ``--copy`` file can no longer be copied (see
                ``setup.read_copies``).
            UnsafePathError: a symbolic link stands where the folder goes.
            GitOperationError: git refused to prune.
        """
        repo = GitRepo.open(Path(mission.repo))
        config = mission.config
        copies = read_copies(repo, config.copy_paths)  # checked again: the checkout may change
        self._setup = WorktreeSetup(
            repo, tuple(config.setup_key), copies, mission=mission.id, base=mission.base_commit
        )
        worktrees = worktrees_folder(repo.root)
        folder = worktrees / mission.id
        repo.exclude(RHO_PATTERN)
        for pattern in left_by(config.agent, config.resolve_agent):
            repo.exclude(pattern)  # an agent's own files (aider's histories) are no work
        private_folder(worktrees, repo.root)
        prune_stale(repo, folder)  # a crashed run's own pool (kept worktrees, or older rho)
        keep = mission.config.keep_worktrees
        limit = pool_limit()
        self._repo = repo
        if keep or limit == 0:
            self._pool = WorktreePool(repo, folder, mission.id, keep=keep)
            return
        shared = pool_folder(repo.root)
        prune_pool(repo, shared)  # what a crashed holder left there
        self._pool = WorktreePool(repo, shared, mission.id, shared=True, limit=limit)

    async def prepare_wave(self, head: str) -> None:
        """Nothing to do: the head is in this repository already."""

    async def run_attempt(self, attempt: Attempt) -> AttemptResult:
        """Run *attempt* in a pooled worktree of the user's repository."""
        if self._repo is None or self._pool is None:
            raise RuntimeError("LocalExecutor.run_attempt before open()")
        return await attempt_in_pool(self._repo, self._pool, attempt, self._setup)

    async def close(self) -> list[str]:
        """Remove the pool's worktrees (kept ones stay); a failure is a warning."""
        pool, self._pool = self._pool, None
        return await close_pool(pool, "worktrees")


async def close_pool(pool: WorktreePool | None, what: str) -> list[str]:
    """Close *pool* (None: nothing to do); a failure is a warning naming *what* it held."""
    if pool is None:
        return []
    try:
        await anyio.to_thread.run_sync(pool.close)
    except MissionError as exc:
        return [f"{what} not removed: {exc}"]
    return []
