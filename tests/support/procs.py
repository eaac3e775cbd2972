"""Processes read from /proc: states, process groups, environments; leftovers killed.

A process that is gone, or a zombie nobody reaped (init may not reap), no longer runs. A task
process group is killed only while a member still runs with its mission's id in its
environment: process ids get reused.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from support.stores import journal_events

__all__ = [
    "environ_has",
    "group_alive",
    "kill_leftover_groups",
    "pgid_of",
    "pid_gone",
    "proc_stat",
    "running_stat",
    "state_of",
]


def proc_stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command's name (the state first), or None
    once *pid* is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    return text.rpartition(")")[2].split()


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, process group) of *pid*, or None once it is gone."""
    fields = proc_stat(pid)
    return None if fields is None else (fields[0], int(fields[2]))


def running_stat(pid: int) -> list[str]:
    """``proc_stat`` of a *pid* that must still be there (running, stopped or a zombie)."""
    fields = proc_stat(pid)
    assert fields is not None, f"process {pid} is gone"
    return fields


def state_of(pid: int) -> str:
    """The state letter of the running or zombie *pid* (``R``, ``S``, ``T``, ``Z``...)."""
    return running_stat(pid)[0]


def pid_gone(pid: int) -> bool:
    """True when *pid* no longer runs: absent, or a zombie nobody reaped (init may not reap)."""
    stat = _stat(pid)
    return stat is None or stat[0] in ("Z", "X")


def pgid_of(pid: int) -> int:
    """The process group of the running *pid*."""
    stat = _stat(pid)
    assert stat is not None, f"process {pid} is gone"
    return stat[1]


def _live_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None and stat[1] == pgid and stat[0] not in ("Z", "X"):
                members.append(int(entry.name))
    return members


def group_alive(pgid: int) -> bool:
    """True while some member of process group *pgid* runs (zombies do not count)."""
    return bool(_live_members(pgid))


def environ_has(pid: int, entry: str) -> bool:
    """True when *pid*'s environment holds exactly *entry* (``NAME=value``); False once it is
    gone or unreadable."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return entry.encode() in environ.split(b"\0")


def kill_leftover_groups(folder: Path) -> list[int]:
    """SIGKILL every task process group that a mission under *folder* left running.

    The groups are the ones the missions' journals recorded; a group is touched only while a
    member still runs with that mission's id in its environment (process ids get reused).
    """
    killed = []
    for journal in folder.rglob("journal.jsonl"):
        mission_id = journal.parent.name
        for entry in journal_events(journal.parent, "process"):
            pgid = entry["pgid"]
            members = _live_members(pgid)
            if any(environ_has(pid, f"RHO_MISSION_ID={mission_id}") for pid in members):
                os.killpg(pgid, signal.SIGKILL)
                killed.append(pgid)
    return killed
