"""Benchmark: a worktree set up once (``--setup``) against each task installing for itself.

Decision: docs/decisions/0604-setup-and-copy.md

A small Python project whose setup makes a virtual environment and installs the project into it
without the network: ``python3 -m venv .venv`` (pip included, as a real project's setup starts)
and an editable install of the project, a ``.pth`` file naming the worktree in the venv's
site-packages (what ``pip install -e .`` leaves; pip's own needs the ``wheel`` package, which
this machine cannot fetch at run time). 20 tasks in 2 waves, 4 workers; each task runs the
project's tests from ``.venv`` and writes one file.

Three missions, each timed wall-clock from ``rho mission --from-tasks`` to its exit:

- ``today``: in a repository of its own, each task's command runs the setup first (between
  features, the pool's clean deletes ``.venv`` with every other ignored file);
- ``--setup, first``: in another repository, ``--setup SETUP --setup-key pyproject.toml``;
- ``--setup, second``: 20 new tasks of the same store, run again the same way.

Setups are counted by the setup itself (one line appended to a file outside the repository per
run). Targets: at most 4 setups in the first ``--setup`` mission (one per worktree), none in the
second, and the first at most 0.4x today's wall time. Nothing here asserts on speed.

Run: ``.venv/bin/python bench/bench_setup.py [--tasks 20] [--workers 4]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["main"]

RHO = Path(sys.executable).parent / "rho"
_PROJECT = {
    "pyproject.toml": '[project]\nname = "proj"\nversion = "0.1"\n',
    "proj/__init__.py": "def double(x):\n    return 2 * x\n",
    "tests/test_proj.py": (
        "import unittest\n\nfrom proj import double\n\n\n"
        "class Double(unittest.TestCase):\n"
        "    def test_double(self):\n        self.assertEqual(double(2), 4)\n"
    ),
    ".gitignore": ".venv/\n__pycache__/\n",
}
_EDITABLE = (
    '.venv/bin/python -c "import site, sys; '
    "open(site.getsitepackages()[0] + '/proj.pth', 'w').write(sys.argv[1])\" \"$PWD\""
)


def _setup(count_file: Path) -> str:
    return f"python3 -m venv .venv && {_EDITABLE} && echo ran >> {count_file}"


def _test(name: str) -> str:
    return f".venv/bin/python -m unittest discover -s tests -q && echo {name} > out-{name}.txt"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def _project(folder: Path) -> Path:
    folder.mkdir()
    _git(folder, "init", "--quiet", "--initial-branch=main")
    for name, text in _PROJECT.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    _git(folder, "add", "--all")
    _git(folder, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "--quiet", "-m", "p")
    return folder


def _tasks(prefix: str, count: int, command: str | None) -> list[dict[str, object]]:
    """*count* tasks in two waves: the second half each blocked by one of the first."""
    half = count // 2
    tasks: list[dict[str, object]] = []
    for index in range(count):
        name = f"{prefix}{index}"
        blockers = [f"{prefix}{index - half}"] if index >= half else []
        run = _test(name) if command is None else f"{command} && {_test(name)}"
        tasks.append(
            {
                "id": name,
                "subject": f"task {name}",
                "status": "pending",
                "metadata": {"command": run},
                "dependencies": [{"targetId": b, "type": "blocks"} for b in blockers],
            }
        )
    return tasks


def _import(repo: Path, tasks: list[dict[str, object]]) -> None:
    source = repo.parent / f"{repo.name}-{tasks[0]['id']}.json"
    source.write_text(json.dumps({"tasks": tasks}), encoding="utf-8")
    subprocess.run([str(RHO), "task", "import", str(source)], cwd=repo, check=True)


def _mission(repo: Path, workers: int, *options: str) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [str(RHO), "mission", "--from-tasks", "--workers", str(workers), *options],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"mission failed in {repo}:\n{done.stdout}\n{done.stderr}")
    return took


def _count(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def main() -> None:
    """Run the three missions and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20)
    parser.add_argument("--workers", type=int, default=4)
    args = parser.parse_args()
    env_pool = os.environ.get("RHO_WORKTREE_POOL")
    with tempfile.TemporaryDirectory(prefix="bench-setup-") as scratch:
        root = Path(scratch)
        today, kept = _project(root / "today"), _project(root / "kept")
        today_count, kept_count = root / "today-setups", root / "kept-setups"
        _import(today, _tasks("a", args.tasks, _setup(today_count)))
        wall_today = _mission(today, args.workers)
        setups_today = _count(today_count)
        _import(kept, _tasks("a", args.tasks, None))
        options = ("--setup", _setup(kept_count), "--setup-key", "pyproject.toml")
        wall_first = _mission(kept, args.workers, *options)
        setups_first = _count(kept_count)
        _import(kept, _tasks("b", args.tasks, None))
        wall_second = _mission(kept, args.workers, *options)
        setups_second = _count(kept_count) - setups_first
    print(f"{args.tasks} tasks in 2 waves, {args.workers} workers (RHO_WORKTREE_POOL={env_pool})")
    print("| mission | setups run | wall time | against today |")
    print("| --- | --- | --- | --- |")
    print(f"| today (each task installs) | {setups_today} | {wall_today:.1f} s | 1.00x |")
    for label, setups, wall in (
        ("--setup, first mission", setups_first, wall_first),
        ("--setup, second mission", setups_second, wall_second),
    ):
        print(f"| {label} | {setups} | {wall:.1f} s | {wall / wall_today:.2f}x |")


if __name__ == "__main__":
    main()
