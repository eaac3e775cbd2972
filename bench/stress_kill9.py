"""Stress: SIGKILL ``rho mission`` at random moments, resume, and check the end is a clean run's.

Each trial builds a fresh git repository (three committed files, ``.rho/`` excluded, and a dirty
checkout: an unstaged change, a staged one, an untracked file) with a task store of six tasks in
three waves: a diamond a -> b, c -> d beside an independent pair e -> f. Each task appends its
id to its own file in its worktree and commits nothing (rho commits); a and f leave a background
child in their process group, e one that escapes it with ``setsid``; a, c and e take several
steps with short sleeps, so kills land mid-task; b, c, d and f fail unless they see their
blockers' files.

The trial starts ``rho mission --from-tasks --workers N`` in its own session, SIGKILLs rho alone
(its tasks live on, as after a crash) at a random moment of [0, T] (T: the median wall time of
three clean runs measured first), then runs ``rho mission resume DIR`` until a run ends; each
resume is itself killed at random with probability 1/4 (at most twice). A kill before
mission.json exists leaves nothing to resume: the trial runs ``--from-tasks`` again, as a user
would. Then it checks: exit 0 and mission.json ``completed``; the integration branch holds
exactly the expected files and contents (no ``late.txt``, no line twice); no live process
carries the mission's ``RHO_MISSION_ID``; no worktree is registered and
``.rho/worktrees/<id>`` is gone or empty; every task of the store is ``completed``; the user's
work tree, index, HEAD and branch are byte for byte as before.

Prints one line per failed trial (its seed, kill times and the reasons; its folder is kept), then
``kill9 stress: N passed, M failed`` and where the kills landed, read from the journal: start-up
(before the run's first journal entry), mid-wave, mid-join (every feature of the wave finished,
its join not recorded), finishing (after the last join). Exit 1 if a trial failed.

Run: ``.venv/bin/python bench/stress_kill9.py [--trials 100] [--seed S] [--workers 2]``, about
4 s per trial. Imports nothing from the project: it drives the installed ``rho`` script only.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["main"]

RHO = Path(sys.executable).parent / "rho"
WAIT = 60.0  # bound on one run of rho; a run that takes longer is killed and fails its trial
MAX_RUNS = 6
RESUME_KILL_ODDS = 0.25

ORPHAN = "(sleep 30; echo late >> late.txt)"
ESCAPED = "setsid sh -c 'sleep 30; echo late >> late.txt'"
TASKS: dict[str, tuple[str, list[str]]] = {
    "a": (f"{ORPHAN} & for i in 1 2 3; do echo a$i >> a.txt; sleep 0.1; done", []),
    "e": (f"{ESCAPED} & for i in 1 2 3 4; do echo e$i >> e.txt; sleep 0.1; done", []),
    "b": ("grep -qx a3 a.txt && echo b >> b.txt", ["a"]),
    "c": ("grep -qx a3 a.txt && for i in 1 2; do echo c$i >> c.txt; sleep 0.1; done", ["a"]),
    "f": (f"{ORPHAN} & grep -qx e4 e.txt && echo f >> f.txt", ["e"]),
    "d": ("test -f b.txt && grep -qx c2 c.txt && echo d >> d.txt", ["b", "c"]),
}
BASE_FILES = {f"file{n}.txt": f"line {n}\n" for n in range(3)}
EXPECTED_TREE = BASE_FILES | {
    "a.txt": "a1\na2\na3\n",
    "b.txt": "b\n",
    "c.txt": "c1\nc2\n",
    "d.txt": "d\n",
    "e.txt": "e1\ne2\ne3\ne4\n",
    "f.txt": "f\n",
}

ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("RHO_")},
    "GIT_AUTHOR_NAME": "stress",
    "GIT_AUTHOR_EMAIL": "stress@example.com",
    "GIT_COMMITTER_NAME": "stress",
    "GIT_COMMITTER_EMAIL": "stress@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "COLUMNS": "200",
    "NO_COLOR": "1",
}


@dataclass
class Run:
    """One ``rho`` process of a trial and, when it was killed, where the kill landed."""

    args: tuple[str, ...]
    kill_at: float | None
    seconds: float
    code: int
    stderr: str
    landed: str = ""

    def describe(self) -> str:
        """``resume killed at 1.234s (mid-wave 2)`` or ``run exit 1: <last stderr line>``."""
        what = "resume" if self.args[1] == "resume" else "run"
        if self.code == -signal.SIGKILL and self.kill_at is not None:
            return f"{what} killed at {self.kill_at:.3f}s ({self.landed})"
        last = self.stderr.strip().splitlines()[-1:] or [""]
        return f"{what} exit {self.code} after {self.seconds:.2f}s {last[0]}".rstrip()


@dataclass
class Trial:
    """A repository, its checkout as the user left it, and the runs of rho on it."""

    folder: Path  # holds the repository and the stderr of each run
    repo: Path
    checkout: dict[str, bytes]
    runs: list[Run] = field(default_factory=list)
    survivors: list[int] = field(default_factory=list)

    @property
    def folders(self) -> list[Path]:
        """Every mission folder of the repository, recorded or not."""
        missions = self.repo / ".rho" / "missions"
        return sorted(missions.iterdir()) if missions.is_dir() else []

    @property
    def recorded(self) -> list[Path]:
        """The mission folders holding a mission.json."""
        return [folder for folder in self.folders if (folder / "mission.json").is_file()]


# -- set-up ----------------------------------------------------------------------------------


def git(repo: Path, *args: str) -> str:
    """Run git in *repo*; its stdout.

    Raises:
        subprocess.CalledProcessError: git failed.
    """
    done = subprocess.run(["git", *args], cwd=repo, env=ENV, capture_output=True, check=True)
    return done.stdout.decode()


def template_store(scratch: Path) -> bytes:
    """The six tasks as ``rho task import`` writes a store, copied into every repository.

    Raises:
        RuntimeError: the import failed.
    """
    tasks = [
        {
            "id": task_id,
            "subject": f"do {task_id}",
            "status": "pending",
            "dependencies": [{"targetId": b, "type": "blocks"} for b in blockers],
            "metadata": {"command": command},
        }
        for task_id, (command, blockers) in TASKS.items()
    ]
    source, store = scratch / "tasks-import.json", scratch / "template" / "tasks.json"
    source.write_text(json.dumps({"tasks": tasks}), encoding="utf-8")
    argv = [str(RHO), "task", "import", str(source), "--store", str(store)]
    done = subprocess.run(argv, cwd=scratch, env=ENV, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"rho task import exited {done.returncode}: {done.stderr}")
    return store.read_bytes()


def user_repo(repo: Path, store: bytes) -> Path:
    """A repository with one commit, ``.rho/`` excluded, the store, and a dirty checkout."""
    repo.mkdir(parents=True)
    git(repo, "init", "--quiet", "--initial-branch=main")
    for name, text in BASE_FILES.items():
        (repo / name).write_text(text, encoding="utf-8")
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "--message=initial")
    (repo / ".git" / "info" / "exclude").write_text(".rho/\n", encoding="utf-8")
    (repo / ".rho").mkdir(mode=0o700)
    (repo / ".rho" / "tasks.json").write_bytes(store)
    (repo / "file0.txt").write_text("unstaged change\n", encoding="utf-8")
    (repo / "file1.txt").write_text("staged change\n", encoding="utf-8")
    git(repo, "add", "file1.txt")
    (repo / "notes.txt").write_text("untracked\n", encoding="utf-8")
    return repo


def checkout(repo: Path) -> dict[str, bytes]:
    """The user's side of *repo*, byte for byte: work-tree files, index, HEAD and its commit."""
    found = {
        str(path.relative_to(repo)): path.read_bytes()
        for path in repo.rglob("*")
        if path.is_file() and path.relative_to(repo).parts[0] not in (".git", ".rho")
    }
    found[".git/index"] = (repo / ".git" / "index").read_bytes()
    found[".git/HEAD"] = (repo / ".git" / "HEAD").read_bytes()
    found["HEAD commit"] = git(repo, "rev-parse", "HEAD").encode()
    return found


# -- one trial -------------------------------------------------------------------------------


def run_rho(trial: Trial, args: tuple[str, ...], kill_at: float | None) -> Run:
    """Run ``rho ARGS`` in its own session; SIGKILL rho alone after *kill_at* seconds."""
    err = trial.folder / f"rho-{len(trial.runs)}.err"
    started = time.monotonic()
    with err.open("wb") as errors:
        process = subprocess.Popen(
            [str(RHO), *args],
            cwd=trial.repo,
            env=ENV,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            start_new_session=True,
        )
    try:
        code = process.wait(timeout=WAIT if kill_at is None else kill_at)
    except subprocess.TimeoutExpired:
        process.kill()  # the crash (or a run that hung past WAIT, which then fails)
        code = process.wait(timeout=WAIT)
    took = time.monotonic() - started
    return Run(args, kill_at, took, code, err.read_text(encoding="utf-8", errors="replace"))


def run_trial(folder: Path, store: bytes, kills: Sequence[float], workers: int) -> Trial:
    """Run the mission, kill it at each of *kills* seconds in turn, resume until a run ends."""
    trial = Trial(folder, user_repo(folder / "repo", store), {})
    trial.checkout = checkout(trial.repo)
    first = ("mission", "--from-tasks", "--workers", str(workers))
    try:
        for attempt in range(MAX_RUNS):
            mission = trial.recorded[-1] if trial.recorded else None
            args = ("mission", "resume", str(mission)) if mission else first
            skip = len(journal(mission)) if mission else 0
            run = run_rho(trial, args, kills[attempt] if attempt < len(kills) else None)
            trial.runs.append(run)
            if run.code != -signal.SIGKILL:
                break
            run.landed = landing(trial.recorded[-1] if trial.recorded else None, skip)
    finally:
        # Nothing of a trial may outlive it: those found alive are noted, then killed.
        trial.survivors = kill_marked(trial)
    return trial


def journal(folder: Path) -> list[dict[str, Any]]:
    """The journal's entries; a line cut short by a kill is skipped."""
    path = folder / "journal.jsonl"
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines() if path.is_file() else []:
        with contextlib.suppress(json.JSONDecodeError):
            entries.append(json.loads(line))
    return entries


def landing(folder: Path | None, skip: int) -> str:
    """start-up, mid-wave N, mid-join N or finishing: from the entries the killed run appended."""
    events = journal(folder)[skip:] if folder else []
    starts = [n for n, event in enumerate(events) if event["event"] == "mission"]
    if folder is None or not starts:
        return "start-up"
    events = events[starts[0] :]
    if events[-1]["event"] == "mission" and events[-1]["status"] != "executing":
        return "finishing"
    document = json.loads((folder / "mission.json").read_text(encoding="utf-8"))
    joined = [event["wave"] for event in events if event["event"] == "join"]
    wave = joined[-1] + 1 if joined else events[0]["first_wave"]
    if wave > len(document["waves"]):
        return "finishing"
    # mission.json was last written at a join: it shows what this wave had left to run then.
    done = {f["id"] for f in document["features"] if f["status"] == "completed"}
    to_run = set(document["waves"][wave - 1]) - done
    finished = {event["feature_id"] for event in events if event["event"] == "finish"}
    return f"{'mid-join' if to_run <= finished else 'mid-wave'} {wave}"


def kill_marked(trial: Trial) -> list[int]:
    """SIGKILL every live process carrying one of the trial's mission ids; return them."""
    marks = {f"RHO_MISSION_ID={folder.name}".encode() for folder in trial.folders}
    procs = (entry for entry in Path("/proc").iterdir() if entry.name.isdigit())
    found = [int(entry.name) for entry in procs if marks & _environ(entry)]
    for pid in found:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return found


def _environ(proc: Path) -> set[bytes]:
    """The environment of a live process (a zombie's reads as empty)."""
    try:
        return set((proc / "environ").read_bytes().split(b"\0"))
    except OSError:
        return set()


# -- the checks ------------------------------------------------------------------------------


def problems(trial: Trial) -> list[str]:
    """Every way the trial's end differs from a clean run's; empty when it is the same."""
    repo, last = trial.repo, trial.runs[-1]
    found = [] if last.code == 0 else [f"the last run exited {last.code}"]
    if trial.survivors:
        found.append(f"processes of the mission outlived it: {trial.survivors}")
    if len(trial.recorded) != 1:
        return [*found, f"{len(trial.recorded)} missions recorded, not one"]
    document = json.loads((trial.recorded[0] / "mission.json").read_text(encoding="utf-8"))
    if document["status"] != "completed":
        found.append(f"mission.json status is {document['status']!r}")
    tree = tree_files(repo, document["integration_branch"])
    if tree != EXPECTED_TREE:
        found.append(f"the integration branch holds {tree}")
    # Those given back to the shared pool (locked ``rho-pool idle``) are the pool's, not left.
    blocks = git(repo, "worktree", "list", "--porcelain").split("\n\n")[1:]
    worktrees = sum("locked rho-pool idle" not in block for block in blocks if block.strip())
    if worktrees:
        found.append(f"{worktrees} worktree(s) still registered")
    for folder in trial.folders:
        pool = repo / ".rho" / "worktrees" / folder.name
        if pool.exists() and any(pool.iterdir()):
            found.append(f"{pool} is not empty")
    document = json.loads((repo / ".rho" / "tasks.json").read_text(encoding="utf-8"))
    statuses = {task["status"] for task in document["tasks"]}
    if statuses != {"completed"}:
        found.append(f"the store's tasks are {sorted(statuses)}")
    if checkout(repo) != trial.checkout:
        found.append("the user's checkout changed (work tree, index, HEAD or branch)")
    return found


def tree_files(repo: Path, ref: str) -> dict[str, str]:
    """The files of commit *ref*, each with its content."""
    names = git(repo, "ls-tree", "-r", "--name-only", ref).split()
    return {name: git(repo, "show", f"{ref}:{name}") for name in names}


def unrecorded_left(trial: Trial) -> bool:
    """Whether a kill left a mission folder without mission.json (nothing to resume)."""
    return len(trial.folders) > len(trial.recorded)


# -- the stress ------------------------------------------------------------------------------


def typical_time(scratch: Path, store: bytes, workers: int) -> float:
    """The median wall time of three clean runs, each checked like a trial.

    Raises:
        RuntimeError: a clean run did not end as it must.
    """
    times = []
    for number in range(3):
        trial = run_trial(scratch / f"clean{number}", store, [], workers)
        if found := problems(trial):
            raise RuntimeError(f"clean run {number}: {'; '.join(found)}\n{trial.runs[-1].stderr}")
        times.append(trial.runs[-1].seconds)
        shutil.rmtree(trial.folder)
    return statistics.median(times)


def kill_times(rng: random.Random, typical: float) -> list[float]:
    """The first run's kill moment, then one per resume killed (each 1 in 4, at most two)."""
    kills = [rng.uniform(0, typical)]
    while len(kills) < 3 and rng.random() < RESUME_KILL_ODDS:
        kills.append(rng.uniform(0, typical))
    return kills


def tally(trials: list[Trial]) -> str:
    """Where the kills landed, across every run of every trial."""
    landed: Counter[str] = Counter()
    ended = resumes = 0
    for trial in trials:
        for run in trial.runs:
            if run.landed:
                landed[run.landed.split()[0]] += 1
                resumes += run.args[1] == "resume"
            elif run.kill_at is not None:
                ended += 1
    kinds = ("start-up", "mid-wave", "mid-join", "finishing")
    counts = ", ".join(f"{kind} {landed[kind]}" for kind in kinds)
    leaks = sum(unrecorded_left(trial) for trial in trials)
    return (
        f"kills landed: {counts} ({resumes} of them in a resume); "
        f"{ended} came after rho had ended; {leaks} left a mission folder without mission.json"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the trials; print failures and the tally; 1 if a trial failed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--workers", type=int, default=2)
    options = parser.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="stress-kill9-"))
    store = template_store(scratch)
    typical = typical_time(scratch, store, options.workers)
    print(f"seed {options.seed}, {options.trials} trials, clean run {typical:.2f}s", flush=True)
    trials, failed = [], 0
    for number in range(options.trials):
        rng = random.Random(f"{options.seed}:{number}")
        kills = kill_times(rng, typical)
        trial = run_trial(scratch / f"trial{number}", store, kills, options.workers)
        trials.append(trial)
        if found := problems(trial):
            failed += 1
            runs = "; ".join(run.describe() for run in trial.runs)
            reasons = "; ".join(found)
            print(
                f"FAIL seed {options.seed} trial {number} [{runs}]: {reasons} ({trial.folder})",
                flush=True,
            )
        else:
            shutil.rmtree(trial.folder)
    print(f"kill9 stress: {options.trials - failed} passed, {failed} failed")
    print(tally(trials))
    if not failed:
        shutil.rmtree(scratch)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
