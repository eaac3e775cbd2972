"""Oversized and over-nested input through the real ``rho``: exit 2, one ``error:`` line, the
store byte for byte; long fields shown cut in tables, whole in ``--json``; private file modes
under any umask."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.environ import IDENTITY as GIT_ENV
from support.rho import RHO, RunRho, assert_bad_input, run_rho
from support.stores import task, write_store

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture(scope="module")
def one_task_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A store made by the CLI, once per module: task_1 "first"."""
    folder = tmp_path_factory.mktemp("one-task")
    run_rho("task", "add", "first", "--store", "s.json", cwd=folder)
    return (folder / "s.json").read_bytes()


@pytest.fixture
def store(one_task_bytes: bytes, tmp_path: Path) -> Path:
    """This test's own copy of that store, as ``s.json`` in its folder."""
    path = tmp_path / "s.json"
    path.write_bytes(one_task_bytes)
    return path


def deep_store(path: Path) -> bytes:
    """Write a store whose task metadata is nested 100,000 levels deep; return its bytes."""
    text = '{"tasks": [{"id": "a", "subject": "s", "status": "pending", "metadata": {"x": %s}}]}'
    path.write_text(text % DEEP)
    return path.read_bytes()


@pytest.mark.parametrize(
    "command",
    [
        ["task", "list"],
        ["task", "ready", "--json"],
        ["task", "add", "x"],
        ["graph", "export"],
    ],
    ids=" ".join,
)
def test_store_nested_too_deeply_is_bad_input(
    rho: RunRho, tmp_path: Path, command: list[str]
) -> None:
    before = deep_store(tmp_path / "s.json")
    result = rho(*command, "--store", "s.json")
    assert_bad_input(result, "read task store s.json: invalid JSON: nested too deeply")
    assert (tmp_path / "s.json").read_bytes() == before


def test_import_of_a_file_nested_too_deeply_is_bad_input(rho: RunRho, store: Path) -> None:
    before = store.read_bytes()
    (store.parent / "deep.json").write_text(f'[{{"id": "b", "metadata": {{"x": {DEEP}}}}}]')
    result = rho("task", "import", "deep.json", "--store", "s.json")
    assert_bad_input(result, "read deep.json: invalid JSON: nested too deeply")
    assert store.read_bytes() == before


def import_file(folder: Path, **fields: Any) -> str:
    """Write ``big.json`` holding task ``b`` with *fields*; return its name."""
    data = {"id": "b", "subject": "s", "status": "pending"} | fields
    (folder / "big.json").write_text(json.dumps([data]))
    return "big.json"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"id": "i" * 300}, "task id is 300 characters; the limit is 100"),
        ({"id": "x.lock"}, 'task id "x.lock" must not end in "." or ".lock"'),
        (
            {"id": "a/../b"},
            'task id "a/../b" may hold only ASCII letters, digits, ".", "_" and "-"',
        ),
        ({"subject": "s" * 131_072}, 'task "b" subject is 131072 characters; the limit is 500'),
        (
            {"subject": "s" * 5 * 1024 * 1024},
            'task "b" subject is 5242880 characters; the limit is 500',
        ),
        ({"subject": "a\0b"}, 'task "b" subject contains a NUL character'),
        ({"owner": "o" * 201}, 'task "b" owner is 201 characters; the limit is 200'),
        (
            {"metadata": {"command": "c" * 32_769}},
            'task "b" command is 32769 characters; the limit is 32768',
        ),
        (
            {"metadata": {"x": json.loads("[" * 500 + "]" * 500)}},
            'task "b" metadata is 501 levels deep; the limit is 64',
        ),
    ],
    ids=[
        "id-300",
        "id-lock",
        "id-path",
        "subject-128k",
        "subject-5m",
        "subject-nul",
        "owner",
        "command",
        "metadata-depth",
    ],
)
def test_import_beyond_a_limit_is_refused(
    rho: RunRho, store: Path, fields: dict[str, Any], message: str
) -> None:
    before = store.read_bytes()
    name = import_file(store.parent, **fields)
    assert_bad_input(rho("task", "import", name, "--store", "s.json"), message)
    assert store.read_bytes() == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["add", "s" * 501], "task subject is 501 characters; the limit is 500"),
        (
            ["add", "ok", "--description", "d" * 70_000],
            "task description is 70000 characters; the limit is 65536",
        ),
        (
            ["add", "ok", "--command", "c" * 40_000],
            "task command is 40000 characters; the limit is 32768",
        ),
        (
            ["update", "task_1", "--subject", "s" * 100_000],
            "task subject is 100000 characters; the limit is 500",
        ),
    ],
    ids=["add-subject", "add-description", "add-command", "update-subject"],
)
def test_add_and_update_beyond_a_limit_are_refused(
    rho: RunRho, store: Path, args: list[str], message: str
) -> None:
    before = store.read_bytes()
    assert_bad_input(rho("task", *args, "--store", "s.json"), message)
    assert store.read_bytes() == before


def test_subtask_whose_id_would_pass_the_limit_is_refused(rho: RunRho, tmp_path: Path) -> None:
    parent = "p" * 99
    store = write_store(tmp_path / "s.json", [task(parent)])
    before = store.read_bytes()
    result = rho("task", "add", "child", "--parent", parent, "--store", "s.json")
    assert_bad_input(
        result,
        f'task "{parent}" cannot take a subtask: its id would be 101 characters; the limit is 100',
    )
    assert store.read_bytes() == before


MEGABYTE = 1_000_000


@pytest.fixture
def huge_subject(tmp_path: Path) -> Path:
    """A hand-written store (loading is lenient) whose one task has a 1 MB subject of x's."""
    return write_store(
        tmp_path / "s.json", [{"id": "a", "subject": "x" * MEGABYTE, "status": "pending"}]
    )


@pytest.mark.parametrize(
    ("command", "shown"),
    [(["list"], 199), (["ready"], 199), (["show", "a"], 2_000)],
    ids=["list", "ready", "show"],
)
def test_huge_subject_is_shown_cut(
    rho: RunRho, huge_subject: Path, command: list[str], shown: int
) -> None:
    result = rho("task", *command, "--store", "s.json")
    assert (result.code, result.stderr) == (0, "")
    assert result.stdout.count("x") == shown
    assert "…" in result.stdout
    assert len(result.stdout) < 10_000


def test_huge_subject_is_whole_in_json(rho: RunRho, huge_subject: Path) -> None:
    result = rho("task", "list", "--json", "--store", "s.json")
    assert result.json()["tasks"][0]["subject"] == "x" * MEGABYTE


def rho_under_umask_0(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``rho ARGS`` in *repo* from a shell whose umask is 000, then create ``probe``."""
    env = {k: v for k, v in os.environ.items() if k != "RHO_TASK_STORE"} | GIT_ENV
    script = 'umask 000 && "$@" && : > probe'
    return subprocess.run(
        ["sh", "-c", script, "sh", str(RHO), *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )


def modes(repo: Path) -> dict[str, int]:
    paths = [".rho", ".rho/tasks.json", ".rho/tasks.json.lock", "probe"]
    return {name: stat.S_IMODE((repo / name).stat().st_mode) for name in paths}


def test_store_lock_and_folder_are_private_under_umask_0(repo: Path) -> None:
    rho_under_umask_0(repo, "task", "add", "first")
    expected = {".rho": 0o700, ".rho/tasks.json": 0o600, ".rho/tasks.json.lock": 0o600}
    assert modes(repo) == expected | {"probe": 0o666}, "probe shows the umask was 000"


def test_world_writable_leftovers_become_private_under_umask_0(repo: Path) -> None:
    write_store(repo / ".rho" / "tasks.json", [])
    (repo / ".rho" / "tasks.json.lock").write_text("")
    for name in (".rho", ".rho/tasks.json", ".rho/tasks.json.lock"):
        os.chmod(repo / name, 0o777 if name == ".rho" else 0o666)
    rho_under_umask_0(repo, "task", "add", "first")
    expected = {".rho": 0o700, ".rho/tasks.json": 0o600, ".rho/tasks.json.lock": 0o600}
    assert modes(repo) == expected | {"probe": 0o666}


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ([b"add", b"\xff parser"], "subject"),
        ([b"add", b"ok", b"--description", b"caf\xe9"], "description"),
        ([b"update", b"task_1", b"--command", b"echo \xfe"], "command"),
    ],
)
def test_bytes_that_are_not_utf8_are_bad_input(
    tmp_path: Path, args: list[bytes], field: str
) -> None:
    """An argument of bytes that are not UTF-8 is refused with one line, store unchanged."""
    store = tmp_path / "tasks.json"
    run_rho("task", "add", "first", "--store", str(store), cwd=tmp_path)
    before = store.read_bytes()
    done = subprocess.run(
        [os.fsencode(RHO), b"task", *args, b"--store", os.fsencode(store)],
        capture_output=True,
        cwd=tmp_path,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr.decode() == f"error: task {field} is not UTF-8 text\n"
    assert store.read_bytes() == before
