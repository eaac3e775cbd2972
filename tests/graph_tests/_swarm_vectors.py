"""Swarm task graph vectors: the shared fixtures, and graphs these tests build and sign.

The issuer key is the one of the shared fixtures' README, reproducible from its seed (the byte 31
repeated), so every vector here is signed as a real issuer would. `seal` signs with rfc8785 and
cryptography directly, not through `graph.sign_swarm_task_graph`: it must be able to sign graphs
the signer refuses, and it is a second path to the same bytes.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

VECTORS = Path(__file__).parent / "vectors" / "chio-swarm"
SEED = bytes([31]) * 32
ISSUER_KEY = Ed25519PrivateKey.from_private_bytes(SEED)
TRUSTED = "43046bfe4092b3e94994eada15dcc20d8aaa07b658fd3954eb8e0efb8bdca5de"
OTHER_KEY = Ed25519PrivateKey.from_private_bytes(bytes([7]) * 32)
NOW = 1_800_000_001_000
VALID_SHA256 = "6233d0cf8ccc714d23ff497691afaa0eded21e4c8c4af6e2423f5d7744305625"
SCOPE = "582bb5a477c13ed42aa0c8dcc9d49dbb7b982408c98245045f425f22b38560cf"


def fixture(name: str) -> dict[str, Any]:
    """The shared fixture ``<name>.task-graph.json`` as JSON data."""
    data: dict[str, Any] = json.loads((VECTORS / f"{name}.task-graph.json").read_bytes())
    return data


def seal(doc: dict[str, Any], key: Ed25519PrivateKey = ISSUER_KEY) -> dict[str, Any]:
    """*doc* with ``signature`` set to *key*'s Ed25519 signature of its canonical body.

    A body RFC 8785 cannot write (an integer past 2**53 - 1) keeps its old signature: the
    verifier refuses such a graph for its schema before it looks at a signature.
    """
    body = {k: v for k, v in doc.items() if k != "signature"}
    try:
        return {**doc, "signature": key.sign(rfc8785.dumps(body)).hex()}
    except rfc8785.IntegerDomainError:
        return doc


def node(task_id: str, depth: int, parent: str | None = None) -> dict[str, Any]:
    """A node with a valid scope hash."""
    data: dict[str, Any] = {"taskId": task_id, "scopeHash": SCOPE, "depth": depth}
    if parent is not None:
        data["parentTaskId"] = parent
    return data


def edge(source: str, target: str) -> dict[str, Any]:
    """A ``delegates`` edge."""
    return {"fromTaskId": source, "toTaskId": target, "edgeType": "delegates"}


def base() -> dict[str, Any]:
    """A valid signed graph: root -> a -> b, root -> c; a join of b and c into root."""
    doc = copy.deepcopy(fixture("valid-recursive-delegation"))
    doc.update(
        graphId="swarm-graph-tests",
        maxDepth=2,
        maxFanout=2,
        nodes=[node("root", 0), node("a", 1, "root"), node("b", 2, "a"), node("c", 1, "root")],
        edges=[edge("root", "a"), edge("a", "b"), edge("root", "c")],
        joins=[{"joinId": "join-bc", "parentTaskIds": ["b", "c"], "nextTaskId": "root"}],
        routePlanRefs=["route-a"],
    )
    return seal(doc)


def chain(length: int) -> dict[str, Any]:
    """A signed valid chain t0000 -> t0001 -> ... of *length* tasks."""
    ids = [f"t{i:04d}" for i in range(length)]
    doc = base()
    doc.update(
        maxDepth=length,
        maxFanout=1,
        nodes=[node(ids[0], 0)] + [node(ids[i], i, ids[i - 1]) for i in range(1, length)],
        edges=[edge(ids[i - 1], ids[i]) for i in range(1, length)],
        joins=[],
    )
    return seal(doc)
