"""The ``chio.swarm.task-graph.v1`` document: strict models, parsing, canonical bytes.

A swarm task graph names every task of a recursive delegation (``nodes``), the delegation
edges, the joins, and two ceilings (``maxDepth``, ``maxFanout``), signed by its issuer. Parsing
is strict, as the reference's serde structs are: camelCase keys, unknown keys and duplicate keys
rejected, every required field present, integers (never booleans or floats) within u32 or u64.

The canonical form is RFC 8785 (JSON Canonicalization Scheme) through the maintained
``rfc8785`` package, of the document as the model serializes it: optional fields that are absent
or ``null`` are left out, as is ``multiHopWitnessChains`` when false, which is what the
reference's ``skip_serializing_if`` does, so both sides sign and hash the same bytes.

Decision: docs/decisions/0401-swarm-graphs.md
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import rfc8785
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from ._errors import SwarmGraphRejected

__all__ = [
    "SWARM_TASK_GRAPH_SCHEMA",
    "U32_MAX",
    "SwarmGraphEdge",
    "SwarmGraphJoin",
    "SwarmGraphNode",
    "SwarmTaskGraph",
    "canonical_swarm_bytes",
    "parse_swarm_json",
    "parse_swarm_task_graph",
    "read_swarm_document",
    "swarm_graph_data",
    "swarm_graph_sha256",
]

SWARM_TASK_GRAPH_SCHEMA = "chio.swarm.task-graph.v1"
U32_MAX = 2**32 - 1
_U64_MAX = 2**64 - 1
# Far above any graph within the task store's caps (1,000 tasks: about 0.3 MB signed).
_MAX_FILE_BYTES = 64 * 1024 * 1024

U32 = Annotated[int, Field(ge=0, le=U32_MAX)]
U64 = Annotated[int, Field(ge=0, le=_U64_MAX)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, alias_generator=to_camel)


class SwarmGraphNode(_Strict):
    """One task of the delegation: its id, its parent (none for the root), its depth and the
    SHA-256 of its scope (what it may do); the three refs bind it to Chio's other receipts."""

    task_id: str
    parent_task_id: str | None = None
    route_plan_ref: str | None = None
    continuation_token_ref: str | None = None
    budget_allocation_ref: str | None = None
    scope_hash: str
    depth: U32


class SwarmGraphEdge(_Strict):
    """A directed edge ``fromTaskId -> toTaskId`` of the delegation (``edgeType`` names it)."""

    from_task_id: str
    to_task_id: str
    edge_type: str


class SwarmGraphJoin(_Strict):
    """A join: ``nextTaskId`` waits for every task of ``parentTaskIds``. Not an edge."""

    join_id: str
    parent_task_ids: list[str]
    next_task_id: str


class SwarmTaskGraph(_Strict):
    """A ``chio.swarm.task-graph.v1`` document, field for field."""

    schema_: str = Field(alias="schema")
    graph_id: str
    root_transaction_ref: str
    planner_subject: str
    issuer: str
    signature: str
    created_at_unix_ms: U64
    expires_at_unix_ms: U64
    max_depth: U32
    max_fanout: U32
    multi_hop_witness_chains: bool = False
    nodes: list[SwarmGraphNode]
    edges: list[SwarmGraphEdge]
    joins: list[SwarmGraphJoin]
    budget_pool_ref: str
    revocation_epoch_ref: str
    route_plan_refs: list[str]


def parse_swarm_json(text: str | bytes) -> dict[str, Any]:
    """Decode a swarm task graph's JSON text into a dict; a key given twice is refused.

    Raises:
        SwarmGraphRejected: not UTF-8, not JSON, nested too deeply, a duplicate key, or not an
            object (``swarm task graph is not valid JSON: ...``).
    """
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError) as exc:
        raise SwarmGraphRejected(f"swarm task graph is not valid JSON: {exc}") from None
    except RecursionError:  # the stdlib parser recurses once per level of nesting
        raise SwarmGraphRejected("swarm task graph is not valid JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise SwarmGraphRejected("swarm task graph is not valid JSON: not an object")
    return data


def read_swarm_document(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and decode the swarm task graph file at *path* (at most 64 MiB).

    Raises:
        SwarmGraphRejected: the file cannot be read (``swarm task graph unreadable: ...``), is
            too large, or is not a JSON object (see `parse_swarm_json`).
    """
    target = Path(path)
    try:
        with target.open("rb") as handle:
            data = handle.read(_MAX_FILE_BYTES + 1)
    except OSError as exc:
        reason = (exc.strerror or str(exc)).lower()
        raise SwarmGraphRejected(f"swarm task graph unreadable: {reason}: {target}") from None
    if len(data) > _MAX_FILE_BYTES:
        raise SwarmGraphRejected(f"swarm task graph unreadable: larger than 64 MiB: {target}")
    return parse_swarm_json(data)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # Two values for one key would let a signer and a verifier read different documents.
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise ValueError(f"duplicate key {json.dumps(key)}")
        data[key] = value
    return data


def parse_swarm_task_graph(doc: Mapping[str, Any] | SwarmTaskGraph) -> SwarmTaskGraph:
    """Return *doc* as a `SwarmTaskGraph`, strictly.

    Raises:
        SwarmGraphRejected: a key unknown or missing, a value of the wrong type or out of range
            (``swarm task graph schema invalid: nodes.0.depth: ...``).
    """
    if isinstance(doc, SwarmTaskGraph):
        return doc
    try:
        return SwarmTaskGraph.model_validate(dict(doc))
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "document"
        raise SwarmGraphRejected(
            f"swarm task graph schema invalid: {where}: {first['msg'].lower()}"
        ) from None


def swarm_graph_data(graph: SwarmTaskGraph, *, signature: bool = True) -> dict[str, Any]:
    """The document as JSON data, camelCase, without absent optional fields (and without
    ``signature`` when *signature* is false: the body an issuer signs)."""
    data = graph.model_dump(by_alias=True, exclude_none=True)
    if not graph.multi_hop_witness_chains:
        del data["multiHopWitnessChains"]
    if not signature:
        del data["signature"]
    return data


def canonical_swarm_bytes(data: Mapping[str, Any]) -> bytes:
    """The RFC 8785 canonical JSON bytes of *data*.

    Raises:
        SwarmGraphRejected: an integer beyond 2**53 - 1, which RFC 8785 cannot write exactly.
    """
    try:
        return rfc8785.dumps(data)
    except rfc8785.CanonicalizationError as exc:
        raise SwarmGraphRejected(f"swarm task graph cannot be canonicalized: {exc}") from None


def swarm_graph_sha256(graph: SwarmTaskGraph) -> str:
    """``graphSha256``: the SHA-256 (hex) of the canonical JSON of the whole graph, signature
    included.

    Raises:
        SwarmGraphRejected: see `canonical_swarm_bytes`.
    """
    return hashlib.sha256(canonical_swarm_bytes(swarm_graph_data(graph))).hexdigest()
