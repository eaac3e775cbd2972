"""The names of rho's places: its folders under ``<repo>/.rho`` and the refs of a mission.

Every module that builds one of these paths or ref names asks here, so that the layout of
``.rho/`` (docs/architecture.md, "Files") is spelled once.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "RHO_DIR",
    "RHO_PATTERN",
    "default_store",
    "feature_branch",
    "integration_branch",
    "mission_folder",
    "mission_ref_prefix",
    "mission_worktrees",
    "missions_folder",
    "pool_folder",
    "rho_folder",
    "setup_states_folder",
    "worktrees_folder",
]

RHO_DIR = ".rho"
#: The line that keeps ``.rho/`` out of git (``info/exclude``), and any pathspec of it.
RHO_PATTERN = ".rho/"


def rho_folder(root: Path) -> Path:
    """``<root>/.rho``: everything rho keeps in a repository."""
    return root / RHO_DIR


def default_store(root: Path) -> Path:
    """``<root>/.rho/tasks.json``: the repository's task store."""
    return rho_folder(root) / "tasks.json"


def missions_folder(root: Path) -> Path:
    """``<root>/.rho/missions``: one folder per mission."""
    return rho_folder(root) / "missions"


def mission_folder(root: Path, mission_id: str) -> Path:
    """``<root>/.rho/missions/<id>``."""
    return missions_folder(root) / mission_id


def worktrees_folder(root: Path) -> Path:
    """``<root>/.rho/worktrees``: the worktrees of missions and the shared pool."""
    return rho_folder(root) / "worktrees"


def pool_folder(root: Path) -> Path:
    """``<root>/.rho/worktrees/pool``: the worktrees missions give back for later ones."""
    return worktrees_folder(root) / "pool"


def setup_states_folder(root: Path) -> Path:
    """``<root>/.rho/worktrees/setup``: the last setup of each pooled worktree (``--setup``)."""
    return worktrees_folder(root) / "setup"


def mission_worktrees(root: Path, mission_id: str, part: str | None = None) -> Path:
    """``<root>/.rho/worktrees/<id>`` (a mission's own worktrees), or its *part*
    (``checks``: the verify and fix stages; ``planner``: the planning stage)."""
    folder = worktrees_folder(root) / mission_id
    return folder if part is None else folder / part


def mission_ref_prefix(mission_id: str) -> str:
    """``rho-mission/<id>/``: every branch of the mission, and only those, starts with it."""
    return f"rho-mission/{mission_id}/"


def integration_branch(mission_id: str) -> str:
    """``rho-mission/<id>/integration``: where the mission's joins merge its work."""
    return mission_ref_prefix(mission_id) + "integration"


def feature_branch(mission_id: str, feature_id: str) -> str:
    """``rho-mission/<id>/<feature>``: a feature's branch."""
    return mission_ref_prefix(mission_id) + feature_id
