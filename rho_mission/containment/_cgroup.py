"""A cgroup per task, where the machine lets rho make one: what a task starts stays countable.

A task's supervisor (``_reaper``) ends everything the task started, and ``rho`` is the child
subreaper above every supervisor (``_orphans``): a process whose parents died comes back to
rho, not to PID 1. A cgroup adds what parentage cannot: the kernel counts every process of the
task in one place, whatever it did (``setsid``, ``env -i``, a double fork, ``cd /``), and
``cgroup.kill`` (Linux 5.14) ends them all in one write, even after the supervisor was killed.

Where cgroup v2 is mounted and rho may make a folder in its own cgroup (root, or a user whose
systemd session delegates it), each task's supervisor runs in a cgroup of its own,
``<rho's cgroup>/rho-<pid>-<n>``, forked there by the zygote (or moved there before it starts
the task, where the kernel cannot fork into a cgroup); when the supervisor has ended, rho
ends what is left in it (SIGTERM, the grace, then ``cgroup.kill``) and removes it
(``end_cgroup``). Elsewhere (or with ``RHO_TASK_CGROUPS=0``) nothing changes: the supervisor
and the subreaper do the work. ``cgroup_support()`` says which is in use (``rho doctor``).

A rho killed before it removed its cgroups leaves them (empty once its tasks' supervisors have
ended them, by their parent-death signal). The next rho to make one removes the empty ones
whose rho is gone (``sweep_leftovers``: by the pid in their names, as this pid namespace sees
it), and skips a name an earlier rho with the same pid left taken.

A cgroup is the kernel's count, not a wall: a task running as root may move itself out (then
rho's subreaper still finds it, as its orphan).

Decision: docs/decisions/0704-supervisor.md
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import threading
from pathlib import Path
from signal import SIGKILL, SIGTERM

import anyio

from ._pids import pid_alive, signal_each

__all__ = [
    "CGROUPS_VARIABLE",
    "cgroup_support",
    "end_cgroup",
    "members",
    "new_cgroup",
    "sweep_leftovers",
]

# RHO_TASK_CGROUPS=0 turns task cgroups off (a machine whose cgroups misbehave).
CGROUPS_VARIABLE = "RHO_TASK_CGROUPS"
_MOUNTINFO = Path("/proc/self/mountinfo")
_OWN = Path("/proc/self/cgroup")
_POLL = 0.01
_KILL_WAIT = 5.0
_COUNTER = itertools.count(1)
# Names taken by an earlier rho with the same pid are skipped, this many at most.
_NAME_TRIES = 64
_COUNT_GUARD = threading.Lock()
_BASE_GUARD = threading.Lock()


def _base() -> tuple[Path | None, str]:
    """rho's own cgroup v2 folder, if rho may make task cgroups in it; else None and why (when
    it may: how what is left is ended). Found once per process; one thread at a time, since a
    second one's sweep would take the first one's trial folder for an earlier holder's."""
    with _BASE_GUARD:
        return _found_base()


@functools.cache
def _found_base() -> tuple[Path | None, str]:
    if os.environ.get(CGROUPS_VARIABLE) == "0":
        return None, f"turned off by {CGROUPS_VARIABLE}=0"
    mount = _cgroup2_mount()
    if mount is None:
        return None, "no cgroup v2 is mounted"
    own = _own_cgroup()
    if own is None:
        return None, "rho's cgroup v2 path is unknown"
    base = mount / own.lstrip("/")
    sweep_leftovers(base)
    trial = base / f"rho-{os.getpid()}-trial"
    try:
        os.mkdir(trial)
    except OSError as exc:
        return None, f"no cgroup can be made in {base}: {exc.strerror}"
    try:
        kill = "cgroup.kill" if (trial / "cgroup.kill").exists() else "a signal to each process"
        procs = (trial / "cgroup.procs").exists()
    finally:
        os.rmdir(trial)
    return (base, kill) if procs else (None, f"{base} is no cgroup v2 folder")


def _cgroup2_mount() -> Path | None:
    try:
        lines = _MOUNTINFO.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if " - " in line and line.split(" - ", 1)[1].split()[0] == "cgroup2":
            return Path(fields[4])
    return None


def _own_cgroup() -> str | None:
    try:
        lines = _OWN.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    return next((line[3:] for line in lines if line.startswith("0::")), None)


def cgroup_support() -> str:
    """One line: where task cgroups are made and how they are ended, or why none is."""
    base, how = _base()
    if base is None:
        return f"none ({how}): the supervisor and rho's subreaper end what a task leaves"
    return f"one per task, in {base} (what is left ended with {how})"


def new_cgroup() -> Path | None:
    """A new empty cgroup for one task, or None where rho cannot make one."""
    base, _ = _base()
    if base is None:
        return None
    for _ in range(_NAME_TRIES):
        with _COUNT_GUARD:
            number = next(_COUNTER)
        folder = base / f"rho-{os.getpid()}-{number}"
        try:
            os.mkdir(folder)
        except FileExistsError:  # an earlier rho given this pid left it, a process still in it
            continue
        except OSError:
            return None
        return folder
    return None


def sweep_leftovers(base: Path) -> list[Path]:
    """Remove the task cgroups in *base* that rho processes which are gone left there (a rho
    killed before it could end them); the ones removed.

    Otherwise they stay until the machine restarts, and a later rho given the same pid meets
    its names taken. Run once per rho process, before it makes any (so one named with this
    process's pid is an earlier holder's). One that a process is still in stays: ``rmdir``
    refuses it, and that process is still found there.
    """
    try:
        names = os.listdir(base)
    except OSError:
        return []
    removed: list[Path] = []
    for name in names:
        owner = _owner(name)
        if owner is None or (owner != os.getpid() and pid_alive(owner)):
            continue
        for folder in _tree(base / name):
            with contextlib.suppress(OSError):
                os.rmdir(folder)
                removed.append(folder)
    return removed


def _owner(name: str) -> int | None:
    # The pid in "rho-<pid>-<n>" (or "rho-<pid>-trial"), else None: not a task cgroup of rho's.
    prefix, _, rest = name.partition("-")
    pid, _, suffix = rest.partition("-")
    if prefix != "rho" or not pid.isdigit() or not suffix:
        return None
    return int(pid)


def members(cgroup: Path) -> list[int]:
    """The processes in *cgroup* and the cgroups a task made below it (none once gone)."""
    found: list[int] = []
    for folder in _tree(cgroup):
        try:
            text = (folder / "cgroup.procs").read_text(encoding="ascii")
        except OSError:
            continue
        found += [int(line) for line in text.split()]
    return found


def _tree(cgroup: Path) -> list[Path]:
    """*cgroup* and every cgroup below it, the deepest first (the order ``rmdir`` needs)."""
    below: list[Path] = []
    for root, folders, _ in os.walk(cgroup, topdown=False):
        below += [Path(root, name) for name in folders]
    return [*below, cgroup]


async def end_cgroup(cgroup: Path, grace: float) -> list[int]:
    """End every process left in *cgroup* or below it (SIGTERM, *grace* seconds, then
    SIGKILL) and remove it; the processes that were found."""
    found = members(cgroup)
    if found:
        signal_each(found, SIGTERM)
        if not await _emptied(cgroup, grace):
            _kill_all(cgroup)
            await _emptied(cgroup, _KILL_WAIT)
    for folder in _tree(cgroup):  # a task may have made cgroups of its own below its one
        with contextlib.suppress(OSError):
            os.rmdir(folder)
    return found


def _kill_all(cgroup: Path) -> None:
    # cgroup.kill ends the cgroups below too.
    try:
        (cgroup / "cgroup.kill").write_text("1")
    except OSError:  # before Linux 5.14: each one (a fork in between is caught next round)
        signal_each(members(cgroup), SIGKILL)


async def _emptied(cgroup: Path, timeout: float) -> bool:  # noqa: ASYNC109
    with anyio.move_on_after(timeout):
        while members(cgroup):  # noqa: ASYNC110
            await anyio.sleep(_POLL)
        return True
    return False
