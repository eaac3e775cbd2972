"""A worktree ready to work in: ``--setup``, ``--setup-key``, ``--copy``, kept outputs.

Real ``rho`` processes in real repositories, real setup commands and a real pool of worktrees.
A setup counts its runs by appending a line to a file outside the repository (``marks/``).
"""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.repos import run_git, tree_files
from support.rho import run_rho
from support.stores import import_tasks, journal_events, spec, store_bytes

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")

SECRET = "SECRET=k3y-that-never-leaves"


@pytest.fixture
def app(project: Path) -> Path:
    """The project: ``.venv/`` and ``__pycache__/`` ignored, a lockfile, an untracked ``.env``
    that no ``.gitignore`` covers (mode 0600)."""
    (project / ".gitignore").write_text(".venv/\n__pycache__/\n", encoding="utf-8")
    (project / "lock.txt").write_text("deps 1\n", encoding="utf-8")
    run_git(project, "add", "--all")
    run_git(project, "commit", "--quiet", "--message=project")
    env_file = project / ".env"
    env_file.write_text(SECRET + "\n", encoding="utf-8")
    env_file.chmod(0o600)
    return project


def _setup(marks: Path, body: str = "mkdir -p .venv && printf good > .venv/tool") -> str:
    return f"{body} && echo ran >> {marks}/setups"


def _setups(marks: Path) -> int:
    path = marks / "setups"
    return len(path.read_text().splitlines()) if path.exists() else 0


def _missions(project: Path) -> list[dict[str, Any]]:
    """Every mission of *project*, oldest first."""
    folders = (project / ".rho" / "missions").iterdir()
    found = [json.loads((folder / "mission.json").read_text()) for folder in folders]
    return sorted(found, key=lambda mission: mission["started_at"])


def _outcomes(mission: dict[str, Any]) -> dict[str, str]:
    return {f["id"]: f["setup"]["outcome"] for f in mission["features"] if f["setup"]}


def _run(project: Path, *args: str) -> None:
    done = run_rho("mission", "--from-tasks", *args, cwd=project)
    assert done.code == 0, done.stderr + done.stdout


def _uses_venv(index: int) -> str:
    return f"test -f .venv/tool && grep -q SECRET .env && echo {index} > out{index}.txt"


def test_the_setup_runs_once_per_worktree_and_a_second_mission_reuses_it(
    app: Path, marks: Path
) -> None:
    import_tasks(app, [spec(f"t{i}", _uses_venv(i)) for i in range(1, 7)])
    options = ("--setup", _setup(marks), "--setup-key", "lock.txt", "--copy", ".env")
    _run(app, *options, "--workers", "2")
    [first] = _missions(app)
    outcomes = _outcomes(first)
    ran = [fid for fid, outcome in outcomes.items() if outcome == "ran"]
    worktrees = {f["setup"]["worktree"] for f in first["features"]}
    assert len(outcomes) == 6
    assert set(outcomes.values()) <= {"ran", "reused"}
    assert len(ran) == len(worktrees) == _setups(marks) <= 2  # one setup per worktree
    assert first["config"]["setup_key"] == ["lock.txt"]
    assert first["config"]["copy_paths"] == [".env"]
    files = tree_files(app, first["integration_branch"])
    assert {f"out{i}.txt" for i in range(1, 7)} <= set(files)
    assert not any(name.startswith((".venv", ".env")) for name in files)
    # The second mission's tasks find their worktrees set up: no setup runs.
    import_tasks(app, [spec(f"u{i}", _uses_venv(i + 10)) for i in range(1, 3)])
    _run(app, *options, "--workers", "2")
    second = _missions(app)[1]
    assert set(_outcomes(second).values()) == {"reused"}
    assert _setups(marks) == len(ran)
    listed = json.loads(run_rho("worktrees", "list", "--json", cwd=app).stdout)["worktrees"]
    assert {tree["name"] for tree in listed} >= worktrees
    assert all(tree["outputs"] == [".venv"] and tree["setup_key"] for tree in listed)
    assert all(tree["holder"] == "idle" and tree["size"] > 0 for tree in listed)
    shown = run_rho("mission", "show", "latest", cwd=app).stdout
    assert "ran 0, reused 2, failed 0 (per task's last attempt)" in shown
    assert "(its key held, its outputs unchanged)" in shown


def test_a_changed_key_file_or_command_runs_the_setup_again(app: Path, marks: Path) -> None:
    import_tasks(app, [spec("t1", _uses_venv(1))])
    options = ("--setup", _setup(marks), "--setup-key", "lock.txt", "--workers", "1")
    _run(app, *options, "--copy", ".env")
    assert _setups(marks) == 1
    (app / "lock.txt").write_text("deps 2\n", encoding="utf-8")  # a new lockfile on main
    run_git(app, "commit", "--quiet", "--all", "--message=bump")
    import_tasks(app, [spec("t2", _uses_venv(2))])
    _run(app, *options, "--copy", ".env")
    assert _setups(marks) == 2
    assert _outcomes(_missions(app)[-1]) == {"t2": "ran"}
    # The same files, another command: another key.
    import_tasks(app, [spec("t3", _uses_venv(3))])
    other = _setup(marks, "mkdir -p .venv && printf good > .venv/tool && true")
    _run(app, "--setup", other, "--setup-key", "lock.txt", "--copy", ".env")
    assert _setups(marks) == 3
    # Unchanged: reused.
    import_tasks(app, [spec("t4", _uses_venv(4))])
    _run(app, "--setup", other, "--setup-key", "lock.txt", "--copy", ".env")
    assert _setups(marks) == 3
    assert _outcomes(_missions(app)[-1]) == {"t4": "reused"}


def test_a_task_that_edits_a_kept_output_does_not_reach_the_next_feature(
    app: Path, marks: Path
) -> None:
    # One worker: every task runs in the same worktree, one after the other.
    backup = marks / "tool.backup"
    forge = f"cp -p .venv/tool {backup} && printf evil > .venv/tool && touch -r {backup} .venv/tool"
    check = "grep -qx good .venv/tool && test ! -e .venv/planted.pth"
    tasks = [
        spec("t1", forge),  # same size, same mtime: only the change time tells
        spec("t2", check, "t1"),
        spec("t3", "echo 'import evil' > .venv/planted.pth", "t2"),
        spec("t4", check, "t3"),
        spec("t5", check, "t4"),
    ]
    import_tasks(app, tasks)
    _run(app, "--setup", _setup(marks), "--workers", "1")
    [mission] = _missions(app)
    assert {f["id"]: f["status"] for f in mission["features"]} == dict.fromkeys(
        ["t1", "t2", "t3", "t4", "t5"], "completed"
    )
    # Set up for t1; again for t2 after t1's forgery, and for t4 after t3's plant; t3 and t5
    # find the outputs as the setup left them.
    assert _outcomes(mission) == {
        "t1": "ran",
        "t2": "ran",
        "t3": "reused",
        "t4": "ran",
        "t5": "reused",
    }
    assert _setups(marks) == 3
    # The forgery never became work: the kept outputs are not committed.
    assert mission["features"][0]["handoff"]["files_changed"] == []


def test_a_failed_setup_fails_its_features_with_its_log_tail_and_resume_tries_again(
    app: Path, marks: Path
) -> None:
    import_tasks(app, [spec("t1", _uses_venv(1)), spec("t2", _uses_venv(2), "t1")])
    gate = marks / "toolchain"
    setup = (
        f"{{ test -e {gate} || {{ echo 'no toolchain on this machine'; exit 3; }}; }} && "
        "mkdir -p .venv && printf good > .venv/tool"
    )
    done = run_rho("mission", "--from-tasks", "--setup", _setup(marks, setup), "--copy", ".env",
                   cwd=app)  # fmt: skip
    assert done.code == 1
    [mission] = _missions(app)
    t1 = mission["features"][0]
    assert t1["status"] == "failed"
    assert t1["setup"]["outcome"] == "failed"
    assert t1["error"].startswith(f"setup failed in worktree {t1['setup']['worktree']} (logs/")
    assert "command failed: exit code 3" in t1["error"]
    assert t1["error"].endswith("its output ends: no toolchain on this machine")
    assert "\n" not in t1["error"]
    log = Path(mission["dir"]) / "logs" / "setup" / f"{t1['setup']['worktree']}.log"
    assert "no toolchain on this machine" in log.read_text()
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    shown = run_rho("mission", "show", "latest", cwd=app).stdout
    assert f"setup: failed in worktree {t1['setup']['worktree']}" in shown
    assert "setup log: " in shown
    gate.touch()
    resumed = run_rho("mission", "resume", "latest", cwd=app)
    assert resumed.code == 0, resumed.stderr
    [mission] = _missions(app)
    assert _outcomes(mission)["t1"] == "ran"
    assert [f["status"] for f in mission["features"]] == ["completed", "completed"]
    assert mission["config"]["setup_command"] == _setup(marks, setup)  # kept by resume


def test_a_setup_that_leaves_files_git_does_not_ignore_fails(app: Path, marks: Path) -> None:
    import_tasks(app, [spec("t1", "true")])
    setup = _setup(marks, "mkdir -p .venv && echo built > build-stamp.txt")
    done = run_rho("mission", "--from-tasks", "--setup", setup, cwd=app)
    assert done.code == 1
    error = _missions(app)[0]["features"][0]["error"]
    assert "the setup left files git does not ignore: build-stamp.txt" in error


def test_a_setup_runs_under_the_task_timeout(app: Path) -> None:
    import_tasks(app, [spec("t1", "true")])
    done = run_rho(
        "mission", "--from-tasks", "--setup", "sleep 30", "--task-timeout", "1s", cwd=app
    )
    assert done.code == 1
    error = _missions(app)[0]["features"][0]["error"]
    assert "timed out after 1s" in error
    assert journal_events(Path(_missions(app)[0]["dir"]), "process")  # its process accounted


def test_copies_reach_every_worktree_with_their_mode_and_never_a_commit_or_a_record(
    app: Path, marks: Path
) -> None:
    target = marks / "outside.txt"
    target.write_text("untouched\n", encoding="utf-8")
    mode = "stat -c %a .env > mode.txt && grep -q SECRET .env"
    tasks = [
        spec("t1", f"{mode} && rm .env && ln -s {target} .env"),  # plants a link for the next
        spec("t2", f"test ! -L .env && {mode}", "t1"),
        spec("t3", f"{mode} && git add -f .env", "t2"),  # stages the secret itself
    ]
    import_tasks(app, tasks)
    _run(app, "--copy", ".env", "--workers", "1")
    [mission] = _missions(app)
    assert [f["status"] for f in mission["features"]] == ["completed"] * 3
    assert target.read_text() == "untouched\n"  # the copy replaced the link, never followed it
    files = tree_files(app, mission["integration_branch"])
    assert files["mode.txt"] == "600\n"
    assert ".env" not in files
    history = run_git(app, "log", "-p", "--all")
    assert "k3y-that-never-leaves" not in history
    folder = Path(mission["dir"])
    for path in folder.rglob("*"):
        if path.is_file():
            assert b"k3y-that-never-leaves" not in path.read_bytes(), path
    page = app.parent / "report.html"
    assert run_rho("mission", "report", "latest", "--html", str(page), cwd=app).code == 0
    assert "k3y-that-never-leaves" not in page.read_text()


@pytest.mark.parametrize(
    ("make", "given", "words"),
    [
        (lambda root: None, "file0000.txt", "--copy file0000.txt: tracked by git"),
        (lambda root: None, "../elsewhere.env", "outside the repository"),
        (lambda root: None, "missing.env", "--copy missing.env: no such file"),
        (lambda root: (root / "link.env").symlink_to(root / ".env"), "link.env", "symbolic link"),
        (lambda root: (root / "conf").mkdir(), "conf", "--copy conf: not a plain file"),
        (lambda root: None, ".git/config", "in .git"),
    ],
)
def test_a_copy_that_cannot_be_used_is_one_error_line_before_anything_starts(
    app: Path, make: Any, given: str, words: str
) -> None:
    import_tasks(app, [spec("t1", "true")])
    make(app)
    before = store_bytes(app)
    done = run_rho("mission", "--from-tasks", "--copy", given, cwd=app)
    assert done.code == 2, done.stderr
    assert done.stderr.startswith("error: ")
    assert words in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert store_bytes(app) == before
    assert not (app / ".rho" / "missions").exists()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--setup-key", "lock.txt"), "--setup-key needs --setup CMD"),
        (("--setup", "true", "--setup-key", "nope.lock"), "--setup-key nope.lock: no such file"),
        (("--setup", " "), "--setup needs a command"),
    ],
)
def test_bad_setup_options_are_one_error_line(app: Path, args: tuple[str, ...], words: str) -> None:
    import_tasks(app, [spec("t1", "true")])
    before = store_bytes(app)
    done = run_rho("mission", "--from-tasks", *args, cwd=app)
    assert done.code == 2, done.stderr
    assert words in done.stderr
    assert store_bytes(app) == before
    assert not (app / ".rho" / "missions").exists()


@pytest.mark.usefixtures("bwrap")
def test_a_sandboxed_setup_runs_in_the_sandbox_and_its_tasks_get_the_copies(
    app: Path,
) -> None:
    # Inside the sandbox the task store is hidden: a setup that could read it fails.
    hidden = app / ".rho" / "tasks.json"
    setup = f"test ! -e {hidden} && mkdir -p .venv && printf good > .venv/tool"
    import_tasks(app, [spec(f"t{i}", _uses_venv(i)) for i in range(1, 4)])
    _run(app, "--sandbox", "--setup", setup, "--copy", ".env", "--workers", "1")
    [mission] = _missions(app)
    assert _outcomes(mission) == {"t1": "ran", "t2": "reused", "t3": "reused"}
    assert [f["status"] for f in mission["features"]] == ["completed"] * 3


def test_the_library_takes_a_python_setup(app: Path) -> None:
    script = app.parent / "pipeline.py"
    script.write_text(
        """
import sys
from pathlib import Path
from rho_mission import Feature, Mission, MissionConfig

calls = []

def setup(ctx):
    calls.append(ctx.worktree.name)
    (ctx.worktree / ".venv").mkdir(exist_ok=True)
    (ctx.worktree / ".venv" / "tool").write_text("good")

def worker(ctx):
    assert (ctx.worktree / ".venv" / "tool").read_text() == "good"
    (ctx.worktree / f"{ctx.feature.id}.txt").write_text("done")

for run in range(2):
    features = [Feature(f"r{run}f{i}") for i in range(3)]
    mission = Mission.new(sys.argv[1], "setup", features, MissionConfig(max_workers=1))
    mission.run_staged_sync(worker, waves=[[f.id for f in features]], setup=setup)
    assert mission.status == "completed", [f.error for f in mission.features]
    print(run, [f.setup.outcome for f in mission.features], len(calls))
""",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, str(script), str(app)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "0 ['ran', 'reused', 'reused'] 1",
        "1 ['reused', 'reused', 'reused'] 1",
    ]


def test_an_executor_that_cannot_run_a_setup_refuses_it_before_anything_starts(
    app: Path,
) -> None:
    from rho_mission import Feature, Mission, MissionConfig
    from rho_mission._errors import InvalidMissionError

    class Elsewhere:  # an executor of the caller's: no supports_setup
        pass

    mission = Mission.new(
        app, "p", [Feature("a", command="true")], MissionConfig(setup_command="x")
    )
    with pytest.raises(InvalidMissionError, match="does not run one"):
        mission.run_staged_sync(executor=Elsewhere())  # type: ignore[arg-type]
    assert not (app / ".rho" / "missions").exists()


def test_kept_outputs_swapped_for_a_link_are_removed_without_following_it(
    app: Path, marks: Path
) -> None:
    elsewhere = marks / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "tool").write_text("good", encoding="utf-8")  # looks like the real thing
    states = app / ".rho" / "worktrees" / "setup"
    tasks = [
        spec("t1", f"rm -rf .venv && ln -s {elsewhere} .venv"),
        spec("t2", "test ! -L .venv && grep -qx good .venv/tool", "t1"),
    ]
    import_tasks(app, tasks)
    _run(app, "--setup", _setup(marks), "--workers", "1")
    [mission] = _missions(app)
    assert _outcomes(mission) == {"t1": "ran", "t2": "ran"}
    assert [f["status"] for f in mission["features"]] == ["completed", "completed"]
    assert (elsewhere / "tool").read_text() == "good"  # never cleaned through the link
    assert sorted(path.suffix for path in states.iterdir()) == [".json"]
    assert stat.S_IMODE(states.stat().st_mode) == 0o700
    for state in states.iterdir():
        assert stat.S_IMODE(state.stat().st_mode) == 0o600


def test_the_checks_and_the_fix_of_a_join_run_in_a_set_up_worktree(app: Path, marks: Path) -> None:
    import_tasks(app, [spec("t1", "echo 1 > one.txt")])
    check = "test -f .venv/tool && grep -q SECRET .env && test -f fixed.txt"
    done = run_rho(
        "mission", "--from-tasks", "--setup", _setup(marks), "--copy", ".env", "--workers", "1",
        "--verify", check, "--fix", "echo ok > fixed.txt && cat .env > /dev/null", cwd=app,
    )  # fmt: skip
    assert done.code == 0, done.stderr + done.stdout
    [mission] = _missions(app)
    [join] = mission["wave_joins"]
    assert join["verification"]["status"] == "passed"
    files = tree_files(app, mission["integration_branch"])
    assert files["fixed.txt"] == "ok\n"
    assert ".env" not in files  # the fix's commit leaves the copy out
    assert not any(name.startswith(".venv") for name in files)
    logs = {path.name for path in (Path(mission["dir"]) / "logs" / "setup").iterdir()}
    stage_setups = {name for name in logs if not name.startswith("pool-")}
    assert stage_setups, logs  # the checks' worktree (not pooled) was set up too
    assert _setups(marks) == 2  # the task's worktree and the checks' worktree: once each
    # The checks' worktree went with the mission, and so did the record of its setup.
    states = app / ".rho" / "worktrees" / "setup"
    assert all(path.name.startswith("pool-") for path in states.iterdir())
