"""Fixtures of the tests that run missions: hermetic git, real repositories, ``rho`` runs.

A folder's ``conftest.py`` takes the ones its tests use by importing them (``hermetic_git`` is
autouse there: the machine's git config never reaches those tests or the ``rho`` they run).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rho_mission.git._repo import GitRepo
from support.environ import IDENTITY
from support.procs import kill_leftover_groups
from support.repos import init_repo, run_git, user_snapshot
from support.rho import RhoRuns

__all__ = [
    "agents_path",
    "git",
    "hermetic_git",
    "make_repo",
    "marks",
    "no_leftover_tasks",
    "project",
    "repo",
    "repo_path",
    "runs",
    "snapshot",
]


@pytest.fixture(autouse=True)
def hermetic_git(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Keep the machine's git config (hooks, signing, identity) and git's own env out of tests."""
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CEILING_DIRECTORIES", "EMAIL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in IDENTITY.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[[str, int], Path]:
    """A factory: ``make_repo(name, files)`` creates ``tmp_path/name`` with an initial commit."""
    return lambda name, files: init_repo(tmp_path / name, files)


@pytest.fixture
def repo_path(make_repo: Callable[[str, int], Path]) -> Path:
    """A repository with an initial commit of three files, ``file0000.txt`` to ``file0002.txt``."""
    return make_repo("repo", 3)


@pytest.fixture
def git() -> Callable[..., str]:
    """``git(cwd, *args)``: the real git CLI, for arranging and checking a test's repository."""
    return run_git


@pytest.fixture
def repo(repo_path: Path) -> Iterator[GitRepo]:
    """A ``GitRepo`` whose user checkout is dirty, and checked to be untouched at teardown.

    The user has an unstaged change (``file0000.txt``), a staged one (``file0001.txt``) and an
    untracked file (``notes.txt``); ``.rho/`` is excluded, as the engine does.
    """
    opened = GitRepo.open(repo_path)
    opened.exclude(".rho/")
    (repo_path / "file0000.txt").write_text("unstaged change\n", encoding="utf-8")
    (repo_path / "file0001.txt").write_text("staged change\n", encoding="utf-8")
    run_git(repo_path, "add", "file0001.txt")
    (repo_path / "notes.txt").write_text("untracked\n", encoding="utf-8")
    before = user_snapshot(repo_path)
    yield opened
    assert user_snapshot(repo_path) == before, "the user's checkout, index or branch changed"


@pytest.fixture
def snapshot() -> Callable[[Path], str]:
    """``snapshot(root)``: the user's branch, HEAD, status and diffs, to compare mid-test."""
    return user_snapshot


# -- fixtures of the CLI tests that run real ``rho`` processes --------------------------------


@pytest.fixture
def no_leftover_tasks(tmp_path: Path) -> Iterator[None]:
    """After the test, no task process of its missions may still run (they are killed).

    Modules that start missions use it with ``pytestmark = pytest.mark.usefixtures(...)``.
    """
    yield
    assert kill_leftover_groups(tmp_path) == [], "a task process outlived its mission"


@pytest.fixture
def runs(tmp_path: Path) -> Iterator[RhoRuns]:
    """Background ``rho`` runs, killed at teardown if still going."""
    background = RhoRuns(tmp_path / "rho-output")
    yield background
    if background.close():
        # The test failed with rho still running: its tasks are expected leftovers, not a
        # second failure to report.
        kill_leftover_groups(tmp_path)


@pytest.fixture
def project(make_repo: Callable[[str, int], Path]) -> Path:
    """A repository on ``main`` with one committed file, ``file0000.txt``."""
    return make_repo("repo", 1)


@pytest.fixture
def marks(tmp_path: Path) -> Path:
    """The folder (outside the repository) where task commands leave their markers."""
    folder = tmp_path / "marks"
    folder.mkdir()
    return folder


AGENT_STAND_IN = Path(__file__).resolve().parents[2] / "examples" / "agents" / "stand-in-agent.sh"


@pytest.fixture
def agents_path(tmp_path: Path) -> dict[str, str]:
    """An environment whose PATH finds the stand-in as ``claude``, ``codex``, ``gemini`` and
    ``aider``."""
    folder = tmp_path / "agents-bin"
    folder.mkdir()
    for name in ("claude", "codex", "gemini", "aider"):
        (folder / name).symlink_to(AGENT_STAND_IN)
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}
