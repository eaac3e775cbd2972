"""One attempt of one feature in a worktree pool: acquire, run the worker, commit, release.

Shared by the local executor (the pool of the user's repository) and the Dask executor's remote
side (the pool of a worker's cache clone). A failure of the worker or of git is a result (an
error text); a cancellation releases the worktree and propagates.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from .._errors import MissionError
from .._git import CommitResult, GitRepo
from .._models import Feature, Handoff
from .._seam import Attempt, AttemptResult, WorkerContext
from .._workers import call_worker, failure_text
from .._worktrees import WorktreePool

__all__ = ["attempt_in_pool", "deadline"]


def deadline(seconds: float | None) -> anyio.CancelScope:
    """A scope that ends its work after *seconds* (None: never)."""
    return anyio.move_on_after(seconds) if seconds is not None else anyio.CancelScope()


async def attempt_in_pool(repo: GitRepo, pool: WorktreePool, attempt: Attempt) -> AttemptResult:
    """Run *attempt* in a worktree of *pool*, its branch moved by compare-and-swap.

    The result's ``branch_head`` is what the feature branch's next move must find: unchanged
    when no worktree could be had, else what the branch holds after the attempt.
    """
    feature = attempt.feature
    branch = _branch(feature)
    head = attempt.base_commit
    if attempt.branch_head != head:
        # Whatever happens next, the branch may now hold *head*: the check of its next move
        # must accept it (a failed move leaves the old value, known already).
        attempt.note_ref(branch, head, "start")
    try:
        worktree = await anyio.to_thread.run_sync(pool.acquire, branch, head, attempt.branch_head)
    except MissionError as exc:
        return AttemptResult(error=str(exc), branch_head=attempt.branch_head)
    found: str | None = head
    try:
        outcome = await _work(repo, worktree, attempt)
    finally:
        with anyio.CancelScope(shield=True):
            found = await _settle(repo, branch, head, attempt)
            await anyio.to_thread.run_sync(pool.release, worktree)
    if isinstance(outcome, Handoff):
        return AttemptResult(handoff=outcome, branch_head=found)
    return AttemptResult(error=outcome, branch_head=found)


def _branch(feature: Feature) -> str:
    assert feature.branch is not None  # given by Mission.add_feature
    return feature.branch


async def _work(repo: GitRepo, worktree: Path, attempt: Attempt) -> Handoff | str:
    """Run the worker, then commit what it left: its handoff, or the error text."""
    timeout = attempt.mission.config.task_timeout
    context = WorkerContext(
        mission=attempt.mission,
        feature=attempt.feature,
        worktree=worktree,
        base_commit=attempt.base_commit,
        attempt=attempt.number,
        log_path=attempt.log_path,
        on_process_start=attempt.on_process_start,
    )
    try:
        try:
            with deadline(timeout) as scope:
                handoff = await call_worker(attempt.worker, context)
        except Exception as exc:  # the worker is the caller's code: it fails its feature
            return failure_text(exc, attempt.log_path)
        if scope.cancelled_caught:
            return f"timed out after {timeout:g}s"
        committed = await _commit(repo, worktree, attempt)
    except MissionError as exc:  # committing what the worker left: git refused
        return str(exc)
    if handoff is None:
        return committed
    # The worker's words, git's facts: what it left uncommitted is committed too.
    summary = handoff.summary or committed.summary
    return committed.model_copy(update={"summary": summary, "tests_passed": handoff.tests_passed})


async def _commit(repo: GitRepo, worktree: Path, attempt: Attempt) -> Handoff:
    feature = attempt.feature
    message = f"rho-mission {attempt.mission.id}: {feature.id} {feature.description}".strip()

    def commit() -> CommitResult:
        return repo.commit_all(worktree, message, base=attempt.base_commit, branch=feature.branch)

    result = await anyio.to_thread.run_sync(commit)
    count = len(result.files_changed)
    return Handoff(
        commit_id=result.commit_id,
        files_changed=result.files_changed,
        summary=f"{count} file(s) changed" if count else "no changes",
    )


async def _settle(repo: GitRepo, branch: str, head: str, attempt: Attempt) -> str | None:
    """Note what the attempt left on the feature branch: the value its next move expects."""
    try:
        found = await anyio.to_thread.run_sync(repo.branch_commit, branch)
    except MissionError:
        return head  # unknown stays as last known: the next move is refused rather than blind
    if found is not None:
        attempt.note_ref(branch, found, "end")
    return found
