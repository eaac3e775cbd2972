"""A task's supervisor: the child subreaper of every process the task starts, its reaper, and
the keeper of its log.

Run as ``python -I -S _reaper.py GRACE LOG_LIMIT PARENT CGROUP PROGRAM ARGS...`` (standard
library only, no site, no ``typing`` or ``enum``: it starts in a few milliseconds), with the
log as its standard output. It makes itself a child subreaper (``PR_SET_CHILD_SUBREAPER``),
then starts PROGRAM with its output on a pipe. A process the task detaches (``setsid``, a
double fork, ``env -i``, a new process title) is still its descendant: when its parent dies it
is reparented here, not to init. It moves itself into the cgroup CGROUP first, where rho made
one ("-" where not: ``_cgroup``), and it stops the task when rho (PARENT) dies
(``PR_SET_PDEATHSIG``), as on SIGTERM: a task never runs on unattended.

When PROGRAM exits, or when the supervisor gets SIGTERM, SIGINT or SIGHUP, every descendant
gets SIGTERM; those left after GRACE seconds get SIGKILL; the supervisor exits only once it has
no child left, with PROGRAM's exit status (dying by PROGRAM's signal, if one ended it). So a
task's process group leader (this process) outlives everything of the task.

The log keeps at most LOG_LIMIT bytes of output: the first half as it comes (a reader that
follows the log sees it live), and the last half, written at the end after one line that says
how many bytes were cut between them.
"""

from __future__ import annotations

# The C module: ``signal`` imports enum, and ``typing`` is never imported: either would be
# a third of this script's start-up.
import _signal as signal
import ctypes
import os
import select
import sys
import time

_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_PDEATHSIG = 1
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_CHUNK = 65536
_POLL = 0.01


class _State:
    """What the main loop has seen: the program's status, and whether a stop was asked."""

    def __init__(self) -> None:
        self.status: int | None = None
        self.stopping = False


class _Log:
    """The head of the output written as it comes, the tail kept until ``finish``."""

    def __init__(self, fd: int, limit: int) -> None:
        self.fd = fd
        self.head_left = limit - limit // 2
        self.tail_size = limit // 2
        self.tail = bytearray()
        self.cut = 0

    def add(self, data: bytes) -> None:
        if self.head_left > 0:
            head, data = data[: self.head_left], data[self.head_left :]
            self.head_left -= len(head)
            _write_all(self.fd, head)
        self.tail += data
        excess = len(self.tail) - self.tail_size
        if excess > 0:
            del self.tail[:excess]
            self.cut += excess

    def finish(self) -> None:
        if self.cut:
            note = (
                f"\n[rho: {self.cut} bytes of output cut here; the log keeps the first and the "
                f"last {self.tail_size} bytes (--log-limit)]\n"
            )
            _write_all(self.fd, note.encode())
        _write_all(self.fd, bytes(self.tail))


def main(argv: list[str]) -> None:
    grace, limit, parent, cgroup = float(argv[0]), int(argv[1]), int(argv[2]), argv[3]
    program = argv[4:]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    state = _State()
    wake = _wake_on_signals(state)
    # rho's death is a stop: a task never runs on unattended (spending an agent's money).
    # Asked after the handlers are set; rho gone before the ask is seen in the parent's pid.
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0 or os.getppid() != parent:
        os._exit(1)
    _enter_cgroup(cgroup)
    out_read, out_write = os.pipe()
    child = os.fork()
    if child == 0:
        _exec(program, out_write, (out_read, wake))
    os.close(out_write)
    log = _Log(1, limit)
    open_out = _pump_until_exit(child, state, log, out_read, wake)
    for signum in _STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)  # the stop is under way: more signals change nothing
    _reap_all(grace, child, state, log, open_out)
    log.finish()
    _exit_like(state.status if state.status is not None else 0)


def _enter_cgroup(cgroup: str) -> None:
    # Into the task's own cgroup before the task starts: all it starts is counted there. Where
    # the move fails the subreapers (this one, rho) are what there is.
    if cgroup == "-":
        return
    try:
        fd = os.open(cgroup + "/cgroup.procs", os.O_WRONLY)
    except OSError:
        return
    try:
        os.write(fd, b"0")
    except OSError:
        pass
    finally:
        os.close(fd)


def _wake_on_signals(state: _State) -> int:
    # Signals wake the poll of the main loop through a pipe (no lost wake-up between a check
    # and a wait); the handlers only note what came.
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    os.set_blocking(wake_read, False)
    signal.set_wakeup_fd(wake_write)

    def stop(signum: int, frame: object) -> None:
        state.stopping = True

    for signum in _STOP_SIGNALS:
        signal.signal(signum, stop)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    return wake_read


def _exec(program: list[str], out: int, close: tuple[int, int]) -> None:
    for signum in (*_STOP_SIGNALS, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)
    signal.set_wakeup_fd(-1)
    os.dup2(out, 1)
    os.dup2(out, 2)
    for fd in (out, *close):
        os.close(fd)
    try:
        os.execvp(program[0], program)
    except OSError as exc:
        os.write(2, f"rho: cannot run {program[0]}: {exc.strerror}\n".encode())
        os._exit(127)


def _pump_until_exit(child: int, state: _State, log: _Log, out: int, wake: int) -> int | None:
    """Copy the output to the log until the program exits or a stop is asked; the output's
    descriptor while still open (None once every writer closed it)."""
    poller = select.poll()
    poller.register(out, select.POLLIN)
    poller.register(wake, select.POLLIN)
    open_out: int | None = out
    while state.status is None and not state.stopping:
        for fd, _ in poller.poll():
            if fd == wake:
                _drain(wake)
            elif open_out is not None and not _copy(open_out, log):
                poller.unregister(open_out)
                os.close(open_out)
                open_out = None
        _reap_ready(child, state)
    return open_out


def _copy(out: int, log: _Log) -> bool:
    # One read of the output into the log; False at its end.
    data = os.read(out, _CHUNK)
    if data:
        log.add(data)
    return bool(data)


def _drain(fd: int) -> None:
    try:
        while os.read(fd, _CHUNK):
            pass
    except BlockingIOError:
        return


def _reap_all(grace: float, child: int, state: _State, log: _Log, out: int | None) -> None:
    """SIGTERM every descendant, SIGKILL them after *grace*, reap all, copy the rest of the
    output; *state* gets the program's status."""
    if out is not None:
        os.set_blocking(out, False)
    if _reap_ready(child, state):
        # A child left means descendants to stop; none left means none at all (an orphan is
        # reparented here): a task that leaves nothing running costs no scan of /proc.
        _signal_descendants(signal.SIGTERM)
        deadline = time.monotonic() + grace
        while _reap_ready(child, state):
            out = _copy_available(out, log)
            if time.monotonic() >= deadline:
                _signal_descendants(signal.SIGKILL)
            time.sleep(_POLL)
    _copy_available(out, log)


def _copy_available(out: int | None, log: _Log) -> int | None:
    # What the output holds now, without waiting; None once it has ended.
    if out is None:
        return None
    try:
        while _copy(out, log):
            pass
    except BlockingIOError:
        return out
    os.close(out)
    return None


def _reap_ready(child: int, state: _State) -> bool:
    # Whether a child is left, after collecting those that have ended (the program's status
    # into *state*).
    while True:
        try:
            pid, code = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True
        if pid == child:
            state.status = code


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


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _exit_like(status: int) -> None:
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


if __name__ == "__main__":
    main(sys.argv[1:])
