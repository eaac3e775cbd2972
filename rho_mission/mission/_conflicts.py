"""Which work of a mission overlaps, before anything is merged: ``rho mission conflicts``.

For every pair of the mission's features with work of their own, and for each such feature
against the user's branch, git computes the merge without any worktree or index
(``git merge-tree --write-tree``, git 2.38 and newer) and names the paths where it conflicts.
No ref, worktree or file changes.

A feature's work is its completed commit, else what its branch holds beyond its start (the work
of a feature whose merge failed stays on its branch). Only pairs whose changes touch a common
path (or a file and a folder of one name) are merged: two changes that share no path cannot
conflict, and a mission of 40 features would otherwise cost 780 merges.

Decision: docs/decisions/0505-conflicts.md
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import PurePosixPath

from ..git._repo import GitRepo
from ..records._document import Feature, MissionDocument

__all__ = ["Overlap", "WorkOf", "at_join", "described", "overlapping_work"]


@dataclass(frozen=True)
class WorkOf:
    """One side of a merge: a feature's work (``feature``) or the user's branch (``branch``)."""

    name: str
    commit: str
    is_branch: bool = False


@dataclass(frozen=True)
class Overlap:
    """Two sides whose work conflicts, and the paths where it does (sorted)."""

    one: WorkOf
    other: WorkOf
    paths: tuple[str, ...]


def overlapping_work(
    mission: MissionDocument, repo: GitRepo, branch: str | None
) -> tuple[list[WorkOf], list[Overlap]]:
    """The sides that hold work (features in the mission's order, then *branch* if given), and
    every pair of them whose merge conflicts, features first, in that order.

    Raises:
        GitOperationError: git could not read a commit or compute a merge.
    """
    sides = [side for feature in mission.features if (side := _work_of(repo, feature))]
    if branch is not None:
        sides.append(WorkOf(branch, repo.commit_id(branch), is_branch=True))
    touched = {side: _touched(repo, mission.base_commit, side.commit) for side in sides}
    found = []
    for one, other in combinations(sides, 2):
        if not touched[one] & touched[other]:
            continue
        _, paths = repo.merge_tree(one.commit, other.commit)
        if paths:
            found.append(Overlap(one, other, tuple(sorted(set(paths)))))
    return sides, found


def _work_of(repo: GitRepo, feature: Feature) -> WorkOf | None:
    commit = feature.work_commit
    if commit is None and feature.branch is not None and feature.attempts:
        commit = repo.branch_commit(feature.branch)
    return WorkOf(feature.id, commit) if commit else None


def _touched(repo: GitRepo, base: str, commit: str) -> frozenset[str]:
    """The paths *commit* changed since *base*, with every folder above them: a file one side
    added where the other made a folder conflicts too."""
    out = repo.run("diff", "--name-only", "--no-renames", "-z", base, commit)
    return frozenset(_with_folders(name for name in out.split("\0") if name))


def _with_folders(paths: Iterable[str]) -> set[str]:
    found: set[str] = set()
    for path in paths:
        found.add(path)
        found.update(str(parent) for parent in PurePosixPath(path).parents if str(parent) != ".")
    return found


def at_join(mission: MissionDocument, overlap: Overlap) -> str | None:
    """What the mission's join made of an overlap between two of its features: the outcome
    (``resolved``, ``replayed``, ``failed``) of the one whose merge met the other's work;
    None when neither's merge met it (an overlap with a branch, or work of different waves,
    the later made on top of the earlier)."""
    if overlap.other.is_branch:
        return None
    by_id = {feature.id: feature for feature in mission.features}
    for merged, met in (
        (overlap.other.name, overlap.one.name),
        (overlap.one.name, overlap.other.name),
    ):
        conflict = by_id[merged].conflict if merged in by_id else None
        if conflict is not None and met in conflict.with_:
            return conflict.outcome
    return None


def described(mission: MissionDocument, overlaps: Sequence[Overlap]) -> list[dict[str, object]]:
    """*overlaps* as ``rho mission conflicts --json`` lists them, each with what its join made
    of it (``at_join``)."""
    return [
        {
            "feature": overlap.one.name,
            "with": None if overlap.other.is_branch else overlap.other.name,
            "branch": overlap.other.name if overlap.other.is_branch else None,
            "paths": list(overlap.paths),
            "at_join": at_join(mission, overlap),
        }
        for overlap in overlaps
    ]
