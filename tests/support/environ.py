"""The environment of the suite's children: ``rho``, git and what a test starts.

A child gets the test's own environment without ``RHO_*`` variables, with wide unstyled rich
output and a git identity; given a *home*, that folder is its ``HOME`` and nothing of the
machine's git (no variable, no global or system configuration) reaches it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["IDENTITY", "rho_env"]

# Every commit a test or its rho makes uses this identity (through the environment, never
# through the user's global config).
IDENTITY = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.com",
}
# Left out of a child's environment when it has a home of its own: they would point git or
# httpx elsewhere (every GIT_* variable is left out too).
_NOT_HOME = {"EMAIL", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"}


def rho_env(home: Path | None = None, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a ``rho`` (or git) child: the test's own without ``RHO_*`` variables,
    wide unstyled rich output, a git identity if none is set; with *home*, that folder as
    ``HOME`` and no git variable or configuration of the machine. *env* adds variables (an
    empty value removes one)."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("RHO_")}
    if home is not None:
        full = {
            k: v
            for k, v in full.items()
            if not k.upper().startswith("GIT_") and k.upper() not in _NOT_HOME
        }
        full.update(HOME=str(home), GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    for name, value in IDENTITY.items():
        full.setdefault(name, value)
    full.update(COLUMNS="200", NO_COLOR="1")
    for name, value in (env or {}).items():
        if value:
            full[name] = value
        else:
            full.pop(name, None)
    return full
