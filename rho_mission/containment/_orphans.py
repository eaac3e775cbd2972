"""rho as the child subreaper above every supervisor: a task's orphans come back to rho.

A task can kill its own supervisor (``kill -9 $PPID``) after it started a daemon that left
every mark behind (``setsid env -i sh -c 'cd /; ...'``). Without a subreaper above, the
daemon's parent becomes PID 1 and nothing of rho's can tell it from any other process. So
the first task rho starts makes rho a child subreaper (``PR_SET_CHILD_SUBREAPER``): the
orphans of a dead supervisor become rho's children.

An *adopted orphan* is a live child of rho's that rho did not start: not one of the task
supervisors it started and still waits for (``note_leader``), not in rho's own session (every
other process rho starts, git and the like, stays in it; a supervisor makes a session of its
own, and so does everything below it unless it stays in the supervisor's), and not a child
rho already had when it became a subreaper (a library caller's own). rho ends them, with what
descends from them, when a supervisor dies by a signal (``end_adopted``) and at the end of
every mission; their zombies are collected by pid.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
from pathlib import Path
from signal import SIGKILL, SIGTERM

import anyio

__all__ = ["adopted_orphans", "become_subreaper", "drop_leader", "end_adopted", "note_leader"]

_PR_SET_CHILD_SUBREAPER = 36
_PROC = Path("/proc")
_POLL = 0.01
_KILL_WAIT = 5.0

_GUARD = threading.Lock()
_LEADERS: set[int] = set()
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
        _SPARED = {pid for pid, _, _, _ in _children()}
        return True


def note_leader(pid: int) -> None:
    """*pid* is a supervisor rho started: never an orphan while rho waits for it."""
    with _GUARD:
        _LEADERS.add(pid)


def drop_leader(pid: int) -> None:
    """rho has reaped the supervisor *pid*."""
    with _GUARD:
        _LEADERS.discard(pid)


def _children() -> list[tuple[int, str, int, int]]:
    """(pid, state, ppid, session) of rho's children, from /proc."""
    me = os.getpid()
    found = []
    for pid, state, ppid, session in _processes():
        if ppid == me:
            found.append((pid, state, ppid, session))
    return found


def _processes() -> list[tuple[int, str, int, int]]:
    found = []
    for entry in os.scandir(_PROC) if _PROC.is_dir() else ():
        if entry.name.isdigit():
            fields = _stat(entry.path)
            if fields is not None:
                found.append((int(entry.name), *fields))
    return found


def _stat(proc_dir: str) -> tuple[str, int, int] | None:
    try:
        text = Path(proc_dir, "stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()
    return fields[0], int(fields[1]), int(fields[3])


def adopted_orphans() -> list[int]:
    """The live processes that came back to rho from its tasks, and all they started."""
    if _SPARED is None:
        return []
    own_session = os.getsid(0)
    processes = _processes()
    with _GUARD:
        skip = _LEADERS | _SPARED
    me = os.getpid()
    roots = {
        pid
        for pid, state, ppid, session in processes
        if ppid == me and state not in ("Z", "X") and session != own_session and pid not in skip
    }
    return sorted(_with_descendants(roots, processes))


def _with_descendants(roots: set[int], processes: list[tuple[int, str, int, int]]) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, state, ppid, _ in processes:
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


async def end_adopted(grace: float) -> list[int]:
    """SIGTERM the adopted orphans, SIGKILL those left after *grace*; collect their zombies.
    The processes found."""
    found = adopted_orphans()
    if not found:
        return []
    _signal(found, SIGTERM)
    if not await _gone(grace):
        _signal(adopted_orphans(), SIGKILL)
        await _gone(_KILL_WAIT)
    return found


async def _gone(timeout: float) -> bool:  # noqa: ASYNC109
    with anyio.move_on_after(timeout):
        while True:
            reap_adopted()
            if not adopted_orphans():
                return True
            await anyio.sleep(_POLL)
    return False


def _signal(pids: list[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


def reap_adopted() -> None:
    """Collect the zombies of adopted orphans (by pid: never a status another waits for)."""
    if _SPARED is None:
        return
    own_session = os.getsid(0)
    with _GUARD:
        skip = _LEADERS | _SPARED
    for pid, state, _, session in _children():
        if state == "Z" and session != own_session and pid not in skip:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
