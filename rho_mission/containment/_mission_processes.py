"""Find and end every process of a mission, journaled or not.

The shell worker gives each task process ``RHO_MISSION_ID=<mission>`` in its environment, and
its children inherit it, even those that leave the task's process group (``setsid``). A task
can drop the mark (``env -i``, or a process title that overwrites the environment area), but
not its parentage: every process of a task descends from its supervisor (a child subreaper,
``_reaper``), which keeps the mark. So the processes of a mission are the marked
ones and their descendants, found in ``/proc``, not from the journal:
a run killed between spawning a task and journaling it, or a task's daemon that escaped its
group, is found all the same. A process id reused by the system since a crash carries no mark
and is left alone. rho itself and its ancestors are never counted (a mission run from inside a
task of another mission carries that mission's mark too).

Used before a mission runs again (orphans of a crashed run must not write into the worktrees of
the new one), at the end of every run (nothing of a mission outlives it), and on a second
Ctrl-C or SIGTERM (``kill_mission_processes``: SIGKILL at once, no grace).

Decision: docs/decisions/0704-supervisor.md
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from signal import SIGKILL, SIGSTOP, SIGTERM

import anyio

from ._pids import signal_each
from ._process import read_stat, signal_group

__all__ = [
    "end_mission_processes",
    "kill_mission_processes",
    "kill_task_processes",
    "mission_processes",
]

_PROC = Path("/proc")
_KILL_WAIT = 5.0
_POLL = 0.02


def mission_processes(mission_id: str, task_id: str | None = None) -> list[int]:
    """The live processes (zombies excluded) whose environment names *mission_id* (and
    *task_id*, when given), and their descendants, sorted.

    A descendant counts whatever its environment says: a task's supervisor carries the marks,
    and what the task started below it (``env -i``, a new process title) is found through it.
    """
    if not _PROC.is_dir():
        return []
    marks = {f"RHO_MISSION_ID={mission_id}".encode()}
    if task_id is not None:
        marks.add(f"RHO_TASK_ID={task_id}".encode())
    spared = _self_and_ancestors()
    parents: dict[int, int] = {}
    marked: set[int] = set()
    for entry in os.scandir(_PROC):
        if entry.name.isdigit() and int(entry.name) not in spared:
            pid = int(entry.name)
            stat = read_stat(entry.path)
            if stat is None or stat[0] in ("Z", "X"):
                continue
            parents[pid] = stat[1]
            if marks <= set(_read(pid, "environ").split(b"\0")):
                marked.add(pid)
    return sorted(pid for pid in parents if _below(pid, marked, parents))


def _below(pid: int, marked: set[int], parents: dict[int, int]) -> bool:
    # *pid* or one of its ancestors is marked.
    seen: set[int] = set()
    while pid not in seen:
        if pid in marked:
            return True
        seen.add(pid)
        if pid not in parents:
            return False
        pid = parents[pid]
    return False


def kill_mission_processes(mission_id: str) -> list[int]:
    """SIGKILL every process of *mission_id* and their process groups, at once."""
    return _kill(mission_processes(mission_id))


def kill_task_processes(mission_id: str, task_id: str) -> list[int]:
    """SIGKILL every process of task *task_id* of *mission_id* (and their groups), at once."""
    return _kill(mission_processes(mission_id, task_id))


def _kill(pids: list[int]) -> list[int]:
    # Stopped first, all of them: a supervisor killed before its descendants would let them
    # fork on, reparented, while the list is worked through.
    _signal(pids, SIGSTOP)
    _signal(pids, SIGKILL)
    return pids


async def end_mission_processes(mission_id: str, grace: float) -> list[int]:
    """SIGTERM every process of *mission_id* (and its group), SIGKILL what is left after *grace*.

    Returns the processes found. Waits a bounded time after SIGKILL (a process stuck in the
    kernel cannot be waited for forever).
    """
    pids = mission_processes(mission_id)
    if not pids:
        return []
    _signal(pids, SIGTERM)
    if not await _gone(mission_id, grace):
        _signal(mission_processes(mission_id), SIGKILL)
        await _gone(mission_id, _KILL_WAIT)
    return pids


async def _gone(mission_id: str, timeout: float) -> bool:  # noqa: ASYNC109
    # Polled: the kernel tells nobody but their parents when processes end.
    with anyio.move_on_after(timeout):
        while mission_processes(mission_id):  # noqa: ASYNC110
            await anyio.sleep(_POLL)
        return True
    return False


def _signal(pids: list[int], signum: int) -> None:
    own_group = os.getpgrp()
    groups = {_group_of(pid) for pid in pids} - {own_group, None}
    for pgid in sorted(g for g in groups if g is not None):
        with contextlib.suppress(PermissionError):
            signal_group(pgid, signum)
    signal_each(pids, signum)  # those that left their group


def _group_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def _self_and_ancestors() -> set[int]:
    spared: set[int] = set()
    pid = os.getpid()
    while pid > 0 and pid not in spared:
        spared.add(pid)
        stat = read_stat(str(_PROC / str(pid)))
        pid = stat[1] if stat is not None else 0
    return spared


def _read(pid: int, name: str) -> bytes:
    try:
        return (_PROC / str(pid) / name).read_bytes()
    except OSError:
        return b""
