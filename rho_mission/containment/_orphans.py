"""rho as the child subreaper above every supervisor: a task's orphans come back to rho.

A task can kill its own supervisor (``kill -9 $PPID``) after it started a daemon that left
every mark behind (``setsid env -i sh -c 'cd /; ...'``). Without a subreaper above, the
daemon's parent becomes PID 1 and nothing of rho's can tell it from any other process. So
the first task rho starts makes rho a child subreaper (``PR_SET_CHILD_SUBREAPER``): the
orphans of a dead supervisor become rho's children.

An *adopted orphan* of a supervisor that died is a live child of rho's that rho did not start:
not one of the task supervisors it started and still waits for (``note_leader``), not in
rho's own session (every other process rho starts, git and the like, stays in it; a
supervisor makes a session of its own, and so does everything below it unless it stays in
the supervisor's), not a child rho already had when it became a subreaper (a library caller's
own), and started after that supervisor was. rho ends them, with what descends from them,
when a supervisor dies by a signal (``end_adopted``); their zombies are collected by pid. A
process a library caller started in a session of its own while a task ran, and whose parent
died, would be taken for one: a caller that needs such processes runs rho in a process of its
own.

Decision: docs/decisions/0704-supervisor.md
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
from pathlib import Path
from signal import SIGKILL, SIGTERM

import anyio

from ._pids import signal_each, stat_fields

__all__ = ["adopted_orphans", "become_subreaper", "drop_leader", "end_adopted", "note_leader"]

_PR_SET_CHILD_SUBREAPER = 36
_PROC = Path("/proc")
_POLL = 0.01
_KILL_WAIT = 5.0

_GUARD = threading.Lock()
_LEADERS: dict[int, int] = {}  # supervisor pid -> its start time (clock ticks since boot)
_SPARED: set[int] | None = None  # rho's children when it became a subreaper


def become_subreaper() -> bool:
    """Make this process a child subreaper, once; whether it is one."""
    global _SPARED
    with _GUARD:
        if _SPARED is not None:
            return True
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            return False
        _SPARED = {process[0] for process in _children()}
        return True


def note_leader(pid: int) -> int:
    """*pid* is a supervisor rho started: never an orphan while rho waits for it. Its start
    time (0 when it is gone already)."""
    started = _start_time(pid)
    with _GUARD:
        _LEADERS[pid] = started
    return started


def drop_leader(pid: int) -> None:
    """rho has reaped the supervisor *pid*."""
    with _GUARD:
        _LEADERS.pop(pid, None)


def _start_time(pid: int) -> int:
    fields = stat_fields(f"/proc/{pid}")
    return 0 if fields is None else int(fields[19])


# (pid, state, ppid, session, start time) of a process, from /proc/<pid>/stat.
_Process = tuple[int, str, int, int, int]


def _children() -> list[_Process]:
    """rho's children, from /proc."""
    me = os.getpid()
    return [process for process in _processes() if process[2] == me]


def _processes() -> list[_Process]:
    found = []
    for entry in os.scandir(_PROC) if _PROC.is_dir() else ():
        if entry.name.isdigit():
            fields = _stat(entry.path)
            if fields is not None:
                found.append((int(entry.name), *fields))
    return found


def _stat(proc_dir: str) -> tuple[str, int, int, int] | None:
    # state, ppid, session, start time
    fields = stat_fields(proc_dir)
    if fields is None:
        return None
    return fields[0], int(fields[1]), int(fields[3]), int(fields[19])


def _skipped() -> set[int]:
    with _GUARD:
        return set(_LEADERS) | (_SPARED or set())


def adopted_orphans(since: int = 0) -> list[int]:
    """The live processes that came back to rho from its tasks, started at or after *since*
    (clock ticks since boot: a supervisor's start), and all they started."""
    if _SPARED is None:
        return []
    own_session = os.getsid(0)
    processes = _processes()
    skip = _skipped()
    me = os.getpid()
    roots = {
        pid
        for pid, state, ppid, session, started in processes
        if ppid == me
        and state not in ("Z", "X")
        and session != own_session
        and pid not in skip
        and started >= since
    }
    return sorted(_with_descendants(roots, processes))


def _with_descendants(roots: set[int], processes: list[_Process]) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, state, ppid, _, _ in processes:
        if state not in ("Z", "X"):
            children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    todo = list(roots)
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo += children.get(pid, [])
    return found


async def end_adopted(grace: float, since: int = 0) -> list[int]:
    """SIGTERM the adopted orphans started at or after *since*, SIGKILL those left after
    *grace*; collect their zombies. The processes found."""
    found = adopted_orphans(since)
    if not found:
        return []
    signal_each(found, SIGTERM)
    if not await _gone(grace, since):
        signal_each(adopted_orphans(since), SIGKILL)
        await _gone(_KILL_WAIT, since)
    return found


async def _gone(timeout: float, since: int) -> bool:  # noqa: ASYNC109
    with anyio.move_on_after(timeout):
        while True:
            reap_adopted()
            if not adopted_orphans(since):
                return True
            await anyio.sleep(_POLL)
    return False


def reap_adopted() -> None:
    """Collect the zombies of adopted orphans (by pid: never a status another waits for)."""
    if _SPARED is None:
        return
    own_session = os.getsid(0)
    skip = _skipped()
    for pid, state, _, session, _ in _children():
        if state == "Z" and session != own_session and pid not in skip:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
