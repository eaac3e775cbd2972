"""Missions by name: a folder, a mission id, a unique prefix of one, or ``latest``.

Every mission command (``show``, ``resume``, ``log``, ``merge``, ``clean``) takes one of these,
so that the ids ``rho mission list`` prints can be used as they are.

Decision: docs/decisions/0508-mission-commands.md
"""

from __future__ import annotations

import re
from pathlib import Path

from .._errors import MissionNotFoundError, quote
from ._mission import MISSION_FILE, Mission, list_missions

__all__ = ["LATEST", "MissionNotFoundError", "resolve_mission"]

#: The name of the newest mission (by ``started_at``, as ``list_missions`` orders them).
LATEST = "latest"
# Candidates an ambiguity error names; the rest are counted.
_NAMED = 5
# What may begin a mission id (8 lowercase hex digits, see ``MissionDocument.id``).
_ID_PREFIX = re.compile(r"[0-9a-f]{1,8}")


def resolve_mission(repo: str | Path, name: str) -> Path:
    """The folder of the mission that *name* names, in the repository holding *repo*.

    *name* is ``latest`` (the newest mission by ``started_at``), a mission id or a prefix of
    exactly one (up to 8 lowercase hex digits), looked up under ``<repo root>/.rho/missions``;
    anything else, or a folder here that holds ``mission.json``, is a folder, returned as given
    (``Mission.load`` says if it holds no mission).

    Raises:
        MissionNotFoundError: no mission matches *name*, or its prefix matches several.
        NotAGitRepositoryError: *name* is no folder and *repo* lies in no git work tree.
    """
    if _is_folder(name):
        return Path(name)
    missions = list_missions(repo)
    if name == LATEST:
        if not missions:
            raise MissionNotFoundError("no mission in this repository yet")
        return Path(missions[0].dir)
    matches = [m for m in missions if m.id.startswith(name)]
    if len(matches) == 1:
        return Path(matches[0].dir)
    if not matches:
        raise MissionNotFoundError(
            f"no mission matches {quote(name)}; 'rho mission list' shows the missions here"
        )
    raise MissionNotFoundError(_ambiguous(name, matches), [m.id for m in matches])


def _is_folder(name: str) -> bool:
    if name == LATEST or _ID_PREFIX.fullmatch(name):
        return (Path(name) / MISSION_FILE).is_file()
    return True


def _ambiguous(name: str, matches: list[Mission]) -> str:
    ids = sorted({m.id for m in matches})
    if len(ids) == 1:  # copies of one mission's folder
        folders = ", ".join(sorted(m.dir for m in matches))
        return f"mission {ids[0]} has several folders: {folders}; name the folder instead"
    more = f" and {len(ids) - _NAMED} more" if len(ids) > _NAMED else ""
    return (
        f"mission name {quote(name)} is ambiguous: it matches {', '.join(ids[:_NAMED])}{more}; "
        "give more of the id"
    )
