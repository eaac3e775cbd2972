"""Signed mission plans: the task store as a Chio swarm task graph, signed, then enforced.

The store's parent-child tree is the delegation tree. `plan_document` turns it into a
``chio.swarm.task-graph.v1`` document: a root node for the plan (``rho:plan``: a store id never
holds a colon, so it cannot collide), one node per task (its parent, else the root; its depth,
its nesting), ``delegates`` edges, a join for each task with two or more blockers, and as each
task's ``scopeHash`` the SHA-256 of the canonical JSON of what it will do: subject,
description, command (its own, else the mission's ``--run``), blockers.

`check_signed_plan` runs before any worker starts (and again before a resume takes fixed
commands from the store): the plan must verify against the trusted keys, and the store must
hold exactly the plan's tasks, each under the same parent with the same scope. So an agent that
adds a subtask, moves a task, or edits a command after signing is refused, by name.

Decision: docs/decisions/0402-signed-plans.md
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from graph.swarm import SwarmGraphRejected, canonical_swarm_bytes, read_swarm_document
from taskstore import Task

from .._errors import InvalidMissionError, SignedPlanError, quote

__all__ = [
    "PLAN_ROOT",
    "check_signed_plan",
    "plan_document",
    "task_scope_hash",
]

PLAN_ROOT = "rho:plan"
_DAY_MS = 86_400_000


def task_scope_hash(task: Task, run_command: str | None) -> str:
    """The SHA-256 (hex) of the canonical JSON of what *task* will do in a mission."""
    scope = {
        "subject": task.subject,
        "description": task.description,
        "command": task.command or run_command,
        "blockers": sorted(set(task.blocker_ids)),
    }
    return _sha256(scope)


def _sha256(data: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_swarm_bytes(data)).hexdigest()


def _shape(tasks: Sequence[Task], run_command: str | None) -> dict[str, tuple[str, int, str]]:
    """Each task's (parent node, depth, scope hash); a top-level task's parent is the root."""
    parents = {task.id: task.parent_id or PLAN_ROOT for task in tasks}
    depths: dict[str, int] = {PLAN_ROOT: 0}
    for task_id in sorted(parents):
        _depth_of(task_id, parents, depths)
    return {
        task.id: (parents[task.id], depths[task.id], task_scope_hash(task, run_command))
        for task in tasks
    }


def _depth_of(task_id: str, parents: dict[str, str], depths: dict[str, int]) -> int:
    path: list[str] = []
    while task_id not in depths:  # iterative: a deep nesting must not meet the recursion limit
        if task_id in path or task_id not in parents:
            raise InvalidMissionError(f"task {quote(task_id)} has no path to a top-level task")
        path.append(task_id)
        task_id = parents[task_id]
    for each in reversed(path):
        depths[each] = depths[parents[each]] + 1
    return depths[path[0]] if path else depths[task_id]


def plan_document(
    tasks: Sequence[Task],
    *,
    run_command: str | None = None,
    max_depth: int | None = None,
    max_fanout: int | None = None,
    created_unix_ms: int,
    ttl_ms: int = 7 * _DAY_MS,
) -> dict[str, Any]:
    """The unsigned swarm task graph of *tasks* (``issuer`` and ``signature`` left empty).

    The ceilings default to the store's own depth and fan-out, the tightest that verify.

    Raises:
        InvalidMissionError: no task, or a ceiling given below what the store already needs.
    """
    if not tasks:
        raise InvalidMissionError("no tasks to plan: the task store is empty")
    shape = _shape(tasks, run_command)
    edges = sorted((parent, task_id) for task_id, (parent, _, _) in shape.items())
    depth = _ceiling("max-depth", max_depth, max(d for _, d, _ in shape.values()))
    fanout = _ceiling("max-fanout", max_fanout, _widest(edges))
    body: dict[str, Any] = {
        "maxDepth": depth,
        "maxFanout": fanout,
        "nodes": _nodes(shape),
        "edges": [{"fromTaskId": a, "toTaskId": b, "edgeType": "delegates"} for a, b in edges],
        "joins": _joins(tasks),
    }
    return {
        "schema": "chio.swarm.task-graph.v1",
        "graphId": f"rho-plan-{_sha256(body)[:16]}",
        "rootTransactionRef": "rho-mission-plan",
        "plannerSubject": "rho-mission",
        "issuer": "",
        "signature": "",
        "createdAtUnixMs": created_unix_ms,
        "expiresAtUnixMs": created_unix_ms + ttl_ms,
        **body,
        "budgetPoolRef": "rho-no-budget-pool",
        "revocationEpochRef": "rho-no-revocation-epoch",
        "routePlanRefs": [],
    }


def _ceiling(option: str, given: int | None, needed: int) -> int:
    if given is None:
        return max(needed, 1)
    if given < needed:
        raise InvalidMissionError(
            f"--{option} {given} is below what the task store needs ({needed}): "
            "the signed plan would not verify"
        )
    return given


def _widest(edges: Sequence[tuple[str, str]]) -> int:
    counts: dict[str, int] = {}
    for parent, _ in edges:
        counts[parent] = counts.get(parent, 0) + 1
    return max(counts.values(), default=1)


def _nodes(shape: Mapping[str, tuple[str, int, str]]) -> list[dict[str, Any]]:
    scopes = {task_id: scope for task_id, (_, _, scope) in sorted(shape.items())}
    root = {"taskId": PLAN_ROOT, "scopeHash": _sha256({"tasks": scopes}), "depth": 0}
    return [root] + [
        {"taskId": task_id, "parentTaskId": parent, "scopeHash": scope, "depth": depth}
        for task_id, (parent, depth, scope) in sorted(shape.items())
    ]


def _joins(tasks: Sequence[Task]) -> list[dict[str, Any]]:
    joins = []
    for task in sorted(tasks, key=lambda each: each.id):
        blockers = sorted(set(task.blocker_ids))
        if len(blockers) >= 2:
            join_id = f"join:{task.id}"
            joins.append({"joinId": join_id, "parentTaskIds": blockers, "nextTaskId": task.id})
    return joins


def check_signed_plan(
    plan_path: str | Path,
    trusted_keys: Sequence[str],
    tasks: Sequence[Task],
    run_command: str | None,
    *,
    now_unix_ms: int | None = None,
) -> str:
    """Verify the plan at *plan_path* and that *tasks* are what it allows; return graphSha256.

    Raises:
        SignedPlanError: the plan is refused by the verifier (``.code``), or the store adds,
            lacks, moves or changes a task (the first difference, by task id).
    """
    from graph.swarm import verify_swarm_task_graph  # loads cryptography: only for a signed plan

    now = time.time_ns() // 1_000_000 if now_unix_ms is None else now_unix_ms
    try:
        document = read_swarm_document(plan_path)
        digest = verify_swarm_task_graph(document, trusted_keys, now)
    except SwarmGraphRejected as rejected:
        raise SignedPlanError(
            f"signed plan rejected: {rejected.reason} (code: {rejected.code})", code=rejected.code
        ) from None
    planned = {
        node["taskId"]: (node.get("parentTaskId"), node["depth"], node["scopeHash"])
        for node in document["nodes"]
        if node["taskId"] != PLAN_ROOT
    }
    _compare(planned, _shape(tasks, run_command))
    return digest


def _compare(planned: Mapping[str, tuple[Any, ...]], found: Mapping[str, tuple[Any, ...]]) -> None:
    problems = sorted(
        [(i, f"task {quote(i)} is not in the signed plan") for i in found.keys() - planned.keys()]
        + [(i, f"task {quote(i)} of the signed plan is missing from the task store")
           for i in planned.keys() - found.keys()]
        + [(i, _difference(i, planned[i], found[i]))
           for i in planned.keys() & found.keys() if planned[i] != found[i]]
    )  # fmt: skip
    if problems:
        task_id, first = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        message = f"the task store breaks the signed plan: {first}{more}"
        raise SignedPlanError(message, task_id=task_id)


def _difference(task_id: str, planned: tuple[Any, ...], found: tuple[Any, ...]) -> str:
    if planned[0] != found[0]:
        return (
            f"task {quote(task_id)} is a subtask of {_parent(found[0])} in the task store, "
            f"of {_parent(planned[0])} in the signed plan"
        )
    if planned[1] != found[1]:
        return f"task {quote(task_id)} is at depth {found[1]}, the signed plan says {planned[1]}"
    return (
        f"task {quote(task_id)} changed after signing: its subject, description, command or "
        "blockers differ from the signed plan"
    )


def _parent(node_id: Any) -> str:
    return "no task" if node_id in (None, PLAN_ROOT) else quote(str(node_id))
