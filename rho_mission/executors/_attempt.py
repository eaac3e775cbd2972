"""One attempt of one feature in a worktree pool: acquire, run the worker, commit, release.

Shared by the local executor (the pool of the user's repository) and the Dask executor's remote
side (the pool of a worker's cache clone). A failure of the worker or of git is a result (an
error text); a cancellation releases the worktree and propagates. Work whose own commits (the
worker's, not rho's) hold a ``--copy`` file is such a failure: no commit rho lands carries one
(``setup._carried``). So is a run whose agent reported a failure (``agents._verdicts``: an
agent may exit 0 having failed), and, under ``require_changes``, one that changed nothing.

Decision: docs/decisions/0503-executors.md, docs/decisions/0602-git-per-feature.md
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import NamedTuple

import anyio

from .._errors import FeatureResultError, MissionError, RefMovedError
from ..agents._reading import UsageAsk, log_size, read_attempt, usage_ask, usage_place
from ..agents._verdicts import Verdict
from ..git._commit import WorktreeResult, commit_worktree
from ..git._pool import KeptOutputs, WorktreePool
from ..git._repo import GitRepo
from ..records._document import Feature, Handoff
from ..records._usage import AttemptUsage
from ..setup import WorktreeSetup, refuse_carried
from ._contract import Attempt, AttemptResult, WorkerContext
from ._setup import for_attempt, kept_for, prepare_worktree
from ._shell import write_task_prompt
from ._worker_call import call_worker, failure_text, note_line, note_verdict, timed_out

__all__ = ["attempt_in_pool"]


async def attempt_in_pool(
    repo: GitRepo, pool: WorktreePool, attempt: Attempt, setup: WorktreeSetup | None = None
) -> AttemptResult:
    """Run *attempt* in a worktree of *pool*, its branch moved by compare-and-swap.

    With *setup* (the pool's setups: ``rho_mission.setup``), the ``--copy`` files are written
    into the worktree first and the attempt's setup runs there unless its key holds; a failed
    setup is the attempt's error, and the worker does not run.

    The result's ``branch_head`` is what the feature branch's next move must find: unchanged
    when no worktree could be had (or the start commit, when the branch got there before git
    failed), else what the branch holds after the attempt: known from the commit step, read
    from git only when the worker failed or left the branch without new work.
    """
    feature = attempt.feature
    branch = _branch(feature)
    head = attempt.base_commit
    if attempt.branch_head != head:
        # Whatever happens next, the branch may now hold *head*: the check of its next move
        # must accept it (a failed move leaves the old value, known already).
        attempt.note_ref(branch, head, "start")
    ask = usage_ask(attempt.mission.config, "task", attempt.number, attempt.mission.config.agent)
    try:
        key, keep = await kept_for(setup, attempt.setup, head)
        acquire = partial(_acquire, pool, branch, head, attempt, ask, keep)
        worktree, usage_file = await anyio.to_thread.run_sync(acquire)
    except RefMovedError as exc:
        return AttemptResult(error=str(exc), branch_head=attempt.branch_head)
    except MissionError as exc:
        found = await _after_failed_start(repo, branch, head, attempt)
        return AttemptResult(error=str(exc), branch_head=found)
    result: WorktreeResult | None = None
    log_start = log_size(attempt.log_path)
    try:
        problem = None
        if setup is not None and (key is not None or setup.copies):
            problem = await prepare_worktree(for_attempt(attempt), worktree, setup, key)
        if problem is not None:
            outcome: Handoff | str = problem
        else:
            spared = setup.spared(worktree) if setup is not None else ()
            copied = tuple(copy.path for copy in setup.copies) if setup is not None else ()
            kept_out = _KeptOut(spared, copied)
            outcome, result = await _work(repo, pool, worktree, attempt, usage_file, kept_out)
    finally:
        with anyio.CancelScope(shield=True):
            found = await _settle(repo, branch, head, attempt, result)
            spotless = result is not None and result.spotless
            left_at = result.branch_head if result is not None else None  # the worktree's HEAD
            release = partial(pool.release, worktree, spotless=spotless, head=left_at)
            read = partial(read_attempt, ask, usage_file, attempt.log_path, log_start)
            usage, verdict = await anyio.to_thread.run_sync(_read_then_release, read, release)
            if usage is not None:
                attempt.note_usage(usage)
    outcome = _judged(attempt, outcome, verdict)
    if isinstance(outcome, Handoff):
        return AttemptResult(handoff=outcome, branch_head=found)
    return AttemptResult(error=outcome, branch_head=found)


def _judged(attempt: Attempt, outcome: Handoff | str, verdict: Verdict) -> Handoff | str:
    """*outcome* as the agent's own verdict and ``require_changes`` leave it: a run its agent
    reported failed is failed, in the agent's words, whatever its exit code; one that changed
    nothing is failed under ``require_changes``. Each reason is also a line of its log."""
    said = f"{attempt.feature.id} attempt {attempt.number}"
    error = None if isinstance(outcome, Handoff) else outcome
    error = note_verdict(error, verdict, attempt.log_path, said)
    if error is not None:
        return error
    assert isinstance(outcome, Handoff)  # no error before, none from its agent
    if outcome.files_changed or not attempt.mission.config.require_changes:
        return outcome
    error = "the agent changed nothing (--require-changes; --no-require-changes allows it)"
    note_line(attempt.log_path, f"{said} failed: {error}")
    return error


def _acquire(
    pool: WorktreePool,
    branch: str,
    head: str,
    attempt: Attempt,
    ask: UsageAsk,
    keep: KeptOutputs | None,
) -> tuple[Path, Path | None]:
    # The worktree, then the attempt's usage folder: one worker thread's round trip for both,
    # paid by every attempt.
    worktree = pool.acquire(branch, head, attempt.branch_head, keep=keep)
    return worktree, usage_place(Path(attempt.mission.dir), attempt.feature.id, ask)


def _read_then_release(
    read: Callable[[], tuple[AttemptUsage | None, Verdict]], release: Callable[[], object]
) -> tuple[AttemptUsage | None, Verdict]:
    """What the attempt spent (its usage file, else its output), then the worktree given
    back: one round trip to a worker thread for both; the worktree is given back whatever the
    reading raised."""
    try:
        return read()
    finally:
        release()


class _KeptOut(NamedTuple):
    """What stays out of a feature's work: *spared* paths rho's commit never stages (kept
    setup outputs and copies), *copied* paths no commit of the feature may hold."""

    spared: tuple[str, ...]
    copied: tuple[str, ...]


def _branch(feature: Feature) -> str:
    assert feature.branch is not None  # given by Mission.add_feature
    return feature.branch


async def _work(
    repo: GitRepo,
    pool: WorktreePool,
    worktree: Path,
    attempt: Attempt,
    usage_file: Path | None,
    kept_out: _KeptOut,
) -> tuple[Handoff | str, WorktreeResult | None]:
    """Run the worker, then commit what it left: its handoff, or the error text; and what the
    commit step found (None when it did not run or failed)."""
    timeout = attempt.mission.config.task_timeout
    context = WorkerContext(
        mission=attempt.mission,
        feature=attempt.feature,
        worktree=worktree,
        base_commit=attempt.base_commit,
        attempt=attempt.number,
        log_path=attempt.log_path,
        on_process_start=attempt.on_process_start,
        replay=attempt.replay,
        verify_log=attempt.verify_log,
        usage_file=usage_file,
        budget_left_usd=attempt.budget_left_usd,
    )
    try:
        context.prompt_file = write_task_prompt(context)  # every worker's, a Python one's too
        await attempt.ready()  # the feature's start is in the task store before its worker runs
        try:
            with anyio.move_on_after(timeout) as scope:  # None: no limit
                handoff = await call_worker(attempt.worker, context)
        except Exception as exc:  # the worker is the caller's code: it fails its feature
            return failure_text(exc, attempt.log_path), None
        if scope.cancelled_caught:
            return timed_out(context, timeout), None
        committed, result = await _commit(repo, pool, worktree, attempt, kept_out)
    except MissionError as exc:  # committing what the worker left: git refused
        return str(exc), None
    if handoff is None:
        return committed, result
    # The worker's words, git's facts: what it left uncommitted is committed too.
    summary = handoff.summary or committed.summary
    update = {"summary": summary, "tests_passed": handoff.tests_passed}
    return committed.model_copy(update=update), result


async def _commit(
    repo: GitRepo, pool: WorktreePool, worktree: Path, attempt: Attempt, kept_out: _KeptOut
) -> tuple[Handoff, WorktreeResult]:
    feature = attempt.feature
    message = f"rho-mission {attempt.mission.id}: {feature.id} {feature.subject}".strip()

    def commit() -> WorktreeResult:
        # Staged from rho's own index (a task's may lie about what changed), and what the
        # commit left is rho's own for the next feature in this worktree.
        try:
            pool.own_index(worktree)
        except OSError as exc:
            raise FeatureResultError(f"its index could not be put back: {exc.strerror}") from exc
        done = commit_worktree(
            repo,
            worktree,
            message,
            base=attempt.base_commit,
            branch=feature.branch,
            spared=kept_out.spared,
            write_back=pool.index_unwritten(worktree),
        )
        if done.branch_head is not None:  # the worktree's HEAD, whose index rho just wrote
            pool.note_index(worktree, done.branch_head)
        if done.worker_committed and done.commit_id is not None:
            # rho's own commit never stages a copy; the worker's own commits may hold one.
            refuse_carried(repo, kept_out.copied, attempt.base_commit, done.commit_id)
        return done

    result = await anyio.to_thread.run_sync(commit)
    return Handoff.of_work(result.commit_id, result.files_changed), result


async def _settle(
    repo: GitRepo, branch: str, head: str, attempt: Attempt, result: WorktreeResult | None
) -> str | None:
    """Note what the attempt left on the feature branch: the value its next move expects.

    Known from the commit step when it ran (the branch holds HEAD, or rho moved it there);
    read from git otherwise (a failed worker may have committed on it).
    """
    if result is not None and result.branch_known:
        found = result.branch_head
    else:
        try:
            found = await anyio.to_thread.run_sync(repo.branch_commit, branch)
        except MissionError:
            return head  # unknown stays as last known: the next move is refused, not blind
    if found is not None:
        attempt.note_ref(branch, found, "end")
    return found


async def _after_failed_start(
    repo: GitRepo, branch: str, head: str, attempt: Attempt
) -> str | None:
    """What the branch's next move must expect after ``acquire`` failed (not refused).

    The start commit when the branch got there before git failed; else, as before, the value
    the attempt was given: a branch someone else moved is never taken as rho's own.
    """
    try:
        found = await anyio.to_thread.run_sync(repo.branch_commit, branch)
    except MissionError:
        return attempt.branch_head
    return head if found == head else attempt.branch_head
