"""One run of a stage's worker in a worktree of the mission's own: the verify, fix and resolve
stages share it.

A stage runs on the coordinator's machine, in a worktree pool of its own under
``.rho/worktrees/<mission>/checks`` (whatever executor runs the features), one stage at a time.
Its branch (``rho-mission/<m>/<stage>``) moves like a feature branch: each move is noted in the
journal first, and a branch holding commits rho did not make is refused, never reset. The
worker runs under the feature timeout; its failure is a result (an error text), a
cancellation ends its processes and propagates. The verify and fix stages get their worktree
ready as a feature's is (``--setup``, ``--copy``: ``executors._setup``); the resolve stage,
which edits conflict markers, does not.

Decision: docs/decisions/0504-verified-joins.md
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path

import anyio

from .._errors import FeatureFailedError
from ..agents._reading import UsageAsk, log_size, read_attempt, usage_place
from ..containment._folders import private_folder
from ..executors._contract import SetupStep, Worker, WorkerContext
from ..executors._local import close_pool
from ..executors._setup import SetupFor, kept_for, prepare_worktree
from ..executors._worker_call import call_worker, failure_text, note_verdict, timed_out
from ..git._leftovers import prune_stale
from ..git._pool import WorktreePool
from ..git._refs import RefHistory, branch_to_move, mission_ref_prefix
from ..git._repo import GitRepo
from ..records._clock import now_rfc3339_millis
from ..records._document import FeatureSetup, MissionDocument
from ..records._journal import Journal
from ..records._places import RHO_PATTERN, mission_worktrees
from ..records._usage import AttemptUsage
from ..setup import WorktreeSetup, read_copies

__all__ = ["StageRunner"]


class StageRunner:
    """The worktrees, branches and worker calls of one run's stages (see the module)."""

    def __init__(
        self,
        mission: MissionDocument,
        repo: GitRepo,
        journal: Journal,
        history: RefHistory,
        *,
        setup: SetupStep | None = None,
        budget_left_usd: Callable[[], float | None] = lambda: None,
    ) -> None:
        self.mission = mission
        self.repo = repo
        self.journal = journal
        self.history = history
        self._pool: WorktreePool | None = None
        # The mission's worktree setup, and what keeps the stages' setups.
        self.setup = setup
        self._keeper: WorktreeSetup | None = None
        # What is left of the dollar budget when a stage's attempt starts: a resolver's or a
        # fix's agent is capped as a task's is ($RHO_BUDGET_LEFT_USD).
        self.budget_left_usd = budget_left_usd

    def branch(self, name: str) -> str:
        """The branch of the stage run *name* (``verify-2``, ``resolve``)."""
        return mission_ref_prefix(self.mission.id) + name

    async def acquire(self, branch: str, head: str, *, ready: str | None = None) -> Path:
        """A clean worktree on *branch*, moved to *head* (noted first, compare-and-swap).

        With *ready* (the stage's name), it gets the ``--copy`` files and the mission's setup
        first, as a feature's worktree does.

        Raises:
            RefMovedError: the branch holds commits rho did not make.
            FeatureFailedError: the setup failed (the worktree is given back).
            MissionError: git refused the worktree; a ``--copy`` file cannot be read.
        """
        pool = await anyio.to_thread.run_sync(self.pool)
        found = await anyio.to_thread.run_sync(self._branch_head, branch, head)
        if found != head:
            self.history.note(branch, head, "start")
        keeper = await anyio.to_thread.run_sync(self._setups) if ready else None
        key, keep = await kept_for(keeper, self.setup, head)
        acquire = partial(pool.acquire, branch, head, found, keep=keep)
        worktree = await anyio.to_thread.run_sync(acquire)
        if keeper is None or ready is None:
            return worktree
        asked = SetupFor(
            self.mission, self.setup, ready, head, 1, partial(self.started, ready), _unnoted
        )
        problem = await prepare_worktree(asked, worktree, keeper, key)
        if problem is not None:
            await self.release(branch, worktree)
            raise FeatureFailedError(problem)
        return worktree

    def spared(self, worktree: Path) -> tuple[str, ...]:
        """What a stage's commit in *worktree* leaves out: kept setup outputs and copies."""
        return self._keeper.spared(worktree) if self._keeper is not None else ()

    def _setups(self) -> WorktreeSetup | None:
        """The stages' setups, made on first use; None when the mission has none to run."""
        config = self.mission.config
        if self.setup is None and not config.copy_paths:
            return None
        if self._keeper is None:
            copies = read_copies(self.repo, config.copy_paths)
            self._keeper = WorktreeSetup(
                self.repo,
                tuple(config.setup_key),
                copies,
                mission=self.mission.id,
                base=self.mission.base_commit,
            )
        return self._keeper

    async def release(self, branch: str, worktree: Path) -> None:
        """Note what the stage left on its branch (the value its next move expects), give the
        worktree back."""
        pool = self.pool()
        try:
            found = await anyio.to_thread.run_sync(self.repo.branch_commit, branch)
            if found is not None:
                self.history.note(branch, found, "end")
        finally:
            await anyio.to_thread.run_sync(pool.release, worktree)

    async def run(
        self,
        worker: Worker,
        context: WorkerContext,
        usage: tuple[UsageAsk, Callable[[AttemptUsage], None]] | None = None,
    ) -> str | None:
        """Run *worker* once on *context* under the feature timeout: None, or why it failed.

        With *usage* (what to read, and who keeps it), the run gets a ``$RHO_USAGE_FILE``, and
        what it spent is handed on when it ended, a cancellation too; a run its agent
        reported failed (``agents._verdicts``) is failed, in the agent's words.
        """
        if usage is None:
            return await self._run(worker, context)
        ask, keep = usage
        name = context.feature.id
        place = partial(usage_place, Path(self.mission.dir), name, ask)
        usage_file = await anyio.to_thread.run_sync(place)
        log_start = log_size(context.log_path)
        left = self.budget_left_usd()
        try:
            error = await self._run(
                worker, replace(context, usage_file=usage_file, budget_left_usd=left)
            )
        finally:
            with anyio.CancelScope(shield=True):
                read = partial(read_attempt, ask, usage_file, context.log_path, log_start)
                record, verdict = await anyio.to_thread.run_sync(read)
                if record is not None:
                    keep(record)
        # A run its agent reported failed is failed (the resolver's, a fix's, as a task's).
        said = f"{name} {ask.stage} attempt {ask.attempt}"
        return note_verdict(error, verdict, context.log_path, said)

    async def _run(self, worker: Worker, context: WorkerContext) -> str | None:
        timeout = self.mission.config.task_timeout
        try:
            with anyio.move_on_after(timeout) as scope:
                await call_worker(worker, context)
        except Exception as exc:  # the worker is the caller's code: it fails this stage run
            return failure_text(exc, context.log_path)
        if scope.cancelled_caught:
            return timed_out(context, timeout)
        return None

    def started(self, name: str, pgid: int) -> None:
        """Journal a process a stage started (recovery ends it after a crash)."""
        self.journal.record("process", now_rfc3339_millis(), feature_id=name, pgid=pgid)

    def pool(self) -> WorktreePool:
        """The stages' worktree pool, made on first use."""
        if self._pool is None:
            folder = mission_worktrees(self.repo.root, self.mission.id, "checks")
            self.repo.exclude(RHO_PATTERN)
            private_folder(folder.parent, self.repo.root)
            prune_stale(self.repo, folder)  # what a crashed run's stages left
            self._pool = WorktreePool(self.repo, folder, self.mission.id)
        return self._pool

    async def close(self) -> list[str]:
        """Remove the stages' worktrees (and the states of their setups); a failure is a
        warning."""
        pool, self._pool = self._pool, None
        if pool is not None and self._keeper is not None:
            for worktree in pool.worktrees:  # removed with the pool: their setups go too
                self._keeper.forget(worktree)
        return await close_pool(pool, "stage worktrees")

    def _branch_head(self, branch: str, head: str) -> str | None:
        found = self.repo.branch_commit(branch)
        return branch_to_move(
            self.repo, self.history, branch, found, head, "running the stage again"
        )


def _unnoted(record: FeatureSetup) -> None:
    """A stage's setup outcome is not a feature's: its log says it (``logs/setup-*.log``)."""
