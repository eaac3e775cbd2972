"""Errors of ``rho serve`` and ``rho mission report``.

The tree::

    MissionError                 (rho_mission._errors) root; ``exit_code`` 2 for the CLI
    └── ServeError               the server, its token or a report refused something
        ├── BadRequestError      a request input is malformed (HTTP 400; also ValueError)
        ├── NotFoundError        no such mission, feature or task store (HTTP 404; LookupError)
        └── TokenError           no usable token: a bad token file, an unsafe .rho folder

The HTTP layer (``_app``) maps ``status`` to the response; the CLI prints the message.

Decision: docs/decisions/0801-serve.md
"""

from __future__ import annotations

from .._errors import MissionError

__all__ = ["BadRequestError", "NotFoundError", "ServeError", "TokenError"]


class ServeError(MissionError):
    """Raised when the server or a report refuses something; ``status`` is its HTTP status."""

    status: int = 500


class BadRequestError(ServeError, ValueError):
    """Raised when a request input (a mission id, a feature id, a number) is malformed."""

    status = 400


class NotFoundError(ServeError, LookupError):
    """Raised when a well-formed request names no mission, feature or task store."""

    status = 404

    def __str__(self) -> str:
        # LookupError would repr() the message; keep it plain.
        return str(self.args[0])


class TokenError(ServeError):
    """Raised when no usable token can be had: a bad ``--token-file``, an unsafe ``.rho``."""
