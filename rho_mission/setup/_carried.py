"""Whether work rho is about to land carries a ``--copy`` file: no commit rho lands may.

A ``--copy`` path names the user's untracked secret (``.env``). rho's own commits never stage
one (``git._commit``: the copies are spared), but a task, a fix or a resolver may commit by
itself (``git add -A && git commit``, as agents do), and that commit would reach the
integration branch and, by ``rho mission merge``, the user's. Such work is refused, never
rewritten: the history its author wrote is kept on its branch to look at, and none of it lands.

What "carries" means, decided once for every stage:

- the commits looked at are those the landing would bring: every commit the tip reaches that
  its start does not (``git rev-list start..tip``), merges and what they bring in included. So
  a file committed in the user's own history (before the start) is never the task's doing;
- one of them carries a ``--copy`` path when, against one of its parents (a root commit:
  against nothing), it adds that path, or anything below it, or changes what it holds. The
  content does not matter: the copy itself, the copy with a line appended, or a file of the
  task's own at the secret's name are all refused, as a content check would miss the second.
  A commit that only removes the path carries nothing (a tip without the file does not clear
  the history: a commit that held it and a later ``git rm --cached`` is refused still).

The cost is one ``git rev-list`` limited to the copied paths, whatever the number of commits;
only when it lists a commit (the path was touched) does one ``git diff-tree`` per listed
commit, oldest first, tell an addition from a removal.

Only the copied paths are looked at: the secret's content written under another name, or into
a commit message, is not recognised (a task can read the file, with ``--sandbox`` too). The
walk reads history as its objects say (no replace refs); a graft or ``shallow`` file, which only
a task without ``--sandbox`` can write (``.git`` is read-only in the sandbox), can still cut it.

Decision: docs/decisions/0604-setup-and-copy.md
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._errors import FeatureResultError
from ..git._commit import path_text
from ._inputs import LITERAL_PATHS

if TYPE_CHECKING:
    from ..git._repo import GitRepo

__all__ = ["carried_copy", "carried_text", "refuse_carried"]

# Every parent of a merge is followed, and a merge is listed when it differs from any one of
# them at the paths: git's default would skip a merge that matches one parent, and with it the
# side branch whose commit added the file.
# History as its objects say (a replace ref, which a task without --sandbox could write with
# "git replace", would show another commit in its place).
_TOUCHING = ("--no-replace-objects", "rev-list", "--full-history", "--reverse")
# The change of one commit against each of its parents (a root commit: against nothing), every
# entry: ":<old mode> <new mode> <old id> <new id> <status>\0<path>\0".
_CHANGES = (
    "--no-replace-objects",
    "diff-tree",
    "-m",
    "-r",
    "--root",
    "--no-renames",
    "--no-commit-id",
    "-z",
)


def carried_copy(
    repo: GitRepo, paths: Sequence[str], start: str, tip: str
) -> tuple[str, str] | None:
    """The first commit of ``start..tip`` (oldest first) that carries one of the ``--copy``
    *paths* (repository-relative), and that path; None when none does (see the module).

    Raises:
        GitOperationError: git could not walk the range (a commit of no object, say).
    """
    if not paths or start == tip:
        return None
    touching = repo.run(*_TOUCHING, f"{start}..{tip}", "--", *paths, env=LITERAL_PATHS)
    for commit in touching.split():
        out = repo.run(*_CHANGES, commit, "--", *paths, env=LITERAL_PATHS)
        found = _added(out.split("\0"), paths)
        if found is not None:
            return commit, found
    return None


def _added(fields: list[str], paths: Sequence[str]) -> str | None:
    # Raw entries come in pairs of fields: the modes, ids and status; then the path.
    for meta, path in zip(fields[::2], fields[1::2], strict=False):
        if meta.startswith(":") and not meta.endswith("D"):
            named = (p for p in paths if path == p or path.startswith(p + "/"))
            return next(named, path_text(path))
    return None


def refuse_carried(repo: GitRepo, paths: Sequence[str], start: str, tip: str) -> None:
    """Refuse the work of ``start..tip`` when one of its commits carries a ``--copy`` path.

    Raises:
        FeatureResultError: a commit holds one; its reason names the commit and the path.
        GitOperationError: git could not walk the range.
    """
    found = carried_copy(repo, paths, start, tip)
    if found is not None:
        commit, path = found
        raise FeatureResultError(carried_text(f"commit {commit[:12]}", path))


def carried_text(where: str, path: str) -> str:
    """The one-line reason a landing is refused: *where* (``commit 1a2b3c4d5e6f``, ``its
    resolution``) holds the ``--copy`` file *path*."""
    return (
        f"{where} holds {path}, a --copy file, which no commit rho lands may carry "
        f"(make git ignore {path}, so that 'git add -A' leaves it out)"
    )
