"""The refs of one mission, and the check that runs before rho moves any of them.

rho moves only ``refs/heads/rho-mission/<mission>/...``, and every move is a compare-and-swap
(``GitRepo.move_branch``) against the value rho last recorded. What rho recorded comes from
mission.json (heads in clear) and from the journal, where each move rho makes is noted first as
a ``ref`` event holding SHA-256 digests of the ref's name and of the commit (the journal never
holds names or commits in clear).

Before a run, ``settle_refs`` compares every ref of the mission with that record:

- the integration branch at the recorded head goes on from there; at a commit rho wrote itself
  (a join cut short by a crash) it is put back; at a descendant of the recorded head (a user's
  hand fix between runs) those commits are adopted and journaled; anything else is refused;
- a feature branch still to run is reset at its next attempt, which is allowed only when it
  holds a commit rho wrote, or a descendant of the recorded head left by an attempt that a
  crash interrupted; commits of anyone else on it are refused, never discarded;
- a mission that never ran must find no ref under its prefix: an id in use is refused.

A feature branch whose last move rho journaled was the end of an attempt, and which still holds
that commit, holds that attempt's work: what a resume adopts when the attempt finished before a
crash (``attempt_ended_at``, ``engine._adopt``).

Decision: docs/decisions/0702-safety-invariants.md
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from graph import sha256_hex as digest

from .._errors import InvalidMissionError, RefMovedError
from ..records._clock import now_rfc3339_millis
from ..records._journal import Journal, journal_entries
from ..records._places import mission_ref_prefix

if TYPE_CHECKING:
    from ..records._document import MissionDocument
    from ._repo import GitRepo

__all__ = [
    "RefHistory",
    "branch_to_move",
    "check_id_free",
    "feature_head",
    "mission_ref_prefix",
    "settle_refs",
]


@dataclass
class RefHistory:
    """What rho wrote to each ref of one mission, as digests, and where and why it last
    moved it."""

    journal: Journal
    seen: dict[str, set[str]] = field(default_factory=dict)
    last_why: dict[str, str] = field(default_factory=dict)
    last_head: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, journal: Journal) -> RefHistory:
        """Read the ``ref`` events of *journal* (torn lines of a crash are skipped)."""
        history = cls(journal)
        for entry in journal_entries(journal.path):
            if entry.get("event") == "ref":
                history._remember(str(entry["ref_sha256"]), str(entry["head_sha256"]), entry["why"])
        return history

    def note(self, ref: str, commit: str, why: str) -> None:
        """Record, before rho moves *ref* to *commit*, that it does so and why."""
        ref_digest, head_digest = digest(ref), digest(commit)
        self.journal.record(
            "ref", now_rfc3339_millis(), ref_sha256=ref_digest, head_sha256=head_digest, why=why
        )
        self._remember(ref_digest, head_digest, why)

    def knows(self, ref: str, commit: str) -> bool:
        """Whether rho ever wrote *commit* to *ref*."""
        return digest(commit) in self.seen.get(digest(ref), set())

    def attempt_open(self, ref: str) -> bool:
        """Whether rho's last move of feature branch *ref* started an attempt that never ended."""
        return self.last_why.get(digest(ref)) == "start"

    def attempt_ended_at(self, ref: str, commit: str) -> bool:
        """Whether rho's last move of feature branch *ref* was the end of an attempt, there at
        *commit*: nothing has moved it since, as far as rho knows."""
        ref_digest = digest(ref)
        ended = self.last_why.get(ref_digest) == "end"
        return ended and self.last_head.get(ref_digest) == digest(commit)

    def _remember(self, ref_digest: str, head_digest: str, why: object) -> None:
        self.seen.setdefault(ref_digest, set()).add(head_digest)
        self.last_why[ref_digest] = str(why)
        self.last_head[ref_digest] = head_digest


def settle_refs(
    repo: GitRepo, mission: MissionDocument, history: RefHistory
) -> dict[str, str | None]:
    """Check (and where safe, restore) every ref of *mission* before a run.

    Returns the head of each feature branch still to run (None: no branch), the value its next
    move must compare against. Sets ``mission.integration_head``.

    Raises:
        InvalidMissionError: the mission never ran but branches with its id exist.
        RefMovedError: a ref holds commits rho did not write and would discard.
    """
    refs = repo.refs_under(mission_ref_prefix(mission.id))
    if mission.started_at is None:
        _refuse_taken(mission.id, refs)
    _settle_integration(repo, mission, history, refs.get(mission.integration_branch))
    return {
        feature.id: _feature_head(repo, mission, history, feature.branch, refs)
        for feature in mission.features
        if feature.status != "completed" and feature.branch is not None
    }


def check_id_free(repo: GitRepo, mission_id: str) -> None:
    """Refuse a mission id that branches already use (a mission folder removed by hand).

    Raises:
        InvalidMissionError: a branch under ``rho-mission/<id>/`` exists.
    """
    _refuse_taken(mission_id, repo.refs_under(mission_ref_prefix(mission_id)))


def _refuse_taken(mission_id: str, refs: dict[str, str]) -> None:
    if refs:
        raise InvalidMissionError(
            f"mission id {mission_id} is taken: branches {mission_ref_prefix(mission_id)}* exist"
        )


def _settle_integration(
    repo: GitRepo, mission: MissionDocument, history: RefHistory, found: str | None
) -> None:
    branch = mission.integration_branch
    recorded = mission.integration_head or mission.base_commit
    mission.integration_head = recorded
    if found == recorded:
        return
    if found is None or history.knows(branch, found):
        # Missing, or a commit rho wrote (a join cut short): back to the last recorded join.
        history.note(branch, recorded, "reset" if mission.started_at else "create")
        repo.move_branch(branch, recorded, found, "back to the last recorded join")
    elif repo.is_ancestor(recorded, found):
        history.note(branch, found, "adopt")  # a hand fix on top of the recorded head
        mission.integration_head = found
    else:
        raise RefMovedError(
            branch,
            f"was rewritten ({recorded[:12]} -> {found[:12]}, which does not contain it); "
            f"refusing to reset it: put it back with 'git branch -f {branch} {recorded[:12]}', "
            "or start a new mission",
        )


def feature_head(
    repo: GitRepo, mission: MissionDocument, history: RefHistory, branch: str
) -> str | None:
    """What feature *branch* holds, for its next move: the check ``settle_refs`` makes of the
    branches still to run, for a completed feature's branch that runs again (a replay after
    its merge conflicted).

    Raises:
        RefMovedError: the branch holds commits rho did not write and would discard.
    """
    found = repo.branch_commit(branch)
    return _feature_head(repo, mission, history, branch, {branch: found} if found else {})


def _feature_head(
    repo: GitRepo,
    mission: MissionDocument,
    history: RefHistory,
    branch: str,
    refs: dict[str, str],
) -> str | None:
    start = mission.integration_head or mission.base_commit
    return branch_to_move(repo, history, branch, refs.get(branch), start, "rerunning its feature")


def branch_to_move(
    repo: GitRepo, history: RefHistory, branch: str, found: str | None, start: str, rerun: str
) -> str | None:
    """What *branch* (holding *found*) may be moved from before it runs again from *start*:
    *found* itself when rho wrote it, or when an attempt a crash interrupted committed it on
    top of *start* (it runs again).

    Raises:
        RefMovedError: it holds commits rho did not make, which *rerun* ("running the stage
            again") would discard.
    """
    if found is None or history.knows(branch, found):
        return found
    if history.attempt_open(branch) and repo.is_ancestor(start, found):
        return found  # commits of an attempt that a crash interrupted: it runs again
    raise RefMovedError(
        branch,
        f"holds commits rho did not make ({found[:12]}); {rerun} would discard them: keep "
        f"them with 'git branch <name> {branch}', delete it with 'git branch -D {branch}', "
        "then resume",
    )
