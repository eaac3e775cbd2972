"""One feature's run in a wave: dispatch, attempts and retries, replays, and its recorded end.

The executor runs each attempt (``executors._contract.Executor``) and hands back a handoff or
an error; a failure is a result, never an exception. No attempt starts over the budget
(``_spend``); a hard budget cancels the running ones, which end ``cancelled`` by the budget and
run again at a resume. A feature's end is recorded whole (mission, journal, task store,
observer) in a shielded scope: a cancellation never splits it.

Decision: docs/decisions/0501-missions.md, docs/decisions/0514-wave-state.md
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

import anyio
import anyio.lowlevel

from graph import sha256_hex as digest

from .._errors import MissionError
from ..executors._contract import Attempt, Executor, SetupStep, Worker
from ..git._refs import RefHistory, feature_head
from ..git._repo import GitRepo
from ..records._clock import now_rfc3339_millis
from ..records._document import Feature, FeatureSetup, FeatureStatus, Handoff, MissionDocument
from ..records._journal import Journal
from ..records._persist import note_feature_end
from ..records._places import feature_log
from ._budget import budget_note
from ._joins import interrupted_note
from ._observing import GuardedObserver
from ._spend import SpendKeeper
from ._storesync import StoreSync

__all__ = ["FeatureRuns"]


class FeatureRuns:
    """The attempts of one run's features (see the module)."""

    def __init__(
        self,
        mission: MissionDocument,
        worker: Worker,
        executor: Executor,
        *,
        repo: GitRepo,
        journal: Journal,
        history: RefHistory,
        store: StoreSync,
        observer: GuardedObserver,
        spend: SpendKeeper,
        setup: SetupStep | None,
    ) -> None:
        self.mission = mission
        self.worker = worker
        self.executor = executor
        self.repo = repo
        self.journal = journal
        self.history = history
        self.store = store
        self.observer = observer
        self.spend = spend
        # The mission's worktree setup, run by the executor before attempts (None: none).
        self.setup = setup
        self.folder = Path(mission.dir)
        # The head each feature branch must hold when rho next moves it (compare-and-swap).
        self.branch_heads: dict[str, str | None] = {}
        self.limiter = anyio.CapacityLimiter(mission.config.max_workers)
        # Why the executor could not make a wave's start available (its features then fail).
        self.wave_problem: str | None = None
        # Whether a hard budget stopped the running wave.
        self.hard_stopped = False

    async def prepare_wave(self, head: str) -> str | None:
        try:
            await self.executor.prepare_wave(head)
        except MissionError as exc:
            return f"the wave's start could not be made available: {exc}"
        return None

    async def run_feature(self, feature: Feature, head: str) -> None:
        async with self.limiter, anyio.create_task_group() as group:
            stop = self.spend.reached()
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
                        await self.end(feature, "cancelled", "cancelled")
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
            stop = self.spend.reached() if number else None
            if stop is not None:  # no retry starts over the budget
                await self._budget_held(feature, stop)
                return
            feature.attempts += 1
            outcome = await self._attempt(feature, head, ready)
            if isinstance(outcome, Handoff):
                feature.handoff = outcome
                await self.end(feature, "completed", None)
                return
            stop = self.spend.stopped_by_agent_budget(feature)
            if stop is not None:  # not a crash: the agent's own cap ended it
                await self._budget_held(feature, f"{stop}: {outcome}")
                return
            error = outcome
        await self.end(feature, "failed", error)

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
        verify_log: Path | None = None,
    ) -> Attempt:
        def started(pgid: int) -> None:
            self.journal.record("process", now_rfc3339_millis(), feature_id=feature.id, pgid=pgid)

        cap = self.spend.cap(feature)
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
            verify_log=verify_log,
            note_usage=partial(self.spend.note_feature_usage, feature),
            budget_left_usd=cap,
            setup=self.setup,
            note_setup=partial(_note_setup, feature),
        )

    async def _budget_held(self, feature: Feature, reason: str) -> None:
        """End *feature* ``cancelled`` by the budget: it runs again at a resume."""
        note = budget_note(self.mission.id, reason, self.mission.config)
        await self.end(feature, "cancelled", reason, note=note)

    async def end(
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

    async def replay_once(
        self, feature: Feature, head: str, verify_log: Path | None = None
    ) -> Handoff | str:
        """One more attempt of *feature*'s task, from *head*: its handoff, or the error text;
        *verify_log*: the checks that failed after its merge (a culprit's replay)."""
        feature.attempts += 1
        feature.status = "in_progress"
        self.journal.record(
            "replay", now_rfc3339_millis(), feature_id=feature.id, attempt=feature.attempts
        )
        self.observer.feature_changed(self.mission, feature)
        problem = await self.prepare_wave(head)
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
        attempt = self._attempt_of(feature, head, _at_once, replay=True, verify_log=verify_log)
        result = await self.executor.run_attempt(attempt)
        self.branch_heads[feature.id] = result.branch_head
        return result.handoff or result.error or "failed"


def _note_setup(feature: Feature, record: FeatureSetup) -> None:
    """Keep what the worktree setup of *feature*'s attempt came to (shown by ``mission show``)."""
    feature.setup = record


async def _at_once() -> None:
    """A replay's ``ready``: its start is not written to the task store (it holds the task's
    end already; the replay's outcome replaces it)."""
