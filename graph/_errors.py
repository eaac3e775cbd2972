"""Errors raised by the portable graph contract (``rho.graph/v1``).

The tree::

    GraphError                      root; ``exit_code`` 2 (a usage or data problem)
    ├── GraphDocumentError          a graph file cannot be read or written: missing, a folder,
    │                               larger than 64 MiB, not UTF-8, not JSON (``.path``)
    ├── GraphValidationError        the document breaks the contract (also ValueError);
    │   │                           ``.fact`` ("graph", "node", "edge", "event") and ``.fact_id``
    │   ├── GraphSchemaVersionError     ``schema_version`` is not ``rho.graph/v1`` (``.version``)
    │   └── GraphReferenceError         an edge endpoint or event subject names no node
    │                                   (``.role``, ``.ref_kind``, ``.ref_id``)
    ├── GraphLimitError             a Rho Cloud bound is exceeded (also ValueError):
    │                               ``.what``, ``.count``, ``.limit``, and ``.fact``/``.fact_id``
    ├── SensitiveKeyCollisionError  a sensitive ``k`` cannot become ``k_sha256``: the key is taken
    ├── CloudSettingsError          a repository's Rho Cloud settings (``.rho/cloud.json``): a bad
    │                               endpoint, token or project id, a link where ``.rho`` goes, an
    │                               unreadable or invalid file (``.path`` when a file is at fault)
    ├── GraphSyncError              the upload failed: network, HTTP status, malformed answer;
    │                               ``exit_code`` 1
    ├── SwarmGraphRejected          a ``chio.swarm.task-graph.v1`` document failed a check of its
    │                               verifier (``.reason``, ``.code``); ``exit_code`` 1
    └── SwarmKeyError               an Ed25519 key given to sign or verify is not a key (also
                                    ValueError)

Messages are lowercase, carry no trailing period, and quote values as JSON strings. No message
ever carries a cloud token.
"""

from __future__ import annotations

import json
import re

__all__ = [
    "CloudSettingsError",
    "GraphDocumentError",
    "GraphError",
    "GraphLimitError",
    "GraphReferenceError",
    "GraphSchemaVersionError",
    "GraphSyncError",
    "GraphValidationError",
    "SensitiveKeyCollisionError",
    "SwarmGraphRejected",
    "SwarmKeyError",
    "fact_label",
    "failure_code",
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
    1 (on `GraphSyncError`) for problems reaching Rho Cloud.
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


class GraphLimitError(GraphError, ValueError):
    """Raised when a graph exceeds a bound of Rho Cloud (counts, body size, attribute bounds).

    ``what`` names the bound (``"nodes"``, ``"body bytes"``, ``"attribute value characters"``,
    ...), ``count`` the value found and ``limit`` the maximum; ``fact`` and ``fact_id`` name the
    fact for per-fact bounds and are ``"graph"`` and None for graph-wide ones.
    """

    def __init__(
        self,
        message: str,
        *,
        what: str,
        count: int,
        limit: int,
        fact: str = "graph",
        fact_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.what = what
        self.count = count
        self.limit = limit
        self.fact = fact
        self.fact_id = fact_id
        self.hint: str | None = None  # what to do instead, when the caller knows


class SensitiveKeyCollisionError(GraphError, ValueError):
    """Raised when a sensitive attribute ``k`` cannot become ``k_sha256``: that key is present."""

    def __init__(self, fact: str, fact_id: str, key: str) -> None:
        digest_key = f"{key}_sha256"
        super().__init__(
            f"{fact_label(fact, fact_id)} attribute {quote(key)} cannot be replaced by its digest:"
            f" {quote(digest_key)} is already present"
        )
        self.fact = fact
        self.fact_id = fact_id
        self.key = key


class CloudSettingsError(GraphError):
    """Raised when Rho Cloud settings are refused: a bad endpoint, token or project id, or a
    settings file that cannot be used (a link where ``.rho`` goes, unreadable, invalid).

    ``path`` names the file or folder at fault, None for a bad value. No message carries a token.
    """

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class GraphSyncError(GraphError):
    """Raised when an upload to Rho Cloud fails: network, non-2xx status, or a malformed answer.

    ``url`` is the endpoint called and ``status_code`` the HTTP status when one was received.
    """

    exit_code = 1

    def __init__(self, message: str, *, url: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.status_code = status_code


_SLUG_BREAK = re.compile(r"[^a-z0-9]+")
FAILURE_CODE_PREFIX = "proof-room.negative."


def failure_code(reason: str) -> str:
    """The stable code of a swarm verifier *reason*: its slug under ``proof-room.negative.``.

    Everything from the first ``": "`` is dropped (it names the graph or the task), the rest is
    lowercased and every run of other characters than ``a-z0-9`` becomes one ``-``:
    ``swarm task exceeds max depth: t1`` gives ``proof-room.negative.swarm-task-exceeds-max-depth``.
    """
    head = reason.split(": ", 1)[0]
    slug = _SLUG_BREAK.sub("-", head.lower()).strip("-")
    return FAILURE_CODE_PREFIX + (slug or "unknown")


class SwarmGraphRejected(GraphError):
    """Raised when a swarm task graph fails a check: the first failure is the answer.

    ``reason`` is the verifier's message (``swarm task graph cycle at t1``) and ``code`` its
    failure code (`failure_code`). A rejection is a verdict, not a usage problem: exit code 1.
    """

    exit_code = 1

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = failure_code(reason)


class SwarmKeyError(GraphError, ValueError):
    """Raised when key material is not an Ed25519 key: a trusted key that is not 64 hex digits,
    or a key file that holds neither a 32-byte hex seed nor a PEM private key."""
