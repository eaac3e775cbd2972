"""Where things live: the repository root and the task store path.

Decision: docs/decisions/0101-task-store-file.md
"""

from __future__ import annotations

import os
from pathlib import Path

from ..git._repofind import find_repo_root
from ..records._places import default_store
from ._errors import CliError

__all__ = ["command_store_path", "find_repo_root", "resolve_store_path"]


def resolve_store_path(*candidates: Path | None, reading: bool = False) -> Path:
    """The first given path, else ``$RHO_TASK_STORE``, else ``<repo root>/.rho/tasks.json``.

    With *reading*, a store named by a path or the environment must exist: a typo is not an
    empty store. The repository's own default store may be missing (no task added yet).

    Raises:
        CliError: none is given and the working folder is in no git repository; a store made
            there would land wherever the shell happened to be, and a read would see no tasks.
            With *reading*: the named store file does not exist.
    """
    for candidate in candidates:
        if candidate is not None:
            return _existing(candidate, "--store") if reading else candidate
    from_env = os.environ.get("RHO_TASK_STORE")
    if from_env:
        return _existing(Path(from_env), "$RHO_TASK_STORE") if reading else Path(from_env)
    root = find_repo_root()
    if root is None:
        raise CliError(
            f"not in a git repository: {Path.cwd()}; pass --store PATH or set RHO_TASK_STORE"
        )
    return default_store(root)


def _existing(path: Path, named_by: str) -> Path:
    if not os.path.exists(path):
        raise CliError(
            f"no task store at {path} (named by {named_by}); a write such as 'rho task add' "
            "creates one"
        )
    return path


def command_store_path(store_path: Path | None, *, reading: bool = False) -> Path:
    """The store of the running click command: its ``--store``, else ``rho --store``, else the
    environment or the default (see ``resolve_store_path``, and *reading* there).

    Raises:
        CliError: no store is named and the working folder is in no git repository; with
            *reading*, the named store does not exist.
    """
    import click  # here, not at the top: the click-free lane of ``_quick`` imports this module

    root = click.get_current_context().find_root().obj or {}
    return resolve_store_path(store_path, root.get("store"), reading=reading)
