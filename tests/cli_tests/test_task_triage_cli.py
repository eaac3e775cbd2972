"""Priority and labels through the real ``rho``: ``--priority`` and ``--label`` on ``add`` and
``update``, the filters of ``list``, ``ready --sort priority``, and a list that fits 80 columns."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from support.rho import RunRho, assert_bad_input, run_rho

# Nine tasks as a user writes them: short subjects, long shell commands.
NINE = [
    (
        "Scaffold the package",
        [],
        "mkdir -p pkg && touch pkg/__init__.py pkg/py.typed",
        1,
        ["setup"],
    ),
    ("Write the lexer", ["task_1"], "python -m pkg.lexer --self-test --verbose", 1, ["core"]),
    ("Write the parser", ["task_2"], "python -m pkg.parser --self-test --verbose", 0, ["core"]),
    ("Parser tests", ["task_3"], "pytest tests/test_parser.py -q --maxfail=1", 2, ["tests"]),
    ("Lexer tests", ["task_2"], "pytest tests/test_lexer.py -q --maxfail=1", 2, ["tests"]),
    ("Error messages", ["task_3"], "python -m pkg.errors --check-all-messages", 3, ["core", "ux"]),
    ("User guide", ["task_3"], "mkdocs build --strict --site-dir site/", 4, ["docs"]),
    ("API reference", ["task_7"], "pdoc pkg --output-dir site/api --docformat google", 4, ["docs"]),
    ("Release", ["task_4", "task_5"], "python -m build && twine check dist/*", 2, []),
]


@pytest.fixture(scope="module")
def nine_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The NINE tasks made by the CLI once per module, with priorities and labels."""
    folder = tmp_path_factory.mktemp("nine")
    for subject, blockers, command, priority, labels in NINE:
        args = ["--command", command, "--priority", str(priority)]
        args += [f"--blocked-by={b}" for b in blockers] + [f"--label={name}" for name in labels]
        assert run_rho("task", "add", subject, *args, "--store", "s.json", cwd=folder).code == 0
    run_rho("task", "update", "task_1", "--status", "completed", "--store", "s.json", cwd=folder)
    run_rho("task", "update", "task_2", "--status", "completed", "--store", "s.json", cwd=folder)
    return (folder / "s.json").read_bytes()


@pytest.fixture
def nine(nine_bytes: bytes, tmp_path: Path) -> Path:
    """This test's own copy of that store, as ``s.json`` in its folder."""
    store = tmp_path / "s.json"
    store.write_bytes(nine_bytes)
    return store


def _stored(store: Path, task_id: str) -> dict[str, Any]:
    tasks = json.loads(store.read_text())["tasks"]
    found: dict[str, Any] = next(t for t in tasks if t["id"] == task_id)
    return found


def _ids(result_json: dict[str, Any]) -> list[str]:
    return [t["id"] for t in result_json["tasks"]]


def test_priority_and_labels_are_stored_in_metadata(rho: RunRho, nine: Path) -> None:
    assert _stored(nine, "task_6")["metadata"] == {
        "command": "python -m pkg.errors --check-all-messages",
        "priority": 3,
        "labels": ["core", "ux"],
    }
    assert json.loads(nine.read_text())["schema_version"] == "rho.tasks/v1"


def test_update_changes_priority_and_labels(rho: RunRho, nine: Path) -> None:
    result = rho(
        "task", "update", "task_6", "--priority", "0", "--label", "a11y",
        "--remove-label", "ux", "--json", "--store", "s.json",
    )  # fmt: skip
    assert result.json()["metadata"] == {
        "command": "python -m pkg.errors --check-all-messages",
        "priority": 0,
        "labels": ["a11y", "core"],
    }
    shown = rho("task", "show", "task_6", "--store", "s.json").stdout.splitlines()
    assert [line.split() for line in shown if line.split()[0] in ("priority", "labels")] == [
        ["priority", "P0"],
        ["labels", "a11y,", "core"],
    ]


def test_list_filters_by_status_label_and_priority(rho: RunRho, nine: Path) -> None:
    def listed(*filters: str) -> list[str]:
        return _ids(rho("task", "list", *filters, "--json", "--store", "s.json").json())

    assert listed("--status", "completed") == ["task_1", "task_2"]
    assert listed("--status", "completed", "--status", "pending") == [
        f"task_{n}" for n in range(1, 10)
    ]
    assert listed("--label", "core") == ["task_2", "task_3", "task_6"]
    assert listed("--label", "core", "--label", "ux") == ["task_6"], "every label given"
    assert listed("--priority", "2") == ["task_4", "task_5", "task_9"]
    assert listed("--priority", "1", "--status", "pending") == []
    title = rho("task", "list", "--label", "docs", "--store", "s.json").stdout.splitlines()[0]
    assert title.strip() == "2 of 9 task(s)"


def test_ready_sorts_by_priority_then_id_only_when_asked(rho: RunRho, nine: Path) -> None:
    # Ready: task_3 (P0) and task_5 (P2); task_10 (P0) and task_11 (P2) added after them.
    rho("task", "add", "Hotfix", "--priority", "0", "--store", "s.json")
    rho("task", "add", "Chore", "--store", "s.json")
    by_id = rho("task", "ready", "--json", "--store", "s.json").json()
    by_id_through_click = rho("task", "ready", "--json", "--sort", "id", "--store", "s.json").json()
    by_priority = rho("task", "ready", "--json", "--sort", "priority", "--store", "s.json").json()
    assert _ids(by_id) == ["task_10", "task_11", "task_3", "task_5"]
    assert by_id_through_click == by_id, "the click-free lane and click answer alike"
    assert _ids(by_priority) == ["task_10", "task_3", "task_11", "task_5"]
    assert by_priority["waves"] == by_id["waves"]
    assert list(by_priority["tasks"][0]) == ["id", "subject", "status", "owner", "dependencies"]


def test_ready_for_people_shows_priorities_when_sorted_by_them(
    rho: RunRho, nine: Path, plain_table: Callable[..., list[list[str]]]
) -> None:
    table = rho("task", "ready", "--sort", "priority", "--store", "s.json").stdout
    assert plain_table(table) == [
        ["id", "pri", "subject"],
        ["task_3", "P0", "Write the parser"],
        ["task_5", "P2", "Lexer tests"],
    ]


def test_nine_tasks_list_in_eleven_lines_within_80_columns(
    rho: RunRho, nine: Path, plain_table: Callable[..., list[list[str]]]
) -> None:
    text = rho("task", "list", "--store", "s.json").stdout
    lines = text.splitlines()
    wide = rho("task", "list", "--wide", "--store", "s.json").stdout.splitlines()
    assert len(lines) == 11, "a title, a header, one line per task"
    assert max(map(len, lines)) <= 80
    rows = plain_table(text)[1:]
    assert [row[0] for row in rows] == [f"task_{n}" for n in range(1, 10)]
    assert rows[2][2:4] == ["P0", "Write the parser"]
    assert "--self-test" in "".join(wide), "--wide shows the commands"
    assert "command" not in "".join(lines)


@pytest.mark.parametrize(
    ("args", "message", "hint"),
    [
        (
            ["update", "task_3", "--priority", "5"],
            "Invalid value for '--priority': 5 is not in the range 0<=x<=4.",
            "run 'rho task update --help' for usage",
        ),
        (
            ["add", "x", "--priority", "high"],
            "Invalid value for '--priority': 'high' is not a valid integer range.",
            "run 'rho task add --help' for usage",
        ),
        (
            ["update", "task_3", "--label", "two words"],
            'label "two words" must start with an ASCII letter or digit and hold only letters,'
            ' digits, ".", "_", ":", "/" and "-"',
            None,
        ),
        (
            ["add", "x", "--label", "x" * 51],
            "task label is 51 characters; the limit is 50",
            None,
        ),
        (["update", "task_3", "--remove-label", "ux"], 'task "task_3" has no label "ux"', None),
    ],
    ids=["priority-5", "priority-word", "label-space", "label-long", "remove-absent"],
)
def test_bad_priority_or_label_is_refused_and_the_store_kept(
    rho: RunRho, nine: Path, args: list[str], message: str, hint: str | None
) -> None:
    before = nine.read_bytes()
    assert_bad_input(rho("task", *args, "--store", "s.json"), message, hint)
    assert nine.read_bytes() == before
