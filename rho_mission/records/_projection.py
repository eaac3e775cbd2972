"""Projections of missions and task stores onto the portable graph (``rho.graph/v1``).

Only metadata leaves through these graphs: ids, kinds, statuses and counts in clear; prompts,
descriptions, commands, branch names, commits, errors and subjects as ``*_sha256`` digests.
Nodes carry ``entity_type`` as Rho names them (``mission``, ``mission_feature``, ``wave_join``,
``task``). ``generated_at`` and every timestamp come from the data, never from the clock (the
latest of several is chosen by instant, not by spelling), so the same mission or store, in
whatever order its features or tasks come, always projects to the same bytes.

Every fact carries the scope's ``repository_id``: for a mission, by default the basename of
the mission's repository folder (what ``mission-graph.json`` holds on disk); for a store, the
one the caller names (a list of tasks knows no repository).

Decision: docs/decisions/0201-portable-graph.md
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from graph import (
    Edge,
    GraphBuilder,
    GraphDocument,
    Node,
    Ref,
    Scope,
    check_repository_id,
    repository_id_for_folder,
    sha256_hex,
)

from ._stats import graph_counts, mission_stats

if TYPE_CHECKING:
    from pydantic.main import IncEx

    from taskstore import Task

    from ._document import Conflict, Feature, MissionDocument, WaveJoin
    from ._usage import UsageTotal

__all__ = [
    "feature_link_facts",
    "feature_ref",
    "feature_state_facts",
    "integration_attributes",
    "latest_stamp",
    "mission_facts",
    "mission_graph",
    "mission_latest",
    "mission_scope",
    "mission_start",
    "mission_times",
    "task_store_graph",
    "wave_facts",
]

_EPOCH = "1970-01-01T00:00:00Z"
# Timestamps parsed once per process: a join's save reads every feature's again (1,000 at the caps).
_STAMPS_KEPT = 16384
_ENDED = frozenset({"completed", "failed", "partial", "cancelled"})
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})", re.ASCII)


def mission_graph(mission: MissionDocument, *, repository_id: str | None = None) -> GraphDocument:
    """The mission projection (docs/architecture.md): mission, feature and wave-join nodes, events.

    *repository_id* scopes every fact; by default the basename of the mission's repository
    folder (none when that name could not be an id), which is what the engine writes at each
    join.

    Raises:
        GraphValidationError: *repository_id* is blank, too long or holds a control character.
    """
    created, latest = mission_times(mission)
    builder = GraphBuilder(generated_at=latest, scope=_mission_scope(mission, repository_id))
    root = mission_facts(builder, mission, created, latest)
    _features_and_waves(builder, mission, root, created)
    return builder.build()


def mission_times(mission: MissionDocument) -> tuple[str, str]:
    """When the mission's graph starts (``created``) and its latest instant (``generated_at``)."""
    features_latest = latest_stamp(feature.completed_at for feature in mission.features)
    return mission_start(mission), mission_latest(mission, features_latest)


def mission_latest(mission: MissionDocument, features_latest: str | None) -> str:
    """The latest instant of *mission*'s graph: the latest of its end, its joins' ends and
    *features_latest* (the `latest_stamp` of its features' ends), else its start."""
    joins = (join.completed_at for join in mission.wave_joins)
    return latest_stamp([mission.completed_at, *joins, features_latest]) or mission_start(mission)


def mission_start(mission: MissionDocument) -> str:
    """When the mission's graph starts: its start, or the epoch before it started."""
    return mission.started_at or _EPOCH


def latest_stamp(stamps: Iterable[str | None]) -> str | None:
    """The latest of *stamps* that are RFC 3339 date-times, by instant (ties by spelling, so
    any order gives one answer); None if there is none. The latest of the latest of each part
    of *stamps* is the latest of them all."""
    return _latest(list(stamps))


def mission_facts(
    builder: GraphBuilder, mission: MissionDocument, created: str, latest: str
) -> Ref:
    """Add the mission's node and its events; return the node's ref."""
    # Refs are built once per node and reused by every edge and event that names the node.
    root = builder.node(
        f"rho/mission/{mission.id}",
        "execution",
        _mission_attributes(mission),
        created_at=created,
        effective_at=latest,
    ).ref
    created_event = builder.event(
        f"rho/event/mission/{mission.id}/created",
        "created",
        root,
        occurred_at=created,
        correlation_id=mission.id,
    ).id
    if mission.status in _ENDED:
        builder.event(
            f"rho/event/mission/{mission.id}/transitioned",
            "transitioned",
            root,
            occurred_at=mission.completed_at or latest,
            correlation_id=mission.id,
            causation_id=created_event,
        )
    _budget_node(builder, mission, root, latest)
    return root


def _budget_node(builder: GraphBuilder, mission: MissionDocument, root: Ref, latest: str) -> None:
    """The budget decision of a run a budget stopped: an ``operations`` node the mission
    ``produced``, numbers and the reason's digest only."""
    reason = mission.budget_stop
    if reason is None:
        return
    config, spent = mission.config, mission.usage
    numbers = {
        "budget_microusd": _micro(config.budget_usd),
        "budget_tokens": config.budget_tokens,
        "spent_microusd": _micro(spent.cost_usd if spent is not None else None),
        "spent_tokens": spent.tokens if spent is not None else None,
    }
    node = builder.node(
        f"rho/budget/{mission.id}",
        "operations",
        {
            "entity_type": "budget_decision",
            "decision": "stop",
            "hard": config.budget_hard,
            "reason_sha256": sha256_hex(reason),
            **{k: v for k, v in numbers.items() if v is not None},
        },
        created_at=mission.completed_at or latest,
    ).ref
    builder.edge(
        f"rho/edge/mission/{mission.id}/produced-budget-decision",
        "produced",
        root,
        node,
        created_at=mission.completed_at or latest,
    )


def _micro(dollars: float | None) -> int | None:
    # Graph attributes hold no fractions: dollars as whole micro-dollars.
    return None if dollars is None else round(dollars * 1_000_000)


def usage_attributes(total: UsageTotal | None) -> dict[str, str | int | bool]:
    """What attempts spent, as a node's attributes (only where something was recorded: the
    graphs of missions without usage stay as they were); cost in micro-dollars."""
    if total is None or total.attempts == 0:
        return {}
    numbers = {
        "usage_cost_microusd": _micro(total.cost_usd),
        "usage_input_tokens": total.input_tokens,
        "usage_output_tokens": total.output_tokens,
        "usage_cached_input_tokens": total.cached_input_tokens,
        "usage_attempt_count": total.attempts,
        "usage_unknown_count": total.unknown,
    }
    return {k: v for k, v in numbers.items() if v is not None}


def mission_scope(mission: MissionDocument, repository_id: str | None = None) -> Scope:
    """The scope of every fact of *mission*'s graph (see `mission_graph`)."""
    return _mission_scope(mission, repository_id)


def _mission_scope(mission: MissionDocument, repository_id: str | None) -> Scope:
    if repository_id is None:
        return Scope(repository_id=repository_id_for_folder(mission.repo))
    return Scope(repository_id=check_repository_id(repository_id))


def _features_and_waves(
    builder: GraphBuilder, mission: MissionDocument, root: Ref, created: str
) -> None:
    waves = {i: n for n, wave in enumerate(mission.waves, 1) for i in wave}
    features = {f.id: feature_ref(mission.id, f.id) for f in mission.features}
    for feature in mission.features:
        feature_state_facts(builder, mission, feature, created, waves.get(feature.id, 0))
        feature_link_facts(builder, mission, feature, features, created)
    if mission.planning is not None and mission.planning.plain:
        return  # a plain mission: mission and feature nodes, no wave-join operations nodes
    for join in mission.wave_joins:
        _wave_node(builder, mission, join, root, features)


def _latest(stamps: Sequence[str | None]) -> str | None:
    """The latest of *stamps* by instant (ties by spelling, so any order gives one answer)."""
    present = [stamp for stamp in stamps if stamp and _valid(stamp) == stamp]
    return max(present, key=_instant_key, default=None)


@functools.lru_cache(maxsize=_STAMPS_KEPT)
def _instant_key(stamp: str) -> tuple[datetime, str]:
    return (_instant(stamp), stamp)


def _instant(stamp: str) -> datetime:
    # fromisoformat takes "Z" from Python 3.11, but not a lowercase "t" or "z" (RFC 3339 does).
    return datetime.fromisoformat(stamp.upper())


def _mission_attributes(mission: MissionDocument) -> dict[str, str | int]:
    statuses = [f.status for f in mission.features]
    return {
        "entity_type": "mission",
        "status": mission.status,
        "feature_count": len(mission.features),
        "completed_count": statuses.count("completed"),
        "failed_count": statuses.count("failed"),
        "wave_count": len(mission.wave_joins),
        "planned_wave_count": len(mission.waves),
        "max_workers": mission.config.max_workers,
        "prompt_sha256": sha256_hex(mission.prompt),
        "base_commit_sha256": sha256_hex(mission.base_commit),
        "integration_branch_sha256": sha256_hex(mission.integration_branch),
        **_planning_attributes(mission),
        **usage_attributes(mission.usage),
        **integration_attributes(mission),
    }


# What ``_stats.mission_stats`` reads of a mission (the graph's counts need no more).
_STATS_READ: IncEx = {
    "features": {"__all__": {"id", "status", "attempts", "handoff", "conflict", "culprit_replays"}},
    "wave_joins": {"__all__": {"wave", "completed_ids", "conflicted_ids", "verification"}},
}


def integration_attributes(mission: MissionDocument) -> dict[str, str | int]:
    """The integration counts (``_stats.graph_counts``) that are not 0: conflicts by outcome,
    bisection runs, culprits; nothing for a mission without any, whose graph keeps its bytes
    (and is not dumped for it: a join's save at the caps reads 1,000 features)."""
    culprits = any(
        j.verification.bisect_runs or j.verification.culprit_ids for j in mission.wave_joins
    )
    if not culprits and not any(f.conflict or f.culprit_replays for f in mission.features):
        return {}
    return dict(graph_counts(mission_stats(mission.model_dump(mode="json", include=_STATS_READ))))


def _planning_attributes(mission: MissionDocument) -> dict[str, str | int]:
    planning = mission.planning
    if planning is None:
        return {}
    kept = {"prd_sha256": planning.prd_sha256, "plan_sha256": planning.plan_sha256}
    return {"planning_status": planning.status, **{k: v for k, v in kept.items() if v}}


def feature_state_facts(
    builder: GraphBuilder, mission: MissionDocument, feature: Feature, created: str, wave: int
) -> Ref:
    """Add the facts of *feature* that change as it runs: its node and its event.

    They read, beyond *feature* and *wave*, the mission's id and *created* (``_graphcache``
    keys them on exactly that: keep the two in step).
    """
    node = builder.node(
        f"rho/mission-feature/{mission.id}/{feature.id}",
        "execution",
        _feature_attributes(feature, wave),
        created_at=created,
        effective_at=feature.completed_at or feature.started_at or created,
    ).ref
    if feature.status != "pending":
        builder.event(
            f"rho/event/mission-feature/{mission.id}/{feature.id}/transitioned",
            "transitioned",
            node,
            occurred_at=feature.completed_at or feature.started_at or created,
            correlation_id=mission.id,
            causation_id=f"rho/event/mission/{mission.id}/created",
        )
    return node


def feature_link_facts(
    builder: GraphBuilder,
    mission: MissionDocument,
    feature: Feature,
    features: Mapping[str, Ref],
    created: str,
) -> None:
    """Add the facts of *feature* fixed when it is planned: the mission's ``contains`` edge to
    it and a ``depends_on`` edge to each of its blockers that is a feature in *features*."""
    root = Ref(kind="execution", id=f"rho/mission/{mission.id}")
    node = features[feature.id]
    builder.edge(
        f"rho/edge/mission/{mission.id}/contains/{feature.id}",
        "contains",
        root,
        node,
        created_at=created,
    )
    # sorted(set(...)): a blocker listed twice is one edge (an edge id names one edge).
    for blocker in sorted(set(feature.blocked_by)):
        if blocker in features:
            builder.edge(
                f"rho/edge/mission-feature/{mission.id}/{feature.id}/depends_on/{blocker}",
                "depends_on",
                node,
                features[blocker],
                created_at=created,
                attributes={"dependency_type": "blocks"},
            )


def _feature_attributes(feature: Feature, wave: int) -> dict[str, str | int | bool]:
    attributes: dict[str, str | int | bool] = {
        "entity_type": "mission_feature",
        "status": feature.status,
        "attempts": feature.attempts,
        "blocker_count": len(set(feature.blocked_by)),
        "description_sha256": sha256_hex(feature.subject),
    }
    if feature.description != feature.subject:  # one value, one digest per node
        attributes["expected_behavior_sha256"] = sha256_hex(feature.description)
    if wave:  # a feature outside every wave has none (renderings group by this attribute)
        attributes["wave"] = wave
    optional = {"branch": feature.branch, "command": feature.command, "error": feature.error}
    if feature.handoff is not None:
        attributes["files_changed_count"] = len(feature.handoff.files_changed)
        optional["commit"] = feature.handoff.commit_id
        if feature.handoff.tests_passed is not None:
            attributes["tests_passed"] = feature.handoff.tests_passed
    if feature.conflict is not None:
        attributes.update(_conflict_attributes(feature.conflict))
    attributes.update(usage_attributes(feature.usage))
    models = sorted({r.model for r in feature.attempt_usage if r.model})
    if models:  # the model's name as a digest: a deployment's name may say whose it is
        attributes["usage_model_sha256"] = sha256_hex("\0".join(models))
    for key, value in optional.items():
        if value:
            attributes[f"{key}_sha256"] = sha256_hex(value)
    return attributes


def _conflicted_count(join: WaveJoin) -> dict[str, int]:
    # Only where a merge conflicted: the join nodes of every other mission stay as they were.
    return {"conflicted_count": len(join.conflicted_ids)} if join.conflicted_ids else {}


def _conflict_attributes(conflict: Conflict) -> dict[str, str | int | bool]:
    # Counts and digests only: a path or a reason may say what the work is about.
    attributes: dict[str, str | int | bool] = {
        "conflict_outcome": conflict.outcome,
        "conflict_path_count": len(conflict.paths),
        "conflict_with_count": len(conflict.with_),
        "conflict_paths_sha256": sha256_hex("\0".join(sorted(conflict.paths))),
        "resolve_attempts": conflict.resolve_attempts,
        "replays": conflict.replays,
    }
    if conflict.reason:
        attributes["conflict_reason_sha256"] = sha256_hex(conflict.reason)
    return attributes


def _wave_node(
    builder: GraphBuilder,
    mission: MissionDocument,
    join: WaveJoin,
    root: Ref,
    features: Mapping[str, Ref],
) -> None:
    prefix = f"rho/mission-wave/{mission.id}/{join.wave}"
    node = builder.node(
        prefix,
        "operations",
        {
            "entity_type": "wave_join",
            "status": _join_status(join),
            "wave": join.wave,
            "feature_count": len(join.feature_ids),
            "completed_count": len(join.completed_ids),
            "failed_count": len(join.failed_ids),
            "cancelled_count": len(join.cancelled_ids),
            "blocked_count": len(join.blocked_ids),
            **_conflicted_count(join),
            **usage_attributes(join.usage),
        },
        created_at=join.started_at,
        effective_at=join.completed_at,
    ).ref
    builder.edge(
        f"rho/edge/mission/{mission.id}/produced-wave/{join.wave}",
        "produced",
        root,
        node,
        created_at=join.completed_at,
    )
    contains = f"rho/edge/mission-wave/{mission.id}/{join.wave}/contains/"
    first: Edge | None = None
    for feature_id in join.feature_ids:
        if first is None:
            target = features[feature_id]
            first = builder.edge(
                f"{contains}{feature_id}", "contains", node, target, created_at=join.completed_at
            )
        else:  # the same edge to another feature: only its id and target are new
            builder.edge_like(first, f"{contains}{feature_id}", features[feature_id])
    builder.event(
        f"rho/event/mission-wave/{mission.id}/{join.wave}/observed",
        "observed",
        node,
        occurred_at=join.completed_at,
        correlation_id=mission.id,
        causation_id=f"rho/event/mission/{mission.id}/created",
    )
    _verification_node(builder, mission.id, join, node)


def _verification_node(builder: GraphBuilder, mission_id: str, join: WaveJoin, wave: Ref) -> None:
    """The checks of a verified join (``--verify``): a ``quality`` node, and the wave-join's
    ``validated_by`` edge to it; nothing for a join no check ran on. The commands appear as
    digests only. It reads *join* and *mission_id*, nothing else (``_graphcache``)."""
    checked = join.verification
    if checked.status == "skipped":
        return
    attributes: dict[str, str | int] = {
        "entity_type": "verification",
        "status": checked.status,
        "wave": join.wave,
        "attempts": checked.attempts,
        "fix_attempts": checked.fix_attempts,
        "duration_ms": checked.duration_ms,
    }
    # Each written only when nonzero: earlier graphs keep their bytes.
    counts = {
        "flaky_count": checked.flaky,
        "bisect_run_count": checked.bisect_runs,
        "culprit_count": len(checked.culprit_ids),
    }
    attributes.update({key: value for key, value in counts.items() if value})
    digests = {
        "command_sha256": checked.command_sha256,
        "fix_command_sha256": checked.fix_command_sha256,
        "error_sha256": sha256_hex(checked.error) if checked.error else None,
    }
    attributes.update({key: value for key, value in digests.items() if value})
    node = builder.node(
        f"rho/verification/{mission_id}/{join.wave}",
        "quality",
        attributes,
        created_at=join.started_at,
        effective_at=join.completed_at,
    ).ref
    builder.edge(
        f"rho/edge/mission-wave/{mission_id}/{join.wave}/validated_by",
        "validated_by",
        wave,
        node,
        created_at=join.completed_at,
    )


def wave_facts(
    builder: GraphBuilder, mission: MissionDocument, join: WaveJoin, features: Mapping[str, Ref]
) -> None:
    """Add everything of one wave's join: its node, edges and event (see `_wave_node`).

    What this reads of the mission, beyond *join*, is its id and the refs of *features*.
    """
    root = Ref(kind="execution", id=f"rho/mission/{mission.id}")
    _wave_node(builder, mission, join, root, features)


def feature_ref(mission_id: str, feature_id: str) -> Ref:
    """The ref of a feature's node."""
    return Ref(kind="execution", id=f"rho/mission-feature/{mission_id}/{feature_id}")


def _join_status(join: WaveJoin) -> str:
    """``completed`` when no feature of the wave failed or was cancelled, ``failed`` when none
    completed, else ``partial`` (the mission's own rule, applied to one wave)."""
    if not join.failed_ids and not join.cancelled_ids:
        return "completed"
    return "partial" if join.completed_ids else "failed"


def task_store_graph(tasks: Sequence[Task], *, repository_id: str | None = None) -> GraphDocument:
    """The task-store projection: ``rho/task/<id>`` nodes and their dependency edges.

    ``blocks`` becomes ``depends_on`` (task to blocker), ``parent-child`` becomes ``contains``
    (parent to child) and ``related`` becomes ``references``; each edge carries its
    ``dependency_type``. A link whose target is not in the store is left out, since an edge must
    end at a node. Each task has a ``created`` event, and a ``transitioned`` one when its
    ``updatedAt`` is after its ``createdAt``. *repository_id*, when given, scopes every fact.

    Raises:
        GraphValidationError: *repository_id* is blank, too long or holds a control character.
    """
    scope = Scope(
        repository_id=None if repository_id is None else check_repository_id(repository_id)
    )
    stamps = [_valid(t.updated_at or t.created_at) for t in tasks]
    builder = GraphBuilder(generated_at=_latest(stamps) or _EPOCH, scope=scope)
    nodes = {task.id: _task_node(builder, task) for task in tasks}
    seen: set[str] = set()
    for task in tasks:
        _task_edges(builder, task, nodes, seen)
    return builder.build()


@functools.lru_cache(maxsize=_STAMPS_KEPT)
def _valid(stamp: str | None) -> str:
    """*stamp* if it is an RFC 3339 date-time, else the epoch (hand-written stores vary)."""
    if stamp and _RFC3339.fullmatch(stamp):
        try:
            _instant(stamp)
        except ValueError:
            return _EPOCH
        return stamp
    return _EPOCH


def _task_node(builder: GraphBuilder, task: Task) -> Node:
    created = _valid(task.created_at)
    updated = _valid(task.updated_at or task.created_at)
    node = builder.node(
        f"rho/task/{task.id}",
        "execution",
        {
            "entity_type": "task",
            "status": task.status,
            "attempts": task.attempts,
            "dependency_count": len(task.dependencies),
            "blocker_count": len(set(task.blocker_ids)),
            "subject_sha256": sha256_hex(task.subject),
            "description_sha256": sha256_hex(task.description),
        },
        created_at=created,
        effective_at=updated,
    )
    event = builder.event(f"rho/event/task/{task.id}/created", "created", node, occurred_at=created)
    # By instant: "12:00:00Z" and "12:00:00.000+00:00" are the same moment, not a transition.
    if _instant(updated) > _instant(created):
        builder.event(
            f"rho/event/task/{task.id}/transitioned",
            "transitioned",
            node,
            occurred_at=updated,
            causation_id=event.id,
        )
    return node


_EDGE_KIND = {"blocks": "depends_on", "parent-child": "contains", "related": "references"}


def _task_edges(builder: GraphBuilder, task: Task, nodes: dict[str, Node], seen: set[str]) -> None:
    for dependency in task.dependencies:
        target = dependency.target_id.strip()
        if target not in nodes or target == task.id:
            continue
        kind = _EDGE_KIND[dependency.type]
        # contains points from parent to child; the other kinds from the task to its target.
        ends = (target, task.id) if kind == "contains" else (task.id, target)
        edge_id = f"rho/edge/task/{ends[0]}/{kind}/{ends[1]}"
        if edge_id in seen:
            continue
        seen.add(edge_id)
        source, sink = nodes[ends[0]], nodes[ends[1]]
        builder.edge(
            edge_id,
            kind,
            source,
            sink,
            created_at=source.created_at,
            attributes={"dependency_type": dependency.type},
        )
