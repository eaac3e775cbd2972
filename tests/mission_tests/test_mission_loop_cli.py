"""The user's loop around a run: missions by name, why a task failed, its log, the next command.

Real ``rho`` processes in real repositories; the live view runs on a real pseudo-terminal.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from support.repos import tree_files
from support.rho import RHO, WAIT, Result, RhoRuns, rho_env, run_rho, wait_file_cmd, wait_until
from support.stores import import_tasks, mission_dir, spec

# What sh says for a missing command: dash and busybox "not found", bash "No such file...".
_NOT_FOUND = re.compile(r"^  \| .*\./agent\.sh: (not found|No such file or directory)$")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]")

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")


def q(path: Path) -> str:
    """*path* quoted for a shell command."""
    return shlex.quote(str(path))


def _run(project: Path, *tasks: dict[str, object], options: tuple[str, ...] = ()) -> Result:
    import_tasks(project, list(tasks))
    return run_rho("mission", "--from-tasks", *options, cwd=project)


def _fifteen_lines_then(command: str) -> str:
    return f"for i in $(seq 1 15); do echo line $i; done; {command}"


def _twin(folder: Path, ident: str) -> Path:
    """A copy of the mission in *folder* under the id *ident* (the id is in the record only)."""
    twin = folder.parent / ident
    shutil.copytree(folder, twin)
    record = twin / "mission.json"
    record.write_text(record.read_text().replace(folder.name, ident), encoding="utf-8")
    return twin


def _in_a_terminal(args: tuple[str, ...], cwd: Path) -> tuple[int, str]:
    """Run ``rho ARGS`` with a pseudo-terminal as stdout and stderr; its code and its text."""
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [str(RHO), *args],
        cwd=cwd,
        env={**rho_env(), "TERM": "xterm"},
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
    )
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + WAIT
    try:
        while time.monotonic() < deadline:
            if not select.select([master], [], [], 1.0)[0]:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every process holding the terminal has ended
                break
            if not chunk:
                break
            chunks.append(chunk)
        code = process.wait(timeout=WAIT)
    finally:
        os.close(master)
        if process.poll() is None:
            process.kill()
    text = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
    return code, _ANSI.sub("", text)


# -- why it failed, where it is ---------------------------------------------------------------


def test_a_failure_prints_the_last_ten_lines_of_its_log_and_its_path(project: Path) -> None:
    command = _fifteen_lines_then("echo oops >&2; exit 3")

    result = _run(project, spec("task_1", command))

    folder = mission_dir(project).resolve()
    start = result.stdout_lines.index("task_1 failed: command failed: exit code 3")
    assert result.stdout_lines[start + 1 : start + 12] == [
        f"  log: {folder}/logs/task_1.log (last 10 line(s)):",
        *(f"  | line {n}" for n in range(7, 16)),
        "  | oops",
    ]
    assert result.stdout_lines[start + 12].startswith("wave 1 joined")


def test_the_readme_example_shows_why_agent_sh_failed(project: Path) -> None:
    for args in (
        ("Scaffold the package", "--command", "mkdir -p pkg && touch pkg/__init__.py"),
        ("Write the parser", "--blocked-by", "task_1", "--command", "./agent.sh"),
    ):
        assert run_rho("task", "add", *args, cwd=project).code == 0

    result = run_rho("mission", "--from-tasks", cwd=project)

    assert result.code == 1
    assert "task_2 failed: command failed: exit code 127" in result.stdout_lines
    assert [line for line in result.stdout_lines if _NOT_FOUND.match(line)] != []


def test_the_live_view_prints_a_failure_with_its_log_tail(project: Path) -> None:
    import_tasks(project, [spec("task_1", _fifteen_lines_then("./agent.sh"))])

    code, text = _in_a_terminal(("mission", "--from-tasks"), project)

    folder = mission_dir(project).resolve()
    lines = text.splitlines()
    assert code == 1, text
    assert "┃ wave ┃ task" in text  # the live table, not the plain lines
    start = next(i for i, line in enumerate(lines) if "task_1 failed: command failed: exit" in line)
    assert lines[start + 1] == f"  log: {folder}/logs/task_1.log (last 10 line(s)):"
    assert lines[start + 2 : start + 11] == [f"  | line {n}" for n in range(7, 16)]
    assert _NOT_FOUND.match(lines[start + 11])


def test_with_json_the_tail_and_next_command_go_to_stderr(project: Path) -> None:
    result = _run(project, spec("task_1", "echo broken >&2; exit 1"), options=("--json",))

    ident = mission_dir(project).name
    assert (result.code, result.json()["status"]) == (1, "failed")  # stdout: one document
    assert "  | broken" in result.stderr_lines
    assert result.stderr_lines[-2:] == [
        f"next: rho mission show {ident}",
        f"then, after a fix: rho mission resume {ident}",
    ]


def test_show_gives_each_feature_its_error_attempts_duration_and_log(project: Path) -> None:
    result = _run(
        project,
        spec("task_1", "echo ok > ok.txt"),
        spec("task_2", "exit 4", "task_1"),
        spec("task_3", "true", "task_2"),
        options=("--retries", "1"),
    )
    assert result.code == 1
    folder = mission_dir(project).resolve()

    shown = run_rho("mission", "show", folder.name, cwd=project)

    assert shown.code == 0, shown.stderr
    details = [line for line in shown.stdout_lines if line.startswith(("task_", "  log: "))]
    assert len(details) == 4  # task_3 never ran: nothing to say
    assert re.fullmatch(r"task_1: completed, 1 attempt\(s\), \d+\.\ds", details[0])
    assert details[1] == f"  log: {folder}/logs/task_1.log"
    assert re.fullmatch(
        r"task_2: failed, 2 attempt\(s\), \d+\.\ds: command failed: exit code 4", details[2]
    )
    assert details[3] == f"  log: {folder}/logs/task_2.log"


# -- rho mission log ----------------------------------------------------------------------------


def test_log_prints_a_task_log_by_folder_id_prefix_or_latest(project: Path) -> None:
    _run(project, spec("task_1", "printf 'one\\ntwo \\342\\234\\223\\n'; exit 1"))
    folder = mission_dir(project)

    results = [
        run_rho("mission", "log", name, "task_1", cwd=project)
        for name in (str(folder), folder.name, folder.name[:3], "latest")
    ]

    assert len({(r.code, r.stdout, r.stderr) for r in results}) == 1
    lines = results[0].stdout.splitlines()
    assert (results[0].code, results[0].stderr) == (0, "")
    assert lines[0].startswith("== rho: task_1 attempt 1: command sha256 ")
    assert lines[1:] == [
        "one",
        "two ✓",
        "== rho: task_1 attempt 1 failed: command failed: exit code 1 ==",
    ]


def test_log_shows_a_tasks_escape_sequences_to_a_terminal_and_passes_them_to_a_pipe(
    project: Path,
) -> None:
    # Before the fix: a task's window title and clear-screen reached the user's terminal as such.
    _run(project, spec("task_1", "printf 'title\\033]0;pwned\\007 clear\\033[2J\\ttab\\n'"))

    code, text = _in_a_terminal(("mission", "log", "latest", "task_1"), project)
    piped = run_rho("mission", "log", "latest", "task_1", cwd=project)

    assert code == 0, text
    assert "title\\x1b]0;pwned\\x07 clear\\x1b[2J\ttab" in text
    assert "\x1b" not in text.replace("\x1b[0m", "")  # nothing of the task's is obeyed
    assert "title\x1b]0;pwned\x07 clear\x1b[2J\ttab\n" in piped.stdout


@pytest.mark.parametrize(
    ("task", "message"),
    [
        ("nope", 'mission {id} has no task "nope"; its tasks: task_1, task_2'),
        ("task_2", "task task_2 of mission {id} has no log: it has not run yet"),
    ],
    ids=["unknown", "never-ran"],
)
def test_log_refuses_a_task_without_a_log(project: Path, task: str, message: str) -> None:
    _run(project, spec("task_1", "exit 1"), spec("task_2", "true", "task_1"))
    ident = mission_dir(project).name

    result = run_rho("mission", "log", ident, task, cwd=project)

    assert (result.code, result.stdout, result.stderr) == (
        2,
        "",
        f"error: {message.format(id=ident)}\n",
    )


def test_log_never_reads_through_a_link(project: Path, tmp_path: Path) -> None:
    _run(project, spec("task_1", "exit 1"))
    folder = mission_dir(project)
    secret = tmp_path / "secret.txt"
    secret.write_text("secret\n", encoding="utf-8")
    log = folder / "logs" / "task_1.log"
    log.unlink()
    log.symlink_to(secret)

    result = run_rho("mission", "log", folder.name, "task_1", cwd=project)

    assert (result.code, result.stdout) == (2, "")
    assert result.stderr == (
        f"error: refusing to use {log}: it is a symbolic link; rho follows no link in .rho\n"
    )


def test_log_follow_prints_until_its_task_ends(
    project: Path, tmp_path: Path, runs: RhoRuns
) -> None:
    go, hold = tmp_path / "go", tmp_path / "hold"
    task_1 = f"echo first; {wait_file_cmd(go)}; echo second"
    import_tasks(project, [spec("task_1", task_1), spec("task_2", wait_file_cmd(hold))])
    mission = runs.start("mission", "--from-tasks", cwd=project)
    log = project / ".rho" / "missions"
    wait_until(lambda: any("first" in p.read_text() for p in log.glob("*/logs/task_1.log")), "log")
    follower = runs.start("mission", "log", mission_dir(project).name, "task_1", "-f", cwd=project)
    printed = runs.folder / "rho-1.out"  # the second background run's stdout
    wait_until(
        lambda: printed.read_text().endswith("\nfirst\n"), "the follower to print the first line"
    )

    go.touch()
    followed = runs.wait(follower)

    assert (followed.code, followed.stderr) == (0, "")
    assert followed.stdout.splitlines()[1:] == [
        "first",
        "second",
        "== rho: task_1 attempt 1 passed: exit code 0 ==",
    ]
    assert mission.poll() is None  # task_2 still holds the mission: the follower ended with task_1
    hold.touch()
    assert runs.wait(mission).code == 0


def test_log_follow_ends_when_the_mission_stops_running(
    project: Path, tmp_path: Path, runs: RhoRuns
) -> None:
    up, go = tmp_path / "up", tmp_path / "go"
    task_1 = f"touch {q(up)}; {wait_file_cmd(go)}; exit 1"
    import_tasks(project, [spec("task_1", task_1), spec("task_2", "true", "task_1")])
    mission = runs.start("mission", "--from-tasks", cwd=project)
    wait_until(up.exists, "task_1 to start")
    follower = runs.start("mission", "log", "latest", "task_2", "--follow", cwd=project)
    waiting = f"waiting for task task_2 to start (mission {mission_dir(project).name} runs)\n"
    noted = runs.folder / "rho-1.err"  # the second background run's stderr
    wait_until(lambda: noted.read_text() == waiting, "the follower to wait for task_2")

    go.touch()

    assert runs.wait(mission).code == 1
    followed = runs.wait(follower)  # task_2 never ran; the mission ended: so does the follower
    assert (followed.code, followed.stdout, followed.stderr) == (0, "", waiting)


# -- missions by name --------------------------------------------------------------------------


def test_show_takes_a_folder_an_id_a_unique_prefix_or_latest(project: Path) -> None:
    _run(project, spec("task_1", "true"))
    older = mission_dir(project)
    _run(project, spec("task_2", "true"))
    (newer,) = [p for p in (project / ".rho" / "missions").iterdir() if p != older]

    headers = {
        name: run_rho("mission", "show", name, cwd=project).stdout_lines[0]
        for name in (str(older), older.name, older.name[:5], "latest")
    }

    assert headers == {
        str(older): f"mission {older.name}  completed",
        older.name: f"mission {older.name}  completed",
        older.name[:5]: f"mission {older.name}  completed",
        "latest": f"mission {newer.name}  completed",
    }


def test_an_ambiguous_prefix_names_its_candidates(project: Path) -> None:
    _run(project, spec("task_1", "true"))
    folder = mission_dir(project)
    other = folder.name[:2] + ("000000" if folder.name[2:] != "000000" else "111111")
    _twin(folder, other)
    record = (folder / "mission.json").read_bytes()

    result = run_rho("mission", "resume", folder.name[:2], cwd=project)

    first, second = sorted([folder.name, other])
    assert (result.code, result.stdout, result.stderr) == (
        2,
        "",
        f'error: mission name "{folder.name[:2]}" is ambiguous: it matches {first}, {second}; '
        "give more of the id\n",
    )
    assert (folder / "mission.json").read_bytes() == record


def test_one_id_in_two_folders_asks_for_the_folder(project: Path) -> None:
    _run(project, spec("task_1", "true"))
    folder = mission_dir(project)
    copy = folder.parent / "copy"
    shutil.copytree(folder, copy)

    result = run_rho("mission", "show", folder.name, cwd=project)

    folders = ", ".join(sorted([str(copy), str(folder)]))
    assert (result.code, result.stderr) == (
        2,
        f"error: mission {folder.name} has several folders: {folders}; name the folder instead\n",
    )


@pytest.mark.parametrize(
    "args",
    [
        ("show", "{name}"),
        ("resume", "{name}"),
        ("log", "{name}", "task_1"),
        ("merge", "{name}"),
        ("clean", "{name}"),
    ],
    ids=lambda args: args[0],
)
@pytest.mark.parametrize("like_an_id", [True, False], ids=["id", "folder"])
def test_every_mission_command_refuses_a_name_that_matches_nothing(
    project: Path, args: tuple[str, ...], like_an_id: bool
) -> None:
    _run(project, spec("task_1", "exit 1"))
    folder = mission_dir(project)
    # A prefix of no id (hex, but not how this mission's id starts), or a folder that is not.
    other_start = "1" if folder.name.startswith("0") else "0"
    name = f"{other_start}ab" if like_an_id else "no-such"
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}

    result = run_rho("mission", *(arg.format(name=name) for arg in args), cwd=project)

    message = (
        f"no mission matches \"{name}\"; 'rho mission list' shows the missions here"
        if like_an_id
        else f"no mission at {name}: mission.json missing"
    )
    assert (result.code, result.stdout, result.stderr) == (2, "", f"error: {message}\n")
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before


def test_latest_with_no_mission_and_an_id_outside_a_repository(tmp_path: Path) -> None:
    repo = tmp_path / "empty"
    repo.mkdir()
    subprocess.run(["git", "init", "--quiet", str(repo)], check=True)
    outside = tmp_path / "outside"
    outside.mkdir()

    none_yet = run_rho("mission", "show", "latest", cwd=repo)
    no_repo = run_rho("mission", "show", "1a2b", cwd=outside)

    assert (none_yet.code, none_yet.stderr) == (2, "error: no mission in this repository yet\n")
    assert (no_repo.code, no_repo.stderr) == (2, f"error: not a git repository: {outside}\n")


def test_resume_takes_a_prefix_and_runs_the_fixed_task(project: Path, tmp_path: Path) -> None:
    fixed = tmp_path / "fixed"
    assert _run(project, spec("task_1", f"test -e {q(fixed)} && echo done > done.txt")).code == 1
    folder = mission_dir(project).resolve()
    fixed.touch()

    result = run_rho("mission", "resume", folder.name[:4], cwd=project)

    assert (result.code, result.stderr) == (0, "")
    assert result.stdout_lines[-2:] == [
        f"mission {folder.name} completed: {folder}",
        f"next: rho mission merge {folder.name}",
    ]
    record = json.loads((folder / "mission.json").read_text())
    assert tree_files(project, record["integration_branch"])["done.txt"] == "done\n"


# -- the next command ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tasks", "options", "status", "code", "after"),
    [
        ([spec("task_1", "true")], (), "completed", 0, ["next: rho mission merge {id}"]),
        (
            [spec("task_1", "exit 1"), spec("task_2", "true")],
            (),
            "partial",
            1,
            ["next: rho mission show {id}", "then, after a fix: rho mission resume {id}"],
        ),
        (
            [spec("task_1", "exit 1")],
            (),
            "failed",
            1,
            ["next: rho mission show {id}", "then, after a fix: rho mission resume {id}"],
        ),
        (
            [spec("task_1", "sleep 30")],
            ("--timeout", "1s"),
            "cancelled",
            130,
            ["next: rho mission resume {id}"],
        ),
    ],
    ids=["completed", "partial", "failed", "cancelled"],
)
def test_every_run_ends_with_the_exact_next_command(
    project: Path,
    tasks: list[dict[str, object]],
    options: tuple[str, ...],
    status: str,
    code: int,
    after: list[str],
) -> None:
    result = _run(project, *tasks, options=options)

    folder = mission_dir(project).resolve()
    assert result.code == code, result.stderr
    assert result.stdout_lines[-1 - len(after) :] == [
        f"mission {folder.name} {status}: {folder}",
        *(line.format(id=folder.name) for line in after),
    ]
