"""Benchmark: the whole ``rho task ready --json`` process against a minimal graphlib script.

Run: ``.venv/bin/python bench/bench_ready_cli.py [--previous TREE]`` (or ``make bench``);
``--previous`` adds the ``rho`` whose source is TREE (a ``git worktree`` of an earlier commit),
timed in the same alternating rounds, and prints this tree's ratio to it. Target: median wall time
of ``rho task ready --json --store FILE`` at most 2.5x a minimal ``python3`` script that loads the
same store and computes the waves with stdlib graphlib. Both run on the virtualenv's Python, one
after the other, ~30 times each. Agents call this command in loops: heavy imports on its path
(pydantic, rich, git, anyio) show up here. Nothing here asserts on speed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

# bench/ is not a package: find _caps.py next to this file however the script is loaded.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _caps import cap_document, graphlib_waves

from taskstore import dump_document

__all__ = ["MINIMAL_SCRIPT", "main"]

TARGET = 2.5

# The yardstick: what an agent would write by hand to get the waves of a store.
MINIMAL_SCRIPT = """\
import json, sys
from graphlib import TopologicalSorter
with open(sys.argv[1], encoding="utf-8") as handle:
    tasks = json.load(handle)["tasks"]
sorter = TopologicalSorter()
for task in tasks:
    sorter.add(task["id"], *[d["targetId"] for d in task.get("dependencies", [])
                             if d["type"] == "blocks"])
sorter.prepare()
waves = []
while sorter.is_active():
    wave = sorted(sorter.get_ready())
    waves.append(wave)
    sorter.done(*wave)
print(json.dumps({"waves": waves}))
"""


# A command line, and the environment it runs in (None: this process's).
Line = tuple[list[str], dict[str, str] | None]
GRAPHLIB = "python3 graphlib"


def commands(store: Path, previous: Path | None = None) -> dict[str, Line]:
    """The command lines, all on this interpreter (the virtualenv's Python); with *previous*,
    also the ``rho`` whose source is that tree (its folder first on ``PYTHONPATH``)."""
    rho = Path(sys.executable).parent / "rho"
    ready = [str(rho), "task", "ready", "--json", "--store", str(store)]
    lines: dict[str, Line] = {"rho task ready --json": (ready, None)}
    if previous is not None:
        env = {**os.environ, "PYTHONPATH": str(previous.resolve())}
        lines[f"rho ({previous.name})"] = (ready, env)
    lines[GRAPHLIB] = ([sys.executable, "-c", MINIMAL_SCRIPT, str(store)], None)
    return lines


def _run(line: Line) -> tuple[float, bytes]:
    argv, env = line
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, check=True, env=env)
    return time.perf_counter() - start, done.stdout


def check_agreement(lines: dict[str, Line], expected: list[list[str]]) -> str | None:
    """None when every process prints the expected waves, else what went wrong."""
    for name, line in lines.items():
        waves = json.loads(_run(line)[1])["waves"]
        if waves != expected:
            return f"{name} printed other waves than compute_schedule"
    return None


def measure(lines: dict[str, Line], repeats: int) -> dict[str, list[float]]:
    """Run each command *repeats* times, alternating, after one warm-up run each."""
    timings: dict[str, list[float]] = {name: [] for name in lines}
    for line in lines.values():
        _run(line)  # warm the page cache and the .pyc files
    for round_number in range(repeats):
        names = list(lines) if round_number % 2 == 0 else list(reversed(lines))
        for name in names:
            timings[name].append(_run(lines[name])[0])
    return timings


def report(timings: dict[str, list[float]]) -> float:
    """Print the table and the ratio rho/minimal script; return the ratio."""
    print(f"{'process':<24} {'median ms':>10} {'min ms':>8} {'max ms':>8} {'runs':>5}")
    for name, runs in timings.items():
        print(
            f"{name:<24} {statistics.median(runs) * 1e3:>10.1f} {min(runs) * 1e3:>8.1f} "
            f"{max(runs) * 1e3:>8.1f} {len(runs):>5}"
        )
    medians = {name: statistics.median(runs) for name, runs in timings.items()}
    baseline = medians.pop(GRAPHLIB)
    ours = next(iter(medians.values()))
    ratio = ours / baseline
    verdict = "met" if ratio <= TARGET else "MISSED"
    print(f"ratio rho/minimal script: {ratio:.2f}x (target <= {TARGET}x: {verdict})")
    for name, median in list(medians.items())[1:]:
        print(
            f"ratio this tree/{name}: {ours / median:.2f}x ({name}/minimal script: "
            f"{median / baseline:.2f}x)"
        )
    return ratio


def main(argv: Sequence[str] | None = None) -> int:
    """Write the store at the caps, check both processes agree, time them, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeats", type=int, default=30, help="timed runs per command")
    parser.add_argument(
        "--previous", type=Path, metavar="TREE", help="also time the rho whose source is TREE"
    )
    args = parser.parse_args(argv)
    document = cap_document()
    with tempfile.TemporaryDirectory(prefix="rho-bench-") as folder:
        store = Path(folder) / "tasks.json"
        store.write_bytes(dump_document(document))
        lines = commands(store, args.previous)
        problem = check_agreement(lines, graphlib_waves(document.tasks))
        if problem is not None:
            print(f"error: {problem}", file=sys.stderr)
            return 1
        size = store.stat().st_size
        print(f"store: {len(document.tasks)} tasks, {size / 1024:.0f} KiB; {sys.executable}")
        report(measure(lines, args.repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
