"""Where things live: the repository root and the task store path."""

from __future__ import annotations

import os
from pathlib import Path

from ._errors import CliError

__all__ = ["command_store_path", "find_repo_root", "resolve_store_path"]


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


def resolve_store_path(*candidates: Path | None) -> Path:
    """The first given path, else ``$RHO_TASK_STORE``, else ``<repo root>/.rho/tasks.json``.

    Raises:
        CliError: none is given and the working folder is in no git repository; a store made
            there would land wherever the shell happened to be, and a read would see no tasks.
    """
    for candidate in candidates:
        if candidate is not None:
            return candidate
    from_env = os.environ.get("RHO_TASK_STORE")
    if from_env:
        return Path(from_env)
    root = find_repo_root()
    if root is None:
        raise CliError(
            f"not in a git repository: {Path.cwd()}; pass --store PATH or set RHO_TASK_STORE"
        )
    return root / ".rho" / "tasks.json"


def command_store_path(store_path: Path | None) -> Path:
    """The store of the running click command: its ``--store``, else ``rho --store``, else the
    environment or the default (see ``resolve_store_path``).

    Raises:
        CliError: no store is named and the working folder is in no git repository.
    """
    import click  # here, not at the top: the click-free lane of ``_quick`` imports this module

    root = click.get_current_context().find_root().obj or {}
    return resolve_store_path(store_path, root.get("store"))


def _ceiling_directories() -> set[Path]:
    # git ignores relative entries; an empty entry only changes how git resolves links.
    entries = os.environ.get("GIT_CEILING_DIRECTORIES", "").split(os.pathsep)
    return {Path(entry).resolve() for entry in entries if os.path.isabs(entry)}
