"""Task supervisors forked by the zygote: no interpreter start-up per task, and the
same containment as a supervisor started on its own. Real processes, read from /proc."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import ClassVar, TypeVar

import anyio
import pytest

from rho_mission.containment import _zygote
from rho_mission.containment._pids import stat_fields
from rho_mission.containment._process import group_alive, run_command
from rho_mission.containment._wrapper import supervisor_args
from support.procs import pid_gone, running_stat
from support.rho import WAIT, wait_until

pytestmark = pytest.mark.anyio
_T = TypeVar("_T")


@pytest.fixture
def anyio_backend() -> str:
    """The engine's backend."""
    return "asyncio"


def _env(**extra: str) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], **extra}


async def _supervised(tmp_path: Path, command: str, **extra: str) -> int | None:
    result = await run_command(
        command,
        cwd=tmp_path,
        env=_env(**extra),
        log_path=tmp_path / "logs" / "task.log",
        grace=2.0,
        supervisor=supervisor_args(2.0, 1 << 20),
    )
    return result.exit_code


async def test_a_forked_supervisor_leads_its_session_under_the_zygote_and_carries_the_marks(
    tmp_path: Path,
) -> None:
    facts = tmp_path / "facts"
    command = (
        f"echo $PPID > {facts}; tr '\\0' '\\n' < /proc/$PPID/environ >> {facts}; "
        f"grep -c RHO_SUPERVISOR_MARKS /proc/$$/environ >> {facts} || true"
    )
    code = await _supervised(tmp_path, command, RHO_MISSION_ID="m1", RHO_TASK_ID="t9")
    assert code == 0
    supervisor, *environ = facts.read_text().splitlines()
    # The shell's own environment is the task's: the zygote's blank variable is not in it.
    assert environ[-1] == "0"
    assert {"RHO_MISSION_ID=m1", "RHO_TASK_ID=t9"} <= set(environ)
    zygote = _zygote._ZYGOTE
    assert zygote is not None
    assert zygote.process.pid != os.getpid()
    # The zygote is rho's child, in rho's session; it is no subreaper (orphans come to rho).
    fields = running_stat(zygote.process.pid)
    assert int(fields[1]) == os.getpid()
    assert int(fields[3]) == os.getsid(0)
    zygote_environ = await anyio.Path(f"/proc/{zygote.process.pid}/environ").read_bytes()
    assert b"RHO_MISSION_ID" not in zygote_environ  # its blank room is its own children's
    assert pid_gone(int(supervisor))  # reaped by the zygote once it ended


async def test_a_supervisor_keeps_the_exit_status_and_the_signal_of_its_task(
    tmp_path: Path,
) -> None:
    assert await _supervised(tmp_path, "exit 7") == 7
    result = await run_command(
        "kill -9 $$",
        cwd=tmp_path,
        env=_env(),
        log_path=tmp_path / "t.log",
        supervisor=supervisor_args(1.0, 1 << 20),
    )
    assert result.signal == signal.SIGKILL
    # SIGPIPE is the task's again (Python ignores it, and an ignored signal stays ignored
    # across exec): "yes | head" ends at once.
    with anyio.fail_after(20):
        assert await _supervised(tmp_path, "yes | head -1 > /dev/null") == 0


async def test_a_killed_zygote_ends_its_tasks_and_a_new_one_serves_the_next(
    tmp_path: Path,
) -> None:
    started = tmp_path / "started"
    command = f"echo $$ > {started}; sleep 300"
    async with anyio.create_task_group() as group:
        outcome: list[int | None] = []

        async def run() -> None:
            outcome.append(await _supervised(tmp_path, command))

        group.start_soon(run)
        with anyio.fail_after(20):
            while not (started.exists() and started.read_text().strip()):  # noqa: ASYNC110
                await anyio.sleep(0.02)
        shell = int(started.read_text())
        first = _zygote._ZYGOTE
        assert first is not None
        os.kill(first.process.pid, signal.SIGKILL)  # what a hostile task could do
        with anyio.fail_after(30):
            while not outcome:  # noqa: ASYNC110 - the task group's child appends it
                await anyio.sleep(0.05)
    # Its supervisor got its parent-death signal and ended the task.
    wait_until(lambda: pid_gone(shell), "the task of the dead zygote's supervisor to end")
    assert not group_alive(shell)
    assert await _supervised(tmp_path, "true") == 0
    assert _zygote._ZYGOTE is not first


async def test_the_tasks_program_starts_in_its_cgroup_without_a_move(tmp_path: Path) -> None:
    from rho_mission.containment._cgroup import end_cgroup, new_cgroup

    cgroup = new_cgroup()
    facts = tmp_path / "facts"
    result = await run_command(
        f"cat /proc/self/cgroup > {facts}",
        cwd=tmp_path,
        env=_env(),
        log_path=tmp_path / "t.log",
        supervisor=supervisor_args(1.0, 1 << 20, cgroup),
    )
    assert result.exit_code == 0
    if cgroup is None:  # no delegated cgroup on this machine: the supervisors alone contain
        return
    try:
        # clone3(CLONE_INTO_CGROUP), or the supervisor's own move where the kernel refuses it:
        # either way the task's processes are counted in the task's cgroup.
        assert f"/{cgroup.name}\n" in facts.read_text()
    finally:
        await end_cgroup(cgroup, 1.0)


@pytest.mark.parametrize(
    ("make", "error"),
    [(None, FileNotFoundError), ("file", NotADirectoryError)],
    ids=["missing", "a-file"],
)
async def test_a_working_folder_the_supervisor_cannot_enter_fails_the_start_with_its_errno(
    tmp_path: Path, make: str | None, error: type[OSError]
) -> None:
    # The supervisor enters the folder before it answers; the zygote tells the errno, rho
    # raises it as the plain spawn would, and the zygote serves the next start.
    folder = tmp_path / "work"
    if make == "file":
        folder.write_text("not a folder")
    with pytest.raises(error) as raised:
        await run_command(
            "true",
            cwd=folder,
            env=_env(),
            log_path=tmp_path / "logs" / "task.log",
            supervisor=supervisor_args(2.0, 1 << 20),
        )
    assert raised.value.filename == str(folder)
    assert await _supervised(tmp_path, "exit 3") == 3


async def test_a_program_that_cannot_be_run_ends_with_127_and_says_why_in_its_log(
    tmp_path: Path,
) -> None:
    log = tmp_path / "logs" / "task.log"
    result = await run_command(
        "true",
        cwd=tmp_path,
        env=_env(),
        log_path=log,
        wrapper=("rho-no-such-program",),
        supervisor=supervisor_args(2.0, 1 << 20),
    )
    assert result.exit_code == 127
    said = "rho: cannot run rho-no-such-program: No such file or directory"
    assert said in log.read_text()


async def test_the_program_is_looked_up_on_the_tasks_own_path_with_default_signals(
    tmp_path: Path,
) -> None:
    # The supervisor's own environment is the zygote's blank one: the task's PATH finds the
    # program; and SIGPIPE, which Python ignores, is the task's default again.
    tools = tmp_path / "tools"
    tools.mkdir()
    tool = tools / "rho-test-tool"
    tool.write_text('#!/bin/sh\nexec "$@"\n')
    tool.chmod(0o755)
    facts = tmp_path / "facts"
    command = f"grep SigIgn /proc/self/status > {facts}; yes | head -n 1 >> {facts}"
    result = await run_command(
        command,
        cwd=tmp_path,
        env={"PATH": f"{tools}:{os.environ['PATH']}"},
        log_path=tmp_path / "logs" / "task.log",
        wrapper=("rho-test-tool",),
        supervisor=supervisor_args(2.0, 1 << 20),
    )
    assert result.exit_code == 0
    ignored, first = facts.read_text().splitlines()
    assert int(ignored.split()[1], 16) & (1 << (signal.SIGPIPE - 1)) == 0
    assert first == "y"


@pytest.mark.usefixtures("task_cgroups")
async def test_the_supervisor_starts_inside_the_tasks_cgroup_with_its_program(
    tmp_path: Path,
) -> None:
    # Cloned there by the zygote (no migration of a running process): the program it spawns
    # is counted in the same cgroup, and nothing is left there once both ended.
    from rho_mission.containment._cgroup import end_cgroup, new_cgroup

    cgroup = new_cgroup()
    assert cgroup is not None
    facts = tmp_path / "facts"
    command = f"cat /proc/$PPID/cgroup /proc/self/cgroup > {facts}"
    result = await run_command(
        command,
        cwd=tmp_path,
        env=_env(),
        log_path=tmp_path / "logs" / "task.log",
        supervisor=supervisor_args(2.0, 1 << 20, cgroup),
    )
    assert result.exit_code == 0
    # The cgroup v2 line of each ("0::<path>"; a hybrid machine lists its v1 ones too).
    supervisor, program = [line for line in facts.read_text().splitlines() if line[:3] == "0::"]
    assert supervisor == program
    assert supervisor.endswith("/" + cgroup.name)
    assert await end_cgroup(cgroup, 1.0) == []


# -- a zygote a task stopped (kill -STOP): every exchange has a deadline ------------------------


def _bounded(main: Callable[[], Awaitable[_T]]) -> _T:
    """Run *main* on an event loop of its own, in a thread that outlives it (a zygote ends with
    the thread that started it: its parent-death signal): a hang fails the test after WAIT
    seconds instead of holding the suite (the caller then ends what holds it)."""
    pool = ThreadPoolExecutor(1)
    try:
        return pool.submit(anyio.run, main).result(timeout=WAIT)
    finally:
        pool.shutdown(wait=False)


def _note_zygote(zygotes: list[subprocess.Popen[bytes]]) -> None:
    # The current zygote's process, if new (there is none once rho ended one, until the next
    # start).
    zygote = _zygote._ZYGOTE
    if zygote is not None and zygote.process not in zygotes:
        zygotes.append(zygote.process)


def _runs(tmp_path: Path, *commands: str, stop: bool) -> tuple[list[int | None], list[int | None]]:
    """Start a supervisor; with *stop*, stop (SIGSTOP) the zygote that forked it, as a task of
    the same user could; then run each of *commands* under a supervisor. Their exit codes,
    and the return codes of the zygotes that served them (None: still running)."""
    zygotes: list[subprocess.Popen[bytes]] = []

    async def main() -> tuple[list[int | None], list[int | None]]:
        if _zygote._ZYGOTE is not None:  # another thread's: it ends when that thread does
            _zygote._ZYGOTE.end()
        assert await _supervised(tmp_path, "true") == 0
        _note_zygote(zygotes)
        if stop:
            os.kill(zygotes[0].pid, signal.SIGSTOP)
        codes = []
        for command in commands:
            codes.append(await _supervised(tmp_path, command))
            _note_zygote(zygotes)
        # Before this thread ends: the zygotes it started end with it.
        return codes, [process.poll() for process in zygotes]

    try:
        return _bounded(main)
    finally:
        for process in zygotes:
            process.kill()  # after a hang: what holds it ends


def test_a_stopped_zygote_is_ended_and_a_new_one_starts_the_next_supervisor(
    tmp_path: Path,
) -> None:
    # The request goes into its queue; no supervisor answers within the deadline: ended (and
    # reaped by rho), and a new one asked.
    codes, zygotes = _runs(tmp_path, "exit 3", "exit 4", stop=True)
    assert (codes, zygotes) == ([3, 4], [-signal.SIGKILL, None])


def test_the_end_of_a_supervisor_whose_zygote_a_task_stopped_is_read_by_rho(
    tmp_path: Path,
) -> None:
    # The task stops its supervisor's parent and exits: the zygote never reports the end; rho
    # ends it and reaps the supervisor itself (rho's child then), with the task's own status.
    # The task exits only once the zygote is stopped: a zygote the stop reaches after it reaped
    # the supervisor has the status, and it is lost with it (the attempt then fails as killed).
    stop = (
        "z=$(cut -d' ' -f4 /proc/$PPID/stat); kill -STOP $z; "
        "until [ \"$(cut -d' ' -f3 /proc/$z/stat)\" = T ]; do :; done; exit 5"
    )
    codes, zygotes = _runs(tmp_path, stop, "exit 4", stop=False)
    assert (codes, zygotes) == ([5, 4], [-signal.SIGKILL, None])


class _StoppedZygote(_zygote._Zygote):
    """A zygote a task stopped as soon as it started (every one, as a task could in a loop)."""

    started: ClassVar[list[subprocess.Popen[bytes]]] = []

    def __init__(self) -> None:
        super().__init__()
        os.kill(self.process.pid, signal.SIGSTOP)
        self.started.append(self.process)


def test_a_start_fails_when_a_new_zygote_does_not_answer_either(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_zygote, "_Zygote", _StoppedZygote)
    monkeypatch.setattr(_zygote, "_ZYGOTE", None)
    message = (
        "the task's supervisor could not be started: rho's zygote did not answer within 3s, "
        "twice (a process may have stopped it)"
    )
    try:
        with pytest.raises(OSError, match=rf"^{re.escape(message)}$"):
            _bounded(lambda: _supervised(tmp_path, "true"))
    finally:
        for process in _StoppedZygote.started:
            process.kill()
    assert [process.returncode for process in _StoppedZygote.started] == [-signal.SIGKILL] * 2


def test_a_supervisors_end_is_read_from_its_zombie_before_anyone_reaps_it() -> None:
    # When the zygote does not tell, rho reads the status from the zombie's own record before
    # it ends the zygote: once the zombie is reparented, another reaper of the process (a
    # library's child watcher calling waitpid(-1)) may collect it before rho's waitpid.
    child = subprocess.Popen(["sh", "-c", "exit 5"])
    deadline = time.monotonic() + WAIT
    while (fields := stat_fields(f"/proc/{child.pid}")) is None or fields[0] != "Z":
        assert time.monotonic() < deadline, "the child never ended"
        threading.Event().wait(0.001)
    assert _zygote._zombie_returncode(child.pid) == 5
    child.wait()
    assert _zygote._zombie_returncode(child.pid) is None  # reaped: no record left
    assert _zygote._zombie_returncode(os.getpid()) is None  # running: no end to read
