"""The waves a mission runs: given by the caller and checked, or computed from ``blocked_by``.

Explicit waves are checked before any work starts: every id once, every id a feature, and no
feature in or before the wave of one of its blockers (it would start without its blockers'
work). Without waves, the task store's own validator (``taskstore.compute_schedule``) cuts the
features' ``blocked_by`` graph into waves, with its checks and messages (cycles, missing
blockers, the caps).

Decision: docs/decisions/0502-the-users-loop.md
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from taskstore import ScheduleError, compute_schedule

from .._errors import InvalidMissionError, quote
from ..records._document import Feature
from ..records._places import feature_branch

if TYPE_CHECKING:
    from ..records._document import MissionDocument

__all__ = ["computed_waves", "staged_plan"]


def staged_plan(mission: MissionDocument, waves: Sequence[Sequence[str]] | None) -> list[list[str]]:
    """The waves to run: *waves*, else the mission's own, else computed from ``blocked_by``.

    A mission without features gets one per id named in *waves*.

    Raises:
        InvalidMissionError: empty waves, an unknown or repeated id, a feature still to run in
            no wave, a feature not after its blockers, or (computed) a cycle, a missing
            blocker or a cap exceeded.
    """
    given = waves is not None
    if waves is None:
        waves = mission.waves or computed_waves(mission.features)
    plan = [list(wave) for wave in waves if wave]
    if not plan:
        raise InvalidMissionError("staged execution waves are empty")
    if not mission.features:
        # Each id once: a repeated id is reported below, as for a mission with features.
        for feature_id in dict.fromkeys(i for wave in plan for i in wave):
            mission.features.append(Feature(feature_id, branch=_branch(mission, feature_id)))
    _check_ids(mission, plan)
    _check_blocker_order(mission, plan)
    if given:
        _check_every_feature_named(mission, plan)
    return plan


def _check_every_feature_named(mission: MissionDocument, plan: list[list[str]]) -> None:
    """Refuse waves that leave out a feature still to run: it would stay pending for ever,
    the mission ``partial`` however often it is resumed."""
    named = {i for wave in plan for i in wave}
    left = [f.id for f in mission.features if f.status != "completed" and f.id not in named]
    if left:
        shown = ", ".join(quote(i) for i in sorted(left)[:5])
        raise InvalidMissionError(
            f"staged execution waves leave out {len(left)} feature(s) still to run ({shown}): "
            "name every feature in a wave, or leave it out of the mission"
        )


def _branch(mission: MissionDocument, feature_id: str) -> str:
    from ..records._document import feature_id_problem

    problem = feature_id_problem(feature_id)
    if problem is not None:
        raise InvalidMissionError(problem)
    return feature_branch(mission.id, feature_id)


def _check_ids(mission: MissionDocument, plan: list[list[str]]) -> None:
    known = {feature.id for feature in mission.features}
    seen: set[str] = set()
    for number, wave in enumerate(plan, start=1):
        for feature_id in wave:
            if feature_id not in known:
                raise InvalidMissionError(
                    f"staged execution wave {number} names unknown feature {quote(feature_id)}"
                )
            if feature_id in seen:
                raise InvalidMissionError(
                    f"feature {quote(feature_id)} appears more than once in staged waves"
                )
            seen.add(feature_id)


def _check_blocker_order(mission: MissionDocument, plan: list[list[str]]) -> None:
    wave_of = {feature_id: n for n, wave in enumerate(plan, start=1) for feature_id in wave}
    done = {f.id for f in mission.features if f.status == "completed"}
    for feature_id, number in wave_of.items():
        for blocker in mission.feature(feature_id).blocked_by:
            if blocker in done and blocker not in wave_of:
                continue  # completed before: its work is in the base
            if blocker not in wave_of:
                raise InvalidMissionError(
                    f"feature {quote(feature_id)} is blocked by {quote(blocker)}, "
                    "which is in no staged wave"
                )
            if wave_of[blocker] >= number:
                raise InvalidMissionError(
                    f"feature {quote(feature_id)} runs in wave {number} but its blocker "
                    f"{quote(blocker)} runs in wave {wave_of[blocker]}"
                )


@dataclass(frozen=True)
class _Blocks:
    target_id: str
    type: str = "blocks"


@dataclass(frozen=True)
class _Node:
    """A feature as the task store's validator sees a task."""

    id: str
    status: str = "pending"
    dependencies: list[_Blocks] = field(default_factory=list)
    is_group: bool = False  # a feature is work


def computed_waves(features: Sequence[Feature]) -> list[list[str]]:
    if not features:
        return []
    nodes = [_Node(f.id, dependencies=[_Blocks(b) for b in f.blocked_by]) for f in features]
    try:
        return compute_schedule(nodes).waves
    except ScheduleError as exc:
        raise InvalidMissionError(f"invalid feature graph: {exc}") from exc
