"""Where things live: the repository root and the task store path."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["command_store_path", "find_repo_root", "resolve_store_path"]


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


def command_store_path(store_path: Path | None) -> Path:
    """The store of the running click command: its ``--store``, else ``rho --store``, else the
    environment or the default (see ``resolve_store_path``)."""
    import click  # here, not at the top: the click-free lane of ``_quick`` imports this module

    root = click.get_current_context().find_root().obj or {}
    return resolve_store_path(store_path, root.get("store"))
