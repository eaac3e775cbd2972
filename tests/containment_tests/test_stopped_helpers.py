"""A task that stops one of rho's helpers (``kill -STOP``) never holds its mission.

rho keeps two long-lived processes that serve every task, both the user's, so a task can find
them from its own process (its supervisor's parent is the zygote, whose parent is rho) and
stop them: the zygote that forks each task's supervisor (``containment._zygote``) and the
repository's ``git update-ref --stdin`` that starts each attempt's branch (``git._refstream``).
Each exchange with either has a deadline (``containment._helpers.HELPER_DEADLINE``); one that
misses it is ended and replaced. A task's own supervisor, and rho's one-shot git calls, have
no deadline but are never stopped by rho: one found stopped is continued. Real missions of
the real ``rho``, no ``--sandbox``: the mission ends (completed, or as its timeout or signal
says), and nothing rho started is left, stopped or not.
"""

from __future__ import annotations

import os
import shlex
import signal
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from rho_mission.git._repo import GitRepo
from support.procs import pid_gone, running_stat, state_of
from support.rho import WAIT, RhoRuns, read_pid, wait_file_cmd, wait_until
from support.stores import import_tasks, mission_dir, spec, store_tasks

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")

# From a task's shell: its supervisor is $PPID, the zygote that forked it the supervisor's
# parent, rho the zygote's parent (field 4 of /proc/<pid>/stat: the parent's pid).
_ZYGOTE = "z=$(cut -d' ' -f4 /proc/$PPID/stat)"
_RHO = f"{_ZYGOTE}; r=$(cut -d' ' -f4 /proc/$z/stat)"


def q(path: Path) -> str:
    return shlex.quote(str(path))


def _stop_zygote(record: Path) -> str:
    """A task's command that stops the zygote above it and writes its pid to *record*, once the
    zygote is stopped: one the stop reaches only after it reaped the supervisor holds the
    task's status, which is lost with it when rho ends it (the attempt fails as killed)."""
    stopped = "until [ \"$(cut -d' ' -f3 /proc/$z/stat)\" = T ]; do :; done"
    return f"{_ZYGOTE}; kill -STOP $z && {stopped} && echo $z > {q(record)}"


def _stop_ref_stream(record: Path) -> str:
    """A task's command that stops rho's ``git update-ref --stdin`` (a child of rho's) and
    writes its pid to *record*."""
    return (
        f"{_RHO}; for c in $(pgrep -P $r); do "
        "case \"$(tr '\\0' ' ' < /proc/$c/cmdline)\" in "
        f"*update-ref*--stdin*) kill -STOP $c && echo $c > {q(record)};; esac; done"
    )


def _stopped(pid: int) -> bool:
    return state_of(pid) == "T"


def _left_by(rho: int, repo: Path) -> list[str]:
    """What still runs (stopped or not) of the helpers *rho* started: its zygotes and their
    supervisors (``--zygote RHO`` in their command line), its ref stream (``git -C REPO``)."""
    left = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        zygote = "--zygote" in argv and argv[argv.index("--zygote") + 1 :][:1] == [str(rho)]
        stream = argv[:3] == ["git", "-C", str(repo)] and "update-ref" in argv
        if (zygote or stream) and not pid_gone(int(entry.name)):
            left.append(" ".join(argv))
    return left


def _statuses(repo: Path) -> dict[str, str]:
    return {task_id: task["status"] for task_id, task in store_tasks(repo).items()}


def _stop_supervisor(record: Path) -> str:
    """A task's command that stops its own supervisor and writes its pid to *record*."""
    return f"kill -STOP $PPID && echo $PPID > {q(record)}"


_STOPS = {"zygote": _stop_zygote, "ref stream": _stop_ref_stream, "supervisor": _stop_supervisor}


@pytest.mark.parametrize("helper", _STOPS)
def test_a_task_that_stops_a_helper_and_exits_leaves_a_mission_that_completes(
    project: Path, runs: RhoRuns, marks: Path, helper: str
) -> None:
    # The zygote: its report of the task's end never comes; the ref stream: wave 2's move of
    # b's branch is never answered. Each is ended after the deadline, and a new one serves b.
    # The task's own supervisor would never see its task end: it is continued.
    record = marks / "helper"
    stop = _STOPS[helper](record)
    import_tasks(project, [spec("a", f"{stop}; echo a > a.txt"), spec("b", "echo b > b.txt", "a")])
    running = runs.start("mission", "--from-tasks", cwd=project)
    result = runs.wait(running)
    stopped = read_pid(record)
    assert result.code == 0, result.stderr
    assert _statuses(project) == {"a": "completed", "b": "completed"}
    assert pid_gone(stopped)
    assert _left_by(running.pid, project) == []


@pytest.mark.parametrize(
    ("options", "signum", "code"),
    [
        (("--timeout", "3s"), None, 130),
        (("--task-timeout", "2s"), None, 1),
        ((), signal.SIGINT, 130),
        ((), signal.SIGTERM, 130),
    ],
    ids=["timeout", "task-timeout", "SIGINT", "SIGTERM"],
)
def test_a_stopped_zygote_never_holds_a_stop_past_its_grace(
    project: Path,
    runs: RhoRuns,
    marks: Path,
    options: tuple[str, ...],
    signum: signal.Signals | None,
    code: int,
) -> None:
    # The task stops the zygote and runs on: rho's stop ends it (SIGTERM to its group, its
    # supervisor's grace), then waits for the zygote's report of the supervisor's end.
    record = marks / "zygote"
    task = f"{_stop_zygote(record)}; {wait_file_cmd(marks / 'never', 60)}"
    import_tasks(project, [spec("a", task), spec("b", "true", "a")])
    running = runs.start("mission", "--from-tasks", "--grace", "1s", *options, cwd=project)
    zygote = read_pid(record)
    assert _stopped(zygote)
    if signum is not None:
        os.kill(running.pid, signum)
    result = runs.wait(running)  # bounded: a hang fails here
    assert result.code == code, result.stderr
    status = "cancelled" if code == 130 else "failed"
    folder = mission_dir(project).resolve()
    assert f"mission {folder.name} {status}: {folder}" in result.stdout_lines
    wait_until(lambda: pid_gone(zygote), "the stopped zygote to be gone")
    assert _left_by(running.pid, project) == []


def test_a_git_call_of_rhos_that_a_task_stopped_is_continued(repo: GitRepo, marks: Path) -> None:
    # A task beside the feature rho commits may stop one of rho's own git processes; one
    # stopped for good would hold rho past every timeout and signal (the call runs in a worker
    # thread, which no cancellation reaches). rho continues it at the deadline's end. Here the
    # git call runs an alias, whose shell waits for a file: the git above it is stopped first.
    shell, go = marks / "shell", marks / "go"
    alias = f"!echo $$ > {q(shell)}; {wait_file_cmd(go)}"
    pool = ThreadPoolExecutor(1)
    call = pool.submit(repo.run, "-c", f"alias.held={alias}", "held")
    git = 0
    try:
        git = int(running_stat(read_pid(shell))[1])
        os.kill(git, signal.SIGSTOP)
        wait_until(lambda: _stopped(git), "rho's git to be stopped")
        go.touch()
        assert call.result(timeout=WAIT) == ""
    finally:
        pool.shutdown(wait=False)
        if git and not pid_gone(git):  # a hang: what holds it ends
            os.kill(git, signal.SIGCONT)
