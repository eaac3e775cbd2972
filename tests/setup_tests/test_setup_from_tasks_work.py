"""A kept setup built from a task's code never reaches a later mission.

The sequence the README's own lines invite: ``--setup 'npm ci' --setup-key package-lock.json``
(or a ``pip install -e .`` keyed on ``pyproject.toml``). A task of mission 1 edits what the setup
runs but is no key file (``package.json``'s ``postinstall``, ``setup.py``); a worktree set up at
wave 2's start (the integration head, holding that task's work) runs it, and it plants code
among the setup's outputs (``node_modules/.bin/node``, a ``.pth`` in ``.venv``). The user
rejects mission 1 (``rho mission clean --force``). Mission 2 from ``main`` gets that worktree
back from the pool with the same key: it must set it up again, never run the planted code.
A setup made on mission 1's start commit (``main``, the user's own) is still reused; one made
on a mission's head serves later missions once a branch of the user's holds that head.

Real ``rho`` processes, real npm (offline: no dependency, ``.npmrc``) and real pip (no index,
no build isolation) in real repositories. Two tasks of a wave wait for each other (a bounded
wait on a marker file) so that the wave takes two worktrees of the pool.
"""

from __future__ import annotations

import json
import shlex
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest

from support.repos import run_git, tree_files
from support.rho import run_rho, wait_file_cmd
from support.stores import import_tasks, spec

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")

_NPM_TEST = (
    "node -e \"require('fs').writeFileSync('tested-' + process.env.RHO_TASK_ID + '.txt', "
    "'real\\n')\""
)
# What a task of mission 1 adds to package.json: the setup of a later wave runs it.
_POSTINSTALL = (
    "mkdir -p node_modules/.bin && "
    "printf '#!/bin/sh\\necho planted > planted-$RHO_TASK_ID.txt\\n' > node_modules/.bin/node && "
    "chmod +x node_modules/.bin/node"
)
_SETUP_PY = 'from setuptools import setup\n\nsetup(name="app", version="1.0", py_modules=["app"])\n'
# What a task of mission 1 puts in setup.py: pip runs it in the setup, and the .pth it plants
# runs in every later start of the worktree's Python (quiet while a setup runs).
_EVIL_SETUP_PY = (
    "import pathlib, sysconfig\n"
    "line = \"import os; task = os.environ.get('RHO_TASK_ID', 'setup'); task == 'setup' or "
    "open('planted-' + task + '.txt', 'w').write('planted')\"\n"
    'pathlib.Path(sysconfig.get_paths()["purelib"], "zz_planted.pth").write_text(line + "\\n")\n'
    + _SETUP_PY
)
_CHECK_PY = (
    "import os\n\nimport app\n\n"
    "with open(f\"tested-{os.environ['RHO_TASK_ID']}.txt\", 'w') as out:\n"
    "    out.write(app.word() + '\\n')\n"
)


@dataclass(frozen=True)
class Project:
    """A project's setup, its key file, the command its tests run, how a task of mission 1
    poisons what the setup runs, and the folder the setup leaves (its kept outputs)."""

    setup: str
    key: str
    test: str
    poison: str
    outputs: str


def _commit(repo: Path, files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        (repo / name).write_text(text, encoding="utf-8")
    run_git(repo, "add", "--all")
    run_git(repo, "commit", "--quiet", f"--message={message}")


def _npm_project(repo: Path) -> Project:
    """package.json (no dependency), its lockfile and an ``.npmrc`` that keeps npm offline."""
    package: dict[str, Any] = {"name": "app", "version": "1.0.0", "private": True}
    package["scripts"] = {"test": _NPM_TEST}
    lock = {
        "name": "app",
        "version": "1.0.0",
        "lockfileVersion": 3,
        "requires": True,
        "packages": {"": {"name": "app", "version": "1.0.0"}},
    }
    npmrc = "offline=true\naudit=false\nfund=false\nupdate-notifier=false\n"
    files = {
        ".gitignore": "node_modules/\n",
        ".npmrc": npmrc,
        "package.json": json.dumps(package, indent=2) + "\n",
        "package-lock.json": json.dumps(lock, indent=2) + "\n",
    }
    _commit(repo, files, "an npm project")
    package["scripts"]["postinstall"] = _POSTINSTALL
    poison = _writes("package.json", json.dumps(package, indent=2) + "\n")
    return Project("npm ci", "package-lock.json", "npm test", poison, "node_modules")


def _pip_project(repo: Path) -> Project:
    """A setup.py project, installed editable into a ``.venv`` of the worktree by pip with no
    index and no build isolation (pip, setuptools and wheel of the test's own environment)."""
    build = '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
    files = {
        ".gitignore": ".venv/\n__pycache__/\n*.egg-info/\nbuild/\n",
        "pyproject.toml": build,
        "setup.py": _SETUP_PY,
        "app.py": "def word() -> str:\n    return 'real'\n",
        "check.py": _CHECK_PY,
    }
    _commit(repo, files, "a Python project")
    site = Path(sysconfig.get_paths()["purelib"])
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    setup = (
        f"{shlex.quote(sys.executable)} -m venv --without-pip .venv && "
        f"echo {shlex.quote(str(site))} > .venv/lib/{version}/site-packages/_tools.pth && "
        ".venv/bin/python -m pip install --quiet --disable-pip-version-check --no-index "
        "--no-build-isolation --no-deps -e ."
    )
    poison = _writes("setup.py", _EVIL_SETUP_PY)
    return Project(setup, "pyproject.toml", ".venv/bin/python check.py", poison, ".venv")


def _writes(name: str, text: str) -> str:
    """A shell command that writes *text* into the file *name*."""
    return f"printf %s {shlex.quote(text)} > {name}"


def _together(marks: Path, me: str, other: str, then: str = "true") -> str:
    """A task that waits (bounded) until *other* runs too: the wave takes two worktrees."""
    return f"touch {marks / me} && {wait_file_cmd(marks / other)} && {then}"


def _mission(repo: Path, project: Project, *args: str) -> dict[str, Any]:
    options = ("--setup", project.setup, "--setup-key", project.key, "--workers", "2")
    done = run_rho("mission", "--from-tasks", *options, *args, cwd=repo)
    assert done.code == 0, done.stderr + done.stdout
    return _latest(repo)


def _latest(repo: Path) -> dict[str, Any]:
    folders = (repo / ".rho" / "missions").iterdir()
    found = [json.loads((folder / "mission.json").read_text()) for folder in folders]
    return max(found, key=lambda mission: mission["started_at"])


def _setups(mission: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Each feature's setup: (its worktree, what the setup came to)."""
    return {f["id"]: (f["setup"]["worktree"], f["setup"]["outcome"]) for f in mission["features"]}


def _rejected_first_mission(
    repo: Path, marks: Path, project: Project, *args: str
) -> dict[str, Any]:
    """Mission 1: ``a`` poisons what the setup runs; ``b`` and ``c`` (wave 2) take two
    worktrees, one of them new, set up on the integration head. Then the user rejects it."""
    tasks = [
        spec("a", project.poison),
        spec("b", _together(marks, "b", "c"), "a"),
        spec("c", _together(marks, "c", "b"), "a"),
    ]
    import_tasks(repo, tasks)
    first = _mission(repo, project, *args)
    outcomes = _setups(first)
    assert outcomes["a"][1] == "ran"
    # One worktree of wave 2 is a's (its setup, made on main, held); the other is new.
    assert sorted(outcome for _, outcome in (outcomes["b"], outcomes["c"])) == ["ran", "reused"]
    listed = run_rho("worktrees", "list", "--json", cwd=repo).json()["worktrees"]
    assert sorted([tree["setup_mission"] or "" for tree in listed]) == ["", first["id"]]
    table = run_rho("worktrees", "list", cwd=repo).stdout
    assert f" (mission {first['id']} only)" in table
    rejected = run_rho("mission", "clean", first["id"], "--force", cwd=repo)
    assert rejected.code == 0, rejected.stderr
    return first


def test_an_npm_setup_made_on_tasks_work_never_reaches_a_later_mission(
    project: Path, marks: Path, node_and_npm: tuple[str, str]
) -> None:
    _second_mission_runs_no_planted_code(project, marks, _npm_project(project))


def test_a_pip_setup_made_on_tasks_work_never_reaches_a_later_mission(
    project: Path, marks: Path
) -> None:
    _second_mission_runs_no_planted_code(project, marks, _pip_project(project))


def test_a_sandboxed_setup_made_on_tasks_work_never_reaches_a_later_mission(
    project: Path, bwrap: str
) -> None:
    # The sandbox keeps the planted code in its worktree, and the worktree is where it does
    # harm. Its /tmp is private: no marker file; one worker. ``a`` also changes the kept
    # outputs (as a ``pip install`` of its own would), so wave 2 sets the worktree up again,
    # on the integration head.
    setup = _pip_project(project)
    touched = f"{setup.poison} && touch {setup.outputs}/pyvenv.cfg"
    import_tasks(project, [spec("a", touched), spec("b", "true", "a")])
    first = _mission(project, setup, "--sandbox", "--workers", "1")
    assert _setups(first) == {"a": (ANY, "ran"), "b": (ANY, "ran")}
    assert run_rho("mission", "clean", first["id"], "--force", cwd=project).code == 0
    import_tasks(project, [spec("d", setup.test)])
    second = _mission(project, setup, "--sandbox", "--workers", "1")
    files = tree_files(project, second["integration_branch"])
    assert [name for name in files if name.startswith("planted")] == []
    assert files.get("tested-d.txt") == "real\n"
    assert _setups(second) == {"d": (_setups(first)["b"][0], "ran")}


def _second_mission_runs_no_planted_code(
    repo: Path, marks: Path, setup: Project, *args: str
) -> None:
    first = _rejected_first_mission(repo, marks, setup, *args)
    used = {worktree for worktree, _ in _setups(first).values()}
    # Mission 2 from main: two tasks run the project's tests, each in one of those worktrees.
    tasks = [
        spec("d", _together(marks, "d", "e", setup.test)),
        spec("e", _together(marks, "e", "d", setup.test)),
    ]
    import_tasks(repo, tasks)
    second = _mission(repo, setup, *args)
    outcomes = _setups(second)
    assert {worktree for worktree, _ in outcomes.values()} == used  # both from the pool
    # Its commits hold what the project's own tests wrote, nothing the planted code did.
    files = tree_files(repo, second["integration_branch"])
    assert [name for name in files if name.startswith("planted")] == []
    assert {name: files.get(name) for name in ("tested-d.txt", "tested-e.txt")} == {
        "tested-d.txt": "real\n",
        "tested-e.txt": "real\n",
    }
    # The worktree set up on mission 1's integration head is set up again, on main; the one
    # set up on main (mission 1's start, the user's own) is reused.
    assert sorted(outcome for _, outcome in outcomes.values()) == ["ran", "reused"]


@pytest.mark.parametrize("merged", [False, True], ids=["rejected", "merged"])
def test_a_setup_on_a_mission_s_head_serves_later_missions_once_a_branch_of_yours_holds_it(
    project: Path, marks: Path, merged: bool
) -> None:
    _commit(project, {".gitignore": ".venv/\n", "lock.txt": "deps 1\n"}, "a project")
    first = _plain_mission(project, marks, "t1", "first")
    if merged:  # the user takes mission 1's work into main
        run_git(project, "merge", "--quiet", "--ff-only", first["integration_branch"])
    # Mission 2 goes on from mission 1's head with another setup: it runs there.
    second = _plain_mission(project, marks, "t2", "second", "--continue", first["id"])
    assert _setups(second)["t2"][1] == "ran"
    # Mission 3, from main with the same setup, finds it made on a tree of tasks' work that
    # no branch of the user's holds (set up again), or on mission 1's work that main now holds.
    third = _plain_mission(project, marks, "t3", "second")
    assert _setups(third)["t3"][1] == ("reused" if merged else "ran")
    runs = (marks / "setups").read_text(encoding="utf-8").split()
    assert runs == ["first", "second"] if merged else ["first", "second", "second"]


def _plain_mission(repo: Path, marks: Path, task: str, name: str, *args: str) -> dict[str, Any]:
    """One task, one worker, a setup that notes its *name* in ``marks/setups`` when it runs."""
    import_tasks(repo, [spec(task, f"test -f .venv/tool && echo {task} > {task}.txt")])
    setup = f"mkdir -p .venv && printf good > .venv/tool && echo {name} >> {marks}/setups"
    project = Project(setup, "lock.txt", "", "", ".venv")
    return _mission(repo, project, "--workers", "1", *args)


@pytest.mark.parametrize(
    ("ref", "users"),
    [
        ("refs/heads/topic", True),
        ("refs/heads/feature/rho-mission/x", True),  # a branch of the user's, whatever its name
        ("refs/tags/v1", True),
        ("refs/remotes/origin/topic", True),
        (None, False),  # on no ref: a commit id, a detached HEAD
        ("refs/heads/rho-mission/abcd1234/integration", False),
        ("refs/remotes/origin/rho-mission/abcd1234/a", False),  # pushed by a Dask run
        ("refs/rho-mission-start/abcd1234", False),
        ("refs/stash", False),
    ],
)
def test_a_commit_is_the_user_s_own_when_a_branch_tag_or_remote_branch_of_theirs_holds_it(
    project: Path, ref: str | None, users: bool
) -> None:
    from rho_mission.git._repo import GitRepo
    from rho_mission.setup._trust import users_own

    tree = run_git(project, "rev-parse", "HEAD^{tree}").strip()
    commit = run_git(project, "commit-tree", tree, "-p", "HEAD", "-m", "work").strip()
    child = run_git(project, "commit-tree", tree, "-p", commit, "-m", "more").strip()
    if ref is not None:
        run_git(project, "update-ref", ref, child)  # it holds the commit (an ancestor)
    assert users_own(GitRepo.open(project), commit) is users
    assert users_own(GitRepo.open(project), run_git(project, "rev-parse", "main").strip())
