"""A store object that rewrites often reuses the document it wrote, never a stale one."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from taskstore import StatusChange, StoreDocument, TaskStore


def test_a_write_by_another_store_object_between_two_writes_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "tasks.json"
    mission = TaskStore(path)  # as a mission's StoreSync: one object, many rewrites
    first = mission.add("one")
    second = mission.add("two")
    TaskStore(path).update(second.id, subject="renamed by someone else")
    mission.record_progress([StatusChange(first.id, "in_progress", 1, None)])
    tasks = {task.id: task for task in TaskStore(path).tasks()}
    assert tasks[second.id].subject == "renamed by someone else"
    assert tasks[first.id].status == "in_progress"


def test_a_hand_edit_of_the_same_size_is_seen(tmp_path: Path) -> None:
    path = tmp_path / "tasks.json"
    store = TaskStore(path)
    task = store.add("abc")
    data = json.loads(path.read_text())
    data["tasks"][0]["subject"] = "xyz"  # same length: the same size on disk
    text = json.dumps(data, indent=2)
    with path.open("r+") as handle:  # in place: the same inode
        handle.write(text)
        handle.truncate()
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1))
    store.record_progress([StatusChange(task.id, "completed", 1, None)])
    (only,) = TaskStore(path).tasks()
    assert (only.subject, only.status) == ("xyz", "completed")


def test_a_refused_change_leaves_nothing_behind_in_the_next_write(tmp_path: Path) -> None:
    path = tmp_path / "tasks.json"
    store = TaskStore(path)
    task = store.add("one")

    def half_done(document: StoreDocument) -> None:
        document.tasks[0].subject = "half"
        raise ValueError("refused")

    with pytest.raises(ValueError, match=r"^refused$"):
        store.mutate(half_done)
    store.record_progress([StatusChange(task.id, "in_progress", 1, None)])
    (only,) = TaskStore(path).tasks()
    assert only.subject == "one"
