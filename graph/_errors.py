"""Errors raised by the portable graph contract (``rho.graph/v1``), and their root.

The tree::

    GraphError                      root; ``exit_code`` 2 (a usage or data problem)
    ├── GraphDocumentError          a graph file cannot be read or written: missing, a folder,
    │                               larger than 64 MiB, not UTF-8, not JSON (``.path``)
    ├── GraphValidationError        the document breaks the contract (also ValueError);
    │   │                           ``.fact`` ("graph", "node", "edge", "event") and ``.fact_id``
    │   ├── GraphSchemaVersionError     ``schema_version`` is not ``rho.graph/v1`` (``.version``)
    │   └── GraphReferenceError         an edge endpoint or event subject names no node
    │                                   (``.role``, ``.ref_kind``, ``.ref_id``)
    ├── ...                         the upload's errors (``graph/cloud/_errors.py``)
    └── ...                         the swarm task graph's errors (``graph/swarm/_errors.py``)

``GraphError`` is the root of the subpackages' errors too, so that a caller (the CLI) maps every
one of them to its exit code in one place. Messages are lowercase, carry no trailing period, and
quote values as JSON strings (`quote`). No message ever carries a cloud token.

Decision: docs/decisions/0902-graph-by-concept.md
"""

from __future__ import annotations

import json

__all__ = [
    "GraphDocumentError",
    "GraphError",
    "GraphReferenceError",
    "GraphSchemaVersionError",
    "GraphValidationError",
    "fact_label",
    "quote",
]


def quote(value: object) -> str:
    """Return *value* as JSON text (a string in double quotes), the quoting every message uses."""
    return json.dumps(value, ensure_ascii=False)


def fact_label(fact: str, fact_id: str | None, index: int | None = None) -> str:
    """Name a fact in a message: ``node "ID"``, else ``node at index 3``, else ``graph``."""
    if fact_id is not None:
        return f"{fact} {quote(fact_id)}"
    if index is not None:
        return f"{fact} at index {index}"
    return fact


class GraphError(Exception):
    """Raised for every failure of the graph contract; the root of this tree.

    ``exit_code`` is the code a command line should exit with: 2 for problems with the input,
    1 for problems reaching Rho Cloud (``graph.cloud.GraphSyncError``) and for a swarm verdict
    (``graph.swarm.SwarmGraphRejected``).
    """

    exit_code: int = 2


class GraphDocumentError(GraphError):
    """Raised when a graph file cannot be read or written, or its bytes are not a JSON document."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


class GraphValidationError(GraphError, ValueError):
    """Raised when a document breaks the ``rho.graph/v1`` contract; names the first bad fact.

    ``fact`` is ``"graph"`` for the envelope, else ``"node"``, ``"edge"`` or ``"event"``;
    ``fact_id`` is the fact's id when it has a usable one.
    """

    def __init__(self, message: str, *, fact: str, fact_id: str | None = None) -> None:
        super().__init__(message)
        self.fact = fact
        self.fact_id = fact_id


class GraphSchemaVersionError(GraphValidationError):
    """Raised when ``schema_version`` is not ``rho.graph/v1``; ``version`` holds what was found."""

    def __init__(self, version: object, expected: str) -> None:
        super().__init__(
            f"unsupported graph schema version {quote(version)}; expected {quote(expected)}",
            fact="graph",
        )
        self.version = version


class GraphReferenceError(GraphValidationError):
    """Raised when an edge endpoint or an event subject names no node of that kind and id.

    ``role`` is ``"source"``, ``"target"`` or ``"subject"``.
    """

    def __init__(self, fact: str, fact_id: str, role: str, ref_kind: str, ref_id: str) -> None:
        super().__init__(
            f"{fact_label(fact, fact_id)} references missing {role} {ref_kind}/{ref_id}",
            fact=fact,
            fact_id=fact_id,
        )
        self.role = role
        self.ref_kind = ref_kind
        self.ref_id = ref_id
