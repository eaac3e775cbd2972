"""Where things live: the repository root and the task store path."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["find_repo_root", "resolve_store_path"]


def find_repo_root(start: Path | None = None) -> Path | None:
    """The nearest folder at or above *start* (default: cwd) holding ``.git``, or None."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return None


def resolve_store_path(*candidates: Path | None) -> Path:
    """The first given path, else ``$RHO_TASK_STORE``, else ``<repo or cwd>/.rho/tasks.json``."""
    for candidate in candidates:
        if candidate is not None:
            return candidate
    from_env = os.environ.get("RHO_TASK_STORE")
    if from_env:
        return Path(from_env)
    return (find_repo_root() or Path.cwd()) / ".rho" / "tasks.json"
