"""The wave engine: run features wave by wave, join, persist, and only then go on.

The engine is the coordinator. Inside a wave an anyio task group runs features with at most
``max_workers`` at once (a ``CapacityLimiter``); each attempt of a feature is run by an executor
(``executors._contract.Executor``: this machine's worktrees by default, or a Dask cluster), which
hands back a handoff or an error. Retries, statuses, joins, integration merges and persistence stay
here. Once features run, every blocking git call goes through a worker thread (the set-up before the
first wave runs git directly: nothing else is running yet). All mission state is changed on the
event loop thread only, so the document never needs a lock of its own.

A join, and the final write of the mission, run in shielded scopes: a cancellation (Ctrl-C,
SIGTERM, a timeout) stops the work, never the record of it.

With a verify stage (``_verify``), a join whose wave lets the mission go on is first recorded
with its verification ``running`` (durably: a crash resumes into the checks, not past them);
the checks (and fixes) run outside the shield, so that Ctrl-C stops them too, and the join is
recorded again with their outcome.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from functools import partial
from pathlib import Path

import anyio
import anyio.abc
import anyio.lowlevel

from graph import sha256_hex as digest

from .._errors import MergeConflictError, MissionError
from ..containment._mission_processes import end_mission_processes
from ..executors._contract import Attempt, Executor, Observer, SetupStep, Worker
from ..git._refs import RefHistory, check_id_free, feature_head, settle_refs
from ..git._repo import GitRepo, MergeChain
from ..records._clock import now_rfc3339_millis
from ..records._document import (
    Conflict,
    Feature,
    FeatureSetup,
    FeatureStatus,
    Handoff,
    MissionDocument,
    Verification,
    VerificationStatus,
    WaveJoin,
)
from ..records._journal import Journal
from ..records._missionwords import dollars
from ..records._order import start_order
from ..records._persist import note_feature_end, save_mission, save_mission_after
from ..records._places import feature_log
from ..records._usage import AttemptUsage, UsageTotal, add_usage, sum_usage
from ._adopt import adopt_finished
from ._budget import BudgetKeeper, budget_note
from ._joins import (
    blocked_downstream,
    conflict_record,
    conflict_text,
    final_status,
    first_unfinished,
    interrupted_note,
    join_record,
)
from ._overlap import WaveMerges
from ._resolve import ConflictAt, ConflictResolver
from ._stage_runner import StageRunner
from ._stage_workers import StageRun, Stages
from ._storesync import StoreSync
from ._verify import JoinChecks, VerificationRun

__all__ = ["run_waves"]

# Seconds a thread may hold the GIL while another waits, during a run (see _quick_handovers).
_SWITCH_INTERVAL = 0.0005


class _Silent:
    def feature_changed(self, mission: MissionDocument, feature: Feature) -> None:
        pass

    def wave_joined(self, mission: MissionDocument, join: WaveJoin) -> None:
        pass


async def run_waves(
    mission: MissionDocument,
    worker: Worker,
    waves: Sequence[Sequence[str]],
    *,
    executor: Executor,
    observer: Observer | None = None,
    warnings: list[str] | None = None,
    stages: Stages | None = None,
    resolve: Worker | None = None,
    setup: SetupStep | None = None,
) -> None:
    """Run *waves* of *mission* from its first unfinished wave; the mission records the outcome.

    A cancellation of the caller's scope is recorded (features ``cancelled``, the join written,
    mission ``cancelled``) and then re-raised. A mission timeout ends the same way but returns.
    Problems that do not stop the run are appended to *warnings*. With *stages*, every join
    that lets the mission go on is verified first (see ``_verify``). With *resolve*, a merge
    that conflicts at a join goes to that resolver first (see ``_overlap``). With *setup*, every
    attempt's worktree is set up first where it needs it (``executors._setup``).
    """
    notes = [] if warnings is None else warnings
    guarded = _Guarded(notes, observer or _Silent())
    runner = _WaveRunner(mission, worker, executor, guarded, notes, stages, resolve)
    runner.setup = runner.stage_runner.setup = setup
    with _quick_handovers():
        await runner.run([list(wave) for wave in waves])


@contextlib.contextmanager
def _quick_handovers() -> Iterator[None]:
    """The interpreter's switch interval at 0.5 ms while waves run (then as it was).

    The event loop and the threads that wait on git spend most of their time in system calls;
    the threads that render the task store and the mission files hold the GIL for the whole
    interval (5 ms by default) before they let go. A git process that ended, or a task that
    started, was then noticed up to 5 ms late: a serial chain paid it at every feature.
    """
    before = sys.getswitchinterval()
    sys.setswitchinterval(min(before, _SWITCH_INTERVAL))
    try:
        yield
    finally:
        sys.setswitchinterval(before)


class _Guarded:
    """Passes progress on to an observer until it raises; a failing observer (a closed stdout)
    never changes what the mission does: the first error becomes a warning, then it is dropped."""

    def __init__(self, warnings: list[str], observer: Observer) -> None:
        self.warnings = warnings
        self.observer: Observer | None = observer

    def feature_changed(self, mission: MissionDocument, feature: Feature) -> None:
        self._call(lambda observer: observer.feature_changed(mission, feature))

    def wave_joined(self, mission: MissionDocument, join: WaveJoin) -> None:
        self._call(lambda observer: observer.wave_joined(mission, join))

    def stage_changed(self, mission: MissionDocument, run: StageRun) -> None:
        # Optional for observers (``_stage_workers.StageObserver``): one written before verified
        # joins existed has no such method and is told of features and joins only.
        def notify(observer: Observer) -> None:
            method = getattr(observer, "stage_changed", None)
            if method is not None:
                method(mission, run)

        self._call(notify)

    def _call(self, notify: Callable[[Observer], None]) -> None:
        if self.observer is None:
            return
        try:
            notify(self.observer)
        except Exception as exc:  # the observer is the caller's code, like a worker
            self.observer = None
            self.warnings.append(
                f"progress display stopped: {type(exc).__name__}: {exc}".rstrip(": ")
            )


class _WaveRunner:
    def __init__(
        self,
        mission: MissionDocument,
        worker: Worker,
        executor: Executor,
        observer: _Guarded,
        warnings: list[str],
        stages: Stages | None,
        resolve: Worker | None,
    ) -> None:
        self.mission = mission
        self.worker = worker
        self.executor = executor
        self.observer = observer
        self.warnings = warnings
        self.folder = Path(mission.dir)
        self.repo = GitRepo.open(Path(mission.repo))
        self.journal = Journal(self.folder / "journal.jsonl")
        self.history = RefHistory.load(self.journal)
        self.store = StoreSync.for_mission(mission)
        # The head each feature branch must hold when rho next moves it (compare-and-swap).
        self.branch_heads: dict[str, str | None] = {}
        self.limiter = anyio.CapacityLimiter(mission.config.max_workers)
        self.cancelled = False
        # Why the executor could not make a wave's start available (its features then fail).
        self.wave_problem: str | None = None
        self.stage_runner = StageRunner(mission, self.repo, self.journal, self.history)
        # The mission's worktree setup, run by the executor before attempts (None: none).
        self.setup: SetupStep | None = None
        # What the mission spent so far, against its budgets (``_budget``).
        self.budget = BudgetKeeper(mission)
        self.stage_runner.budget_left_usd = self.budget.left_usd
        # The running wave's features (a hard budget stops them), and whether it did.
        self.wave_group: anyio.abc.TaskGroup | None = None
        self.hard_stopped = False
        # When this run began: what it adds to the mission's run_seconds at its end.
        self.run_began = time.monotonic()
        # What was left of the dollar budget when each feature's last attempt started.
        self.caps: dict[str, float | None] = {}
        self.checks = None if stages is None else self._join_checks(stages)
        self.resolver = (
            None
            if resolve is None
            else ConflictResolver(
                mission, self.stage_runner, resolve, self.journal, self._note_feature_usage
            )
        )
        # The merges of the wave being joined (see _merge_completed).
        self.merges: WaveMerges | None = None

    def _join_checks(self, stages: Stages) -> JoinChecks:
        return JoinChecks(
            self.mission,
            stages,
            journal=self.journal,
            runner=self.stage_runner,
            observer=self.observer,
            move_integration=self._move_integration,
            note_usage=self._note_stage_usage,
            budget_stop=self._budget_reached,
        )

    async def run(self, waves: list[list[str]]) -> None:
        mission = self.mission
        verifying = self.checks is not None
        first = first_unfinished(mission.features, waves, mission.wave_joins, verifying=verifying)
        # Orphans of a crashed run must not write into the worktrees of this one.
        await end_mission_processes(self.mission.id, self.mission.config.grace_period)
        await self._start(waves, first)
        try:
            with anyio.move_on_after(self.mission.config.timeout) as scope:  # None: no limit
                await self._run_from(waves, first)
            if scope.cancelled_caught:
                self.cancelled = True
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise
        finally:
            with anyio.CancelScope(shield=True):
                await self._finish()

    async def _start(self, waves: list[list[str]], first: int) -> None:
        mission = self.mission
        # Leases and refs first: a task another mission holds, or a ref someone else moved,
        # refuses the run before anything else is written.
        todo = [f.id for f in mission.features if f.status != "completed"]
        first_run = mission.started_at is None
        if first_run:
            check_id_free(self.repo, mission.id)
        await self.executor.open(mission)  # an unreachable cluster refuses before any record
        try:
            self.store.claim(
                todo, mission.id, self.repo, self.folder, takeover=mission.config.takeover
            )
        except BaseException:
            await self._close_executor()
            raise
        try:
            if first_run:
                # Recorded before any ref exists: a kill from here on leaves a mission to resume.
                self._mark_executing(waves)
            else:
                await self._adopt_finished()
            with self.repo.locked():
                self.branch_heads = settle_refs(self.repo, mission, self.history)
        except BaseException:
            self.store.release(mission.id)  # refused before any work: the tasks are free again
            await self._close_executor()
            raise
        del mission.wave_joins[first:]
        mission.budget_stop = None  # this run's budget decides anew (a resume may raise it)
        for feature in mission.features:
            if feature.status != "completed":
                _reset(feature)
        self._mark_executing(waves)
        save_mission(mission)
        self.journal.record(
            "mission",
            now_rfc3339_millis(),
            mission_id=mission.id,
            status="executing",
            first_wave=first + 1,
            prompt_sha256=digest(mission.prompt),
        )

    async def _adopt_finished(self) -> None:
        """Take what a crashed run finished, as its journal says (``_adopt``): its attempts
        completed in the store too, their spend in the budget."""
        mission = self.mission
        with self.repo.locked():  # its branches are read where no other move is under way
            adopted = adopt_finished(self.repo, mission, self.journal, self.history)
        self.budget = BudgetKeeper(mission)
        for feature in adopted:
            await self.store.set_status(
                feature.id, "completed", attempts=feature.attempts, wait=False
            )

    def _mark_executing(self, waves: list[list[str]]) -> None:
        mission = self.mission
        mission.waves = waves
        mission.status = "executing"
        mission.started_at = mission.started_at or now_rfc3339_millis()
        mission.completed_at = None
        if not (self.folder / "mission.json").exists():
            save_mission(mission)

    async def _run_from(self, waves: list[list[str]], first: int) -> None:
        keep_going = self.mission.config.keep_going
        for number in range(first + 1, len(waves) + 1):
            join = await self._run_wave(number, waves[number - 1])
            if join.cancelled_ids or self.cancelled or (join.failed_ids and not keep_going):
                return
            if self.mission.budget_stop is not None:
                return  # no later wave starts: a resume with a higher budget runs it
            if join.verification.status not in ("passed", "skipped"):
                return  # a later wave never starts from an unverified head

    async def _run_wave(self, number: int, ids: list[str]) -> WaveJoin:
        started = now_rfc3339_millis()
        head = self.mission.integration_head
        assert head is not None  # settled in _start; moved only by joins
        # With keep_going, a feature downstream of a failure stays pending (never dispatched).
        blocked = blocked_downstream(self.mission.features, self.mission.waves)
        self.wave_problem = await self._prepare_wave(head)
        self.merges = None
        try:
            async with anyio.create_task_group() as group:
                self.wave_group = group
                # Started by priority, then natural order; merged in the join's own order.
                priorities = {i: self.mission.feature(i).priority for i in ids}
                for feature_id in start_order(ids, priorities):
                    feature = self.mission.feature(feature_id)
                    if feature.status != "completed" and feature_id not in blocked:
                        group.start_soon(self._run_feature, feature, head)
            # The merges, with the resolve and replay stages (which a cancellation stops);
            # the join's record, shielded, merges what a cancellation left without them.
            self.wave_group = None
            await self._merge_completed(number, ids, ladder=True)
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise
        finally:
            with anyio.CancelScope(shield=True):
                join = await self._join(number, ids, started)
        if join.verification.status == "running":
            join = await self._verify(join)
        return join

    async def _prepare_wave(self, head: str) -> str | None:
        try:
            await self.executor.prepare_wave(head)
        except MissionError as exc:
            return f"the wave's start could not be made available: {exc}"
        return None

    @property
    def _integration(self) -> str:
        return self.mission.integration_branch

    # -- one feature -------------------------------------------------------------------------

    async def _run_feature(self, feature: Feature, head: str) -> None:
        async with self.limiter, anyio.create_task_group() as group:
            stop = self._budget_reached()
            if stop is not None:  # its first attempt would start over the budget
                await self._budget_held(feature, stop)
                return
            await self._dispatch(feature)
            # The start goes to the task store while the executor readies a worktree; the
            # worker waits for it (``Attempt.ready``).
            started = anyio.Event()
            group.start_soon(self._start_written, started)
            try:
                await self._attempts(feature, head, started.wait)
            except anyio.get_cancelled_exc_class():
                if feature.status == "in_progress":  # not when it had already ended
                    if self.hard_stopped and self.mission.budget_stop is not None:
                        await self._budget_held(feature, self.mission.budget_stop)
                    else:
                        await self._end(feature, "cancelled", "cancelled")
                raise

    async def _dispatch(self, feature: Feature) -> None:
        feature.status = "in_progress"
        feature.started_at = now_rfc3339_millis()
        feature.log = f"logs/{feature.id}.log"
        self.journal.record("dispatch", feature.started_at, feature_id=feature.id)
        # Queued now, in order with the feature's other changes; written by _start_written.
        attempts = feature.attempts + 1
        await self.store.set_status(feature.id, "in_progress", attempts=attempts, wait=False)
        self.observer.feature_changed(self.mission, feature)

    async def _start_written(self, started: anyio.Event) -> None:
        try:
            # One turn of the loop first: the attempt hands its worktree's checkout to a thread,
            # and git runs while the store's rewrite (Python, holding the GIL) is made.
            await anyio.lowlevel.checkpoint()
            await self.store.flush()
        finally:
            started.set()

    async def _attempts(
        self, feature: Feature, head: str, ready: Callable[[], Awaitable[None]]
    ) -> None:
        error = "not run"
        for number in range(self.mission.config.retries + 1):
            stop = self._budget_reached() if number else None
            if stop is not None:  # no retry starts over the budget
                await self._budget_held(feature, stop)
                return
            feature.attempts += 1
            outcome = await self._attempt(feature, head, ready)
            if isinstance(outcome, Handoff):
                feature.handoff = outcome
                await self._end(feature, "completed", None)
                return
            stop = self._stopped_by_agent_budget(feature)
            if stop is not None:  # not a crash: the agent's own cap ended it
                await self._budget_held(feature, f"{stop}: {outcome}")
                return
            error = outcome
        await self._end(feature, "failed", error)

    async def _attempt(
        self, feature: Feature, head: str, ready: Callable[[], Awaitable[None]]
    ) -> Handoff | str:
        """One try of *feature*, by the executor: its handoff, or the error text."""
        if self.wave_problem is not None:
            return self.wave_problem
        result = await self.executor.run_attempt(self._attempt_of(feature, head, ready))
        self.branch_heads[feature.id] = result.branch_head
        if result.handoff is not None:
            return result.handoff
        return result.error or "failed"

    def _attempt_of(
        self,
        feature: Feature,
        head: str,
        ready: Callable[[], Awaitable[None]],
        *,
        replay: bool = False,
    ) -> Attempt:
        def started(pgid: int) -> None:
            self.journal.record("process", now_rfc3339_millis(), feature_id=feature.id, pgid=pgid)

        self.caps[feature.id] = self.budget.left_usd()
        return Attempt(
            mission=self.mission,
            feature=feature,
            worker=self.worker,
            base_commit=head,
            number=feature.attempts,
            branch_head=self.branch_heads.get(feature.id),
            log_path=feature_log(self.folder, feature.id),
            on_process_start=started,
            note_ref=self.history.note,
            ready=ready,
            replay=replay,
            note_usage=partial(self._note_feature_usage, feature),
            budget_left_usd=self.caps[feature.id],
            setup=self.setup,
            note_setup=partial(_note_setup, feature),
        )

    # -- what attempts spend, and the budget -------------------------------------------------

    def _note_feature_usage(self, feature: Feature, record: AttemptUsage) -> None:
        """Keep what an attempt of *feature* (its task's, its resolver's) spent."""
        feature.record_usage(record)
        self.budget.note(f"feature:{feature.id}", feature.usage)
        self._journal_usage(record, feature_id=feature.id)
        self._spent()

    def _note_stage_usage(self, record: AttemptUsage) -> None:
        """Keep what a join's check or fix spent."""
        self.mission.record_stage_usage(record)
        self.budget.note_records("stages", self.mission.stage_usage)
        self._journal_usage(record, feature_id=None)
        self._spent()

    def _journal_usage(self, record: AttemptUsage, *, feature_id: str | None) -> None:
        # Numbers and the model's digest only (the journal is metadata).
        self.journal.record(
            "usage",
            now_rfc3339_millis(),
            feature_id=feature_id,
            stage=record.stage,
            wave=record.wave,
            attempt=record.attempt,
            source=record.source,
            agent=record.agent,
            cost_usd=record.cost_usd,
            input_tokens=record.input_tokens,
            output_tokens=record.output_tokens,
            cached_input_tokens=record.cached_input_tokens,
            model_sha256=digest(record.model) if record.model else None,
            stopped_by_budget=record.stopped_by_budget,
        )

    def _spent(self) -> None:
        """After a spend: once a budget is reached, say so (durably in the journal) and, with
        ``budget_hard``, stop the wave's running attempts."""
        if self.mission.budget_stop is not None or not self.budget.active:
            return
        reason = self.budget.reached()
        if reason is None:
            return
        self.mission.budget_stop = reason
        self.journal.record(
            "budget",
            now_rfc3339_millis(),
            durable=True,
            decision="stop",
            hard=self.budget.hard,
            spent_usd=self.budget.spent_usd,
            budget_usd=self.budget.usd,
            budget_tokens=self.budget.tokens,
        )
        if self.budget.hard and self.wave_group is not None:
            self.hard_stopped = True
            self.wave_group.cancel_scope.cancel()

    def _budget_reached(self) -> str | None:
        """Why no attempt may start now (a budget reached), or None."""
        if self.mission.budget_stop is not None:
            return self.mission.budget_stop
        if self.budget.active:
            self._spent()
        return self.mission.budget_stop

    def _stopped_by_agent_budget(self, feature: Feature) -> str | None:
        """The reason when the agent's own budget cap ended *feature*'s last attempt."""
        last = [r for r in feature.attempt_usage if r.stage == "task"]
        if not last or last[-1].attempt != feature.attempts or not last[-1].stopped_by_budget:
            return None
        left = self.caps.get(feature.id)
        cap = f" (the {dollars(left)} left when it started)" if left is not None else ""
        reason = f"stopped by budget: the agent reached its --max-budget-usd{cap}"
        if self.mission.budget_stop is None:
            self.mission.budget_stop = self.budget.reached() or reason
        return reason

    async def _budget_held(self, feature: Feature, reason: str) -> None:
        """End *feature* ``cancelled`` by the budget: it runs again at a resume."""
        note = budget_note(self.mission.id, reason, self.mission.config)
        await self._end(feature, "cancelled", reason, note=note)

    async def _end(
        self, feature: Feature, status: FeatureStatus, error: str | None, note: str | None = None
    ) -> None:
        """Record *feature*'s end; *note*: what the task store says of a cancelled one
        (default: that the mission's stop interrupted it)."""
        # Shielded: a cancellation must not split the record of an end (mission, journal, store).
        with anyio.CancelScope(shield=True):
            await self._record_end(feature, status, error, note)

    async def _record_end(
        self, feature: Feature, status: FeatureStatus, error: str | None, note: str | None
    ) -> None:
        feature.status = status
        feature.error = error
        feature.completed_at = now_rfc3339_millis()
        if feature.log and not (self.folder / feature.log).exists():
            feature.log = None  # a library worker that wrote no log: name no missing file
        self.journal.record(
            "finish",
            feature.completed_at,
            feature_id=feature.id,
            status=status,
            attempts=feature.attempts,
            error_sha256=digest(error) if error else None,
            files_changed_count=len(feature.handoff.files_changed) if feature.handoff else 0,
        )
        stored, said = status, error
        if status == "cancelled":
            # rho's own stop (Ctrl-C, SIGTERM, a timeout), not the user's "cancelled": the task
            # is to do again, and the store says so, for this mission's resume or the next.
            stored, said = "pending", note or interrupted_note(self.mission.id)
        await self.store.set_status(
            feature.id, stored, attempts=feature.attempts, error=said, wait=False
        )
        note_feature_end(self.mission, feature)  # its part of the join's save, made now
        self.observer.feature_changed(self.mission, feature)

    # -- the join ----------------------------------------------------------------------------

    async def _join(self, number: int, ids: list[str], started: str) -> WaveJoin:
        """The wave's join: merge its completed work, note where the work is, end what a
        cancellation left, record the join and save, with its verification ``running`` when
        the checks follow (``_verify`` then records it again)."""
        await self._merge_completed(number, ids, ladder=False)
        # The features this run completed with a commit of their own, now in the integration
        # branch (a merge git refused has failed its feature).
        merged = [i for i in ids if self.mission.feature(i).work_commit is not None]
        head = self.mission.integration_head
        assert head is not None  # settled in _start
        if merged:  # a wave of no-op features has no work to note (and no thread to wake)
            await anyio.to_thread.run_sync(self.store.record_work, merged, head, self.mission.id)
        if self.cancelled:
            for feature_id in ids:
                feature = self.mission.feature(feature_id)
                if feature.status in ("pending", "in_progress"):
                    await self._end(feature, "cancelled", "cancelled")
        verification = self._pending_verification(number, ids)
        join = self._join_record(number, started, verification)
        self.mission.wave_joins.append(join)
        self.mission.usage = self.mission.total_usage()
        # Every end of the wave is in the store before its join is on disk; the mission's files
        # are made while the store is written.
        await save_mission_after(self.mission, self.store.flush)
        if verification.status == "running":
            # Durable before the first check: a crash from here on resumes into verification.
            self.journal.record(
                "verify", join.completed_at, durable=True, wave=number, status="running"
            )
        else:
            self._joined(join)
        return join

    def _join_record(self, number: int, started: str, verification: Verification) -> WaveJoin:
        return join_record(
            self.mission.features,
            self.mission.waves,
            number,
            started,
            keep_going=self.mission.config.keep_going,
            verification=verification,
            usage=self._wave_usage(number),
            budget_stopped=self.mission.budget_stop is not None,
        )

    def _wave_usage(self, number: int) -> UsageTotal | None:
        """What wave *number*'s features (every run of them) and its checks spent."""
        ids = self.mission.waves[number - 1]
        totals = [u for i in ids if (u := self.mission.feature(i).usage) is not None]
        stages = [r for r in self.mission.stage_usage if r.wave == number]
        if stages:
            totals.append(sum_usage(stages))
        return add_usage(*totals) if totals else None

    def _joined(self, join: WaveJoin) -> None:
        """Journal the join (durably, like mission.json just written) and tell the observer."""
        self.journal.record(
            "join",
            join.completed_at,
            durable=True,
            wave=join.wave,
            completed=len(join.completed_ids),
            failed=len(join.failed_ids),
            cancelled=len(join.cancelled_ids),
            blocked=len(join.blocked_ids),
            verification=join.verification.status,
        )
        self.observer.wave_joined(self.mission, join)

    def _pending_verification(self, number: int, ids: list[str]) -> Verification:
        """``running`` when the wave's head is to be verified: there is a verify stage and the
        join lets the mission go on (no cancellation; no failure, or ``keep_going``)."""
        statuses = {self.mission.feature(i).status for i in ids}
        if self.checks is None or self.cancelled or "cancelled" in statuses:
            return Verification()
        if "failed" in statuses and not self.mission.config.keep_going:
            return Verification()  # the mission stops here; a resume verifies the wave
        head = self.mission.integration_head
        assert head is not None  # settled in _start
        return self.checks.verified_before(head) or self.checks.pending(number)

    async def _verify(self, join: WaveJoin) -> WaveJoin:
        """Run the checks (and fixes) of *join*'s head, then record the join with their outcome.

        A cancellation stops them (their processes too) and is recorded as ``cancelled``.
        """
        assert self.checks is not None  # only a join with a verify stage is "running"
        head = self.mission.integration_head
        assert head is not None  # settled in _start; moved only by joins and fixes
        run = VerificationRun(join.wave, head, time.monotonic())
        status: VerificationStatus = "failed"
        try:
            status = await self.checks.verify(run)
        except anyio.get_cancelled_exc_class():
            status = "cancelled"
            self.cancelled = True
            raise
        finally:
            # No await in here: nothing can cancel the record of the outcome.
            verification = run.record(join.verification, status)
            final = self._join_record(join.wave, join.started_at, verification)
            self.mission.wave_joins[-1] = final
            self.mission.usage = self.mission.total_usage()
            save_mission(self.mission)
            self._joined(final)
        return final

    async def _merge_completed(self, number: int, ids: list[str], *, ladder: bool) -> None:
        """Merge the wave's completed work, by commit, into the integration branch.

        The merges are computed one after another without moving the branch; it then moves
        once, from the head rho recorded to the last merge (compared and swapped, noted in the
        journal first). A merge git refuses fails its feature: its work is not in the
        integration branch, so it has not completed. A merge that conflicts climbs the ladder
        of ``_overlap`` when *ladder* is True (a resolver, then replays); before each of its
        stages the branch moves to the merges so far, durably. Called again (shielded, with
        *ladder* False) after a cancellation: it carries on where the first call stopped.
        """
        merges = self.merges
        if merges is None or merges.wave != number:
            merges = self.merges = await self._wave_merges(number, ids)
        if merges is None:
            return  # no new commit, or completed before the mission
        ladder = ladder and not self.cancelled
        while merges.todo:
            feature_id, commit = merges.todo[0]
            await self._merge_next(merges, self.mission.feature(feature_id), commit, ladder)
            merges.todo.popleft()
        while merges.replays:
            feature, text = merges.replays[0]
            if ladder and merges.broken is None:
                await self._replay(merges, feature, text)
            else:
                await self._not_climbed(feature, merges.broken or text)
            merges.replays.popleft()
        await self._land(merges, durably=False)

    async def _wave_merges(self, number: int, ids: list[str]) -> WaveMerges | None:
        start = self.mission.integration_head
        assert start is not None  # settled in _start
        commits = {i: c for i in sorted(ids) if (c := self.mission.feature(i).work_commit)}
        if not commits:
            return None
        chain = MergeChain(self.repo, start, await self._parents(commits.values()))
        return WaveMerges(number, chain, start, deque(commits.items()))

    async def _merge_next(
        self, merges: WaveMerges, feature: Feature, commit: str, ladder: bool
    ) -> None:
        if merges.broken is not None:  # the integration branch could not be moved
            await self._merge_failed(feature, merges.broken)
            return
        try:
            await anyio.to_thread.run_sync(self._merge_one, merges.chain, feature, commit)
        except MergeConflictError as exc:
            await self._conflicted(merges, feature, commit, exc, ladder)
        except MissionError as exc:
            await self._merge_failed(feature, str(exc))
        else:
            merges.took(feature)

    async def _conflicted(
        self,
        merges: WaveMerges,
        feature: Feature,
        commit: str,
        conflict: MergeConflictError,
        ladder: bool,
    ) -> None:
        """The ladder of a conflicted merge: the resolver, then a replay, else it fails."""
        text = conflict_text(conflict, merges.merged)
        record = conflict_record(conflict, merges.merged)
        feature.conflict = record
        if not ladder:
            await self._not_climbed(feature, text)
            return
        climbs = self.resolver is not None or self.mission.config.replay_conflicts > 0
        stop = self._budget_reached() if climbs else None
        if stop is not None:
            record.reason = stop  # no resolver or replay starts over the budget
        elif self.resolver is not None and await self._resolve(merges, feature, commit, record):
            return
        if stop is not None:
            await self._conflict_failed(feature, f"{text}; {stop}")
            return
        if self.mission.config.replay_conflicts > 0 and merges.broken is None:
            merges.replays.append((feature, text))  # after the join's other merges
            return
        await self._conflict_failed(feature, f"{text}; {record.reason}" if record.reason else text)

    async def _resolve(
        self, merges: WaveMerges, feature: Feature, commit: str, record: Conflict
    ) -> bool:
        """Hand the conflict to the resolver; whether its resolution is merged (and landed)."""
        assert self.resolver is not None
        problem = await self._land(merges)  # the merges before it stay, whatever comes
        if problem is not None:
            record.reason = problem
            return False
        record.resolve_attempts += 1
        head = merges.chain.head
        paths = tuple(record.paths)
        at = ConflictAt(feature, head, commit, paths, tuple(merges.merged), record.resolve_attempts)
        outcome = await self.resolver.resolve(at)
        if outcome.merge is None:
            record.reason = f"the resolver failed: {outcome.reason}"
            return False
        merges.chain.adopt(outcome.merge, commit)
        record.outcome, record.reason = "resolved", None
        merges.took(feature)
        await self._land(merges)  # durable at once: a crash from here on keeps it
        self.observer.feature_changed(self.mission, feature)
        return True

    async def _replay(self, merges: WaveMerges, feature: Feature, text: str) -> None:
        """Run *feature*'s task again from the joined head, at most ``replay_conflicts`` times,
        until its work merges."""
        record = feature.conflict
        assert record is not None  # set by _conflicted
        reason = record.reason
        while record.replays < self.mission.config.replay_conflicts:
            stop = self._budget_reached()
            if stop is not None:
                reason = stop
                break
            problem = await self._land(merges)
            if problem is not None:
                reason = problem
                break
            record.replays += 1
            head = merges.chain.head
            outcome = await self._replay_once(feature, head)
            if isinstance(outcome, str):
                reason = f"replay {record.replays} failed: {outcome}"
                continue
            feature.handoff = outcome
            if outcome.commit_id is not None:
                try:
                    merge = partial(self._merge_one, merges.chain, feature, outcome.commit_id)
                    await anyio.to_thread.run_sync(merge)
                except MergeConflictError as exc:
                    reason = f"replay {record.replays}: {conflict_text(exc, merges.merged)}"
                    continue
                except MissionError as exc:
                    reason = f"replay {record.replays}: {exc}"
                    continue
            record.outcome, record.reason = "replayed", None
            merges.took(feature)
            await self._end(feature, "completed", None)
            return
        record.reason = reason
        await self._conflict_failed(feature, f"{text}; {reason}" if reason else text)

    async def _replay_once(self, feature: Feature, head: str) -> Handoff | str:
        """One more attempt of *feature*'s task, from *head*: its handoff, or the error text."""
        feature.attempts += 1
        feature.status = "in_progress"
        self.journal.record(
            "replay", now_rfc3339_millis(), feature_id=feature.id, attempt=feature.attempts
        )
        self.observer.feature_changed(self.mission, feature)
        problem = await self._prepare_wave(head)
        if problem is not None:
            return problem
        if feature.id not in self.branch_heads:  # completed by an earlier run of the mission
            assert feature.branch is not None  # given by Mission.add_feature
            try:
                expected = partial(feature_head, self.repo, self.mission, self.history)
                found = await anyio.to_thread.run_sync(expected, feature.branch)
            except MissionError as exc:
                return str(exc)
            self.branch_heads[feature.id] = found
        attempt = self._attempt_of(feature, head, _at_once, replay=True)
        result = await self.executor.run_attempt(attempt)
        self.branch_heads[feature.id] = result.branch_head
        return result.handoff or result.error or "failed"

    async def _not_climbed(self, feature: Feature, text: str) -> None:
        """A conflicted merge that gets no (more) rungs: cancelled when a cancellation took
        them away (its task runs again at resume), else failed."""
        if self.cancelled and (self.resolver is not None or self.mission.config.replay_conflicts):
            if feature.conflict is not None:
                feature.conflict.reason = "cancelled"
            feature.handoff = None
            await self._end(feature, "cancelled", "cancelled")
            return
        await self._conflict_failed(feature, text)

    async def _conflict_failed(self, feature: Feature, text: str) -> None:
        if feature.conflict is not None:
            feature.conflict.outcome = "failed"
            feature.conflict.reason = feature.conflict.reason or text
        await self._merge_failed(feature, text)

    async def _land(self, merges: WaveMerges, *, durably: bool = True) -> str | None:
        """Move the integration branch to the join's head so far: None, or why it could not
        (the features whose work rode on that move then fail, and so does the rest of the
        join). *durably*: mission.json says so at once (before a stage of the ladder runs)."""
        with anyio.CancelScope(shield=True):  # a move made is always recorded
            head = merges.chain.head
            if head == merges.landed:
                return None
            label = f"wave {merges.wave} ({len(merges.chain.merged)} feature(s))"
            try:
                await anyio.to_thread.run_sync(self.repo.refuse_checked_out, self._integration)
                await self._move_integration(head, merges.landed, label)
            except MissionError as exc:  # none of their work reached the integration branch
                merges.broken = str(exc)
                for feature in merges.riding:
                    await self._merge_failed(feature, str(exc))
                merges.riding.clear()
                return merges.broken
            merges.landed = head
            merges.riding.clear()
            self.mission.integration_head = head
            if durably:
                save_mission(self.mission)
        return None

    async def _parents(self, commits: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """The commits' parents; none known when git refuses (a commit of no object, say):
        each merge then asks git itself, and fails its own feature."""
        try:
            return await anyio.to_thread.run_sync(self.repo.parents, sorted(set(commits)))
        except MissionError:
            return {}

    async def _merge_failed(self, feature: Feature, reason: str) -> None:
        feature.handoff = None
        await self._end(feature, "failed", reason)

    def _merge_one(self, join: MergeChain, feature: Feature, commit: str) -> None:
        message = f"rho-mission {self.mission.id}: merge {feature.id}"
        names = (self._integration, feature.branch or feature.id)
        join.add(commit, message, names)

    async def _move_integration(self, new: str, old: str, what: str) -> None:
        """Move the integration branch from *old* to *new*, noted in the journal first."""
        self.history.note(self._integration, new, "join")
        message = f"rho-mission {self.mission.id}: merge {what}"
        await anyio.to_thread.run_sync(self.repo.move_branch, self._integration, new, old, message)

    async def _finish(self) -> None:
        mission = self.mission
        # Nothing of the mission outlives it: a task's daemon that left its process group too.
        await end_mission_processes(mission.id, mission.config.grace_period)
        # Before the executor's: its folder holds the stages' folder, then empty.
        self.warnings.extend(await self.stage_runner.close())
        await self._close_executor()
        await self.store.flush()
        await anyio.to_thread.run_sync(self.store.release, mission.id)
        self.warnings.extend(self.store.problems)
        unverified = any(j.verification.status == "failed" for j in mission.wave_joins)
        stopped = mission.budget_stop is not None
        mission.status = final_status(
            mission.features, self.cancelled, unverified=unverified, budget_stopped=stopped
        )
        mission.usage = mission.total_usage()
        if mission.budget_stop is not None:
            mission.budget_stop = self.budget.final_stop(mission.budget_stop, mission.usage)
        mission.completed_at = now_rfc3339_millis()
        ran = time.monotonic() - self.run_began
        mission.run_seconds = round((mission.run_seconds or 0.0) + ran, 3)
        save_mission(mission)
        self.journal.record(
            "mission",
            mission.completed_at,
            durable=True,
            mission_id=mission.id,
            status=mission.status,
        )

    async def _close_executor(self) -> None:
        self.warnings.extend(await self.executor.close())


def _note_setup(feature: Feature, record: FeatureSetup) -> None:
    """Keep what the worktree setup of *feature*'s attempt came to (shown by ``mission show``)."""
    feature.setup = record


async def _at_once() -> None:
    """A replay's ``ready``: its start is not written to the task store (it holds the task's
    end already; the replay's outcome replaces it)."""


def _reset(feature: Feature) -> None:
    feature.conflict = None
    feature.status = "pending"
    feature.error = None
    feature.handoff = None
    feature.started_at = None
    feature.completed_at = None
