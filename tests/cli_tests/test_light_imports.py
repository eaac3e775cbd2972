"""The reads agents poll stay light: the real ``rho`` process imports no heavy package.

Measured with ``python -X importtime``, which lists every module the process imports.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from support.rho import RHO
from support.stores import DIAMOND, write_store

HEAVY = {"pydantic", "pydantic_core", "rich", "git", "anyio", "filelock", "httpx"}


def _imported_packages(*args: str, cwd: Path) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", str(RHO), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    names = [line.rpartition("|")[2].strip() for line in done.stderr.splitlines()]
    return {name.split(".")[0] for name in names if name and name != "imported package"}


@pytest.mark.parametrize("command", ["ready", "waves"])
def test_plain_read_imports_neither_click_nor_any_heavy_package(
    tmp_path: Path, command: str
) -> None:
    store = write_store(tmp_path / "tasks.json", DIAMOND)
    imported = _imported_packages("task", command, "--json", "--store", str(store), cwd=tmp_path)
    assert "taskstore" in imported
    assert imported & (HEAVY | {"click"}) == set()


@pytest.mark.parametrize(
    "command",
    [
        ("list", "--json"),
        ("show", "task_2", "--json"),
        ("list",),
        ("show", "task_2"),
        ("ready",),
        ("add", "three", "--blocked-by", "task_2", "--priority", "0"),
        ("update", "task_2", "--status", "completed", "--label", "y"),
    ],
)
def test_reads_and_writes_of_a_store_rho_wrote_import_neither_click_nor_pydantic(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    store = tmp_path / "tasks.json"
    for args in (["one"], ["two", "--blocked-by", "task_1", "--label", "x", "--priority", "1"]):
        subprocess.run([str(RHO), "task", "add", *args, "--store", str(store)], check=True)
    imported = _imported_packages("task", *command, "--store", str(store), cwd=tmp_path)
    assert "taskstore" in imported
    assert imported & (HEAVY | {"click"}) == set()


def test_read_through_click_imports_no_heavy_package(tmp_path: Path) -> None:
    store = write_store(tmp_path / "tasks.json", DIAMOND)
    imported = _imported_packages("task", "ready", "--json", f"--store={store}", cwd=tmp_path)
    assert "click" in imported
    assert imported & HEAVY == set()


def test_a_mission_without_a_notifier_url_imports_no_http_client(
    make_repo: Callable[[str, int], Path],
) -> None:
    # httpx serves --notify-url alone: its import would cost every mission's start.
    repo = make_repo("repo", 1)
    (repo / ".rho").mkdir(mode=0o700)
    write_store(repo / ".rho" / "tasks.json", DIAMOND)
    imported = _imported_packages("mission", "--from-tasks", "--run", "true", cwd=repo)
    assert "rho_mission" in imported
    assert "httpx" not in imported
