"""``rho mission show MISSION`` and ``rho mission list`` from the mission folders' own JSON: the
data source of their bodies (``_hotbodies``) in the quick lane.

The lane reads every ``<repo>/.rho/missions/*/mission.json`` as JSON and answers when each holds
what the views read, in the types mission.json has them (``_readable``); a folder without one,
a file that does not parse, or a missing or mistyped field leaves the command to the full CLI,
which loads each mission through its model (and skips, or names, the ones it cannot read).
The fields the views do not read are not checked here: a mission.json edited by hand in those
may be listed by this lane where the full CLI would leave it out. A figure of usage out of its
bounds (``records._usagelimits``) leaves the command to the full CLI too: its model reads
that figure as unknown, and both lanes print the same.

Decision: docs/decisions/0804-quick-lane.md
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...records._places import missions_folder
from ...records._usagelimits import budgets_within, figures_within
from .._paths import find_repo_root

__all__ = ["FileMissionSource"]

_ID = re.compile(r"[0-9a-f]{8}")
_PREFIX = re.compile(r"[0-9a-f]{1,8}")
_TEXT, _MAYBE_TEXT, _INT = (str,), (str, type(None)), (int,)
_MISSION = {
    "schema_version": _TEXT, "id": _TEXT, "prompt": _TEXT, "dir": _TEXT, "base_commit": _TEXT,
    "integration_branch": _TEXT, "status": _TEXT, "started_at": _MAYBE_TEXT,
    "completed_at": _MAYBE_TEXT, "features": (list,), "waves": (list,), "held": (list,),
    "wave_joins": (list,),
}  # fmt: skip
_FEATURE = {
    "id": _TEXT, "status": _TEXT, "attempts": _INT, "started_at": _MAYBE_TEXT,
    "completed_at": _MAYBE_TEXT, "error": _MAYBE_TEXT, "description": _TEXT,
    "branch": _MAYBE_TEXT, "handoff": (dict, type(None)),
}  # fmt: skip
_JOIN = {
    "wave": _INT, "summary": _TEXT, "started_at": _MAYBE_TEXT, "completed_at": _MAYBE_TEXT,
    "blocked_ids": (list,), "not_run_ids": (list,), "verification": (dict,),
}  # fmt: skip
_VERIFICATION = {
    "status": _TEXT, "attempts": _INT, "fix_attempts": _INT, "duration_ms": _INT,
    "error": _MAYBE_TEXT, "fix_error": _MAYBE_TEXT,
}  # fmt: skip
_HELD = {"id": _TEXT, "reason": _TEXT}
_HANDOFF = {"files_changed": (list,), "summary": _TEXT}


class FileMissionSource:
    """The missions of this repository from their mission.json, without the model; None where
    this lane cannot answer (a folder it cannot read; JSON and diagrams: the model's)."""

    def missions(self) -> list[tuple[dict[str, Any], str]] | None:
        return _missions_here()

    def mission(self, name: str) -> tuple[dict[str, Any], str] | None:
        found = _missions_here()
        return None if found is None else _named(found, name)

    def mission_json(self, name: str) -> None:
        return None

    def diagram(self, name: str, fmt: str) -> None:
        return None


def _named(found: list[tuple[dict[str, Any], str]], name: str) -> tuple[dict[str, Any], str] | None:
    """The mission *name* (``latest``, an id or a unique prefix) names, as ``resolve_mission``
    finds it; None for a folder, no match or several (the full CLI's words)."""
    if name != "latest" and _PREFIX.fullmatch(name) is None:
        return None  # a folder
    if os.path.isfile(os.path.join(name, "mission.json")):
        return None  # a folder here that holds a mission
    if name == "latest":
        return found[0] if found else None
    matches = [entry for entry in found if entry[0]["id"].startswith(name)]
    return matches[0] if len(matches) == 1 else None


def _missions_here() -> list[tuple[dict[str, Any], str]] | None:
    """Every mission of this repository with its state, newest first; None to leave it to the
    full CLI (no repository, or a mission folder this lane cannot read)."""
    from ...git._exclude import common_dir_of

    root = find_repo_root()
    common = None if root is None else common_dir_of(root)
    if root is None or common is None:
        return None
    folder = missions_folder(root)
    missions = []
    for mission_dir in sorted(folder.glob("*/")) if folder.is_dir() else []:
        mission = _read(mission_dir)
        if mission is None:
            return None
        missions.append(mission)
    missions.sort(key=lambda m: (m["started_at"] or "", m["id"]), reverse=True)
    return [(m, _state(m, common)) for m in missions]


def _state(mission: dict[str, Any], common_dir: Path) -> str:
    """``mission_state``: the status, or ``interrupted`` for an executing (or planning) one
    nobody runs."""
    from ...git._runlock import is_running_in

    planning = mission.get("planning")
    planning_runs = type(planning) is dict and planning.get("status") == "running"
    running = mission["status"] == "executing" or planning_runs
    if running and not is_running_in(common_dir, mission["id"]):
        return "interrupted"
    return str(mission["status"])


def _read(mission_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((mission_dir / "mission.json").read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    if not _readable(data):
        return None
    mission: dict[str, Any] = data
    mission["dir"] = os.path.abspath(mission_dir)  # where the folder is now, as Mission.load says
    return mission


def _readable(data: Any) -> bool:
    """Whether *data* holds every field the views read, in mission.json's types."""
    if not _shaped(data, _MISSION) or data["schema_version"] != "rho.mission/v1":
        return False
    if _ID.fullmatch(data["id"]) is None:
        return False
    features = data["features"]
    if not all(_shaped(f, _FEATURE) for f in features):
        return False
    if not all(f["handoff"] is None or _shaped(f["handoff"], _HANDOFF) for f in features):
        return False
    ids = {f["id"] for f in features}
    waves = data["waves"]
    if not all(type(w) is list and all(i in ids for i in w) for w in waves):
        return False
    joins = data["wave_joins"]
    if not all(_shaped(j, _JOIN) and _shaped(j["verification"], _VERIFICATION) for j in joins):
        return False
    return all(_shaped(held, _HELD) for held in data["held"]) and _figures_within(data)


def _figures_within(data: dict[str, Any]) -> bool:
    """Whether every figure of usage the views read, and the budgets, are within bounds."""
    config = data.get("config")
    if type(config) is dict and not budgets_within(config):
        return False
    totals = [data.get("usage"), *(part.get("usage") for part in data["features"])]
    totals += [join.get("usage") for join in data["wave_joins"]]
    records = [*_listed(data.get("stage_usage"))]
    records += [r for f in data["features"] for r in _listed(f.get("attempt_usage"))]
    return all(figures_within(t, total=True) for t in totals) and all(
        figures_within(r, total=False) for r in records
    )


def _listed(value: object) -> list[object]:
    return value if type(value) is list else []


def _shaped(value: Any, fields: Mapping[str, tuple[type, ...]]) -> bool:
    if type(value) is not dict:
        return False
    # bool is an int: a hand-written `true` is no count.
    return all(key in value and type(value[key]) in kinds for key, kinds in fields.items())
