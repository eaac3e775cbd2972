"""Recovery after a crash: end the process groups a killed ``rho`` left running.

The journal records every process group the shell worker started (``process`` events) and every
feature's end (``finish``). A group started after its feature's last finish belongs to a run that
died. Before a mission runs again such groups are terminated, so that no orphan keeps writing to
a worktree; a group is touched only while one of its live members has this mission's id in its
environment (``RHO_MISSION_ID``), so a process id reused by the system since the crash is left
alone. Any member counts, not only the leader: a command that exited after the crash while its
background children run on leaves a leader that is gone, or a zombie whose environment is empty.
"""

from __future__ import annotations

import json
from pathlib import Path

from ._process import live_members, terminate_group

__all__ = ["orphan_groups", "recover_processes"]

_PROC = Path("/proc")


def orphan_groups(journal: Path) -> list[int]:
    """Process groups started by features whose run never recorded a finish afterwards."""
    open_groups: dict[str, int] = {}
    try:
        lines = journal.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    for line in lines:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line torn by the crash itself
        feature = entry.get("feature_id")
        if entry.get("event") == "process" and isinstance(entry.get("pgid"), int):
            open_groups[feature] = entry["pgid"]
        elif entry.get("event") == "finish":
            open_groups.pop(feature, None)
    return sorted(open_groups.values())


async def recover_processes(journal: Path, mission_id: str, grace: float) -> list[int]:
    """Terminate the orphan groups recorded in *journal* that still belong to *mission_id*."""
    return [
        pgid
        for pgid in orphan_groups(journal)
        if _belongs_to(pgid, mission_id) and await terminate_group(pgid, grace)
    ]


def _belongs_to(pgid: int, mission_id: str) -> bool:
    marker = f"RHO_MISSION_ID={mission_id}".encode()
    return any(marker in _environ(pid).split(b"\0") for pid in live_members(pgid))


def _environ(pid: int) -> bytes:
    try:
        return (_PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return b""
