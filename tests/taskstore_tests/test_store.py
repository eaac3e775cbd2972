"""The store file: ids, revisions, format, refused mutations, hand-written stores, faults."""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from taskstore import (
    MAX_TASKS,
    EmptyBlockerError,
    InvalidTaskError,
    MissingBlockerError,
    ScheduleCycleError,
    ScheduleError,
    ScheduleLimitError,
    SelfBlockerError,
    StoreReadError,
    StoreWriteError,
    TaskNotFoundError,
    TaskStatusError,
    TaskStore,
    TaskStoreError,
    dump_document,
)

from ._graphs import task, write_document

RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def exactly(message: str) -> str:
    return rf"^{re.escape(message)}$"


def raw_json(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_bytes())
    assert isinstance(data, dict)
    return data


def chain_store(store: TaskStore) -> TaskStore:
    """task_1 <- task_2 <- task_3 (task_2 blocked by task_1, task_3 by task_2)."""
    store.add("design")
    store.add("build", blocked_by=["task_1"])
    store.add("ship", blocked_by=["task_2"])
    return store


def test_add_numbers_tasks_from_the_store_counter(store: TaskStore, store_path: Path) -> None:
    assert [store.add(s).id for s in ("a", "b", "c")] == ["task_1", "task_2", "task_3"]
    data = raw_json(store_path)
    assert (data["revision"], data["next_id"]) == (3, 4)
    added = store.get("task_2")
    assert (added.subject, added.status, added.description) == ("b", "pending", "")
    assert added.created_at is not None
    assert RFC3339.match(added.created_at)


def test_counter_persists_across_store_objects(store: TaskStore, store_path: Path) -> None:
    store.add("a")
    store.add("b")
    assert TaskStore(store_path).add("c").id == "task_3"


def test_children_get_dotted_ids_a_parent_id_and_a_parent_child_link(store: TaskStore) -> None:
    store.add("parent")
    first = store.add("one", parent="task_1")
    second = store.add("two", parent="task_1")
    grandchild = store.add("deeper", parent="task_1.1")
    assert [first.id, second.id, grandchild.id] == ["task_1.1", "task_1.2", "task_1.1.1"]
    assert (second.parent_id, grandchild.parent_id) == ("task_1", "task_1.1")
    assert store.get("task_1.2").summary()["dependencies"] == [
        {"targetId": "task_1", "type": "parent-child"}
    ]
    assert store.add("next top-level").id == "task_2", "children do not use the counter"
    assert [t.id for t in store.ready_work()] == [
        "task_1",
        "task_1.1",
        "task_1.1.1",
        "task_1.2",
        "task_2",
    ], "a parent-child link does not block"


def test_revision_bumps_on_every_write(store: TaskStore) -> None:
    revisions = []
    store.add("a")
    revisions.append(store.load().revision)
    store.add("b", blocked_by=["task_1"])
    revisions.append(store.load().revision)
    store.update("task_1", status="completed")
    revisions.append(store.load().revision)
    store.import_tasks([task("x")])
    revisions.append(store.load().revision)
    assert revisions == [1, 2, 3, 4]


def test_file_without_counters_loads_with_defaults_and_next_id_skips_existing_ids(
    store: TaskStore, store_path: Path
) -> None:
    tasks = [{"id": i, "subject": i, "status": "pending"} for i in ("task_1", "task_2", "task_9")]
    store_path.parent.mkdir(parents=True)
    store_path.write_text(json.dumps({"tasks": tasks}))
    document = store.load()
    assert (document.schema_version, document.revision, document.next_id) == ("rho.tasks/v1", 0, 1)
    assert store.add("new").id == "task_10"
    data = raw_json(store_path)
    assert (data["revision"], data["next_id"]) == (1, 11)
    assert len({t["id"] for t in data["tasks"]}) == 4


def test_a_counter_ahead_of_the_ids_is_kept(store: TaskStore, store_path: Path) -> None:
    document = {"next_id": 7, "tasks": [{"id": "task_1", "subject": "s", "status": "pending"}]}
    store_path.parent.mkdir(parents=True)
    store_path.write_text(json.dumps(document))
    assert store.add("new").id == "task_7"


def test_child_id_skips_a_child_id_already_taken(store: TaskStore) -> None:
    store.add("parent")
    store.import_tasks([task("task_1.2")])  # not a child: no parentId
    assert store.add("child", parent="task_1").id == "task_1.1"
    assert store.add("child", parent="task_1").id == "task_1.3"


def test_file_is_canonical_json_with_tasks_sorted_by_code_point(
    store: TaskStore, store_path: Path
) -> None:
    write_document(store_path, [task("task_2"), task("task_10"), task("task_1")])
    assert [t.id for t in store.tasks()] == ["task_1", "task_10", "task_2"]
    store.add("new")
    assert [t["id"] for t in raw_json(store_path)["tasks"]] == [
        "task_1",
        "task_10",
        "task_11",
        "task_2",
    ]
    raw = store_path.read_bytes()
    assert raw == dump_document(store.load())
    assert raw.endswith(b"}\n")
    assert raw.startswith(b'{\n  "schema_version": "rho.tasks/v1",\n  "revision": 1,')


def test_unknown_task_keys_survive_a_rewrite(store: TaskStore, store_path: Path) -> None:
    extra = {"labels": ["infra"], "estimate": {"hours": 2}, "metadata": {"command": "make", "x": 1}}
    hand_written = {"id": "task_1", "subject": "s", "status": "pending", **extra}
    store_path.parent.mkdir(parents=True)
    store_path.write_text(json.dumps({"schema_version": "rho.tasks/v1", "tasks": [hand_written]}))
    store.add("another")
    store.update("task_1", status="in_progress")
    kept = raw_json(store_path)["tasks"][0]
    assert {key: kept[key] for key in extra} == extra
    assert kept["status"] == "in_progress"


def test_store_file_is_0600_and_rho_folder_0700(store: TaskStore, store_path: Path) -> None:
    store_path.parent.mkdir(parents=True, mode=0o755)
    os.chmod(store_path.parent, 0o755)
    store.add("a")
    assert stat.S_IMODE(store_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store_path.parent.stat().st_mode) == 0o700
    lock = store_path.with_name("tasks.json.lock")
    assert stat.S_IMODE(lock.stat().st_mode) & 0o077 == 0


def test_missing_file_reads_as_an_empty_store(store: TaskStore, store_path: Path) -> None:
    assert store.tasks() == []
    assert store.schedule().waves == []
    assert store.ready_work() == []
    assert not store_path.parent.exists(), "reading creates nothing"


REFUSED: list[Any] = [
    pytest.param(
        lambda s: s.add("x", blocked_by=["task_4"]),
        SelfBlockerError,
        'task "task_4" blocks itself',
        id="add-self-blocker",
    ),
    pytest.param(
        lambda s: s.add("x", blocked_by=["task_1", "ghost"]),
        MissingBlockerError,
        'task "task_4" depends on missing blocker "ghost"',
        id="add-missing-blocker",
    ),
    pytest.param(
        lambda s: s.add("x", blocked_by=[" "]),
        EmptyBlockerError,
        'task "task_4" has an empty blocking dependency',
        id="add-empty-blocker",
    ),
    pytest.param(
        lambda s: s.add("x", related=["ghost"]),
        TaskNotFoundError,
        'task "ghost" not found',
        id="add-missing-related",
    ),
    pytest.param(
        lambda s: s.add("x", parent="ghost"),
        TaskNotFoundError,
        'task "ghost" not found',
        id="add-missing-parent",
    ),
    pytest.param(
        lambda s: s.add("  "), InvalidTaskError, "task subject must not be blank", id="add-blank"
    ),
    pytest.param(
        lambda s: s.update("task_1", add_blockers=[" task_1 "]),
        SelfBlockerError,
        'task "task_1" blocks itself',
        id="update-self-blocker",
    ),
    pytest.param(
        lambda s: s.update("task_1", add_blockers=["ghost"]),
        MissingBlockerError,
        'task "task_1" depends on missing blocker "ghost"',
        id="update-missing-blocker",
    ),
    pytest.param(
        lambda s: s.update("task_1", add_blockers=["task_2"]),
        ScheduleCycleError,
        "cycle detected in blocking task dependency graph: task_1 -> task_2 -> task_1",
        id="direct-cycle",
    ),
    pytest.param(
        lambda s: s.update("task_1", add_blockers=["task_3"]),
        ScheduleCycleError,
        "cycle detected in blocking task dependency graph: task_1 -> task_3 -> task_2 -> task_1",
        id="transitive-cycle",
    ),
    pytest.param(
        lambda s: s.update(
            "task_1",
            status="completed",
            subject="new",
            add_related=["task_2"],
            add_blockers=["task_3"],
        ),
        ScheduleCycleError,
        "cycle detected in blocking task dependency graph: task_1 -> task_3 -> task_2 -> task_1",
        id="cycle-after-other-changes-applies-none",
    ),
    pytest.param(
        lambda s: s.update("task_3", remove_blockers=["task_2"], add_blockers=["ghost"]),
        MissingBlockerError,
        'task "task_3" depends on missing blocker "ghost"',
        id="removal-not-kept-when-an-addition-fails",
    ),
    pytest.param(
        lambda s: s.update("task_1", status="done"),
        InvalidTaskError,
        'invalid status "done"; expected one of '
        "cancelled, completed, failed, in_progress, pending, reviewing, skipped",
        id="update-invalid-status",
    ),
    pytest.param(
        lambda s: s.update("task_3", remove_blockers=["task_1"]),
        InvalidTaskError,
        'task "task_3" is not blocked by "task_1"',
        id="remove-a-non-blocker",
    ),
    pytest.param(
        lambda s: s.update("task_1", add_related=["ghost"]),
        TaskNotFoundError,
        'task "ghost" not found',
        id="add-related-missing",
    ),
    pytest.param(
        lambda s: s.update("task_9", status="completed"),
        TaskNotFoundError,
        'task "task_9" not found',
        id="update-unknown-task",
    ),
    pytest.param(
        lambda s: s.update("task_1", subject="\t"),
        InvalidTaskError,
        "task subject must not be blank",
        id="update-blank-subject",
    ),
    pytest.param(
        lambda s: s.import_tasks([task("x"), task("task_2")]),
        InvalidTaskError,
        'task "task_2" already exists',
        id="import-collision",
    ),
    pytest.param(
        lambda s: s.import_tasks([task("x"), task("x")]),
        InvalidTaskError,
        'task "x" already exists',
        id="import-duplicate-within-batch",
    ),
    pytest.param(
        lambda s: s.import_tasks([task("x", "task_3", "ghost")]),
        MissingBlockerError,
        'task "x" depends on missing blocker "ghost"',
        id="import-missing-blocker",
    ),
    pytest.param(
        lambda s: s.import_tasks([task("x", "y"), task("y", "x")]),
        ScheduleCycleError,
        "cycle detected in blocking task dependency graph: x -> y -> x",
        id="import-cycle",
    ),
    pytest.param(
        lambda s: s.import_tasks([task("task_0", status="later")]),
        TaskStatusError,
        'task "task_0" has invalid status "later"',
        id="import-invalid-status",
    ),
    pytest.param(
        lambda s: s.import_tasks([task(" ")]),
        InvalidTaskError,
        'task id " " may hold only ASCII letters, digits, ".", "_" and "-"',
        id="import-blank-id",
    ),
]


@pytest.mark.parametrize(("mutation", "error", "message"), REFUSED)
def test_refused_mutation_leaves_the_file_byte_for_byte_unchanged(
    store: TaskStore,
    store_path: Path,
    mutation: Callable[[TaskStore], object],
    error: type[TaskStoreError],
    message: str,
) -> None:
    chain_store(store)
    before = store_path.read_bytes()
    listing = sorted(os.listdir(store_path.parent))
    with pytest.raises(error, match=exactly(message)):
        mutation(store)
    assert store_path.read_bytes() == before
    assert sorted(os.listdir(store_path.parent)) == listing


def test_adding_the_1001st_task_is_refused(store: TaskStore, store_path: Path) -> None:
    before = write_document(store_path, [task(f"task_{n}") for n in range(1, MAX_TASKS + 1)])
    with pytest.raises(ScheduleLimitError, match=exactly("task schedule exceeds 1000-task limit")):
        store.add("one too many")
    assert store_path.read_bytes() == before


HAND_WRITTEN = [
    pytest.param(
        [task("task_1", status="done")], 'task "task_1" has invalid status "done"', id="status"
    ),
    pytest.param(
        [task("task_1", "  ")], 'task "task_1" has an empty blocking dependency', id="empty"
    ),
    pytest.param(
        [task("task_1", "task_9")],
        'task "task_1" depends on missing blocker "task_9"',
        id="dangling",
    ),
    pytest.param([task("task_1", "task_1")], 'task "task_1" blocks itself', id="self"),
    pytest.param(
        [task("task_1", "task_2"), task("task_2", "task_1")],
        "cycle detected in blocking task dependency graph: task_1 -> task_2 -> task_1",
        id="cycle",
    ),
]


@pytest.mark.parametrize(("tasks", "message"), HAND_WRITTEN)
def test_invalid_hand_written_store_loads_but_does_not_schedule(
    store: TaskStore, store_path: Path, tasks: list[Any], message: str
) -> None:
    write_document(store_path, [*tasks, task("task_5")])
    assert [t.id for t in store.tasks()][-1] == "task_5"
    with pytest.raises(ScheduleError, match=exactly(message)):
        store.schedule()
    assert store.ready_work() == [], "fails closed although task_5 would be ready"


def test_invalid_store_can_be_repaired_one_command_at_a_time(
    store: TaskStore, store_path: Path
) -> None:
    write_document(store_path, [task("task_1", status="done"), task("task_2", "task_1")])
    store.update("task_1", status="completed")
    assert [t.id for t in store.ready_work()] == ["task_2"]


def test_ready_work_of_a_valid_store(store: TaskStore) -> None:
    chain_store(store)
    store.update("task_1", status="completed")
    assert [t.id for t in store.ready_work()] == ["task_2"]
    assert store.schedule().waves == [["task_1"], ["task_2"], ["task_3"]]


def fail_with_enospc(*args: object, **kwargs: object) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("target", ["taskstore._atomic.os.replace", "taskstore._atomic.os.fsync"])
def test_write_failing_midway_keeps_previous_file_and_leaves_no_temp_file(
    store: TaskStore, store_path: Path, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    """Fault injection: os.replace / os.fsync in taskstore._atomic raise ENOSPC mid-write."""
    store.add("first")
    before = store_path.read_bytes()
    listing = sorted(os.listdir(store_path.parent))
    monkeypatch.setattr(target, fail_with_enospc)
    message = f"write task store {store_path}: No space left on device"
    with pytest.raises(StoreWriteError, match=exactly(message)) as caught:
        store.add("second")
    monkeypatch.undo()
    assert (caught.value.path, caught.value.reason) == (str(store_path), "No space left on device")
    assert store_path.read_bytes() == before
    assert sorted(os.listdir(store_path.parent)) == listing
    assert store.add("third").id == "task_2", "the failed write left nothing behind"


def test_first_write_failing_midway_creates_no_store(
    store: TaskStore, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fault injection: os.replace in taskstore._atomic raises ENOSPC on the very first write."""
    monkeypatch.setattr("taskstore._atomic.os.replace", fail_with_enospc)
    with pytest.raises(StoreWriteError):
        store.add("first")
    assert sorted(os.listdir(store_path.parent)) == ["tasks.json.lock"]


UNREADABLE = [
    pytest.param(
        b"\x80abc",
        "invalid JSON: 'utf-8' codec can't decode byte 0x80 in position 0: invalid start byte",
        id="undecodable",
    ),
    pytest.param(b"", "invalid JSON: Expecting value: line 1 column 1 (char 0)", id="empty-file"),
    pytest.param(
        b'{"tasks": [}',
        "invalid JSON: Expecting value: line 1 column 12 (char 11)",
        id="truncated",
    ),
    pytest.param(
        b"[]",
        "document: expected a JSON object",
        id="non-object",
    ),
    pytest.param(
        b'{"tasks": [{"id": "task_1", "status": "pending"}]}',
        "tasks.0.subject: field required",
        id="task-missing-subject",
    ),
    pytest.param(b'{"tasks": {}}', "tasks: input should be a valid list", id="tasks-not-a-list"),
    pytest.param(
        b'{"schema_version": "rho.tasks/v2"}',
        "schema_version: input should be 'rho.tasks/v1'",
        id="schema-version",
    ),
    pytest.param(
        b'{"revision": -1}', "revision: input should be greater than or equal to 0", id="revision"
    ),
    pytest.param(b'{"tasks": [], "x": 1}', "x: extra inputs are not permitted", id="extra-key"),
]


@pytest.mark.parametrize(("raw", "reason"), UNREADABLE)
def test_unreadable_store_raises_store_read_error(
    store: TaskStore, store_path: Path, raw: bytes, reason: str
) -> None:
    store_path.parent.mkdir(parents=True)
    store_path.write_bytes(raw)
    with pytest.raises(StoreReadError, match=exactly(f"read task store {store_path}: {reason}")):
        store.tasks()
    with pytest.raises(StoreReadError) as caught:
        store.add("refused")
    assert (caught.value.path, caught.value.reason) == (str(store_path), reason)
    assert store_path.read_bytes() == raw


def test_store_path_that_is_a_folder_raises_store_read_error(tmp_path: Path) -> None:
    with pytest.raises(
        StoreReadError, match=exactly(f"read task store {tmp_path}: Is a directory")
    ):
        TaskStore(tmp_path).load()


def test_get_of_unknown_id_is_a_lookup_error(store: TaskStore) -> None:
    with pytest.raises(LookupError) as caught:
        store.get("task_1")
    assert isinstance(caught.value, TaskNotFoundError)
    assert (str(caught.value), caught.value.task_id) == ('task "task_1" not found', "task_1")
