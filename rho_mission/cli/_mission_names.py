"""A mission named on the command line, and the commands to run after one ended.

Shared by ``rho mission`` (``_mission``) and its other subcommands (``_mission_tools``), so
that neither imports the other's module for them.

Decision: docs/decisions/0508-mission-commands.md
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..mission._mission import Mission
    from ..records._document import MissionDocument

__all__ = ["load_mission", "mission_folder", "next_commands"]


def mission_folder(name: str) -> Path:
    """The folder of the mission *name* names, from the current directory's repository.

    Raises:
        MissionNotFoundError: no mission, or several, match *name*.
        NotAGitRepositoryError: *name* is no folder and the current directory is in no repository.
    """
    from ..mission._names import resolve_mission

    return resolve_mission(Path.cwd(), name)


def load_mission(name: str) -> Mission:
    """The mission *name* names, loaded (see ``mission_folder``)."""
    from rho_mission import Mission

    return Mission.load(mission_folder(name))


def next_commands(target: MissionDocument) -> list[str]:
    """The exact command(s) to run after a run of *target* ended, one line each."""
    ident = target.id
    if target.budget_stop is not None and target.status == "partial":
        flag = "--budget-usd" if target.config.budget_usd is not None else "--budget-tokens"
        from ..notify._event import higher_budget

        higher = higher_budget(target)
        return [
            f"stopped: {target.budget_stop}",
            f"next, with a higher budget: rho mission resume {ident} {flag} {higher}",
        ]
    if target.status == "completed":
        return [f"next: rho mission merge {ident}"]
    if target.status in ("failed", "partial"):
        return [f"next: rho mission show {ident}", f"then, after a fix: rho mission resume {ident}"]
    if target.status == "cancelled":
        return [f"next: rho mission resume {ident}"]
    return []
