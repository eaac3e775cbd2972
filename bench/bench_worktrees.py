"""A fresh worktree per feature versus a reused one, on a 2,000-file repository.

Three ways to give a feature a clean worktree on its own branch at a start commit, interleaved
run by run so that disk caches and CPU frequency treat them alike:

- fresh: ``git worktree add -b <branch> <path> <start>``, then ``git worktree remove``;
- reuse (git): in a kept worktree, ``git checkout -B <branch> <start>`` + ``git clean -ffdx``;
- reuse (pool): ``WorktreePool.acquire`` + ``release``, everything the engine really does.

Starts alternate between two commits 20 files apart, and every run leaves an untracked output
file behind, as a worker would. Prints the median of each and the ratios.

Run: ``.venv/bin/python bench/bench_worktrees.py [--files 2000] [--runs 20]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rho_mission.git._pool import WorktreePool
from rho_mission.git._repo import GitRepo

ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd: Path, *args: str) -> str:
    """Run git in *cwd* with a fixed identity and no user config."""
    done = subprocess.run(["git", *args], cwd=cwd, env=ENV, check=True, capture_output=True)
    return done.stdout.decode()


def make_repo(root: Path, files: int) -> tuple[str, str]:
    """Create a repository of *files* files in 20 folders; return two commits 20 files apart."""
    git(root, "init", "--quiet", "--initial-branch=main")
    for index in range(files):
        folder = root / f"dir{index % 20:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"file{index:05d}.txt").write_text(f"line {index}\n" * 20, encoding="utf-8")
    git(root, "add", "--all")
    git(root, "commit", "--quiet", "--message=base")
    first = git(root, "rev-parse", "HEAD").strip()
    for index in range(0, files, files // 20):
        path = root / f"dir{index % 20:02d}" / f"file{index:05d}.txt"
        path.write_text("changed\n", encoding="utf-8")
    git(root, "commit", "--quiet", "--all", "--message=next")
    return first, git(root, "rev-parse", "HEAD").strip()


def timed(action: Callable[[], object]) -> float:
    """Seconds that *action* takes."""
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def main() -> None:
    """Build the repository, run the three ways interleaved, print medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=20)
    options = parser.parse_args()
    os.environ.update(ENV)
    with tempfile.TemporaryDirectory(prefix="bench-worktrees-") as scratch:
        root = Path(scratch) / "repo"
        root.mkdir()
        starts = make_repo(root, options.files)
        results = run(GitRepo.open(root), Path(scratch), starts, options.runs)
    report(results, options.files, options.runs)


def run(repo: GitRepo, scratch: Path, starts: tuple[str, str], runs: int) -> dict[str, list[float]]:
    """Time *runs* rounds of each way, one of each per round."""
    kept = scratch / "kept"
    git(repo.root, "worktree", "add", "--quiet", "--detach", str(kept), starts[0])
    results: dict[str, list[float]] = {"fresh": [], "reuse (git)": [], "reuse (pool)": []}
    with WorktreePool(repo, scratch / "pool", "bench") as pool:
        pool.release(pool.acquire("bench/warm", starts[0]))  # steady state: one idle worktree
        for index in range(runs):
            start = starts[index % 2]
            results["fresh"].append(fresh(repo.root, scratch / f"fresh{index}", index, start))
            results["reuse (git)"].append(reuse_git(kept, index, start))
            results["reuse (pool)"].append(reuse_pool(pool, index, start))
    return results


def fresh(root: Path, path: Path, index: int, start: str) -> float:
    """A new worktree on a new branch, a worker's output, then its removal."""
    took = timed(
        lambda: git(root, "worktree", "add", "--quiet", "-b", f"bench/f{index}", str(path), start)
    )
    (path / "output.txt").write_text("worker output\n", encoding="utf-8")
    return took + timed(lambda: git(root, "worktree", "remove", "--force", str(path)))


def reuse_git(kept: Path, index: int, start: str) -> float:
    """The kept worktree switched to a new branch at *start* and cleaned, with plain git."""

    def switch() -> None:
        git(kept, "checkout", "--quiet", "--force", "-B", f"bench/g{index}", start)
        git(kept, "clean", "-ffdxq")

    took = timed(switch)
    (kept / "output.txt").write_text("worker output\n", encoding="utf-8")
    return took


def reuse_pool(pool: WorktreePool, index: int, start: str) -> float:
    """The pool's acquire (reusing its idle worktree) and release."""
    holder: list[Path] = []
    took = timed(lambda: holder.append(pool.acquire(f"bench/p{index}", start)))
    (holder[0] / "output.txt").write_text("worker output\n", encoding="utf-8")
    return took + timed(lambda: pool.release(holder[0]))


def report(results: dict[str, list[float]], files: int, runs: int) -> None:
    """Print the median of each way in milliseconds and how much cheaper reuse is."""
    medians = {name: statistics.median(times) for name, times in results.items()}
    print(f"{files} files, {runs} interleaved runs each (median)")
    for name, median in medians.items():
        print(f"  {name:<13} {median * 1000:8.1f} ms")
    for name in ("reuse (git)", "reuse (pool)"):
        print(f"  fresh / {name:<13} {medians['fresh'] / medians[name]:5.1f}x")


if __name__ == "__main__":
    main()
