"""A task is untrusted code: nothing it leaves makes rho act outside its worktree.

Each test is an attack a hostile (or careless) agent can make from inside its task, run as a
real mission of the real ``rho``: rewrite the worktree's ``.git`` file, point it at a git
directory with a filter of the task's, ``rm -rf .git && git init``, replace the worktree
folder with a link to another checkout of the user's, swap a folder of the mission directory
for a link, write through a ``.rho`` link with ``rho task``, leave daemons that drop every mark
(``setsid``, ``env -i``, a new process title, a double fork), and edit mission.json so that a
resume runs without the signed plan the mission started with. No ``--sandbox`` here: these are
what rho itself guarantees (``test_sandbox.py`` has the rest).
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from support.procs import pid_gone
from support.repos import run_git, user_snapshot
from support.rho import RhoRuns, read_pid, run_rho, wait_file_cmd, wait_until
from support.stores import exclude_rho, import_tasks, mission_dir, spec, store_bytes, store_tasks

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")

TAMPERED = "was tampered with"


def q(path: Path) -> str:
    return shlex.quote(str(path))


@pytest.fixture
def dirty(project: Path) -> Path:
    """The user's checkout with a staged, an unstaged and an untracked change, and an ignored
    file: everything a checkout, a clean or a commit in the wrong place would destroy."""
    (project / "staged.txt").write_text("staged\n")
    run_git(project, "add", "staged.txt")
    (project / "file0000.txt").write_text("unstaged edit\n")
    (project / "untracked.txt").write_text("untracked\n")
    (project / ".gitignore").write_text("local.env\n")
    (project / "local.env").write_text("SECRET=1\n")
    return exclude_rho(project)


def _files(root: Path) -> dict[str, bytes]:
    # Every file of the checkout but rho's own folder and git's: what the user would miss.
    found = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if relative.parts[0] not in (".rho", ".git") and path.is_file():
            found[str(relative)] = path.read_bytes()
    return found


def _state(root: Path) -> tuple[str, dict[str, bytes]]:
    return user_snapshot(root), _files(root)


def _failed_with(project: Path, task_id: str, problem: str) -> None:
    error = store_tasks(project)[task_id]["lastError"]
    assert TAMPERED in error, error
    assert problem in error, error


def test_a_rewritten_git_file_fails_its_task_and_leaves_the_users_head_and_index(
    dirty: Path,
) -> None:
    # The reproduction of the issue: the .git file aimed at the user's own git directory.
    rewrite = 'echo "gitdir: $(git rev-parse --path-format=absolute --git-common-dir)" > .git'
    import_tasks(dirty, [spec("a", rewrite), spec("b", "echo b > b.txt", "a")])
    before = _state(dirty)
    result = run_rho("mission", "--from-tasks", "--workers", "1", cwd=dirty)
    assert result.code == 1, result.stderr
    assert _state(dirty) == before
    _failed_with(dirty, "a", "its .git file was rewritten or replaced")
    assert store_tasks(dirty)["b"]["status"] == "pending"


def test_a_filter_of_the_tasks_own_git_dir_never_runs_from_rhos_git(
    dirty: Path, marks: Path
) -> None:
    # The task's git dir defines a clean filter for *.txt; rho's "git add" would run it.
    planted = marks / "filter-ran"
    attack = (
        "git init -q evil && "
        f"printf '[filter \"x\"]\\n\\tclean = touch {planted}; cat\\n' >> evil/.git/config && "
        "rm .git && mv evil/.git .git && echo '*.txt filter=x' > .gitattributes && "
        "echo hi > f.txt"
    )
    import_tasks(dirty, [spec("a", attack)])
    before = _state(dirty)
    assert run_rho("mission", "--from-tasks", cwd=dirty).code == 1
    assert not planted.exists(), "rho ran the task's filter"
    assert _state(dirty) == before
    _failed_with(dirty, "a", "its .git file was rewritten or replaced")


def test_an_agent_that_runs_git_init_in_its_worktree_fails_with_one_clear_line(
    project: Path,
) -> None:
    import_tasks(exclude_rho(project), [spec("a", "rm -rf .git && git init -q && echo x > x.txt")])
    before = _state(project)
    result = run_rho("mission", "--from-tasks", cwd=project)
    assert result.code == 1
    line = next(line for line in result.stdout_lines if line.startswith("a failed: "))
    assert TAMPERED in line, result.stdout
    assert line.endswith("rho ran no git there"), result.stdout
    assert _state(project) == before


def test_a_worktree_replaced_by_a_link_to_the_main_checkout_is_never_worked_through(
    dirty: Path,
) -> None:
    attack = f'w="$RHO_WORKTREE"; cd /; rm -rf "$w"; ln -s {q(dirty)} "$w"'
    import_tasks(dirty, [spec("a", attack), spec("b", "echo b > b.txt", "a")])
    before = _state(dirty)
    assert run_rho("mission", "--from-tasks", cwd=dirty).code == 1
    assert _state(dirty) == before, "rho checked out, cleaned or committed the user's checkout"
    _failed_with(dirty, "a", "its folder is a symbolic link")
    assert run_git(dirty, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_a_worktree_replaced_by_a_link_to_another_worktree_of_the_user_is_left_alone(
    project: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    run_git(project, "worktree", "add", "--quiet", "-b", "side", str(other))
    (other / ".gitignore").write_text("local.env\n")
    (other / "local.env").write_text("SECRET=1\n")
    (other / "file0000.txt").write_text("uncommitted edit\n")
    attack = f'w="$RHO_WORKTREE"; cd /; rm -rf "$w"; ln -s {q(other)} "$w"'
    # Two tasks in one wave, one worker: the second would reuse the first's worktree.
    import_tasks(project, [spec("a", attack), spec("b", "echo b > b.txt")])
    before = _state(other)
    assert run_rho("mission", "--from-tasks", "--workers", "1", cwd=project).code == 1
    assert _state(other) == before
    assert store_tasks(project)["b"]["status"] == "completed"


def test_a_mission_folder_swapped_for_a_link_mid_run_is_never_written_through(
    project: Path, tmp_path: Path
) -> None:
    # Wave 1 swaps logs/ and prompts/ for links to a folder of the user's; wave 2's task must
    # not have its log created there, nor its prompt written over the user's file.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "task_2.md").write_text("the user's notes\n")
    swap = (
        'cd "$RHO_MISSION_DIR" && rm -rf logs prompts && '
        f"ln -s {q(elsewhere)} logs && ln -s {q(elsewhere)} prompts"
    )
    import_tasks(project, [spec("task_1", swap), spec("task_2", "echo two > two.txt", "task_1")])
    result = run_rho("mission", "--from-tasks", cwd=project)
    assert result.code == 1, result.stderr
    assert sorted(p.name for p in elsewhere.iterdir()) == ["task_2.md"]
    assert (elsewhere / "task_2.md").read_text() == "the user's notes\n"
    # Caught at task_1's own end: rho's last line of its attempt goes to logs/, now a link.
    error = store_tasks(project)["task_1"]["lastError"]
    assert "is a symbolic link; rho follows no link in .rho" in error, error


def test_rho_task_never_writes_through_a_rho_link(project: Path, tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir(mode=0o755)
    (target / "tasks.json").write_text('{"tasks": []}\n')
    (project / ".rho").symlink_to(target)
    before = (target / "tasks.json").read_bytes()
    result = run_rho("task", "add", "a", cwd=project)
    assert result.code == 2
    assert len(result.stderr_lines) == 1, result.stderr
    assert result.stderr_lines[0].startswith("error: ")
    assert "symbolic link" in result.stderr
    assert (target / "tasks.json").read_bytes() == before
    assert stat.S_IMODE(target.stat().st_mode) == 0o755, "rho chmodded the link's target"


ESCAPES = (
    # A new process title overwrites the environment area; env -i drops it; a double fork
    # leaves a daemon whose parents are gone.
    '( setsid perl -e \'$|=1; $0="x"x3000; print "$$\\n"; sleep 300\' > {marks}/perl.pid & ); '
    '( setsid env -i sh -c "echo \\$\\$ > {marks}/envi.pid; exec sleep 300" & ); '
    "sh -c \"(sh -c 'echo \\$\\$ > {marks}/daemon.pid; exec sleep 300' &) &\"; "
)


_PID_FILES = ("perl.pid", "envi.pid", "daemon.pid")


def _escapes(marks: Path) -> str:
    # The daemons, and a wait until each has written its pid (the task must not end first; the
    # redirection makes perl.pid before perl has written to it).
    waits = "; ".join(wait_file_cmd(marks / name, written=True) for name in _PID_FILES)
    return ESCAPES.format(marks=q(marks)) + waits + "; "


def _escaped(marks: Path) -> list[int]:
    return [read_pid(marks / name) for name in _PID_FILES]


def test_no_daemon_of_a_task_outlives_the_mission(project: Path, marks: Path) -> None:
    import_tasks(project, [spec("a", _escapes(marks) + "echo a > a.txt")])
    result = run_rho("mission", "--from-tasks", cwd=project)
    assert result.code == 0, result.stderr
    pids = _escaped(marks)
    assert all(pid_gone(pid) for pid in pids), f"still alive: {pids}"


def test_a_second_signal_kills_the_daemons_that_dropped_every_mark(
    project: Path, marks: Path, runs: RhoRuns
) -> None:
    started = marks / "started"
    hold = _escapes(marks) + f"touch {q(started)}; sleep 300"
    import_tasks(project, [spec("a", hold)])
    mission = runs.start("mission", "--from-tasks", "--grace", "60s", cwd=project)
    wait_until(started.exists, "the task to start its daemons")
    pids = _escaped(marks)
    mission.send_signal(signal.SIGINT)
    mission.send_signal(signal.SIGINT)  # no grace: SIGKILL at once
    assert runs.wait(mission).code == 130
    wait_until(lambda: all(pid_gone(pid) for pid in pids), "every daemon to be killed")


def test_a_timed_out_task_takes_its_term_ignoring_daemon_along(project: Path, marks: Path) -> None:
    stubborn = (
        f'( setsid env -i sh -c \'trap "" TERM; echo $$ > {q(marks)}/stubborn.pid; '
        "while :; do sleep 1; done' & ); sleep 300"
    )
    import_tasks(project, [spec("a", stubborn)])
    result = run_rho(
        "mission", "--from-tasks", "--task-timeout", "1s", "--grace", "1s", cwd=project
    )
    assert result.code == 1
    assert pid_gone(read_pid(marks / "stubborn.pid"))


def _sign(project: Path, key: Path, name: str) -> Path:
    plan = project.parent / name
    result = run_rho("mission", "plan", "--sign", str(key), "--out", str(plan), cwd=project)
    assert result.code == 0, result.stderr
    return plan


SEED_HEX = "1f" * 32
ATTACKER_SEED_HEX = "2e" * 32
TRUSTED = "43046bfe4092b3e94994eada15dcc20d8aaa07b658fd3954eb8e0efb8bdca5de"


def _plan_removed(project: Path, config: dict[str, object]) -> None:
    config["signed_plan"] = None


def _signed_by_the_attacker(project: Path, config: dict[str, object]) -> None:
    # The task signs the changed store with a key of its own and makes that key the trusted one.
    key = project.parent / "attacker.key"
    key.write_text(ATTACKER_SEED_HEX + "\n")
    plan = _sign(project, key, "attacker-plan.json")
    seed = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(ATTACKER_SEED_HEX))
    public = seed.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()
    config.update(signed_plan=str(plan), trusted_keys=[public])


@pytest.mark.parametrize("weaken", [_plan_removed, _signed_by_the_attacker])
def test_resume_refuses_a_mission_json_that_dropped_its_signed_plan(
    project: Path, weaken: Callable[[Path, dict[str, object]], None]
) -> None:
    key = project.parent / "issuer.key"
    key.write_text(SEED_HEX + "\n")
    import_tasks(project, [spec("one", "exit 1")])
    plan = _sign(project, key, "plan.json")
    flags = ("--require-signed-plan", str(plan), "--trusted-key", TRUSTED)
    assert run_rho("mission", "--from-tasks", *flags, cwd=project).code == 1
    assert run_rho("task", "update", "one", "--command", "echo UNSIGNED > pwned.txt",
                   cwd=project).code == 0  # fmt: skip
    record = mission_dir(project) / "mission.json"
    document = json.loads(record.read_text())
    weaken(project, document["config"])
    record.write_text(json.dumps(document))
    before = (record.read_bytes(), store_bytes(project))
    result = run_rho("mission", "resume", "latest", cwd=project)
    assert result.code == 2
    assert len(result.stderr_lines) == 1, result.stderr
    assert result.stderr_lines[0].startswith(
        f"error: mission {mission_dir(project).name} started bound to a signed plan"
    )
    assert (record.read_bytes(), store_bytes(project)) == before
    integration = f"rho-mission/{mission_dir(project).name}/integration"
    assert "pwned.txt" not in run_git(project, "ls-tree", "-r", "--name-only", integration)


def test_a_resumed_mission_keeps_its_guarantees_record_private(project: Path) -> None:
    import_tasks(project, [spec("a", "true")])
    assert run_rho("mission", "--from-tasks", cwd=project).code == 0
    common_dir = run_git(project, "rev-parse", "--path-format=absolute", "--git-common-dir")
    common = Path(common_dir.strip())
    record = common / f"rho-mission-{mission_dir(project).name}.guarantees.json"
    assert stat.S_IMODE(os.stat(record).st_mode) == 0o600
    assert json.loads(record.read_text())["sandbox"] is False


def test_a_task_that_floods_its_log_keeps_the_head_and_tail_within_the_limit(
    project: Path,
) -> None:
    flood = 'echo START; head -c 3000000 /dev/zero | tr "\\0" x; echo; echo END; exit 3'
    import_tasks(project, [spec("a", flood)])
    result = run_rho("mission", "--from-tasks", "--log-limit", "8K", cwd=project)
    assert result.code == 1
    log = (mission_dir(project) / "logs" / "a.log").read_bytes()
    written = len("START\n") + 3_000_000 + len("\nEND\n")
    note = (
        f"\n[rho: {written - 8192} bytes of output cut here; the log keeps the first and the "
        "last 4096 bytes (--log-limit)]\n"
    ).encode()
    # The cap is the task's output's; rho's line before and after the attempt stand outside it.
    first, output = log.split(b"\n", 1)
    output, last = output[:-1].rsplit(b"\n", 1)
    output += b"\n"
    assert first.startswith(b"== rho: a attempt 1: ")
    assert last == b"== rho: a attempt 1 failed: command failed: exit code 3 =="
    assert output.startswith(b"START\nxxx")
    assert output.endswith(b"xxx\nEND\n")
    assert note in output
    assert len(output) == 8192 + len(note)
    assert "| END" in result.stdout, "the failure's tail is the task's last lines"


def test_a_log_limit_below_4k_is_refused(project: Path) -> None:
    import_tasks(project, [spec("a", "true")])
    result = run_rho("mission", "--from-tasks", "--log-limit", "100", cwd=project)
    assert result.code == 2
    assert result.stderr_lines[0] == (
        "error: Invalid value for '--log-limit': '100' is below the smallest log limit, 4K"
    )
    assert not (project / ".rho" / "missions").exists()
