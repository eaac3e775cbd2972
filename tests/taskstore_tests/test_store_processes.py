"""The store's lock and atomic replacement, exercised by real concurrent processes."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from filelock import FileLock

from taskstore import TaskStore, read_task_views

# Each writer announces itself, then blocks on stdin until the test releases both at once.
WRITER = """
import sys
from taskstore import TaskStore
store = TaskStore(sys.argv[1])
print("ready", flush=True)
if sys.stdin.readline() != "go\\n":
    sys.exit("no go")
ids = [store.add(f"{sys.argv[2]} {n}").id for n in range(50)]
print(" ".join(ids), flush=True)
"""


def start_writer(path: Path, name: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), name],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def test_two_processes_adding_50_tasks_each_end_with_100_tasks(store_path: Path) -> None:
    writers = [start_writer(store_path, name) for name in ("left", "right")]
    try:
        for writer in writers:
            assert writer.stdout is not None
            assert writer.stdout.readline() == "ready\n"
        for writer in writers:  # the barrier: both are started and waiting
            assert writer.stdin is not None
            writer.stdin.write("go\n")
            writer.stdin.flush()
        torn_reads = read_while_running(store_path, writers)
        outputs = [writer.communicate(timeout=120)[0] for writer in writers]
    finally:
        for writer in writers:
            writer.kill()
            writer.wait(timeout=10)
    assert [writer.returncode for writer in writers] == [0, 0]
    assert torn_reads == []
    claimed = [task_id for output in outputs for task_id in output.split()]
    document = TaskStore(store_path).load()
    assert len(document.tasks) == 100
    assert sorted(claimed) == sorted(t.id for t in document.tasks)
    assert {t.id for t in document.tasks} == {f"task_{n}" for n in range(1, 101)}
    assert (document.revision, document.next_id) == (100, 101)
    subjects = sorted(t.subject for t in document.tasks)
    assert subjects == sorted(f"{name} {n}" for name in ("left", "right") for n in range(50))


def read_while_running(path: Path, writers: list[subprocess.Popen[str]]) -> list[str]:
    """Read the store (without the lock) until the writers exit; return any read that failed."""
    failures: list[str] = []
    deadline = time.monotonic() + 120  # a bound, not a timing assert: communicate() reports hangs
    while any(writer.poll() is None for writer in writers) and time.monotonic() < deadline:
        if path.exists():
            try:
                read_task_views(path)
            except Exception as exc:  # a torn file shows up here, whatever its kind
                failures.append(repr(exc))
    return failures


CRASHING_WRITER = """
import os, sys
from taskstore import TaskStore
def crash(*args, **kwargs):
    os._exit(3)  # the temp file is written and fsynced; the process dies before the rename
os.replace = crash
TaskStore(sys.argv[1]).add("never stored")
"""


def test_writer_killed_before_rename_leaves_previous_file_and_frees_the_lock(
    store: TaskStore, store_path: Path
) -> None:
    store.add("kept")
    before = store_path.read_bytes()
    crashed = subprocess.run(
        [sys.executable, "-c", CRASHING_WRITER, str(store_path)], timeout=60, check=False
    )
    assert crashed.returncode == 3
    assert store_path.read_bytes() == before
    leftovers = [p.name for p in store_path.parent.glob(".tasks.json.*.tmp")]
    assert len(leftovers) == 1, "a crash cannot clean up its temp file; the store ignores it"
    assert json.loads((store_path.parent / leftovers[0]).read_bytes())["revision"] == 2
    with FileLock(str(store_path) + ".lock", timeout=10):
        pass  # the dead writer's lock went away with its process
    assert store.add("next").id == "task_2"
    assert store.load().revision == 2
