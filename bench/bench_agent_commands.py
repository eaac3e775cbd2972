"""Benchmark: what an agent pays per call, each command against ``python -c pass``, one run.

Run: ``.venv/bin/python bench/bench_agent_commands.py [--repeats N]``. At 100 tasks in a scratch
repository with one finished mission, every command is a whole process, run ``--repeats`` times
(alternating, after a warm-up); the table gives each median and its ratio to ``python -c pass``
of the same interpreter, measured in the same run (these machines are noisy: read the ratios).
Targets: every ``rho task`` read and write at most 3x, ``rho mission show/list`` at
most 4x. The second row is the floor of any command written in Python with the standard
library: ``import json, pathlib, typing`` and nothing else. The last line compares ``rho mcp``
answering ``TaskList ready`` on the caps graph (1,000 tasks, 10,000 edges), per call over one
connection, with the fast lane's in-process time for the same answer (target: at most 2x).
Nothing here asserts on speed.
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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _caps import cap_document

from taskstore import dump_document

RHO = str(Path(sys.executable).parent / "rho")
GIT = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
       "GIT_COMMITTER_EMAIL": "b@b"}  # fmt: skip


def _scratch(folder: Path) -> Path:
    repo = folder / "repo"
    repo.mkdir()
    env = {**os.environ, **GIT}
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True, env=env)
    subprocess.run(
        ["git", "commit", "-q", "--allow-empty", "-m", "0"], cwd=repo, check=True, env=env
    )
    tasks = [
        {"id": f"task_{n}", "subject": f"task {n}", "status": "pending",
         "dependencies": [{"targetId": f"task_{n - 1}", "type": "blocks"}] if (n - 1) % 10 else [],
         "metadata": {"command": "true"}}
        for n in range(1, 101)
    ]  # fmt: skip
    source = folder / "tasks.json"
    source.write_text(json.dumps({"tasks": tasks}))
    subprocess.run([RHO, "task", "import", str(source)], cwd=repo, check=True, capture_output=True)
    subprocess.run([RHO, "mission", "--from-tasks", "--only", "task_1"], cwd=repo, check=True,
                   capture_output=True, env=env)  # fmt: skip
    return repo


def _commands() -> dict[str, list[str]]:
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        # What any such command imports first, before one line of rho: the floor of a lane.
        "python: json+pathlib": [sys.executable, "-c", "import json, pathlib, typing"],
        "task ready --json": [RHO, "task", "ready", "--json"],
        "task list": [RHO, "task", "list"],
        "task list --json": [RHO, "task", "list", "--json"],
        "task show": [RHO, "task", "show", "task_50"],
        "task show --json": [RHO, "task", "show", "task_50", "--json"],
        "task add": [RHO, "task", "add", "one more"],
        "task update": [RHO, "task", "update", "task_50", "--priority", "1"],
        "mission list": [RHO, "mission", "list"],
        "mission show": [RHO, "mission", "show", "latest"],
    }


def _time(argv: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - start


def measure(repo: Path, repeats: int) -> dict[str, float]:
    commands = _commands()
    timings: dict[str, list[float]] = {name: [] for name in commands}
    for argv in commands.values():
        _time(argv, repo)
    for _ in range(repeats):
        for name, argv in commands.items():
            timings[name].append(_time(argv, repo))
    return {name: statistics.median(values) for name, values in timings.items()}


async def _mcp_ready(store: Path, calls: int) -> float:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=RHO, args=["mcp", "--store", str(store)])
    with open(os.devnull, "w") as quiet:  # noqa: ASYNC230
        async with (
            stdio_client(params, errlog=quiet) as streams,
            ClientSession(streams[0], streams[1]) as client,
        ):
            await client.initialize()
            await client.call_tool("TaskList", {"action": "ready"})
            times = []
            for _ in range(calls):
                start = time.perf_counter()
                result = await client.call_tool("TaskList", {"action": "ready"})
                times.append(time.perf_counter() - start)
                assert not result.is_error
    return statistics.median(times)


def _fast_lane(store: Path, calls: int) -> float:
    from rho_mission.cli._taskdocs import ready_document
    from taskstore import compute_schedule, read_task_views

    times = []
    for _ in range(calls):
        start = time.perf_counter()
        json.dumps(ready_document(compute_schedule(read_task_views(store))))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _compile_packages() -> None:
    """Write the packages' bytecode first, as an install does: with PYTHONDONTWRITEBYTECODE set
    (as it is on some machines), every command would otherwise compile what changed since."""
    root = Path(__file__).resolve().parent.parent
    packages = [str(root / name) for name in ("rho_mission", "taskstore", "graph")]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *packages], check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    _compile_packages()
    with tempfile.TemporaryDirectory() as folder:
        repo = _scratch(Path(folder))
        medians = measure(repo, args.repeats)
        caps = Path(folder) / "caps.json"
        caps.write_bytes(dump_document(cap_document()))
        import anyio

        mcp = anyio.run(_mcp_ready, caps, args.repeats)
        lane = _fast_lane(caps, args.repeats)
    floor = medians["python -c pass"]
    print(f"{'command':<22} {'median':>9} {'x python -c pass':>17}")
    for name, value in medians.items():
        print(f"{name:<22} {value * 1000:>7.0f}ms {value / floor:>16.1f}x")
    print(f"rho mcp TaskList ready (caps): {mcp * 1000:.1f}ms per call, "
          f"{mcp / lane:.2f}x the fast lane in-process ({lane * 1000:.1f}ms)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
