"""``rho task ...`` commands doing their job: what they print and what they leave in the store."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from support.rho import RunRho
from support.stores import DIAMOND_TO_RUN, DIAMOND_WAVES, task, write_store

STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def _without_stamps(data: dict[str, Any]) -> dict[str, Any]:
    assert STAMP.match(data.pop("createdAt"))
    assert STAMP.match(data.pop("updatedAt"))
    return data


def _read(store: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(store.read_text())
    return document


def test_add_prints_sequential_ids_and_writes_a_sorted_revisioned_store(
    rho: RunRho, tmp_path: Path
) -> None:
    outputs = [rho("task", "add", subject, "--store", "s.json").stdout for subject in "ABC"]
    assert outputs == ["added task_1: A\n", "added task_2: B\n", "added task_3: C\n"]
    document = _read(tmp_path / "s.json")
    assert [document[k] for k in ("schema_version", "revision", "next_id")] == [
        "rho.tasks/v1",
        3,
        4,
    ]
    assert [t["id"] for t in document["tasks"]] == ["task_1", "task_2", "task_3"]


def test_add_records_blockers_related_links_description_and_command(
    rho: RunRho, tmp_path: Path
) -> None:
    for subject in ("parse", "lex"):
        rho("task", "add", subject, "--store", "s.json")
    result = rho(
        "task", "add", "compile", "--store", "s.json", "--json",
        "--blocked-by", "task_1", "--blocked-by", "task_2", "--related", "task_1",
        "--description", "turn tokens into code", "--command", "make compile",
    )  # fmt: skip
    assert result.code == 0
    assert _without_stamps(result.json()) == {
        "id": "task_3",
        "subject": "compile",
        "description": "turn tokens into code",
        "status": "pending",
        "dependencies": [
            {"targetId": "task_1", "type": "related"},
            {"targetId": "task_1", "type": "blocks"},
            {"targetId": "task_2", "type": "blocks"},
        ],
        "metadata": {"command": "make compile"},
        "attempts": 0,
    }
    assert _read(tmp_path / "s.json")["tasks"][2] == {**result.json()}


def test_add_with_parent_numbers_children_and_links_them_to_the_parent(rho: RunRho) -> None:
    rho("task", "add", "epic", "--store", "s.json")
    first = rho("task", "add", "part one", "--parent", "task_1", "--store", "s.json")
    second = rho("task", "add", "part two", "--parent", "task_1", "--store", "s.json", "--json")
    assert first.stdout == "added task_1.1: part one\n"
    child = second.json()
    assert (child["id"], child["parentId"], child["dependencies"]) == (
        "task_1.2",
        "task_1",
        [{"targetId": "task_1", "type": "parent-child"}],
    )
    # A subtask takes no number from the counter.
    assert rho("task", "add", "next", "--store", "s.json").stdout == "added task_2: next\n"


def test_list_json_prints_every_task_as_stored(rho: RunRho, diamond: Path) -> None:
    result = rho("task", "list", "--json", "--store", str(diamond))
    assert result.code == 0
    assert result.json() == {
        "tasks": [
            {"description": "", "metadata": {}, "attempts": 0, "dependencies": []} | t
            for t in _read(diamond)["tasks"]
        ]
    }


def test_list_shows_ids_statuses_priorities_subjects_blockers_and_wide_adds_commands(
    rho: RunRho, diamond: Path, plain_table: Callable[..., list[list[str]]]
) -> None:
    result = rho("task", "list", "--store", str(diamond))
    wide = rho("task", "list", "--wide", "--store", str(diamond))
    header, *cells = plain_table(result.stdout)
    wide_rows = plain_table(wide.stdout)
    assert result.stdout.startswith("5 task(s)\n")
    assert header == ["id", "status", "pri", "subject", "blocked by"]
    assert cells == [
        ["task_1", "completed", "P2", "do task_1", ""],
        ["task_1.1", "pending", "P2", "do task_1.1", ""],
        ["task_2", "pending", "P2", "do task_2", "task_1"],
        ["task_3", "pending", "P2", "do task_3", "task_1"],
        ["task_4", "pending", "P2", "do task_4", "task_2, task_3"],
    ]
    assert [row[5:] for row in wide_rows] == [
        ["labels", "command"],
        ["", "make one"],
        *[["", ""]] * 4,
    ]


def test_show_escapes_a_line_break_in_a_one_line_field_and_keeps_a_descriptions(
    rho: RunRho, tmp_path: Path
) -> None:
    # Before the fix: a newline in a subject printed as continuation lines, as if another field.
    store = str(tmp_path / "tasks.json")
    added = rho("task", "add", "first\nstatus  completed", "--description", "one\ntwo",
                "--store", store)  # fmt: skip
    assert added.code == 0, added.stderr
    shown = rho("task", "show", "task_1", "--store", store)
    lines = shown.stdout.splitlines()
    assert lines[1] == "subject      first\\nstatus  completed"
    assert [line for line in lines if line.startswith("status")] == ["status       pending"]
    assert lines[3:5] == ["description  one", "             two"]


def test_show_prints_one_task_as_json_or_as_a_detail_table(rho: RunRho, diamond: Path) -> None:
    as_json = rho("task", "show", "task_1", "--json", "--store", str(diamond))
    human = rho("task", "show", "task_2", "--store", str(diamond))
    assert as_json.json() == {
        "id": "task_1",
        "subject": "do task_1",
        "description": "",
        "status": "completed",
        "owner": "ada",
        "dependencies": [],
        "metadata": {"command": "make one"},
        "attempts": 0,
    }
    lines = [line.split() for line in human.stdout.splitlines()]
    assert lines == [
        ["id", "task_2"],
        ["subject", "do", "task_2"],
        ["status", "pending"],
        ["attempts", "0"],
        ["blocked", "by", "task_1"],
        ["related", "to", "task_9"],
    ]


def test_update_changes_fields_and_blockers(rho: RunRho, tmp_path: Path) -> None:
    for subject in ("a", "b", "c"):
        rho("task", "add", subject, "--store", "s.json")
    result = rho(
        "task", "update", "task_3", "--store", "s.json", "--json",
        "--status", "in_progress", "--subject", "c2", "--description", "more",
        "--command", "make c", "--add-blocker", "task_1", "--add-blocker", "task_2",
        "--add-related", "task_1",
    )  # fmt: skip
    assert result.code == 0
    changed = _without_stamps(result.json())
    assert changed == {
        "id": "task_3",
        "subject": "c2",
        "description": "more",
        "status": "in_progress",
        "dependencies": [
            {"targetId": "task_1", "type": "related"},
            {"targetId": "task_1", "type": "blocks"},
            {"targetId": "task_2", "type": "blocks"},
        ],
        "metadata": {"command": "make c"},
        "attempts": 0,
    }
    removed = rho("task", "update", "task_3", "--remove-blocker", "task_1", "--store", "s.json")
    assert removed.stdout == "updated task_3: c2\n"
    assert _read(tmp_path / "s.json")["tasks"][2]["dependencies"] == [
        {"targetId": "task_1", "type": "related"},
        {"targetId": "task_2", "type": "blocks"},
    ]


def test_ready_json_is_the_ready_tasks_and_the_waves(rho: RunRho, diamond: Path) -> None:
    result = rho("task", "ready", "--json", "--store", str(diamond))
    assert result.code == 0
    document = result.json()
    assert list(document) == ["tasks", "waves"]
    assert [list(t) for t in document["tasks"]] == [
        ["id", "subject", "status", "owner", "dependencies"]
    ] * 3
    assert document == {
        "tasks": [
            {
                "id": "task_1.1",
                "subject": "do task_1.1",
                "status": "pending",
                "owner": None,
                "dependencies": [{"targetId": "task_1", "type": "parent-child"}],
            },
            {
                "id": "task_2",
                "subject": "do task_2",
                "status": "pending",
                "owner": None,
                "dependencies": [
                    {"targetId": "task_1", "type": "blocks"},
                    {"targetId": "task_9", "type": "related"},
                ],
            },
            {
                "id": "task_3",
                "subject": "do task_3",
                "status": "pending",
                "owner": None,
                "dependencies": [{"targetId": "task_1", "type": "blocks"}] * 2,
            },
        ],
        "waves": DIAMOND_WAVES,
    }


def test_waves_json_is_every_tasks_waves_and_those_still_to_run(rho: RunRho, diamond: Path) -> None:
    result = rho("task", "waves", "--json", "--store", str(diamond))
    assert (result.code, result.json()) == (0, {"waves": DIAMOND_WAVES, "to_run": DIAMOND_TO_RUN})


def test_ready_and_waves_print_waves_for_people(
    rho: RunRho, diamond: Path, plain_table: Callable[..., list[list[str]]]
) -> None:
    ready = rho("task", "ready", "--store", str(diamond)).stdout.splitlines()
    waves = rho("task", "waves", "--store", str(diamond)).stdout.splitlines()
    # The waves still to run: the completed task_1 is not among them.
    assert waves == [
        "wave 1: task_1.1 task_2 task_3",
        "wave 2: task_4",
        "1 completed task(s) not shown",
    ]
    wave_lines = ["wave 1: task_1 task_1.1", "wave 2: task_2 task_3", "wave 3: task_4"]
    assert ready[0].strip() == "3 ready task(s)"
    assert ready[-3:] == wave_lines
    ready_ids = [row[0] for row in plain_table("\n".join(ready))[1:]]
    assert ready_ids == ["task_1.1", "task_2", "task_3"]


def test_validate_reports_the_graph_size_and_waves(rho: RunRho, diamond: Path) -> None:
    human = rho("task", "validate", "--store", str(diamond))
    as_json = rho("task", "validate", "--json", "--store", str(diamond))
    assert human.stdout == "valid: 5 task(s), 4 blocking edge(s), 3 wave(s)\n"
    assert as_json.json() == {"valid": True, "tasks": 5, "edges": 4, "waves": DIAMOND_WAVES}


def test_compact_counts_statuses_and_lists_unfinished_tasks(rho: RunRho, diamond: Path) -> None:
    human = rho("task", "compact", "--store", str(diamond))
    as_json = rho("task", "compact", "--json", "--store", str(diamond))
    open_lines = [
        "task_1.1 [pending] do task_1.1",
        "task_2 [pending] do task_2 (blocked by task_1)",
        "task_3 [pending] do task_3 (blocked by task_1)",
        "task_4 [pending] do task_4 (blocked by task_2, task_3)",
    ]
    assert human.stdout.splitlines() == ["1 completed, 4 pending", *open_lines]
    assert as_json.json() == {"counts": {"completed": 1, "pending": 4}, "open": open_lines}


def test_import_accepts_a_store_a_tasks_object_or_a_list_and_keeps_ids(
    rho: RunRho, tmp_path: Path
) -> None:
    write_store(tmp_path / "doc.json", [task("task_7")], revision=40, next_id=8)
    (tmp_path / "object.json").write_text(json.dumps({"tasks": [task("task_8", "task_7")]}))
    (tmp_path / "list.json").write_text(json.dumps([task("x", "task_8")]))
    outputs = [
        rho("task", "import", name, "--store", "s.json").stdout
        for name in ("doc.json", "object.json", "list.json")
    ]
    assert outputs == ["imported 1 task(s)\n"] * 3
    document = _read(tmp_path / "s.json")
    # The imported file's own revision and counter do not carry over; the counter moves past ids.
    assert (document["revision"], document["next_id"]) == (3, 9)
    assert [t["id"] for t in document["tasks"]] == ["task_7", "task_8", "x"]
    assert rho("task", "add", "after", "--store", "s.json").stdout == "added task_9: after\n"


def test_import_json_prints_the_imported_tasks(rho: RunRho, tmp_path: Path) -> None:
    (tmp_path / "list.json").write_text(json.dumps([task("a"), task("b", "a")]))
    result = rho("task", "import", "list.json", "--json", "--store", "s.json")
    assert [t["id"] for t in result.json()["tasks"]] == ["a", "b"]


def test_export_prints_the_store_file_exactly(rho: RunRho, tmp_path: Path) -> None:
    rho("task", "add", "a", "--command", "echo a", "--store", "s.json")
    rho("task", "add", "b", "--blocked-by", "task_1", "--store", "s.json")
    result = rho("task", "export", "--store", "s.json")
    assert result.stdout == (tmp_path / "s.json").read_text()


def test_exported_store_imports_into_an_empty_store_unchanged(rho: RunRho, tmp_path: Path) -> None:
    rho("task", "add", "a", "--command", "echo a", "--store", "s.json")
    rho("task", "add", "b", "--blocked-by", "task_1", "--store", "s.json")
    rho("task", "update", "task_1", "--status", "completed", "--store", "s.json")
    (tmp_path / "backup.json").write_text(rho("task", "export", "--store", "s.json").stdout)
    rho("task", "import", "backup.json", "--store", "copy.json")
    assert _read(tmp_path / "copy.json")["tasks"] == _read(tmp_path / "s.json")["tasks"]


def test_reads_of_a_missing_named_store_are_refused(rho: RunRho, tmp_path: Path) -> None:
    # A typo in --store (or $RHO_TASK_STORE) is not an empty store.
    for command in ("list --json", "ready --json", "waves", "show task_1", "export"):
        result = rho("task", *command.split(), "--store", "none.json")
        assert (result.code, result.stdout) == (2, ""), command
        assert result.stderr == (
            "error: no task store at none.json (named by --store); a write such as "
            "'rho task add' creates one\n"
        ), command
    env = {"RHO_TASK_STORE": str(tmp_path / "typo.json")}
    assert rho("task", "list", env=env).code == 2
    assert not (tmp_path / "none.json").exists()
    assert rho("task", "add", "first", "--store", "none.json").code == 0  # a write creates it


def test_version_prints_the_package_version(rho: RunRho) -> None:
    result = rho("--version")
    assert (result.code, result.stdout) == (0, f"rho, version {version('rho-mission')}\n")


def test_human_output_prints_brackets_in_user_text_as_written(rho: RunRho, tmp_path: Path) -> None:
    store = tmp_path / "tasks.json"
    subject = "Parse [a-z] words [bold]x[/bold]"
    rho("task", "add", subject, "--command", "printf '[tool.ruff]'", "--store", str(store))
    for command in ("list", "show task_1", "ready"):
        result = rho("task", *command.split(), "--store", str(store), env={"COLUMNS": "200"})
        assert result.code == 0
        assert subject in result.stdout, command
    listed = rho("task", "list", "--wide", "--store", str(store), env={"COLUMNS": "200"})
    assert "printf '[tool.ruff]'" in listed.stdout


@pytest.mark.parametrize("store", [("--store", "s.json"), ("--store=s.json",)])  # both lanes
def test_task_options_take_ids_comma_separated_as_only_does(
    rho: RunRho, tmp_path: Path, store: tuple[str, ...]
) -> None:
    for subject in ("a", "b", "c"):
        assert rho("task", "add", subject, *store).code == 0
    added = rho("task", "add", "d", "--blocked-by", "task_1,task_2", "--related", "task_3", *store)
    assert added.code == 0, added.stderr
    updated = rho("task", "update", "task_4", "--remove-blocker", "task_1,", *store)
    assert updated.code == 0, updated.stderr
    (d,) = [t for t in _read(tmp_path / "s.json")["tasks"] if t["id"] == "task_4"]
    links = sorted((link["targetId"], link["type"]) for link in d["dependencies"])
    assert links == [("task_2", "blocks"), ("task_3", "related")]
    refused = rho("task", "add", "e", "--blocked-by", "task_1,nope", *store)
    assert (refused.code, refused.stderr) == (
        2,
        'error: task "task_5" depends on missing blocker "nope"\n',
    )
