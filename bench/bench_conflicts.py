"""Benchmark: parallel work that overlaps, kept three ways, side by side in one run.

One wave of 12 stand-in agent tasks on 4 workers. Each "thinks" for S seconds (a sleep), then
appends one line to a shared registry file and adds a file of its own: the commonest conflict
of parallel agents. Three ways to land all 12:

- ``resume``: today's default. ``rho mission --from-tasks`` lands one task's registry line,
  the others fail with a merge conflict; the user types ``rho mission resume latest`` until the
  mission completes (each resume runs the failed tasks again, and lands one more);
- ``replay``: ``rho mission --from-tasks --replay-conflicts 11``: one command; the conflicted
  tasks run again from the joined head inside the join, one after another;
- ``resolve``: ``rho mission --from-tasks --resolve examples/agents/stand-in-resolver.sh``: one
  command; each conflicted merge is resolved at the join (the stand-in keeps both sides).

For each: the ``rho`` commands typed, the agent-seconds spent (task runs x S, counted by a
marker each run leaves outside the repository) against the 12 x S the work needs, and the wall
time against the ideal 12 x S / 4, also less, for ``resolve``, the resolve stages' own time
(from the journal's ``resolve`` events: each stage, worktree to merge commit). Every round
makes a fresh repository for each way, in turn; medians over the rounds. Nothing here asserts
on speed; a way that does not land all 12 registry lines stops the script.

Run: ``.venv/bin/python bench/bench_conflicts.py [--rounds 3] [--sleep 1.0] [--tasks 12]
[--workers 4]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["main"]

ROOT = Path(__file__).resolve().parents[1]
RHO = Path(sys.executable).parent / "rho"
RESOLVER = ROOT / "examples" / "agents" / "stand-in-resolver.sh"
ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith(("RHO_", "GIT_"))},
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}
WAYS = {
    "resume": (),
    "replay": ("--replay-conflicts", "{most}"),
    "resolve": ("--resolve", str(RESOLVER)),
}
MAX_RESUMES = 100


@dataclass
class Outcome:
    """One way's run: commands typed, task runs, wall seconds, the resolver's seconds."""

    commands: int
    runs: int
    wall: float
    resolver: float


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=ENV, capture_output=True, text=True, check=False)


def _project(folder: Path, tasks: int, sleep: float) -> tuple[Path, Path]:
    repo, marks = folder / "repo", folder / "marks"
    marks.mkdir(parents=True)
    _run(["git", "init", "-q", "-b", "main", str(repo)], folder)
    (repo / "registry.txt").write_text("")
    _run(["git", "add", "--all"], repo)
    _run(["git", "commit", "-q", "-m", "registry"], repo)
    runs = shlex.quote(str(marks / "runs"))
    store = {
        "tasks": [
            {
                "id": f"t{n:02d}",
                "subject": f"register t{n:02d}",
                "status": "pending",
                "metadata": {
                    "command": f"echo run >> {runs} && sleep {sleep} && "
                    'echo "$RHO_TASK_ID" >> registry.txt && echo x > "$RHO_TASK_ID.txt"'
                },
            }
            for n in range(1, tasks + 1)
        ]
    }
    source = folder / "tasks.json"
    source.write_text(json.dumps(store))
    done = _run([str(RHO), "task", "import", str(source)], repo)
    if done.returncode != 0:
        raise SystemExit(f"task import failed: {done.stderr}")
    return repo, marks


def _resolver_seconds(repo: Path) -> float:
    """The resolve stages' time: each ``resolve`` event's ``duration_ms`` (its worktree, its
    merge, the resolver, rho's checks and commit), summed."""
    (journal,) = (repo / ".rho" / "missions").glob("*/journal.jsonl")
    events = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
    stages = [int(e["duration_ms"]) for e in events if e.get("event") == "resolve"]
    return sum(stages) / 1000


def _one_way(way: str, folder: Path, tasks: int, sleep: float, workers: int) -> Outcome:
    repo, marks = _project(folder, tasks, sleep)
    extra = [part.format(most=tasks - 1) for part in WAYS[way]]
    started = time.perf_counter()
    done = _run([str(RHO), "mission", "--from-tasks", "--workers", str(workers), *extra], repo)
    commands = 1
    while done.returncode != 0 and way == "resume" and commands <= MAX_RESUMES:
        done = _run([str(RHO), "mission", "resume", "latest"], repo)
        commands += 1
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{way}: the mission did not complete: {done.stdout}{done.stderr}")
    pattern = "refs/heads/rho-mission/*/integration"
    branch = _run(["git", "for-each-ref", "--format=%(refname:short)", pattern], repo).stdout
    landed = _run(["git", "show", f"{branch.strip()}:registry.txt"], repo).stdout.split()
    if sorted(landed) != [f"t{n:02d}" for n in range(1, tasks + 1)]:
        raise SystemExit(f"{way}: the registry holds {landed}")
    runs = len((marks / "runs").read_text().splitlines())
    resolver = _resolver_seconds(repo) if way == "resolve" else 0.0
    return Outcome(commands, runs, wall, resolver)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sleep", type=float, default=1.0, help="each task's thinking, seconds")
    parser.add_argument("--tasks", type=int, default=12)
    parser.add_argument("--workers", type=int, default=4)
    options = parser.parse_args(argv)
    tasks, sleep, workers = options.tasks, options.sleep, options.workers
    ideal = tasks * sleep / workers
    found: dict[str, list[Outcome]] = {way: [] for way in WAYS}
    with tempfile.TemporaryDirectory(prefix="bench-conflicts-") as scratch:
        for number in range(options.rounds):
            for way in WAYS:
                folder = Path(scratch) / f"{way}-{number}"
                found[way].append(_one_way(way, folder, tasks, sleep, workers))
                print(f"round {number + 1} {way}: {found[way][-1]}", file=sys.stderr)
    print(
        f"{tasks} tasks of {sleep:g} s on {workers} workers, {options.rounds} round(s), medians; "
        f"ideal wall {ideal:g} s"
    )
    print(
        "| way | rho commands | task runs | agent-seconds / needed | wall / ideal | "
        "(wall - resolve stages) / ideal |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for way, outcomes in found.items():
        runs = statistics.median(o.runs for o in outcomes)
        wall = statistics.median(o.wall for o in outcomes)
        resolver = statistics.median(o.resolver for o in outcomes)
        commands = statistics.median(o.commands for o in outcomes)
        print(
            f"| {way} | {commands:g} | {runs:g} | {runs / tasks:.2f}x | {wall / ideal:.2f}x | "
            f"{(wall - resolver) / ideal:.2f}x |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
