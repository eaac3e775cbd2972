"""Benchmark: the 100-task no-op mission on a 2-worker Dask LocalCluster against the local executor.

Side by side in one run: a mission of 100 no-op tasks in 10 waves of 10,
each blocked by every task of the wave before; ``--run true --workers 4``) on a 200-file
repository with a bare repository as its ``origin``, once with the default local executor and
once with ``--executor dask --scheduler ADDRESS`` on a LocalCluster of 2 worker processes with 2
threads each (4 slots, as ``--workers 4``), started once in this process (not timed).

Every repetition runs on a fresh copy of the same repository and remote (copying is not timed),
one warm-up pair first, then interleaved local/dask/local/dask. Prints the medians, the ratio
dask/local and the overhead per feature of going through the cluster:
``(median dask - median local) / 100``. Nothing asserts on speed.

Run: ``.venv/bin/python bench/bench_dask.py [--runs 3] [--files 200]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_mission_overhead import ENV, RHO, run, store_document

__all__ = ["main"]

WAVES, WIDTH, WORKERS = 10, 10, 4


def _template(root: Path, files: int) -> Path:
    """A repository of *files* files with a bare ``origin`` and the task store, under *root*."""
    repo, remote = root / "repo", root / "remote.git"
    root.mkdir(parents=True)
    run(["git", "init", "--quiet", "--bare", str(remote)], cwd=root)
    repo.mkdir()
    run(["git", "init", "--quiet", "--initial-branch=main"], cwd=repo)
    for index in range(files):
        (repo / f"file{index:04d}.txt").write_text(f"line {index}\n")
    run(["git", "add", "--all"], cwd=repo)
    run(["git", "commit", "--quiet", "--message=base"], cwd=repo)
    run(["git", "remote", "add", "origin", str(remote)], cwd=repo)
    waves = [[f"t{w:02d}{i:02d}" for i in range(WIDTH)] for w in range(WAVES)]
    store = root / "tasks.json"
    store.write_text(json.dumps(store_document(waves)))
    run([str(RHO), "task", "import", str(store)], cwd=repo)
    return root


def _fresh(template: Path, into: Path) -> Path:
    if into.exists():
        shutil.rmtree(into)
    shutil.copytree(template, into, symlinks=True)
    return into / "repo"


def _mission(repo: Path, *executor: str) -> float:
    args = [str(RHO), "mission", "--from-tasks", "--run", "true", "--workers", str(WORKERS)]
    started = time.perf_counter()
    done = subprocess.run([*args, *executor], cwd=repo, env=ENV, capture_output=True, check=False)
    took = time.perf_counter() - started
    if done.returncode != 0:
        output = (done.stdout + done.stderr).decode()[-3000:]
        raise RuntimeError(f"mission exited {done.returncode}: {output}")
    return took


def main() -> None:
    """Run the comparison and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--files", type=int, default=200)
    options = parser.parse_args()
    from distributed import LocalCluster

    with (
        tempfile.TemporaryDirectory(prefix="rho-bench-dask-") as scratch,
        LocalCluster(  # type: ignore[no-untyped-call]
            n_workers=2, threads_per_worker=2, processes=True, dashboard_address=None
        ) as cluster,
    ):
        template = _template(Path(scratch) / "template", options.files)
        work = Path(scratch) / "work"
        dask = ("--executor", "dask", "--scheduler", cluster.scheduler_address)
        _mission(_fresh(template, work))  # warm-up pair
        _mission(_fresh(template, work), *dask)
        local_times, dask_times = [], []
        for _ in range(options.runs):
            local_times.append(_mission(_fresh(template, work)))
            dask_times.append(_mission(_fresh(template, work), *dask))
    local, remote = statistics.median(local_times), statistics.median(dask_times)
    features = WAVES * WIDTH
    print(f"100 no-op features, 10 waves, --workers {WORKERS}, {options.runs} runs each (medians)")
    for label, took in (("local executor", local), ("dask, 2-worker LocalCluster", remote)):
        print(f"  {label:<27} {took:7.2f} s   {took / features * 1000:6.1f} ms/feature")
    print(f"  ratio dask/local            {remote / local:7.2f}x")
    print(f"  overhead per feature        {(remote - local) / features * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
