"""Benchmark: a feature's commit and a worktree's move, each done two or three ways, side by side.

On repositories of ``--sizes`` files (``bench_repo_size``'s: 500 to a folder, 20 lines each,
packed), in one run:

**The commit of a task's work** (``rho_mission.git._commit``). Before each, a new file is written
and staged by name (untimed: the same for both); then, timed:

- ``commit``: ``git commit --no-verify --quiet --allow-empty-message --cleanup=whitespace -m``
  and ``rev-parse HEAD`` (the plain way: ``commit`` refreshes the whole index first, an
  ``lstat`` of every entry, and has no option that skips it);
- ``index``: ``write-tree``, ``commit-tree -p HEAD``, ``update-ref HEAD NEW OLD`` (rho now: one
  git process more, no walk).

Both make the same commit (checked: the same tree and message, HEAD on the branch). The
contenders alternate within a round, ``--commits`` each per round.

**The move of a spotless pooled worktree to the next start** (``WorktreePool._switch``): a
``git read-tree -m -u``, which looks only at the entries that differ, against
``git checkout --force BRANCH``, which ``lstat``s every entry:

- ``checkout``: ``update-ref refs/heads/B NEW OLD``, then ``checkout --quiet --force B --``
  (with rho's parallel-checkout settings);
- ``read-tree``: ``update-ref refs/heads/B NEW OLD``, the one-tree ``read-tree -m -u NEW`` (the
  index's entries that NEW has as they are kept with their stat data, unlooked at; git then
  primes the index's cache-tree from NEW), then ``symbolic-ref HEAD refs/heads/B`` (read-tree
  moves no HEAD): rho now, one git process more;
- ``two-tree``: the same with a two-tree ``read-tree -m -u OLD NEW``, which drops the
  cache-tree (git 2.39's ``cmd_read_tree``), measured and not taken;

each followed by the commit step's next use of the index, a ``write-tree`` (``--no-write-tree``
to leave it out). The worktree goes back and forth between two commits ``--changed`` files
apart, ``--switches`` times per contender per round. Every switch is checked: HEAD on the
branch, the index and files those of the commit.

Each step is timed twice: wall time, and the CPU time of its git processes (user and system,
``RUSAGE_CHILDREN``). Alone on 2 cores the checkout's ``lstat`` threads run side by side, so its
wall time hides what a mission pays: there four workers share the two cores, and CPU time is
what they take from each other.

Prints per size and step the median times of each contender, their ratios, and from git's
trace2 (``GIT_TRACE2_PERF``, one extra untimed run each) the index entries ``lstat``ed in
``preload`` and ``refresh`` regions (``GIT_TEST_PRELOAD_INDEX`` set, so that git preloads below
its 1,000 entries too, where a checkout's ``lstat``s would enter no region) and the trees
traversed.

With ``--split-index`` the repository's config has ``core.splitIndex`` on, so that every index
is written split, as rho writes a pooled worktree's (``git._repo``).

Run: ``.venv/bin/python bench/bench_one_walk.py [--sizes 500,60000] [--rounds 3] [--commits 10]
[--switches 10] [--changed 10] [--split-index]``; about a minute on 2 cores at the defaults.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_git_processes import LSTAT_TRACE, run
from bench_repo_size import PER_FOLDER, make_template

from rho_mission.git._repo import PARALLEL_CHECKOUT

__all__ = ["main"]


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """``git ARGS`` in *cwd*, with *env* added to the benchmarks' environment; its stdout.

    Raises:
        RuntimeError: git exited non-zero (its stderr is in the message).
    """
    return run(["git", *args], cwd, env)


def make_repo(root: Path, files: int, changed: int, split: bool) -> tuple[Path, str, str]:
    """``bench_repo_size``'s repository of *files* files, then a commit of *changed* new files
    across its folders, and a linked worktree on branch ``b`` at the first commit; the worktree
    and the two commits. *split*: every index in it written split (``core.splitIndex``)."""
    repo = make_template(root, files)
    if split:
        git(repo, "config", "core.splitIndex", "true")
    first = git(repo, "rev-parse", "HEAD").strip()
    folders = max(1, -(-files // PER_FOLDER))
    for number in range(changed):
        (repo / f"dir{number % folders:03d}" / f"new{number}.txt").write_text("new\n")
    git(repo, "add", "--all")
    git(repo, "-c", "gc.auto=0", "commit", "--quiet", "--message=changed")
    second = git(repo, "rev-parse", "HEAD").strip()
    worktree = root / "worktree"
    git(repo, "worktree", "add", "--quiet", "-b", "b", str(worktree), first)
    return worktree, first, second


Env = dict[str, str] | None


def by_checkout(worktree: Path, old: str, new: str, env: Env = None) -> None:
    """The checkout move: the branch by compare-and-swap, then a forced
    checkout of it."""
    git(worktree, "update-ref", "refs/heads/b", new, old, env=env)
    git(worktree, *PARALLEL_CHECKOUT, "checkout", "--quiet", "--force", "b", "--", env=env)


def by_read_tree(worktree: Path, old: str, new: str, env: Env = None) -> None:
    """rho's move now: the branch, a one-tree merge of the index and files, HEAD onto it."""
    git(worktree, "update-ref", "refs/heads/b", new, old, env=env)
    git(worktree, *PARALLEL_CHECKOUT, "read-tree", "-m", "-u", new, env=env)
    git(worktree, "symbolic-ref", "HEAD", "refs/heads/b", env=env)


def by_two_trees(worktree: Path, old: str, new: str, env: Env = None) -> None:
    """The two-tree move: the same with a two-tree merge (git drops the cache-tree for it)."""
    git(worktree, "update-ref", "refs/heads/b", new, old, env=env)
    git(worktree, *PARALLEL_CHECKOUT, "read-tree", "-m", "-u", old, new, env=env)
    git(worktree, "symbolic-ref", "HEAD", "refs/heads/b", env=env)


def by_commit(worktree: Path, message: str, parent: str, env: Env = None) -> str:
    """The plain commit: ``git commit``, then a read of the new HEAD."""
    options = ("--no-verify", "--quiet", "--allow-empty-message", "--cleanup=whitespace")
    git(worktree, "-c", "commit.gpgSign=false", "commit", *options, f"-m{message}", env=env)
    return git(worktree, "rev-parse", "--verify", "HEAD^{commit}", env=env).strip()


def by_index(worktree: Path, message: str, parent: str, env: Env = None) -> str:
    """rho's commit now: from the index, HEAD moved by compare-and-swap (rho knows the parent
    from the status it read before staging)."""
    tree = git(worktree, "write-tree", env=env).strip()
    made = git(worktree, "commit-tree", "--no-gpg-sign", "-p", parent, "-m", message, tree, env=env)
    commit = made.strip()
    git(worktree, "update-ref", "-m", f"commit: {message}", "HEAD", commit, parent, env=env)
    return commit


Switch = Callable[[Path, str, str, Env], None]
Commit = Callable[[Path, str, str, Env], str]
SWITCHES: dict[str, Switch] = {
    "checkout": by_checkout,
    "read-tree": by_read_tree,
    "two-tree": by_two_trees,
}
COMMITS: dict[str, Commit] = {"commit": by_commit, "index": by_index}


def checked(worktree: Path, commit: str) -> None:
    """HEAD on ``b`` at *commit*, the index and files those of it.

    Raises:
        RuntimeError: they are not.
    """
    head = git(worktree, "rev-parse", "HEAD").strip()
    if head != commit or git(worktree, "symbolic-ref", "HEAD").strip() != "refs/heads/b":
        raise RuntimeError(f"HEAD is {head}, not b at {commit}")
    if git(worktree, "status", "--porcelain", "--untracked-files=all"):
        raise RuntimeError("the worktree is not the commit's")
    tree = git(worktree, "rev-parse", f"{commit}^{{tree}}").strip()
    if git(worktree, "write-tree").strip() != tree:
        raise RuntimeError("the index is not the commit's tree")


Timing = tuple[float, float]  # wall, CPU of the git processes (seconds)


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed_switches(
    worktree: Path, commits: tuple[str, str], switch: Switch, count: int, write_tree: bool
) -> list[Timing]:
    """*count* switches back and forth (each checked after its timing); their timings."""
    times: list[Timing] = []
    for number in range(count):
        old, new = commits if number % 2 == 0 else commits[::-1]
        cpu, started = _children_cpu(), time.perf_counter()
        switch(worktree, old, new, None)
        if write_tree:
            git(worktree, "write-tree")
        times.append((time.perf_counter() - started, _children_cpu() - cpu))
        checked(worktree, new)
    if count % 2:
        switch(worktree, commits[1], commits[0], None)  # back at the first for the next one
    return times


def _stage_a_new_file(worktree: Path, name: str) -> None:
    (worktree / f"{name}.txt").write_text(f"{name}\n", encoding="utf-8")
    git(worktree, "add", "--", f"{name}.txt")


def timed_commits(
    worktree: Path, name: str, commit: Commit, count: int, round_: int
) -> list[Timing]:
    """*count* commits of a new file each (staged untimed, each checked); their timings."""
    times: list[Timing] = []
    for number in range(count):
        label = f"{name}-{round_}-{number}"
        _stage_a_new_file(worktree, label)
        parent = git(worktree, "rev-parse", "HEAD").strip()
        cpu, started = _children_cpu(), time.perf_counter()
        made = commit(worktree, label, parent, None)
        times.append((time.perf_counter() - started, _children_cpu() - cpu))
        checked(worktree, made)
        if git(worktree, "log", "-1", "--format=%B", made) != f"{label}\n\n":
            raise RuntimeError(f"{name} wrote another message")
    return times


def trace_counts(trace: Path) -> Counter[str]:
    """Entries lstat'ed (preload and refresh regions) and trees traversed, over a trace2
    folder's processes."""
    found: Counter[str] = Counter()
    for path in trace.iterdir():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            data = line.rsplit("|", 1)[-1].strip().lstrip(".")
            key, _, value = data.partition(":")
            if key.endswith("sum_lstat"):
                found["lstat"] += int(value)
            elif key == "statistics" and value.startswith("{"):
                found["trees"] += json.loads(value).get("traverse_trees_count", 0)
    return found


def traced_switch(worktree: Path, commits: tuple[str, str], name: str, trace: Path) -> Counter[str]:
    """One switch of *name* and its write-tree under trace2; what it read."""
    trace.mkdir()
    env = {"GIT_TRACE2_PERF": str(trace), **LSTAT_TRACE}
    old, new = commits
    SWITCHES[name](worktree, old, new, env)
    git(worktree, "write-tree", env=env)
    checked(worktree, new)
    by_checkout(worktree, new, old)  # back at the first
    return trace_counts(trace)


def traced_commit(worktree: Path, name: str, trace: Path) -> Counter[str]:
    """One commit of *name* under trace2; what it read."""
    trace.mkdir()
    _stage_a_new_file(worktree, f"traced-{name}")
    parent = git(worktree, "rev-parse", "HEAD").strip()
    env = {"GIT_TRACE2_PERF": str(trace), **LSTAT_TRACE}
    checked(worktree, COMMITS[name](worktree, f"traced-{name}", parent, env))
    return trace_counts(trace)


def _report(
    step: str, unit: str, times: dict[str, list[Timing]], counts: dict[str, Counter[str]]
) -> None:
    walls = {name: statistics.median(wall for wall, _ in values) for name, values in times.items()}
    cpus = {name: statistics.median(cpu for _, cpu in values) for name, values in times.items()}
    print(f"  {step}:")
    for name in times:
        print(
            f"    {name:<10} {walls[name] * 1000:8.1f} ms wall, {cpus[name] * 1000:8.1f} ms CPU "
            f"per {unit}, {counts[name]['lstat']:6d} entries lstat'ed, "
            f"{counts[name]['trees']:5d} trees traversed"
        )
    first, *others = times
    for other in others:
        print(
            f"    {other} / {first}: {walls[other] / walls[first]:.2f}x wall, "
            f"{cpus[other] / cpus[first]:.2f}x CPU"
        )


def run_size(size: int, options: argparse.Namespace) -> None:
    """Both steps on a repository of *size* files; print their rows."""
    with tempfile.TemporaryDirectory(prefix="bench-one-walk-") as scratch:
        worktree, first, second = make_repo(
            Path(scratch), size, options.changed, options.split_index
        )
        commits = (first, second)
        switched: dict[str, list[Timing]] = {name: [] for name in SWITCHES}
        for _ in range(options.rounds):
            for name, switch in SWITCHES.items():
                switched[name] += timed_switches(
                    worktree, commits, switch, options.switches, options.write_tree
                )
        switch_counts = {
            name: traced_switch(worktree, commits, name, Path(scratch) / f"switch-{name}")
            for name in SWITCHES
        }
        committed: dict[str, list[Timing]] = {name: [] for name in COMMITS}
        for round_ in range(options.rounds):
            for name, commit in COMMITS.items():
                committed[name] += timed_commits(worktree, name, commit, options.commits, round_)
        commit_counts = {
            name: traced_commit(worktree, name, Path(scratch) / f"commit-{name}")
            for name in COMMITS
        }
    print(f"{size} files:")
    _report("commit of a new file", "commit", committed, commit_counts)
    after = " and its write-tree" if options.write_tree else ""
    _report(
        f"move to a start {options.changed} files apart{after}", "move", switched, switch_counts
    )


def main() -> None:
    """Parse the options, run both steps at every size, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,60000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--commits", type=int, default=10)
    parser.add_argument("--switches", type=int, default=10)
    parser.add_argument("--changed", type=int, default=10)
    parser.add_argument("--no-write-tree", dest="write_tree", action="store_false")
    parser.add_argument("--split-index", action="store_true")
    options = parser.parse_args()
    print(
        f"medians of {options.rounds} rounds x {options.commits} commits and "
        f"{options.switches} moves per contender"
        + (", every index split (core.splitIndex)" if options.split_index else "")
    )
    for size in (int(part) for part in options.sizes.split(",")):
        run_size(size, options)


if __name__ == "__main__":
    main()
