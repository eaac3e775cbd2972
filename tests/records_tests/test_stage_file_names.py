"""A task's id never names a stage's file: a stage's logs and prompts lie one folder down.

A task may be named ``add_b.resolve``, the name the resolve stage of ``add_b`` once gave its
log and its prompt: the two shared ``logs/add_b.resolve.log`` and
``prompts/add_b.resolve.md``, and ``rho mission log latest add_b.resolve`` showed the
resolver's lines. At the top of ``logs/`` and ``prompts/`` now is only what a feature's id
names; a stage's files are in its folder (``logs/resolve/``, ``logs/setup/``,
``prompts/resolve/``), which no id can name (ids hold no ``/``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from support.overlap import STAND_IN, package
from support.rho import run_rho
from support.stores import import_tasks, mission_dir, spec

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")

_OWN_LINE = "I am the task add_b.resolve"
_RESOLVER_LINE = "stand-in-resolver: add_b: kept both sides in: pkg/__init__.py"


@pytest.fixture
def named_like_a_stage(project: Path) -> Path:
    """``add_a`` and ``add_b`` append to one file (``add_b``'s merge conflicts), and a task
    named ``add_b.resolve`` writes a file of its own."""
    package(project)
    appends = [
        spec(f"add_{n}", f"echo 'from .{n} import {n}' >> pkg/__init__.py") for n in ("a", "b")
    ]
    own = spec("add_b.resolve", f"echo '{_OWN_LINE}' && echo mine > mine.txt")
    own["subject"] = "a task named like a stage"
    import_tasks(project, [*appends, own])
    return project


def _run(project: Path, *options: str) -> Path:
    ran = run_rho("mission", "--from-tasks", "--resolve", str(STAND_IN), *options, cwd=project)
    assert ran.code == 0, ran.stdout + ran.stderr
    return mission_dir(project)


def test_a_task_named_like_a_stage_shares_no_file_with_it(named_like_a_stage: Path) -> None:
    folder = _run(named_like_a_stage)

    own_log = (folder / "logs" / "add_b.resolve.log").read_text()
    assert _OWN_LINE in own_log
    assert "stand-in-resolver" not in own_log
    assert "add_b resolve attempt" not in own_log
    resolver_log = (folder / "logs" / "resolve" / "add_b.log").read_text()
    assert _RESOLVER_LINE in resolver_log
    assert _OWN_LINE not in resolver_log
    own_prompt = (folder / "prompts" / "add_b.resolve.md").read_text()
    assert own_prompt.startswith("# a task named like a stage\n")
    resolve_prompt = (folder / "prompts" / "resolve" / "add_b.md").read_text()
    assert resolve_prompt.startswith("# Resolve a merge conflict: do add_b\n")
    brief = json.loads((folder / "prompts" / "resolve" / "add_b.conflict.json").read_text())
    assert brief["feature"] == "add_b"

    logged = run_rho("mission", "log", "latest", "add_b.resolve", cwd=named_like_a_stage)
    assert logged.code == 0, logged.stderr
    assert _OWN_LINE in logged.stdout_lines
    assert "stand-in-resolver" not in logged.stdout
    assert "resolve" not in logged.stdout.replace("add_b.resolve", "")
    stage = run_rho("mission", "log", "latest", "add_b", cwd=named_like_a_stage)
    assert stage.code == 0, stage.stderr
    header = f"== the resolve stage of add_b: {folder / 'logs' / 'resolve' / 'add_b.log'} =="
    assert stage.stdout_lines[-4:] == [
        header,
        stage.stdout_lines[-3],  # rho's line: the attempt and when it started
        _RESOLVER_LINE,
        "== rho: add_b resolve attempt 1 resolved ==",
    ]
    assert _OWN_LINE not in stage.stdout


def test_the_top_of_logs_and_prompts_holds_only_what_feature_ids_name(
    named_like_a_stage: Path,
) -> None:
    # Every worktree is set up (its log once named setup-<worktree>.log, at the top).
    folder = _run(named_like_a_stage, "--setup", "echo set up")

    ids = ("add_a", "add_b", "add_b.resolve")
    assert _files(folder / "logs") == {f"{i}.log" for i in ids}
    assert _files(folder / "prompts") == {f"{i}.md" for i in ids}
    assert {p.name for p in (folder / "logs").iterdir() if p.is_dir()} == {"resolve", "setup"}
    setups = list((folder / "logs" / "setup").iterdir())
    assert setups, "no setup log"
    assert all("set up" in path.read_text() for path in setups)


def _files(folder: Path) -> set[str]:
    return {path.name for path in folder.iterdir() if path.is_file()}


def test_a_mission_written_before_the_stage_folders_still_shows_its_resolver(
    project: Path,
) -> None:
    package(project)
    appends = [
        spec(f"add_{n}", f"echo 'from .{n} import {n}' >> pkg/__init__.py") for n in ("a", "b")
    ]
    import_tasks(project, appends)
    folder = _run(project)
    old = folder / "logs" / "add_b.resolve.log"  # where an older rho wrote it
    os.rename(folder / "logs" / "resolve" / "add_b.log", old)

    logged = run_rho("mission", "log", "latest", "add_b", cwd=project)
    shown = run_rho("mission", "show", "latest", cwd=project)

    assert logged.code == 0, logged.stderr
    assert f"== the resolve stage of add_b: {old} ==" in logged.stdout_lines
    assert _RESOLVER_LINE in logged.stdout_lines
    assert f"  log: {old}" in shown.stdout_lines


def test_an_old_name_a_task_owns_is_never_taken_for_the_stages(named_like_a_stage: Path) -> None:
    folder = _run(named_like_a_stage)
    (folder / "logs" / "resolve" / "add_b.log").unlink()  # as if the stage had written none

    logged = run_rho("mission", "log", "latest", "add_b", cwd=named_like_a_stage)

    assert logged.code == 0, logged.stderr
    assert "the resolve stage" not in logged.stdout
    assert _OWN_LINE not in logged.stdout


def test_a_link_at_a_stages_folder_is_refused_never_followed(
    named_like_a_stage: Path, tmp_path: Path
) -> None:
    folder = _run(named_like_a_stage)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "add_b.log").write_text("not rho's\n")
    resolve = folder / "logs" / "resolve"
    for path in resolve.iterdir():
        path.unlink()
    resolve.rmdir()
    resolve.symlink_to(elsewhere)

    logged = run_rho("mission", "log", "latest", "add_b", cwd=named_like_a_stage)

    assert logged.code == 2, logged.stdout + logged.stderr
    assert "not rho's" not in logged.stdout
    assert logged.stderr_lines == [
        f"error: refusing to use {resolve}: it is a symbolic link; rho follows no link in .rho"
    ]
