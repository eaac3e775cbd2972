"""The wave's decisions, with no I/O: what may start, the ladder's next rung, the stops.

The wave runner (``_loop``) does the work (git, executors, the task store, the journal); every
choice it makes between two pieces of work is a function here of plain values: features'
statuses, the mission's options, what the last step came to. None of them reads a file, runs
git or awaits, so each is tested on its own, in microseconds
(``tests/engine_tests/test_wave_state.py``), and the runner stays the I/O around them.

- `startable`: which of a wave's features start, and in what order;
- `goes_on`: whether the next wave starts after a join;
- `verification_due`: whether a join's head is checked;
- `next_rung`: where a conflicted merge goes (the resolver, a replay, or its failure);
- `climb_refused`: how a conflicted merge that gets no (more) rungs ends;
- `replay_allowed`: whether one more replay of a conflicted feature starts;
- `bisect_base`: the head a join's merges started from, where its failure is bisected;
- `Bisection`: the search, over the join's fixed merge order, for the merges that broke the
  checks (``_bisect`` runs it).

Decision: docs/decisions/0514-wave-state.md
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ..records._document import WaveJoin
from ..records._order import start_order

__all__ = [
    "Bisection",
    "Probe",
    "Rung",
    "bisect_base",
    "climb_refused",
    "goes_on",
    "next_rung",
    "replay_allowed",
    "startable",
    "verification_due",
]

Rung = Literal["resolve", "replay", "fail"]


def startable(
    ids: Iterable[str],
    statuses: Mapping[str, str],
    priorities: Mapping[str, int | None],
    blocked: Collection[str],
) -> list[str]:
    """The features of a wave that start, in start order (priority, then natural order):
    neither completed (by an earlier run) nor downstream of a failure (*blocked*)."""
    return [
        i for i in start_order(ids, priorities) if statuses[i] != "completed" and i not in blocked
    ]


def goes_on(
    *,
    cancelled: bool,
    any_cancelled: bool,
    any_failed: bool,
    keep_going: bool,
    budget_stopped: bool,
    verification: str,
) -> bool:
    """Whether the wave after a join starts: nothing cancelled, no failure (or ``keep_going``),
    no budget reached, and the joined head verified (or not to be verified)."""
    if any_cancelled or cancelled or (any_failed and not keep_going):
        return False
    if budget_stopped:
        return False  # a resume with a higher budget runs it
    return verification in ("passed", "skipped")  # never from an unverified head


def verification_due(
    statuses: Collection[str], *, verifying: bool, cancelled: bool, keep_going: bool
) -> bool:
    """Whether a join's head is checked: there is a verify stage and the join lets the mission
    go on (no cancellation; no failure, or ``keep_going``)."""
    if not verifying or cancelled or "cancelled" in statuses:
        return False
    return "failed" not in statuses or keep_going  # else the mission stops; a resume checks


def next_rung(
    *,
    has_resolver: bool,
    replay_conflicts: int,
    budget_stop: str | None,
    broken: bool,
    resolver_tried: bool,
) -> Rung:
    """Where a conflicted merge goes next: the resolver (once, first), then a replay after the
    join's other merges, else it fails. No rung starts over the budget, and no replay once the
    integration branch could not be moved (*broken*)."""
    if budget_stop is not None:
        return "fail"
    if has_resolver and not resolver_tried:
        return "resolve"
    if replay_conflicts > 0 and not broken:
        return "replay"
    return "fail"


def climb_refused(*, cancelled: bool, has_resolver: bool, replay_conflicts: int) -> str:
    """How a conflicted merge that gets no (more) rungs ends: ``cancelled`` when a cancellation
    took rungs away (its task runs again at resume), else ``failed``."""
    climbs = has_resolver or replay_conflicts > 0
    return "cancelled" if cancelled and climbs else "failed"


def replay_allowed(replays: int, most: int, budget_stop: str | None) -> bool:
    """Whether one more replay of a conflicted feature starts: fewer than *most* so far, and
    no budget reached."""
    return replays < most and budget_stop is None


def bisect_base(wave: int, base_commit: str, joins: Sequence[WaveJoin]) -> str | None:
    """The integration head wave *wave*'s merges started from: the mission's base for the
    first wave, else the head the previous join's checks passed on; None when that is not
    known (its checks did not pass: a bisection then has no base that passed)."""
    if wave == 1:
        return base_commit
    if len(joins) < wave - 1:
        return None
    before = joins[wave - 2].verification
    return before.head if before.status == "passed" else None


@dataclass(frozen=True)
class Probe:
    """Run the checks on the head made by merging the first *length* features of
    ``Bisection.order`` onto the join's base."""

    length: int


@dataclass
class Bisection:
    """The search for the merges that make a join's checks fail (pure; ``_bisect`` runs it).

    *order* is the join's fixed merge order (the features' ids), its head known to fail and
    the base known to pass. The prefix of ``good`` features is known to pass, the prefix of
    ``bad`` to fail (None: the order's head is not probed yet); probes halve the range between
    them until they are neighbours: ``order[bad - 1]`` is then the first merge after which the
    checks fail, a culprit. It leaves the order (the merges after it are made again on the
    prefix before it), and the head of the order without it is probed next: a pass ends the
    search, a failure searches again from the same known-good prefix. A feature whose merge
    git refuses once a culprit is out (`merge_refused`) leaves the order too. Cost per
    culprit: ``ceil(log2 n)`` probes to find it, one of the order without it.
    """

    order: list[str]
    good: int = 0
    bad: int | None = field(default=None)
    culprits: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    # Each culprit's failing prefix (the probe that blamed it: it ends with the culprit).
    blamed_by: dict[str, tuple[str, ...]] = field(default_factory=dict)
    runs: int = 0
    done: bool = False

    @classmethod
    def of_failed_head(cls, order: Iterable[str]) -> Bisection:
        """The search over *order*, whose head failed and whose base passed."""
        ids = list(order)
        return cls(ids, good=0, bad=len(ids))

    def next_probe(self) -> Probe | None:
        """The next head to check, or None when the search is over (`passing` holds)."""
        if self.done:
            return None
        if self.bad is None:
            if len(self.order) == self.good:  # nothing after the prefix that passed
                self.done = True
                return None
            return Probe(len(self.order))
        if self.bad > self.good + 1:
            return Probe((self.good + self.bad) // 2)
        self._blame(self.bad - 1)
        return self.next_probe()

    def passed(self, probe: Probe) -> None:
        """The checks passed on *probe*'s head."""
        self.runs += 1
        self.good = probe.length
        self.done = probe.length == len(self.order)

    def failed(self, probe: Probe) -> None:
        """The checks failed on *probe*'s head."""
        self.runs += 1
        self.bad = probe.length

    def merge_refused(self, feature_id: str) -> None:
        """Git refused to merge *feature_id* onto a prefix without the culprits: it leaves."""
        index = self.order.index(feature_id)
        assert index >= self.good, "a feature of a prefix that passed merged already"
        self.order.pop(index)
        self.refused.append(feature_id)
        self.bad = None  # the shortened order's head is probed next

    @property
    def passing(self) -> list[str]:
        """The features whose merges make the head known to pass, in merge order."""
        return self.order[: self.good]

    def _blame(self, index: int) -> None:
        culprit = self.order[index]
        self.blamed_by[culprit] = tuple(self.order[: index + 1])
        self.culprits.append(self.order.pop(index))
        self.good = index
        self.bad = None
