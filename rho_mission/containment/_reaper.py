"""A task's supervisor: the child subreaper of every process the task starts, and its reaper.

Run as ``python -I -S _reaper.py GRACE PROGRAM ARGS...`` (standard library only, no site: it
starts in a few milliseconds). It makes itself a child subreaper (``PR_SET_CHILD_SUBREAPER``),
then starts PROGRAM. A process the task detaches (``setsid``, a double fork, ``env -i``, a new
process title) is still its descendant: when its parent dies it is reparented here, not to
init. When PROGRAM exits, or when the supervisor gets SIGTERM, SIGINT or SIGHUP, every
descendant gets SIGTERM; those left after GRACE seconds get SIGKILL; the supervisor exits only
once it has no child left, with PROGRAM's exit status (dying by PROGRAM's signal, if one
ended it). So a task's process group leader (this process) outlives everything of the task.
"""

from __future__ import annotations

# The C module: ``signal`` imports enum, and ``typing`` is never imported: either would be
# a third of this script's start-up.
import _signal as signal
import ctypes
import os
import sys
import time

_PR_SET_CHILD_SUBREAPER = 36
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_POLL = 0.01


class _Stop(Exception):
    """A stop signal arrived."""


def main(argv: list[str]) -> None:
    grace, program = float(argv[0]), argv[1:]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    for signum in _STOP_SIGNALS:
        signal.signal(signum, _raise_stop)
    child = os.fork()
    if child == 0:
        _exec(program)
    status = _wait_for(child)
    for signum in _STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)  # the stop is under way: more signals change nothing
    status = _reap_all(grace, child, status)
    _exit_like(status)


def _raise_stop(signum: int, frame: object) -> None:
    raise _Stop


def _exec(program: list[str]) -> None:
    for signum in _STOP_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)
    try:
        os.execvp(program[0], program)
    except OSError as exc:
        os.write(2, f"rho: cannot run {program[0]}: {exc.strerror}\n".encode())
        os._exit(127)


def _wait_for(child: int) -> int | None:
    # Reap whatever ends meanwhile (reparented orphans too) until the program itself exits;
    # None when a stop signal came first (the program is then among the descendants stopped).
    try:
        while True:
            pid, status = os.waitpid(-1, 0)
            if pid == child:
                return status
    except _Stop:
        return None


def _reap_all(grace: float, child: int, status: int | None) -> int:
    """SIGTERM every descendant, SIGKILL them after *grace*, reap all; the program's status."""
    found, status = _reap_ready(child, status)
    if not found:
        # No child left means no descendant left (an orphan is reparented here): the common
        # case of a task that leaves nothing running costs no scan of /proc.
        return status if status is not None else 0
    _signal_descendants(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while True:
        found, status = _reap_ready(child, status)
        if not found:
            break
        if time.monotonic() >= deadline:
            _signal_descendants(signal.SIGKILL)
        time.sleep(_POLL)
    return status if status is not None else 0


def _reap_ready(child: int, status: int | None) -> tuple[bool, int | None]:
    # Whether a child is left, after collecting those that have ended.
    while True:
        try:
            pid, code = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False, status
        if pid == 0:
            return True, status
        if pid == child:
            status = code


def _signal_descendants(signum: int) -> None:
    # Parent links from /proc: every process whose chain of parents reaches this one.
    me = os.getpid()
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            ppid = _ppid(name)
            if ppid is not None:
                parents[int(name)] = ppid
    for pid in parents:
        if _descends(pid, me, parents):
            try:
                os.kill(pid, signum)
            except (ProcessLookupError, PermissionError):  # gone, or not ours to signal
                continue


def _ppid(name: str) -> int | None:
    try:
        with open(f"/proc/{name}/stat", "rb") as handle:
            text = handle.read()
    except OSError:
        return None
    return int(text.rpartition(b")")[2].split()[1])


def _descends(pid: int, ancestor: int, parents: dict[int, int]) -> bool:
    seen = 0
    while pid in parents and seen < len(parents):
        pid = parents[pid]
        if pid == ancestor:
            return True
        seen += 1
    return False


def _exit_like(status: int) -> None:
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


if __name__ == "__main__":
    main(sys.argv[1:])
