"""Benchmark: a 40-task mission on repositories of 500 to 60,000 files, landed rho against new.

For each size N (``--sizes``, default 500,20000,60000) a scratch repository is made once, before
any timing: N committed files of 20 lines, 500 to a folder, on branch ``main``, packed with
``git gc`` (as a real repository of that size is; 60,000 loose objects would also make the
first commit of a mission start ``gc --auto``). Every timed measurement then runs on its own
copy of it, made with ``cp -a`` (a clone would pay its own checkout, and leave packs and
config unlike the original) followed by ``git update-index --refresh`` (``cp`` gives every file
a new inode and ctime, so the first git command in the copy would otherwise read all N files
again) and ``sync``, all untimed. On that copy, one measurement is:

- the time of one ``git worktree add --detach <path> HEAD`` (then ``worktree remove``) and of
  one ``git status`` in the main checkout;
- mission 1: 40 tasks in 4 waves of 10 (each task blocked by the task at its place in the wave
  before), each task's command ``echo x > out_<id>.txt``, loaded with ``rho task import``
  (untimed), run with ``rho mission --from-tasks --workers 4`` (timed);
- mission 2: 40 more tasks of the same shape under other ids, imported into the same store,
  and a second ``rho mission --from-tasks --workers 4`` on the same repository (timed).

Each mission must exit 0, be ``completed``, and leave exactly its 40 ``out_<id>.txt`` files on its
integration branch (``rho mission list --json``, ``rho mission show ID --json``, ``git ls-tree``),
or the script stops with an error: a broken run gives no figure.

Three contenders, in one run: ``landed``, rho as of ``--baseline REF`` (default ``HEAD``),
extracted with ``git archive REF | tar -x`` into the scratch folder; ``new``, the working tree
this script is in, as it is; and ``floor``, ``bench/floor_mission.sh``: the git work any
orchestrator of this kind needs (a pool of 4 worktrees, per task ``checkout -B``, the command,
``add -A``, ``commit``; per wave ``merge-tree --write-tree`` + ``commit-tree`` + ``update-ref``
per task), its two "missions" being the same two task lists. Both rho's run as
``python -P -c "...from rho_mission.cli import main; main()"`` on this virtualenv's Python,
with ``PYTHONPATH`` the extracted tree or this one, so neither goes through the editable install
(``-P``: the current folder is not put first on the path, as for the ``rho`` script);
the start-up checks (and prints) which files each one imports. Both run from compiled bytecode
(``PYTHONDONTWRITEBYTECODE`` dropped, ``PYTHONPYCACHEPREFIX`` in the scratch folder), as an
install leaves them.

This machine's cost of creating files drifts by 2-3x within minutes, so each round runs the
contenders in the order landed, new, floor, floor, new, landed (``--rounds``, default 2), and the
table gives medians. Before the timed rounds, each contender runs one untimed measurement per
size with a ``git`` shim first on PATH that logs every call with its duration: the git processes
per feature (calls / 40, per mission) and, for mission 1, the calls and the summed git time per
feature by subcommand. That run also compiles the bytecode and warms the page cache.

Prints, per size, the medians (both missions, per feature, git processes per feature, the
worktree add and status probes), the ratios new/landed, and, at the smallest size, rho(new) /
floor and rho(landed) / floor. Nothing asserts on speed. The working tree is read as it is at
each run, so the script fingerprints its packages after every size and warns when they were
edited during the run (new's figures then mix versions), and says so when new and landed are
the same files (new/landed is then the machine's noise).

Run: ``.venv/bin/python bench/bench_repo_size.py [--sizes 500,20000,60000] [--rounds 2]
[--baseline HEAD] [--keep] [--tmpdir DIR]``. On 2 shared cores ``--sizes 500,20000 --rounds 1``
takes about 9 minutes (80 s of it deleting the scratch folder at the end), and the defaults the
better part of an hour; ``--sizes 500,2000 --rounds 1`` about 2 minutes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_git_processes import ENV as GIT_ENV
from bench_git_processes import subcommand

__all__ = ["main"]

ROOT = Path(__file__).resolve().parents[1]
FLOOR = Path(__file__).resolve().parent / "floor_mission.sh"
PACKAGES = ("rho_mission", "taskstore", "graph")
WAVES, WIDTH, WORKERS = 4, 10, 4
TASKS = WAVES * WIDTH
PER_FOLDER = 500
LINES = 20
LAUNCH = "import sys; sys.argv[0] = 'rho'; from rho_mission.cli import main; main()"
WHERE = "import " + ", ".join(PACKAGES) + "; print(" + ", ".join(f"{p}.__file__" for p in PACKAGES)
WHERE += ", sep='\\n')"
# bench_git_processes' environment, without this shell's Python settings (each contender sets
# its own), in the C locale.
ENV = {
    **{
        k: v
        for k, v in GIT_ENV.items()
        if k not in {"PYTHONDONTWRITEBYTECODE", "PYTHONPATH", "PYTHONPYCACHEPREFIX"}
    },
    "LC_ALL": "C",
}
_SEPARATOR = "\x1f"


@dataclass(frozen=True)
class Contender:
    """One implementation: a rho whose packages are imported from *source*, or the floor."""

    name: str
    source: Path | None = None

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The environment of its commands (and of git's, with *extra*, e.g. the shim)."""
        env = {**ENV, **(extra or {})}
        if self.source is not None:
            env["PYTHONPATH"] = str(self.source)
        return env

    def rho(self, *args: str) -> list[str]:
        """The argv of ``rho ARGS`` for this contender."""
        return [sys.executable, "-P", "-c", LAUNCH, *args]


@dataclass
class Measurement:
    """One fresh copy: the probes and the two missions (seconds), and what the shim logged."""

    worktree_add: float
    status: float
    missions: list[float] = field(default_factory=list)
    calls: list[list[tuple[float, list[str]]]] = field(default_factory=list)


@dataclass(frozen=True)
class Batch:
    """One mission's tasks: their ids by wave, the rho import file and the floor's task list."""

    ids: list[list[str]]
    store_json: Path
    floor_tsv: Path

    @property
    def expected(self) -> set[str]:
        """The files the mission must leave on its integration branch."""
        return {f"out_{task}.txt" for wave in self.ids for task in wave}


def run(
    argv: Sequence[str], cwd: Path, env: dict[str, str] | None = None, stdin: bytes | None = None
) -> str:
    """Run *argv* in *cwd*; its stdout.

    Raises:
        RuntimeError: the command exited non-zero (its output's end is in the message).
    """
    done = subprocess.run(
        list(argv), cwd=cwd, env=env or ENV, input=stdin, capture_output=True, check=False
    )
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).decode(errors="replace").splitlines()[-15:]
        shown = " ".join(shlex.quote(a) for a in argv)
        raise RuntimeError(f"{shown} (in {cwd}) exited {done.returncode}:\n" + "\n".join(tail))
    return done.stdout.decode()


def timed(argv: Sequence[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    """Run *argv* (see ``run``); its wall time in seconds."""
    started = time.perf_counter()
    run(argv, cwd, env)
    return time.perf_counter() - started


def extract_baseline(ref: str, dest: Path) -> str:
    """Write the tree of *ref* into *dest* with ``git archive | tar -x``; its short sha.

    Read-only on this repository: no index, HEAD or branch is touched.
    """
    sha = run(["git", "-C", str(ROOT), "rev-parse", "--verify", f"{ref}^{{commit}}"], ROOT).strip()
    dest.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", sha], env=ENV, capture_output=True, check=True
    )
    run(["tar", "-x", "-C", str(dest)], ROOT, stdin=archive.stdout)
    return sha[:10]


def difference(sha: str) -> str:
    """What the working tree's packages change against *sha*: git's short stat, and the count
    of untracked files (read-only: ``--no-optional-locks``, no index written)."""
    git = ["git", "--no-optional-locks", "-C", str(ROOT)]
    changed = run([*git, "diff", "--shortstat", sha, "--", *PACKAGES], ROOT).strip()
    others = ["ls-files", "--others", "--exclude-standard", "--", *PACKAGES]
    untracked = len(run([*git, *others], ROOT).split())
    return f"{changed or 'no change to tracked files'}; {untracked} untracked file(s)"


def fingerprint(root: Path) -> str:
    """A digest of the packages' files under *root* (paths and contents, no bytecode)."""
    digest = hashlib.sha256()
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(f"{path.relative_to(root)}\0".encode() + path.read_bytes())
    return digest.hexdigest()


def check_imports(contenders: Sequence[Contender]) -> None:
    """Print where each rho imports its packages from; stop if one is not its source.

    Raises:
        RuntimeError: a package came from elsewhere (the editable install won).
    """
    for contender in contenders:
        if contender.source is None:
            print(f"  {contender.name:<7} {FLOOR}")
            continue
        files = run([sys.executable, "-P", "-c", WHERE], ROOT, contender.env()).split()
        for package, file in zip(PACKAGES, files, strict=True):
            if not Path(file).resolve().is_relative_to(contender.source.resolve()):
                raise RuntimeError(f"{contender.name} imports {package} from {file}")
        print(f"  {contender.name:<7} {files[0]} (and {', '.join(PACKAGES[1:])} beside it)")


def task_ids(batch: str) -> list[list[str]]:
    """The ids of one batch, wave by wave: ``a1t00`` .. ``a4t09``."""
    return [[f"{batch}{w}t{t:02d}" for t in range(WIDTH)] for w in range(1, WAVES + 1)]


def write_batch(scratch: Path, batch: str) -> Batch:
    """The import file (``rho task import``) and the floor's task list of one batch."""
    ids = task_ids(batch)
    tasks = [
        {
            "id": task,
            "subject": f"Write out_{task}.txt",
            "status": "pending",
            "dependencies": [{"targetId": ids[w - 1][place], "type": "blocks"}] if w else [],
            "metadata": {"command": f"echo x > out_{task}.txt"},
        }
        for w, wave in enumerate(ids)
        for place, task in enumerate(wave)
    ]
    store_json = scratch / f"tasks-{batch}.json"
    store_json.write_text(json.dumps({"tasks": tasks}), encoding="utf-8")
    floor_tsv = scratch / f"tasks-{batch}.tsv"
    lines = [
        f"{w + 1}\t{task}\techo x > out_{task}.txt" for w, wave in enumerate(ids) for task in wave
    ]
    floor_tsv.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Batch(ids, store_json, floor_tsv)


def make_template(folder: Path, size: int) -> Path:
    """A repository of *size* committed files of 20 lines, 500 to a folder, packed; its path."""
    repo = folder / "repo"
    repo.mkdir(parents=True)
    run(["git", "init", "--quiet", "--initial-branch=main"], repo)
    for index in range(size):
        sub = repo / f"dir{index // PER_FOLDER:03d}"
        if index % PER_FOLDER == 0:
            sub.mkdir()
        text = "".join(f"file {index} line {line}\n" for line in range(LINES))
        (sub / f"file{index:05d}.txt").write_text(text, encoding="utf-8")
    run(["git", "add", "--all"], repo)
    # No gc --auto in the background (it would race the gc below, or a copy).
    run(["git", "-c", "gc.auto=0", "commit", "--quiet", "--message=base"], repo)
    run(["git", "gc", "--quiet"], repo)
    return repo


def fresh_copy(template: Path, dest: Path) -> Path:
    """A copy of *template* at *dest* (replacing one left there), its index refreshed, synced."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    run(["cp", "-a", str(template), str(dest)], dest.parent)
    run(["git", "update-index", "-q", "--refresh"], dest)
    run(["sync"], dest)
    return dest


def probes(repo: Path) -> tuple[float, float]:
    """The time of one ``git worktree add --detach`` (removed after) and of one ``git status``."""
    path = repo.parent / f"{repo.name}.probe"
    add = timed(["git", "worktree", "add", "--quiet", "--detach", str(path), "HEAD"], repo)
    run(["git", "worktree", "remove", "--force", str(path)], repo)
    status = timed(["git", "status"], repo)
    return add, status


def git_shim(folder: Path, log: Path) -> dict[str, str]:
    """A ``git`` in *folder* that logs each call (start, end, arguments) to *log*; its PATH.

    Unlike bench_git_processes' shim it stays alive around the real git to time it, so it is
    used only in the untimed runs.
    """
    real = shutil.which("git")
    if real is None:
        raise RuntimeError("git is not installed")
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "git"
    script.write_text(
        "#!/bin/bash\n"
        "start=$EPOCHREALTIME\n"
        f'{shlex.quote(real)} "$@"\n'
        "code=$?\n"
        f"line=$(printf '%s{_SEPARATOR}' \"$@\")\n"
        f'printf "%s\\t%s\\t%s\\n" "$start" "$EPOCHREALTIME" "$line" >> {shlex.quote(str(log))}\n'
        'exit "$code"\n',
        encoding="utf-8",
    )
    script.chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}{ENV.get('PATH', '')}"}


def read_calls(log: Path) -> list[tuple[float, list[str]]]:
    """The calls a shim logged: each one's duration in seconds and its arguments."""
    if not log.exists():
        return []
    calls = []
    for line in log.read_text(encoding="utf-8").splitlines():
        start, end, args = line.split("\t", 2)
        calls.append((float(end) - float(start), args.rstrip(_SEPARATOR).split(_SEPARATOR)))
    return calls


def mission_ids(contender: Contender, repo: Path) -> list[str]:
    """The ids of the repository's missions, by ``rho mission list --json``."""
    listed = json.loads(run(contender.rho("mission", "list", "--json"), repo, contender.env()))
    return [mission["id"] for mission in listed["missions"]]


def check_branch(repo: Path, branch: str, batch: Batch, who: str) -> None:
    """Stop unless *branch* holds exactly the output files of *batch* among its ``out_*``.

    Raises:
        RuntimeError: a file is missing or one is there that no task of the batch writes.
    """
    names = run(["git", "ls-tree", "-r", "--name-only", branch], repo).split()
    outputs = {name for name in names if name.startswith("out_")}
    if outputs != batch.expected:
        missing, extra = sorted(batch.expected - outputs), sorted(outputs - batch.expected)
        raise RuntimeError(f"{who}: {branch} lacks {missing[:5]}... and has {extra[:5]}...")


def rho_mission(contender: Contender, repo: Path, batch: Batch, env: dict[str, str]) -> float:
    """Import *batch* (untimed), run one mission (timed), check its result; its wall time.

    Raises:
        RuntimeError: the mission did not exit 0, is not completed, or its branch is wrong.
    """
    run(contender.rho("task", "import", str(batch.store_json)), repo, contender.env())
    before = set(mission_ids(contender, repo))
    argv = contender.rho("mission", "--from-tasks", "--workers", str(WORKERS))
    took = timed(argv, repo, env)
    new = [mission for mission in mission_ids(contender, repo) if mission not in before]
    if len(new) != 1:
        raise RuntimeError(f"{contender.name}: {len(new)} new missions, not 1, in {repo}")
    shown = run(contender.rho("mission", "show", new[0], "--json"), repo, contender.env())
    mission = json.loads(shown)
    if mission["status"] != "completed":
        raise RuntimeError(f"{contender.name}: mission {new[0]} is {mission['status']}")
    check_branch(repo, mission["integration_branch"], batch, f"{contender.name} {new[0]}")
    return took


def floor_mission(repo: Path, batch: Batch, prefix: str, env: dict[str, str]) -> float:
    """One run of the floor script with *batch* (timed), its branch checked; its wall time."""
    took = timed(["bash", str(FLOOR), str(repo), str(batch.floor_tsv), prefix], repo, env)
    check_branch(repo, f"{prefix}/integration", batch, f"floor {prefix}")
    return took


def measure(
    contender: Contender, template: Path, work: Path, batches: Sequence[Batch], shim: bool
) -> Measurement:
    """One fresh copy of *template*: the probes, then both missions (with the shim if asked)."""
    repo = fresh_copy(template, work / contender.name / "repo")
    result = Measurement(*probes(repo))
    for number, batch in enumerate(batches, start=1):
        log = work / contender.name / f"git-{number}.log"
        log.unlink(missing_ok=True)
        extra = git_shim(work / "shim", log) if shim else None
        env = contender.env(extra)
        if contender.source is None:
            took = floor_mission(repo, batch, f"floor{number}", env)
        else:
            took = rho_mission(contender, repo, batch, env)
        result.missions.append(took)
        result.calls.append(read_calls(log))
    return result


@dataclass
class SizeResult:
    """Every measurement of one size, by contender; the shim's runs apart."""

    size: int
    timed: dict[str, list[Measurement]] = field(default_factory=lambda: defaultdict(list))
    counted: dict[str, Measurement] = field(default_factory=dict)

    def median(self, name: str, mission: int) -> float:
        """The median wall time of mission *mission* (0 or 1) of *name*."""
        return statistics.median(m.missions[mission] for m in self.timed[name])


def run_size(
    size: int,
    scratch: Path,
    contenders: Sequence[Contender],
    batches: Sequence[Batch],
    rounds: int,
) -> SizeResult:
    """Make the template of *size*, run the counted measurement, then the interleaved rounds."""
    started = time.perf_counter()
    template = make_template(scratch / f"template-{size}", size)
    print(f"{size} files: repository made in {time.perf_counter() - started:.1f} s", flush=True)
    work = scratch / f"work-{size}"
    result = SizeResult(size)
    for contender in contenders:
        result.counted[contender.name] = measure(contender, template, work, batches, shim=True)
    order = [*contenders, *reversed(contenders)]
    for number in range(1, rounds + 1):
        shown = []
        for contender in order:
            measurement = measure(contender, template, work, batches, shim=False)
            result.timed[contender.name].append(measurement)
            first, second = measurement.missions
            shown.append(f"{contender.name} {first:.2f}/{second:.2f}")
        print(f"  round {number} (mission 1/2, s): {', '.join(shown)}", flush=True)
    return result


def report(results: Sequence[SizeResult], contenders: Sequence[Contender]) -> None:
    """The table of medians, the ratios new/landed, rho/floor at the smallest size, and the
    git processes by subcommand."""
    rounds = len(results[0].timed[contenders[0].name])
    print()
    print(
        f"{TASKS} tasks in {WAVES} waves of {WIDTH}, --workers {WORKERS}; medians of {rounds}"
        " measurement(s) per contender (order landed, new, floor, floor, new, landed)"
    )
    header = (
        f"{'files':>7} {'':<7}{'mission 1':>11}{'mission 2':>11}{'per feature':>13}"
        f"{'git/feature':>13}{'wt add':>9}{'status':>9}"
    )
    print(header)
    for result in results:
        for contender in contenders:
            found = result.timed[contender.name]
            first, second = (result.median(contender.name, m) for m in (0, 1))
            counted = result.counted[contender.name]
            git = "/".join(f"{len(calls) / TASKS:.1f}" for calls in counted.calls)
            add = statistics.median(m.worktree_add for m in found)
            status = statistics.median(m.status for m in found)
            print(
                f"{result.size:>7} {contender.name:<7}{first:10.2f}s{second:10.2f}s"
                f"{first / TASKS * 1000:10.1f} ms{git:>13}{add:8.2f}s{status:8.3f}s"
            )
    print("  (git/feature: calls of mission 1 / mission 2 over 40, from the shim's untimed run;")
    print("   wt add, status: one git worktree add --detach HEAD, one git status, on each copy)")
    for result in results:
        ratios = [result.median("new", m) / result.median("landed", m) for m in (0, 1)]
        print(
            f"{result.size:>7} files: new/landed mission 1 {ratios[0]:.2f}x,"
            f" mission 2 {ratios[1]:.2f}x"
        )
    smallest = min(results, key=lambda r: r.size)
    floor = smallest.median("floor", 0)
    for name in ("new", "landed"):
        ratio = smallest.median(name, 0) / floor
        second = smallest.median(name, 1) / smallest.median("floor", 1)
        print(
            f"{smallest.size:>7} files: rho({name})/floor mission 1 {ratio:.2f}x,"
            f" mission 2 {second:.2f}x"
        )
    largest = max(results, key=lambda r: r.size)
    if largest is not smallest:
        for name in ("new", "landed"):
            across = largest.median(name, 1) / smallest.median(name, 0)
            print(
                f"  {name}: mission 2 at {largest.size} files / mission 1 at {smallest.size}:"
                f" {across:.2f}x"
            )
    print()
    print("git calls and summed git time per feature, by subcommand (shim run); a long-lived")
    print("update-ref --stdin (rho's branch moves) is counted apart: its time is its lifetime")
    for result in results:
        for contender in contenders:
            for number, calls in enumerate(result.counted[contender.name].calls, start=1):
                print(f"{result.size:>7} {contender.name:<7}{number} {calls_by_command(calls)}")


def calls_by_command(calls: Sequence[tuple[float, list[str]]]) -> str:
    """One mission's git calls per feature: how many, their summed time, the six costliest
    subcommands, and the streams (``update-ref --stdin``) apart."""
    by_command: dict[str, list[float]] = defaultdict(list)
    streams = 0
    for took, args in calls:
        name = subcommand(args)
        if name == "update-ref" and "--stdin" in args:
            streams += 1
            continue
        by_command[name].append(took)
    total = sum(sum(times) for times in by_command.values())
    ranked = sorted(by_command.items(), key=lambda item: -sum(item[1]))
    parts = ", ".join(
        f"{name} {len(times) / TASKS:.2f} ({sum(times) / TASKS * 1000:.0f} ms)"
        for name, times in ranked[:6]
    )
    calls_made = sum(len(times) for times in by_command.values())
    return (
        f"{calls_made / TASKS:5.2f} calls {total / TASKS * 1000:6.0f} ms: {parts}"
        f"; streams: {streams}"
    )


def main() -> None:
    """Extract the baseline, check the imports, run every size, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,20000,60000", help="comma-separated file counts")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of landed/new/floor x2")
    parser.add_argument("--baseline", default="HEAD", help="git ref of the landed rho")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    parser.add_argument("--tmpdir", help="where the scratch folder goes (default: $TMPDIR)")
    options = parser.parse_args()
    sizes = [int(size) for size in options.sizes.split(",")]
    if options.rounds < 1 or not sizes or min(sizes) < 1:
        parser.error("--rounds and every size must be at least 1")
    for tool in ("git", "bash", "tar", "cp", "sync"):
        if shutil.which(tool) is None:
            sys.exit(f"error: {tool} is not installed")
    scratch = Path(tempfile.mkdtemp(prefix="bench-repo-size-", dir=options.tmpdir))
    ENV["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
    started = time.perf_counter()
    failed = False
    try:
        sha = extract_baseline(options.baseline, scratch / "landed")
        print(f"scratch {scratch}; landed = {options.baseline} ({sha}), new = {ROOT}")
        print(f"  new against landed in {', '.join(PACKAGES)}: {difference(sha)}")
        contenders = [
            Contender("landed", scratch / "landed"),
            Contender("new", ROOT),
            Contender("floor"),
        ]
        check_imports(contenders)
        batches = [write_batch(scratch, "a"), write_batch(scratch, "b")]
        before, results, edited = fingerprint(ROOT), [], []
        for size in sizes:
            results.append(run_size(size, scratch, contenders, batches, options.rounds))
            if fingerprint(ROOT) != before:
                edited.append(size)
                before = fingerprint(ROOT)
                print(f"  warning: {ROOT}'s packages changed while {size} files ran", flush=True)
        report(results, contenders)
        if fingerprint(scratch / "landed") == fingerprint(ROOT):
            print("new and landed are the same files now: new/landed is the noise of the machine")
        if edited:
            shown = ", ".join(map(str, edited))
            print(f"warning: new was edited during the run (at {shown} files): its figures mix")
    except (RuntimeError, subprocess.CalledProcessError) as error:
        failed = True
        print(f"error: {error}", file=sys.stderr)
    finally:
        if options.keep or failed:
            print(f"scratch kept: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
        print(f"total {time.perf_counter() - started:.0f} s (with the scratch folder's removal)")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
