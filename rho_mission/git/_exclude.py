"""Keep ``.rho/`` out of git: one line in the repository's ``info/exclude``.

rho's records (the task store, missions, worktrees) live in ``<repo>/.rho/`` and must never be
committed: a tracked store changes with every mission, and every ``rho mission merge`` would
then refuse a dirty tree. So the first write of rho in a repository (a ``rho task add`` as much
as a mission) adds ``.rho/`` to ``<git common dir>/info/exclude``, which applies to every
worktree and is never committed itself.

Standard library only: the ``rho task`` commands call it and must stay light (no git process).

Decision: docs/decisions/0702-safety-invariants.md
"""

from __future__ import annotations

import os
from pathlib import Path

from ..records._places import RHO_DIR, RHO_PATTERN

__all__ = ["RHO_PATTERN", "add_exclude_line", "common_dir_of", "exclude_rho_of_store"]


def add_exclude_line(common_dir: Path, pattern: str) -> bool:
    """Add *pattern* as a line of ``<common_dir>/info/exclude`` unless it is there; whether
    the file changed. ``GitRepo.exclude`` calls it under the repository's lock; without it, two
    writers at once may write the line twice, which excludes as well."""
    path = common_dir / "info" / "exclude"
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    if pattern in (line.strip() for line in text.splitlines()):
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    separator = "" if not text or text.endswith("\n") else "\n"
    with path.open("a", encoding="utf-8") as handle:
        handle.write(f"{separator}{pattern}\n")
    return True


def common_dir_of(root: Path) -> Path | None:
    """The git common dir of the work tree at *root* (``.git``, or where a ``.git`` file of a
    linked worktree leads), or None when *root* holds no ``.git``."""
    dot_git = root / ".git"
    if dot_git.is_dir():
        return dot_git
    try:
        first = dot_git.read_text(encoding="utf-8").splitlines()[0]
    except (OSError, IndexError, UnicodeDecodeError):
        return None
    if not first.startswith("gitdir: "):
        return None
    git_dir = Path(root, first[len("gitdir: ") :].strip())
    try:
        common = (git_dir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return git_dir
    return Path(os.path.normpath(git_dir / common))


def exclude_rho_of_store(store: Path) -> None:
    """Exclude ``.rho/`` when *store* is a repository's own ``<root>/.rho/<file>``."""
    folder = Path(os.path.abspath(store)).parent
    if folder.name != RHO_DIR:
        return
    common = common_dir_of(folder.parent)
    if common is not None:
        add_exclude_line(common, RHO_PATTERN)
