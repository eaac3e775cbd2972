"""Durable writes of a mission folder: mission.json and mission-graph.json, atomically, 0600."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from graph import write_graph
from taskstore import write_atomic

from ._projection import mission_graph

if TYPE_CHECKING:
    from ._models import MissionDocument

__all__ = ["make_private_dirs", "prepare_mission_dir", "save_mission"]


def make_private_dirs(folder: Path, depth: int = 1) -> None:
    """Create *folder*, mode 0700, with its *depth* - 1 parents and every folder below ``.rho``."""
    folder.mkdir(parents=True, exist_ok=True)
    parts = folder.parts
    first = len(parts) - depth + 1
    if ".rho" in parts:
        first = min(first, len(parts) - parts[::-1].index(".rho"))
    for end in range(first, len(parts) + 1):
        Path(*parts[:end]).chmod(0o700)


def prepare_mission_dir(folder: Path) -> None:
    """Create the mission folder and its ``logs/``, each (and every folder from ``.rho``) 0700."""
    make_private_dirs(folder / "logs", depth=2)


def save_mission(mission: MissionDocument) -> None:
    """Rewrite mission.json, then mission-graph.json, each atomically with fsync.

    mission.json goes first: it is the record a resume reads; the graph is derived from it.
    """
    folder = Path(mission.dir)
    payload = mission.model_dump_json(indent=2) + "\n"
    write_atomic(folder / "mission.json", payload.encode())
    write_graph(folder / "mission-graph.json", mission_graph(mission))
