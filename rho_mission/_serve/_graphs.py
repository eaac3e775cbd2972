"""The graph routes: the bytes ``rho graph export`` prints, built by the same code.

``rho graph export`` builds its document with ``rho_mission.cli._graph.load_source`` and prints
``graph.dump_graph`` of it; the server calls the very same two functions, so a client gets, for
one mission or store, the bytes the command prints.
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
    import click

    from graph import GraphError, dump_graph
    from rho_mission.cli._errors import CliError
    from rho_mission.cli._graph import graph, load_source
    from taskstore import TaskStoreError

    try:
        # load_source resolves the store through the current click context (for `rho --store`);
        # the store is named here, so an empty context of the `graph` group is all it needs.
        with click.Context(graph, obj={}):
            return dump_graph(load_source(mission_dir, store, scope))
    except CliError as exc:  # the one refusal of a store path: "task store not found"
        raise NotFoundError(str(exc)) from exc
    except (GraphError, TaskStoreError) as exc:
        raise ServeError(str(exc)) from exc


def _is_link(path: Path) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False
