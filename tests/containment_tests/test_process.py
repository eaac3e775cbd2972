"""The shell worker's process runner, with real processes: results, logs, timeouts, cancellation."""

from __future__ import annotations

import ctypes
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from signal import SIGKILL, SIGTERM
from subprocess import DEVNULL

import anyio
import pytest

from rho_mission.containment._process import (
    ProcessResult,
    group_alive,
    run_command,
    terminate_group,
    wait_for_group_exit,
)

pytestmark = pytest.mark.anyio

_PR_SET_CHILD_SUBREAPER = 36
_WAIT = 10.0  # bound on every wait for a file; never reached when things work


@pytest.fixture
def anyio_backend() -> str:
    """Run the async tests on asyncio, the backend the engine uses."""
    return "asyncio"


@pytest.fixture(autouse=True)
def subreaper() -> Iterator[None]:
    """Make this process adopt orphans while a test runs, so that they can be reaped.

    Killed background processes are reparented to init, and an init that does not reap (as in
    some containers) keeps them as zombies that `os.kill(pid, 0)` still finds. As a subreaper,
    this process adopts them and the runner reaps them.
    """
    if sys.platform != "linux":
        yield
        return
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    assert prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    yield
    prctl(_PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def _env(**extra: str) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], **extra}


async def _run(
    tmp_path: Path,
    command: str,
    *,
    timeout: float | None = None,  # noqa: ASYNC109 (passed through to run_command)
    grace: float = 5.0,
    on_start: Callable[[int], None] | None = None,
) -> ProcessResult:
    log = tmp_path / "logs" / "task.log"
    return await run_command(
        command,
        cwd=tmp_path,
        env=_env(),
        log_path=log,
        timeout=timeout,
        grace=grace,
        on_start=on_start,
    )


def _log(tmp_path: Path) -> str:
    return (tmp_path / "logs" / "task.log").read_text()


def _whole_line(path: Path) -> str | None:
    """Return the file's text if the child has finished writing its line, else None."""
    text = path.read_text() if path.exists() else ""
    return text if text.endswith("\n") else None


async def _read_when_written(path: Path) -> str:
    """Wait (bounded) until the child has written a whole line into ``path``; return it.

    Polls: another process writes the file, so there is no event to wait on.
    """
    with anyio.fail_after(_WAIT):
        while True:
            text = _whole_line(path)
            if text is not None:
                return text
            await anyio.sleep(0.01)


def _assert_gone(pgid: int, pid: int | None = None) -> None:
    """Assert that the process group (and process ``pid``) no longer exist, reaped included."""
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)
    if pid is not None:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


@pytest.mark.parametrize(("code", "ok"), [(0, True), (3, False)])
async def test_exit_code_is_reported(tmp_path: Path, code: int, ok: bool) -> None:
    result = await _run(tmp_path, f"exit {code}")
    assert result == ProcessResult(code)
    assert result.ok() is ok
    assert result.describe() == f"exit code {code}"


async def test_command_killed_by_signal_reports_the_signal(tmp_path: Path) -> None:
    result = await _run(tmp_path, "kill -KILL $$")
    assert result == ProcessResult(None, signal=SIGKILL)
    assert not result.ok()
    assert result.describe() == "killed by SIGKILL"


async def test_stdout_and_stderr_append_to_a_private_log(tmp_path: Path) -> None:
    await _run(tmp_path, "echo one; echo two >&2")
    await _run(tmp_path, "echo three")
    log = tmp_path / "logs" / "task.log"
    assert log.read_text() == "one\ntwo\nthree\n"
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert stat.S_IMODE(log.parent.stat().st_mode) == 0o700


async def test_stdin_is_empty(tmp_path: Path) -> None:
    await _run(tmp_path, "read line || echo eof")
    assert _log(tmp_path) == "eof\n"


async def test_child_gets_exactly_the_given_env_and_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RHO_LEAK_CHECK", "leaked")
    workdir = tmp_path / "worktree"
    workdir.mkdir()
    command = 'printf "%s\\n" "$RHO_TASK_ID" "${RHO_LEAK_CHECK-unset}" "$(pwd -P)"'
    log = tmp_path / "task.log"
    env = _env(RHO_TASK_ID="t1")
    result = await run_command(command, cwd=workdir, env=env, log_path=log)
    assert result.ok()
    assert log.read_text() == f"t1\nunset\n{workdir.resolve()}\n"


async def test_timeout_terminates_the_group(tmp_path: Path) -> None:
    started: list[int] = []
    result = await _run(tmp_path, "sleep 30", timeout=0.2, on_start=started.append)
    assert result == ProcessResult(None, timed_out=True, signal=SIGTERM, timeout=0.2)
    assert result.describe() == "timed out after 0.2s"
    _assert_gone(started[0])


async def test_timeout_kills_a_child_ignoring_sigterm_after_the_grace(tmp_path: Path) -> None:
    # The timeout leaves the shell ample time to install its trap before the SIGTERM comes.
    result = await _run(tmp_path, "trap '' TERM; sleep 30", timeout=1.0, grace=0.5)
    assert result == ProcessResult(None, timed_out=True, signal=SIGKILL, timeout=1.0)
    assert not result.ok()


async def test_child_handling_sigterm_exits_with_its_own_code(tmp_path: Path) -> None:
    command = "trap 'echo cleanup; exit 7' TERM; sleep 30 & wait"
    result = await _run(tmp_path, command, timeout=1.0)
    assert result == ProcessResult(7, timed_out=True, timeout=1.0)
    assert result.describe() == "timed out after 1s"
    assert _log(tmp_path) == "cleanup\n"


async def test_cancellation_kills_the_whole_group_then_propagates(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    started: list[int] = []

    async def cancel_when_grandchild_runs(scope: anyio.CancelScope) -> None:
        await _read_when_written(pid_file)
        scope.cancel()

    command = f"sleep 30 & echo $! > {pid_file}; wait"
    async with anyio.create_task_group() as tg:
        with anyio.CancelScope() as scope:
            tg.start_soon(cancel_when_grandchild_runs, scope)
            await _run(tmp_path, command, on_start=started.append)
            pytest.fail("run_command returned instead of propagating the cancellation")
    assert scope.cancelled_caught
    _assert_gone(started[0], int(pid_file.read_text()))


async def test_deadline_of_an_enclosing_scope_kills_the_group(tmp_path: Path) -> None:
    started: list[int] = []

    def expire_now(pid: int) -> None:
        started.append(pid)
        scope.deadline = anyio.current_time()

    with anyio.move_on_after(_WAIT) as scope:
        await _run(tmp_path, "trap '' TERM; sleep 30", grace=0.2, on_start=expire_now)
    assert scope.cancelled_caught
    _assert_gone(started[0])


async def test_background_process_left_after_exit_is_stopped(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    started: list[int] = []
    command = f"sleep 30 & echo $! > {pid_file}"
    result = await _run(tmp_path, command, on_start=started.append)
    assert result.ok()
    _assert_gone(started[0], int(pid_file.read_text()))


async def test_on_start_gets_the_group_id_while_the_group_exists(tmp_path: Path) -> None:
    seen: list[tuple[int, int, int]] = []
    go = tmp_path / "go"

    def record(pid: int) -> None:
        seen.append((pid, os.getpgid(pid), os.getsid(pid)))
        go.touch()

    # The child waits for on_start: a command that already ended may be reaped before on_start.
    command = f"echo $$; while [ ! -e {go} ]; do sleep 0.01; done"
    result = await _run(tmp_path, command, timeout=_WAIT, on_start=record)
    assert result.ok()
    pid = seen[0][0]
    assert seen == [(pid, pid, pid)]
    assert _log(tmp_path) == f"{pid}\n"


async def test_on_start_error_stops_the_group_and_propagates(tmp_path: Path) -> None:
    started: list[int] = []

    def fail(pid: int) -> None:
        started.append(pid)
        raise RuntimeError("engine refused the process")

    with pytest.raises(RuntimeError, match=r"^engine refused the process$"):
        await _run(tmp_path, "sleep 30", on_start=fail)
    _assert_gone(started[0])


async def test_missing_cwd_raises_file_not_found(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    message = f"[Errno 2] No such file or directory: {str(missing)!r}"
    with pytest.raises(FileNotFoundError, match=f"^{re.escape(message)}$"):
        await run_command("true", cwd=missing, env=_env(), log_path=tmp_path / "t.log")


async def test_terminate_group_kills_a_group_ignoring_sigterm(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    command = ["/bin/sh", "-c", f"trap '' TERM; echo > {ready}; sleep 30"]
    async with await anyio.open_process(
        command, stdin=DEVNULL, stdout=DEVNULL, stderr=DEVNULL, start_new_session=True
    ) as process:
        await _read_when_written(ready)
        assert group_alive(process.pid)
        assert not await wait_for_group_exit(process.pid, 0.05)
        assert await terminate_group(process.pid, grace=0.2)
        assert await process.wait() == -SIGKILL
    _assert_gone(process.pid)


@pytest.mark.parametrize(
    ("result", "text"),
    [
        (ProcessResult(0), "exit code 0"),
        (ProcessResult(None, signal=SIGTERM), "killed by SIGTERM"),
        (ProcessResult(None, signal=250), "killed by signal 250"),
        (ProcessResult(None, timed_out=True, signal=SIGKILL, timeout=2.5), "timed out after 2.5s"),
        (ProcessResult(None, timed_out=True), "timed out"),
        (ProcessResult(None, cancelled=True, signal=SIGKILL), "cancelled"),
    ],
)
def test_describe(result: ProcessResult, text: str) -> None:
    assert result.describe() == text
