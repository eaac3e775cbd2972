"""Fixtures of the tests in records_tests: those of ``support.fixtures`` (hermetic git, real
repositories, background ``rho`` runs)."""

from __future__ import annotations

from support.fixtures import (
    agents_path,
    git,
    hermetic_git,
    make_repo,
    marks,
    no_leftover_tasks,
    project,
    repo,
    repo_path,
    runs,
    snapshot,
)

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
