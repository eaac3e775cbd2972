"""Fixtures of the taskstore tests: a store file in a fresh ``.rho`` folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from taskstore import TaskStore


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """Where the store lives: ``<tmp>/repo/.rho/tasks.json`` (not created yet)."""
    return tmp_path / "repo" / ".rho" / "tasks.json"


@pytest.fixture
def store(store_path: Path) -> TaskStore:
    """A store over a file that does not exist yet."""
    return TaskStore(store_path)
