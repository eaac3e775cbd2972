"""A join's merges and the ladder a conflicted merge climbs, as the wave runner does them.

The join merges the wave's completed work in its fixed order onto the integration head
(``_overlap.WaveMerges``, ``git._repo.MergeChain``) and moves the integration branch once, by
compare-and-swap, noted in the journal first (the runner's ``move_integration``). Where a
conflicted merge goes next, and how it ends when it gets no rung, is decided by ``_state``;
this module does the git and the stages around those decisions. The runner it works for is
seen through `LadderHost` only: what a feature's end, a replay's attempt, the budget and the
branch move need.

Decision: docs/decisions/0505-conflicts.md (the ladder), docs/decisions/0514-wave-state.md
(the split between decisions and I/O)
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from functools import partial
from typing import Protocol

import anyio

from .._errors import MergeConflictError, MissionError
from ..git._repo import GitRepo, MergeChain
from ..records._document import Conflict, Feature, FeatureStatus, Handoff, MissionDocument
from ..records._persist import save_mission
from ._joins import conflict_record, conflict_text
from ._overlap import WaveMerges
from ._resolve import ConflictAt, ConflictResolver
from ._state import climb_refused, next_rung, replay_allowed

__all__ = ["JoinLadder", "LadderHost"]


class LadderHost(Protocol):
    """What the ladder needs of the wave runner (``_loop._WaveRunner``)."""

    mission: MissionDocument
    repo: GitRepo
    cancelled: bool

    async def end(self, feature: Feature, status: FeatureStatus, error: str | None) -> None:
        """Record *feature*'s end (mission, journal, task store, observer)."""

    def budget_reached(self) -> str | None:
        """Why no attempt may start now, or None."""

    async def replay_once(self, feature: Feature, head: str) -> Handoff | str:
        """One more attempt of *feature*'s task from *head*: its handoff, or the error."""

    async def move_integration(self, new: str, old: str, what: str) -> None:
        """Move the integration branch from *old* to *new*, noted in the journal first."""

    def feature_changed(self, feature: Feature) -> None:
        """Tell the observer that *feature* changed."""


class JoinLadder:
    """The merges of the wave being joined, and the rungs of its conflicted merges."""

    def __init__(self, host: LadderHost, resolver: ConflictResolver | None) -> None:
        self.host = host
        self.mission = host.mission
        self.repo = host.repo
        self.resolver = resolver
        # The merges of the wave being joined (see merge_completed).
        self.merges: WaveMerges | None = None

    @property
    def _replay_conflicts(self) -> int:
        return self.mission.config.replay_conflicts

    async def merge_completed(self, number: int, ids: list[str], *, ladder: bool) -> None:
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
        ladder = ladder and not self.host.cancelled
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
        assert start is not None  # settled when the run started
        commits = {i: c for i in sorted(ids) if (c := self.mission.feature(i).work_commit)}
        if not commits:
            return None
        chain = MergeChain(self.repo, start, await self.parents(commits.values()))
        return WaveMerges(number, chain, start, deque(commits.items()))

    async def _merge_next(
        self, merges: WaveMerges, feature: Feature, commit: str, ladder: bool
    ) -> None:
        if merges.broken is not None:  # the integration branch could not be moved
            await self._merge_failed(feature, merges.broken)
            return
        try:
            await anyio.to_thread.run_sync(self.merge_one, merges.chain, feature, commit)
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
        climbs = self.resolver is not None or self._replay_conflicts > 0
        stop = self.host.budget_reached() if climbs else None
        rung = self._rung(merges, stop, resolver_tried=False)
        if rung == "resolve":
            if await self._resolve(merges, feature, commit, record):
                return
            rung = self._rung(merges, stop, resolver_tried=True)
        if rung == "replay":
            merges.replays.append((feature, text))  # after the join's other merges
            return
        if stop is not None:  # no resolver or replay starts over the budget
            record.reason = stop
            await self._conflict_failed(feature, f"{text}; {stop}")
            return
        await self._conflict_failed(feature, f"{text}; {record.reason}" if record.reason else text)

    def _rung(self, merges: WaveMerges, stop: str | None, *, resolver_tried: bool) -> str:
        return next_rung(
            has_resolver=self.resolver is not None,
            replay_conflicts=self._replay_conflicts,
            budget_stop=stop,
            broken=merges.broken is not None,
            resolver_tried=resolver_tried,
        )

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
        self.host.feature_changed(feature)
        return True

    async def _replay(self, merges: WaveMerges, feature: Feature, text: str) -> None:
        """Run *feature*'s task again from the joined head, at most ``replay_conflicts`` times,
        until its work merges."""
        record = feature.conflict
        assert record is not None  # set by _conflicted
        reason = record.reason
        while record.replays < self._replay_conflicts:
            stop = self.host.budget_reached()
            if not replay_allowed(record.replays, self._replay_conflicts, stop):
                reason = stop
                break
            problem = await self._land(merges)
            if problem is not None:
                reason = problem
                break
            record.replays += 1
            outcome = await self.host.replay_once(feature, merges.chain.head)
            if isinstance(outcome, str):
                reason = f"replay {record.replays} failed: {outcome}"
                continue
            feature.handoff = outcome
            problem = await self._merge_replayed(merges, feature, outcome)
            if problem is not None:
                reason = f"replay {record.replays}: {problem}"
                continue
            record.outcome, record.reason = "replayed", None
            merges.took(feature)
            await self.host.end(feature, "completed", None)
            return
        record.reason = reason
        await self._conflict_failed(feature, f"{text}; {reason}" if reason else text)

    async def _merge_replayed(
        self, merges: WaveMerges, feature: Feature, outcome: Handoff
    ) -> str | None:
        """Merge a replay's work onto the joined head: None, or why it did not merge."""
        if outcome.commit_id is None:
            return None
        try:
            merge = partial(self.merge_one, merges.chain, feature, outcome.commit_id)
            await anyio.to_thread.run_sync(merge)
        except MergeConflictError as exc:
            return conflict_text(exc, merges.merged)
        except MissionError as exc:
            return str(exc)
        return None

    async def _not_climbed(self, feature: Feature, text: str) -> None:
        """A conflicted merge that gets no (more) rungs: cancelled when a cancellation took
        them away (its task runs again at resume), else failed."""
        ending = climb_refused(
            cancelled=self.host.cancelled,
            has_resolver=self.resolver is not None,
            replay_conflicts=self._replay_conflicts,
        )
        if ending == "cancelled":
            if feature.conflict is not None:
                feature.conflict.reason = "cancelled"
            feature.handoff = None
            await self.host.end(feature, "cancelled", "cancelled")
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
            branch = self.mission.integration_branch
            try:
                await anyio.to_thread.run_sync(self.repo.refuse_checked_out, branch)
                await self.host.move_integration(head, merges.landed, label)
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

    async def parents(self, commits: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """The commits' parents; none known when git refuses (a commit of no object, say):
        each merge then asks git itself, and fails its own feature."""
        try:
            return await anyio.to_thread.run_sync(self.repo.parents, sorted(set(commits)))
        except MissionError:
            return {}

    async def _merge_failed(self, feature: Feature, reason: str) -> None:
        feature.handoff = None
        await self.host.end(feature, "failed", reason)

    def merge_one(self, join: MergeChain, feature: Feature, commit: str) -> None:
        """Merge *feature*'s *commit* onto *join*'s head (git's work: call in a thread)."""
        message = f"rho-mission {self.mission.id}: merge {feature.id}"
        names = (self.mission.integration_branch, feature.branch or feature.id)
        join.add(commit, message, names)
