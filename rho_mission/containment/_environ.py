"""The environment of every process rho starts: the caller's, without git's repository paths.

A git hook, ``git rebase --exec`` or a wrapper exports ``GIT_DIR``, ``GIT_WORK_TREE``,
``GIT_INDEX_FILE``... Inherited by rho's own git calls or by a task's command, they would aim git
at the user's checkout instead of the mission's worktree: a checkout or ``clean`` there destroys
uncommitted work. So no child of rho ever sees them, whoever called rho (CLI or library).

Decision: docs/decisions/0702-safety-invariants.md
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["GIT_REPOSITORY_VARIABLES", "SANDBOX_KEPT", "child_environ", "sandbox_environ"]

# `git rev-parse --local-env-vars` (what git itself clears when it enters a submodule), plus the
# variables that move refs or objects elsewhere (a namespace, a pre-receive quarantine).
GIT_REPOSITORY_VARIABLES = frozenset(
    {
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_COMMON_DIR",
        "GIT_CONFIG",
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG_PARAMETERS",
        "GIT_DIR",
        "GIT_GRAFT_FILE",
        "GIT_IMPLICIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_INTERNAL_SUPER_PREFIX",
        "GIT_NAMESPACE",
        "GIT_NO_REPLACE_OBJECTS",
        "GIT_OBJECT_DIRECTORY",
        "GIT_PREFIX",
        "GIT_QUARANTINE_PATH",
        "GIT_REPLACE_REF_BASE",
        "GIT_SHALLOW_FILE",
        "GIT_WORK_TREE",
    }
)


def child_environ(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """``os.environ`` without git's repository variables, updated with *extra*.

    *extra* may not bring them back either: a caller's mapping is filtered the same way.
    """
    merged = {**os.environ, **(extra or {})}
    return {key: value for key, value in merged.items() if key not in GIT_REPOSITORY_VARIABLES}


# What a sandboxed task keeps under --sandbox-env besides the variables named: rho's own, where
# programs are and whose home it is, the locale and terminal, git's identity.
SANDBOX_KEPT = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "TERM",
        "TZ",
        "LANG",
        "LANGUAGE",
        "TMPDIR",
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_NOSYSTEM",
    }
)


def sandbox_environ(env: Mapping[str, str], named: list[str] | None) -> dict[str, str]:
    """*env* for a sandboxed task: whole when *named* is None (``--sandbox-env`` not given),
    else only the *named* variables, ``RHO_*``, ``LC_*`` and ``SANDBOX_KEPT``."""
    if named is None:
        return dict(env)
    wanted = set(named) | SANDBOX_KEPT
    return {
        key: value for key, value in env.items() if key in wanted or key.startswith(("RHO_", "LC_"))
    }
