"""Benchmark: missions at the caps, this tree against the previous release, side by side.

Shapes (no-op tasks, ``--run true --workers 4``, a 200-file repository): 100, 300 and 1,000
features in 10 waves (each task blocked by one to three tasks of the wave before), and a chain
of 200 tasks (200 waves). Each shape runs ``--rounds`` times (default 1) with this tree's
``rho`` and with each baseline's (``--baseline REV``, repeatable; default the first release,
``f5939f6``; each installed from this repository's git history into a scratch virtualenv the
first time, under ``--old-venv``), alternately (the baselines first, then this tree; the other
way round in every second round), each on a fresh copy of the same repository and store, all
from compiled bytecode (see ``_compile_both``).
For each run it prints the wall time, the time per feature, the git processes per feature (a
``git`` shim first on PATH logs every call, in one untimed run of each release per shape), the
peak RSS of the ``rho`` process and the size of ``mission-graph.json``, then the ratio old/new
of the wall times of each round and of their medians. Nothing asserts on speed.

Run: ``.venv/bin/python bench/bench_scale.py [--shapes 100,300,1000,chain200] [--rounds N]
[--baseline 067e0d7 --baseline f5939f6] [--old-venv D]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_git_processes import git_shim, logged_calls

__all__ = ["main"]

OLD_RELEASE = "f5939f6"
ROOT = Path(__file__).resolve().parents[1]
NEW_RHO = Path(sys.executable).parent / "rho"
ENV = {
    **{
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("RHO_", "GIT_")) and k != "PYTHONDONTWRITEBYTECODE"
    },
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}
# Runs a command, then prints the peak RSS (KiB) of its process tree's largest member.
_MEASURE = (
    "import resource, subprocess, sys;"
    "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode;"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(code)"
)


@dataclass(frozen=True)
class Result:
    """One mission run, and how long ``rho graph export --mission-dir`` took on its folder
    (None: the release refused the file)."""

    wall: float
    features: int
    peak_rss_kib: int
    graph_bytes: int
    export: float | None


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(argv, cwd=cwd, env=env or ENV, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr}")
    return done.stdout


def old_venv(folder: Path, revision: str = OLD_RELEASE) -> Path:
    """The scratch virtualenv holding *revision*'s ``rho`` (made once, in ``folder/<rev>``;
    the first release's keeps the folder itself, as before)."""
    venv = folder if revision == OLD_RELEASE else folder.with_name(f"{folder.name}-{revision}")
    rho = venv / "bin" / "rho"
    if not rho.exists():
        _run([sys.executable, "-m", "venv", str(venv)], cwd=ROOT)
        source = f"git+file://{ROOT}@{revision}"
        _run([str(venv / "bin" / "pip"), "install", "--quiet", source], cwd=ROOT)
    return rho


def _store(shape: str) -> dict[str, object]:
    rng = random.Random(7)
    if shape.startswith("chain"):
        count = int(shape.removeprefix("chain"))
        ids = [f"t{i:04d}" for i in range(count)]
        blockers = {task: [ids[i - 1]] if i else [] for i, task in enumerate(ids)}
    else:
        count, width = int(shape), int(shape) // 10
        waves = [[f"t{w:02d}{i:03d}" for i in range(width)] for w in range(10)]
        ids = [task for wave in waves for task in wave]
        blockers = {
            task: sorted(rng.sample(waves[w - 1], rng.randint(1, 3))) if w else []
            for w, wave in enumerate(waves)
            for task in wave
        }
    tasks = [
        {
            "id": task,
            "subject": f"No-op {task}",
            "status": "pending",
            "dependencies": [{"targetId": b, "type": "blocks"} for b in blockers[task]],
        }
        for task in ids
    ]
    return {"schema_version": "rho.tasks/v1", "tasks": tasks}


def _template(root: Path, shape: str, files: int) -> Path:
    repo = root / "repo"
    repo.mkdir(parents=True)
    _run(["git", "init", "--quiet", "--initial-branch=main"], cwd=repo)
    for index in range(files):
        (repo / f"file{index:04d}.txt").write_text(f"line {index}\n")
    _run(["git", "add", "--all"], cwd=repo)
    _run(["git", "commit", "--quiet", "--message=base"], cwd=repo)
    store = root / "tasks.json"
    store.write_text(json.dumps(_store(shape)))
    _run([str(NEW_RHO), "task", "import", str(store)], cwd=repo)
    return root


def _mission(rho: Path, template: Path, work: Path) -> Result:
    """One timed run of *rho* on a fresh copy of *template*, with no shim in the way."""
    repo = _fresh_copy(template, work)
    argv = _mission_argv(rho)
    started = time.perf_counter()
    rss = _run([sys.executable, "-c", _MEASURE, *argv], cwd=repo)
    wall = time.perf_counter() - started
    (graph,) = (repo / ".rho" / "missions").glob("*/mission-graph.json")
    tasks = json.loads((work / "tasks.json").read_text())["tasks"]
    return Result(wall, len(tasks), int(rss.strip()), graph.stat().st_size,
                  _export(rho, graph.parent))  # fmt: skip


def _git_calls(rho: Path, template: Path, work: Path) -> int:
    """The git processes of one untimed run of *rho*, counted by a ``git`` shim on PATH.

    Apart from the timed runs: the shim costs ~0.6 ms per call, which would weigh on the
    release that makes more calls.
    """
    repo = _fresh_copy(template, work)
    log = work / "git.log"
    env = {**ENV, **git_shim(work / "shim", log)}
    _run(_mission_argv(rho), repo, env)
    return len(logged_calls(log))


def _mission_argv(rho: Path) -> list[str]:
    return [str(rho), "mission", "--from-tasks", "--run", "true", "--workers", "4"]


def _fresh_copy(template: Path, work: Path) -> Path:
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(template, work, symlinks=True)
    return work / "repo"


def _compile_both(scratch: Path, olds: list[Path]) -> None:
    """Run both releases from compiled bytecode, as a ``pip install`` leaves them.

    pip compiles what it installs, but this tree is installed in editable mode, and with
    ``PYTHONDONTWRITEBYTECODE`` set (as on these machines) each run would compile it from
    source again: ~0.5 s per run that no installed copy pays. Both releases write their
    bytecode under one scratch prefix, warmed by a small mission of each before any timing.
    """
    ENV["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
    template = _template(scratch / "template-warm", "chain3", files=3)
    for rho in (*olds, NEW_RHO):
        _mission(rho, template, scratch / "warm")


def _export(rho: Path, folder: Path) -> float | None:
    argv = [str(rho), "graph", "export", "--mission-dir", str(folder)]
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=folder, env=ENV, capture_output=True, check=False)
    return time.perf_counter() - started if done.returncode == 0 else None


def _line(label: str, result: Result, git_calls: int) -> str:
    per = result.wall / result.features * 1000
    git = git_calls / result.features
    export = "refused" if result.export is None else f"{result.export:5.2f} s"
    return (
        f"  {label:<7} {result.wall:8.2f} s {per:8.1f} ms/feature {git:6.1f} git/feature"
        f" {result.peak_rss_kib / 1024:7.1f} MiB RSS {result.graph_bytes / 1e6:7.2f} MB graph,"
        f" export {export}"
    )


def main() -> None:
    """Run every shape with each baseline and this tree, and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="100,300,1000,chain200")
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--baseline", action="append", metavar="REV")
    parser.add_argument("--old-venv", type=Path, default=Path(tempfile.gettempdir()) / "rho-old")
    options = parser.parse_args()
    revisions: list[str] = options.baseline or [OLD_RELEASE]
    baselines = {rev: old_venv(options.old_venv, rev) for rev in revisions}
    with tempfile.TemporaryDirectory(prefix="rho-bench-scale-") as scratch:
        _compile_both(Path(scratch), list(baselines.values()))
        for shape in options.shapes.split(","):
            _shape(Path(scratch), shape, options, baselines)


def _shape(
    scratch: Path, shape: str, options: argparse.Namespace, baselines: dict[str, Path]
) -> None:
    template = _template(scratch / f"template-{shape}", shape, options.files)
    work = scratch / "work"
    print(f"{shape}", flush=True)
    runs = {**baselines, "now": NEW_RHO}
    git = {label: _git_calls(rho, template, work) for label, rho in runs.items()}
    walls: dict[str, list[float]] = {label: [] for label in runs}
    for number in range(options.rounds):
        # In turn, every round, the order reversed every other round: with a fixed order, a
        # drift of the machine within a round always lands on the same contender (the same
        # code as two contenders came out 1.03x, 1.02x, 1.00x, 0.97x, round by round).
        order = list(runs.items()) if number % 2 == 0 else list(reversed(runs.items()))
        for label, rho in order:
            result = _mission(rho, template, work)
            walls[label].append(result.wall)
            print(_line(label[:7], result, git[label]), flush=True)
        for label in baselines:
            print(f"  now/{label[:7]} {walls['now'][-1] / walls[label][-1]:6.2f}x", flush=True)
    if options.rounds > 1:
        now = statistics.median(walls["now"])
        for label in baselines:
            ratio = now / statistics.median(walls[label])
            print(f"  median of {options.rounds} rounds: now/{label[:7]} {ratio:6.2f}x")


if __name__ == "__main__":
    main()
