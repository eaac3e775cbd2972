"""Fixtures of the CLI tests: a ``rho`` runner, a git repository, a shared read-only store; and,
for the tests of what ``rho mission`` prints, those of ``support.fixtures`` (hermetic git, real
repositories, background ``rho`` runs)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

from support.environ import IDENTITY as GIT_ENV
from support.fixtures import (
    hermetic_git,
    make_repo,
    marks,
    no_leftover_tasks,
    project,
    repo_path,
    runs,
)
from support.rho import Result, RunRho, run_rho
from support.stores import DIAMOND, write_store

__all__ = [
    "hermetic_git",
    "make_repo",
    "marks",
    "no_leftover_tasks",
    "project",
    "repo_path",
    "runs",
]


@pytest.fixture
def rho(tmp_path: Path) -> RunRho:
    """``rho(*args, cwd=..., env=...)``: run rho, by default in this test's temporary folder."""

    def run(*args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None) -> Result:
        return run_rho(*args, cwd=cwd or tmp_path, env=env)

    return run


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A fresh, empty git repository."""
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True, env={**os.environ, **GIT_ENV})
    return root


@pytest.fixture(scope="module")
def diamond(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The DIAMOND store file, shared by a module's tests: read it, never change it."""
    return write_store(tmp_path_factory.mktemp("diamond") / "tasks.json", DIAMOND, next_id=5)
