"""What ``TaskStore.update`` and ``TaskStore.import_tasks`` change when they succeed."""

from __future__ import annotations

from pathlib import Path

import pytest

from taskstore import InvalidTaskError, StatusChange, StoreWriteError, Task, TaskStore

from ._graphs import task, write_document


def blocks(task_: Task) -> list[str]:
    return [d.target_id for d in task_.dependencies if d.type == "blocks"]


def test_update_sets_fields_and_persists_them(store: TaskStore, store_path: Path) -> None:
    store.add("a", command="make a")
    store.update(
        "task_1",
        status="failed",
        subject="renamed",
        description="why",
        command="make b",
        last_error="exit 2",
        attempts=3,
    )
    stored = TaskStore(store_path).get("task_1")
    assert (stored.status, stored.subject, stored.description) == ("failed", "renamed", "why")
    assert (stored.command, stored.last_error, stored.attempts) == ("make b", "exit 2", 3)


def test_update_adds_trimmed_blockers_once_and_removes_them(store: TaskStore) -> None:
    store.add("a")
    store.add("b")
    store.update("task_2", add_blockers=[" task_1 ", "task_1"])
    assert blocks(store.get("task_2")) == ["task_1"]
    assert store.schedule().waves == [["task_1"], ["task_2"]]
    store.update("task_2", remove_blockers=["task_1"])
    assert blocks(store.get("task_2")) == []
    assert store.schedule().waves == [["task_1", "task_2"]]


def test_update_adds_related_links_that_do_not_block(store: TaskStore) -> None:
    store.add("a")
    store.add("b")
    store.update("task_2", add_related=["task_1"])
    assert store.get("task_2").summary()["dependencies"] == [
        {"targetId": "task_1", "type": "related"}
    ]
    assert [t.id for t in store.ready_work()] == ["task_1", "task_2"]


def test_update_status_only_keeps_everything_else(store: TaskStore) -> None:
    store.add("a", description="d", command="true")
    before = store.get("task_1")
    store.update("task_1", status="completed")
    after = store.get("task_1")
    assert after.model_dump(exclude={"status", "updated_at"}) == before.model_dump(
        exclude={"status", "updated_at"}
    )


def test_add_with_blockers_related_and_command(store: TaskStore) -> None:
    store.add("a")
    store.add("b")
    added = store.add("c", blocked_by=["task_1", " task_2"], related=["task_1"], command="make")
    assert added.summary()["dependencies"] == [
        {"targetId": "task_1", "type": "related"},
        {"targetId": "task_1", "type": "blocks"},
        {"targetId": "task_2", "type": "blocks"},
    ]
    assert store.get("task_3").metadata == {"command": "make"}


def test_import_keeps_ids_and_moves_the_counter_past_them(store: TaskStore) -> None:
    store.add("a")
    imported = store.import_tasks([task("task_7", "task_1"), task("custom"), task("task_3")])
    assert [t.id for t in imported] == ["task_7", "custom", "task_3"]
    assert [t.id for t in store.tasks()] == ["custom", "task_1", "task_3", "task_7"]
    assert store.load().next_id == 8
    assert store.add("next").id == "task_8"
    assert store.schedule().waves == [["custom", "task_1", "task_3", "task_8"], ["task_7"]]


def test_import_stamps_missing_times_and_keeps_given_ones(store: TaskStore) -> None:
    given = task("b")
    given.created_at = given.updated_at = "2020-01-01T00:00:00Z"
    store.import_tasks([task("a"), given])
    a, b = store.tasks()
    assert a.created_at is not None
    assert a.created_at == a.updated_at
    assert a.created_at != "2020-01-01T00:00:00Z"
    assert (b.created_at, b.updated_at) == ("2020-01-01T00:00:00Z", "2020-01-01T00:00:00Z")


def test_import_of_ids_that_only_look_numeric_leaves_the_counter(store: TaskStore) -> None:
    store.import_tasks([task("task_1x"), task("task_"), task("task_1.5")])
    assert store.load().next_id == 1
    assert store.add("next").id == "task_1"


def test_hand_written_ids_that_only_look_numeric_leave_the_counter(
    store: TaskStore, store_path: Path
) -> None:
    """``task_²`` passes str.isdigit() but int() refuses it: the counter must ignore it.

    Import refuses such an id (not ASCII), but a hand-written store may hold one.
    """
    write_document(store_path, [task("task_²"), task("task_1x")])
    assert store.add("next").id == "task_1"


def test_record_progress_applies_a_batch_in_one_rewrite(store: TaskStore) -> None:
    store.add("a")
    store.add("b")
    revision = store.load().revision
    missing = store.record_progress(
        [
            StatusChange("task_1", "in_progress", attempts=1),
            StatusChange("gone", "completed", attempts=1),
            StatusChange("task_2", "failed", attempts=2, last_error="exit 3"),
            StatusChange("task_1", "completed", attempts=1),
        ]
    )
    document = store.load()
    assert missing == ["gone"]
    assert document.revision == revision + 1
    first, second = document.tasks
    assert (first.status, first.attempts, first.last_error) == ("completed", 1, None)
    assert (second.status, second.attempts, second.last_error) == ("failed", 2, "exit 3")


def test_record_progress_refuses_an_unknown_status_and_writes_nothing(
    store: TaskStore, store_path: Path
) -> None:
    store.add("a")
    before = store_path.read_bytes()
    with pytest.raises(InvalidTaskError, match=r'^invalid status "done"; expected one of '):
        store.record_progress([StatusChange("task_1", "done")])
    assert store_path.read_bytes() == before


def test_a_task_cannot_be_related_to_itself(store: TaskStore, store_path: Path) -> None:
    store.add("a")
    before = store_path.read_bytes()
    with pytest.raises(InvalidTaskError, match=r'^task "task_1" cannot be related to itself$'):
        store.update("task_1", add_related=["task_1"])
    assert store_path.read_bytes() == before


def test_remove_blocker_trims_the_id_like_add_blocker(store: TaskStore) -> None:
    store.add("a")
    store.add("b", blocked_by=["task_1"])
    store.update("task_2", remove_blockers=[" task_1 "])
    assert store.get("task_2").blocker_ids == []


def test_a_store_folder_that_cannot_be_made_is_a_write_error(tmp_path: Path) -> None:
    (tmp_path / ".rho").write_text("a file where the folder should be\n", encoding="utf-8")
    store = TaskStore(tmp_path / ".rho" / "tasks.json")
    with pytest.raises(StoreWriteError, match=r"^write task store .*tasks\.json: "):
        store.add("a")
