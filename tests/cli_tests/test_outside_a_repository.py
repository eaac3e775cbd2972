"""Outside a git repository, a command that names no store refuses, rather than writing or
reading ``./.rho/tasks.json`` wherever the shell happens to be.

Each test runs the real ``rho`` in a folder that git itself sees as outside any repository:
``GIT_CEILING_DIRECTORIES`` stops the search at the test's temporary folder, whatever lies above.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from support.rho import Result, RunRho, assert_bad_input
from support.stores import DIAMOND, write_store

WRITES = [
    ("task", "add", "loose"),
    ("task", "update", "task_1", "--status", "completed"),
    ("task", "import", "import.json"),
]
READS = [
    ("task", "list"),
    ("task", "list", "--json"),
    ("task", "show", "task_1"),
    ("task", "ready"),
    ("task", "ready", "--json"),  # the click-free lane hands the refusal to the full CLI
    ("task", "waves", "--json"),
    ("task", "validate"),
    ("task", "export"),
    ("task", "compact"),
    ("graph", "export"),
]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder in no git repository (a file to import waits there)."""
    folder = tmp_path / "outside"
    folder.mkdir()
    write_store(folder / "import.json", DIAMOND[:1])
    return folder


def _ceiling(tmp_path: Path) -> dict[str, str]:
    return {"GIT_CEILING_DIRECTORIES": str(tmp_path)}


def _git_sees_a_repository(folder: Path, env: dict[str, str]) -> bool:
    done = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"],
        cwd=folder,
        env={**os.environ, **env},
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def _refused(result: Result, folder: Path) -> None:
    assert_bad_input(
        result,
        f"not in a git repository: {folder}; pass --store PATH or set RHO_TASK_STORE",
    )


@pytest.mark.parametrize("args", WRITES + READS, ids=" ".join)
def test_a_command_naming_no_store_outside_a_repository_is_refused_and_writes_nothing(
    rho: RunRho, outside: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    env = _ceiling(tmp_path)
    assert not _git_sees_a_repository(outside, env)

    result = rho(*args, cwd=outside, env=env)

    _refused(result, outside)
    assert sorted(p.name for p in outside.iterdir()) == ["import.json"]


def test_outside_a_repository_the_store_option_or_variable_says_where(
    rho: RunRho, outside: Path, tmp_path: Path
) -> None:
    env = _ceiling(tmp_path)
    by_option = rho("task", "add", "one", "--store", "mine.json", cwd=outside, env=env)
    by_variable = rho(
        "task", "add", "two", cwd=outside, env={**env, "RHO_TASK_STORE": str(tmp_path / "v.json")}
    )
    assert (by_option.code, by_variable.code) == (0, 0)
    listed = rho("--store", "mine.json", "task", "list", "--json", cwd=outside, env=env)
    assert [t["subject"] for t in listed.json()["tasks"]] == ["one"]
    assert json.loads((tmp_path / "v.json").read_text())["tasks"][0]["subject"] == "two"
    assert not (outside / ".rho").exists()


def test_a_repository_above_a_ceiling_directory_is_not_used_as_git_would_not(
    rho: RunRho, repo: Path
) -> None:
    inside = repo / "sub"
    inside.mkdir()
    env = {"GIT_CEILING_DIRECTORIES": str(repo)}
    assert not _git_sees_a_repository(inside, env)

    _refused(rho("task", "add", "x", cwd=inside, env=env), inside)
    assert rho("task", "add", "x", cwd=inside).code == 0  # without the ceiling: the repo's store
    assert (repo / ".rho" / "tasks.json").is_file()
