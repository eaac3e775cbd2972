"""The structural and temporal checks of a swarm task graph, in the order its contract gives.

Each check raises `SwarmGraphRejected` with the reference verifier's message, so that the same
document gets the same answer (and failure code) here and there. The order matters: a graph
whose ``maxDepth`` was lowered after signing must fail here, on its depth, not later on its
signature, and a cycle must be named as the reference names it (depth-first from task ids in
sorted order, children in edge order).

Decision: docs/decisions/0401-swarm-graphs.md
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ._errors import SwarmGraphRejected
from ._model import SWARM_TASK_GRAPH_SCHEMA, U32_MAX, SwarmGraphNode, SwarmTaskGraph

__all__ = ["check_swarm_structure"]

_Tasks = dict[str, SwarmGraphNode]


def check_swarm_structure(graph: SwarmTaskGraph, now_unix_ms: int) -> None:
    """Run every check before the signature's, in order; the first failure is the answer.

    Raises:
        SwarmGraphRejected: the first check that fails.
    """
    _check_header(graph, now_unix_ms)
    tasks = _task_index(graph)
    _check_roots(graph)
    _check_edges(graph, tasks)
    _check_joins(graph, tasks)
    _require_unique(graph.route_plan_refs, "swarm route plan ref")
    _check_acyclic(graph, tasks)
    _check_edge_depths(graph, tasks)
    _check_ceilings(graph)


def _reject(reason: str) -> SwarmGraphRejected:
    return SwarmGraphRejected(reason)


def _require_non_empty(value: str, label: str) -> None:
    if not value:
        raise _reject(f"{label} must not be empty")


def _require_unique(values: Iterable[str], label: str) -> None:
    seen: set[str] = set()
    for value in values:
        _require_non_empty(value, label)
        if value in seen:
            raise _reject(f"duplicate {label}: {value}")
        seen.add(value)


def _check_header(graph: SwarmTaskGraph, now_unix_ms: int) -> None:
    if graph.schema_ != SWARM_TASK_GRAPH_SCHEMA:
        raise _reject(f"unsupported swarm task graph schema: {graph.schema_}")
    _require_non_empty(graph.graph_id, "swarm graph id")
    _require_non_empty(graph.root_transaction_ref, "swarm root transaction ref")
    _require_non_empty(graph.planner_subject, "swarm planner subject")
    _require_non_empty(graph.issuer, "swarm issuer")
    _require_non_empty(graph.signature, "swarm task graph signature")
    _require_non_empty(graph.budget_pool_ref, "swarm budget pool ref")
    _require_non_empty(graph.revocation_epoch_ref, "swarm revocation epoch ref")
    if graph.created_at_unix_ms > now_unix_ms:
        raise _reject("swarm task graph is from the future")
    if graph.expires_at_unix_ms <= now_unix_ms:
        raise _reject("swarm task graph is expired")
    if not graph.nodes:
        raise _reject("swarm task graph requires at least one task")
    if graph.max_fanout == 0:
        raise _reject("swarm task graph max_fanout must be positive")


def _task_index(graph: SwarmTaskGraph) -> _Tasks:
    tasks: _Tasks = {}
    for node in graph.nodes:
        _require_non_empty(node.task_id, "swarm task id")
        _require_non_empty(node.scope_hash, "swarm task scope hash")
        if not _is_sha256_hex(node.scope_hash):
            raise _reject("swarm task scope hash must be a lowercase sha256 digest")
        if node.task_id in tasks:
            raise _reject(f"duplicate swarm task id: {node.task_id}")
        tasks[node.task_id] = node
    return tasks


def _is_sha256_hex(value: str) -> bool:
    return len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def _check_roots(graph: SwarmTaskGraph) -> None:
    roots = [n for n in graph.nodes if n.parent_task_id is None and n.depth == 0]
    if len(roots) != 1:
        raise _reject("swarm task graph requires exactly one root task")
    for node in graph.nodes:
        if node.depth == 0 and node.parent_task_id is not None:
            raise _reject(f"swarm root-depth task has parent: {node.task_id}")
        if node.depth > 0 and node.parent_task_id is None:
            raise _reject(f"swarm non-root task missing parent: {node.task_id}")


def _check_edges(graph: SwarmTaskGraph, tasks: _Tasks) -> None:
    for edge in graph.edges:
        _require_non_empty(edge.from_task_id, "swarm edge source")
        _require_non_empty(edge.to_task_id, "swarm edge target")
        _require_non_empty(edge.edge_type, "swarm edge type")
        if edge.from_task_id not in tasks:
            raise _reject(f"unknown swarm edge source: {edge.from_task_id}")
        if edge.to_task_id not in tasks:
            raise _reject(f"unknown swarm edge target: {edge.to_task_id}")
    pairs = {(edge.from_task_id, edge.to_task_id) for edge in graph.edges}
    if len(pairs) != len(graph.edges):
        raise _reject("duplicate swarm task graph edge")
    for node in graph.nodes:
        parent = node.parent_task_id
        if parent is not None and (parent, node.task_id) not in pairs:
            raise _reject(f"swarm task parent edge missing: {parent} -> {node.task_id}")


def _check_joins(graph: SwarmTaskGraph, tasks: _Tasks) -> None:
    join_ids: set[str] = set()
    for join in graph.joins:
        _require_non_empty(join.join_id, "swarm join id")
        _require_non_empty(join.next_task_id, "swarm join next task id")
        if join.join_id in join_ids:
            raise _reject(f"duplicate swarm join id: {join.join_id}")
        join_ids.add(join.join_id)
        if not join.parent_task_ids:
            raise _reject(f"swarm join requires parents: {join.join_id}")
        if len(join.parent_task_ids) < 2:
            raise _reject(f"swarm join requires at least two parents: {join.join_id}")
        if join.next_task_id not in tasks:
            raise _reject(f"swarm join next task is unknown: {join.next_task_id}")
        _require_unique(join.parent_task_ids, "swarm join parent task")
        for parent in join.parent_task_ids:
            if parent == join.next_task_id:
                raise _reject(f"swarm join next task is a parent: {join.join_id}")
            if parent not in tasks:
                raise _reject(f"swarm join parent task is unknown: {parent}")


def _check_acyclic(graph: SwarmTaskGraph, tasks: _Tasks) -> None:
    children: dict[str, list[str]] = {}
    for edge in graph.edges:
        children.setdefault(edge.from_task_id, []).append(edge.to_task_id)
    visited: set[str] = set()
    for task_id in sorted(tasks):
        _visit(task_id, children, visited)


def _visit(start: str, children: dict[str, list[str]], visited: set[str]) -> None:
    """Depth-first from *start*, with an explicit stack (a 1,024-task chain must not meet
    Python's recursion limit), entering children in edge order as the recursive reference does."""
    if start in visited:
        return
    on_path = {start}
    stack: list[tuple[str, Iterator[str]]] = [(start, iter(children.get(start, ())))]
    while stack:
        task_id, pending = stack[-1]
        child = next(pending, None)
        if child is None:
            stack.pop()
            on_path.discard(task_id)
            visited.add(task_id)
        elif child in on_path:
            raise _reject(f"swarm task graph cycle at {child}")
        elif child not in visited:
            on_path.add(child)
            stack.append((child, iter(children.get(child, ()))))


def _check_edge_depths(graph: SwarmTaskGraph, tasks: _Tasks) -> None:
    for edge in graph.edges:
        parent, child = tasks[edge.from_task_id], tasks[edge.to_task_id]
        # Checked addition, as u32 arithmetic: a parent at the u32 limit has no valid child.
        if parent.depth == U32_MAX:
            raise _reject("swarm task depth overflow")
        if child.depth != parent.depth + 1:
            raise _reject(f"swarm task depth mismatch: {edge.from_task_id} -> {edge.to_task_id}")


def _check_ceilings(graph: SwarmTaskGraph) -> None:
    for node in graph.nodes:
        if node.depth > graph.max_depth:
            raise _reject(f"swarm task exceeds max depth: {node.task_id}")
    fanout: dict[str, int] = {}
    for edge in graph.edges:
        fanout[edge.from_task_id] = fanout.get(edge.from_task_id, 0) + 1
        if fanout[edge.from_task_id] > graph.max_fanout:
            raise _reject(f"swarm task exceeds max fanout: {edge.from_task_id}")
