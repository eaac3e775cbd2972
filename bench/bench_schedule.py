"""Benchmark: ``compute_schedule`` at the caps against stdlib graphlib, in the same process.

Run: ``.venv/bin/python bench/bench_schedule.py`` (or ``make bench``). Target: median time of
``compute_schedule`` at most 0.5x graphlib computing the same waves. graphlib does no validation;
``compute_schedule`` checks identities, statuses, blockers and the caps, and computes ``ready``.
Nothing here asserts on speed: the script prints a table and the ratio.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

# bench/ is not a package: find _caps.py next to this file however the script is loaded.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _caps import cap_tasks, graphlib_waves

from taskstore import Task, compute_schedule

__all__ = ["main"]

TARGET = 0.5


def _time_once(function: Callable[[], Any]) -> float:
    # Like timeit: no garbage collection inside the measured call, for both contenders.
    gc.disable()
    try:
        start = time.perf_counter()
        function()
        return time.perf_counter() - start
    finally:
        gc.enable()


def measure(tasks: Sequence[Task], repeats: int) -> dict[str, list[float]]:
    """Time both contenders *repeats* times each, interleaved so drift hits both alike."""
    contenders: dict[str, Callable[[], Any]] = {
        "compute_schedule": lambda: compute_schedule(tasks),
        "graphlib": lambda: graphlib_waves(tasks),
    }
    timings: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(3):  # warm-up
        for function in contenders.values():
            function()
    for round_number in range(repeats):
        # Alternate who goes first, so neither always runs on a warmer cache.
        names = list(contenders) if round_number % 2 == 0 else list(reversed(contenders))
        for name in names:
            timings[name].append(_time_once(contenders[name]))
    return timings


def report(timings: dict[str, list[float]]) -> float:
    """Print the table and the ratio ours/graphlib; return the ratio."""
    print(f"{'contender':<18} {'median ms':>10} {'min ms':>8} {'max ms':>8} {'runs':>5}")
    for name, runs in timings.items():
        print(
            f"{name:<18} {statistics.median(runs) * 1e3:>10.3f} {min(runs) * 1e3:>8.3f} "
            f"{max(runs) * 1e3:>8.3f} {len(runs):>5}"
        )
    ratio = statistics.median(timings["compute_schedule"]) / statistics.median(timings["graphlib"])
    verdict = "met" if ratio <= TARGET else "MISSED"
    print(f"ratio compute_schedule/graphlib: {ratio:.2f}x (target <= {TARGET}x: {verdict})")
    return ratio


def main(argv: Sequence[str] | None = None) -> int:
    """Build the graph at the caps, check both agree, time them and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeats", type=int, default=300, help="timed runs per contender")
    args = parser.parse_args(argv)
    tasks = cap_tasks()
    schedule = compute_schedule(tasks)
    if schedule.waves != graphlib_waves(tasks):
        print("error: compute_schedule and graphlib disagree on the waves", file=sys.stderr)
        return 1
    edges = sum(len(task.blocker_ids) for task in tasks)
    print(
        f"graph: {len(tasks)} tasks, {edges} blocking edges, {len(schedule.waves)} waves, "
        f"{len(schedule.ready)} ready; Python {sys.version.split()[0]}"
    )
    report(measure(tasks, args.repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
