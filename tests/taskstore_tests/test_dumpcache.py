"""A store write that names the tasks it changed reuses the others' text, and writes
exactly the bytes of a whole dump. Property tests against ``dump_document``, and a real store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import taskstore._dumpcache as dumpcache
from taskstore import StatusChange, StoreDocument, Task, TaskStore, dump_document
from taskstore._document import document_text
from taskstore._dumpcache import DumpCache

from .test_fastread import TEXT, canonical_documents


def _count_whole_dumps(monkeypatch: pytest.MonkeyPatch) -> list[StoreDocument]:
    """The documents dumped whole (every task serialized) from now on."""
    whole: list[StoreDocument] = []

    def counted(document: StoreDocument) -> str:
        whole.append(document)
        return document_text(document)

    monkeypatch.setattr(dumpcache, "document_text", counted)
    return whole


# Texts that look like the dump's own layout, where a careless split would cut a task.
LAYOUT = st.sampled_from(['\n  "tasks": [\n', "\n    },\n    {\n", "\n  ]", "    {", "é\u2028"])
VALUES = st.recursive(
    st.none() | st.integers() | TEXT | LAYOUT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT | LAYOUT, inner, max_size=3),
    max_leaves=8,
)


def _edit(task: Task, status: str, error: str | None, value: object) -> None:
    task.status = status
    task.last_error = error
    task.metadata["rho.lease_place"] = value


@settings(max_examples=150, deadline=None)
@given(
    canonical_documents(),
    st.lists(
        st.tuples(
            st.lists(st.integers(0, 9), max_size=3),
            st.sampled_from(["pending", "in_progress", "completed"]),
            st.none() | TEXT | LAYOUT,
            VALUES,
        ),
        max_size=4,
    ),
)
def test_each_write_naming_its_tasks_is_the_whole_dumps_bytes(
    document: StoreDocument, edits: list[tuple[list[int], str, str | None, object]]
) -> None:
    cache = DumpCache()
    assert cache.dump(document) == dump_document(document)
    for picks, status, error, value in edits:
        touched = set()
        for pick in picks:
            if document.tasks:
                task = document.tasks[pick % len(document.tasks)]
                _edit(task, status, error, value)
                touched.add(task.id)
        document.revision += 1
        assert cache.dump(document, touched) == dump_document(document)


def test_a_task_changed_but_not_named_is_only_written_by_a_whole_dump() -> None:
    # What *touched* promises is the caller's to keep: the text of the others is reused.
    tasks = [Task(id=f"task_{n}", subject="s", status="pending") for n in (1, 2)]
    document = StoreDocument(tasks=tasks)
    cache = DumpCache()
    cache.dump(document)
    tasks[0].status = "completed"
    tasks[1].status = "completed"
    written = json.loads(cache.dump(document, {"task_1"}))
    assert [task["status"] for task in written["tasks"]] == ["completed", "pending"]
    assert cache.dump(document) == dump_document(document)


def test_a_task_added_or_another_document_is_dumped_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    whole = _count_whole_dumps(monkeypatch)
    document = StoreDocument(tasks=[Task(id="task_1", subject="s", status="pending")])
    cache = DumpCache()
    cache.dump(document)
    cache.dump(document, {"task_1"})
    assert len(whole) == 1
    document.tasks.append(Task(id="task_2", subject="t", status="pending"))
    assert cache.dump(document, {"task_2"}) == dump_document(document)
    other = document.model_copy(deep=True)
    assert cache.dump(other, {"task_1"}) == dump_document(other)
    assert len(whole) == 3


def test_a_mission_s_status_writes_dump_only_their_tasks_after_the_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / ".rho" / "tasks.json"
    for number in range(20):
        TaskStore(path).add(f"task {number}")
    store = TaskStore(path)  # a mission's: it reads the store once, then writes it again
    whole = _count_whole_dumps(monkeypatch)
    store.record_progress([StatusChange("task_3", "in_progress", 1, None)])
    store.record_progress([StatusChange("task_3", "completed", 1, None)])
    store.record_progress(
        [
            StatusChange("task_7", "in_progress", 1, "boom"),
            StatusChange("nope", "completed", 1, None),
        ]
    )
    assert len(whole) == 1, "only the first write after the load dumps every task"
    assert path.read_bytes() == dump_document(TaskStore(path).load())
    statuses = {task.id: task.status for task in TaskStore(path).tasks()}
    assert (statuses["task_3"], statuses["task_7"], statuses["task_8"]) == (
        "completed",
        "in_progress",
        "pending",
    )
