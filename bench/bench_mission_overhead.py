"""Benchmark: ``rho mission --from-tasks`` against GNU make over the same 100-task DAG.

Side by side in one run, on one 500-file git repository (in a temporary folder):

- rho: ``rho mission --from-tasks --run true --workers 4`` (the virtualenv's console script, run
  in the repository) over a task store of 100 no-op tasks in 10 waves of 10, each task blocked
  by every task of the wave before; the store is loaded with ``rho task import`` (not timed).
- make: ``make -j4`` over a generated Makefile with one target per task whose prerequisites are
  the previous wave's targets; each recipe runs ``git worktree add -b <branch> <dir>``, ``true``
  and ``git worktree remove <dir>``, the git calls serialized by ``flock`` on one lock file (as
  rho serializes its git metadata calls with its repository lock).

Every repetition starts from the same repository state (new store and mission; the branches,
worktrees and mission folders of the previous run deleted), one warm-up pair first, then runs
interleaved rho/make/rho/make. Prints the medians and the ratio rho/make (target <= 1.0x),
and, from the journal.jsonl of each rho run, where rho's wall time goes.

Run: ``.venv/bin/python bench/bench_mission_overhead.py [--runs 3] [--files 500] [--tmpdir D]``.
The file system decides much of make's side (a fresh ``worktree add`` writes every file): try
both the default temporary folder and a tmpfs (``--tmpdir /dev/shm``).
Nothing here asserts on speed; a failed run (non-zero exit, missing branches) stops the script.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

__all__ = ["main", "makefile_text", "store_document"]

TARGET = 1.0
WAVES, WIDTH, WORKERS = 10, 10, 4
RHO = Path(sys.executable).parent / "rho"
MAKE_PREFIX = "bench-make"
RHO_PREFIX = "rho-mission"

ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("RHO_")},
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


@dataclass(frozen=True)
class Setup:
    """The fixed inputs of every run: the repository, its base commit and the generated files."""

    repo: Path
    base: str
    store_json: Path
    store: Path
    makefile: Path
    trees: Path


def run(argv: Sequence[str], cwd: Path) -> str:
    """Run *argv* in *cwd* with the bench environment; its stdout.

    Raises:
        RuntimeError: the command exited non-zero (its stderr is in the message).
    """
    done = subprocess.run(list(argv), cwd=cwd, env=ENV, capture_output=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()}")
    return done.stdout.decode()


def task_names() -> list[list[str]]:
    """The task ids, wave by wave: ``w01t01`` .. ``w10t10``."""
    return [[f"w{w:02d}t{t:02d}" for t in range(1, WIDTH + 1)] for w in range(1, WAVES + 1)]


def store_document(waves: list[list[str]]) -> dict[str, object]:
    """A ``rho.tasks/v1`` document: each task blocked by every task of the wave before."""
    return {
        "schema_version": "rho.tasks/v1",
        "tasks": [
            _task(task_id, waves[number - 1] if number else [])
            for number, wave in enumerate(waves)
            for task_id in wave
        ],
    }


def _task(task_id: str, blockers: list[str]) -> dict[str, object]:
    return {
        "id": task_id,
        "subject": f"No-op {task_id}",
        "status": "pending",
        "dependencies": [{"targetId": b, "type": "blocks"} for b in blockers],
    }


def makefile_text(waves: list[list[str]], repo: Path, base: str, trees: Path) -> str:
    """One target per task, its prerequisites the previous wave's targets; git under flock."""
    lock = repo / ".git" / "bench-make.lock"
    lines = [
        f"REPO := {repo}",
        f"LOCK := {lock}",
        f"TREES := {trees}",
        f"BASE := {base}",
        f"all: {' '.join(waves[-1])}",
        f".PHONY: all {' '.join(t for wave in waves for t in wave)}",
    ]
    for number, wave in enumerate(waves):
        prerequisites = " ".join(waves[number - 1]) if number else ""
        for task_id in wave:
            lines += [
                f"{task_id}: {prerequisites}".rstrip(),
                f"\t@flock $(LOCK) git -C $(REPO) worktree add --quiet"
                f" -b {MAKE_PREFIX}/$@ $(TREES)/$@ $(BASE)",
                "\t@cd $(TREES)/$@ && true",
                "\t@flock $(LOCK) git -C $(REPO) worktree remove $(TREES)/$@",
            ]
    return "\n".join(lines) + "\n"


def make_repo(root: Path, files: int) -> str:
    """Create a repository of *files* files in 20 folders with one commit; return its sha."""
    run(["git", "init", "--quiet", "--initial-branch=main"], root)
    for index in range(files):
        folder = root / f"dir{index % 20:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"file{index:05d}.txt").write_text(f"line {index}\n" * 20, encoding="utf-8")
    run(["git", "add", "--all"], root)
    run(["git", "commit", "--quiet", "--message=base"], root)
    return run(["git", "rev-parse", "HEAD"], root).strip()


def prepare(scratch: Path, files: int) -> Setup:
    """The repository, the store JSON and the Makefile, all under *scratch*."""
    repo = scratch / "repo"
    repo.mkdir()
    base = make_repo(repo, files)
    waves = task_names()
    setup = Setup(
        repo=repo,
        base=base,
        store_json=scratch / "tasks-import.json",
        store=scratch / "store" / "tasks.json",
        makefile=scratch / "Makefile",
        trees=scratch / "make-worktrees",
    )
    setup.store_json.write_text(json.dumps(store_document(waves)), encoding="utf-8")
    setup.makefile.write_text(makefile_text(waves, repo, base, setup.trees), encoding="utf-8")
    return setup


def branches(repo: Path, prefix: str) -> list[str]:
    """The local branches under ``<prefix>/``."""
    out = run(["git", "for-each-ref", "--format=%(refname:strip=2)", f"refs/heads/{prefix}/"], repo)
    return out.split()


def reset(setup: Setup) -> None:
    """Back to the initial state: no bench branch, worktree, mission or store; a new store."""
    for prefix in (RHO_PREFIX, MAKE_PREFIX):
        names = branches(setup.repo, prefix)
        if names:
            run(["git", "branch", "--quiet", "-D", *names], setup.repo)
    for folder in (setup.repo / ".rho", setup.trees, setup.store.parent):
        shutil.rmtree(folder, ignore_errors=True)
    run(["git", "worktree", "prune"], setup.repo)
    setup.store.parent.mkdir()
    load = [str(RHO), "task", "import", str(setup.store_json), "--store", str(setup.store)]
    run(load, setup.repo)


def timed(argv: Sequence[str], cwd: Path) -> tuple[float, float]:
    """Run *argv* in *cwd*; its wall time in seconds and the wall-clock time it started."""
    started_at = time.time()
    started = time.perf_counter()
    run(argv, cwd)
    return time.perf_counter() - started, started_at


def run_rho(setup: Setup) -> tuple[float, dict[str, float]]:
    """One timed ``rho mission`` run; its wall time and the journal breakdown.

    Raises:
        RuntimeError: rho failed, or did not leave one branch per task.
    """
    argv = [str(RHO), "mission", "--from-tasks", "--store", str(setup.store)]
    argv += ["--run", "true", "--workers", str(WORKERS)]
    took, started_at = timed(argv, setup.repo)
    features = [b for b in branches(setup.repo, RHO_PREFIX) if not b.endswith("/integration")]
    if len(features) != WAVES * WIDTH:
        raise RuntimeError(f"rho left {len(features)} task branches, not {WAVES * WIDTH}")
    (journal,) = (setup.repo / ".rho" / "missions").glob("*/journal.jsonl")
    return took, breakdown(journal, started_at, started_at + took)


def run_make(setup: Setup) -> float:
    """One timed ``make -j4`` run; its wall time.

    Raises:
        RuntimeError: make failed, left a worktree, or did not create one branch per task.
    """
    setup.trees.mkdir()
    argv = ["make", "--silent", f"-j{WORKERS}", "-f", str(setup.makefile)]
    took, _ = timed(argv, setup.makefile.parent)
    made = branches(setup.repo, MAKE_PREFIX)
    if len(made) != WAVES * WIDTH or any(setup.trees.iterdir()):
        raise RuntimeError(f"make left {len(made)} branches and a worktree folder not empty")
    return took


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def breakdown(journal: Path, started: float, ended: float) -> dict[str, float]:
    """Split one rho run's wall time by its journal (millisecond stamps); seconds per part.

    start-up: process start to the ``mission`` event (imports, store read, planning, first
    save); features: mean dispatch-to-finish of one feature (store update, worktree acquire,
    spawn, commit check, release); wave span: first dispatch to last finish of a wave, summed;
    joins: last finish of a wave to the next wave's first dispatch (merges, mission.json and
    graph fsync, journal fsync), summed, the last one up to the final ``mission`` event (which
    also closes the pool); shut-down: that event to process exit.
    """
    events = [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines()]
    at = {(e["event"], e.get("feature_id")): _seconds(e["at"]) for e in events}
    marks = [_seconds(e["at"]) for e in events if e["event"] == "mission"]
    spans, wave_total, join_total = [], 0.0, 0.0
    for number, wave in enumerate(task_names()):
        dispatched = [at["dispatch", t] for t in wave]
        finished = [at["finish", t] for t in wave]
        spans += [f - d for d, f in zip(dispatched, finished, strict=True)]
        wave_total += max(finished) - min(dispatched)
        following = task_names()[number + 1] if number + 1 < WAVES else None
        after = min(at["dispatch", t] for t in following) if following else marks[-1]
        join_total += after - max(finished)
    return {
        "start-up": marks[0] - started,
        "waves": wave_total,
        "joins": join_total,
        "shut-down": ended - marks[-1],
        "feature span": statistics.mean(spans),
    }


def measure(setup: Setup, runs: int) -> tuple[list[float], list[float], list[dict[str, float]]]:
    """One warm-up pair, then *runs* interleaved rho/make pairs, each from a fresh state."""
    rho_times: list[float] = []
    make_times: list[float] = []
    parts: list[dict[str, float]] = []
    for index in range(runs + 1):
        reset(setup)
        took, split = run_rho(setup)
        reset(setup)
        made = run_make(setup)
        if index:  # the first pair warms page cache and .pyc files
            rho_times.append(took)
            make_times.append(made)
            parts.append(split)
        print(f"  run {index or 'warm-up'}: rho {took:6.2f} s, make {made:6.2f} s", flush=True)
    reset(setup)
    return rho_times, make_times, parts


def report(rho: list[float], make: list[float], parts: list[dict[str, float]]) -> None:
    """Print medians, the ratio rho/make and the journal breakdown of rho's runs."""
    tasks = WAVES * WIDTH
    print(f"{tasks} no-op tasks, {WAVES} waves of {WIDTH}, {WORKERS} workers, {len(rho)} runs each")
    print(f"  {'':<24}{'median':>9}{'min':>9}{'max':>9}{'per task':>11}")
    for name, times in ((f"rho mission -w{WORKERS}", rho), (f"make -j{WORKERS}", make)):
        median = statistics.median(times)
        print(
            f"  {name:<24}{median:8.2f}s{min(times):8.2f}s{max(times):8.2f}s"
            f"{median / tasks * 1000:8.1f} ms"
        )
    ratio = statistics.median(rho) / statistics.median(make)
    verdict = "within" if ratio <= TARGET else "OVER"
    print(f"  ratio rho/make (medians): {ratio:.2f}x  ({verdict} the {TARGET:.1f}x target)")
    print("where rho's wall time goes (journal.jsonl, median over runs)")
    total = statistics.median(rho)
    for name in ("start-up", "waves", "joins", "shut-down"):
        part = statistics.median(p[name] for p in parts)
        print(f"  {name:<12}{part:8.2f} s  {part / total:6.1%}")
    span = statistics.median(p["feature span"] for p in parts)
    print(f"  one feature, dispatch to finish (mean): {span * 1000:.0f} ms")


def main() -> None:
    """Check the tools, build the repository, run both sides interleaved, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="timed pairs (after one warm-up)")
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--tmpdir", help="where the repository goes (e.g. /dev/shm: a tmpfs)")
    options = parser.parse_args()
    for tool in ("make", "flock", "git"):
        if shutil.which(tool) is None:
            sys.exit(f"error: {tool} is not installed")
    print(run(["make", "--version"], Path.cwd()).splitlines()[0], "| flock |", RHO)
    with tempfile.TemporaryDirectory(prefix="bench-mission-", dir=options.tmpdir) as scratch:
        print(f"repository in {scratch}")
        setup = prepare(Path(scratch), options.files)
        report(*measure(setup, options.runs))


if __name__ == "__main__":
    main()
