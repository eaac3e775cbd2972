"""Task cgroups that rho processes which are gone left behind (a rho killed before it ended
them): swept by the next rho, and never in the way of its own names. Real cgroup folders."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rho_mission.containment import _cgroup
from support.rho import run_rho
from support.stores import import_tasks, spec

pytestmark = pytest.mark.usefixtures("task_cgroups")


def _base() -> Path:
    base, _ = _cgroup._base()
    assert base is not None
    return base


def _gone_pid() -> int:
    # The pid of a process that has ended (and been reaped).
    argv = [sys.executable, "-c", "import os; print(os.getpid())"]
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    return int(done.stdout)


def test_the_empty_cgroups_of_a_gone_rho_are_swept_and_a_live_ones_stay() -> None:
    base = _base()
    gone = base / f"rho-{_gone_pid()}-3"
    (gone / "made-by-its-task").mkdir(parents=True)  # a task may make cgroups below its own
    live = base / f"rho-{os.getppid()}-900001"  # a live process's (the test runner's parent)
    live.mkdir()
    other = base / "not-rho-1-2"
    other.mkdir()
    try:
        removed = _cgroup.sweep_leftovers(base)
        assert gone / "made-by-its-task" in removed
        assert gone in removed
        assert not gone.exists()
        assert live.exists()
        assert other.exists()
    finally:
        for folder in (gone / "made-by-its-task", gone, live, other):
            if folder.exists():
                folder.rmdir()


def test_a_name_an_earlier_rho_with_this_pid_left_taken_is_skipped() -> None:
    # Before the sweep, or one a process is still in: the next name is used, not none at all.
    base = _base()
    number = next(_cgroup._COUNTER)
    taken = base / f"rho-{os.getpid()}-{number + 1}"
    taken.mkdir()
    made = None
    try:
        made = _cgroup.new_cgroup()
        assert made is not None
        assert made != taken
        assert made.name == f"rho-{os.getpid()}-{number + 2}"
    finally:
        for folder in (made, taken):
            if folder is not None and folder.exists():
                folder.rmdir()


def test_a_mission_sweeps_what_a_killed_rho_left(project: Path) -> None:
    base = _base()
    left = base / f"rho-{_gone_pid()}-1"
    left.mkdir()
    try:
        import_tasks(project, [spec("a", "echo a > a.txt"), spec("b", "echo b > b.txt")])
        result = run_rho("mission", "--from-tasks", cwd=project)
        assert result.code == 0, result.stderr
        assert not left.exists()
    finally:
        if left.exists():
            left.rmdir()
