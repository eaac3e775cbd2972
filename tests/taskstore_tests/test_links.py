"""Deleting tasks and editing dependencies: ``TaskStore.delete``, ``add_dependency`` and
``remove_dependency``, their refusals (the file byte for byte) and their one-write atomicity."""

from __future__ import annotations

import errno
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import pytest

from taskstore import (
    DEPENDENCY_TYPES,
    MAX_EDGES,
    InvalidTaskError,
    MissingBlockerError,
    ScheduleCycleError,
    ScheduleLimitError,
    SelfBlockerError,
    StoreWriteError,
    Task,
    TaskInUseError,
    TaskNotFoundError,
    TaskStore,
    TaskStoreError,
)
from taskstore._model import DependencyType

from ._graphs import task, write_document


def exactly(message: str) -> str:
    return rf"^{re.escape(message)}$"


def links(found: Task) -> list[tuple[str, str]]:
    return [(d.type, d.target_id) for d in found.dependencies]


def linked_store(store: TaskStore) -> TaskStore:
    """task_1; task_2 blocked by task_1; task_3 related to task_1 and blocked by task_2;
    task_1.1 a subtask of task_1; task_4 alone."""
    store.add("design")
    store.add("build", blocked_by=["task_1"])
    store.add("ship", blocked_by=["task_2"], related=["task_1"])
    store.add("part", parent="task_1")
    store.add("alone")
    return store


def test_dependency_types_are_the_models() -> None:
    assert get_args(DependencyType) == DEPENDENCY_TYPES


def test_delete_removes_a_task_nobody_links_to(store: TaskStore, store_path: Path) -> None:
    linked_store(store)
    revision = store.load().revision
    done = store.delete("task_4")
    assert (done.task.id, done.task.subject, done.unlinked) == ("task_4", "alone", [])
    document = TaskStore(store_path).load()
    assert [t.id for t in document.tasks] == ["task_1", "task_1.1", "task_2", "task_3"]
    assert (document.revision, document.next_id) == (revision + 1, 5)
    assert store.add("next").id == "task_5", "a deleted task_<n> id is never given again"


def test_delete_of_a_task_others_link_to_is_refused_naming_them(store: TaskStore) -> None:
    linked_store(store)
    store.delete("task_1.1")
    with pytest.raises(TaskInUseError) as caught:
        store.delete("task_1")
    assert str(caught.value) == (
        'cannot delete task "task_1": it is referenced by "task_2" (blocks), "task_3" (related)'
    )
    assert (caught.value.task_id, caught.value.subtasks) == ("task_1", [])
    assert caught.value.dependents == {"task_2": ["blocks"], "task_3": ["related"]}


def test_forced_delete_removes_every_link_to_the_task_in_one_write(
    store: TaskStore, store_path: Path
) -> None:
    linked_store(store)
    store.delete("task_1.1")
    store.update("task_3", add_blockers=["task_1"])
    revision = store.load().revision
    done = store.delete("task_1", force=True)
    assert done.unlinked == ["task_2", "task_3"]
    reread = TaskStore(store_path)
    assert links(reread.get("task_2")) == []
    assert links(reread.get("task_3")) == [("blocks", "task_2")]
    assert reread.load().revision == revision + 1
    assert reread.schedule().waves == [["task_2", "task_4"], ["task_3"]]


def test_a_parent_is_not_deleted_even_forced(store: TaskStore, store_path: Path) -> None:
    linked_store(store)
    store.add("part two", parent="task_1")
    before = store_path.read_bytes()
    message = 'cannot delete task "task_1": it has subtasks "task_1.1", "task_1.2"'
    for force in (False, True):
        with pytest.raises(TaskInUseError, match=exactly(message)) as caught:
            store.delete("task_1", force=force)
        assert caught.value.subtasks == ["task_1.1", "task_1.2"]
    assert store_path.read_bytes() == before


def test_a_subtask_deletes_and_its_parent_then_can(store: TaskStore) -> None:
    linked_store(store)
    assert store.delete("task_1.1").unlinked == []
    assert store.delete("task_1", force=True).unlinked == ["task_2", "task_3"]


def test_a_long_list_of_dependents_is_cut_in_the_message(store: TaskStore) -> None:
    store.add("hub")
    for n in range(12):
        store.add(f"spoke {n}", blocked_by=["task_1"])
    with pytest.raises(TaskInUseError) as caught:
        store.delete("task_1")
    assert str(caught.value).endswith('"task_7" (blocks) and 2 more')
    assert len(caught.value.dependents) == 12


def test_whitespace_padded_links_count_and_are_removed(store: TaskStore, store_path: Path) -> None:
    write_document(store_path, [task("a"), task("b", " a ", related=["a"])])
    with pytest.raises(TaskInUseError, match=r'"b" \(blocks, related\)$'):
        store.delete("a")
    store.delete("a", force=True)
    assert links(store.get("b")) == []


def test_delete_works_on_a_store_that_does_not_schedule(store: TaskStore, store_path: Path) -> None:
    write_document(store_path, [task("a", "b"), task("b", "a"), task("c", "ghost")])
    store.delete("c")
    store.delete("a", force=True)
    assert store.schedule().waves == [["b"]]


def test_add_dependency_of_each_type(store: TaskStore) -> None:
    linked_store(store)
    store.add_dependency("task_4", "task_3")
    store.add_dependency("task_4", " task_2 ", "related")
    changed = store.add_dependency("task_4", "task_1", "parent-child")
    assert links(changed) == [
        ("blocks", "task_3"),
        ("related", "task_2"),
        ("parent-child", "task_1"),
    ]
    assert changed.parent_id == "task_1"
    assert store.get("task_4").parent_id == "task_1"
    assert store.schedule().waves[-1] == ["task_4"]


def test_add_dependency_twice_keeps_one(store: TaskStore) -> None:
    linked_store(store)
    store.add_dependency("task_4", "task_1")
    store.add_dependency("task_4", "task_1")
    assert links(store.get("task_4")) == [("blocks", "task_1")]


def test_remove_dependency_of_each_type(store: TaskStore) -> None:
    linked_store(store)
    store.remove_dependency("task_3", "task_2")
    store.remove_dependency("task_3", "task_1", "related")
    child = store.remove_dependency("task_1.1", "task_1", "parent-child")
    assert links(store.get("task_3")) == []
    assert (links(child), child.parent_id) == ([], None)
    store.delete("task_1.1")  # no longer a subtask: the parent no longer holds it
    assert store.delete("task_1", force=True).unlinked == ["task_2"]


def test_remove_dependency_on_a_task_long_gone_repairs_the_store(
    store: TaskStore, store_path: Path
) -> None:
    write_document(store_path, [task("a", "ghost", related=["phantom"])])
    store.remove_dependency("a", "ghost")
    store.remove_dependency("a", "phantom", "related")
    assert (links(store.get("a")), store.schedule().waves) == ([], [["a"]])


def test_detaching_a_dangling_parent_clears_parent_id(store: TaskStore, store_path: Path) -> None:
    orphan = task("a", parent=["gone"]).model_copy(update={"parent_id": "gone"})
    write_document(store_path, [orphan])
    assert store.remove_dependency("a", "gone", "parent-child").parent_id is None


def test_a_loop_of_parents_in_a_hand_written_store_does_not_hang(
    store: TaskStore, store_path: Path
) -> None:
    loop = [
        task(name).model_copy(update={"parent_id": up}) for name, up in (("a", "b"), ("b", "a"))
    ]
    write_document(store_path, [*loop, task("c")])
    store.add_dependency("c", "a", "parent-child")
    assert store.get("c").parent_id == "a"


def edges_at_the_cap(store_path: Path) -> bytes:
    """100 tasks blocked by each of 100 others: exactly ``MAX_EDGES`` blocking edges."""
    heads = [task(f"h{n:03}") for n in range(100)]
    tails = [task(f"t{n:03}", *(h.id for h in heads)) for n in range(100)]
    assert sum(len(t.blocker_ids) for t in tails) == MAX_EDGES
    return write_document(store_path, [*heads, *tails, task("x")])


REFUSED: list[Any] = [
    pytest.param(
        lambda s: s.add_dependency("task_1", "task_3"),
        ScheduleCycleError,
        "cycle detected in blocking task dependency graph: task_1 -> task_3 -> task_2 -> task_1",
        id="cycle",
    ),
    pytest.param(
        lambda s: s.add_dependency("task_2", "task_2"),
        SelfBlockerError,
        'task "task_2" blocks itself',
        id="self-blocker",
    ),
    pytest.param(
        lambda s: s.add_dependency("task_2", "ghost"),
        MissingBlockerError,
        'task "task_2" depends on missing blocker "ghost"',
        id="missing-blocker",
    ),
    pytest.param(
        lambda s: s.add_dependency("ghost", "task_1"),
        TaskNotFoundError,
        'task "ghost" not found',
        id="missing-task",
    ),
    pytest.param(
        lambda s: s.add_dependency("task_2", "ghost", "related"),
        TaskNotFoundError,
        'task "ghost" not found',
        id="missing-related",
    ),
    pytest.param(
        lambda s: s.add_dependency("task_2", "task_2", "related"),
        InvalidTaskError,
        'task "task_2" cannot be related to itself',
        id="self-related",
    ),
    pytest.param(
        lambda s: s.add_dependency("task_2", "task_2", "parent-child"),
        InvalidTaskError,
        'task "task_2" cannot be a subtask of itself',
        id="self-parent",
    ),
    pytest.param(
        lambda s: s.add_dependency("task_1.1", "task_4", "parent-child"),
        InvalidTaskError,
        'task "task_1.1" is already a subtask of "task_1"',
        id="second-parent",
    ),
    pytest.param(
        lambda s: s.add_dependency("task_1", "task_1.1", "parent-child"),
        InvalidTaskError,
        'task "task_1" cannot be a subtask of "task_1.1": "task_1.1" is inside "task_1"',
        id="containment-loop",
    ),
    pytest.param(
        lambda s: s.add_dependency("task_2", "task_1", "needs"),
        InvalidTaskError,
        'unknown dependency type "needs"; expected one of blocks, parent-child, related',
        id="unknown-type",
    ),
    pytest.param(
        lambda s: s.remove_dependency("task_2", "task_3"),
        InvalidTaskError,
        'task "task_2" is not blocked by "task_3"',
        id="rm-absent-blocker",
    ),
    pytest.param(
        lambda s: s.remove_dependency("task_2", "task_1", "related"),
        InvalidTaskError,
        'task "task_2" is not related to "task_1"',
        id="rm-absent-related",
    ),
    pytest.param(
        lambda s: s.remove_dependency("task_2", "task_1", "parent-child"),
        InvalidTaskError,
        'task "task_2" is not a subtask of "task_1"',
        id="rm-absent-parent",
    ),
    pytest.param(
        lambda s: s.delete("task_9"), TaskNotFoundError, 'task "task_9" not found', id="delete-gone"
    ),
    pytest.param(
        lambda s: s.delete("task_2"),
        TaskInUseError,
        'cannot delete task "task_2": it is referenced by "task_3" (blocks)',
        id="delete-referenced",
    ),
]


@pytest.mark.parametrize(("mutation", "error", "message"), REFUSED)
def test_refused_edit_leaves_the_file_byte_for_byte(
    store: TaskStore,
    store_path: Path,
    mutation: Callable[[TaskStore], object],
    error: type[TaskStoreError],
    message: str,
) -> None:
    linked_store(store)
    before = store_path.read_bytes()
    listing = sorted(os.listdir(store_path.parent))
    with pytest.raises(error, match=exactly(message)):
        mutation(store)
    assert store_path.read_bytes() == before
    assert sorted(os.listdir(store_path.parent)) == listing


def test_a_blocker_beyond_the_edge_cap_is_refused(store: TaskStore, store_path: Path) -> None:
    before = edges_at_the_cap(store_path)
    with pytest.raises(
        ScheduleLimitError, match=exactly("task schedule exceeds 10000-dependency limit")
    ):
        store.add_dependency("x", "h000")
    assert store_path.read_bytes() == before
    store.add_dependency("x", "h000", "related")  # only blocking edges count


def fail_with_enospc(*args: object, **kwargs: object) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def test_forced_delete_failing_midway_leaves_every_task_and_link(
    store: TaskStore, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fault injection: the rename of a forced delete fails; nothing of it is written."""
    linked_store(store)
    store.delete("task_1.1")
    before = store_path.read_bytes()
    monkeypatch.setattr("taskstore._atomic.os.replace", fail_with_enospc)
    with pytest.raises(StoreWriteError):
        store.delete("task_1", force=True)
    monkeypatch.undo()
    assert store_path.read_bytes() == before
    assert [p.name for p in store_path.parent.glob(".tasks.json.*.tmp")] == []


# Deletes task_<n> ids one by one while another process adds tasks: both under the store lock.
DELETER = """
import sys
from taskstore import TaskStore
store = TaskStore(sys.argv[1])
for n in range(1, 41):
    store.delete(f"task_{n}")
"""
ADDER = """
import sys
from taskstore import TaskStore
store = TaskStore(sys.argv[1])
for n in range(40):
    store.add(f"new {n}")
"""


def test_deletes_and_adds_from_two_processes_lose_nothing(
    store: TaskStore, store_path: Path
) -> None:
    for n in range(40):
        store.add(f"old {n}")
    writers = [
        subprocess.Popen([sys.executable, "-c", code, str(store_path)]) for code in (DELETER, ADDER)
    ]
    assert [writer.wait(timeout=120) for writer in writers] == [0, 0]
    document = store.load()
    assert sorted(t.subject for t in document.tasks) == sorted(f"new {n}" for n in range(40))
    assert {t.id for t in document.tasks} == {f"task_{n}" for n in range(41, 81)}
    assert document.revision == 120
