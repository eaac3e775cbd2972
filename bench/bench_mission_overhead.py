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
and, from the journal.jsonl of each rho run, where rho's wall time goes. ``--sandbox`` also
times every round with each task under bubblewrap; ``--previous TREE`` also times the rho whose
source is in TREE (``git worktree add /tmp/prev <commit>``), each against the first.

``--run CMD`` makes every task of rho's run CMD instead of ``true`` (a task that commits, to
weigh the object quarantine of ``--sandbox``: ``--run 'echo $RHO_TASK_ID > $RHO_TASK_ID.txt &&
git add -A && git commit -qm t'``).

Run: ``.venv/bin/python bench/bench_mission_overhead.py [--runs 3] [--files 500] [--tmpdir D]
[--sandbox] [--previous TREE] [--run CMD]``.
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


@dataclass(frozen=True)
class Variant:
    """One way of running rho: extra flags, and a tree of rho's source put first on the path
    (``--previous``: an older release checked out, e.g. with ``git worktree add``)."""

    name: str
    flags: tuple[str, ...] = ()
    source: Path | None = None
    command: str = "true"


def run(argv: Sequence[str], cwd: Path, source: Path | None = None) -> str:
    """Run *argv* in *cwd* with the bench environment; its stdout.

    Raises:
        RuntimeError: the command exited non-zero (its stderr is in the message).
    """
    env = ENV if source is None else {**ENV, "PYTHONPATH": str(source)}
    done = subprocess.run(list(argv), cwd=cwd, env=env, capture_output=True, check=False)
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


def timed(argv: Sequence[str], cwd: Path, source: Path | None = None) -> tuple[float, float]:
    """Run *argv* in *cwd*; its wall time in seconds and the wall-clock time it started."""
    started_at = time.time()
    started = time.perf_counter()
    run(argv, cwd, source)
    return time.perf_counter() - started, started_at


def run_rho(setup: Setup, variant: Variant) -> tuple[float, dict[str, float]]:
    """One timed ``rho mission`` run of *variant*; its wall time and the journal breakdown.

    Raises:
        RuntimeError: rho failed, or did not leave one branch per task.
    """
    argv = [str(RHO), "mission", "--from-tasks", "--store", str(setup.store)]
    argv += ["--run", variant.command, "--workers", str(WORKERS), *variant.flags]
    took, started_at = timed(argv, setup.repo, variant.source)
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


Times = dict[str, list[float]]


def measure(
    setup: Setup, runs: int, variants: Sequence[Variant]
) -> tuple[Times, list[dict[str, float]]]:
    """One warm-up round, then *runs* interleaved rounds (each variant of rho, then make), each
    run from a fresh state. The breakdown is the first variant's."""
    times: Times = {name: [] for name in [*(variant.name for variant in variants), "make"]}
    parts: list[dict[str, float]] = []
    for index in range(runs + 1):
        took: dict[str, float] = {}
        for variant in variants:
            reset(setup)
            took[variant.name], split = run_rho(setup, variant)
            if variant is variants[0] and index:
                parts.append(split)
        reset(setup)
        took["make"] = run_make(setup)
        if index:  # the first round warms page cache and .pyc files
            for name, seconds in took.items():
                times[name].append(seconds)
        shown = ", ".join(f"{name} {seconds:6.2f} s" for name, seconds in took.items())
        print(f"  run {index or 'warm-up'}: {shown}", flush=True)
    reset(setup)
    return times, parts


def report(times: Times, parts: list[dict[str, float]]) -> None:
    """Print medians, the ratios to make and to the first variant, and rho's breakdown."""
    tasks = WAVES * WIDTH
    names = list(times)
    runs = len(times["make"])
    print(f"{tasks} no-op tasks, {WAVES} waves of {WIDTH}, {WORKERS} workers, {runs} runs each")
    print(f"  {'':<24}{'median':>9}{'min':>9}{'max':>9}{'per task':>11}")
    for name in names:
        median = statistics.median(times[name])
        found = times[name]
        print(
            f"  {name:<24}{median:8.2f}s{min(found):8.2f}s{max(found):8.2f}s"
            f"{median / tasks * 1000:8.1f} ms"
        )
    make = statistics.median(times["make"])
    first = names[0]
    for name in names[:-1]:
        ratio = statistics.median(times[name]) / make
        verdict = "within" if ratio <= TARGET else "OVER"
        print(f"  ratio {name}/make (medians): {ratio:.2f}x  ({verdict} the {TARGET:.1f}x target)")
    for name in names[1:-1]:
        ratio = statistics.median(times[name]) / statistics.median(times[first])
        print(f"  ratio {name}/{first} (medians): {ratio:.2f}x")
    print(f"where the wall time of {first} goes (journal.jsonl, median over runs)")
    total = statistics.median(times[first])
    for name in ("start-up", "waves", "joins", "shut-down"):
        part = statistics.median(p[name] for p in parts)
        print(f"  {name:<12}{part:8.2f} s  {part / total:6.1%}")
    span = statistics.median(p["feature span"] for p in parts)
    print(f"  one feature, dispatch to finish (mean): {span * 1000:.0f} ms")


def variants_from(options: argparse.Namespace) -> list[Variant]:
    """rho as it is, then with --sandbox and the --previous tree when asked (both: the
    previous tree with --sandbox too); every task running ``--run``."""
    command = options.run
    variants = [Variant(f"rho mission -w{WORKERS}", command=command)]
    previous = Path(options.previous).resolve() if options.previous else None
    if options.sandbox:
        variants.append(Variant("rho --sandbox", ("--sandbox",), command=command))
    if previous is not None:
        variants.append(Variant("rho (previous)", source=previous, command=command))
    if options.sandbox and previous is not None:
        variants.append(
            Variant("rho --sandbox (previous)", ("--sandbox",), source=previous, command=command)
        )
    return variants


def main() -> None:
    """Check the tools, build the repository, run both sides interleaved, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="timed pairs (after one warm-up)")
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--tmpdir", help="where the repository goes (e.g. /dev/shm: a tmpfs)")
    parser.add_argument("--sandbox", action="store_true", help="also time rho --sandbox")
    parser.add_argument(
        "--previous", metavar="TREE", help="also time the rho whose source is in TREE"
    )
    parser.add_argument(
        "--run",
        default="true",
        metavar="CMD",
        help="what each of rho's tasks runs (make's recipes still run 'true'), e.g. a commit",
    )
    options = parser.parse_args()
    for tool in ("make", "flock", "git"):
        if shutil.which(tool) is None:
            sys.exit(f"error: {tool} is not installed")
    print(run(["make", "--version"], Path.cwd()).splitlines()[0], "| flock |", RHO)
    with tempfile.TemporaryDirectory(prefix="bench-mission-", dir=options.tmpdir) as scratch:
        print(f"repository in {scratch}")
        setup = prepare(Path(scratch), options.files)
        report(*measure(setup, options.runs, variants_from(options)))


if __name__ == "__main__":
    main()
