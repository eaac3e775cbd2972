"""Benchmark: what reading an attempt's usage costs at a 16 MiB log (the target: at most
5 ms per attempt more than the same mission without usage reading).

Two measures, side by side in one run:

- ``read``: ``read_attempt_usage`` (the claude reader) over a 16 MiB log whose last line is
  claude's result object, against reading nothing (an attempt of a mission that counts no
  usage still makes and removes its usage folder: that is timed too). Medians over the reads.
- ``mission``: two missions of the same N tasks on one worker, each task printing 16 MiB and
  then claude's result object: one with ``MissionConfig(agent="claude")`` (its output read),
  one without (nothing read). Every round runs both, in turn; the difference of the medians,
  per attempt.

The reader reads the log's last MiB (``TAIL_BYTES``), never all of it; so the figure does not
grow with the log. Nothing here asserts on speed.

Run: ``.venv/bin/python bench/bench_usage.py [--reads 50] [--tasks 6] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from rho_mission import Feature, Mission, MissionConfig
from rho_mission.agents._reading import UsageAsk, log_size, read_attempt_usage, usage_place

__all__ = ["main"]

_RESULT = json.dumps(
    {
        "type": "result",
        "subtype": "success",
        "total_cost_usd": 0.25,
        "usage": {"input_tokens": 400, "cache_read_input_tokens": 800, "output_tokens": 300},
        "modelUsage": {"claude-sonnet-4-5": {"costUSD": 0.25}},
    }
)
_LOG_BYTES = 16 * 1024 * 1024


def _timed(call: object, times: int) -> float:
    """The median milliseconds of *times* calls of *call*."""
    taken = []
    for _ in range(times):
        start = time.perf_counter()
        call()  # type: ignore[operator]
        taken.append((time.perf_counter() - start) * 1000)
    return statistics.median(taken)


def _read_figures(folder: Path, reads: int) -> tuple[float, float]:
    log = folder / "t.log"
    with log.open("w") as handle:
        handle.write(("x" * 1023 + "\n") * (_LOG_BYTES // 1024))
        handle.write(_RESULT + "\n")
    mission = folder / "mission"
    mission.mkdir()
    read_ask = UsageAsk("task", 1, "claude")
    none_ask = UsageAsk("task", 1, None, required=False)

    def with_reading() -> None:
        place = usage_place(mission, "t", read_ask)
        record = read_attempt_usage(read_ask, place, log, log_size(log) - _LOG_BYTES)
        assert record is not None
        assert record.cost_usd == 0.25

    def without() -> None:
        place = usage_place(mission, "t", none_ask)
        assert read_attempt_usage(none_ask, place, log, 0) is None

    return _timed(with_reading, reads), _timed(without, reads)


def _repo(folder: Path) -> Path:
    repo = folder / "repo"
    repo.mkdir()
    for argv in (
        ["git", "init", "--quiet", "-b", "main"],
        [
            "git",
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@x",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "i",
        ],
    ):
        subprocess.run(argv, cwd=repo, check=True)
    return repo


def _mission_seconds(folder: Path, tasks: int, agent: str | None) -> float:
    repo = _repo(folder)
    result = folder / "result.json"
    result.write_text(_RESULT + "\n")
    command = f"head -c {_LOG_BYTES} /dev/zero | tr '\\0' x; echo; cat {result}"
    features = [Feature(f"t{n}", f"task {n}", command=command) for n in range(tasks)]
    config = MissionConfig(max_workers=1, agent=agent)
    mission = Mission.new(repo, "bench", features, config)
    start = time.perf_counter()
    mission.run_staged_sync(waves=[[f.id for f in features]])
    taken = time.perf_counter() - start
    assert mission.status == "completed"
    if agent is not None:
        assert mission.usage is not None
        assert mission.usage.cost_usd == 0.25 * tasks
    return taken


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reads", type=int, default=50)
    parser.add_argument("--tasks", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        reading, plain = _read_figures(Path(tmp), args.reads)
    read_runs: list[float] = []
    plain_runs: list[float] = []
    for round_number in range(args.rounds):
        for agent, runs in (("claude", read_runs), (None, plain_runs)):
            with tempfile.TemporaryDirectory() as tmp:
                runs.append(_mission_seconds(Path(tmp), args.tasks, agent))
        print(f"round {round_number + 1}: read {read_runs[-1]:.2f}s, plain {plain_runs[-1]:.2f}s")
    per_attempt = (statistics.median(read_runs) - statistics.median(plain_runs)) / args.tasks
    print()
    print("| measure | with usage reading | without | difference |")
    print("| --- | --- | --- | --- |")
    print(
        f"| one attempt's read, 16 MiB log (median of {args.reads}) | {reading:.2f} ms "
        f"| {plain:.2f} ms | {reading - plain:+.2f} ms |"
    )
    print(
        f"| mission of {args.tasks} tasks x 16 MiB, 1 worker (median of {args.rounds}) "
        f"| {statistics.median(read_runs):.2f} s | {statistics.median(plain_runs):.2f} s "
        f"| {per_attempt * 1000:+.1f} ms per attempt "
        f"({statistics.median(read_runs) / statistics.median(plain_runs):.3f}x) |"
    )


if __name__ == "__main__":
    main()
