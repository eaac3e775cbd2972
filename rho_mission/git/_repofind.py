"""Which repository a folder is in, found without starting git (the CLI and the server ask).

Decision: docs/decisions/0703-git-hardening.md
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["find_repo_root"]


def find_repo_root(start: Path | None = None) -> Path | None:
    """The nearest folder at or above *start* (default: cwd) holding ``.git``, or None.

    Like git, the walk never climbs into a folder of ``$GIT_CEILING_DIRECTORIES``.
    """
    here = (start or Path.cwd()).resolve()
    ceilings = _ceiling_directories()
    for folder in (here, *here.parents):
        if folder != here and folder in ceilings:
            return None
        if (folder / ".git").exists():
            return folder
    return None


def _ceiling_directories() -> set[Path]:
    # git ignores relative entries; an empty entry only changes how git resolves links.
    entries = os.environ.get("GIT_CEILING_DIRECTORIES", "").split(os.pathsep)
    return {Path(entry).resolve() for entry in entries if os.path.isabs(entry)}
