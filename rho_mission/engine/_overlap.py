"""Parallel work that overlaps: what one join's merges hold while they go.

A join merges the wave's completed work in a fixed order (the features' ids), one commit after
another onto the head it builds (``git._repo.MergeChain``). When a feature's merge conflicts,
the engine (``_loop``) climbs a ladder, each rung recorded in the feature's ``conflict``:

1. git's own merge drivers (``.gitattributes`` ``merge=union``) already ran: only what they
   could not merge conflicts;
2. the resolve stage (``--resolve CMD``, ``_resolve``), at once, on the head as it stands at
   that point of the join, the conflict in place; a resolution is merged there;
3. replays (``--replay-conflicts N``), after the join's other merges: the feature's task runs
   again from the joined head (``RHO_REPLAY=1``), one feature at a time, so each replay's work
   merges as a fast-forward unless its task fails or conflicts again (then it may replay
   again, at most N times);
4. otherwise the feature fails, saying with whom its work conflicted.

Before the resolver or a replay runs, the integration branch is moved to the merges so far and
mission.json written: a crash then resumes into that wave with those features merged, and the
conflicted feature (still ``completed`` with its commit) meets its conflict again. A
cancellation stops a rung; a feature whose rungs it took away is ``cancelled``.

Decision: docs/decisions/0505-conflicts.md
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ..git._repo import MergeChain
from ..records._document import Feature

__all__ = ["WaveMerges"]


@dataclass
class WaveMerges:
    """One join's merges as they go.

    ``landed`` is what the integration branch holds (rho moved it there); ``todo`` the (feature
    id, commit) pairs still to merge, in the join's order; ``merged`` the features merged so
    far, in order; ``riding`` those merged since the last move, whose work is in the chain's
    head alone; ``replays`` the conflicted features waiting for a replay, with the text of
    their conflict; ``broken`` why the branch could not be moved (the rest of the join fails).
    """

    wave: int
    chain: MergeChain
    landed: str
    todo: deque[tuple[str, str]]
    merged: list[Feature] = field(default_factory=list)
    riding: list[Feature] = field(default_factory=list)
    replays: deque[tuple[Feature, str]] = field(default_factory=deque)
    broken: str | None = None

    def took(self, feature: Feature) -> None:
        """Note that *feature*'s work is in the chain's head now."""
        self.merged.append(feature)
        if self.chain.head != self.landed:
            self.riding.append(feature)
