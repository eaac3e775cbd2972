"""Run one shell command in its own process group, and stop that group for good.

The shell worker of a mission runs each task's command through :func:`run_command`. The command
runs under ``/bin/sh -c`` as the leader of a new session (so its pid is also its process group
id), with stdin from ``/dev/null`` and stdout and stderr appended straight to a log file: the child
writes to the descriptor itself, nothing is pumped through Python.

Stopping is always the same sequence (:func:`terminate_group`): SIGTERM to the whole group, a
grace period, then SIGKILL to whatever is left. It runs on a timeout, on cancellation of the
calling task (inside a shielded scope, so the group is gone before the cancellation propagates),
and after a normal exit when the command left background processes behind.

A group counts as gone when none of its members is alive: zombies do not count, because an init
that does not reap orphans would otherwise keep a dead group "alive" forever. Orphaned zombies
that were reparented to this process (a child subreaper) are reaped here.

Decision: docs/decisions/0704-supervisor.md
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from signal import SIGKILL, SIGTERM, Signals
from subprocess import DEVNULL
from typing import Protocol

import anyio

from ._folders import open_private
from ._orphans import become_subreaper, drop_leader, end_adopted, note_leader
from ._pids import stat_fields
from ._zygote import start_supervised

__all__ = [
    "LOG_NOTE_PREFIX",
    "ProcessResult",
    "group_alive",
    "live_members",
    "note_in_log",
    "open_log",
    "read_stat",
    "run_command",
    "signal_group",
    "terminate_group",
    "wait_for_group_exit",
]

_SHELL = "/bin/sh"
_PROC = Path("/proc")
# After SIGKILL the kernel tears processes down promptly; this only bounds a pathological case
# (a process stuck in uninterruptible sleep) so that a stop never hangs forever.
_KILL_WAIT = 5.0
# How much longer than the grace the leader (a task's supervisor) may take to end the group.
_LEADER_MARGIN = 0.5
_POLL_FIRST = 0.005
_POLL_MAX = 0.05


@dataclass(frozen=True)
class ProcessResult:
    """How a command ended.

    ``exit_code`` is None when a signal ended the process (``signal`` then names it). A command
    that handled the SIGTERM of a timeout and exited on its own keeps its exit code, but is still
    ``timed_out``. :func:`run_command` never returns a ``cancelled`` result (it re-raises the
    cancellation); the flag is there for callers that record a cancelled attempt.
    """

    exit_code: int | None
    timed_out: bool = False
    cancelled: bool = False
    signal: int | None = None
    timeout: float | None = None

    def ok(self) -> bool:
        """Return True when the command exited 0 by itself, in time and without cancellation."""
        return self.exit_code == 0 and not self.timed_out and not self.cancelled

    def describe(self) -> str:
        """Return a short lowercase text for a log line or an error: ``exit code 3``, ...

        One of ``cancelled``, ``timed out after 2.5s``, ``killed by SIGKILL``, ``exit code N``.
        """
        if self.cancelled:
            return "cancelled"
        if self.timed_out:
            return "timed out" if self.timeout is None else f"timed out after {self.timeout:g}s"
        if self.signal is not None:
            return f"killed by {_signal_name(self.signal)}"
        return f"exit code {self.exit_code}"


async def run_command(
    command: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    log_path: Path,
    # A timeout here, not a cancel scope around the call: a timeout is an outcome that ends in a
    # result (timed_out=True), while a cancellation must propagate.
    timeout: float | None = None,  # noqa: ASYNC109
    grace: float = 5.0,
    on_start: Callable[[int], None] | None = None,
    wrapper: Sequence[str] = (),
    supervisor: Sequence[str] | None = None,
) -> ProcessResult:
    """Run ``command`` with ``/bin/sh -c`` in a new process group and wait for it.

    ``wrapper`` is the start of the command line that runs the shell (the sandbox), and
    ``supervisor`` the arguments of the task's supervisor (``_reaper``: grace, log limit,
    cgroup), which the zygote forks (``_zygote``) to lead the group: it ends only after the
    shell and what the shell started are gone (see ``containment``).

    ``env`` is the child's whole environment: ``os.environ`` is NOT inherited, so the caller passes
    a full mapping (PATH included). Output goes to ``log_path``, opened for appending and created
    with mode 0600 (its folder 0700). ``on_start`` receives the pid, which is also the process
    group id, once the child runs (a command that ends at once may already be gone and reaped by
    then). When ``timeout`` seconds pass, the group gets SIGTERM, then
    SIGKILL after ``grace`` seconds. Background processes still in the group after the command
    exits are stopped the same way. The child is always reaped.

    Raises:
        OSError: the log file or the child could not be created (e.g. ``cwd`` does not exist).
        BaseException: a cancellation of the calling task, or an error raised by ``on_start``,
            re-raised once the whole group is gone.
    """
    become_subreaper()  # a task that kills its supervisor leaves its orphans to rho
    argv = [*wrapper, _SHELL, "-c", command]
    process = await _spawn(argv, cwd=cwd, env=env, log_path=log_path, supervisor=supervisor)
    started = note_leader(process.pid)
    try:
        if on_start is not None:
            on_start(process.pid)
        with anyio.move_on_after(timeout) as deadline:
            await process.wait()
        if deadline.cancelled_caught:
            await _stop(process, grace)
        elif group_alive(process.pid):
            await terminate_group(process.pid, grace)
    except BaseException:
        # Whatever interrupts us (cancellation, Ctrl-C, on_start failing), the group must be gone
        # before the exception goes on: shield the stop from the cancellation that caused it.
        with anyio.CancelScope(shield=True):
            await _stop(process, grace)
            await _end_orphans(process, grace, started)
        raise
    finally:
        drop_leader(process.pid)
    await _end_orphans(process, grace, started)
    return _result(process, deadline.cancelled_caught, timeout)


async def _end_orphans(process: _Leader, grace: float, started: int) -> None:
    # A leader (a supervisor) that died by a signal ended nothing: what it left came to rho.
    code = process.returncode
    if code is not None and code < 0:
        await end_adopted(grace, started)


class _Leader(Protocol):
    """What ``run_command`` uses of the group's leader: an anyio ``Process`` or a
    ``Supervised`` (the zygote's)."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    async def wait(self) -> int: ...


async def _spawn(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    log_path: Path,
    supervisor: Sequence[str] | None = None,
) -> _Leader:
    """Start *argv* as a session leader writing to the log file (under a supervisor the
    zygote forks, when one is given)."""
    log_fd = open_log(log_path)
    try:
        if supervisor is not None:
            arguments = [*supervisor, *argv]
            return await start_supervised(arguments, cwd, env, log_fd)
        return await anyio.open_process(
            list(argv),
            stdin=DEVNULL,
            stdout=log_fd,
            stderr=log_fd,
            cwd=os.fspath(cwd),  # a str keeps an OSError's message plain
            env=dict(env),
            start_new_session=True,
        )
    finally:
        # The child holds its own copies (fds 1 and 2); ours is no longer needed.
        os.close(log_fd)


# How rho's own lines in a log begin (each attempt's start and end, a stage's outcome): readers
# of a task's output leave them out (``cli._logs.read_tail``).
LOG_NOTE_PREFIX = "== rho: "


def note_in_log(log_path: Path, text: str) -> None:
    """Append one line of rho's own, ``== rho: <text> ==``, to the log at *log_path*.

    Raises:
        UnsafePathError: a link (or a file) stands at the log or on the way to it.
    """
    with os.fdopen(open_log(log_path), "a", encoding="utf-8") as handle:
        handle.write(f"{LOG_NOTE_PREFIX}{text} ==\n")


def open_log(log_path: Path) -> int:
    """Open the log for appending (0600), creating its folder (0700) if missing.

    Reached without following a link on any folder below ``.rho`` (``taskstore.open_beneath``),
    at every open: a task may have swapped ``logs/`` for a link since the last one.

    Raises:
        UnsafePathError: a link (or a file) stands at the log or on the way to it.
    """
    # O_CLOEXEC (added by open_beneath): children spawned concurrently by other tasks must not
    # inherit this descriptor.
    return open_private(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)


async def _stop(process: _Leader, grace: float) -> None:
    """SIGTERM the group, SIGKILL it after ``grace`` seconds, reap the leader and the rest."""
    started = anyio.current_time()
    signal_group(process.pid, SIGTERM)
    # A supervising leader kills what is left at the end of its own grace: give it that time.
    with anyio.move_on_after(grace + _LEADER_MARGIN):
        await process.wait()
    if process.returncode is None:
        signal_group(process.pid, SIGKILL)
        await process.wait()
    remaining = max(0.0, grace - (anyio.current_time() - started))
    await _kill_after(process.pid, remaining)


def _result(process: _Leader, timed_out: bool, timeout: float | None) -> ProcessResult:
    """Build the result from the reaped leader's return code."""
    code = process.returncode
    assert code is not None  # the leader has been waited for on every path
    if code < 0:
        return ProcessResult(None, timed_out=timed_out, signal=-code, timeout=timeout)
    return ProcessResult(code, timed_out=timed_out, timeout=timeout)


async def terminate_group(pgid: int, grace: float = 5.0) -> bool:
    """Stop process group ``pgid``: SIGTERM, up to ``grace`` seconds, then SIGKILL.

    Usable for any group, including one left by a killed engine (the caller makes sure the id
    still names that group: process ids are reused). Returns True once no member is alive, False
    if some member survived SIGKILL for a few seconds (stuck in the kernel).

    Raises:
        PermissionError: the group belongs to another user.
    """
    if not signal_group(pgid, SIGTERM):
        return True
    return await _kill_after(pgid, grace)


async def _kill_after(pgid: int, grace: float) -> bool:
    """Wait ``grace`` seconds for the group to go, then SIGKILL it and wait a bounded time."""
    if await wait_for_group_exit(pgid, grace):
        return True
    signal_group(pgid, SIGKILL)
    return await wait_for_group_exit(pgid, _KILL_WAIT)


async def wait_for_group_exit(pgid: int, timeout: float) -> bool:  # noqa: ASYNC109
    """Wait up to ``timeout`` seconds until no member of group ``pgid`` is alive.

    Polls (no kernel notification exists for a whole group), quickly at first. Returns True when
    the group is gone, False when the timeout passed first.
    """
    delay = _POLL_FIRST
    with anyio.move_on_after(timeout):
        while group_alive(pgid):
            await anyio.sleep(delay)
            delay = min(delay * 2, _POLL_MAX)
        return True
    return False


def signal_group(pgid: int, signum: int) -> bool:
    """Send ``signum`` to every process of group ``pgid``; return False if the group is gone.

    Raises:
        PermissionError: the group belongs to another user.
    """
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        return False
    return True


def group_alive(pgid: int) -> bool:
    """Return True while some member of process group ``pgid`` is alive (zombies do not count).

    Where ``/proc`` is missing, any member (zombie or not) counts as alive.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists; whose it is does not matter here
    return _has_live_member(pgid) if _PROC.is_dir() else True


def _has_live_member(pgid: int) -> bool:
    """Scan /proc for a live member of ``pgid``; reap the group's orphaned zombies that are ours."""
    alive = False
    me = os.getpid()
    for entry in os.scandir(_PROC):
        if not entry.name.isdigit():
            continue
        stat = read_stat(entry.path)
        if stat is None or stat[2] != pgid:
            continue
        state, ppid, _ = stat
        if state not in ("Z", "X"):
            alive = True
        elif ppid == me and int(entry.name) != pgid:
            # An orphan reparented to us (we are a subreaper). Never the leader: its exit status
            # belongs to whoever spawned it (the event loop's child watcher, for run_command).
            _reap(int(entry.name))
    return alive


def live_members(pgid: int) -> list[int]:
    """The pids of group *pgid* that are not zombies, from /proc (empty without /proc)."""
    members: list[int] = []
    for entry in os.scandir(_PROC) if _PROC.is_dir() else ():
        stat = read_stat(entry.path) if entry.name.isdigit() else None
        if stat is not None and stat[2] == pgid and stat[0] not in ("Z", "X"):
            members.append(int(entry.name))
    return members


def read_stat(proc_dir: str) -> tuple[str, int, int] | None:
    """Return (state, ppid, pgrp) from /proc/<pid>/stat, or None if the process vanished."""
    fields = stat_fields(proc_dir)
    return None if fields is None else (fields[0], int(fields[1]), int(fields[2]))


def _reap(pid: int) -> None:
    """Collect the exit status of our zombie child ``pid``, if nobody else did."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _signal_name(signum: int) -> str:
    """Return ``SIGKILL`` for 9, or ``signal N`` for a number this platform does not name."""
    try:
        return Signals(signum).name
    except ValueError:
        return f"signal {signum}"
