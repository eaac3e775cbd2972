"""``rho task delete`` and ``rho task dep add|rm`` through the real ``rho``: what they print and
write, and every refusal as exit 2, one ``error:`` line and the store byte for byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support.rho import RunRho, assert_bad_input, run_rho
from support.stores import task, write_store


@pytest.fixture(scope="module")
def linked_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A store made by the CLI, once per module: task_1; task_2 blocked by task_1; task_3
    blocked by task_2 and related to task_1; task_1.1 a subtask of task_1; task_4 alone."""
    folder = tmp_path_factory.mktemp("linked")
    for args in (
        ["design"],
        ["build", "--blocked-by", "task_1"],
        ["ship", "--blocked-by", "task_2", "--related", "task_1"],
        ["part", "--parent", "task_1"],
        ["alone"],
    ):
        assert run_rho("task", "add", *args, "--store", "s.json", cwd=folder).code == 0
    return (folder / "s.json").read_bytes()


@pytest.fixture
def linked(linked_bytes: bytes, tmp_path: Path) -> Path:
    """This test's own copy of that store, as ``s.json`` in its folder."""
    store = tmp_path / "s.json"
    store.write_bytes(linked_bytes)
    return store


def _tasks(store: Path) -> dict[str, dict[str, Any]]:
    return {t["id"]: t for t in json.loads(store.read_text())["tasks"]}


def _links(store: Path, task_id: str) -> list[tuple[str, str]]:
    return [(d["type"], d["targetId"]) for d in _tasks(store)[task_id].get("dependencies", [])]


def test_delete_removes_a_task_nobody_links_to(rho: RunRho, linked: Path) -> None:
    result = rho("task", "delete", "task_4", "--store", "s.json")
    assert (result.code, result.stdout, result.stderr) == (0, "deleted task_4: alone\n", "")
    assert sorted(_tasks(linked)) == ["task_1", "task_1.1", "task_2", "task_3"]


def test_forced_delete_removes_the_links_to_it_and_says_whose(rho: RunRho, linked: Path) -> None:
    rho("task", "delete", "task_1.1", "--store", "s.json")
    result = rho("task", "delete", "task_1", "--force", "--store", "s.json")
    assert result.stdout == "deleted task_1: design (removed links from task_2, task_3)\n"
    assert (_links(linked, "task_2"), _links(linked, "task_3")) == ([], [("blocks", "task_2")])
    assert rho("task", "waves", "--json", "--store", "s.json").json()["waves"] == [
        ["task_2", "task_4"],
        ["task_3"],
    ]


def test_delete_json_prints_the_task_and_the_unlinked_ids(rho: RunRho, linked: Path) -> None:
    result = rho("task", "delete", "task_2", "--force", "--json", "--store", "s.json")
    document = result.json()
    assert (document["deleted"]["id"], document["deleted"]["subject"]) == ("task_2", "build")
    assert document["unlinked"] == ["task_3"]


def test_dep_add_of_each_type_and_what_it_prints(rho: RunRho, linked: Path) -> None:
    outputs = [
        rho("task", "dep", "add", "task_4", *args, "--store", "s.json").stdout
        for args in (
            ["task_3"],
            ["task_2", "--type", "related"],
            ["task_1", "--type", "parent-child"],
        )
    ]
    assert outputs == [
        "added: task_4 blocked by task_3\n",
        "added: task_4 related to task_2\n",
        "added: task_4 subtask of task_1\n",
    ]
    assert _links(linked, "task_4") == [
        ("blocks", "task_3"),
        ("related", "task_2"),
        ("parent-child", "task_1"),
    ]
    assert _tasks(linked)["task_4"]["parentId"] == "task_1"
    waves = rho("task", "waves", "--json", "--store", "s.json").json()["waves"]
    assert waves[-1] == ["task_4"]


def test_dep_rm_of_each_type_and_json(rho: RunRho, linked: Path) -> None:
    removed = rho("task", "dep", "rm", "task_3", "task_2", "--store", "s.json")
    related = rho(
        "task", "dep", "rm", "task_3", "task_1", "--type", "related", "--json", "--store", "s.json"
    )
    detached = rho(
        "task", "dep", "rm", "task_1.1", "task_1", "--type", "parent-child", "--store", "s.json"
    )
    assert removed.stdout == "removed: task_3 blocked by task_2\n"
    assert (related.json()["id"], related.json()["dependencies"]) == ("task_3", [])
    assert detached.stdout == "removed: task_1.1 subtask of task_1\n"
    assert "parentId" not in _tasks(linked)["task_1.1"]


def test_dep_rm_repairs_a_link_to_a_task_long_gone(rho: RunRho, tmp_path: Path) -> None:
    store = write_store(tmp_path / "s.json", [task("a", "ghost")])
    assert rho("task", "ready", "--json", "--store", "s.json").code == 2
    assert rho("task", "dep", "rm", "a", "ghost", "--store", "s.json").code == 0
    assert _links(store, "a") == []
    assert rho("task", "ready", "--json", "--store", "s.json").json()["waves"] == [["a"]]


REFUSED = [
    (
        ["delete", "task_2"],
        'cannot delete task "task_2": it is referenced by "task_3" (blocks);'
        " --force removes those links",
    ),
    (
        ["delete", "task_1"],
        'cannot delete task "task_1": it has subtasks "task_1.1"; delete those first, or detach'
        " each with 'rho task dep rm SUBTASK task_1 --type parent-child'",
    ),
    (
        ["delete", "task_1", "--force"],
        'cannot delete task "task_1": it has subtasks "task_1.1"; delete those first, or detach'
        " each with 'rho task dep rm SUBTASK task_1 --type parent-child'",
    ),
    (["delete", "task_9"], 'task "task_9" not found'),
    (
        ["dep", "add", "task_1", "task_3"],
        "cycle detected in blocking task dependency graph: task_1 -> task_3 -> task_2 -> task_1",
    ),
    (["dep", "add", "task_2", "task_2"], 'task "task_2" blocks itself'),
    (["dep", "add", "task_2", "ghost"], 'task "task_2" depends on missing blocker "ghost"'),
    (["dep", "add", "task_2", " "], 'task "task_2" has an empty blocking dependency'),
    (["dep", "add", "ghost", "task_1"], 'task "ghost" not found'),
    (["dep", "add", "task_2", "ghost", "--type", "related"], 'task "ghost" not found'),
    (
        ["dep", "add", "task_2", "task_2", "--type", "related"],
        'task "task_2" cannot be related to itself',
    ),
    (
        ["dep", "add", "task_1", "task_1.1", "--type", "parent-child"],
        'task "task_1" cannot be a subtask of "task_1.1": "task_1.1" is inside "task_1"',
    ),
    (
        ["dep", "add", "task_1.1", "task_4", "--type", "parent-child"],
        'task "task_1.1" is already a subtask of "task_1"',
    ),
    (["dep", "rm", "task_2", "task_3"], 'task "task_2" is not blocked by "task_3"'),
    (
        ["dep", "rm", "task_2", "task_1", "--type", "related"],
        'task "task_2" is not related to "task_1"',
    ),
    (
        ["dep", "rm", "task_4", "task_1", "--type", "parent-child"],
        'task "task_4" is not a subtask of "task_1"',
    ),
]


@pytest.mark.parametrize(("args", "message"), REFUSED, ids=[" ".join(a) for a, _ in REFUSED])
def test_refused_edit_is_one_error_line_and_leaves_the_store_byte_for_byte(
    rho: RunRho, linked: Path, args: list[str], message: str
) -> None:
    before = linked.read_bytes()
    files_before = {p.name for p in linked.parent.iterdir()}
    assert_bad_input(rho("task", *args, "--store", "s.json"), message)
    assert linked.read_bytes() == before
    # No temporary file left behind; the lock file of a writer may stay (it is empty).
    assert {p.name for p in linked.parent.iterdir()} - {"s.json.lock"} == files_before


def test_unknown_dependency_type_is_a_usage_error(rho: RunRho, linked: Path) -> None:
    before = linked.read_bytes()
    result = rho("task", "dep", "add", "task_2", "task_1", "--type", "needs", "--store", "s.json")
    assert_bad_input(
        result,
        "Invalid value for '--type': 'needs' is not one of 'blocks', 'related', 'parent-child'.",
        "run 'rho task dep add --help' for usage",
    )
    assert linked.read_bytes() == before


def test_dep_add_beyond_the_edge_cap_is_refused(rho: RunRho, tmp_path: Path) -> None:
    heads = [task(f"h{n:03}") for n in range(100)]
    tails = [task(f"t{n:03}", *(h["id"] for h in heads)) for n in range(100)]
    store = write_store(tmp_path / "s.json", [*heads, *tails, task("x")])
    before = store.read_bytes()
    result = rho("task", "dep", "add", "x", "h000", "--store", "s.json")
    assert_bad_input(result, "task schedule exceeds 10000-dependency limit")
    assert store.read_bytes() == before


def test_task_help_lists_the_new_commands_with_examples(rho: RunRho) -> None:
    listed = rho("task", "--help").stdout
    dep_help = rho("task", "dep", "--help").stdout
    for name in ("delete", "dep", "graph"):
        assert f"\n  {name} " in listed
    assert ("\n  add " in dep_help, "\n  rm " in dep_help) == (True, True)
    for command in (["delete"], ["dep"], ["dep", "add"], ["dep", "rm"], ["graph"]):
        assert "\n  Example: rho task " in rho("task", *command, "--help").stdout, command
