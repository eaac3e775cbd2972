"""The fast read path agrees with the full model, and stays free of pydantic and filelock."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taskstore import (
    Dependency,
    StoreDocument,
    StoreReadError,
    Task,
    TaskStore,
    TaskView,
    dump_document,
    read_task_views,
)

from ._graphs import ID_POOL, SORTED_STATUSES, outcome

TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=8)
OPTIONAL_TEXT = st.none() | TEXT


@st.composite
def canonical_tasks(draw: st.DrawFn, ids: list[str]) -> Task:
    """A task as the store itself would write it: any optional field set or not."""
    task_id = draw(st.sampled_from(ids))
    targets = st.sampled_from([*ids, "ghost", " ", ""])
    kinds = st.sampled_from(["blocks", "related", "parent-child"])
    links = draw(st.lists(st.tuples(targets, kinds), max_size=3))
    dependencies = [Dependency(target_id=target, type=kind) for target, kind in links]
    task = Task(
        id=task_id,
        parent_id=draw(OPTIONAL_TEXT),
        subject=draw(TEXT),
        description=draw(TEXT),
        active_form=draw(OPTIONAL_TEXT),
        status=draw(st.sampled_from([*SORTED_STATUSES, "bogus"])),
        owner=draw(OPTIONAL_TEXT),
        dependencies=dependencies,
        metadata=draw(st.dictionaries(TEXT, st.integers() | TEXT, max_size=2)),
        created_at=draw(st.none() | st.just("2026-11-29T21:30:00Z")),
        attempts=draw(st.integers(0, 5)),
        max_attempts=draw(st.none() | st.integers(1, 5)),
        last_error=draw(OPTIONAL_TEXT),
    )
    if draw(st.booleans()):
        labels = draw(st.lists(TEXT, max_size=2))
        return Task.model_validate({**task.model_dump(by_alias=True), "labels": labels})
    return task


@st.composite
def canonical_documents(draw: st.DrawFn) -> StoreDocument:
    """Stores as ``dump_document`` writes them; ids may repeat and graphs may be invalid."""
    ids = draw(st.lists(st.sampled_from(ID_POOL), min_size=1, unique=True, max_size=8))
    tasks = draw(st.lists(canonical_tasks(ids), max_size=10))
    revision = draw(st.integers(0, 10**6))
    return StoreDocument(revision=revision, next_id=draw(st.integers(1, 99)), tasks=tasks)


def same_reading(path: Path) -> list[TaskView] | list[Task]:
    """Read *path* both ways; assert the ids, summaries and schedule outcome agree."""
    views = read_task_views(path)
    tasks = TaskStore(path).tasks()
    assert [v.summary() for v in views] == [t.summary() for t in tasks]
    assert outcome(views) == outcome(tasks)
    return views


@settings(max_examples=150, deadline=None)
@given(canonical_documents())
def test_fast_path_reads_canonical_stores_like_the_model(document: StoreDocument) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "tasks.json"
        path.write_bytes(dump_document(document))
        views = same_reading(path)
    assert all(type(view) is TaskView for view in views), "canonical stores take the fast path"
    assert [v.id for v in views] == sorted(t.id for t in document.tasks)


def task_dict(**changes: Any) -> dict[str, Any]:
    return {"id": "task_1", "subject": "s", "status": "pending", **changes}


ACCEPTED_BY_MODEL_ONLY = [
    pytest.param({"tasks": [task_dict(attempts=True)]}, id="bool-attempts"),
    pytest.param({"tasks": [task_dict(attempts=2.0)]}, id="float-attempts"),
    pytest.param({"revision": "3", "tasks": [task_dict()]}, id="string-revision"),
    pytest.param({"tasks": [task_dict(last_error="boom")]}, id="field-by-python-name"),
    pytest.param(
        {"tasks": [task_dict(dependencies=[{"target_id": "task_1", "type": "related"}])]},
        id="dependency-by-python-name",
    ),
]


@pytest.mark.parametrize("document", ACCEPTED_BY_MODEL_ONLY)
def test_non_canonical_store_falls_back_to_the_model(
    store_path: Path, document: dict[str, Any]
) -> None:
    store_path.parent.mkdir(parents=True)
    store_path.write_text(json.dumps(document))
    views = same_reading(store_path)
    assert all(type(view) is Task for view in views)


REFUSED_BY_MODEL = [
    pytest.param({"tasks": [task_dict(description=None)]}, id="null-description"),
    pytest.param(
        {"tasks": [task_dict(dependencies=[{"targetId": "a", "type": "blocked-by"}])]},
        id="unknown-dependency-type",
    ),
    pytest.param(
        {"tasks": [task_dict(dependencies=[{"targetId": "a", "type": "blocks", "x": 1}])]},
        id="extra-dependency-key",
    ),
    pytest.param({"schema_version": "rho.tasks/v2", "tasks": []}, id="wrong-schema-version"),
    pytest.param({"tasks": {"task_1": task_dict()}}, id="non-list-tasks"),
    pytest.param({"tasks": [task_dict(parent_id=5)]}, id="bad-field-by-python-name"),
    pytest.param({"tasks": [task_dict(id=1)]}, id="int-id"),
    pytest.param({"tasks": [{"id": "task_1", "status": "pending"}]}, id="no-subject"),
    pytest.param({"tasks": ["task_1"]}, id="task-not-an-object"),
    pytest.param({"next_id": 0}, id="next-id-zero"),
    pytest.param({"tasks": [], "owner": "me"}, id="extra-document-key"),
    pytest.param([], id="non-object"),
]


@pytest.mark.parametrize("document", REFUSED_BY_MODEL)
def test_non_canonical_invalid_store_reports_the_model_error(
    store_path: Path, document: Any
) -> None:
    store_path.parent.mkdir(parents=True)
    store_path.write_text(json.dumps(document))
    with pytest.raises(StoreReadError) as expected:
        TaskStore(store_path).load()
    with pytest.raises(StoreReadError) as caught:
        read_task_views(store_path)
    assert str(caught.value) == str(expected.value)


def test_invalid_json_is_reported_like_the_model(store_path: Path) -> None:
    store_path.parent.mkdir(parents=True)
    store_path.write_bytes(b'{"tasks": [')
    message = (
        f"read task store {store_path}: invalid JSON: Expecting value: line 1 column 12 (char 11)"
    )
    with pytest.raises(StoreReadError, match=rf"^{re.escape(message)}$"):
        read_task_views(store_path)


def test_fast_path_sorts_a_hand_written_store_by_id(store_path: Path) -> None:
    store_path.parent.mkdir(parents=True)
    tasks = [task_dict(id="task_2"), task_dict(id="task_10"), task_dict(id="a")]
    store_path.write_text(json.dumps({"tasks": tasks}))
    views = same_reading(store_path)
    assert [(type(v).__name__, v.id) for v in views] == [
        ("TaskView", "a"),
        ("TaskView", "task_10"),
        ("TaskView", "task_2"),
    ]


def test_model_fallback_sorts_a_hand_written_store_by_id(store_path: Path) -> None:
    store_path.parent.mkdir(parents=True)
    tasks = [task_dict(id="task_2", attempts=True), task_dict(id="task_10"), task_dict(id="a")]
    store_path.write_text(json.dumps({"tasks": tasks}))
    views = same_reading(store_path)
    assert [(type(v).__name__, v.id) for v in views] == [
        ("Task", "a"),
        ("Task", "task_10"),
        ("Task", "task_2"),
    ]


def test_missing_store_reads_as_no_tasks(store_path: Path) -> None:
    assert read_task_views(store_path) == []


IMPORT_PROBE = """
import json, sys
from pathlib import Path
import taskstore
views = taskstore.read_task_views(Path(sys.argv[1]))
schedule = taskstore.compute_schedule(views)
roots = {"pydantic", "pydantic_core", "filelock"}
heavy = sorted(m for m in sys.modules if m.split(".")[0] in roots)
print(json.dumps({"kinds": sorted({type(v).__name__ for v in views}), "waves": schedule.waves,
                  "heavy": heavy}))
"""


def probe_imports(path: Path) -> dict[str, Any]:
    run = subprocess.run(
        [sys.executable, "-c", IMPORT_PROBE, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result = json.loads(run.stdout)
    assert isinstance(result, dict)
    return result


def test_fast_path_on_a_canonical_store_imports_neither_pydantic_nor_filelock(
    store: TaskStore, store_path: Path
) -> None:
    store.add("a")
    store.add("b", blocked_by=["task_1"])
    result = probe_imports(store_path)
    assert result == {"kinds": ["TaskView"], "waves": [["task_1"], ["task_2"]], "heavy": []}


def test_import_probe_sees_pydantic_when_the_store_needs_the_model(store_path: Path) -> None:
    """The control of the test above: the probe does notice a pydantic import."""
    store_path.parent.mkdir(parents=True)
    store_path.write_text(json.dumps({"tasks": [task_dict(attempts=True)]}))
    result = probe_imports(store_path)
    assert result["kinds"] == ["Task"]
    assert "pydantic" in result["heavy"]
