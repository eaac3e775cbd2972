"""Whose tree a setup ran on: the user's own, or one that holds tasks' work.

A setup runs the project's own code (``npm ci`` runs ``package.json``'s scripts, ``pip install
-e .`` runs ``setup.py``), and on a commit that holds tasks' work (a wave's start after a join,
a check's merged head, the head of an earlier mission that ``--continue`` goes on from) that
code is the tasks'. What it leaves may be reused by the mission whose tasks those are, never by
another: only a setup made on the user's own commit is kept across missions.

The user's own commit is one on a branch, tag or remote branch of theirs: any ref of
``refs/heads``, ``refs/tags`` or ``refs/remotes`` but rho's ``rho-mission/...`` branches (and
their copies on a remote). A mission's integration head is the user's once a branch of theirs
holds it (they merged it, or named a branch for it); before that it is not, whether a mission
starts from it by ``--continue``, by its branch's name or by its commit id. Under ``--sandbox``
a task cannot make a ref (``refs/`` is read-only there).

Decision: docs/decisions/0604-setup-and-copy.md
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..git._repo import GitRepo

__all__ = ["users_own"]

# rho's branches (``records._places.mission_ref_prefix``), as git's ``--exclude`` patterns:
# relative to ``refs/heads`` for ``--branches``, to ``refs/remotes`` for ``--remotes``.
_RHO_BRANCHES = "rho-mission/*"
_RHO_REMOTE_BRANCHES = "*/rho-mission/*"


def users_own(repo: GitRepo, commit: str) -> bool:
    """Whether *commit* is on a branch, tag or remote branch of the user's (see the module).

    Raises:
        GitOperationError: git could not walk the history.
    """
    # Lists *commit* unless a user's ref reaches it; stops at the first commit listed.
    listed = repo.run(
        "rev-list", "--max-count=1", commit, "--not",
        f"--exclude={_RHO_BRANCHES}", "--branches",
        f"--exclude={_RHO_REMOTE_BRANCHES}", "--remotes",
        "--tags",
    )  # fmt: skip
    return not listed.strip()
