"""Benchmark: one join's durable rewrite of a 1,000-feature mission (mission.json + graph).

At every join the engine saves the mission (``rho_mission.records._persist.save_mission``): both
files' bytes are made, those of a full dump and of a full projection, but made again only where the
mission changed since the process's last save of it (``rho_mission.records._missionbytes``,
``rho_mission.records._graphcache``); then both are written beside their places with fsync, at once,
and renamed in, mission.json first, with one fsync of the folder. As each feature ends, while the
wave's other features still run, the engine makes that feature's part of both files
(``records._persist.note_feature_end``), so that the join finds most of its wave made.

This script builds the mission as it stands at its last join (every feature completed with a
handoff, every wave joined) and as it stood just before (the last wave's features running, its
join not yet made), with no git at all. Each run saves the "before" mission (not timed: the
previous join's save), then notes the end of each feature of the last wave as the engine does
(timed on its own: it happens inside the wave, not at the join), then times ``save_mission`` of
the "after" one: that is one join's persistence. It also times that save without the notes (the
whole wave made at the join), and, for comparison, the full path of the previous release (every
fact projected, validated and dumped again) step by step:

- projection: ``mission_graph(mission)`` (builds and validates every node, edge and event);
- graph validation: ``validate_graph`` + ``sort_facts``, as ``dump_graph`` does again;
- graph dump: ``model_dump_json(indent=2)`` of the validated graph, as ``dump_graph`` does;
- mission.json dump: ``model_dump_json(indent=2)``;
- writes: both files through ``write_atomic`` (temp file, fsync, rename, folder fsync).

Run: ``.venv/bin/python bench/bench_join_persist.py [--features 1000] [--waves 10] [--runs 30]``.
Prints medians and file sizes; nothing here asserts on speed.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import TypeVar

from graph import MAX_GRAPH_FILE_BYTES, GraphDocument, dump_graph, sort_facts, validate_graph
from rho_mission.records._document import Feature, Handoff, MissionConfig, MissionDocument, WaveJoin
from rho_mission.records._persist import (
    _CACHES,
    note_feature_end,
    prepare_mission_dir,
    save_mission,
)
from rho_mission.records._projection import mission_graph
from taskstore import write_atomic

__all__ = ["before_last_join", "build_mission", "main"]

T = TypeVar("T")

MISSION_ID = "0badc0de"
_START = datetime(2026, 11, 29, 9, 0, 0)
STEPS = ("projection", "graph validation", "graph dump", "mission.json dump", "fsync'ed writes")
FULL = "full path (sum)"
JOIN = "save_mission (a join)"
UNNOTED = "save_mission (no notes)"
NOTES = "feature ends noted"


def stamp(second: int) -> str:
    """An RFC 3339 timestamp *second* seconds after the mission started."""
    moment = _START + timedelta(seconds=second)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.250Z")


def build_mission(folder: Path, features: int, waves: int, seed: int = 4) -> MissionDocument:
    """The mission at its last join: *features* completed over *waves* waves, all joined.

    Each feature after the first wave is blocked by 1 to 3 features of the wave before; each
    has a handoff with a commit and 1 to 5 changed files, as a shell worker's commit leaves.
    """
    rng = random.Random(seed)
    ids = [f"task_{n}" for n in range(1, features + 1)]
    plan = [ids[w * features // waves : (w + 1) * features // waves] for w in range(waves)]
    mission = MissionDocument(
        id=MISSION_ID,
        prompt=f"run {features} task(s) of the task store",
        dir=str(folder),
        repo=str(folder.parent),
        base_commit=f"{rng.getrandbits(160):040x}",
        integration_branch=f"rho-mission/{MISSION_ID}/integration",
        waves=plan,
        status="executing",
        started_at=stamp(0),
        config=MissionConfig(task_store=str(folder.parent / "tasks.json")),
    )
    for number, wave in enumerate(plan):
        before = plan[number - 1] if number else []
        mission.features += [_feature(rng, fid, number, before) for fid in wave]
        mission.wave_joins.append(_join(number + 1, wave))
    return mission


def _feature(rng: random.Random, feature_id: str, wave: int, before: list[str]) -> Feature:
    blockers = sorted(rng.sample(before, rng.randint(1, 3))) if before else []
    files = sorted({f"src/module_{rng.randrange(200)}.py" for _ in range(rng.randint(1, 5))})
    return Feature(
        feature_id,
        f"Implement step {feature_id} of wave {wave + 1} of the generated plan",
        f"After {feature_id}, the checks of wave {wave + 1} pass and earlier work is kept.",
        command=f"make step-{feature_id}",
        blocked_by=blockers,
        branch=f"rho-mission/{MISSION_ID}/{feature_id}",
        status="completed",
        attempts=1,
        handoff=Handoff(
            commit_id=f"{rng.getrandbits(160):040x}",
            files_changed=files,
            summary=f"{len(files)} file(s) changed",
        ),
        started_at=stamp(60 * wave + rng.randrange(20)),
        completed_at=stamp(60 * wave + 20 + rng.randrange(30)),
        log=f"logs/{feature_id}.log",
    )


def before_last_join(mission: MissionDocument) -> MissionDocument:
    """*mission* as it stood before its last join: that wave's features running, no join."""
    before = mission.model_copy(deep=True)
    last = set(before.waves[-1])
    before.wave_joins.pop()
    for feature in before.features:
        if feature.id in last:
            feature.status = "in_progress"
            feature.handoff = None
            feature.completed_at = None
    return before


def _join(number: int, wave: list[str]) -> WaveJoin:
    ordered = sorted(wave)
    return WaveJoin(
        wave=number,
        feature_ids=ordered,
        completed_ids=ordered,
        failed_ids=[],
        blocked_ids=[],
        started_at=stamp(60 * (number - 1)),
        completed_at=stamp(60 * (number - 1) + 55),
        summary=f"wave {number} joined {len(wave)} feature(s), {len(wave)} completed, 0 failed",
    )


def timed(action: Callable[[], T]) -> tuple[float, T]:
    """Seconds that *action* takes, and what it returned."""
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def one_run(before: MissionDocument, mission: MissionDocument, folder: Path) -> dict[str, float]:
    """One join's ``save_mission`` (after the save of *before* and the notes of the last
    wave's feature ends), the same without the notes, then each step of the full path on its
    own; seconds per name."""
    last_wave = [f for f in mission.features if f.id in set(mission.waves[-1])]
    _CACHES.clear()
    save_mission(before)

    def note_ends() -> None:
        for feature in last_wave:  # as the engine does when each ends, inside the wave
            note_feature_end(mission, feature)

    notes, _ = timed(note_ends)
    total, _ = timed(lambda: save_mission(mission))
    _check_files(mission, folder)
    _CACHES.clear()
    save_mission(before)
    unnoted, _ = timed(lambda: save_mission(mission))
    _check_files(mission, folder)
    projection, graph = timed(lambda: mission_graph(mission))
    validation, checked = timed(lambda: sort_facts(validate_graph(graph)))
    graph_dump, graph_bytes = timed(lambda: _graph_bytes(checked))
    mission_dump, mission_bytes = timed(lambda: (mission.model_dump_json(indent=2) + "\n").encode())

    def write_both() -> None:
        write_atomic(folder / "mission.json", mission_bytes)
        write_atomic(folder / "mission-graph.json", graph_bytes)

    writes, _ = timed(write_both)
    steps = (projection, validation, graph_dump, mission_dump, writes)
    steps_by_name = dict(zip(STEPS, steps, strict=True))
    return {JOIN: total, UNNOTED: unnoted, NOTES: notes, **steps_by_name, FULL: sum(steps)}


def _check_files(mission: MissionDocument, folder: Path) -> None:
    if (folder / "mission-graph.json").read_bytes() != dump_graph(mission_graph(mission)):
        raise SystemExit("the incremental graph differs from the full projection")
    if (folder / "mission.json").read_text() != mission.model_dump_json(indent=2) + "\n":
        raise SystemExit("the incremental mission.json differs from the full dump")


def _graph_bytes(graph: GraphDocument) -> bytes:
    # What dump_graph does after its validation.
    text = graph.model_dump_json(indent=2, by_alias=True, exclude_none=True)
    return (text + "\n").encode()


def report(runs: list[dict[str, float]], folder: Path, options: argparse.Namespace) -> None:
    """Print the medians, each step's share of their sum, and the two files' sizes."""
    medians = {name: statistics.median(run[name] for run in runs) for name in runs[0]}
    steps_sum = sum(medians[name] for name in STEPS)
    print(
        f"one join's save_mission: {options.features} features, {options.waves} waves, "
        f"{options.runs} runs (median)"
    )
    for name in (JOIN, UNNOTED, NOTES):
        print(f"  {name:<26} {medians[name] * 1000:8.1f} ms")
    print("the full path of the previous release, step by step:")
    for name in STEPS:
        share = medians[name] / steps_sum
        print(f"  {name:<22} {medians[name] * 1000:8.1f} ms  {share:6.1%}")
    print(f"  {'sum of the steps':<22} {steps_sum * 1000:8.1f} ms")
    ratio = medians[JOIN] / medians[FULL]
    print(f"  one join / full path   {ratio:8.2f}x")
    graph_size = (folder / "mission-graph.json").stat().st_size
    print("file sizes")
    print(f"  mission.json           {(folder / 'mission.json').stat().st_size:>9,} bytes")
    print(f"  mission-graph.json     {graph_size:>9,} bytes")
    limit = "over" if graph_size > MAX_GRAPH_FILE_BYTES else "within"
    print(f"  graph file is {limit} the {MAX_GRAPH_FILE_BYTES:,}-byte read limit (graph/_io.py)")


def main() -> None:
    """Build the mission in a temporary folder, time ``save_mission``, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--features", type=int, default=1000)
    parser.add_argument("--waves", type=int, default=10)
    parser.add_argument("--runs", type=int, default=30)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-join-") as scratch:
        folder = Path(scratch) / ".rho" / "missions" / MISSION_ID
        prepare_mission_dir(folder, Path(scratch))
        mission = build_mission(folder, options.features, options.waves)
        before = before_last_join(mission)
        save_mission(mission)  # warm-up: imports, pydantic schemas, the files' first creation
        runs = [one_run(before, mission, folder) for _ in range(options.runs)]
        report(runs, folder, options)


if __name__ == "__main__":
    main()
