"""Verified joins: the project's checks on the integration head after a wave, and the fix stage.

Text merges cannot tell that two features which merge cleanly break the build together (one
renames a function, the other adds a caller of the old name); only the project's own checks on
the merged result can. So, after a wave's merges and before its join is recorded as clean, the
engine (``_loop``) hands the join to `JoinChecks`:

1. the verify stage runs in a worktree on ``rho-mission/<m>/verify-<wave>`` at the integration
   head (output appended to ``logs/verify-<wave>.log``); a pass verifies the join;
2. otherwise, with a fix stage, the fix runs in a worktree on ``rho-mission/<m>/fix-<wave>`` from
   the integration head, ``RHO_VERIFY_LOG`` naming the failed output; what it leaves is committed
   there, merged into the integration branch (journaled first, then moved by compare-and-swap,
   like every join), and the checks run again; at most ``max_fix_attempts`` fixes; a fix
   whose commits would land a ``--copy`` file fails (``setup._carried``);
3. with ``bisect`` (``_bisect``), before any fix: the checks run on the wave's base and on
   prefixes of the join's merge order; the features that broke them fail and the integration
   branch moves to the head without them, which passed; a base that fails too blames nobody
   and the fix runs as it would have;
4. still failing, the verification fails: the engine stops the mission after that wave, its
   merged work kept on the integration branch for a fix to build on.

Stages run through the run's ``_stage_runner.StageRunner``: on the coordinator's machine, in a
worktree pool of their own, one stage at a time, their branches moved like feature branches. A
worker's failure, or git refusing a worktree, a commit or a merge, fails that stage run with its
message; a cancellation ends the stage's processes and propagates.

Decision: docs/decisions/0504-verified-joins.md, docs/decisions/0515-bisect-a-failed-join.md
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from graph import sha256_hex as digest

from .._errors import MissionError
from ..agents._reading import UsageAsk, usage_ask
from ..containment._process import note_in_log
from ..executors._contract import Worker, WorkerContext
from ..records._clock import now_rfc3339_millis
from ..records._document import Feature, MissionDocument, Verification, VerificationStatus
from ..records._journal import Journal
from ..records._persist import save_mission
from ..records._places import feature_log
from ..records._usage import AttemptUsage
from ..setup import refuse_carried
from ._bisect import Bisector, CulpritHost, JoinOrder
from ._stage_runner import StageRunner
from ._stage_workers import StageObserver, StageRun, Stages, StageStatus
from ._state import replay_allowed

__all__ = ["JoinChecks", "VerificationRun", "stage_log"]

# Moves the integration branch from old to new by compare-and-swap, journaled first (the
# engine's own move, so that a fix merges exactly like a feature).
MoveIntegration = Callable[[str, str, str], Awaitable[None]]


def stage_log(wave: int) -> str:
    """Where the checks of *wave* write, relative to the mission folder."""
    return f"logs/verify-{wave}.log"


@dataclass
class VerificationRun:
    """One join's verification as it goes: the head checked and the runs so far."""

    wave: int
    head: str
    started: float
    checks: int = 0
    # Of those runs, the ones whose checks failed (a bisection's failing probes included).
    failed_checks: int = 0
    fixes: int = 0
    # Checks that failed and then passed on the same tree (``--verify-retries``).
    flaky: int = 0
    error: str | None = None
    fix_error: str | None = None
    # The join's base and merges, when a failure of its checks is to be bisected.
    order: JoinOrder | None = None
    bisect_runs: int = 0
    base_failed: bool = False
    culprits: list[str] = field(default_factory=list)
    # Each culprit's stage run whose log shows the failure that blamed it.
    culprit_logs: dict[str, str] = field(default_factory=dict)

    def record(self, pending: Verification, status: VerificationStatus) -> Verification:
        """The join's verification once it ended with *status*."""
        return pending.model_copy(
            update={
                "status": status,
                "attempts": self.checks,
                "failed_runs": self.failed_checks,
                "fix_attempts": self.fixes,
                "flaky": self.flaky,
                "duration_ms": round((time.monotonic() - self.started) * 1000),
                "error": self.error,
                "fix_error": self.fix_error,
                "head": self.head,
                "bisect_runs": self.bisect_runs,
                "base_failed": self.base_failed,
                "culprit_ids": sorted(self.culprits),
                "culprit_logs": {c: f"logs/{n}.log" for c, n in sorted(self.culprit_logs.items())},
            }
        )


class JoinChecks:
    """The verify and fix stages of one run's joins (see the module's docstring)."""

    def __init__(
        self,
        mission: MissionDocument,
        stages: Stages,
        *,
        journal: Journal,
        runner: StageRunner,
        observer: StageObserver,
        move_integration: MoveIntegration,
        note_usage: Callable[[AttemptUsage], None] = lambda record: None,
        budget_stop: Callable[[], str | None] = lambda: None,
        culprits: CulpritHost | None = None,
    ) -> None:
        # What fails and replays the culprits of a bisected join (None: no bisection).
        self.culprits = culprits
        # What a check or fix spent goes to note_usage; budget_stop says why no fix may start.
        self.note_usage = note_usage
        self.budget_stop = budget_stop
        self.mission = mission
        self.stages = stages
        self.journal = journal
        self.runner = runner
        self.observer = observer
        self.move_integration = move_integration
        self.repo = runner.repo
        self.folder = Path(mission.dir)
        self.bisector = Bisector(mission, self.repo, journal)

    def pending(self, wave: int) -> Verification:
        """What the join records before its first check: ``running``, durably."""
        stages = self.stages
        return Verification(
            status="running",
            log=stage_log(wave),
            command_sha256=digest(stages.verify_command) if stages.verify_command else None,
            fix_command_sha256=digest(stages.fix_command) if stages.fix_command else None,
        )

    def verified_before(self, head: str) -> Verification | None:
        """A pass of *head* by an earlier join with the same checks, as this join's record.

        A wave that merged nothing leaves the head it started from: checked once, it is not
        checked again (``attempts`` 0 says so). A library verify worker has no command to
        compare, so its checks always run.
        """
        command = self.stages.verify_command
        if command is None:
            return None
        wanted = digest(command)
        for join in reversed(self.mission.wave_joins):
            done = join.verification
            if done.status == "passed" and done.head == head and done.command_sha256 == wanted:
                return Verification(
                    status="passed",
                    head=head,
                    command_sha256=wanted,
                    fix_command_sha256=done.fix_command_sha256,
                )
        return None

    async def verify(self, run: VerificationRun) -> VerificationStatus:
        """Check *run*'s head, fixing it while fixes are left: ``passed`` or ``failed``."""
        run.error = await self._checked(run)
        if run.error is not None and run.order is not None and self.culprits is not None:
            await self._bisect(run, run.order, self.culprits)
        fix, most = self.stages.fix, self.stages.max_fix_attempts
        while run.error is not None and fix is not None and run.fixes < most:
            stop = self.budget_stop()
            if stop is not None:  # no fix starts: the verification fails, a resume fixes
                run.fix_error = stop
                break
            run.fixes += 1
            run.fix_error = await self._fix(run, fix)
            if run.fix_error is None:  # merged: check again (a failed fix changed nothing)
                run.error = await self._checked(run)
        return "passed" if run.error is None else "failed"

    # -- the two stages ----------------------------------------------------------------------

    async def _checked(self, run: VerificationRun) -> str | None:
        """The checks of *run*'s head, run again on the same tree up to ``verify_retries``
        times while they fail, before anyone is blamed or a fix runs: a pass after a failure
        is flaky (counted; both runs are in the stage's log)."""
        error = await self._check(run)
        for _ in range(self.mission.config.verify_retries):
            if error is None:
                break
            error = await self._check(run)
            if error is None:
                run.flaky += 1
        return error

    async def _bisect(self, run: VerificationRun, order: JoinOrder, host: CulpritHost) -> None:
        """Find the features that broke the checks, fail them, land the head without them.

        The culprits fail before the branch moves (mission.json, saved after the move, holds
        both): a crash between the two puts the branch back to the merged head, whose checks
        the resume runs and bisects again."""
        checks_before = run.checks
        assert run.error is not None  # only failed checks are bisected
        name, check = self._probes(run)
        outcome = await self.bisector.bisect(run.wave, order, run.error, name, check)
        run.bisect_runs += run.checks - checks_before
        if outcome.base_failed or outcome.head is None:
            run.base_failed = True
            run.error = f"the checks fail on the wave's base too: {run.error}"
            return
        for feature_id, error in outcome.culprits.items():
            text = f"checks failed on the merged head after {feature_id}: {error}"
            await host.blame(feature_id, text)
        for feature_id, why in outcome.refused.items():
            await host.blame(feature_id, f"its merge without the culprits failed: {why}")
        run.culprits.extend(outcome.culprits)
        run.culprit_logs.update(outcome.logs)
        label = f"wave {run.wave} without {', '.join(outcome.culprits)}"
        await self._land(run, outcome.head, label)
        out = set(outcome.culprits) | set(outcome.refused)
        await host.landed([i for i, _ in order.merges if i not in out], outcome.head)
        run.error = None
        for feature_id, stage in outcome.logs.items():
            await self._replay_culprit(run, host, feature_id, self.folder / f"logs/{stage}.log")

    def _probes(
        self, run: VerificationRun
    ) -> tuple[Callable[[], str], Callable[[str, str], Awaitable[str | None]]]:
        """The names of a join's further check runs, and the check of a head as one."""

        def name() -> str:
            return f"verify-{run.wave}-{run.checks + 1}"

        async def check_once(head: str, stage: str) -> str | None:
            return await self._check(run, stage, head)  # counted as every run of the checks

        async def check(head: str, stage: str) -> str | None:
            # Run again on the same tree before anyone is blamed (``verify_retries``).
            error = await check_once(head, stage)
            for _ in range(self.mission.config.verify_retries):
                if error is None:
                    break
                error = await check_once(head, name())
                if error is None:
                    run.flaky += 1
            return error

        return name, check

    async def _land(self, run: VerificationRun, head: str, label: str) -> None:
        """Move the integration branch to *head*, whose checks passed (journaled first)."""
        if head != run.head:
            await self.move_integration(head, run.head, label)
        run.head = head
        self.mission.integration_head = head
        save_mission(self.mission)

    async def _replay_culprit(
        self, run: VerificationRun, host: CulpritHost, feature_id: str, verify_log: Path
    ) -> None:
        """Run a culprit's task again on the landed head, at most ``replay_culprits`` times,
        until its work merges and the checks pass there: then it lands in this join."""
        feature = self.mission.feature(feature_id)
        error = feature.error
        name, check = self._probes(run)
        most = self.mission.config.replay_culprits
        while replay_allowed(feature.culprit_replays, most, self.budget_stop()):
            feature.culprit_replays += 1
            outcome = await host.replay_culprit(feature_id, run.head, verify_log)
            if isinstance(outcome, str):
                error = f"{error}; replay {feature.culprit_replays} failed: {outcome}"
                continue
            head = await self._merged(run.head, feature_id, outcome.commit_id)
            if head is None:
                error = f"{error}; replay {feature.culprit_replays}: its merge failed"
                continue
            stage = name()
            failed = await check(head, stage)
            if failed is not None:
                verify_log = self.folder / f"logs/{stage}.log"
                error = f"{error}; replay {feature.culprit_replays}: the checks failed again"
                continue
            # Its end first, then the move, then mission.json holding both (as for culprits).
            await host.readmit(feature_id, outcome)
            await self._land(run, head, f"wave {run.wave}: {feature_id} replayed")
            await host.landed([feature_id], head)
            return
        if feature.status != "failed":  # a replay ran: its end is the last word
            await host.blame(feature_id, error or "checks failed after its merge")

    async def _merged(self, head: str, feature_id: str, commit: str | None) -> str | None:
        """*head* with *commit* merged (itself when the replay changed nothing), or None."""
        if commit is None:
            return head
        merge = partial(self.bisector.merge_onto, head, feature_id, commit)
        try:
            return await anyio.to_thread.run_sync(merge)
        except MissionError:
            return None

    async def _check(
        self, run: VerificationRun, name: str | None = None, head: str | None = None
    ) -> str | None:
        """Run the checks once on *head* (default: the join's head), counted in *run*."""
        head = head or run.head
        run.checks += 1
        name = name or f"verify-{run.wave}"
        stage = StageRun(name, "verify", run.wave, run.checks, "running")
        self._begin(stage, head)
        command = self.mission.config.verify_command
        feature = Feature(stage.name, f"verify wave {run.wave}", command=command)
        number = self.mission.next_stage_attempt("verify", run.wave)
        ask = UsageAsk("verify", number, required=False)  # a check is not an agent
        verify = self.stages.verify
        error, _ = await self._stage(feature, run, run.checks, verify, None, ask, head)
        status: StageStatus = "passed" if error is None else "failed"
        if error is not None:
            run.failed_checks += 1
        extra = {"head_sha256": digest(head)}
        self._end(replace(stage, status=status, error=error), extra)
        return error

    async def _fix(self, run: VerificationRun, worker: Worker) -> str | None:
        most = self.stages.max_fix_attempts
        stage = StageRun(f"fix-{run.wave}", "fix", run.wave, run.fixes, "running", None, most)
        self._begin(stage, run.head)
        command = self.mission.config.fix_command
        feature = Feature(stage.name, f"fix wave {run.wave}", command=command)
        verify_log = self.folder / stage_log(run.wave)
        config = self.mission.config
        number = self.mission.next_stage_attempt("fix", run.wave)
        ask = usage_ask(config, "fix", number, config.agent)  # a fix is the tasks' agent
        error, commit = await self._stage(feature, run, run.fixes, worker, verify_log, ask)
        if error is None and commit is not None:
            error = await self._merge_fix(run, stage.name, commit)
        status: StageStatus = "completed" if error is None else "failed"
        self._end(replace(stage, status=status, error=error), {"changed": commit is not None})
        return error

    def _begin(self, stage: StageRun, head: str) -> None:
        self._tell(stage)
        self._log(stage, f"on {head[:12]} at {now_rfc3339_millis()}")

    def _end(self, stage: StageRun, extra: Mapping[str, Any]) -> None:
        """Say how a stage run ended: at the end of its log (so that a fix reads why the
        checks failed, whoever ran them), in the journal, to the observer."""
        self._log(stage, f"{stage.status}: {stage.error}" if stage.error else stage.status)
        self.journal.record(
            stage.stage,
            now_rfc3339_millis(),
            wave=stage.wave,
            attempt=stage.attempt,
            status=stage.status,
            error_sha256=digest(stage.error) if stage.error else None,
            **extra,
        )
        self._tell(stage)

    def _log(self, stage: StageRun, text: str) -> None:
        note_in_log(
            feature_log(self.folder, stage.name),
            f"{stage.name} attempt {stage.attempt} {text}",
        )

    async def _merge_fix(self, run: VerificationRun, name: str, commit: str) -> str | None:
        """Merge the fix's *commit* into the integration branch: None, or why git refused."""
        branch = self.mission.integration_branch
        message = f"rho-mission {self.mission.id}: merge {name}"

        def merged() -> str:
            new = self.repo.merge_commit(run.head, commit, message, (branch, name))
            if new != run.head:
                self.repo.refuse_checked_out(branch)
            return new

        try:
            new = await anyio.to_thread.run_sync(merged)
            if new != run.head:
                await self.move_integration(new, run.head, name)
        except MissionError as exc:
            return str(exc)
        run.head = new
        # Durable at once: a crash from here on resumes from the fixed head, fix not redone.
        self.mission.integration_head = new
        save_mission(self.mission)
        return None

    # -- one stage run in a worktree ---------------------------------------------------------

    async def _stage(
        self,
        feature: Feature,
        run: VerificationRun,
        number: int,
        worker: Worker,
        verify_log: Path | None,
        ask: UsageAsk,
        head: str | None = None,
    ) -> tuple[str | None, str | None]:
        """Run *worker* once on *feature*'s branch at *head* (default: the join's head):
        (error, commit of a fix)."""
        head = head or run.head
        runner = self.runner
        branch = runner.branch(feature.id)
        try:
            worktree = await runner.acquire(branch, head, ready=feature.id)
        except MissionError as exc:
            return str(exc), None
        context = WorkerContext(
            mission=self.mission,
            feature=feature,
            worktree=worktree,
            base_commit=head,
            attempt=number,
            log_path=feature_log(self.folder, feature.id),
            on_process_start=lambda pgid: runner.started(feature.id, pgid),
            wave=run.wave,
            verify_log=verify_log,
        )
        try:
            ask = replace(ask, wave=run.wave)
            error = await runner.run(worker, context, (ask, self.note_usage))
            if error is not None or verify_log is None:
                return error, None
            return await self._commit_fix(context, branch)
        finally:
            with anyio.CancelScope(shield=True):
                await runner.release(branch, worktree)

    async def _commit_fix(
        self, context: WorkerContext, branch: str
    ) -> tuple[str | None, str | None]:
        """Commit what the fix left on its branch: (error, commit)."""
        message = f"rho-mission {self.mission.id}: {context.feature.id}"

        def commit_all() -> str | None:
            worktree, base = context.worktree, context.base_commit
            spared = self.runner.spared(worktree)  # the setup's outputs and the copies
            done = self.repo.commit_all(worktree, message, base=base, branch=branch, spared=spared)
            if done.commit_id is not None:  # the fix's own commits may hold a copy
                refuse_carried(self.repo, self.mission.config.copy_paths, base, done.commit_id)
            return done.commit_id

        try:
            return None, await anyio.to_thread.run_sync(commit_all)
        except MissionError as exc:  # git refused what the fix left
            return str(exc), None

    def _tell(self, run: StageRun) -> None:
        self.observer.stage_changed(self.mission, run)
