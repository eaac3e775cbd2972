"""A task's supervisor: the child subreaper of every process the task starts, its reaper, and
the keeper of its log.

Forked by the zygote (below) as ``main([GRACE, LOG_LIMIT, PARENT, CGROUP, PROGRAM, ARGS...])``
(standard library only, no site), with the log as its standard output. It makes itself a
child subreaper (``PR_SET_CHILD_SUBREAPER``), then starts PROGRAM with its output on a pipe
(``posix_spawn``: a vfork, no copy of the supervisor's memory). A process the task detaches
(``setsid``, a double fork, ``env -i``, a new process title) is still its descendant: when
its parent dies it is reparented here, not to init. It runs in the cgroup CGROUP, where rho
made one ("-" where not: ``_cgroup``): the zygote forks it there, or it moves itself in
before it starts PROGRAM; and it stops the task when its parent PARENT (the zygote, which
ends with rho) dies (``PR_SET_PDEATHSIG``), as on SIGTERM: a task never runs on unattended.

When PROGRAM exits, or when the supervisor gets SIGTERM, SIGINT or SIGHUP, every descendant
gets SIGTERM; those left after GRACE seconds get SIGKILL (each time all of them stopped first,
so that none sees another end and runs on before its own signal); the supervisor exits only
once it has no child left, with PROGRAM's exit status (dying by PROGRAM's signal, if one ended
it). So a task's process group leader (this process) outlives everything of the task.

The log keeps at most LOG_LIMIT bytes of output: the first half as it comes (a reader that
follows the log sees it live), and the last half, written at the end after one line that says
how many bytes were cut between them.

Started once per rho process as ``python -I -S _reaper.py --zygote PARENT FD`` it is the
*zygote* (``_zygote``): warm (this module, ``ctypes`` and ``libc`` loaded), it forks one
supervisor per task on rho's request over the socket FD, with no interpreter start-up. The
child becomes the supervisor above, with the task's log, working folder and environment from
the request, forked straight into the task's cgroup (``clone3(CLONE_INTO_CGROUP)``); the
child tells rho its pid once it leads a session of its own in that folder (or the errno of a
folder it could not enter), and the zygote sends its wait status when it ends. A forked
supervisor shows the task's marks (``RHO_MISSION_ID``, ``RHO_TASK_ID``) in its own
``/proc/<pid>/environ``: the zygote is started with a blank variable whose bytes the child
overwrites with them (``_mark``), so the processes of a mission are found by them
(``_mission_processes``).

Decision: docs/decisions/0704-supervisor.md
"""

from __future__ import annotations

# The C module: ``signal`` imports enum, and ``typing`` is never imported: either would be
# a third of this script's start-up.
import _signal as signal
import contextlib
import ctypes
import os
import select
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import socket
    from collections.abc import Mapping

_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_PDEATHSIG = 1
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_CHUNK = 65536
_POLL = 0.01
# Passes that stop a task's processes before a signal (each finds those forked meanwhile).
_STOP_PASSES = 20
# The zygote's blank variable: room for the marks its supervisors write over it.
MARKS_VARIABLE = "RHO_SUPERVISOR_MARKS"
MARKS_ROOM = 512
_MARKED = (b"RHO_MISSION_ID=", b"RHO_TASK_ID=")
# The program's environment, when the supervisor is a zygote's child (None: this process's).
_ENV: dict[str, str] | None = None


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


def main(argv: list[str], libc: ctypes.CDLL | None = None) -> None:
    grace, limit, parent, cgroup = float(argv[0]), int(argv[1]), int(argv[2]), argv[3]
    program = argv[4:]
    libc = libc or ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    state = _State()
    wake = _wake_on_signals(state)
    # rho's death is a stop: a task never runs on unattended (spending an agent's money).
    # Asked after the handlers are set; rho gone before the ask is seen in the parent's pid.
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0 or os.getppid() != parent:
        os._exit(1)
    out_read, out_write = os.pipe()
    _enter_cgroup(cgroup)
    log = _Log(1, limit)
    try:
        child = _spawn(program, out_write)
    except OSError as exc:
        log.add(f"rho: cannot run {program[0]}: {exc.strerror}\n".encode())
        log.finish()
        os._exit(127)
    finally:
        os.close(out_write)
    open_out = _pump_until_exit(child, state, log, out_read, wake)
    for signum in _STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)  # the stop is under way: more signals change nothing
    _reap_all(grace, child, state, log, open_out)
    log.finish()
    _exit_like(state.status if state.status is not None else 0)


def _fork_into(cgroup: str, libc: ctypes.CDLL) -> tuple[int, bool]:
    """Fork a supervisor inside its task's cgroup: ``clone3(CLONE_INTO_CGROUP)``, which starts
    it there with no migration (a move into a cgroup waits for the kernel's RCU grace period:
    12-17 ms a task under a mission's load, ``bench/bench_task_start.sh``), so that all its
    program starts is counted there. The pid (0 in the child) and whether it is in the
    cgroup: where the kernel refuses (before Linux 5.7, or no cgroup) it is a plain fork, and
    the supervisor moves itself in before it starts the program, as before."""
    if cgroup != "-":
        try:
            folder = os.open(cgroup, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            folder = -1
        if folder >= 0:
            child = -1
            try:
                child = _clone_into(folder, libc)
            finally:
                if child != 0:
                    os.close(folder)
            if child >= 0:
                return child, True
    return os.fork(), False


class _CloneArgs(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_uint64)
        for name in (
            "flags",
            "pidfd",
            "child_tid",
            "parent_tid",
            "exit_signal",
            "stack",
            "stack_size",
            "tls",
            "set_tid",
            "set_tid_size",
            "cgroup",
        )
    ]


_SYS_CLONE3 = 435  # the same number on every architecture of the generic syscall table
_CLONE_INTO_CGROUP = 0x200000000


def _clone_into(folder: int, libc: ctypes.CDLL) -> int:
    # The child's pid, 0 in the child, -1 where the kernel refused (nothing was started).
    # The child runs Python on: the interpreter is told of the fork as os.fork tells it.
    args = _CloneArgs(flags=_CLONE_INTO_CGROUP, exit_signal=signal.SIGCHLD, cgroup=folder)
    libc.syscall.restype = ctypes.c_long
    ctypes.pythonapi.PyOS_BeforeFork()
    pid = libc.syscall(_SYS_CLONE3, ctypes.byref(args), ctypes.c_size_t(ctypes.sizeof(args)))
    if pid == 0:
        ctypes.pythonapi.PyOS_AfterFork_Child()
    else:
        ctypes.pythonapi.PyOS_AfterFork_Parent()
    return -1 if pid < 0 else int(pid)


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


def _spawn(program: list[str], out: int) -> int:
    """Start the program with its output on *out*, by ``posix_spawn`` (a vfork: the
    supervisor's memory is not copied, half the cost of a fork and exec here); its pid.

    Raises:
        OSError: the program cannot be found or run.
    """
    env = os.environ if _ENV is None else _ENV
    # The signals Python handles or ignores back to their defaults: an ignored signal stays
    # ignored across exec (a task's "yes | head" would then never end by SIGPIPE).
    defaults = (*_STOP_SIGNALS, signal.SIGCHLD, signal.SIGPIPE)
    actions = [(os.POSIX_SPAWN_DUP2, out, 1), (os.POSIX_SPAWN_DUP2, out, 2)]
    path = _find_program(program[0], env)
    return os.posix_spawn(path, program, env, file_actions=actions, setsigdef=defaults)


def _find_program(name: str, env: Mapping[str, str]) -> str:
    # As execvpe looks it up: a name with a slash as it is, else the first executable file of
    # that name on the program's own PATH (the supervisor's environment is the zygote's).
    if os.sep in name:
        return name
    for folder in os.get_exec_path(env):
        path = os.path.join(folder, name)
        if os.access(path, os.X_OK) and not os.path.isdir(path):
            return path
    raise FileNotFoundError(2, "No such file or directory", name)


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
    # Every descendant is stopped before any gets *signum*, and continued after all have it:
    # signalled one by one, a process could see another end before its own signal came (a
    # shell waiting on "sleep" runs its next command, such as a write into the worktree, which
    # the commit step would then take for the task's work). Stopped, none runs again before
    # its signal is pending; with no handler, that signal ends it before any code of its own.
    # Stopping is repeated until a pass finds no new descendant: one may fork meanwhile.
    stopped: list[int] = []
    seen: set[int] = set()
    for _ in range(_STOP_PASSES):
        found = [pid for pid in _descendants() if pid not in seen]
        if not found:
            break
        for pid in found:
            _send(pid, signal.SIGSTOP)
        stopped.extend(found)
        seen.update(found)
    for pid in stopped:
        _send(pid, signum)
    if signum != signal.SIGKILL:
        for pid in stopped:
            _send(pid, signal.SIGCONT)


def _descendants() -> list[int]:
    # Parent links from /proc: every process whose chain of parents reaches this one, parents
    # before their children (stopped first, they fork no more).
    me = os.getpid()
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            ppid = _ppid(name)
            if ppid is not None:
                parents[int(name)] = ppid
    depths = {pid: depth for pid in parents if (depth := _depth_below(pid, me, parents))}
    return sorted(depths, key=lambda pid: (depths[pid], pid))


def _send(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # gone, or not ours
        os.kill(pid, signum)


def _ppid(name: str) -> int | None:
    try:
        with open(f"/proc/{name}/stat", "rb") as handle:
            text = handle.read()
    except OSError:
        return None
    return int(text.rpartition(b")")[2].split()[1])


def _depth_below(pid: int, ancestor: int, parents: dict[int, int]) -> int:
    # How many links up *pid*'s chain of parents *ancestor* is; 0 when it is not there.
    seen = 0
    while pid in parents and seen < len(parents):
        pid = parents[pid]
        seen += 1
        if pid == ancestor:
            return seen
    return 0


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _exit_like(status: int) -> None:
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        if signum not in (signal.SIGKILL, signal.SIGSTOP):  # those two take no handler
            signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


# -- the zygote -------------------------------------------------------------------------------


def serve(parent: int, control_fd: int) -> None:
    """Fork a supervisor for each request on *control_fd* until rho (*parent*) closes it."""
    import marshal
    import socket

    libc = ctypes.CDLL(None, use_errno=True)
    # rho's death ends the zygote at once; its supervisors then get their own parent-death
    # signal and stop their tasks, as when rho started them itself.
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0 or os.getppid() != parent:
        os._exit(1)
    control = socket.socket(fileno=control_fd)
    # The terminal's signals are rho's to handle (a first Ctrl-C stops tasks gracefully):
    # the zygote leads a group of its own, which they are not sent to; one that comes anyway
    # (a hang-up) must not end it before the tasks' graceful stop.
    for signum in (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, signal.SIG_IGN)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    os.set_blocking(wake_read, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    waiting: dict[int, socket.socket] = {}  # supervisor pid -> where its status goes
    poller = select.poll()
    poller.register(control.fileno(), select.POLLIN)
    poller.register(wake_read, select.POLLIN)
    while True:
        for fd, _ in poller.poll():
            if fd == wake_read:
                _drain(wake_read)
            else:
                message, fds, _, _ = socket.recv_fds(control, 1 << 20, 2)
                if not message:
                    # rho is gone (or ending): the supervisors still running get their
                    # parent-death signal and stop their tasks, as they would at rho's death.
                    return
                _start(
                    marshal.loads(message), fds, waiting, libc, (control_fd, wake_read, wake_write)
                )
        _report_ended(waiting)


def _start(
    request: tuple[list[str], str, dict[str, str]],
    fds: list[int],
    waiting: dict[int, socket.socket],
    libc: ctypes.CDLL,
    mine: tuple[int, ...],
) -> None:
    import socket

    argv, cwd, env = request
    log_fd, status_fd = fds
    status = socket.socket(fileno=status_fd)
    zygote = os.getpid()
    child, entered = _fork_into(argv[2], libc)
    if child == 0:
        status.detach()  # its first answer is the child's own to send, on *status_fd*
        if entered:  # nothing left to move: the supervisor starts in its cgroup
            argv = [argv[0], argv[1], "-", *argv[3:]]
        _supervise(argv, cwd, env, log_fd, status_fd, zygote, libc, mine)
    os.close(log_fd)
    # The child answers rho itself (its pid, or the errno of a folder it could not enter): no
    # wait here, and one hand-over fewer between processes before the task starts. Its wait
    # status goes on the same socket once it is reaped here, so always after that answer.
    waiting[child] = status


def _supervise(
    argv: list[str],
    cwd: str,
    env: dict[str, str],
    log_fd: int,
    answer: int,
    zygote: int,
    libc: ctypes.CDLL,
    mine: tuple[int, ...],
) -> None:
    """The forked child: the task's supervisor (``main``), never returning."""
    global _ENV
    try:
        # Until ``main`` makes it a stop of the task, the zygote's death kills it: a child a
        # task stopped before it answered would stay, stopped, once rho ended its zygote.
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0 or os.getppid() != zygote:
            os._exit(1)
        signal.set_wakeup_fd(-1)
        for signum in (*_STOP_SIGNALS, signal.SIGCHLD, signal.SIGQUIT):
            signal.signal(signum, signal.SIG_DFL)
        for fd in mine:
            os.close(fd)
        os.setsid()
        try:
            os.chdir(cwd)
        except OSError as exc:  # told to rho as the error of the start
            os.write(answer, b"e%d" % (exc.errno or 0))
            os._exit(126)
        # Once it leads its session (rho never signals a group that does not exist yet).
        os.write(answer, b"p%d" % os.getpid())
        os.close(answer)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.closerange(3, 1 << 16)  # no other task's socket or log reaches this one
        _mark(env, libc)
        _ENV = env
        main([argv[0], argv[1], str(zygote), *argv[2:]], libc)
    except BaseException as exc:  # a child of the zygote must never return
        try:
            os.write(2, f"rho: the task's supervisor could not start: {exc}\n".encode())
        finally:
            os._exit(126)
    os._exit(0)


def _mark(env: dict[str, str], libc: ctypes.CDLL) -> None:
    # Write the task's marks over the zygote's blank variable, in this process's own copy of
    # the environment block: /proc/<pid>/environ then lists them, NUL-separated.
    marks = b"".join(
        f"{name}={env[name]}".encode() + b"\0"
        for name in ("RHO_MISSION_ID", "RHO_TASK_ID")
        if name in env
    )
    environ = ctypes.POINTER(ctypes.c_void_p).in_dll(libc, "environ")
    prefix = MARKS_VARIABLE.encode() + b"="
    index = 0
    while environ[index]:
        address = environ[index]
        text = ctypes.string_at(address)
        if text.startswith(prefix):
            room = len(text)
            if len(marks) > room:
                raise OSError("the task's marks do not fit the room kept for them")
            ctypes.memmove(address, marks + b"\0" * (room - len(marks)), room)
            return
        index += 1
    raise OSError(f"no {MARKS_VARIABLE} in the zygote's environment")


def _report_ended(waiting: dict[int, socket.socket]) -> None:
    # Every supervisor that ended: its raw wait status, to rho.
    while True:
        try:
            pid, code = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        status = waiting.pop(pid, None)
        if status is None:
            continue
        with contextlib.suppress(OSError):  # rho gave up on it
            status.send(b"s%d" % code)
        status.close()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--zygote"]:
        serve(int(sys.argv[2]), int(sys.argv[3]))
    else:
        main(sys.argv[1:])
