"""kill -9 at random moments, then resume: a crash never changes what a mission ends with.

Each trial runs ``rho mission --from-tasks --workers 2`` on a fresh repository over six tasks in
three waves (a diamond a -> b, c -> d beside an independent pair e -> f), SIGKILLs ``rho`` alone
at a random moment, as a crash would, and resumes until a run ends (every fourth trial kills its
first resume too). The tasks leave orphans behind: a background child in their process group and
one that escapes it with ``setsid``; some take several steps with short sleeps, so kills land
mid-task. However the kill lands, the end must be the clean run's: the same files on the
integration branch, no process of the mission alive, no worktree left, the store completed and
the user's checkout untouched to the byte.

Kill moments come from one clean run's wall time T and the moment L its journal began (Python
and rho start-up before it). Trial 0 dies at a seeded random moment of [0, L); the others are
stratified over [L, T] (trial k of n dies at a random point of the k-th (n-1)-th), so that a dozen
trials cover the run from start-up to the last join.
``bench/stress_kill9.py`` runs the same trials by the hundred.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from support.procs import pid_gone
from support.repos import tree_files
from support.repos import worktree_paths as registered_worktrees
from support.rho import RHO, WAIT, rho_env, run_rho
from support.stores import store_tasks

SEED = 20_240_917
TRIALS = 12
RESUME_KILL_EVERY = 4  # trials 3, 7, 11 also kill their first resume
MAX_RUNS = 6  # a kill, a killed resume, the last resume; more is a loop

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
TASK_FILES = {
    "a.txt": "a1\na2\na3\n",
    "b.txt": "b\n",
    "c.txt": "c1\nc2\n",
    "d.txt": "d\n",
    "e.txt": "e1\ne2\ne3\ne4\n",
    "f.txt": "f\n",
}
BASE_FILES = {f"file{n:04d}.txt": f"line {n}\n" for n in range(3)}  # conftest.init_repo's
RUN = ("mission", "--from-tasks", "--workers", "2")


@dataclass
class Run:
    """One ``rho`` process of a trial and, when it was killed, where the kill landed."""

    args: tuple[str, ...]
    kill_at: float | None
    started: float  # time.time() at the spawn
    seconds: float  # wall time until it ended
    code: int
    stderr: str
    landed: str = ""

    def describe(self) -> str:
        kill = "no kill" if self.kill_at is None else f"kill at {self.kill_at:.3f}s"
        landed = f" landed {self.landed}" if self.landed else ""
        return f"$ rho {' '.join(self.args)} ({kill}{landed}) -> exit {self.code}\n{self.stderr}"


@dataclass
class Trial:
    """A repository, its checkout as the user left it, and the runs of rho on it."""

    repo: Path
    checkout: dict[str, bytes]
    runs: list[Run] = field(default_factory=list)
    survivors: list[int] = field(default_factory=list)  # marked processes alive at the end

    @property
    def missions(self) -> Path:
        return self.repo / ".rho" / "missions"


def test_kill_9_at_random_moments_then_resume_ends_as_a_clean_run(
    tmp_path: Path, make_repo: Callable[[str, int], Path]
) -> None:
    store = _template_store(tmp_path)
    clean = _trial(make_repo, "clean", store, [])
    assert _problems(clean) == [], _report(f"seed {SEED} clean run", clean, _problems(clean))
    took, lead = clean.runs[0].seconds, _lead(clean)
    failures = []
    for number in range(TRIALS):
        trial = _trial(make_repo, f"trial{number}", store, _kills(number, took, lead))
        if problems := _problems(trial):
            title = f"seed {SEED} trial {number} (clean run {took:.2f}s, journal at {lead:.2f}s)"
            failures.append(_report(title, trial, problems))
    assert failures == [], "\n\n".join(failures)


# -- one trial ---------------------------------------------------------------------------------


def _kills(number: int, took: float, lead: float) -> list[float]:
    """When trial *number* kills its first run and, every fourth trial, its first resume."""
    rng = random.Random(SEED * 1000 + number)
    if number == 0:
        kills = [lead * rng.random()]
    else:
        kills = [lead + (took - lead) * (number - 1 + rng.random()) / (TRIALS - 1)]
    if number % RESUME_KILL_EVERY == RESUME_KILL_EVERY - 1:
        kills.append(took * rng.random())
    return kills


def _template_store(tmp_path: Path) -> bytes:
    """The six tasks as ``rho task import`` writes them, copied into every trial's repository."""
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
    source, store = tmp_path / "tasks-import.json", tmp_path / "template" / "tasks.json"
    source.write_text(json.dumps({"tasks": tasks}), encoding="utf-8")
    result = run_rho("task", "import", str(source), "--store", str(store), cwd=tmp_path)
    assert result.code == 0, result.stderr
    return store.read_bytes()


def _trial(
    make_repo: Callable[[str, int], Path], name: str, store: bytes, kills: list[float]
) -> Trial:
    """Run the mission, kill it at each of *kills* seconds in turn, resume until a run ends."""
    trial = Trial(_user_repo(make_repo(name, len(BASE_FILES)), store), {})
    trial.checkout = _checkout(trial.repo)
    try:
        for attempt in range(MAX_RUNS):
            recorded = _recorded(trial)
            folder = recorded[-1] if recorded else None
            args = ("mission", "resume", str(folder)) if folder else RUN
            skip = len(_journal(folder)) if folder else 0
            run = _run(trial, args, kills[attempt] if attempt < len(kills) else None)
            trial.runs.append(run)
            if run.code != -signal.SIGKILL:
                break
            after = _recorded(trial)
            run.landed = _landing(after[-1] if after else None, skip)
    finally:
        # Nothing of a trial may outlive it: those found alive are noted, then killed.
        trial.survivors = _kill_marked(trial)
    return trial


def _user_repo(repo: Path, store: bytes) -> Path:
    """*repo* with ``.rho/`` excluded, the store in place, and a dirty checkout."""
    (repo / ".git" / "info" / "exclude").write_text(".rho/\n", encoding="utf-8")
    (repo / ".rho").mkdir(mode=0o700)
    (repo / ".rho" / "tasks.json").write_bytes(store)
    (repo / "file0000.txt").write_text("unstaged change\n", encoding="utf-8")
    (repo / "file0001.txt").write_text("staged change\n", encoding="utf-8")
    subprocess.run(["git", "add", "file0001.txt"], cwd=repo, check=True)
    (repo / "notes.txt").write_text("untracked\n", encoding="utf-8")
    return repo


def _run(trial: Trial, args: tuple[str, ...], kill_at: float | None) -> Run:
    """Run ``rho ARGS`` in its own process group; SIGKILL rho alone after *kill_at* seconds."""
    logs = trial.repo.parent / f"{trial.repo.name}-rho"
    logs.mkdir(exist_ok=True)
    err = logs / f"{len(trial.runs)}.err"
    started, clock = time.time(), time.monotonic()
    with (logs / f"{len(trial.runs)}.out").open("wb") as out, err.open("wb") as errors:
        process = subprocess.Popen(
            [str(RHO), *args],
            cwd=trial.repo,
            env=rho_env(),
            stdout=out,
            stderr=errors,
            start_new_session=True,
        )
    try:
        code = process.wait(timeout=WAIT if kill_at is None else kill_at)
    except subprocess.TimeoutExpired:
        process.kill()  # the crash; a run that hung past WAIT ends the same way, and fails
        code = process.wait(timeout=WAIT)
    took = time.monotonic() - clock
    return Run(args, kill_at, started, took, code, err.read_text(encoding="utf-8"))


def _recorded(trial: Trial) -> list[Path]:
    """The trial's mission folders holding a mission.json (a kill may leave one without)."""
    return [folder for folder in _folders(trial) if (folder / "mission.json").is_file()]


def _folders(trial: Trial) -> list[Path]:
    return sorted(trial.missions.iterdir()) if trial.missions.is_dir() else []


# -- where a kill landed, from the journal ---------------------------------------------------


def _journal(folder: Path) -> list[dict[str, Any]]:
    """The journal's entries; a line cut short by the kill is skipped."""
    path = folder / "journal.jsonl"
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines() if path.is_file() else []:
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return entries


def _lead(trial: Trial) -> float:
    """Seconds from the spawn of the trial's first run to its first journal entry."""
    (folder,) = _recorded(trial)
    first = datetime.fromisoformat(_journal(folder)[0]["at"]).timestamp()
    return max(0.0, first - trial.runs[0].started)


def _landing(folder: Path | None, skip: int) -> str:
    """start-up, mid-wave N, mid-join N, finishing: from the entries the killed run appended."""
    events = _journal(folder)[skip:] if folder else []
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


# -- what the end must be --------------------------------------------------------------------


def _problems(trial: Trial) -> list[str]:
    """Every way the trial's end differs from a clean run's; empty when it is the same."""
    repo, last = trial.repo, trial.runs[-1]
    problems = [] if last.code == 0 else [f"the last run exited {last.code}"]
    if trial.survivors:
        problems.append(f"processes of the mission outlived it: {trial.survivors}")
    recorded = _recorded(trial)
    if len(recorded) != 1:
        return [*problems, f"{len(recorded)} missions recorded, not one: {recorded}"]
    folder = recorded[0]
    document = json.loads((folder / "mission.json").read_text(encoding="utf-8"))
    if document["status"] != "completed":
        problems.append(f"mission.json status is {document['status']!r}")
    files = tree_files(repo, document["integration_branch"])
    if files != BASE_FILES | TASK_FILES:
        problems.append(f"the integration branch holds {files}")
    if registered_worktrees(repo) != [str(repo.resolve())]:
        problems.append(f"worktrees still registered: {registered_worktrees(repo)[1:]}")
    for mission in _folders(trial):
        pool = repo / ".rho" / "worktrees" / mission.name
        if pool.exists() and any(pool.iterdir()):
            problems.append(f"{pool} still holds {sorted(p.name for p in pool.iterdir())}")
    if (statuses := {t["status"] for t in store_tasks(repo).values()}) != {"completed"}:
        problems.append(f"the store's tasks are {sorted(statuses)}")
    if _checkout(repo) != trial.checkout:
        problems.append("the user's checkout changed (work tree, index, HEAD or branch)")
    return problems


def _checkout(repo: Path) -> dict[str, bytes]:
    """The user's side of *repo*, byte for byte: work-tree files, index, HEAD and its commit."""
    found = {
        str(path.relative_to(repo)): path.read_bytes()
        for path in repo.rglob("*")
        if path.is_file() and path.relative_to(repo).parts[0] not in (".git", ".rho")
    }
    found[".git/index"] = (repo / ".git" / "index").read_bytes()
    found[".git/HEAD"] = (repo / ".git" / "HEAD").read_bytes()
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, check=True)
    found["HEAD commit"] = head.stdout
    return found


def _kill_marked(trial: Trial) -> list[int]:
    """SIGKILL every live process carrying one of the trial's mission ids; return them."""
    marks = {f"RHO_MISSION_ID={folder.name}".encode() for folder in _folders(trial)}
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and not pid_gone(int(entry.name)):
            try:
                environ = set((entry / "environ").read_bytes().split(b"\0"))
            except OSError:
                continue  # gone meanwhile, or not ours to read
            if environ & marks:
                found.append(int(entry.name))
    for pid in found:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return found


def _report(title: str, trial: Trial, problems: list[str]) -> str:
    runs = "\n".join(run.describe() for run in trial.runs)
    return f"{title} in {trial.repo}:\n- " + "\n- ".join(problems) + f"\nruns:\n{runs}"
