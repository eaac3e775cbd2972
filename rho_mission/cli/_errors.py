"""How errors reach the user: one line and an exit code, decided in one place.

Decision: docs/decisions/0805-logs-and-output.md
"""

from __future__ import annotations

import json
import sys

__all__ = ["CliError", "describe"]


class CliError(Exception):
    """Raised by a command to stop with ``error: <message>`` and *exit_code* (default 2), and
    ``hint: <hint>`` on the next line when one is given."""

    def __init__(self, message: str, exit_code: int = 2, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.hint = hint


def describe(exc: BaseException) -> tuple[str, int, bool]:
    """The one-line message, the exit code and whether *exc* is a bug in rho.

    Domain errors (task store, graph, mission) carry their exit code (2 unless they say
    otherwise, e.g. 1 for a failed upload); OS and JSON errors are bad input (2). Anything else is
    a bug in rho: exit 1 with the exception's type named.
    """
    if isinstance(exc, CliError):
        return str(exc), exc.exit_code, False
    if _is_domain_error(exc):
        return str(exc), getattr(exc, "exit_code", 2), False
    if isinstance(exc, OSError):
        where = f" {exc.filename}" if exc.filename else ""
        return f"{exc.strerror or exc}{':' if where else ''}{where}", 2, False
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON: {exc}", 2, False
    return f"unexpected {type(exc).__name__}: {exc}", 1, True


def _is_domain_error(exc: BaseException) -> bool:
    # isinstance against the roots, found in sys.modules: a raised error's module is loaded
    # already, and this module must import no heavy package to answer.
    for module, root in _ROOTS:
        loaded = sys.modules.get(module)
        if loaded is not None and isinstance(exc, getattr(loaded, root)):
            return True
    return False


_ROOTS = (
    ("taskstore._errors", "TaskStoreError"),
    ("graph._errors", "GraphError"),
    ("rho_mission._errors", "MissionError"),
)
