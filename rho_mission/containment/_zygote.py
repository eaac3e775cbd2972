"""Start task supervisors without an interpreter's start-up each: the zygote, rho's side.

A supervisor per task (``_reaper``) used to be a new ``python -I -S`` process: about 20 ms of
start-up (and ``ctypes``) paid by every task, 1,000 times at the caps. Now one warm process per
rho process, the *zygote* (``_reaper.py --zygote``, started on the first task), forks each
supervisor on request. rho sends it the supervisor's arguments, the working folder, the
environment, and two descriptors (the task's log, and one end of a socket pair for the answer);
the supervisor answers on that socket with its pid (once it leads a session of its own, in the
working folder; or with the errno of a working folder it could not enter), and the zygote later
with its wait status.

The process tree below rho: rho -> zygote -> supervisor -> the task's shell. The zygote is no
subreaper: the orphans of a supervisor a task killed still come back to rho (``_orphans``). It
ends when rho does (its parent-death signal), and its supervisors then stop their tasks as they
did when rho was their parent. A zygote that died (a task may kill it: it runs as the same user)
is replaced on the next start; the tasks of the dead one end by their own parent-death signal,
and rho waits for their groups to go.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from signal import SIGKILL

import anyio

from ._reaper import MARKS_ROOM, MARKS_VARIABLE

__all__ = ["Supervised", "start_supervised"]

_REAPER = Path(__file__).with_name("_reaper.py")
_GUARD = threading.Lock()
_ZYGOTE: _Zygote | None = None


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
            )
        finally:
            theirs.close()
        self.control = ours

    def ask(self, request: bytes, fds: list[int]) -> None:
        # Never closed by rho: at rho's exit the zygote reads the end of this socket and ends.
        socket.send_fds(self.control, [request], fds)


def _zygote() -> _Zygote:
    global _ZYGOTE
    if _ZYGOTE is None or _ZYGOTE.owner != os.getpid() or _ZYGOTE.process.poll() is not None:
        _ZYGOTE = _Zygote()
    return _ZYGOTE


class Supervised:
    """A supervisor the zygote started: ``pid`` (its process group and session too),
    ``returncode`` once it ended (negative: the signal that ended it), ``wait()``."""

    def __init__(
        self, pid: int, answers: socket.socket, gone: Callable[[int], Awaitable[object]]
    ) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._answers = answers
        self._gone = gone

    async def wait(self) -> int:
        """Wait until the supervisor ended; its return code (as ``subprocess``'s)."""
        if self.returncode is None:
            answer = await _answer(self._answers)
            self._answers.close()
            self.returncode = _returncode(answer) if answer else await self._lost()
        return self.returncode

    async def _lost(self) -> int:
        # The zygote died before it told: the supervisor got its parent-death signal and
        # stops its task; it is no child of rho's to wait for, so its group is watched.
        await self._gone(self.pid)
        return -SIGKILL


async def _answer(answers: socket.socket) -> bytes:
    """The zygote's next answer on *answers* (non-blocking); b"" once it closed the socket."""
    while True:
        await anyio.wait_readable(answers)
        with contextlib.suppress(BlockingIOError):
            return answers.recv(64)


def _returncode(answer: bytes) -> int:
    return os.waitstatus_to_exitcode(int(answer[1:]))


async def start_supervised(
    supervisor: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    log_fd: int,
    gone: Callable[[int], Awaitable[object]],
) -> Supervised:
    """Start a supervisor (``_reaper.main``'s arguments but the parent's) writing to *log_fd*,
    in *cwd*, its program run with *env*. *gone(pid)* waits until its process group is gone:
    what ``wait`` does if the zygote dies before it told how the supervisor ended.

    Raises:
        OSError: the zygote could not be started or asked, or *cwd* does not exist.
    """
    request = marshal.dumps((list(supervisor), os.fspath(cwd), dict(env)))
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        with _GUARD:
            try:
                _zygote().ask(request, [log_fd, theirs.fileno()])
            except OSError:  # a zygote that died since: one new one, once
                global _ZYGOTE
                _ZYGOTE = None
                _zygote().ask(request, [log_fd, theirs.fileno()])
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
    ours.setblocking(False)
    # Shielded: once asked, the supervisor runs; its pid must be known to stop it (the answer
    # comes as soon as it leads its session).
    with anyio.CancelScope(shield=True):
        answer = await _answer(ours)
    if not answer.startswith(b"p"):
        ours.close()
        if answer.startswith(b"e"):  # the supervisor could not enter *cwd*: its errno
            code = int(answer[1:])
            raise OSError(code, os.strerror(code), os.fspath(cwd))
        raise OSError("the supervisor could not be started")
    return Supervised(int(answer[1:]), ours, gone)
