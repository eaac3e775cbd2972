"""The graph routes: the bytes ``rho graph export`` prints, built by the same code.

``rho graph export`` builds its document with ``rho_mission.mission._graphsource`` and prints
``graph.dump_graph`` of it; the server calls the very same functions, so a client gets, for
one mission or store and scope, the bytes the command prints.

Decision: docs/decisions/0801-serve.md, docs/decisions/0201-portable-graph.md
"""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING

from ._errors import BadRequestError, NotFoundError, ServeError

if TYPE_CHECKING:
    from pathlib import Path

    from ._source import Repository

__all__ = ["check_scope", "mission_graph_bytes", "task_graph_bytes"]


def mission_graph_bytes(repository: Repository, mission_id: str, scope: str | None = None) -> bytes:
    """The ``rho.graph/v1`` document of mission *mission_id*, as ``rho graph export`` prints it
    (``--repository`` *scope*, when given: checked before anything is read).

    Raises:
        BadRequestError, NotFoundError: a bad or unknown mission id.
        ServeError: the mission's graph file is a link, or cannot be read or validated.
    """
    check_scope(scope)
    folder = repository.mission_folder(mission_id)
    target = folder / "mission-graph.json"
    if _is_link(target):  # the export opens the file by name: no link is handed to it
        raise ServeError(f"mission {mission_id}: mission-graph.json is a symbolic link")
    return _export(folder, None, scope)


def task_graph_bytes(repository: Repository, scope: str | None = None) -> bytes:
    """The ``rho.graph/v1`` projection of the repository's task store, as ``rho graph export``
    (``--repository`` *scope*, when given: checked before anything is read).

    Raises:
        NotFoundError: the store file does not exist.
        ServeError: the store cannot be read, or its graph cannot be built.
    """
    check_scope(scope)
    return _export(None, repository.store, scope)


def check_scope(scope: str | None) -> None:
    """Refuse a ``?repository=`` that ``rho graph export --repository`` refuses, in its words.

    Raises:
        BadRequestError: blank, too long, or holding a control character.
    """
    from graph import GraphError, check_repository_id

    if scope is None:
        return
    try:
        check_repository_id(scope)
    except GraphError as exc:
        raise BadRequestError(str(exc)) from exc


def _export(mission_dir: Path | None, store: Path | None, scope: str | None) -> bytes:
    from graph import GraphError, dump_graph
    from taskstore import TaskStoreError

    from ..mission._graphsource import (
        StoreNotFoundError,
        mission_source_graph,
        store_source_graph,
    )

    try:
        if mission_dir is not None:
            return dump_graph(mission_source_graph(mission_dir, scope))
        assert store is not None
        return dump_graph(store_source_graph(store, scope))
    except StoreNotFoundError as exc:
        raise NotFoundError(str(exc)) from exc
    except (GraphError, TaskStoreError) as exc:
        raise ServeError(str(exc)) from exc


def _is_link(path: Path) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False
