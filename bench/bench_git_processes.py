"""Benchmark: how many git processes ``rho mission`` starts per no-op feature, by subcommand.

A ``git`` shim first on PATH (in a temporary folder) appends every call's arguments to a log and
runs the real git. On a repository of ``--files`` files, a store of ``--waves`` waves of
``--width`` no-op tasks (each blocked by the task at its place in the wave before) is loaded with
``rho task import`` before the shim is used; then ``rho mission --from-tasks --run true --workers
N`` runs with the shim, and the calls it made are divided by the number of features.
Per-mission calls (open, settle refs, prune, the worktree folder) and per-wave calls are
averaged in; the processes git starts itself (``worktree add`` runs two) are out of sight.

With ``--writes`` each task writes a file of its own, so that every feature is committed.

The walks of the work tree are counted too, by git's own trace2 (``GIT_TRACE2_PERF`` pointed at
a folder: one file per git process): a ``refresh`` region (an ``lstat`` of every index entry)
and a ``read_directory`` region (a ``readdir`` of the tree, for the untracked files), by the
subcommand that entered it. A ``read_directory`` limited by a pathspec (``add -- PATH...``)
is counted as well: trace2 does not say how much of the tree it read. And the processes that
``lstat``ed every tracked file, from git's own sums (``lstat_passes``; ``GIT_TEST_PRELOAD_INDEX``
set, so that git counts below its 1,000 entries too, where a checkout's pass enters no region).

Run: ``.venv/bin/python bench/bench_git_processes.py [--waves 4] [--width 5] [--workers 2]
[--writes]`` (the shape of the test; ``--waves 10 --width 100 --workers 4`` is the
1,000-feature mission). Target: **<= 5** per no-op feature;
``tests/git_tests/test_git_process_count.py`` holds it, and the walk count per writing
feature (docs/decisions/0602-git-per-feature.md).
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
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "INDEX_WRITES",
    "LSTAT_TRACE",
    "WALKS",
    "git_shim",
    "logged_calls",
    "lstat_passes",
    "main",
    "subcommand",
    "walks",
]

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
# The trace2 regions that walk the work tree.
WALKS = ("refresh", "read_directory")
# The trace2 region of a write of the whole index (at 60,000 files, 5 MB).
INDEX_WRITES = ("do_write_index",)
# git's lstat passes over the index (its "preload" threads, then "refresh") report how many
# entries they looked at: trace2 data "preload/sum_lstat" and "refresh/sum_lstat". Below 1,000
# entries git lstats in one thread, outside those regions (a checkout's pass among them);
# GIT_TEST_PRELOAD_INDEX makes it use its threads from 2 entries up, so that every pass counts.
LSTAT_TRACE = {"GIT_TEST_PRELOAD_INDEX": "1"}
_LSTAT_DATA = ("preload/sum_lstat", "refresh/sum_lstat")


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


def _events(path: Path) -> Iterator[tuple[str, str, str]]:
    """The events of one git process's ``GIT_TRACE2_PERF`` file: (its subcommand as named so
    far, the event, its data).

    A perf line is ``time file:line | d0 | thread | event | repo | t_abs | t_rel | category |
    data``; ``cmd_name`` names the subcommand.
    """
    name = "(none)"
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        fields = [field.strip() for field in line.split("|")]
        if len(fields) < 9:
            continue
        if fields[3] == "cmd_name":
            name = fields[-1].split(" ", 1)[0]
        yield name, fields[3], fields[-1]


def walks(trace: Path, labels: tuple[str, ...] = WALKS) -> Counter[tuple[str, str]]:
    """The tree walks (or the other regions *labels* names) in a ``GIT_TRACE2_PERF`` folder:
    (subcommand, region) -> how many. A ``region_enter``'s data is ``..label:NAME`` (one dot
    pair per nesting level), or ``label:NAME PATH`` for an index (``do_write_index .git/index``).
    """
    found: Counter[tuple[str, str]] = Counter()
    for path in sorted(trace.iterdir()):
        for name, event, data in _events(path):
            if event == "region_enter":
                label = data.lstrip(".").removeprefix("label:").split(" ", 1)[0]
                if label in labels:
                    found[(name, label)] += 1
    return found


def lstat_passes(trace: Path, entries: int) -> Counter[str]:
    """The git processes in a ``GIT_TRACE2_PERF`` folder that lstat'd at least *entries* index
    entries (a pass over every tracked file), by subcommand.

    One file per process; the sums of its ``preload/sum_lstat`` and ``refresh/sum_lstat`` data
    (a refresh after the preload only lstats what the threads did not) count together.
    """
    found: Counter[str] = Counter()
    for path in sorted(trace.iterdir()):
        name, looked = "(none)", 0
        for named, event, data in _events(path):
            name = named  # the process's subcommand, once git has named it
            if event != "data":
                continue
            key, _, value = data.lstrip(".").rpartition(":")
            if key in _LSTAT_DATA:
                looked += int(value)
        if looked >= entries:
            found[name] += 1
    return found


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
    """A repository of *files* files with a store of *waves* x *width* tasks."""
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


# A task that writes a file of its own: its feature is committed.
WRITE = 'printf "%s\\n" "$RHO_TASK_ID" > "out-$RHO_TASK_ID.txt"'


def count(
    scratch: Path, options: argparse.Namespace
) -> tuple[Counter[str], Counter[tuple[str, str]], Counter[str]]:
    """Run one mission with the shim and trace2; its calls by subcommand, its walks, and its
    processes that lstat'd every file, by subcommand."""
    repo = prepare(scratch, options.files, options.waves, options.width)
    log = scratch / "git-calls.log"
    trace = scratch / "trace2"
    trace.mkdir()
    shim = {**git_shim(scratch / "shim", log), "GIT_TRACE2_PERF": str(trace), **LSTAT_TRACE}
    command = WRITE if options.writes else "true"
    argv = [str(RHO), "mission", "--from-tasks", "--run", command]
    run([*argv, "--workers", str(options.workers)], repo, shim)
    calls = Counter(subcommand(call) for call in logged_calls(log))
    return calls, walks(trace), lstat_passes(trace, options.files)


def main() -> None:
    """Parse the shape, run the mission, print the table per feature."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--waves", type=int, default=4)
    parser.add_argument("--width", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--writes", action="store_true", help="each task writes a file")
    options = parser.parse_args()
    features = options.waves * options.width
    with tempfile.TemporaryDirectory(prefix="bench-git-") as scratch:
        by_command, walked, passes = count(Path(scratch), options)
    total = sum(by_command.values())
    kind = "writing" if options.writes else "no-op"
    print(
        f"{features} {kind} features, {options.waves} waves of {options.width}, "
        f"{options.workers} workers, {options.files} files: {total} git processes"
    )
    for name, calls in by_command.most_common():
        print(f"  {name:<14}{calls:6d}{calls / features:8.2f} per feature")
    verdict = "within" if total / features <= TARGET else "OVER"
    # The target is a no-op feature's; a writing one adds its commit and its merge.
    against = "" if options.writes else f" ({verdict} {TARGET:g})"
    print(f"  {'total':<14}{total:6d}{total / features:8.2f} per feature{against}")
    print("walks of the work tree (trace2 regions):")
    for (name, label), times in sorted(walked.items()):
        print(f"  {name + ' ' + label:<24}{times:6d}{times / features:8.2f} per feature")
    every = sum(walked.values())
    print(f"  {'total':<24}{every:6d}{every / features:8.2f} per feature")
    print("processes that lstat'd every file (trace2 preload/refresh sum_lstat):")
    for name, times in passes.most_common():
        print(f"  {name:<24}{times:6d}{times / features:8.2f} per feature")
    every = sum(passes.values())
    print(f"  {'total':<24}{every:6d}{every / features:8.2f} per feature")


if __name__ == "__main__":
    main()
