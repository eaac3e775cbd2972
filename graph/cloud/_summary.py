"""The summary of a mission graph: the mission and its wave joins, features folded into counts.

A mission at the caps (1,000 features) projects to far more facts than Rho Cloud takes (250
nodes). Its summary keeps the mission node (``entity_type`` ``mission``), the wave-join nodes
(``wave_join``: they already count their features by status), the edges between those and
their events; feature nodes, their edges and events are left out. A mission of more waves than
fit (up to 1,000 as a chain) has its consecutive waves folded into at most ``MAX_NODES - 1``
ranges, one node each (``wave`` its first wave, ``last_wave`` its last, counts summed), so a
summary always fits every bound of Rho Cloud.

Decision: docs/decisions/0302-cloud-allow-lists.md
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .._build import make_edge, make_event, make_node
from .._errors import GraphValidationError
from .._model import Edge, Event, GraphDocument, Node
from .._validate import validate_graph
from ._prepare import MAX_NODES

__all__ = ["summarize_mission_graph"]

_COUNTS = ("feature_count", "completed_count", "failed_count", "cancelled_count", "blocked_count")


def summarize_mission_graph(doc: GraphDocument) -> GraphDocument:
    """The summary of the mission graph *doc* (see the module's docstring).

    Raises:
        GraphValidationError: *doc* holds no mission node (a task store's graph, say).
    """
    missions = [n for n in doc.nodes if n.attributes.get("entity_type") == "mission"]
    if len(missions) != 1:
        raise GraphValidationError(
            "a summary needs a mission graph: one node with entity_type mission", fact="graph"
        )
    waves = sorted(
        (n for n in doc.nodes if n.attributes.get("entity_type") == "wave_join"),
        key=lambda node: int(node.attributes.get("wave", "0")),
    )
    if len(waves) < MAX_NODES:
        return _kept(doc, {missions[0].id, *(w.id for w in waves)})
    return _folded(doc, missions[0], waves)


def _kept(doc: GraphDocument, keep: set[str]) -> GraphDocument:
    return doc.model_copy(
        update={
            "nodes": [n for n in doc.nodes if n.id in keep],
            "edges": [e for e in doc.edges if e.source.id in keep and e.target.id in keep],
            "events": [e for e in doc.events if e.subject.id in keep],
        }
    )


def _folded(doc: GraphDocument, mission: Node, waves: list[Node]) -> GraphDocument:
    size = math.ceil(len(waves) / (MAX_NODES - 1))
    ranges = [waves[start : start + size] for start in range(0, len(waves), size)]
    nodes, edges, events = [mission], [], []
    mission_id = mission.id.rsplit("/", 1)[-1]
    for members in ranges:
        node = _range_node(mission_id, members)
        nodes.append(node)
        edges.append(_produced(mission, node, mission_id))
        events.append(_observed(node, mission_id))
    kept = _kept(doc, {mission.id})
    return validate_graph(
        kept.model_copy(
            update={
                "nodes": nodes,
                "edges": [*kept.edges, *edges],
                "events": [*kept.events, *events],
            }
        )
    )


def _range_node(mission_id: str, members: Sequence[Node]) -> Node:
    first, last = members[0].attributes["wave"], members[-1].attributes["wave"]
    counts = {key: sum(int(m.attributes.get(key, "0")) for m in members) for key in _COUNTS}
    return make_node(
        f"rho/mission-wave/{mission_id}/{first}-{last}",
        "operations",
        {
            "entity_type": "wave_join",
            "status": _status(counts),
            "wave": int(first),
            "last_wave": int(last),
            **counts,
        },
        created_at=min(m.created_at for m in members),
        effective_at=max(m.effective_at for m in members),
        scope=members[0].scope,
    )


def _status(counts: dict[str, int]) -> str:
    # The rule of one wave's status, applied to the range's sums.
    if not counts["failed_count"] and not counts["cancelled_count"]:
        return "completed"
    return "partial" if counts["completed_count"] else "failed"


def _produced(mission: Node, node: Node, mission_id: str) -> Edge:
    wave_range = node.id.rsplit("/", 1)[-1]
    return make_edge(
        f"rho/edge/mission/{mission_id}/produced-wave/{wave_range}",
        "produced",
        mission,
        node,
        created_at=node.effective_at,
        scope=node.scope,
    )


def _observed(node: Node, mission_id: str) -> Event:
    wave_range = node.id.rsplit("/", 1)[-1]
    return make_event(
        f"rho/event/mission-wave/{mission_id}/{wave_range}/observed",
        "observed",
        node,
        occurred_at=node.effective_at,
        correlation_id=mission_id,
        causation_id=f"rho/event/mission/{mission_id}/created",
        scope=node.scope,
    )
