"""Projections of missions and task stores onto the portable graph (``rho.graph/v1``).

Only metadata leaves through these graphs: ids, kinds, statuses and counts in clear; prompts,
descriptions, commands, branch names, commits, errors and subjects as ``*_sha256`` digests.
``generated_at`` and every timestamp come from the data, never from the clock, so the same
mission (or store) always projects to the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from graph import GraphBuilder, GraphDocument, Node, Ref, sha256_hex

if TYPE_CHECKING:
    from taskstore import Task

    from ._models import Feature, MissionDocument, WaveJoin

__all__ = ["mission_graph", "task_store_graph"]

_EPOCH = "1970-01-01T00:00:00Z"
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})", re.ASCII)


def mission_graph(mission: MissionDocument) -> GraphDocument:
    """The mission projection of DESIGN §4: mission, feature and wave-join nodes and events."""
    created = mission.started_at or _EPOCH
    latest = _latest(mission) or created
    builder = GraphBuilder(generated_at=latest)
    # Refs are built once per node and reused by every edge and event that names the node.
    root = builder.node(
        f"rho/mission/{mission.id}",
        "execution",
        _mission_attributes(mission),
        created_at=created,
        effective_at=latest,
    ).ref
    builder.event(
        f"rho/event/mission/{mission.id}/created",
        "created",
        root,
        occurred_at=created,
        correlation_id=mission.id,
    )
    waves = {i: n for n, wave in enumerate(mission.waves, 1) for i in wave}
    features = {
        f.id: _feature_node(builder, mission, f, root, created, waves.get(f.id, 0))
        for f in mission.features
    }
    _dependency_edges(builder, mission, features, created)
    for join in mission.wave_joins:
        _wave_node(builder, mission, join, root, features)
    return builder.build()


def _latest(mission: MissionDocument) -> str | None:
    stamps = [mission.completed_at, *(j.completed_at for j in mission.wave_joins)]
    stamps += [f.completed_at for f in mission.features]
    present = [stamp for stamp in stamps if stamp]
    return max(present) if present else None


def _mission_attributes(mission: MissionDocument) -> dict[str, str | int]:
    statuses = [f.status for f in mission.features]
    return {
        "status": mission.status,
        "feature_count": len(mission.features),
        "completed_count": statuses.count("completed"),
        "failed_count": statuses.count("failed"),
        "wave_count": len(mission.waves),
        "joined_wave_count": len(mission.wave_joins),
        "max_workers": mission.config.max_workers,
        "prompt_sha256": sha256_hex(mission.prompt),
        "base_commit_sha256": sha256_hex(mission.base_commit),
        "integration_branch_sha256": sha256_hex(mission.integration_branch),
    }


def _feature_node(
    builder: GraphBuilder,
    mission: MissionDocument,
    feature: Feature,
    root: Ref,
    created: str,
    wave: int,
) -> Ref:
    prefix = f"rho/mission-feature/{mission.id}/{feature.id}"
    node = builder.node(
        prefix,
        "execution",
        _feature_attributes(feature, wave),
        created_at=created,
        effective_at=feature.completed_at or feature.started_at or created,
    ).ref
    builder.edge(
        f"rho/edge/mission/{mission.id}/contains/{feature.id}",
        "contains",
        root,
        node,
        created_at=created,
    )
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


def _feature_attributes(feature: Feature, wave: int) -> dict[str, str | int]:
    attributes: dict[str, str | int] = {
        "status": feature.status,
        "attempts": feature.attempts,
        "blocker_count": len(feature.blocked_by),
        "description_sha256": sha256_hex(feature.description),
        "expected_behavior_sha256": sha256_hex(feature.expected_behavior),
    }
    if wave:  # a feature outside every wave has none (renderings group by this attribute)
        attributes["wave"] = wave
    optional = {"branch": feature.branch, "command": feature.command, "error": feature.error}
    if feature.handoff is not None:
        attributes["files_changed_count"] = len(feature.handoff.files_changed)
        optional["commit"] = feature.handoff.commit_id
    for key, value in optional.items():
        if value:
            attributes[f"{key}_sha256"] = sha256_hex(value)
    return attributes


def _dependency_edges(
    builder: GraphBuilder, mission: MissionDocument, features: dict[str, Ref], created: str
) -> None:
    for feature in mission.features:
        for blocker in feature.blocked_by:
            if blocker in features:
                builder.edge(
                    f"rho/edge/mission-feature/{mission.id}/{feature.id}/depends_on/{blocker}",
                    "depends_on",
                    features[feature.id],
                    features[blocker],
                    created_at=created,
                    attributes={"dependency_type": "blocks"},
                )


def _wave_node(
    builder: GraphBuilder,
    mission: MissionDocument,
    join: WaveJoin,
    root: Ref,
    features: dict[str, Ref],
) -> None:
    prefix = f"rho/mission-wave/{mission.id}/{join.wave}"
    node = builder.node(
        prefix,
        "operations",
        {
            "status": "joined",
            "wave": join.wave,
            "feature_count": len(join.feature_ids),
            "completed_count": len(join.completed_ids),
            "failed_count": len(join.failed_ids),
            "cancelled_count": len(join.cancelled_ids),
            "blocked_count": len(join.blocked_ids),
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
    for feature_id in join.feature_ids:
        builder.edge(
            f"rho/edge/mission-wave/{mission.id}/{join.wave}/contains/{feature_id}",
            "contains",
            node,
            features[feature_id],
            created_at=join.completed_at,
        )
    builder.event(
        f"rho/event/mission-wave/{mission.id}/{join.wave}/observed",
        "observed",
        node,
        occurred_at=join.completed_at,
        correlation_id=mission.id,
        causation_id=f"rho/event/mission/{mission.id}/created",
    )


def task_store_graph(tasks: Sequence[Task]) -> GraphDocument:
    """The task-store projection: ``rho/task/<id>`` nodes and their dependency edges.

    ``blocks`` becomes ``depends_on`` (task to blocker), ``parent-child`` becomes ``contains``
    (parent to child) and ``related`` becomes ``references``; each edge carries its
    ``dependency_type``. A link whose target is not in the store is left out, since an edge must
    end at a node.
    """
    stamps = [_valid(t.updated_at or t.created_at) for t in tasks]
    builder = GraphBuilder(generated_at=max(stamps, default=_EPOCH))
    nodes = {task.id: _task_node(builder, task) for task in tasks}
    seen: set[str] = set()
    for task in tasks:
        _task_edges(builder, task, nodes, seen)
    return builder.build()


def _valid(stamp: str | None) -> str:
    """*stamp* if it is an RFC 3339 date-time, else the epoch (hand-written stores vary)."""
    if stamp and _RFC3339.fullmatch(stamp):
        try:
            datetime.fromisoformat(stamp.upper())
        except ValueError:
            return _EPOCH
        return stamp
    return _EPOCH


def _task_node(builder: GraphBuilder, task: Task) -> Node:
    created = _valid(task.created_at)
    node = builder.node(
        f"rho/task/{task.id}",
        "execution",
        {
            "status": task.status,
            "attempts": task.attempts,
            "dependency_count": len(task.dependencies),
            "blocker_count": len(set(task.blocker_ids)),
            "subject_sha256": sha256_hex(task.subject),
            "description_sha256": sha256_hex(task.description),
        },
        created_at=created,
        effective_at=_valid(task.updated_at or task.created_at),
    )
    builder.event(f"rho/event/task/{task.id}/created", "created", node, occurred_at=created)
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
