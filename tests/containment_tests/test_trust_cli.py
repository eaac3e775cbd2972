"""Trust on every path, through the real ``rho`` script: links, orphans, signals,
moved folders, crashed missions, a task named like a mission ref, file modes under umask 0.

Task commands leave markers outside the repository and block on files the test creates; every
wait is a bounded poll.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import stat
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from support.procs import pid_gone
from support.repos import branches, tree_files, worktree_paths
from support.rho import RHO, RhoRuns, read_pid, rho_env, run_rho, wait_file_cmd, wait_until
from support.stores import import_tasks, mission_dir, spec, store_bytes, store_tasks


@pytest.fixture(autouse=True)
def no_leftovers(tmp_path: Path) -> Iterator[None]:
    """After each test, no task process of its missions may still run."""
    yield
    assert _marked_processes(tmp_path) == [], "a task process outlived its mission"


def q(path: Path) -> str:
    """*path* quoted for a shell command."""
    return shlex.quote(str(path))


def _failed_mission(project: Path, marks: Path) -> Path:
    """A finished mission whose one task fails until ``marks/fixed`` exists; its folder."""
    command = f"test -e {q(marks / 'fixed')} && echo done > done.txt && echo task output"
    import_tasks(project, [spec("task_1", command)])
    result = run_rho("mission", "--from-tasks", cwd=project)
    assert result.code == 1, result.stderr
    return mission_dir(project)


def _one_error_line(result: Any, start: str) -> None:
    assert result.code == 2, (result.stdout, result.stderr)
    assert len(result.stderr_lines) == 1, result.stderr
    assert result.stderr_lines[0].startswith(start), result.stderr


def _victim(tmp_path: Path) -> Path:
    """A folder of the user's, outside the repository, with a file and a mode of its own."""
    victim = tmp_path / "victim"
    victim.mkdir(mode=0o755)
    victim.chmod(0o755)
    (victim / "precious.txt").write_text("precious\n", encoding="utf-8")
    (victim / "mission.json").write_text('{"someone": "else"}\n', encoding="utf-8")
    return victim


def _victim_state(victim: Path) -> tuple[int, dict[str, bytes]]:
    files = {p.name: p.read_bytes() for p in victim.iterdir() if p.is_file()}
    return stat.S_IMODE(victim.stat().st_mode), files


# -- symbolic links under .rho -----------------------------------------------------------------


def test_resume_refuses_a_symlinked_worktree_folder(
    project: Path, marks: Path, tmp_path: Path
) -> None:
    folder = _failed_mission(project, marks)
    victim = _victim(tmp_path)
    before, record = _victim_state(victim), (folder / "mission.json").read_bytes()
    worktrees = project / ".rho" / "worktrees" / folder.name
    assert not worktrees.exists()
    worktrees.symlink_to(victim)

    result = run_rho("mission", "resume", str(folder), cwd=project)

    _one_error_line(result, f"error: refusing to use {worktrees}: it is a symbolic link")
    assert _victim_state(victim) == before
    assert (folder / "mission.json").read_bytes() == record


def test_a_symlinked_missions_folder_is_refused_and_its_target_untouched(
    project: Path, tmp_path: Path
) -> None:
    import_tasks(project, [spec("task_1", "echo hi > hi.txt")])
    victim = _victim(tmp_path)
    before = _victim_state(victim)
    (project / ".rho" / "missions").symlink_to(victim)
    store = store_bytes(project)

    result = run_rho("mission", "--from-tasks", cwd=project)

    _one_error_line(result, "error: refusing to use ")
    assert "it is a symbolic link" in result.stderr
    assert _victim_state(victim) == before
    assert store_bytes(project) == store


def test_resume_refuses_a_mission_folder_that_is_a_link(
    project: Path, marks: Path, tmp_path: Path
) -> None:
    folder = _failed_mission(project, marks)
    elsewhere = tmp_path / "moved-away"
    folder.rename(elsewhere)
    folder.symlink_to(elsewhere)
    record, mode = (elsewhere / "mission.json").read_bytes(), elsewhere.stat().st_mode

    result = run_rho("mission", "resume", str(folder), cwd=project)

    _one_error_line(result, f"error: refusing to use {folder}: it is a symbolic link")
    assert (elsewhere / "mission.json").read_bytes() == record
    assert elsewhere.stat().st_mode == mode


def test_a_log_planted_as_a_link_is_never_written_through(
    project: Path, marks: Path, tmp_path: Path
) -> None:
    folder = _failed_mission(project, marks)
    victim = _victim(tmp_path)
    log = folder / "logs" / "task_1.log"
    log.unlink()
    log.symlink_to(victim / "precious.txt")
    (marks / "fixed").touch()

    result = run_rho("mission", "resume", str(folder), cwd=project)

    assert result.code == 1
    assert f"task_1 failed: refusing to use {log}: it is a symbolic link" in result.stdout
    assert (victim / "precious.txt").read_text(encoding="utf-8") == "precious\n"


# -- orphans of a crashed run ------------------------------------------------------------------


def test_resume_ends_an_unjournaled_orphan_and_never_shares_its_worktree(
    project: Path, marks: Path, runs: RhoRuns
) -> None:
    # A background writer that escapes the task's group and keeps writing into its worktree.
    writer = (
        f'setsid sh -c \'while :; do echo orphan >> "$RHO_WORKTREE/orphan.txt"; sleep 0.02; '
        f"done' & echo $! > {q(marks / 'writer.pid')}; "
    )
    command = (
        f'if [ "$RHO_ATTEMPT" = 1 ] && [ ! -e {q(marks / "second-run")} ]; then {writer}'
        f"echo $$ > {q(marks / 'task.pid')}; {wait_file_cmd(marks / 'never')}; fi; "
        "echo done > done.txt"
    )
    import_tasks(project, [spec("task_1", command)])
    first = runs.start("mission", "--from-tasks", cwd=project)
    writer_pid, task_pid = read_pid(marks / "writer.pid"), read_pid(marks / "task.pid")
    folder = mission_dir(project)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    # As if the crash came before the spawn was journaled: resume cannot learn it from there.
    journal = folder / "journal.jsonl"
    kept = [line for line in journal.read_text().splitlines() if '"process"' not in line]
    journal.write_text("".join(f"{line}\n" for line in kept), encoding="utf-8")
    (marks / "second-run").touch()

    result = run_rho("mission", "resume", str(folder), cwd=project)

    assert result.code == 0, result.stderr
    assert pid_gone(writer_pid)
    assert pid_gone(task_pid)
    record = json.loads((folder / "mission.json").read_text())
    files = tree_files(project, record["integration_branch"])
    assert "orphan.txt" not in files
    assert files["done.txt"] == "done\n"


# -- signals -----------------------------------------------------------------------------------


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_second_signal_kills_every_task_at_once_and_the_record_is_written(
    project: Path, marks: Path, runs: RhoRuns, signum: signal.Signals
) -> None:
    # Tasks that note SIGTERM and go on: only SIGKILL ends them; the grace is far too long.
    stubborn = (
        f"trap 'touch {q(marks)}/term-$RHO_TASK_ID' TERM; touch {q(marks)}/up-$RHO_TASK_ID; "
        "while :; do sleep 0.05; done"
    )
    import_tasks(project, [spec("task_1", stubborn), spec("task_2", stubborn)])
    process = runs.start("mission", "--from-tasks", "--grace", "10m", cwd=project)
    for task in ("task_1", "task_2"):
        wait_until(lambda t=task: (marks / f"up-{t}").exists(), f"{task} to start")  # type: ignore[misc]
    process.send_signal(signum)
    for task in ("task_1", "task_2"):
        wait_until(lambda t=task: (marks / f"term-{t}").exists(), f"SIGTERM to {task}")  # type: ignore[misc]
    process.send_signal(signum)

    result = runs.wait(process)

    assert result.code == 130, result.stderr
    folder = mission_dir(project)
    assert _marked_processes(project.parent) == []
    record = json.loads((folder / "mission.json").read_text())
    assert record["status"] == "cancelled"
    assert {f["status"] for f in record["features"]} == {"cancelled"}
    assert [join["cancelled_ids"] for join in record["wave_joins"]] == [["task_1", "task_2"]]
    # rho's own stop is not the user's "cancelled": the tasks are to do again.
    assert {t["status"] for t in store_tasks(project).values()} == {"pending"}
    assert worktree_paths(project) == [str(project)]


# -- moved and copied mission folders ----------------------------------------------------------


def test_resume_works_where_the_repository_moved_to(
    project: Path, marks: Path, tmp_path: Path
) -> None:
    folder = _failed_mission(project, marks)
    moved = tmp_path / "moved-repo"
    project.rename(moved)
    (marks / "fixed").touch()
    new_folder = moved / ".rho" / "missions" / folder.name

    result = run_rho("mission", "resume", str(new_folder), cwd=moved)

    assert result.code == 0, result.stderr
    assert not project.exists()  # nothing was written at the old location
    record = json.loads((new_folder / "mission.json").read_text())
    assert (record["status"], record["dir"], record["repo"]) == (
        "completed",
        str(new_folder),
        str(moved),
    )
    assert record["config"]["task_store"] == str(moved / ".rho" / "tasks.json")
    assert store_tasks(moved)["task_1"]["status"] == "completed"


def test_resume_of_a_copy_writes_to_the_copy_only(project: Path, marks: Path) -> None:
    folder = _failed_mission(project, marks)
    copy = project / ".rho" / "copies" / folder.name
    shutil.copytree(folder, copy)
    originals = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    (marks / "fixed").touch()

    result = run_rho("mission", "resume", str(copy), cwd=project)

    assert result.code == 0, result.stderr
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == originals
    record = json.loads((copy / "mission.json").read_text())
    assert (record["status"], record["dir"]) == ("completed", str(copy))


# -- a crashed mission is reported as interrupted ----------------------------------------------


def test_a_crashed_mission_is_shown_and_listed_as_interrupted(
    project: Path, marks: Path, runs: RhoRuns
) -> None:
    command = f"echo $$ > {q(marks / 'task.pid')}; {wait_file_cmd(marks / 'go')}; echo ok > ok.txt"
    import_tasks(project, [spec("task_1", command)])
    process = runs.start("mission", "--from-tasks", cwd=project)
    task = read_pid(marks / "task.pid")
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    folder = mission_dir(project)

    shown = run_rho("mission", "show", str(folder), cwd=project)
    listed = run_rho("mission", "list", "--json", cwd=project)

    assert shown.stdout_lines[0] == f"mission {folder.name}  interrupted"
    assert f"resume it with 'rho mission resume {folder}'" in shown.stdout
    (row,) = listed.json()["missions"]
    assert (row["status"], row["state"]) == ("executing", "interrupted")
    (marks / "go").touch()
    assert run_rho("mission", "resume", str(folder), cwd=project).code == 0
    assert pid_gone(task)
    assert run_rho("mission", "list", "--json", cwd=project).json()["missions"][0]["state"] == (
        "completed"
    )


def test_a_running_mission_is_not_reported_as_interrupted(
    project: Path, marks: Path, runs: RhoRuns
) -> None:
    command = f"touch {q(marks / 'up')}; {wait_file_cmd(marks / 'go')}"
    import_tasks(project, [spec("task_1", command)])
    process = runs.start("mission", "--from-tasks", cwd=project)
    wait_until((marks / "up").exists, "the task to start")

    listed = run_rho("mission", "list", "--json", cwd=project)

    (marks / "go").touch()
    assert runs.wait(process).code == 0
    assert listed.json()["missions"][0]["state"] == "executing"


# -- names and modes ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["integration", "INTEGRATION", "fix-1", "verify-1-2"])
def test_a_task_named_like_a_mission_ref_is_refused_before_anything_runs(
    project: Path, name: str
) -> None:
    import_tasks(project, [spec(name, "echo hi > hi.txt")])
    store = store_bytes(project)

    result = run_rho("mission", "--from-tasks", cwd=project)

    _one_error_line(result, f'error: feature id "{name}" is reserved')
    assert branches(project) == {"main"}
    assert store_bytes(project) == store


def test_files_rho_creates_are_private_under_umask_000(project: Path) -> None:
    import_tasks(project, [spec("task_1", "echo hi > hi.txt")])
    command = f"umask 000; exec {shlex.quote(str(RHO))} mission --from-tasks"
    done = subprocess.run(
        ["sh", "-c", command], cwd=project, env=rho_env(), capture_output=True, check=False
    )
    assert done.returncode == 0, done.stderr
    folder = mission_dir(project)
    git_dir = project / ".git"
    locks = [git_dir / "rho-mission.lock", git_dir / f"rho-mission-{folder.name}.lock"]
    assert [stat.S_IMODE(p.stat().st_mode) for p in locks] == [0o600, 0o600]
    for path in [project / ".rho", *(project / ".rho").rglob("*")]:
        if path.is_relative_to(project / ".rho" / "worktrees"):
            continue
        expected = 0o700 if path.is_dir() else 0o600
        assert stat.S_IMODE(path.stat().st_mode) == expected, path


# -- helpers -----------------------------------------------------------------------------------


def _marked_processes(folder: Path) -> list[int]:
    """Live processes carrying the id of a mission found under *folder*."""
    ids = {p.parent.name for p in folder.rglob("mission.json") if p.parent.parent.name}
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(f"RHO_MISSION_ID={i}".encode() in environ for i in ids):
            found.append(int(entry.name))
    return [pid for pid in found if not pid_gone(pid)]


def _kill_marked(folder: Path) -> None:
    for pid in _marked_processes(folder):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue


# -- leases: one mission per task ----------------------------------------------------------------


def _lease_holders(project: Path) -> dict[str, object]:
    return {
        task_id: task.get("metadata", {}).get("rho.lease")
        for task_id, task in store_tasks(project).items()
    }


def test_a_second_mission_never_runs_the_tasks_of_a_running_one(
    project: Path, marks: Path, runs: RhoRuns
) -> None:
    command = f"touch {q(marks)}/ran-$$; {wait_file_cmd(marks / 'go')}"
    import_tasks(project, [spec("task_1", command), spec("task_2", command)])
    first = runs.start("mission", "--from-tasks", cwd=project)
    wait_until(lambda: len(list(marks.glob("ran-*"))) == 2, "both tasks to start")
    holder = mission_dir(project).name
    store = store_bytes(project)

    second = run_rho("mission", "--from-tasks", cwd=project)

    _one_error_line(second, f'error: task "task_1" is leased to mission {holder}, which is running')
    assert store_bytes(project) == store
    assert [p.name for p in (project / ".rho" / "missions").iterdir()] == [holder]
    (marks / "go").touch()
    assert runs.wait(first).code == 0
    assert len(list(marks.glob("ran-*"))) == 2
    assert _lease_holders(project) == {"task_1": None, "task_2": None}


def test_the_tasks_of_an_interrupted_mission_pass_on_only_by_resume_or_takeover(
    project: Path, marks: Path, runs: RhoRuns
) -> None:
    command = f"{wait_file_cmd(marks / 'go')}; echo $RHO_MISSION_ID >> {q(marks / 'ran')}"
    import_tasks(project, [spec("task_1", f"touch {q(marks / 'up')}; {command}")])
    crashed = runs.start("mission", "--from-tasks", cwd=project)
    wait_until((marks / "up").exists, "the task to start")
    holder = mission_dir(project).name
    crashed.send_signal(signal.SIGKILL)
    crashed.wait(timeout=30)
    _kill_marked(project.parent)  # its orphan: as if the machine had rebooted

    refused = run_rho("mission", "--from-tasks", cwd=project)
    (marks / "go").touch()
    taken = run_rho("mission", "--from-tasks", "--takeover", cwd=project)

    _one_error_line(
        refused, f'error: task "task_1" is leased to mission {holder}, which was interrupted'
    )
    assert "rho mission resume" in refused.stderr
    assert "--takeover" in refused.stderr
    assert taken.code == 0, taken.stderr
    taker = next(p.name for p in (project / ".rho" / "missions").iterdir() if p.name != holder)
    assert (marks / "ran").read_text().split() == [taker]
    assert _lease_holders(project) == {"task_1": None}


def test_a_lease_holds_in_every_clone_that_shares_the_store(
    make_repo: Callable[[str, int], Path], marks: Path, runs: RhoRuns, tmp_path: Path
) -> None:
    # RHO_TASK_STORE (here --store) names one store for two clones: a mission running in
    # clone A leases its tasks for clone B too, although B's git dir knows nothing of it.
    clone_a, clone_b = make_repo("a", 1), make_repo("b", 1)
    shared = tmp_path / "team" / "tasks.json"
    command = f"touch {q(marks)}/ran-$RHO_MISSION_ID; {wait_file_cmd(marks / 'go')}"
    import_tasks(clone_a, [spec("task_1", command)], "--store", str(shared))
    first = runs.start("mission", "--from-tasks", "--store", str(shared), cwd=clone_a)
    wait_until(lambda: len(list(marks.glob("ran-*"))) == 1, "the task to start in clone A")
    holder = mission_dir(clone_a).name
    before = shared.read_bytes()

    second = run_rho("mission", "--from-tasks", "--store", str(shared), cwd=clone_b)

    _one_error_line(second, f'error: task "task_1" is leased to mission {holder}, which is running')
    assert shared.read_bytes() == before
    missions_b = clone_b / ".rho" / "missions"
    assert not missions_b.exists() or list(missions_b.iterdir()) == []
    (marks / "go").touch()
    assert runs.wait(first).code == 0
    assert [p.name for p in marks.glob("ran-*")] == [f"ran-{holder}"], "one mission ran it"
    assert "rho.lease_place" not in json.loads(shared.read_text())["tasks"][0]["metadata"]
