"""Benchmark: one status write of a 1,000-task store, the changed task's text alone against the
whole store dumped again (docs/decisions/0510-mission-records.md).

A mission writes its store at every feature's start and end. The store here is the one a
1,000-task mission writes: every task leased (``rho.lease`` and ``rho.lease_place``, as
``engine._leases`` writes them). Each round writes one task's status through
``TaskStore.record_progress`` (which names the task it changes, so that ``DumpCache`` dumps it
alone) and through ``TaskStore.mutate`` with the same change and no names (every task dumped);
the named write leaves the whole dump's bytes in the file (checked); both write atomically,
with ``fsync``. Also times the dumps alone, without the write. Prints medians and ratios;
nothing asserts on speed.

Run: ``.venv/bin/python bench/bench_store_write.py [--tasks 1000] [--rounds 200]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from functools import partial
from pathlib import Path

from taskstore import StatusChange, StoreDocument, Task, TaskStore, dump_document
from taskstore._dumpcache import DumpCache

__all__ = ["main"]


def _leased_store(count: int) -> StoreDocument:
    place = {"git_dir": "/home/user/project/.git", "folder": "/home/user/project/.rho/missions/m"}
    tasks = [
        Task(
            id=f"t{number:04d}",
            subject=f"Task {number}",
            status="pending",
            metadata={"rho.lease": "20261203T160000Z-abcdef", "rho.lease_place": place},
        )
        for number in range(count)
    ]
    return StoreDocument(tasks=tasks)


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main() -> None:
    """Time both ways, interleaved, and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / ".rho" / "tasks.json"
        document = _leased_store(args.tasks)
        path.parent.mkdir(mode=0o700)
        path.write_bytes(dump_document(document))
        store = TaskStore(path)
        store.record_progress([StatusChange("t0000", "in_progress", 1, None)])  # read once
        named, whole, dump_named, dump_whole = [], [], [], []
        for round_number in range(args.rounds):
            task_id = f"t{round_number % args.tasks:04d}"
            status = "completed" if round_number % 2 else "in_progress"
            change = StatusChange(task_id, status, 1, None)
            started = time.perf_counter()
            store.record_progress([change])
            named.append(time.perf_counter() - started)
            if round_number < 3:  # what the named write left is the whole dump of the store
                assert path.read_bytes() == dump_document(TaskStore(path).load()), "disagree"
            started = time.perf_counter()
            store.mutate(partial(_apply, change=change))
            whole.append(time.perf_counter() - started)
        written = path.read_bytes()
        document = TaskStore(path).load()
        cache = DumpCache()
        cache.dump(document)
        for round_number in range(args.rounds):
            task = document.tasks[round_number % args.tasks]
            task.status = "completed" if round_number % 2 else "in_progress"
            started = time.perf_counter()
            named_bytes = cache.dump(document, {task.id})
            dump_named.append(time.perf_counter() - started)
            started = time.perf_counter()
            whole_bytes = dump_document(document)
            dump_whole.append(time.perf_counter() - started)
            assert named_bytes == whole_bytes, "the two dumps disagree"
    print(f"{args.tasks} leased tasks, {args.rounds} rounds, {len(written) / 1e3:.0f} KB a write")
    print(f"  status write, the task alone    {_median_ms(named):7.3f} ms")
    print(f"  status write, every task dumped {_median_ms(whole):7.3f} ms")
    print(f"  ratio alone/whole (writes)      {_median_ms(named) / _median_ms(whole):7.2f}x")
    print(f"  dump, the task alone            {_median_ms(dump_named):7.3f} ms")
    print(f"  dump, every task                {_median_ms(dump_whole):7.3f} ms")
    ratio = _median_ms(dump_named) / _median_ms(dump_whole)
    print(f"  ratio alone/whole (dumps)       {ratio:7.2f}x")


def _apply(document: StoreDocument, change: StatusChange) -> None:
    task = next(task for task in document.tasks if task.id == change.task_id)
    task.status = change.status
    task.attempts = change.attempts or 0


if __name__ == "__main__":
    main()
