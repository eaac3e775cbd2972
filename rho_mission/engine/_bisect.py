"""Bisect a failed join: find the merges that broke the checks, land the head without them.

When the checks fail on a join's merged head (``_verify``) and ``MissionConfig.bisect`` is on,
the join is split as bors and Mergify split a failed batch:

1. the checks run on the wave's base (the integration head before this join's merges); if they
   fail there too, nobody is blamed (``Verification.base_failed``) and the fix stage, if any,
   runs as without bisection;
2. otherwise ``_state.Bisection`` probes prefixes of the join's fixed merge order (sorted ids),
   each merged anew onto the base (``git._repo.MergeChain``, no ref moved) and checked in a
   fresh verify worktree on its own branch, ``verify-<wave>-<n>``, its output in
   ``logs/verify-<wave>-<n>.log``; the first merge after which the checks fail names a culprit,
   the merges after it are made again without it, and the search goes on until a head passes;
3. the culprits fail (``checks failed on the merged head after <id>: ...``; what depends on
   them is blocked), the integration branch moves to the head that passed (noted in the
   journal first, then compare-and-swap), and the join's verification passes.

A join with a conflicted merge (resolved or replayed) is not bisected: merging the features'
commits again would not make its head.

Every check run is a stage run of its own, counted (``Verification.bisect_runs``; the base's
included). Each step is journaled (``bisect`` events) before a branch moves for it. A crash
leaves the join ``running`` with its merged head on the integration branch: the resume checks
that head again and, the merges and their order being the same, finds the same culprits.

Decision: docs/decisions/0515-bisect-a-failed-join.md
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Protocol

import anyio

from graph import sha256_hex as digest

from .._errors import MissionError, UnsafePathError
from ..git._repo import GitRepo, MergeChain
from ..records._clock import now_rfc3339_millis
from ..records._document import Handoff, MissionDocument
from ..records._journal import Journal
from ..records._logs import read_tail
from ._state import Bisection

__all__ = ["BisectOutcome", "Bisector", "CulpritHost", "JoinOrder", "first_lines"]

# Checks *head* as stage run *name*: None, or why they failed.
CheckHead = Callable[[str, str], Awaitable[str | None]]

# Lines of a failed check's output a culprit's error keeps.
_FIRST_LINES = 3
# The most of the checks' last line a culprit's error carries.
_SAID_LIMIT = 200


@dataclass(frozen=True)
class JoinOrder:
    """A join's base (the integration head before its merges) and its merges in order:
    (feature id, commit) pairs."""

    base: str
    merges: tuple[tuple[str, str], ...]


@dataclass
class BisectOutcome:
    """What a bisection came to: the head to land (None: the base failed too), the culprits
    with their errors (in the order found), the features whose merge git refused without
    them (each with why)."""

    head: str | None
    culprits: dict[str, str] = field(default_factory=dict)
    # The stage run whose log shows each culprit's failure (``verify-<wave>[-<n>]``).
    logs: dict[str, str] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)
    base_failed: bool = False


def first_lines(text: str, count: int = _FIRST_LINES) -> str:
    """The first *count* non-blank lines of *text*, joined by ``; ``."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return "; ".join(lines[:count])


def _blame_text(folder: Path, error: str, name: str) -> str:
    said = checks_said(folder / "logs" / f"{name}.log")
    return f"{first_lines(error)}{f': {said}' if said else ''} (log: logs/{name}.log)"


def checks_said(log: Path) -> str | None:
    """The checks' own last word in *log* (their last line of output: ``FAILED (errors=2)``,
    ``2 failed in 0.31s``, ``make: *** [test] Error 1``), made printable and cut; None when
    the log says nothing or cannot be read (a culprit's error never waits on its log)."""
    try:
        tail = read_tail(log, output_only=True)
    except (OSError, UnsafePathError):
        return None
    said = next((line.strip() for line in reversed(tail or []) if line.strip()), None)
    return None if said is None else said[:_SAID_LIMIT]


class CulpritHost(Protocol):
    """What a bisected join asks of the wave runner for its culprits."""

    async def blame(self, feature_id: str, error: str) -> None:
        """Fail *feature_id*: its work is not in the head that lands."""

    async def replay_culprit(self, feature_id: str, head: str, verify_log: Path) -> Handoff | str:
        """Run *feature_id*'s task again from *head*, *verify_log* at hand: its handoff, or
        why it failed."""

    async def readmit(self, feature_id: str, handoff: Handoff) -> None:
        """*feature_id*'s replayed work landed: it completed, with *handoff*."""

    async def landed(self, feature_ids: Sequence[str], head: str) -> None:
        """The work of *feature_ids* is in *head*, the head that landed (the task store notes
        it there, not at the merged head whose checks failed)."""


class Bisector:
    """The bisection of one run's failed joins (see the module)."""

    def __init__(self, mission: MissionDocument, repo: GitRepo, journal: Journal) -> None:
        self.mission = mission
        self.repo = repo
        self.journal = journal

    async def bisect(
        self,
        wave: int,
        order: JoinOrder,
        failed: str,
        names: Callable[[], str],
        check: CheckHead,
    ) -> BisectOutcome:
        """Find the culprits of wave *wave*'s head, whose checks failed with *failed* (in
        ``logs/verify-<wave>.log``), each head checked by *check*; *names* gives each check
        run's stage name (``verify-<wave>-<n>``)."""
        checked = partial(self._checked, wave, check)
        base_error = await checked(order.base, names(), ())
        if base_error is not None:
            return BisectOutcome(None, base_failed=True)
        commits = dict(order.merges)
        search = Bisection.of_failed_head(commits)
        heads = _Heads(self, order.base, commits)
        errors = {tuple(search.order): (failed, f"verify-{wave}")}
        refused: dict[str, str] = {}
        while (probe := search.next_probe()) is not None:
            prefix = tuple(search.order[: probe.length])
            head, problem = await heads.of(prefix)
            if head is None:
                assert problem is not None
                feature_id, why = problem
                refused[feature_id] = why
                search.merge_refused(feature_id)
                continue
            name = names()
            error = await checked(head, name, prefix)
            if error is None:
                search.passed(probe)
            else:
                errors[prefix] = (error, name)
                search.failed(probe)
        passing, _ = await heads.of(tuple(search.passing))
        assert passing is not None  # every prefix of it merged before
        blamed = {c: errors[search.blamed_by[c]] for c in search.culprits}
        folder = Path(self.mission.dir)
        culprits = {c: _blame_text(folder, *blamed[c]) for c in search.culprits}
        logs = {c: blamed[c][1] for c in search.culprits}
        return BisectOutcome(passing, culprits, logs, refused)

    def merge_onto(self, head: str, feature_id: str, commit: str) -> str:
        """The merge of *feature_id*'s *commit* onto *head*, no ref moved (git's work: call
        in a thread).

        Raises:
            MergeConflictError: the two conflict.
            MissionError: git refused the merge.
        """
        mission = self.mission
        chain = MergeChain(self.repo, head, {})
        message = f"rho-mission {mission.id}: merge {feature_id}"
        feature = mission.feature(feature_id)
        chain.add(commit, message, (mission.integration_branch, feature.branch or feature_id))
        return chain.head

    async def _checked(
        self, wave: int, check: CheckHead, head: str, name: str, prefix: Sequence[str]
    ) -> str | None:
        """Journal the step, durably, then check *head* (a branch moves for it)."""
        self.journal.record(
            "bisect",
            now_rfc3339_millis(),
            durable=True,
            wave=wave,
            stage=name,
            merged=len(prefix),
            head_sha256=digest(head),
        )
        return await check(head, name)


class _Heads:
    """The heads of prefixes of a join's merge order, merged onto its base (no ref moved)."""

    def __init__(self, bisector: Bisector, base: str, commits: dict[str, str]) -> None:
        self.bisector = bisector
        self.base = base
        self.commits = commits
        self._known: dict[tuple[str, ...], str] = {(): base}

    async def of(self, prefix: tuple[str, ...]) -> tuple[str | None, tuple[str, str] | None]:
        """The head of *prefix*, or None and (the feature git refused to merge, why)."""
        if prefix in self._known:
            return self._known[prefix], None
        start = max((p for p in self._known if prefix[: len(p)] == p), key=len)
        head = self._known[start]
        for index in range(len(start), len(prefix)):
            feature_id = prefix[index]
            try:
                head = await anyio.to_thread.run_sync(self._merge, head, feature_id)
            except MissionError as exc:
                return None, (feature_id, str(exc))
            self._known[prefix[: index + 1]] = head
        return head, None

    def _merge(self, head: str, feature_id: str) -> str:
        return self.bisector.merge_onto(head, feature_id, self.commits[feature_id])
