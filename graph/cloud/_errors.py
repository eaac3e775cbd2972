"""Errors raised by the Rho Cloud upload: its limits, its privacy rule, its settings, the sync.

The tree, below the root of the portable graph's errors (``graph/_errors.py``)::

    GraphError                      root; ``exit_code`` 2 (a usage or data problem)
    ├── GraphLimitError             a Rho Cloud bound is exceeded (also ValueError):
    │                               ``.what``, ``.count``, ``.limit``, and ``.fact``/``.fact_id``
    ├── SensitiveKeyCollisionError  a sensitive ``k`` cannot become ``k_sha256``: the key is taken
    ├── CloudSettingsError          a repository's Rho Cloud settings (``.rho/cloud.json``): a bad
    │                               endpoint, token or project id, a link where ``.rho`` goes, an
    │                               unreadable or invalid file (``.path`` when a file is at fault)
    └── GraphSyncError              the upload failed: network, HTTP status, malformed answer;
                                    ``exit_code`` 1

Messages are lowercase, carry no trailing period, and quote values as JSON strings. No message
ever carries a cloud token.

Decision: docs/decisions/0301-cloud-settings.md, docs/decisions/0302-cloud-allow-lists.md
"""

from __future__ import annotations

from .._errors import GraphError, fact_label, quote

__all__ = [
    "CloudSettingsError",
    "GraphLimitError",
    "GraphSyncError",
    "SensitiveKeyCollisionError",
]


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
