"""The graph of a mission folder or of a task store, scoped to a repository.

What ``rho graph export`` prints and what ``rho serve``'s graph routes send: both call these,
so a client gets the command's bytes for the same source and scope.

Decision: docs/decisions/0201-portable-graph.md
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .._errors import StoreNotFoundError
from ..git._repofind import find_repo_root

if TYPE_CHECKING:
    from graph import GraphDocument

__all__ = ["StoreNotFoundError", "mission_source_graph", "store_source_graph"]


def mission_source_graph(mission_dir: Path, repository: str | None = None) -> GraphDocument:
    """``DIR/mission-graph.json``, scoped to *repository*.

    Without *repository*, the graph keeps the repository its file names (the engine writes the
    basename of the mission's repository folder); a file that names none takes the basename of
    the git repository holding the folder, if any.

    Raises:
        GraphError: the file cannot be read or is not valid, or *repository* is no usable id.
    """
    from graph import check_repository_id, load_mission_graph, with_repository_id

    if repository is not None:
        check_repository_id(repository)
    document = load_mission_graph(mission_dir)
    scope = repository or document.scope.repository_id or _folder_repository(mission_dir)
    return document if scope is None else with_repository_id(document, scope)


def store_source_graph(store: Path, repository: str | None = None) -> GraphDocument:
    """The projection of the task store at *store*, scoped to *repository* (by default the
    basename of the git repository holding it, if any).

    Raises:
        StoreNotFoundError: no file at *store*.
        GraphError, TaskStoreError: the store cannot be read, or *repository* is no usable id.
    """
    from graph import check_repository_id

    from ..records._projection import task_store_graph

    if repository is not None:
        check_repository_id(repository)
    if not store.is_file():
        # Reading a missing store as empty suits `rho task`; exporting or uploading an empty
        # graph because of a typo does not.
        raise StoreNotFoundError(f"task store not found: {store}")
    from taskstore import TaskStore

    scope = repository or _folder_repository(store.parent)
    return task_store_graph(TaskStore(store).tasks(), repository_id=scope)


def _folder_repository(folder: Path) -> str | None:
    """The default repository id of what lies in *folder*: its repository's basename."""
    from graph import repository_id_for_folder

    root = find_repo_root(folder)
    return None if root is None else repository_id_for_folder(root)
