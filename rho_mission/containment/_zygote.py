"""Start task supervisors without an interpreter's start-up each: the zygote, rho's side.

A new ``python -I -S`` process per task's supervisor (``_reaper``) would pay an interpreter's
start-up (and ``ctypes``) at every task (figures: docs/performance.md). So one warm process per
rho process, the *zygote* (``_reaper.py --zygote``, started on the first task), forks each
supervisor on request. rho sends it the supervisor's arguments, the working folder, the
environment, and two descriptors (the task's log, and one end of a socket pair for the answer);
the supervisor answers on that socket with its pid (once it leads a session of its own, in the
working folder; or with the errno of a working folder it could not enter), and the zygote later
with its wait status.

The process tree below rho: rho -> zygote -> supervisor -> the task's shell. The zygote is no
subreaper: the orphans of a supervisor a task killed still come back to rho (``_orphans``). It
ends when rho does (its parent-death signal, and rho's exit ends it even if stopped), and its
supervisors then stop their tasks as they did when rho was their parent. It leads a process
group of its own: a signal to rho's group (``timeout``, a CI cancel, Ctrl-C) is rho's to
handle; had it ended the zygote, every task would stop on its own as rho cancels it.

A task runs as the same user and may kill the zygote or stop it (``kill -STOP``). So every
exchange with it has a deadline (``_helpers.HELPER_DEADLINE``): a request it does not take, a
start it does not answer, or a supervisor's end it does not report in time ends it
(``end_helper``), as does finding it dead. A start then asks a new one, once, and fails
(``OSError``: the attempt fails) if that one misses too. A supervisor's end is seen on its
pidfd, not through the zygote; when the zygote does not tell how it ended, rho reaps it
itself: it is rho's child once its zygote is gone (rho is the subreaper above). The tasks of
an ended zygote end by their supervisors' parent-death signal, and rho waits for them. A
supervisor a task stopped is continued (nothing of rho's ever stops one).

Decision: docs/decisions/0704-supervisor.md
"""

from __future__ import annotations

import atexit
import contextlib
import marshal
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from signal import SIGKILL

import anyio

from ._helpers import HELPER_DEADLINE, OWN_GROUP, continue_if_stopped, end_helper
from ._pids import stat_fields
from ._reaper import MARKS_ROOM, MARKS_VARIABLE

__all__ = ["Supervised", "start_supervised"]

_REAPER = Path(__file__).with_name("_reaper.py")
_GUARD = threading.Lock()
_ZYGOTE: _Zygote | None = None
# A request the zygote's queue has no room for is sent again after these pauses (a zygote
# behind by many starts, or stopped), until the deadline.
_POLL_FIRST = 0.001
_POLL_MAX = 0.05
# ``exit_code`` among the fields of /proc/<pid>/stat after the command name (field 52 of the
# file; Linux 3.5 and later).
_EXIT_CODE = 49


class _Zygote:
    """One running zygote, and the socket that asks it for supervisors."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.owner = os.getpid()
        # Nothing of rho's environment: each supervisor runs its program with the task's own,
        # and shows only the task's marks in /proc (written over this blank).
        env = {MARKS_VARIABLE: " " * MARKS_ROOM}
        argv = [sys.executable, "-I", "-S", str(_REAPER), "--zygote", str(self.owner)]
        try:
            self.process = subprocess.Popen(
                [*argv, str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                env=env,
                process_group=OWN_GROUP,  # a signal to rho's group is rho's to handle
            )
        finally:
            theirs.close()
        self.control = ours

    def send(self, request: bytes, fds: list[int]) -> bool:
        """Whether the zygote's queue took *request* now (False: no room, try again).

        Raises:
            OSError: the zygote is gone (or ended by rho).
        """
        # Never closed by rho but to end it: at rho's exit the zygote reads the end of this
        # socket and ends. Never a blocking send either: a stopped zygote reads nothing.
        try:
            socket.send_fds(self.control, [request], fds, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return False
        return True

    def end(self) -> None:
        """End this zygote even if stopped, and let the next start make a new one."""
        global _ZYGOTE
        with _GUARD:
            if _ZYGOTE is self:
                _ZYGOTE = None
        end_helper(self.process)
        self.control.close()


def _zygote() -> _Zygote:
    global _ZYGOTE
    with _GUARD:
        zygote = _ZYGOTE
        if zygote is None or zygote.owner != os.getpid() or zygote.process.poll() is not None:
            if zygote is not None and zygote.owner == os.getpid():
                zygote.control.close()  # it died: its socket goes with it
            zygote = _ZYGOTE = _Zygote()
        return zygote


@atexit.register
def _end_at_exit() -> None:
    # rho's end (a normal one, an error, Ctrl-C, SIGTERM): its zygote ends with it, stopped or
    # not, and is reaped here; never left stopped under init.
    zygote = _ZYGOTE
    if zygote is not None and zygote.owner == os.getpid():
        zygote.end()


class Supervised:
    """A supervisor the zygote started: ``pid`` (its process group and session too),
    ``returncode`` once it ended (negative: the signal that ended it), ``wait()``."""

    def __init__(self, pid: int, answers: socket.socket, zygote: _Zygote) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._answers = answers
        self._zygote = zygote
        self._exit = _exit_watch(pid)

    async def wait(self) -> int:
        """Wait until the supervisor ended; its return code (as ``subprocess``'s)."""
        if self.returncode is not None:
            return self.returncode
        await _exited(self.pid, self._exit)
        with anyio.CancelScope(shield=True):  # bounded by the deadline
            code = self.returncode = await self._status()
        self._answers.close()
        if self._exit is not None:
            os.close(self._exit)
        return code

    async def _status(self) -> int:
        # The zygote tells it as soon as it reaped the supervisor (often before rho looks: no
        # wait). One that does not tell in time (stopped, hung) or at all (dead) is ended; the
        # supervisor, rho's child then (rho is the subreaper above), is reaped here.
        answer = b""
        try:
            answer = self._answers.recv(64)
        except BlockingIOError:
            with anyio.move_on_after(HELPER_DEADLINE):
                answer = await _answer(self._answers)
        if answer:
            return _returncode(answer)
        # How the supervisor ended is read from its zombie's record before its zygote is
        # ended: once reparented, another reaper in this process (a library's child watcher
        # calling waitpid(-1)) may collect the zombie before _reap does.
        recorded = _zombie_returncode(self.pid)
        self._zygote.end()
        reaped = _reap(self.pid)
        return reaped if recorded is None else recorded


def _exit_watch(pid: int) -> int | None:
    # A pidfd of *pid*: readable once it has ended, whoever its parent is by then. None where
    # the kernel has none (before Linux 5.3): /proc is read instead.
    try:
        return os.pidfd_open(pid)
    except OSError:
        return None


async def _exited(pid: int, watch: int | None) -> None:
    """Wait until the supervisor *pid* has ended (a zombie, or gone); continue it whenever it
    is found stopped (at each deadline's end).

    Nothing of rho's stops a supervisor: a task did (``kill -STOP $PPID``), which would hold
    the task's end, and rho, until a timeout; and one stopped when rho ends would stay so.
    """
    while True:
        with anyio.move_on_after(HELPER_DEADLINE):
            await _ended(pid, watch)
            return
        continue_if_stopped(pid, watch)


async def _ended(pid: int, watch: int | None) -> None:
    if watch is not None:
        await anyio.wait_readable(watch)
        return
    delay = _POLL_FIRST
    while (fields := stat_fields(f"/proc/{pid}")) is not None and fields[0] not in ("Z", "X"):
        await anyio.sleep(delay)
        delay = min(2 * delay, _POLL_MAX)


def _zombie_returncode(pid: int) -> int | None:
    """The return code a zombie *pid* left (``/proc/<pid>/stat``'s ``exit_code``, the status as
    ``waitpid`` gives it); None when it is no zombie or the kernel does not say."""
    fields = stat_fields(f"/proc/{pid}")
    if fields is None or fields[0] != "Z" or len(fields) <= _EXIT_CODE:
        return None
    if not fields[_EXIT_CODE].isdigit():
        return None
    return os.waitstatus_to_exitcode(int(fields[_EXIT_CODE]))


def _reap(pid: int) -> int:
    # The return code of the supervisor *pid*, rho's child since its zygote ended; -SIGKILL
    # where it is not (the zygote reaped it as it ended): how it ended is lost.
    try:
        found, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return -SIGKILL
    return os.waitstatus_to_exitcode(status) if found else -SIGKILL


async def _answer(answers: socket.socket) -> bytes:
    """The zygote's next answer on *answers* (non-blocking); b"" once it closed the socket."""
    while True:
        await anyio.wait_readable(answers)
        with contextlib.suppress(BlockingIOError):
            return answers.recv(64)


def _returncode(answer: bytes) -> int:
    return os.waitstatus_to_exitcode(int(answer[1:]))


async def start_supervised(
    supervisor: Sequence[str], cwd: Path, env: Mapping[str, str], log_fd: int
) -> Supervised:
    """Start a supervisor (``_reaper.main``'s arguments but the parent's) writing to *log_fd*,
    in *cwd*, its program run with *env*.

    A zygote that is gone, or that does not take the request and answer within
    ``HELPER_DEADLINE`` (a task may have stopped it), is ended and a new one asked, once.

    Raises:
        OSError: the zygote could not be started, or two in a row did not answer in time;
            or *cwd* does not exist.
    """
    request = marshal.dumps((list(supervisor), os.fspath(cwd), dict(env)))
    for _ in range(2):
        zygote = _zygote()
        started = await _start(zygote, request, cwd, log_fd)
        if started is not None:
            return started
        zygote.end()
    raise OSError(
        f"the task's supervisor could not be started: rho's zygote did not answer within "
        f"{HELPER_DEADLINE:g}s, twice (a process may have stopped it)"
    )


async def _start(zygote: _Zygote, request: bytes, cwd: Path, log_fd: int) -> Supervised | None:
    """The supervisor *zygote* started; None when it did not take the request or answer in
    time, or is gone.

    Raises:
        OSError: the supervisor could not enter *cwd* (its errno), or ended before it told
            its pid.
    """
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        with theirs:  # the zygote and the supervisor hold their own copies once it is sent
            taken = await _send(zygote, request, [log_fd, theirs.fileno()])
        answer = await _first_answer(ours) if taken else b""
    except BaseException:
        ours.close()
        raise
    if answer.startswith(b"p"):
        return Supervised(int(answer[1:]), ours, zygote)
    ours.close()
    if answer.startswith(b"e"):  # the supervisor could not enter *cwd*: its errno
        code = int(answer[1:])
        raise OSError(code, os.strerror(code), os.fspath(cwd))
    if answer:  # the zygote's report of its end: it ended before it told its pid
        raise OSError("the supervisor could not be started")
    return None  # no answer in time, or none at all (the zygote is gone)


async def _send(zygote: _Zygote, request: bytes, fds: list[int]) -> bool:
    """Whether *zygote* took *request* within the deadline (False: it is stopped or gone)."""
    delay = _POLL_FIRST
    with anyio.move_on_after(HELPER_DEADLINE):
        while True:
            try:
                if zygote.send(request, fds):
                    return True
            except OSError:  # it died, or was ended meanwhile
                return False
            await anyio.sleep(delay)
            delay = min(2 * delay, _POLL_MAX)
    return False


async def _first_answer(answers: socket.socket) -> bytes:
    """The supervisor's first answer (its pid, or an errno); b"" if none came in time."""
    answers.setblocking(False)
    # Shielded: once asked, the supervisor runs; its pid must be known to stop it (the answer
    # comes as soon as it leads its session). Not for longer than the deadline: a zygote that
    # does not fork it is stopped, or hung.
    with anyio.CancelScope(shield=True), anyio.move_on_after(HELPER_DEADLINE):
        return await _answer(answers)
    return b""
