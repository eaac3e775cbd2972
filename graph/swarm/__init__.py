"""The signed swarm task graph ``chio.swarm.task-graph.v1``: its model, verifier and signer.

- ``_model``: the strict document (camelCase, no unknown or duplicate keys, integers only),
  its parsing and its canonical RFC 8785 bytes and digest;
- ``_checks``: the structural and temporal checks, in the reference verifier's order;
- ``_signing``: Ed25519 keys, ``sign_swarm_task_graph`` and ``verify_swarm_task_graph``;
- ``_errors``: a rejection (a verdict, with its failure code) and a bad key, below
  ``graph.GraphError``.

Direction: builds on the root of the graph's errors (``graph._errors``: a rejection is a
``GraphError``); never imports ``graph.cloud``, ``taskstore`` or ``rho_mission``. The signing
and verifying functions load on first use: they import ``cryptography``, which a mission, the
task store's commands and ``rho graph export`` never need.

Decision: docs/decisions/0401-swarm-graphs.md, docs/decisions/0902-graph-by-concept.md
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._signing import issuer_for as issuer_for
    from ._signing import load_signing_key as load_signing_key
    from ._signing import parse_trusted_keys as parse_trusted_keys
    from ._signing import public_key_hex as public_key_hex
    from ._signing import sign_swarm_task_graph as sign_swarm_task_graph
    from ._signing import verify_swarm_task_graph as verify_swarm_task_graph

from ._errors import SwarmGraphRejected as SwarmGraphRejected
from ._errors import SwarmKeyError as SwarmKeyError
from ._errors import failure_code as failure_code
from ._model import SWARM_TASK_GRAPH_SCHEMA as SWARM_TASK_GRAPH_SCHEMA
from ._model import SwarmGraphEdge as SwarmGraphEdge
from ._model import SwarmGraphJoin as SwarmGraphJoin
from ._model import SwarmGraphNode as SwarmGraphNode
from ._model import SwarmTaskGraph as SwarmTaskGraph
from ._model import canonical_swarm_bytes as canonical_swarm_bytes
from ._model import parse_swarm_json as parse_swarm_json
from ._model import parse_swarm_task_graph as parse_swarm_task_graph
from ._model import read_swarm_document as read_swarm_document
from ._model import swarm_graph_sha256 as swarm_graph_sha256

__all__ = [
    "SWARM_TASK_GRAPH_SCHEMA",
    "SwarmGraphEdge",
    "SwarmGraphJoin",
    "SwarmGraphNode",
    "SwarmGraphRejected",
    "SwarmKeyError",
    "SwarmTaskGraph",
    "canonical_swarm_bytes",
    "failure_code",
    "issuer_for",
    "load_signing_key",
    "parse_swarm_json",
    "parse_swarm_task_graph",
    "parse_trusted_keys",
    "public_key_hex",
    "read_swarm_document",
    "sign_swarm_task_graph",
    "swarm_graph_sha256",
    "verify_swarm_task_graph",
]

# The functions of ``_signing`` (which imports ``cryptography``), imported on first use.
_SIGNING = frozenset(
    {
        "issuer_for",
        "load_signing_key",
        "parse_trusted_keys",
        "public_key_hex",
        "sign_swarm_task_graph",
        "verify_swarm_task_graph",
    }
)

if TYPE_CHECKING:

    def __getattr__(name: str) -> object: ...

else:
    import lazy_loader

    __getattr__, _, _ = lazy_loader.attach(__name__, submod_attrs={"_signing": sorted(_SIGNING)})
