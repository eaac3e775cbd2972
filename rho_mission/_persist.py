"""Durable writes of a mission folder: mission.json and mission-graph.json, atomically, 0600."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from taskstore import write_atomic

from ._folders import private_folder
from ._graphcache import cache_for

if TYPE_CHECKING:
    from ._models import MissionDocument

__all__ = ["folder_anchor", "prepare_mission_dir", "save_mission"]


def folder_anchor(folder: Path, repo: Path) -> Path:
    """Where the symlink checks of *folder* start: the repository root for a folder below
    ``<repo>/.rho``, else the folder's parent (a mission folder the user put elsewhere)."""
    folder = Path(os.path.abspath(folder))
    return repo if folder.is_relative_to(repo / ".rho") else folder.parent


def prepare_mission_dir(folder: Path, repo: Path) -> None:
    """Create the mission folder, its ``logs/`` and ``prompts/``, each 0700, never via a symlink.

    Raises:
        UnsafePathError: a symbolic link (or a file) stands where one of these folders goes.
    """
    anchor = folder_anchor(folder, repo)
    for sub in ("logs", "prompts"):
        private_folder(folder / sub, anchor)


def save_mission(mission: MissionDocument) -> None:
    """Rewrite mission.json, then mission-graph.json, each atomically with fsync.

    mission.json goes first: it is the record a resume reads; the graph is derived from it. The
    graph's bytes are those of ``dump_graph(mission_graph(mission))``, re-projected only where
    the mission changed since its last save in this process (``_graphcache``).
    """
    folder = Path(mission.dir)
    payload = mission.model_dump_json(indent=2) + "\n"
    write_atomic(folder / "mission.json", payload.encode())
    write_atomic(folder / "mission-graph.json", cache_for(mission).render(mission))
