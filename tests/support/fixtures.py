"""Fixtures for the mission engine's tests: real temporary git repositories, hermetic git."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rho_mission.git._repo import GitRepo

from ._cli_helpers import RhoRuns, kill_leftover_groups

# Every commit a test makes by hand uses this identity (through the environment, never through
# the user's global config).
IDENTITY = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.com",
}


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


def run_git(cwd: Path, *args: str) -> str:
    """Run the real git CLI in *cwd* and return its output (independent of the code under test)."""
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout


def init_repo(root: Path, files: int) -> Path:
    """Create a git repository at *root* on branch ``main`` with one commit of *files* files."""
    root.mkdir(parents=True)
    run_git(root, "init", "--quiet", "--initial-branch=main")
    for index in range(files):
        (root / f"file{index:04d}.txt").write_text(f"line {index}\n", encoding="utf-8")
    run_git(root, "add", "--all")
    run_git(root, "commit", "--quiet", "--message=initial")
    return root


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


def user_snapshot(root: Path) -> str:
    """What the user sees of their checkout: current branch, HEAD, status, unstaged, staged."""
    return "".join(
        run_git(root, *args)
        for args in (
            ("symbolic-ref", "HEAD"),
            ("rev-parse", "HEAD"),
            ("status", "--porcelain=v1", "--untracked-files=all"),
            ("diff",),
            ("diff", "--cached"),
        )
    )


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
