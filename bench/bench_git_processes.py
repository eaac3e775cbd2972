"""Benchmark: how many git processes ``rho mission`` starts per no-op feature, by subcommand.

A ``git`` shim first on PATH (in a temporary folder) appends every call's arguments to a log and
runs the real git. On a repository of ``--files`` files, a store of ``--waves`` waves of
``--width`` no-op tasks (each blocked by the task at its place in the wave before) is loaded with
``rho task import`` before the shim is used; then ``rho mission --from-tasks --run true --workers
N`` runs with the shim, and the calls it made are divided by the number of features.
Per-mission calls (open, settle refs, prune, the worktree folder) and per-wave calls are
averaged in; the processes git starts itself (``worktree add`` runs two) are out of sight.

Run: ``.venv/bin/python bench/bench_git_processes.py [--waves 4] [--width 5] [--workers 2]``
(the shape of the test; ``--waves 10 --width 100 --workers 4`` is the 1,000-feature mission).
Target (issue 13): **<= 5** per no-op feature; ``tests/mission_tests/test_git_process_count.py``
holds it.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

__all__ = ["git_shim", "logged_calls", "main", "subcommand"]

RHO = Path(sys.executable).parent / "rho"
TARGET = 5.0
ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith(("RHO_", "GIT_"))},
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}
# git's options that take a value as the next argument (before the subcommand).
_VALUED = {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"}
_SEPARATOR = "\x1f"


def git_shim(folder: Path, log: Path) -> dict[str, str]:
    """Write a ``git`` into *folder* that logs its arguments to *log*; the PATH that uses it.

    One line per call, the arguments separated by U+001F, written with one ``printf`` so that
    concurrent calls do not interleave within a line.

    Raises:
        RuntimeError: git is not installed.
    """
    real = shutil.which("git")
    if real is None:
        raise RuntimeError("git is not installed")
    folder.mkdir()
    script = folder / "git"
    script.write_text(
        "#!/bin/sh\n"
        f"line=$(printf '%s{_SEPARATOR}' \"$@\")\n"
        f'printf "%s\\n" "$line" >> {shlex.quote(str(log))}\n'
        f'exec {shlex.quote(real)} "$@"\n',
        encoding="utf-8",
    )
    script.chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"}


def subcommand(argv: list[str]) -> str:
    """The git subcommand of one logged call: the first argument that is not a global option."""
    values = iter(argv)
    for arg in values:
        if arg in _VALUED:
            next(values, None)
        elif not arg.startswith("-"):
            return arg
    return "(none)"


def logged_calls(log: Path) -> list[list[str]]:
    """The calls the shim logged, each as its argument list."""
    if not log.exists():
        return []
    lines = log.read_text(encoding="utf-8").splitlines()
    return [line.rstrip(_SEPARATOR).split(_SEPARATOR) for line in lines]


def run(argv: list[str], cwd: Path, extra: dict[str, str] | None = None) -> str:
    """Run *argv* in *cwd*; its stdout.

    Raises:
        RuntimeError: the command exited non-zero (its stderr is in the message).
    """
    env = {**ENV, **(extra or {})}
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()}")
    return done.stdout.decode()


def prepare(root: Path, files: int, waves: int, width: int) -> Path:
    """A repository of *files* files with a store of *waves* x *width* no-op tasks."""
    repo = root / "repo"
    repo.mkdir()
    run(["git", "init", "--quiet", "--initial-branch=main"], repo)
    for index in range(files):
        (repo / f"file{index:05d}.txt").write_text(f"line {index}\n", encoding="utf-8")
    run(["git", "add", "--all"], repo)
    run(["git", "commit", "--quiet", "--message=base"], repo)
    ids = [[f"w{w:02d}t{t:03d}" for t in range(1, width + 1)] for w in range(1, waves + 1)]
    tasks = [
        {
            "id": task_id,
            "subject": f"No-op {task_id}",
            "status": "pending",
            "dependencies": [{"targetId": ids[number - 1][place], "type": "blocks"}]
            if number
            else [],
        }
        for number, wave in enumerate(ids)
        for place, task_id in enumerate(wave)
    ]
    source = root / "tasks-import.json"
    source.write_text(json.dumps({"tasks": tasks}), encoding="utf-8")
    run([str(RHO), "task", "import", str(source)], repo)
    return repo


def count(scratch: Path, options: argparse.Namespace) -> Counter[str]:
    """Run one mission with the shim; the calls it made, by subcommand."""
    repo = prepare(scratch, options.files, options.waves, options.width)
    log = scratch / "git-calls.log"
    shim = git_shim(scratch / "shim", log)
    argv = [str(RHO), "mission", "--from-tasks", "--run", "true"]
    run([*argv, "--workers", str(options.workers)], repo, shim)
    return Counter(subcommand(call) for call in logged_calls(log))


def main() -> None:
    """Parse the shape, run the mission, print the table per feature."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--waves", type=int, default=4)
    parser.add_argument("--width", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--files", type=int, default=20)
    options = parser.parse_args()
    features = options.waves * options.width
    with tempfile.TemporaryDirectory(prefix="bench-git-") as scratch:
        by_command = count(Path(scratch), options)
    total = sum(by_command.values())
    print(
        f"{features} no-op features, {options.waves} waves of {options.width}, "
        f"{options.workers} workers, {options.files} files: {total} git processes"
    )
    for name, calls in by_command.most_common():
        print(f"  {name:<14}{calls:6d}{calls / features:8.2f} per feature")
    verdict = "within" if total / features <= TARGET else "OVER"
    print(f"  {'total':<14}{total:6d}{total / features:8.2f} per feature ({verdict} {TARGET:g})")


if __name__ == "__main__":
    main()
