"""Bounds on what enters the store (add, update, import), and JSON nested too deeply to read.

Loading stays lenient: a hand-written store beyond a bound still loads and can be changed
elsewhere; only what a mutation brings is held to the bounds.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from taskstore import (
    MAX_ACTIVE_FORM_CHARS,
    MAX_COMMAND_CHARS,
    MAX_DESCRIPTION_CHARS,
    MAX_METADATA_DEPTH,
    MAX_OWNER_CHARS,
    MAX_SUBJECT_CHARS,
    MAX_TASK_ID_CHARS,
    Dependency,
    FieldLimitError,
    InvalidTaskError,
    StoreReadError,
    StoreWriteError,
    Task,
    TaskStore,
    read_task_views,
)

from ._graphs import task, write_document


def exactly(message: str) -> str:
    return rf"^{re.escape(message)}$"


def nested(depth: int) -> Any:
    """JSON data *depth* levels deep: ``[]`` is one level, ``[[]]`` two."""
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_limits_are_the_documented_ones() -> None:
    limits = (
        MAX_TASK_ID_CHARS,
        MAX_SUBJECT_CHARS,
        MAX_ACTIVE_FORM_CHARS,
        MAX_OWNER_CHARS,
        MAX_DESCRIPTION_CHARS,
        MAX_COMMAND_CHARS,
        MAX_METADATA_DEPTH,
    )
    assert limits == (100, 500, 500, 200, 65_536, 32_768, 64)


# (field, limit, build a task whose field is *text*)
IMPORTED_FIELDS: list[tuple[str, int, Callable[[str], Task]]] = [
    ("subject", MAX_SUBJECT_CHARS, lambda text: Task(id="a", subject=text, status="pending")),
    (
        "activeForm",
        MAX_ACTIVE_FORM_CHARS,
        lambda text: Task(id="a", subject="s", status="pending", active_form=text),
    ),
    (
        "owner",
        MAX_OWNER_CHARS,
        lambda text: Task(id="a", subject="s", status="pending", owner=text),
    ),
    (
        "description",
        MAX_DESCRIPTION_CHARS,
        lambda text: Task(id="a", subject="s", status="pending", description=text),
    ),
    (
        "command",
        MAX_COMMAND_CHARS,
        lambda text: Task(id="a", subject="s", status="pending", metadata={"command": text}),
    ),
]

FIELD_NAMES = [field for field, _, _ in IMPORTED_FIELDS]


@pytest.mark.parametrize(("field", "limit", "build"), IMPORTED_FIELDS, ids=FIELD_NAMES)
def test_imported_field_at_its_limit_is_kept_and_one_more_is_refused(
    store: TaskStore, store_path: Path, field: str, limit: int, build: Callable[[str], Task]
) -> None:
    store.import_tasks([build("x" * limit)])
    before = store_path.read_bytes()
    over = build("y" * (limit + 1)).model_copy(update={"id": "b"})
    message = f'task "b" {field} is {limit + 1} characters; the limit is {limit}'
    with pytest.raises(FieldLimitError, match=exactly(message)) as caught:
        store.import_tasks([over])
    assert (caught.value.field, caught.value.size, caught.value.limit) == (field, limit + 1, limit)
    assert store_path.read_bytes() == before


@pytest.mark.parametrize(("field", "limit", "build"), IMPORTED_FIELDS, ids=FIELD_NAMES)
def test_imported_field_with_a_nul_is_refused(
    store: TaskStore, field: str, limit: int, build: Callable[[str], Task]
) -> None:
    with pytest.raises(
        InvalidTaskError, match=exactly(f'task "a" {field} contains a NUL character')
    ):
        store.import_tasks([build("a\0b")])
    assert not store.path.exists()


@pytest.mark.parametrize(
    ("task_id", "message"),
    [
        ("i" * 101, "task id is 101 characters; the limit is 100"),
        ("", 'task id "" must start with an ASCII letter, a digit or "_"'),
        (".hidden", 'task id ".hidden" must start with an ASCII letter, a digit or "_"'),
        ("-x", 'task id "-x" must start with an ASCII letter, a digit or "_"'),
        ("a b", 'task id "a b" may hold only ASCII letters, digits, ".", "_" and "-"'),
        ("a/b", 'task id "a/b" may hold only ASCII letters, digits, ".", "_" and "-"'),
        ("tâche", 'task id "tâche" may hold only ASCII letters, digits, ".", "_" and "-"'),
        ("a\0", 'task id "a\\u0000" may hold only ASCII letters, digits, ".", "_" and "-"'),
        ("a\n", 'task id "a\\n" may hold only ASCII letters, digits, ".", "_" and "-"'),
        ("a.", 'task id "a." must not end in "." or ".lock"'),
        ("a.lock", 'task id "a.lock" must not end in "." or ".lock"'),
        ("a..b", 'task id "a..b" must not hold ".."'),
    ],
    ids=[
        "long",
        "empty",
        "dot",
        "dash",
        "space",
        "slash",
        "accent",
        "nul",
        "newline",
        "trailing-dot",
        "lock",
        "dot-dot",
    ],
)
def test_unsafe_imported_id_is_refused(store: TaskStore, task_id: str, message: str) -> None:
    error = FieldLimitError if len(task_id) > MAX_TASK_ID_CHARS else InvalidTaskError
    with pytest.raises(error, match=exactly(message)):
        store.import_tasks([task(task_id)])
    assert not store.path.exists()


@pytest.mark.parametrize("task_id", ["i" * 100, "_x", "0", "a.b-c_D", "task_1.2.3", "x.locks"])
def test_safe_imported_id_is_kept(store: TaskStore, task_id: str) -> None:
    store.import_tasks([task(task_id)])
    assert [t.id for t in store.tasks()] == [task_id]


@pytest.mark.parametrize(
    ("imported", "message"),
    [
        (
            Task(id="a", subject="s", status="pending", parent_id="p" * 101),
            'task "a" parentId is 101 characters; the limit is 100',
        ),
        (
            Task(
                id="a",
                subject="s",
                status="pending",
                dependencies=[Dependency(target_id="r" * 101, type="related")],
            ),
            'task "a" dependency target is 101 characters; the limit is 100',
        ),
        (
            Task(id="a", subject="s", status="pending", last_error="a\0b"),
            'task "a" lastError contains a NUL character',
        ),
    ],
    ids=["parent", "dependency", "last-error"],
)
def test_imported_references_and_other_texts_are_bounded(
    store: TaskStore, imported: Task, message: str
) -> None:
    with pytest.raises(InvalidTaskError, match=exactly(message)):
        store.import_tasks([imported])


def test_imported_metadata_at_the_depth_limit_is_kept_and_deeper_is_refused(
    store: TaskStore, store_path: Path
) -> None:
    # The metadata object is one level; its value the other 63.
    metadata = {"x": nested(MAX_METADATA_DEPTH - 1)}
    store.import_tasks([Task(id="a", subject="s", status="pending", metadata=metadata)])
    before = store_path.read_bytes()
    deep = Task(id="b", subject="s", status="pending", metadata={"x": nested(500)})
    with pytest.raises(
        FieldLimitError, match=exactly('task "b" metadata is 501 levels deep; the limit is 64')
    ):
        store.import_tasks([deep])
    assert store_path.read_bytes() == before


def test_imported_unknown_key_nested_too_deep_is_refused(store: TaskStore) -> None:
    deep = Task.model_validate(
        {"id": "a", "subject": "s", "status": "pending", "notes": nested(65)}
    )
    with pytest.raises(
        FieldLimitError, match=exactly('task "a" field "notes" is 65 levels deep; the limit is 64')
    ):
        store.import_tasks([deep])


@pytest.mark.parametrize(
    ("mutation", "message"),
    [
        (
            lambda s: s.add("x" * 501),
            "task subject is 501 characters; the limit is 500",
        ),
        (
            lambda s: s.add("ok", description="d" * 65_537),
            "task description is 65537 characters; the limit is 65536",
        ),
        (
            lambda s: s.add("ok", command="c" * 32_769),
            "task command is 32769 characters; the limit is 32768",
        ),
        (lambda s: s.add("a\0b"), "task subject contains a NUL character"),
        (lambda s: s.add("ok", command="true\0"), "task command contains a NUL character"),
        (
            lambda s: s.update("task_1", subject="x" * 131_072),
            "task subject is 131072 characters; the limit is 500",
        ),
        (
            lambda s: s.update("task_1", description="\0"),
            "task description contains a NUL character",
        ),
        (
            lambda s: s.update("task_1", command="c" * 40_000),
            "task command is 40000 characters; the limit is 32768",
        ),
        (
            lambda s: s.update("task_1", last_error="exit\0"),
            "task lastError contains a NUL character",
        ),
    ],
    ids=[
        "add-subject",
        "add-description",
        "add-command",
        "add-nul",
        "add-command-nul",
        "update-subject",
        "update-description-nul",
        "update-command",
        "update-last-error-nul",
    ],
)
def test_add_and_update_refuse_texts_beyond_the_limits(
    store: TaskStore,
    store_path: Path,
    mutation: Callable[[TaskStore], object],
    message: str,
) -> None:
    store.add("first")
    before = store_path.read_bytes()
    with pytest.raises(InvalidTaskError, match=exactly(message)):
        mutation(store)
    assert store_path.read_bytes() == before


def test_add_and_update_accept_texts_at_the_limits(store: TaskStore) -> None:
    store.add("s" * 500, description="d" * 65_536, command="c" * 32_768)
    store.update("task_1", subject="t" * 500)
    assert len(store.get("task_1").subject) == 500


def test_subtask_id_past_the_id_limit_is_refused(store: TaskStore, store_path: Path) -> None:
    parent = "p" * 98
    store.import_tasks([task(parent)])
    assert store.add("child", parent=parent).id == f"{parent}.1"
    store.import_tasks([task("q" * 99)])
    before = store_path.read_bytes()
    message = (
        f'task "{"q" * 99}" cannot take a subtask: its id would be 101 characters; the limit is 100'
    )
    with pytest.raises(InvalidTaskError, match=exactly(message)):
        store.add("child", parent="q" * 99)
    assert store_path.read_bytes() == before


def test_subtask_of_an_unsafe_hand_written_id_is_refused(
    store: TaskStore, store_path: Path
) -> None:
    write_document(store_path, [task("my task")])
    message = 'task id "my task.1" may hold only ASCII letters, digits, ".", "_" and "-"'
    with pytest.raises(InvalidTaskError, match=exactly(message)):
        store.add("child", parent="my task")


def test_hand_written_store_beyond_the_limits_loads_and_changes_elsewhere(
    store: TaskStore, store_path: Path
) -> None:
    long = Task(id="long id " * 20, subject="s" * 10_000, status="pending", owner="o" * 1_000)
    write_document(store_path, [long, task("task_1")])
    assert [t.id for t in store.tasks()] == ["long id " * 20, "task_1"]
    store.update("task_1", status="completed")
    store.update("long id " * 20, status="completed")
    assert store.get("long id " * 20).subject == "s" * 10_000


def test_hand_written_metadata_too_deep_to_write_is_named(
    store: TaskStore, store_path: Path
) -> None:
    metadata = {"x": nested(299)}
    data = {"tasks": [{"id": "a", "subject": "s", "status": "pending", "metadata": metadata}]}
    store_path.parent.mkdir(parents=True)
    store_path.write_text(json.dumps(data))
    assert store.get("a").metadata == metadata  # reading stays lenient
    message = 'task "a" metadata is 300 levels deep; the limit is 64'
    with pytest.raises(FieldLimitError, match=exactly(message)):
        store.add("b")
    assert store_path.read_text() == json.dumps(data)


def deep_store(path: Path) -> bytes:
    """A store whose one task holds metadata nested 100,000 levels deep."""
    deep = "[" * 100_000 + "]" * 100_000
    text = '{"tasks": [{"id": "a", "subject": "s", "status": "pending", "metadata": {"x": %s}}]}'
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text % deep)
    return path.read_bytes()


@pytest.mark.parametrize(
    "read",
    [TaskStore.load, lambda s: read_task_views(s.path), lambda s: s.add("x")],
    ids=["model", "fast-path", "mutation"],
)
def test_json_nested_too_deeply_is_a_store_read_error(
    store: TaskStore, store_path: Path, read: Callable[[TaskStore], object]
) -> None:
    before = deep_store(store_path)
    message = f"read task store {store_path}: invalid JSON: nested too deeply"
    with pytest.raises(StoreReadError, match=exactly(message)) as caught:
        read(store)
    assert caught.value.reason == "invalid JSON: nested too deeply"
    assert store_path.read_bytes() == before


def test_lock_file_left_world_writable_is_narrowed_to_0600(
    store: TaskStore, store_path: Path
) -> None:
    lock = store_path.with_name("tasks.json.lock")
    lock.parent.mkdir(parents=True)
    lock.touch()
    os.chmod(lock, 0o666)
    store.add("a")
    assert stat.S_IMODE(lock.stat().st_mode) == 0o600


def test_lock_file_that_is_a_symbolic_link_is_not_followed(
    store: TaskStore, store_path: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.touch()
    os.chmod(elsewhere, 0o644)
    store_path.parent.mkdir(parents=True)
    store_path.with_name("tasks.json.lock").symlink_to(elsewhere)
    message = f"write task store {store_path}: is a symbolic link"
    with pytest.raises(StoreWriteError, match=exactly(message)):
        store.add("a")
    assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o644
    assert not store_path.exists()
