"""Errors raised by the swarm task graph: a verifier's rejection and a key that is no key.

The tree, below the root of the portable graph's errors (``graph/_errors.py``)::

    GraphError                      root; ``exit_code`` 2 (a usage or data problem)
    ├── SwarmGraphRejected          a ``chio.swarm.task-graph.v1`` document failed a check of its
    │                               verifier (``.reason``, ``.code``); ``exit_code`` 1
    └── SwarmKeyError               an Ed25519 key given to sign or verify is not a key (also
                                    ValueError)

A rejection carries the reference verifier's message and its stable failure code
(`failure_code`), so the same document gets the same answer here and there.

Decision: docs/decisions/0401-swarm-graphs.md
"""

from __future__ import annotations

import re

from .._errors import GraphError

__all__ = [
    "SwarmGraphRejected",
    "SwarmKeyError",
    "failure_code",
]


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
