"""``rho mission clean``: a mission's branches, worktrees, processes and folder taken back.

Real ``rho`` processes on real repositories; crashed runs are real ``kill -9``s of ``rho``.
"""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
from pathlib import Path

import pytest

from support.procs import pid_gone
from support.repos import branches, worktree_paths
from support.rho import RhoRuns, read_pid, run_rho, wait_file_cmd
from support.stores import import_tasks, journal_events, mission_dir, spec, store_tasks

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)
    return done.stdout


def _mission(project: Path, *options: str) -> str:
    """Run a mission whose one task adds ``one.txt``; return its id."""
    import_tasks(project, [spec("task_1", "echo one > one.txt")])
    result = run_rho("mission", "--from-tasks", *options, cwd=project)
    assert result.code == 0, result.stderr
    return mission_dir(project).name


def _mission_branches(project: Path, ident: str) -> dict[str, str]:
    out = _git(project, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads/")
    pairs = (line.split() for line in out.splitlines())
    return {name: sha for name, sha in pairs if name.startswith(f"rho-mission/{ident}/")}


def _unmerged_line(ident: str) -> str:
    return (
        f'the integration branch "rho-mission/{ident}/integration" holds work that no other '
        f"branch has; merge it first with 'rho mission merge {ident}', or pass --force to "
        "delete it"
    )


def test_clean_refuses_unmerged_work_then_cleans_once_it_is_merged(project: Path) -> None:
    ident = _mission(project)
    kept = _mission_branches(project, ident)

    refused = run_rho("mission", "clean", ident, cwd=project)

    assert (refused.code, refused.stdout, refused.stderr) == (
        2,
        "",
        f"error: {_unmerged_line(ident)}\n",
    )
    assert _mission_branches(project, ident) == kept
    assert run_rho("mission", "merge", ident, cwd=project).code == 0

    cleaned = run_rho("mission", "clean", ident, "--verbose", cwd=project)

    assert (cleaned.code, cleaned.stderr) == (0, "")
    task, integration = f"rho-mission/{ident}/task_1", f"rho-mission/{ident}/integration"
    assert cleaned.stdout_lines == [
        f"deleted branch {task} (was {kept[task][:12]})",
        f"deleted branch {integration} (was {kept[integration][:12]})",
        f"cleaned mission {ident}: 2 branch(es) deleted",
    ]
    assert branches(project) == {"main"}
    assert (project / ".rho" / "missions" / ident / "mission.json").is_file()  # no --purge
    notes = journal_events(project / ".rho" / "missions" / ident, "ref")
    assert [note["why"] for note in notes[-2:]] == ["delete", "delete"]


def _two_task_mission(project: Path) -> str:
    import_tasks(
        project, [spec("task_1", "echo one > one.txt"), spec("task_2", "echo 2 > two.txt")]
    )
    result = run_rho("mission", "--from-tasks", cwd=project)
    assert result.code == 0, result.stderr
    return mission_dir(project).name


@pytest.mark.parametrize("how", [("--squash",), ("--only", "task_1")], ids=["squash", "only"])
def test_a_mission_merged_by_squash_or_only_counts_as_merged_for_clean(
    project: Path, how: tuple[str, ...]
) -> None:
    # Before the fix: clean refused, and its advice ("merge it first with 'rho mission merge M'")
    # brought in the whole history a squash had left out.
    ident = _two_task_mission(project)
    assert run_rho("mission", "merge", ident, *how, cwd=project).code == 0
    merged_head = _git(project, "rev-parse", "main").strip()

    cleaned = run_rho("mission", "clean", ident, cwd=project)

    assert cleaned.code == 0, cleaned.stderr
    assert branches(project) == {"main"}
    assert _git(project, "rev-parse", "main").strip() == merged_head
    record = json.loads((project / ".rho" / "missions" / ident / "mission.json").read_text())
    (merge,) = record["merges"]
    assert (merge["into"], merge["squash"], merge["commit"]) == (
        "main",
        how == ("--squash",),
        merged_head,
    )
    assert merge["only"] == (["task_1"] if how[0] == "--only" else [])


def test_after_a_squash_clean_advises_a_squash_for_the_work_added_since(project: Path) -> None:
    ident = _two_task_mission(project)
    assert run_rho("mission", "merge", ident, "--squash", cwd=project).code == 0
    _git(project, "reset", "--quiet", "--hard", "HEAD~1")  # the user drops the squash

    refused = run_rho("mission", "clean", ident, cwd=project)

    assert refused.code == 2
    assert f"merge it first with 'rho mission merge {ident} --into main --squash'" in (
        refused.stderr
    )


def test_clean_force_deletes_unmerged_work_and_purge_the_folder(project: Path) -> None:
    ident = _mission(project)
    folder = project / ".rho" / "missions" / ident

    result = run_rho("mission", "clean", ident, "--force", "--purge", cwd=project)

    assert result.code == 0, result.stderr
    # One line, whatever it removed (--verbose lists each).
    assert result.stdout_lines == [
        f"cleaned mission {ident}: 2 branch(es) deleted, its folder {folder} removed"
    ]
    assert branches(project) == {"main"}
    assert not folder.exists()
    assert run_rho("mission", "list", "--json", cwd=project).json() == {"missions": []}


def test_clean_removes_kept_worktrees(project: Path) -> None:
    ident = _mission(project, "--keep-worktrees")
    (kept,) = worktree_paths(project)[1:]

    result = run_rho("mission", "clean", ident, "--force", "-v", cwd=project)

    assert result.code == 0, result.stderr
    assert f"removed worktree {kept}" in result.stdout_lines
    assert worktree_paths(project) == [str(project)]
    assert not (project / ".rho" / "worktrees" / ident).exists()


def test_clean_of_a_crashed_mission_ends_its_processes_worktrees_and_leases(
    project: Path, tmp_path: Path, runs: RhoRuns
) -> None:
    pid_file = tmp_path / "task.pid"
    # It ignores SIGTERM, and the grace is long: rho's death leaves it running that long.
    command = (
        f"trap '' TERM; echo $$ > {shlex.quote(str(pid_file))}; {wait_file_cmd(tmp_path / 'never')}"
    )
    import_tasks(project, [spec("task_1", command)])
    crashed = runs.start("mission", "--from-tasks", "--grace", "60s", cwd=project)
    orphan = read_pid(pid_file)
    crashed.send_signal(signal.SIGKILL)
    crashed.wait(timeout=30)
    ident = mission_dir(project).name
    assert len(worktree_paths(project)) == 2
    assert store_tasks(project)["task_1"]["metadata"]["rho.lease"] == ident

    # Nothing of the crashed run is in the integration branch: it still sits at the base.
    result = run_rho("mission", "clean", ident, "--verbose", cwd=project)

    assert result.code == 0, result.stderr
    assert f"ended process {orphan}" in result.stdout_lines
    assert pid_gone(orphan)
    assert worktree_paths(project) == [str(project)]
    assert _mission_branches(project, ident) == {}
    assert "rho.lease" not in store_tasks(project)["task_1"].get("metadata", {})
    assert f"released the mission's task leases in {project / '.rho' / 'tasks.json'}" in (
        result.stdout_lines
    )


def test_clean_finished_cleans_the_merged_and_skips_the_unmerged(project: Path) -> None:
    first = _mission(project)
    assert run_rho("mission", "merge", first, cwd=project).code == 0
    import_tasks(project, [spec("task_2", "echo two > two.txt")])
    assert run_rho("mission", "--from-tasks", cwd=project).code == 0
    (second,) = {p.name for p in (project / ".rho" / "missions").iterdir()} - {first}

    result = run_rho("mission", "clean", "--finished", cwd=project)

    assert result.code == 0, result.stderr
    assert f"skipped mission {second}: {_unmerged_line(second)}" in result.stdout_lines
    assert f"cleaned mission {first}: 2 branch(es) deleted" in result.stdout_lines
    assert _mission_branches(project, first) == {}
    assert set(_mission_branches(project, second)) == {
        f"rho-mission/{second}/integration",
        f"rho-mission/{second}/task_2",
    }


def test_clean_refuses_a_branch_the_user_has_checked_out(project: Path, tmp_path: Path) -> None:
    ident = _mission(project)
    look = tmp_path / "look"
    _git(project, "worktree", "add", "--quiet", str(look), f"rho-mission/{ident}/task_1")
    kept = _mission_branches(project, ident)

    result = run_rho("mission", "clean", ident, "--force", cwd=project)

    assert (result.code, result.stdout) == (2, "")
    assert result.stderr == (
        f'error: branch "rho-mission/{ident}/task_1" of mission {ident} is checked out at '
        f"{look}; switch that work tree to another branch first\n"
    )
    assert _mission_branches(project, ident) == kept
    assert (look / "one.txt").read_text() == "one\n"


def test_clean_never_deletes_through_a_symbolic_link(project: Path, tmp_path: Path) -> None:
    ident = _mission(project)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("precious\n", encoding="utf-8")
    link = project / ".rho" / "worktrees" / ident
    link.parent.mkdir(exist_ok=True)
    link.symlink_to(victim)
    kept = _mission_branches(project, ident)

    result = run_rho("mission", "clean", ident, "--force", cwd=project)

    assert (result.code, result.stdout) == (2, "")
    assert result.stderr == (
        f"error: refusing to use {link}: it is a symbolic link; rho follows no link in .rho\n"
    )
    assert (victim / "precious.txt").read_text() == "precious\n"
    assert _mission_branches(project, ident) == kept


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "error: name one MISSION, or pass --finished (not both)"),
        (("latest", "--finished"), "error: name one MISSION, or pass --finished (not both)"),
        (
            ("nope",),
            "error: no mission at nope: mission.json missing",
        ),
    ],
    ids=["nothing", "both", "unknown"],
)
def test_clean_refuses_bad_input_and_deletes_nothing(
    project: Path, args: tuple[str, ...], message: str
) -> None:
    ident = _mission(project)
    kept = _mission_branches(project, ident)
    record = (project / ".rho" / "missions" / ident / "mission.json").read_bytes()

    result = run_rho("mission", "clean", *args, "--force", cwd=project)

    assert (result.code, result.stdout, result.stderr_lines[0]) == (2, "", message)
    assert _mission_branches(project, ident) == kept
    assert (project / ".rho" / "missions" / ident / "mission.json").read_bytes() == record
    assert json.loads(record)["status"] == "completed"


def test_squash_and_only_commits_name_each_task_with_its_subject(project: Path) -> None:
    # Before the fix: the squash listed ids only ("Tasks: task_7, task_8."), --only said
    # "task task_11".
    ident = _two_task_mission(project)
    assert (
        run_rho("mission", "merge", ident, "--only", "task_2", "--into", "main", cwd=project).code
        == 0
    )
    only = _git(project, "log", "-1", "--format=%s", "main").strip()
    assert only == f"rho-mission {ident}: task_2 do task_2"
    _git(project, "reset", "--quiet", "--hard", "HEAD~1")
    assert run_rho("mission", "merge", ident, "--squash", cwd=project).code == 0
    body = _git(project, "log", "-1", "--format=%B", "main")
    assert body == (
        f"rho mission {ident}: 2 task(s), squashed into main\n\n"
        "- task_1: do task_1\n- task_2: do task_2\n\n"
    )
