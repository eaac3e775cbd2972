"""Durable writes of a mission folder: mission.json and mission-graph.json, atomically, 0600."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from graph import write_graph
from taskstore import write_atomic

from ._projection import mission_graph

if TYPE_CHECKING:
    from ._models import MissionDocument

__all__ = ["prepare_mission_dir", "save_mission"]


def prepare_mission_dir(folder: Path) -> None:
    """Create the mission folder and its ``logs/``, mode 0700, and so every folder from ``.rho``."""
    (folder / "logs").mkdir(parents=True, exist_ok=True)
    private = [folder, folder / "logs"]
    if ".rho" in folder.parts:
        top = len(folder.parts) - folder.parts[::-1].index(".rho")
        private += [Path(*folder.parts[:end]) for end in range(top, len(folder.parts))]
    for part in private:
        part.chmod(0o700)


def save_mission(mission: MissionDocument) -> None:
    """Rewrite mission.json, then mission-graph.json, each atomically with fsync.

    mission.json goes first: it is the record a resume reads; the graph is derived from it.
    """
    folder = Path(mission.dir)
    payload = mission.model_dump_json(indent=2) + "\n"
    write_atomic(folder / "mission.json", payload.encode())
    write_graph(folder / "mission-graph.json", mission_graph(mission))
