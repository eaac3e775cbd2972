"""``--sandbox``: each task under bubblewrap, for real.

A sandboxed task may write its worktree and commit there; what it tries beyond (the task store,
mission.json, the user's checkout, ``.git/config``, the home folder, the network when cut,
daemons) fails inside the task and leaves every byte outside the worktree as it was. The
attacks of ``test_untrusted_tasks.py`` are tried from inside the sandbox too.

Where ``bwrap`` cannot start, these tests skip and say so (``tests/conftest.py``); CI installs
bubblewrap and makes them mandatory.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from rho_mission import Feature, Mission, MissionConfig
from support.repos import run_git, tree_files, user_snapshot
from support.rho import run_rho, wait_file_cmd
from support.stores import exclude_rho, import_tasks, mission_dir, spec, store_bytes, store_tasks

pytestmark = pytest.mark.usefixtures("no_leftover_tasks", "bwrap")

MARK = "SANDBOX-ESCAPED"
# The shell's way of writing MARK: the commands the store keeps do not hold MARK itself.
MARKING = "$(printf 'SANDBOX-%s' ESCAPED)"


def q(path: Path | str) -> str:
    return shlex.quote(str(path))


def _outside(project: Path, home: Path) -> dict[str, bytes]:
    # Every byte outside the worktrees that a task could aim at, but the files rho itself
    # rewrites as the mission runs (the store, mission.json): those are checked for the mark.
    paths = [project / "file0000.txt", project / ".git" / "config", home / "notes.txt"]
    return {str(path): path.read_bytes() for path in paths}


def _home() -> Path:
    home = Path(os.environ["HOME"])
    (home / "notes.txt").write_text("the user's notes\n")
    return home


def test_a_sandboxed_task_writes_its_worktree_and_nothing_else(project: Path) -> None:
    home = _home()
    attempts = [
        f"echo {MARKING} >> {q(project / '.rho' / 'tasks.json')}",
        f'echo {MARKING} >> "$RHO_MISSION_DIR/mission.json"',
        f"echo {MARKING} > {q(project / 'file0000.txt')}",
        f"echo '[core]' {MARKING} >> {q(project / '.git' / 'config')}",
        f"echo {MARKING} > {q(home / 'notes.txt')}",
    ]
    tries = "; ".join(f"( {attempt} ) 2>/dev/null && echo ESCAPED" for attempt in attempts)
    work = "echo mine > mine.txt && git add mine.txt && git commit -qm 'the agent commits'"
    import_tasks(project, [spec("a", f"{tries}; {work}"), spec("b", "cat mine.txt", "a")])
    before = (_outside(project, home), user_snapshot(exclude_rho(project)))
    result = run_rho("mission", "--from-tasks", "--sandbox", cwd=project)
    assert result.code == 0, result.stderr
    assert (_outside(project, home), user_snapshot(project)) == before
    log = (mission_dir(project) / "logs" / "a.log").read_text()
    assert "ESCAPED" not in log, log
    assert MARK.encode() not in store_bytes(project)
    assert MARK not in (mission_dir(project) / "mission.json").read_text()
    assert run_rho("mission", "merge", "latest", cwd=project).code == 0
    assert tree_files(project, "HEAD")["mine.txt"] == "mine\n"
    assert "the agent commits" in run_git(project, "log", "--format=%s")


def test_the_attacks_of_a_hostile_task_fail_inside_the_sandbox(project: Path) -> None:
    # The daemon sleeps for a time no other process here does: found by its command line.
    daemon = (
        '( setsid env -i sh -c "echo \\$\\$ > daemon.pid; exec sleep 301.25" & ); '
        f"{wait_file_cmd(Path('daemon.pid'))}; rm daemon.pid; echo daemon > daemon.txt"
    )
    attacks = [
        spec("gitfile", 'echo "gitdir: $(git rev-parse --git-common-dir)" > .git'),
        spec("link", f'w="$RHO_WORKTREE"; cd /; rm -rf "$w"; ln -s {q(project)} "$w"; true'),
        spec("logs", 'cd "$RHO_MISSION_DIR" && rm -rf logs && ln -s /tmp logs; true'),
        spec("daemon", daemon),
        spec("after", "echo after > after.txt", "logs"),
    ]
    import_tasks(project, attacks)
    before = user_snapshot(exclude_rho(project))
    result = run_rho("mission", "--from-tasks", "--sandbox", "--keep-going", cwd=project)
    assert result.code == 1, result.stderr
    assert user_snapshot(project) == before
    tasks = store_tasks(project)
    # Its worktree is a mount point: the task empties it (its .git file too), links nothing.
    for name in ("gitfile", "link"):
        assert "was tampered with" in tasks[name]["lastError"]
    # The mission folder is an empty read-only view: rho's own is untouched.
    assert [tasks[name]["status"] for name in ("logs", "after", "daemon")] == ["completed"] * 3
    assert (mission_dir(project) / "logs").is_dir()
    assert not (mission_dir(project) / "logs").is_symlink()
    assert _running("sleep", "301.25") == [], "a daemon of the sandbox outlived it"


def test_a_sandboxed_task_reaches_no_other_worktree_of_the_pool(project: Path) -> None:
    # A spotless pooled worktree moves to its next start by what differs: a file
    # another task edited there while it was idle, and the next start does not change, would
    # stay. Under the sandbox the other worktrees (below the hidden .rho/) are out of reach.
    (project / "Makefile").write_text("all:\n\techo good > made.txt\n")
    run_git(project, "add", "Makefile")
    run_git(project, "commit", "--quiet", "--message=Makefile")
    poison = (
        'echo "SEEN $(ls -d "$(dirname "$RHO_WORKTREE")"/*/ | wc -l)"; '
        'for m in "$(dirname "$RHO_WORKTREE")"/*/; do '
        '[ "$(cd "$m" && pwd)" = "$(pwd)" ] && continue; '
        f"printf 'all:\\n\\techo {MARKING} > made.txt\\n' > \"$m/Makefile\" "
        "2>/dev/null && echo ESCAPED; done; true"
    )
    build = 'make -s && mv made.txt "made-by-$RHO_TASK_ID.txt"'
    tasks = [
        spec("a", "echo a > a.txt"),
        spec("b", "echo b > b.txt"),
        spec("c_poison", poison, "a", "b"),
        spec("d_build", build, "c_poison"),
        spec("e_build", build, "c_poison"),
    ]
    import_tasks(project, tasks)
    result = run_rho("mission", "--from-tasks", "--sandbox", "--workers", "2", cwd=project)
    assert result.code == 0, result.stderr
    log = (mission_dir(project) / "logs" / "c_poison.log").read_text()
    # It sees its own worktree there (the look is live: without the sandbox, it sees both and
    # the poison lands), and no other.
    assert "SEEN 1\n" in log, log
    assert "ESCAPED" not in log, log
    assert run_rho("mission", "merge", "latest", cwd=project).code == 0
    files = tree_files(project, "HEAD")
    assert (files["made-by-d_build.txt"], files["made-by-e_build.txt"]) == ("good\n", "good\n")


def _running(*argv: str) -> list[int]:
    # The live processes whose command line is *argv*.
    wanted = ("\0".join(argv) + "\0").encode()
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                cmdline = Path(entry.path, "cmdline").read_bytes()
            except OSError:
                continue
            if cmdline == wanted:
                found.append(int(entry.name))
    return found


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that accepts connections until the test ends; its port."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    done = threading.Event()

    def serve() -> None:
        while not done.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    done.set()
    thread.join()
    server.close()


@pytest.mark.parametrize(
    ("flag", "connects"), [("--sandbox", True), ("--sandbox-no-network", False)]
)
def test_the_network_is_kept_unless_cut(
    project: Path, listener: int, flag: str, connects: bool
) -> None:
    dial = f"import socket; socket.create_connection(('127.0.0.1', {listener}), timeout=5)"
    # The system's python3: this test's own may live under /tmp, which the sandbox replaces.
    import_tasks(project, [spec("a", f"python3 -c {q(dial)}")])
    result = run_rho("mission", "--from-tasks", flag, cwd=project)
    assert result.code == (0 if connects else 1), result.stdout
    assert (
        json.loads((mission_dir(project) / "mission.json").read_text())["config"]["sandbox_network"]
        is connects
    )


def test_a_missing_bwrap_is_one_error_line_and_nothing_starts(
    project: Path, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin-without-bwrap"
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(run_git(project, "--exec-path").strip() + "/git")
    import_tasks(project, [spec("a", "true")])
    before = store_bytes(project)
    result = run_rho(
        "mission", "--from-tasks", "--sandbox", cwd=project, env={"PATH": str(bin_dir)}
    )
    assert result.code == 2
    assert result.stderr_lines == [
        "error: --sandbox needs bubblewrap, and no 'bwrap' is on PATH: install the "
        "'bubblewrap' package (Debian: apt-get install bubblewrap)"
    ]
    assert store_bytes(project) == before
    assert not (project / ".rho" / "missions").exists()


def test_resume_refuses_a_mission_json_that_dropped_its_sandbox(project: Path) -> None:
    import_tasks(project, [spec("a", "exit 1")])
    assert run_rho("mission", "--from-tasks", "--sandbox", cwd=project).code == 1
    record = mission_dir(project) / "mission.json"
    document = json.loads(record.read_text())
    document["config"]["sandbox"] = False
    record.write_text(json.dumps(document))
    result = run_rho("mission", "resume", "latest", cwd=project)
    assert result.code == 2
    assert result.stderr_lines[0].startswith(
        f"error: mission {mission_dir(project).name} started with --sandbox"
    )


def test_the_library_runs_shell_tasks_in_the_sandbox(project: Path) -> None:
    checkout = project / "file0000.txt"
    before = user_snapshot(exclude_rho(project))
    mission = Mission.new(
        project,
        "sandboxed",
        [
            Feature(
                "a",
                "write",
                command=f"echo {MARKING} > {q(checkout)}; echo ok > a.txt",
            )
        ],
        MissionConfig(sandbox=True),
    )
    mission.run_staged_sync(waves=[["a"]])
    assert mission.status == "completed"
    assert user_snapshot(project) == before
    assert mission.features[0].handoff is not None
    assert mission.features[0].handoff.files_changed == ["a.txt"]


def test_a_sandboxed_task_reads_its_prompt_and_nothing_else_of_the_mission(project: Path) -> None:
    peek = (
        'cat "$RHO_TASK_PROMPT_FILE" > seen.txt; ls -A "$RHO_MISSION_DIR" > listed.txt; '
        'ls -A "$RHO_MISSION_DIR/usage" > usage.txt'
    )
    import_tasks(project, [spec("a", peek)])
    assert run_rho("mission", "--from-tasks", "--sandbox", cwd=project).code == 0
    assert run_rho("mission", "merge", "latest", cwd=project).code == 0
    files = tree_files(project, "HEAD")
    assert files["seen.txt"].startswith("# do a\n")
    # Its prompt, and the folder of its own $RHO_USAGE_FILE (writable), nothing else.
    assert files["listed.txt"] == "prompts\nusage\n"
    assert files["usage.txt"] == "a.task.1\n"


def test_the_dask_executor_runs_its_tasks_in_the_sandbox_too(project: Path) -> None:
    remote = project.parent / "remote.git"
    run_git(project.parent, "init", "--quiet", "--bare", str(remote))
    run_git(project, "remote", "add", "origin", str(remote))
    checkout = project / "file0000.txt"
    command = f"( echo {MARKING} > {q(checkout)} ) 2>/dev/null && exit 3; echo ok > ok.txt"
    import_tasks(project, [spec("a", command)])
    before = user_snapshot(exclude_rho(project))
    result = run_rho(
        "mission", "--from-tasks", "--sandbox", "--executor", "dask", "--local-cluster", "1",
        cwd=project,
    )  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    assert user_snapshot(project) == before
    integration = f"rho-mission/{mission_dir(project).name}/integration"
    assert tree_files(project, integration)["ok.txt"] == "ok\n"


def test_a_script_under_tmp_is_not_found_in_the_sandbox_until_shown(
    project: Path, tmp_path: Path
) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    script = tools / "work.sh"
    script.write_text("#!/bin/sh\necho done > done.txt\n")
    script.chmod(0o755)
    import_tasks(project, [spec("a", q(script))])
    hidden = run_rho("mission", "--from-tasks", "--sandbox", cwd=project)
    assert hidden.code == 1
    [feature] = json.loads((mission_dir(project) / "mission.json").read_text())["features"]
    assert feature["error"] == (
        "command failed: exit code 127 (not found inside the sandbox: its /tmp is private and a "
        "path outside the worktree, the checkout and the system is hidden; --sandbox-allow PATH "
        "shows it)"
    )
    # A new mission on the same store, the folder shown: the task runs and lands.
    args = ("mission", "--from-tasks", "--sandbox", "--sandbox-allow", str(tools))
    shown = run_rho(*args, cwd=project)
    assert shown.code == 0, shown.stdout + shown.stderr
