"""Reliability of ``rho mission`` under crashes, signals and load, with real processes.

Each test runs the real ``rho`` script on a real repository. Task commands report what they do
by touching marker files outside the repository, and block on files that the test creates (or
never creates); the test waits for markers with bounded polls, never with fixed sleeps.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rho_mission.git._repo import GitRepo
from support.procs import group_alive, pgid_of, pid_gone
from support.repos import branches, tree_files, worktree_paths
from support.rho import RHO, RhoRuns, read_pid, rho_env, run_rho, wait_file_cmd, wait_until
from support.stores import import_tasks, journal_events, mission_dir, spec, store_tasks

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")


def q(path: Path) -> str:
    """*path* quoted for a shell command."""
    return shlex.quote(str(path))


def _mission_json(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "mission.json").read_text(encoding="utf-8"))
    return data


def _statuses(project: Path) -> dict[str, str]:
    return {task_id: task["status"] for task_id, task in store_tasks(project).items()}


def _journal_has(project: Path, event: str, feature_id: str) -> bool:
    missions = project / ".rho" / "missions"
    if not missions.is_dir() or not any(missions.iterdir()):
        return False
    entries = journal_events(mission_dir(project), event)
    return any(entry.get("feature_id") == feature_id for entry in entries)


def _branches_of(ident: str, *features: str) -> set[str]:
    return {"main", f"rho-mission/{ident}/integration"} | {
        f"rho-mission/{ident}/{feature}" for feature in features
    }


def _assert_no_worktree_left(project: Path, ident: str) -> None:
    assert worktree_paths(project) == [str(project.resolve())]
    folder = project / ".rho" / "worktrees" / ident
    assert not folder.exists() or not any(folder.iterdir())


# -- kill -9 in the middle of a wave, then resume ----------------------------------------------


def _crash_mid_wave_2(project: Path, runs: RhoRuns, task_2_first_run: str, ran: Path) -> Path:
    """Run a 3-wave mission and SIGKILL ``rho`` once task_3 ended while task_2 still runs.

    task_2 runs *task_2_first_run* the first time (it must touch *ran*), and on any later run
    checks that it sees task_1's file and writes its own.
    """
    task_2 = f"if [ -e {q(ran)} ]; then cat one.txt > two.txt; else {task_2_first_run}; fi"
    import_tasks(
        project,
        [
            spec("task_1", "echo one > one.txt"),
            spec("task_2", task_2, "task_1"),
            spec("task_3", "echo three > three.txt", "task_1"),
            spec("task_4", "cat two.txt three.txt > four.txt", "task_2", "task_3"),
        ],
    )
    # A long grace: the supervisor of a task that ignores the SIGTERM of rho's death keeps it
    # for that long, the orphan a later command must end.
    first = runs.start("mission", "--from-tasks", "--grace", "60s", cwd=project)
    wait_until(
        lambda: (
            _journal_has(project, "process", "task_2") and _journal_has(project, "finish", "task_3")
        ),
        "task_3 to finish while task_2 runs",
    )
    first.kill()
    assert runs.wait(first).code == -signal.SIGKILL
    wait_until(ran.exists, "task_2's first run to mark itself")
    return mission_dir(project)


def _assert_crash_left_wave_1_only(folder: Path) -> dict[str, Any]:
    crashed = _mission_json(folder)  # parses: every write of it was atomic
    assert crashed["status"] == "executing"
    assert [join["summary"] for join in crashed["wave_joins"]] == [
        "wave 1 joined 1 feature(s), 1 completed, 0 failed"
    ]
    assert [f["status"] for f in crashed["features"]] == [
        "completed",
        "pending",
        "pending",
        "pending",
    ]
    return crashed


def _assert_resumed_to_the_end(project: Path, folder: Path, crashed: dict[str, Any]) -> None:
    ident = folder.name
    _assert_no_worktree_left(project, ident)
    assert branches(project) == _branches_of(ident, "task_1", "task_2", "task_3", "task_4")
    # The lock died with the process: another resume (nothing left to run) and show both work.
    assert run_rho("mission", "resume", str(folder), cwd=project).code == 0
    shown = run_rho("mission", "show", str(folder), "--json", cwd=project)
    document = shown.json()
    assert (shown.code, document["status"]) == (0, "completed")
    assert document["wave_joins"][0] == crashed["wave_joins"][0]
    assert [join["summary"] for join in document["wave_joins"][1:]] == [
        "wave 2 joined 2 feature(s), 2 completed, 0 failed",
        "wave 3 joined 1 feature(s), 1 completed, 0 failed",
    ]
    assert set(_statuses(project).values()) == {"completed"}
    files = tree_files(project, f"rho-mission/{ident}/integration")
    assert files["four.txt"] == "one\nthree\n"


def test_kill_9_mid_wave_then_resume_finishes_and_kills_the_orphan(
    project: Path, runs: RhoRuns, marks: Path, snapshot: Callable[[Path], str]
) -> None:
    before = snapshot(project)
    pid_file, ran = marks / "task_2.pid", marks / "ran"
    # It ignores SIGTERM: rho's death stops it only after the grace (see _crash_mid_wave_2).
    blocked = (
        f"trap '' TERM; echo $$ > {q(pid_file)}; touch {q(ran)}; {wait_file_cmd(marks / 'never')}"
    )

    folder = _crash_mid_wave_2(project, runs, blocked, ran)

    crashed = _assert_crash_left_wave_1_only(folder)
    orphan = read_pid(pid_file)
    assert not pid_gone(orphan), "the killed run's task should still be running"
    assert len(worktree_paths(project)) > 1, "the killed run's worktrees should still be there"

    resumed = run_rho("mission", "resume", str(folder), cwd=project)

    assert resumed.code == 0, resumed.stderr
    assert resumed.stdout_lines[-2] == f"mission {folder.name} completed: {folder.resolve()}"
    assert pid_gone(orphan)
    assert not group_alive(orphan)  # the command led its own process group
    _assert_resumed_to_the_end(project, folder, crashed)
    assert snapshot(project) == before


def test_a_crashed_runs_shell_takes_its_background_child_along_when_it_exits(
    project: Path, runs: RhoRuns, marks: Path
) -> None:
    # rho is gone (kill -9), but the task's supervisor is not: when the shell exits, the
    # supervisor ends what the shell left running, without waiting for a resume.
    leader_file, child_file, ran = marks / "leader.pid", marks / "child.pid", marks / "ran"
    first_run = (
        f"sleep 300 & echo $! > {q(child_file)}; echo $$ > {q(leader_file)}; touch {q(ran)}; "
        f"{wait_file_cmd(marks / 'leader-may-exit')}"
    )
    folder = _crash_mid_wave_2(project, runs, first_run, ran)
    crashed = _assert_crash_left_wave_1_only(folder)
    leader, child = read_pid(leader_file), read_pid(child_file)
    (marks / "leader-may-exit").touch()
    wait_until(lambda: pid_gone(leader), "the orphaned task's shell to exit")
    wait_until(lambda: pid_gone(child), "the supervisor to end the shell's background child")

    resumed = run_rho("mission", "resume", str(folder), cwd=project)

    assert resumed.code == 0, resumed.stderr
    assert not group_alive(leader)
    _assert_resumed_to_the_end(project, folder, crashed)


def test_resume_of_a_running_mission_is_refused_and_disturbs_nothing(
    project: Path, runs: RhoRuns, marks: Path
) -> None:
    pid_file, release = marks / "task_1.pid", marks / "release"
    command = f"echo $$ > {q(pid_file)}; {wait_file_cmd(release)}; echo one > one.txt"
    import_tasks(project, [spec("task_1", command)])
    first = runs.start("mission", "--from-tasks", cwd=project)
    running = read_pid(pid_file)
    folder = mission_dir(project)

    second = run_rho("mission", "resume", str(folder), cwd=project)

    assert (second.code, second.stdout) == (2, "")
    assert second.stderr_lines == [f"error: mission {folder.name} is already running"]
    assert not pid_gone(running)
    assert len(worktree_paths(project)) == 2
    release.touch()
    assert runs.wait(first).code == 0
    assert _mission_json(folder)["status"] == "completed"


# -- Ctrl-C and SIGTERM ------------------------------------------------------------------------


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_cancels_the_mission_and_ends_the_whole_task_group(
    project: Path, runs: RhoRuns, marks: Path, signum: signal.Signals
) -> None:
    shell, child = marks / "pidfile", marks / "childpid"
    inner = f"echo $$ > {q(shell)}; sleep 100 & echo $! > {q(child)}; wait"
    import_tasks(
        project, [spec("task_1", f"sh -c {shlex.quote(inner)}"), spec("task_2", "true", "task_1")]
    )
    running = runs.start("mission", "--from-tasks", cwd=project)
    shell_pid, child_pid = read_pid(shell), read_pid(child)
    group = pgid_of(shell_pid)
    assert group not in (os.getpgid(0), running.pid)  # the task has a process group of its own

    os.kill(running.pid, signum)  # rho alone: its tasks are not in its process group
    result = runs.wait(running)

    folder = mission_dir(project).resolve()
    assert result.code == 130, result.stderr
    assert result.stdout_lines[-2] == f"mission {folder.name} cancelled: {folder}"
    assert (pid_gone(shell_pid), pid_gone(child_pid), group_alive(group)) == (True, True, False)
    assert _statuses(project) == {"task_1": "pending", "task_2": "pending"}  # to do again
    document = _mission_json(folder)
    assert document["status"] == "cancelled"
    assert [(f["id"], f["status"]) for f in document["features"]] == [
        ("task_1", "cancelled"),
        ("task_2", "pending"),
    ]
    (join,) = document["wave_joins"]
    # task_2 was only not reached (Ctrl-C), not blocked by a failure: a resume runs it.
    assert (join["cancelled_ids"], join["blocked_ids"], join["not_run_ids"]) == (
        ["task_1"],
        [],
        ["task_2"],
    )
    assert "downstream blocked" not in join["summary"]
    _assert_no_worktree_left(project, folder.name)


def test_after_ctrl_c_the_printed_next_step_resumes_the_mission(
    project: Path, runs: RhoRuns, marks: Path
) -> None:
    # Before the fix: the mission's own stop left the task "cancelled" in the store, which holds a
    # task back from every later run; the printed "next:" line then failed.
    go = marks / "go"
    slow = f"touch {q(marks / 'up')} && {wait_file_cmd(go)} && echo slow > slow.txt"
    import_tasks(project, [spec("quick", "echo quick > quick.txt"), spec("slow", slow)])
    running = runs.start("mission", "--from-tasks", cwd=project)
    wait_until((marks / "up").exists, "the slow task to start")
    wait_until(lambda: _journal_has(project, "finish", "quick"), "the quick task to end")

    os.kill(running.pid, signal.SIGINT)
    stopped = runs.wait(running)

    assert stopped.code == 130, stopped.stderr
    folder = mission_dir(project).resolve()
    assert stopped.stdout_lines[-1] == f"next: rho mission resume {folder.name}"
    tasks = store_tasks(project)
    assert (tasks["quick"]["status"], tasks["slow"]["status"]) == ("completed", "pending")
    assert tasks["slow"]["lastError"] == (
        f"interrupted: mission {folder.name} was stopped before it finished; "
        f"'rho mission resume {folder.name}' runs it again"
    )
    go.touch()
    command = shlex.split(stopped.stdout_lines[-1].removeprefix("next: "))
    resumed = run_rho(*command[1:], cwd=project)  # exactly what rho said, without "rho"
    assert resumed.code == 0, resumed.stdout + resumed.stderr
    assert {t["status"] for t in store_tasks(project).values()} == {"completed"}
    assert _mission_json(folder)["status"] == "completed"


# -- the worker cap ----------------------------------------------------------------------------


def _capped_task(marks: Path) -> str:
    """Mark the start, record how many tasks run now (itself included), wait, mark the end."""
    started, ended = "start.$RHO_TASK_ID", "end.$RHO_TASK_ID"
    running = "$(( $(ls | grep -c '^start\\.') - $(ls | grep -c '^end\\.') ))"
    return (
        f"cd {q(marks)} && touch {started} && echo {running} >> running && "
        f"{wait_file_cmd(marks / 'release')} && touch {ended}"
    )


def test_worker_cap_runs_exactly_that_many_tasks_at_once(
    project: Path, runs: RhoRuns, marks: Path
) -> None:
    ids = [f"task_{n}" for n in range(1, 7)]
    import_tasks(project, [spec(task_id, _capped_task(marks)) for task_id in ids])
    mission = runs.start("mission", "--from-tasks", "--workers", "2", cwd=project)

    def started() -> set[str]:
        return {p.name.removeprefix("start.") for p in marks.glob("start.*")}

    def reports() -> list[int]:
        report = marks / "running"
        return [int(n) for n in report.read_text().split()] if report.exists() else []

    wait_until(lambda: len(started()) >= 2 and len(reports()) >= 2, "two tasks to start")
    # Every feature waits for a slot and is dispatched (journal first) as soon as it has one,
    # well before any command starts: a third slot would show here by now.
    assert len(journal_events(mission_dir(project), "dispatch")) == 2
    assert len(started()) == 2
    assert not list(marks.glob("end.*"))
    (marks / "release").touch()
    result = runs.wait(mission)

    assert result.code == 0, result.stderr
    assert started() == set(ids)
    # Each task counted the tasks running as it started: never over the cap, and the cap reached.
    assert len(reports()) == 6
    assert max(reports()) == 2


# -- downstream tasks see their blockers' work -------------------------------------------------


def test_downstream_task_sees_its_blockers_work_and_the_checkout_stays_untouched(
    repo: GitRepo, repo_path: Path, snapshot: Callable[[Path], str]
) -> None:
    before = snapshot(repo_path)
    import_tasks(
        repo_path,
        [
            spec("task_1", "echo a > a.txt"),
            spec("task_2", "mkdir sub && echo b > sub/b.txt"),
            spec(
                "task_3",
                "test -f a.txt && test -f sub/b.txt && cat a.txt sub/b.txt > c.txt",
                "task_1",
                "task_2",
            ),
            spec("task_4", "test -f c.txt && cat c.txt a.txt > d.txt", "task_3"),
        ],
    )

    result = run_rho("mission", "--from-tasks", cwd=repo_path)

    assert result.code == 0, result.stdout
    ident = mission_dir(repo_path).name
    files = tree_files(repo_path, f"rho-mission/{ident}/integration")
    assert {name: files[name] for name in ("a.txt", "sub/b.txt", "c.txt", "d.txt")} == {
        "a.txt": "a\n",
        "sub/b.txt": "b\n",
        "c.txt": "a\nb\n",
        "d.txt": "a\nb\na\n",
    }
    assert sorted(files) == [
        "a.txt",
        "c.txt",
        "d.txt",
        "file0000.txt",
        "file0001.txt",
        "file0002.txt",
        "sub/b.txt",
    ]
    assert snapshot(repo_path) == before
    assert not (repo_path / "a.txt").exists()


def test_git_paths_inherited_from_a_hook_do_not_point_the_mission_at_the_users_checkout(
    repo: GitRepo, repo_path: Path, snapshot: Callable[[Path], str]
) -> None:
    """``rho`` run from a git hook inherits GIT_DIR, GIT_WORK_TREE and GIT_INDEX_FILE."""
    before = snapshot(repo_path)
    import_tasks(repo_path, [spec("task_1", "echo a > a.txt")])
    env = rho_env() | {
        "GIT_DIR": str(repo_path / ".git"),
        "GIT_WORK_TREE": str(repo_path),
        "GIT_INDEX_FILE": str(repo_path / ".git" / "index"),
    }
    done = subprocess.run(
        [str(RHO), "mission", "--from-tasks"],
        cwd=repo_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    ident = mission_dir(repo_path).name
    assert tree_files(repo_path, f"rho-mission/{ident}/integration")["a.txt"] == "a\n"
    assert snapshot(repo_path) == before
    assert not (repo_path / "a.txt").exists()
