"""The light write path (``_fastwrite``) does what ``TaskStore`` does, byte for byte.

Both make their change through the one implementation (``_edits``), a test holds; what is
left to each is the store's representation (the file's JSON objects, the model) and the writing.
So each example writes one store twice, once through ``TaskStore`` and once through the light
path, from the same file and the same arguments (valid or not), and compares what each returned
or raised and the bytes each left. The clock is the one thing replaced: both paths read it
through ``_edits.now_rfc3339_seconds``, and a second that turns between the two runs would otherwise
tell them apart.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taskstore import (
    StoreDocument,
    Task,
    TaskStore,
    TaskStoreError,
    _edits,
    _store,
    dump_document,
)
from taskstore._fastwrite import fast_add, fast_update

STAMP = "2026-12-01T12:00:00Z"
SEEDED = "2026-11-30T08:00:00Z"  # earlier: a write that forgets ``updatedAt`` shows
IDS = ["task_1", "task_2", "task_3", "task_10", "task_1.1", "ghost", " task_2 ", "", "a"]
TEXTS = st.sampled_from(["", " ", "x", "Parse input", "é\u2028\x1b[31m", "a\0b", "y" * 300])
LABELS = st.lists(st.sampled_from(["api", "ui", "x y", "", "later", "a" * 60]), max_size=3)
PRIORITIES = st.none() | st.integers(-1, 5)


@contextmanager
def frozen_clock(stamp: str = STAMP) -> Iterator[None]:
    with (
        mock.patch.object(_store, "now_rfc3339_seconds", return_value=stamp),
        mock.patch.object(_edits, "now_rfc3339_seconds", return_value=stamp),
    ):
        yield


def seeded(folder: Path) -> Path:
    """A store rho wrote: ten tasks with blockers, a subtask, labels, priorities, commands."""
    path = folder / ".rho" / "tasks.json"
    store = TaskStore(path)
    with frozen_clock(SEEDED):
        for n in range(1, 4):
            store.add(f"task {n}", command="true" if n % 2 else None, priority=n % 5)
        store.add("child", parent="task_1", labels=["later"])
        for n in range(4, 11):
            store.add(f"task {n}", blocked_by=[f"task_{n - 1}"] if n % 3 else [])
        store.update("task_2", status="completed", add_labels=["api"])
    return path


def outcome(run: Callable[[], Any], path: Path) -> tuple[str, Any, bytes]:
    """What *run* returned (as dumped JSON) or raised, and the store's bytes after it."""
    try:
        with frozen_clock():
            result = run()
    except TaskStoreError as exc:
        return "error", f"{type(exc).__name__}: {exc}", path.read_bytes()
    if isinstance(result, Task):
        result = result.model_dump(by_alias=True, exclude_none=True)
    return "ok", result, path.read_bytes()


def both(tmp: Path, full: Callable[[TaskStore], Any], light: Callable[[Path], Any]) -> None:
    source = seeded(tmp / "source")
    copies = []
    for name in ("full", "light"):
        target = tmp / name / ".rho" / "tasks.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        copies.append(target)
    expected = outcome(lambda: full(TaskStore(copies[0])), copies[0])
    got = outcome(lambda: light(copies[1]), copies[1])
    assert got == expected


ADDS = st.fixed_dictionaries(
    {
        "description": TEXTS,
        "blocked_by": st.lists(st.sampled_from(IDS), max_size=3),
        "related": st.lists(st.sampled_from(IDS), max_size=2),
        "parent": st.none() | st.sampled_from(IDS),
        "command": st.none() | TEXTS,
        "priority": PRIORITIES,
        "labels": LABELS,
    }
)
UPDATES = st.fixed_dictionaries(
    {
        "status": st.none() | st.sampled_from(["pending", "completed", "failed", "done", ""]),
        "subject": st.none() | TEXTS,
        "description": st.none() | TEXTS,
        "add_blockers": st.lists(st.sampled_from(IDS), max_size=3),
        "remove_blockers": st.lists(st.sampled_from(IDS), max_size=2),
        "add_related": st.lists(st.sampled_from(IDS), max_size=2),
        "command": st.none() | TEXTS,
        "priority": PRIORITIES,
        "add_labels": LABELS,
        "remove_labels": LABELS,
    }
)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(subject=TEXTS, options=ADDS)
def test_add_matches_the_store(subject: str, options: dict[str, Any]) -> None:
    with _scratch() as tmp:
        both(
            tmp,
            lambda store: store.add(subject, **options),
            lambda path: fast_add(path, subject, **options),
        )


@SETTINGS
@given(task_id=st.sampled_from(IDS), options=UPDATES)
def test_update_matches_the_store(task_id: str, options: dict[str, Any]) -> None:
    with _scratch() as tmp:
        both(
            tmp,
            lambda store: store.update(task_id, **options),
            lambda path: fast_update(path, task_id, **options),
        )


@contextmanager
def _scratch() -> Iterator[Path]:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        yield Path(folder)


def _rewrite(path: Path, change: Callable[[dict[str, Any]], None]) -> bytes:
    data = json.loads(path.read_bytes())
    change(data)
    raw = json.dumps(data, indent=2).encode()
    path.write_bytes(raw)
    return raw


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda d: d["tasks"].reverse(), id="tasks out of order"),
        pytest.param(lambda d: d["tasks"][0]["metadata"].update(weight=1.5), id="a float"),
        pytest.param(lambda d: d["tasks"][0].update(extra=1), id="a key of another tool"),
        pytest.param(lambda d: d["tasks"][0].pop("attempts"), id="a default left out"),
        pytest.param(lambda d: d.pop("revision"), id="no revision"),
        pytest.param(lambda d: d["tasks"][0].update(owner=None), id="a null"),
        pytest.param(
            lambda d: d["tasks"][0]["metadata"].update(deep=_nested(70)), id="deep nesting"
        ),
    ],
)
def test_other_stores_are_left_to_the_model(
    tmp_path: Path, change: Callable[[dict[str, Any]], None]
) -> None:
    path = seeded(tmp_path)
    raw = _rewrite(path, change)
    assert fast_add(path, "more") is None
    assert fast_update(path, "task_1", status="completed") is None
    assert path.read_bytes() == raw


def _nested(levels: int) -> Any:
    value: Any = 0
    for _ in range(levels):
        value = [value]
    return value


def test_a_missing_store_is_left_to_the_model(tmp_path: Path) -> None:
    path = tmp_path / ".rho" / "tasks.json"
    assert fast_add(path, "first") is None
    assert not path.exists()


def test_the_light_write_is_what_the_model_reads(tmp_path: Path) -> None:
    path = seeded(tmp_path)
    added = fast_add(path, "more", blocked_by=["task_3"], priority=0, labels=["ui"])
    assert added is not None
    document = StoreDocument.model_validate_json(path.read_bytes())
    assert path.read_bytes() == dump_document(document)
    assert TaskStore(path).get(added["id"]).model_dump(by_alias=True, exclude_none=True) == added


def test_light_writers_and_the_store_share_one_lock(tmp_path: Path) -> None:
    """Writers of both paths at once, in other processes, lose nothing."""
    path = seeded(tmp_path)
    program = (
        "import sys; from pathlib import Path\n"
        "from taskstore import TaskStore\n"
        "from taskstore._fastwrite import fast_add\n"
        "path, lane = Path(sys.argv[1]), sys.argv[2]\n"
        "for n in range(15):\n"
        "    if lane == 'light': assert fast_add(path, f'light {n}') is not None\n"
        "    else: TaskStore(path).add(f'full {n}')\n"
    )
    writers = [
        subprocess.Popen([sys.executable, "-c", program, str(path), lane])
        for lane in ("light", "full", "light", "full")
    ]
    assert [writer.wait(timeout=120) for writer in writers] == [0, 0, 0, 0]
    subjects = [task.subject for task in TaskStore(path).tasks()]
    assert len(subjects) == 11 + 60
    assert len({s for s in subjects if s.startswith(("light", "full"))}) == 30


def test_the_light_path_imports_no_pydantic(tmp_path: Path) -> None:
    path = seeded(tmp_path)
    program = (
        "import sys; from pathlib import Path\n"
        "from taskstore._fastwrite import fast_add\n"
        "assert fast_add(Path(sys.argv[1]), 'x') is not None\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'filelock')))\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", program, str(path)], capture_output=True, text=True, check=True
    )
    assert found.stdout.strip() == "[]"


def test_the_caps_hold_on_the_light_path(tmp_path: Path) -> None:
    path = tmp_path / ".rho" / "tasks.json"
    tasks = [Task(id=f"t{n:04}", subject="s", status="pending") for n in range(1000)]
    TaskStore(path).import_tasks(tasks)
    before = path.read_bytes()
    with pytest.raises(TaskStoreError, match="1000"):
        fast_add(path, "one too many")
    assert path.read_bytes() == before


@pytest.mark.parametrize("lane", ["model", "light"])
def test_both_paths_change_the_store_through_one_implementation(tmp_path: Path, lane: str) -> None:
    path = seeded(tmp_path)
    adding, updating = _edits.Addition.apply, _edits.Update.apply
    with (
        mock.patch.object(_edits.Addition, "apply", autospec=True, side_effect=adding) as adds,
        mock.patch.object(_edits.Update, "apply", autospec=True, side_effect=updating) as updates,
    ):
        if lane == "light":
            assert fast_add(path, "more", blocked_by=["task_3"]) is not None
            assert fast_update(path, "task_1", status="completed") is not None
        else:
            TaskStore(path).add("more", blocked_by=["task_3"])
            TaskStore(path).update("task_1", status="completed")
    assert (adds.call_count, updates.call_count) == (1, 1)
