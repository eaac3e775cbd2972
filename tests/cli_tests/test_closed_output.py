"""A closed or failing output never changes what ``rho`` does, nor its exit code.

``rho mission ... | head -1``: Python ignores SIGPIPE, so once the reader has gone every write
raises ``BrokenPipeError``. Each test runs the real console script in a real git repository with
stdout a real pipe whose reading end the test closes (at once, or after one byte as ``head -c 1``
does), or ``/dev/full``, and checks the exit code, ``mission.json`` and the task store.
"""

from __future__ import annotations

import errno
import json
import os
import select
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from rho_mission import Feature, Mission, WaveJoin
from rho_mission.cli._progress import PlainProgress
from support.procs import kill_leftover_groups
from support.rho import RHO, WAIT, Result, rho_env, run_rho
from support.stores import import_tasks, mission_dir, spec, store_tasks

_RUN = ("mission", "--from-tasks", "--run", "echo hi > out.txt")
_TWO_WAVES = [
    spec("task_1", None),
    spec("task_2", None),
    spec("task_3", None, "task_1", "task_2"),
]
_PARTIAL = [spec("task_1", "exit 3"), spec("task_2", "true", "task_1"), spec("task_3", "true")]
_FAILED = [spec("task_1", "exit 3"), spec("task_2", "true", "task_1")]


@pytest.fixture(autouse=True)
def no_leftovers(tmp_path: Path) -> Iterator[None]:
    """After each test, no task process of its missions may still run (they are killed)."""
    yield
    assert kill_leftover_groups(tmp_path) == [], "a task process outlived its mission"


@pytest.fixture
def project(make_repo: Callable[[str, int], Path]) -> Path:
    """A repository with one committed file."""
    return make_repo("repo", 1)


# -- helpers -----------------------------------------------------------------------------------


def _start(
    project: Path, args: tuple[str, ...], stdout: Any, stderr: Any
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [str(RHO), *args], cwd=project, env=rho_env(), stdout=stdout, stderr=stderr, bufsize=0
    )


def _wait(process: subprocess.Popen[bytes]) -> int:
    """The exit code of *process*, which may take at most WAIT seconds (then it is killed)."""
    try:
        return process.wait(timeout=WAIT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=WAIT)


def _read_then_close(stream: IO[bytes] | None, count: int) -> None:
    """Read *count* bytes of *stream* (waiting at most WAIT seconds for them), then close it."""
    assert stream is not None
    if count:
        ready, _, _ = select.select([stream], [], [], WAIT)
        assert ready, f"rho wrote nothing in {WAIT:g}s"
        assert len(stream.read(count)) == count
    stream.close()


def _run_closed(project: Path, *args: str, first_bytes: int = 0) -> Result:
    """Run ``rho ARGS`` with stdout a pipe whose reader takes *first_bytes* bytes, then leaves."""
    errors = project.parent / "rho.err"
    with errors.open("wb") as stderr:
        process = _start(project, args, subprocess.PIPE, stderr)
    _read_then_close(process.stdout, first_bytes)
    return Result(_wait(process), b"", errors.read_text(encoding="utf-8"))


def _outcome(project: Path, code: int) -> tuple[int, str, dict[str, str], dict[str, str]]:
    """(exit code, mission status, feature statuses, task statuses) of the one mission run."""
    document: dict[str, Any] = json.loads(
        (mission_dir(project) / "mission.json").read_text(encoding="utf-8")
    )
    features = {feature["id"]: feature["status"] for feature in document["features"]}
    tasks = {task_id: task["status"] for task_id, task in store_tasks(project).items()}
    return code, document["status"], features, tasks


_EVERY_COMPLETED = dict.fromkeys(("task_1", "task_2", "task_3"), "completed")
_COMPLETED = (0, "completed", _EVERY_COMPLETED, _EVERY_COMPLETED)


# -- missions ----------------------------------------------------------------------------------


@pytest.mark.parametrize("first_bytes", [0, 1], ids=["reader-gone-at-once", "head-c-1"])
def test_a_mission_completes_with_exit_0_when_its_reader_goes_away(
    project: Path, first_bytes: int
) -> None:
    import_tasks(project, _TWO_WAVES)

    result = _run_closed(project, *_RUN, first_bytes=first_bytes)

    assert _outcome(project, result.code) == _COMPLETED
    assert result.stderr == ""  # no traceback, no "Exception ignored", no error line


@pytest.mark.parametrize(
    ("tasks", "expected"), [(_PARTIAL, (1, "partial")), (_FAILED, (1, "failed"))]
)
@pytest.mark.parametrize("json_flag", [(), ("--json",)], ids=["plain", "json"])
def test_a_failing_mission_ends_the_same_whether_or_not_stdout_is_read(
    make_repo: Callable[[str, int], Path],
    tasks: list[dict[str, Any]],
    expected: tuple[int, str],
    json_flag: tuple[str, ...],
) -> None:
    read, closed = make_repo("read", 1), make_repo("closed", 1)
    import_tasks(read, tasks)
    import_tasks(closed, tasks)

    normal = run_rho("mission", "--from-tasks", *json_flag, cwd=read)
    result = _run_closed(closed, "mission", "--from-tasks", *json_flag)

    assert _outcome(closed, result.code) == _outcome(read, normal.code)
    assert _outcome(closed, result.code)[:2] == expected
    assert "Traceback" not in result.stderr
    assert "Exception ignored" not in result.stderr


def test_json_with_its_reader_gone_exits_with_the_missions_code(project: Path) -> None:
    import_tasks(project, _TWO_WAVES)

    result = _run_closed(project, *_RUN, "--json")

    assert _outcome(project, result.code) == _COMPLETED
    progress = result.stderr_lines
    assert "wave 2 joined 1 feature(s), 1 completed, 0 failed" in progress
    assert not [line for line in progress if "Traceback" in line or "Exception" in line]


@pytest.mark.parametrize("json_flag", [(), ("--json",)], ids=["plain", "json"])
def test_a_mission_completes_when_stdout_and_stderr_are_both_closed(
    project: Path, json_flag: tuple[str, ...]
) -> None:
    import_tasks(project, _TWO_WAVES)

    process = _start(project, (*_RUN, *json_flag), subprocess.PIPE, subprocess.PIPE)
    _read_then_close(process.stderr, 0)
    _read_then_close(process.stdout, 0)

    assert _outcome(project, _wait(process)) == _COMPLETED


@pytest.mark.parametrize("json_flag", [(), ("--json",)], ids=["plain", "json"])
@pytest.mark.parametrize("closed", ["1", "1 2"], ids=["stdout", "stdout-and-stderr"])
def test_a_mission_completes_when_started_with_its_output_descriptors_closed(
    project: Path, json_flag: tuple[str, ...], closed: str
) -> None:
    # "rho ... >&-": Python finds the descriptor closed and gives rho no sys.stdout at all.
    import_tasks(project, _TWO_WAVES)
    closing = " ".join(f"{fd}>&-" for fd in closed.split())
    script = f'exec "$@" {closing}'
    argv = ["sh", "-c", script, "sh", str(RHO), *_RUN, *json_flag]
    process = subprocess.Popen(argv, cwd=project, env=rho_env(), stderr=subprocess.PIPE)
    _, errors = process.communicate(timeout=WAIT)

    assert _outcome(project, process.returncode) == _COMPLETED
    assert b"Traceback" not in errors
    assert b"error:" not in errors


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_on_stdout_loses_the_output_with_a_warning_not_the_mission(
    project: Path,
) -> None:
    import_tasks(project, _TWO_WAVES)
    errors = project.parent / "rho.err"

    with Path("/dev/full").open("wb") as full, errors.open("wb") as stderr:
        code = _wait(_start(project, _RUN, full, stderr))

    assert _outcome(project, code) == _COMPLETED
    assert (
        errors.read_text(encoding="utf-8") == f"warning: output lost: {os.strerror(errno.ENOSPC)}\n"
    )


# -- other commands ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("task", "list"),
        ("task", "list", "--json"),
        ("task", "show", "task_1"),
        ("task", "waves"),
        ("--help",),
    ],
    ids=" ".join,
)
def test_a_read_command_exits_0_when_its_reader_goes_away(
    project: Path, args: tuple[str, ...]
) -> None:
    import_tasks(project, _TWO_WAVES)

    result = _run_closed(project, *args)

    assert (result.code, result.stderr) == (0, "")


# -- the plain progress observer on its own ----------------------------------------------------


def _join(summary: str) -> WaveJoin:
    stamp = "2024-01-01T00:00:00Z"
    return WaveJoin(
        wave=1,
        feature_ids=["t1"],
        completed_ids=[],
        failed_ids=["t1"],
        blocked_ids=[],
        started_at=stamp,
        completed_at=stamp,
        summary=summary,
    )


def test_plain_progress_writes_nothing_more_after_its_output_failed(repo_path: Path) -> None:
    mission = Mission.new(repo_path, "p", [Feature("t1", "one")])
    reader, writer = os.pipe()
    os.close(reader)
    stream = open(writer, "w", encoding="utf-8")  # noqa: SIM115 (closed below, failing or not)
    progress = PlainProgress(stream)

    progress.feature_changed(mission, mission.features[0])  # EPIPE: the reader is gone
    # A new reader on the same descriptor: an observer still writing would reach it.
    fresh_reader, fresh_writer = os.pipe()
    os.dup2(fresh_writer, writer)
    os.close(fresh_writer)
    progress.wave_joined(mission, _join("wave 1 joined"))
    progress.feature_changed(mission, mission.features[0])

    stream.close()  # flushes what the first, failed line left in the buffer
    with open(fresh_reader, "rb") as fresh:
        assert fresh.read() == b"t1 pending\n"
