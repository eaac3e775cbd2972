"""Which store file a command uses: --store (before or after the subcommand), $RHO_TASK_STORE,
or ``<repo root>/.rho/tasks.json``; and the two ways the read commands answer agree.

Outside a git repository, with neither, every command refuses: see ``test_outside_a_repository``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.rho import RunRho
from support.stores import DIAMOND, write_store


def _ids(store: Path) -> list[str]:
    return [t["id"] for t in json.loads(store.read_text())["tasks"]]


def test_default_store_is_at_the_repository_root_from_any_subfolder(
    rho: RunRho, repo: Path
) -> None:
    deep = repo / "src" / "pkg"
    deep.mkdir(parents=True)
    assert rho("task", "add", "from deep", cwd=deep).stdout == "added task_1: from deep\n"
    assert rho("task", "add", "from root", cwd=repo).stdout == "added task_2: from root\n"
    assert _ids(repo / ".rho" / "tasks.json") == ["task_1", "task_2"]
    assert sorted(p.name for p in repo.rglob("tasks.json")) == ["tasks.json"]
    listed = rho("task", "list", "--json", cwd=repo / "src").json()
    assert [t["subject"] for t in listed["tasks"]] == ["from deep", "from root"]


def test_default_store_folder_is_private(rho: RunRho, repo: Path) -> None:
    rho("task", "add", "a", cwd=repo)
    assert (repo / ".rho").stat().st_mode & 0o777 == 0o700


def test_store_option_works_before_and_after_the_subcommand(rho: RunRho, tmp_path: Path) -> None:
    rho("--store", "before.json", "task", "add", "one")
    rho("task", "add", "two", "--store", "after.json")
    assert (_ids(tmp_path / "before.json"), _ids(tmp_path / "after.json")) == (
        ["task_1"],
        ["task_1"],
    )
    # Given both, the subcommand's own option wins.
    both = rho("--store", "before.json", "task", "list", "--json", "--store", "after.json")
    assert [t["subject"] for t in both.json()["tasks"]] == ["two"]


def test_environment_variable_names_the_store_unless_an_option_does(
    rho: RunRho, repo: Path, tmp_path: Path
) -> None:
    env = {"RHO_TASK_STORE": str(tmp_path / "env.json")}
    rho("task", "add", "via env", cwd=repo, env=env)
    rho("task", "add", "via option", "--store", "opt.json", cwd=repo, env=env)
    assert _ids(tmp_path / "env.json") == ["task_1"]
    assert _ids(repo / "opt.json") == ["task_1"]
    assert not (repo / ".rho").exists()


@pytest.mark.parametrize("command", ["ready", "waves"])
def test_plain_reads_print_what_the_full_cli_prints(
    rho: RunRho, tmp_path: Path, command: str
) -> None:
    # The plain spellings of `ready/waves --json` are answered without click; `--store=PATH` is
    # not one of them, so it goes through the full click CLI: both must print the same bytes.
    store = str(write_store(tmp_path / "tasks.json", DIAMOND))
    plain = [
        rho("task", command, "--json", "--store", store),
        rho("--store", store, "task", command, "--json"),
        rho("--debug", "--store", "other.json", "task", command, "--store", store, "--json"),
    ]
    full = rho("task", command, "--json", f"--store={store}")
    assert {(r.code, r.stdout, r.stderr) for r in plain} == {(0, full.stdout, "")}
    assert json.loads(full.stdout)["waves"][0] == ["task_1", "task_1.1"]


def test_plain_ready_finds_the_store_like_every_other_command(
    rho: RunRho, repo: Path, tmp_path: Path
) -> None:
    write_store(repo / ".rho" / "tasks.json", DIAMOND[:1])
    write_store(tmp_path / "env.json", DIAMOND[:2])
    (repo / "src").mkdir()
    from_default = rho("task", "ready", "--json", cwd=repo / "src")
    from_env = rho("task", "ready", "--json", cwd=repo, env={"RHO_TASK_STORE": "../env.json"})
    assert from_default.json()["waves"] == [["task_1"]]
    assert from_env.json()["waves"] == [["task_1", "task_1.1"]]
