"""The wave engine: run features wave by wave, join, persist, and only then go on.

The engine is the coordinator. Inside a wave an anyio task group runs features with at most
``max_workers`` at once (a ``CapacityLimiter``); each attempt of a feature is run by an executor
(``executors._contract.Executor``: this machine's worktrees by default, or a Dask cluster), which
hands back a handoff or an error. Retries, statuses, joins and persistence are here; the join's
merges and their ladder are ``_ladder``'s, what attempts spend ``_spend``'s, and every choice
between two steps (what starts, whether the next wave starts, whether a head is checked) is a
pure function of ``_state``. Once features run, every blocking git call goes through a worker
thread (the set-up before the first wave runs git directly: nothing else is running yet). All
mission state is changed on the event loop thread only, so the document never needs a lock.

A join, and the final write of the mission, run in shielded scopes: a cancellation (Ctrl-C,
SIGTERM, a timeout) stops the work, never the record of it.

With a verify stage (``_verify``), a join whose wave lets the mission go on is first recorded
with its verification ``running`` (durably: a crash resumes into the checks, not past them);
the checks (and fixes) run outside the shield, so that Ctrl-C stops them too, and the join is
recorded again with their outcome.

Decision: docs/decisions/0502-the-users-loop.md, docs/decisions/0514-wave-state.md
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import anyio
import anyio.abc
import anyio.lowlevel

from graph import sha256_hex as digest

from ..containment._mission_processes import end_mission_processes
from ..executors._contract import Executor, Observer, SetupStep, Worker
from ..git._refs import RefHistory, check_id_free, settle_refs
from ..git._repo import GitRepo
from ..records._clock import now_rfc3339_millis
from ..records._document import (
    Feature,
    FeatureStatus,
    Handoff,
    MissionDocument,
    Verification,
    VerificationStatus,
    WaveJoin,
)
from ..records._journal import Journal
from ..records._persist import save_mission, save_mission_after
from ..records._usage import UsageTotal, add_usage, sum_usage
from ._adopt import adopt_finished
from ._bisect import JoinOrder
from ._features import FeatureRuns
from ._joins import (
    blocked_downstream,
    final_status,
    first_unfinished,
    join_record,
)
from ._ladder import JoinLadder
from ._observing import GuardedObserver, Silent
from ._resolve import ConflictResolver
from ._spend import SpendKeeper
from ._stage_runner import StageRunner
from ._stage_workers import Stages
from ._state import bisect_base, goes_on, startable, verification_due
from ._storesync import StoreSync
from ._verify import JoinChecks, VerificationRun

__all__ = ["run_waves"]

# Seconds a thread may hold the GIL while another waits, during a run (see _quick_handovers).
_SWITCH_INTERVAL = 0.0005


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
    guarded = GuardedObserver(notes, observer or Silent())
    runner = _WaveRunner(mission, worker, executor, guarded, notes, stages, resolve, setup)
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


class _WaveRunner:
    """The I/O of one run of a mission's waves: git, the executor, the task store, the journal
    and mission.json around the decisions of ``_state`` (see the module)."""

    def __init__(
        self,
        mission: MissionDocument,
        worker: Worker,
        executor: Executor,
        observer: GuardedObserver,
        warnings: list[str],
        stages: Stages | None,
        resolve: Worker | None,
        setup: SetupStep | None,
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
        self.cancelled = False
        # What the mission spent so far, against its budgets (``_spend``, ``_budget``).
        self.spend = SpendKeeper(mission, self.journal, self._stop_wave)
        self.stage_runner = StageRunner(
            mission,
            self.repo,
            self.journal,
            self.history,
            setup=setup,
            budget_left_usd=self.spend.left_usd,
        )
        # The running wave's features (a hard budget stops them).
        self.wave_group: anyio.abc.TaskGroup | None = None
        # When this run began: what it adds to the mission's run_seconds at its end.
        self.run_began = time.monotonic()
        self.checks = None if stages is None else self._join_checks(stages)
        resolver = (
            None
            if resolve is None
            else ConflictResolver(
                mission, self.stage_runner, resolve, self.journal, self.spend.note_feature_usage
            )
        )
        self.ladder = JoinLadder(self, resolver)
        self.features = FeatureRuns(
            mission,
            worker,
            executor,
            repo=self.repo,
            journal=self.journal,
            history=self.history,
            store=self.store,
            observer=observer,
            spend=self.spend,
            setup=setup,
        )

    def _join_checks(self, stages: Stages) -> JoinChecks:
        return JoinChecks(
            self.mission,
            stages,
            journal=self.journal,
            runner=self.stage_runner,
            observer=self.observer,
            move_integration=self.move_integration,
            note_usage=self.spend.note_stage_usage,
            budget_stop=self.budget_reached,
            culprits=self if self.mission.config.bisect else None,
        )

    # -- what the ladder asks of the runner (``_ladder.LadderHost``) ---------------------------

    def budget_reached(self) -> str | None:
        """Why no attempt may start now (a budget reached), or None."""
        return self.spend.reached()

    async def end(self, feature: Feature, status: FeatureStatus, error: str | None) -> None:
        """Record *feature*'s end (``_features``)."""
        await self.features.end(feature, status, error)

    async def replay_once(self, feature: Feature, head: str) -> Handoff | str:
        """One more attempt of *feature*'s task from *head* (``_features``)."""
        return await self.features.replay_once(feature, head)

    def feature_changed(self, feature: Feature) -> None:
        """Tell the observer that *feature* changed."""
        self.observer.feature_changed(self.mission, feature)

    def _stop_wave(self) -> None:
        """A hard budget was reached: stop the running wave's attempts."""
        if self.wave_group is not None:
            self.features.hard_stopped = True
            self.wave_group.cancel_scope.cancel()

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
                self.features.branch_heads = settle_refs(self.repo, mission, self.history)
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
        # The adopted features' ends are in the store before mission.json says they completed:
        # a kill in between would leave them in_progress there, never written again. Shielded:
        # a stop arriving here is taken inside run's try, whose finally ends the run.
        with anyio.CancelScope(shield=True):
            await save_mission_after(mission, self.store.flush)
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
        self.spend.recount()
        # And what a crash left behind in the store: an end mission.json has and the store lost.
        ended = {feature.id for feature in adopted}
        done = [f.id for f in mission.features if f.status == "completed" and f.id not in ended]
        ended.update(self.store.left_started(done, mission.id))
        for feature in mission.features:
            if feature.id in ended:
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
        for number in range(first + 1, len(waves) + 1):
            join = await self._run_wave(number, waves[number - 1])
            going = goes_on(
                cancelled=self.cancelled,
                any_cancelled=bool(join.cancelled_ids),
                # A culprit of a bisected join fails alone: what depends on it is blocked.
                any_failed=bool(set(join.failed_ids) - set(join.verification.culprit_ids)),
                keep_going=self.mission.config.keep_going,
                budget_stopped=self.mission.budget_stop is not None,
                verification=join.verification.status,
            )
            if not going:
                return

    async def _run_wave(self, number: int, ids: list[str]) -> WaveJoin:
        started = now_rfc3339_millis()
        head = self.mission.integration_head
        assert head is not None  # settled in _start; moved only by joins
        # With keep_going, a feature downstream of a failure stays pending (never dispatched).
        blocked = blocked_downstream(self.mission.features, self.mission.waves)
        self.features.wave_problem = await self.features.prepare_wave(head)
        self.ladder.merges = None
        try:
            async with anyio.create_task_group() as group:
                self.wave_group = group
                # Started by priority, then natural order; merged in the join's own order.
                for feature_id in self._startable(ids, blocked):
                    group.start_soon(
                        self.features.run_feature, self.mission.feature(feature_id), head
                    )
            # The merges, with the resolve and replay stages (which a cancellation stops);
            # the join's record, shielded, merges what a cancellation left without them.
            self.wave_group = None
            await self.ladder.merge_completed(number, ids, ladder=True)
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise
        finally:
            with anyio.CancelScope(shield=True):
                join = await self._join(number, ids, started)
        if join.verification.status == "running":
            join = await self._verify(join)
        return join

    def _startable(self, ids: list[str], blocked: set[str]) -> list[str]:
        features = [self.mission.feature(i) for i in ids]
        statuses = {f.id: f.status for f in features}
        return startable(ids, statuses, {f.id: f.priority for f in features}, blocked)

    @property
    def _integration(self) -> str:
        return self.mission.integration_branch

    # -- the join ----------------------------------------------------------------------------

    async def _join(self, number: int, ids: list[str], started: str) -> WaveJoin:
        """The wave's join: merge its completed work, note where the work is, end what a
        cancellation left, record the join and save, with its verification ``running`` when
        the checks follow (``_verify`` then records it again)."""
        await self.ladder.merge_completed(number, ids, ladder=False)
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
                    await self.end(feature, "cancelled", "cancelled")
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
        """``running`` when the wave's head is to be verified (``_state.verification_due``),
        unless an earlier join's checks passed on that very head."""
        statuses = {self.mission.feature(i).status for i in ids}
        due = verification_due(
            statuses,
            verifying=self.checks is not None,
            cancelled=self.cancelled,
            keep_going=self.mission.config.keep_going,
        )
        if self.checks is None or not due:
            return Verification()  # a mission that stops here is verified at its resume
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
        run = VerificationRun(join.wave, head, time.monotonic(), order=self._join_order(join))
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

    def _join_order(self, join: WaveJoin) -> JoinOrder | None:
        """The base and merges of *join*, when a failure of its checks is to be bisected."""
        if not self.mission.config.bisect:
            return None
        mission = self.mission
        base = bisect_base(join.wave, mission.base_commit, mission.wave_joins[: join.wave - 1])
        ids = sorted(mission.waves[join.wave - 1])
        if any(mission.feature(i).conflict is not None for i in ids):
            return None  # a resolver's merge, or a replay's, is not made again by merging
        merges = tuple((i, c) for i in ids if (c := mission.feature(i).work_commit))
        if base is None or not merges or base == mission.integration_head:
            return None
        return JoinOrder(base, merges)

    # -- what a bisected join asks of the runner (``_bisect.CulpritHost``) ---------------------

    async def blame(self, feature_id: str, error: str) -> None:
        """Fail a culprit of a bisected join: its work is not in the head that lands."""
        feature = self.mission.feature(feature_id)
        feature.handoff = None
        await self.end(feature, "failed", error)
        # Its work, noted at the join's merged head, is not in the head that lands.
        await anyio.to_thread.run_sync(self.store.forget_work, [feature_id], self.mission.id)

    async def replay_culprit(self, feature_id: str, head: str, verify_log: Path) -> Handoff | str:
        """Run a culprit's task again from *head*, the failed checks' output at hand."""
        return await self.features.replay_once(self.mission.feature(feature_id), head, verify_log)

    async def readmit(self, feature_id: str, handoff: Handoff) -> None:
        """A culprit's replayed work landed: it completed, with *handoff*."""
        feature = self.mission.feature(feature_id)
        feature.handoff = handoff
        await self.end(feature, "completed", None)

    async def landed(self, feature_ids: Sequence[str], head: str) -> None:
        """The work of *feature_ids* is in *head*, the bisected join's head that landed."""
        if feature_ids:
            await anyio.to_thread.run_sync(
                self.store.record_work, list(feature_ids), head, self.mission.id
            )

    async def move_integration(self, new: str, old: str, what: str) -> None:
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
            mission.budget_stop = self.spend.budget.final_stop(mission.budget_stop, mission.usage)
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


def _reset(feature: Feature) -> None:
    feature.conflict = None
    feature.status = "pending"
    feature.error = None
    feature.handoff = None
    feature.started_at = None
    feature.completed_at = None
