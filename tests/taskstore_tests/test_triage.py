"""Priority and labels in ``metadata``: what ``add``, ``update`` and ``import`` write, what a
hand-written store reads as, and the bounds on label names."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from taskstore import (
    DEFAULT_PRIORITY,
    MAX_LABEL_CHARS,
    MAX_LABELS,
    FieldLimitError,
    InvalidTaskError,
    Task,
    TaskStore,
)

from ._graphs import task, write_document


def exactly(message: str) -> str:
    return rf"^{re.escape(message)}$"


def test_priority_and_labels_live_in_metadata(store: TaskStore, store_path: Path) -> None:
    added = store.add("a", priority=0, labels=["ui", "backend", "ui"], command="make")
    assert (added.priority, added.labels) == (0, ["backend", "ui"])
    stored = json.loads(store_path.read_text())
    assert stored["schema_version"] == "rho.tasks/v1"
    assert stored["tasks"][0]["metadata"] == {
        "command": "make",
        "priority": 0,
        "labels": ["backend", "ui"],
    }


def test_a_task_without_priority_has_the_default_and_stores_none(store: TaskStore) -> None:
    added = store.add("a")
    assert (added.priority, added.labels, added.metadata) == (DEFAULT_PRIORITY, [], {})
    assert DEFAULT_PRIORITY == 2


def test_update_sets_priority_removes_then_adds_labels(store: TaskStore) -> None:
    store.add("a", labels=["later", "ui"])
    changed = store.update("task_1", priority=4, add_labels=["later", "z"], remove_labels=["later"])
    assert (changed.priority, changed.labels) == (4, ["later", "ui", "z"])
    emptied = store.update("task_1", remove_labels=["later", "ui", "z"])
    assert "labels" not in emptied.metadata, "no label left, no key"


@pytest.mark.parametrize(
    ("metadata", "priority", "labels"),
    [
        ({"priority": 7}, 2, []),
        ({"priority": True}, 2, []),
        ({"priority": "1"}, 2, []),
        ({"priority": 0, "labels": "ui"}, 0, []),
        ({"labels": ["b", 3, "a", "b", None]}, 2, ["a", "b"]),
    ],
    ids=["out-of-range", "bool", "string", "labels-not-a-list", "labels-mixed"],
)
def test_hand_written_values_out_of_shape_read_leniently(
    metadata: dict[str, Any], priority: int, labels: list[str]
) -> None:
    found = Task(id="a", subject="s", status="pending", metadata=metadata)
    assert (found.priority, found.labels) == (priority, labels)


def test_an_update_without_labels_keeps_a_hand_written_labels_value(
    store: TaskStore, store_path: Path
) -> None:
    write_document(
        store_path, [task("a").model_copy(update={"metadata": {"labels": "ui", "priority": 9}})]
    )
    store.update("a", status="completed")
    assert store.get("a").metadata == {"labels": "ui", "priority": 9}
    assert store.update("a", priority=1, add_labels=["ui"]).metadata == {
        "labels": ["ui"],
        "priority": 1,
    }


REFUSED: list[Any] = [
    pytest.param(
        {"priority": 5},
        InvalidTaskError,
        "task priority must be 0 (highest) to 4, not 5",
        id="priority-5",
    ),
    pytest.param(
        {"priority": -1},
        InvalidTaskError,
        "task priority must be 0 (highest) to 4, not -1",
        id="priority-negative",
    ),
    pytest.param(
        {"add_labels": ["x" * (MAX_LABEL_CHARS + 1)]},
        FieldLimitError,
        f"task label is {MAX_LABEL_CHARS + 1} characters; the limit is {MAX_LABEL_CHARS}",
        id="label-too-long",
    ),
    pytest.param(
        {"add_labels": ["two words"]},
        InvalidTaskError,
        'label "two words" must start with an ASCII letter or digit and hold only letters,'
        ' digits, ".", "_", ":", "/" and "-"',
        id="label-space",
    ),
    pytest.param(
        {"add_labels": ["-x"]},
        InvalidTaskError,
        'label "-x" must start with an ASCII letter or digit and hold only letters,'
        ' digits, ".", "_", ":", "/" and "-"',
        id="label-leading-dash",
    ),
    pytest.param(
        {"add_labels": [""]},
        InvalidTaskError,
        'label "" must start with an ASCII letter or digit and hold only letters,'
        ' digits, ".", "_", ":", "/" and "-"',
        id="label-empty",
    ),
    pytest.param(
        {"add_labels": [f"l{n}" for n in range(MAX_LABELS)]},  # and "ui"
        FieldLimitError,
        f'task "task_1" labels is {MAX_LABELS + 1} labels; the limit is {MAX_LABELS}',
        id="too-many-labels",
    ),
    pytest.param(
        {"remove_labels": ["absent"]},
        InvalidTaskError,
        'task "task_1" has no label "absent"',
        id="remove-absent-label",
    ),
]


@pytest.mark.parametrize(("change", "error", "message"), REFUSED)
def test_refused_triage_leaves_the_file_byte_for_byte(
    store: TaskStore,
    store_path: Path,
    change: dict[str, Any],
    error: type[Exception],
    message: str,
) -> None:
    store.add("a", labels=["ui"])
    before = store_path.read_bytes()
    with pytest.raises(error, match=exactly(message)):
        store.update("task_1", **change)
    assert store_path.read_bytes() == before


def test_labels_of_the_allowed_shapes_are_kept_as_written(store: TaskStore) -> None:
    names = ["area:cli", "v1.2", "needs/review", "P0_bug", "x" * MAX_LABEL_CHARS, "UI"]
    assert store.add("a", labels=names).labels == sorted(names)


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ({"priority": 9}, "task priority must be 0 (highest) to 4, not 9"),
        ({"labels": "ui"}, 'task "x" labels must be a list of names'),
        ({"labels": ["ok", "not ok"]}, 'label "not ok" must start with an ASCII letter'),
    ],
    ids=["priority", "labels-not-a-list", "bad-label"],
)
def test_import_holds_priority_and_labels_to_the_same_rules(
    store: TaskStore, metadata: dict[str, Any], message: str
) -> None:
    imported = task("x").model_copy(update={"metadata": metadata})
    with pytest.raises(InvalidTaskError, match=f"^{re.escape(message)}"):
        store.import_tasks([imported])
    assert store.tasks() == []
