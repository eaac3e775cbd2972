"""Helpers of the mission CLI and reliability tests: real ``rho`` processes, stores and /proc.

Every ``rho`` here is the installed console script run as a real subprocess, in a real git
repository, with the environment of the test (which ``conftest.hermetic_git`` keeps away from the
machine's git config). Waits are bounded polls on files or on /proc, never fixed sleeps.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "RHO",
    "WAIT",
    "Result",
    "RhoRuns",
    "branches",
    "dry_run_waves",
    "exclude_rho",
    "group_alive",
    "import_tasks",
    "journal_events",
    "kill_leftover_groups",
    "mission_dir",
    "pgid_of",
    "pid_gone",
    "read_pid",
    "rho_env",
    "run_rho",
    "spec",
    "store_bytes",
    "store_path",
    "store_tasks",
    "tree_files",
    "wait_file_cmd",
    "wait_until",
    "worktree_paths",
]

RHO = Path(sys.executable).parent / "rho"
WAIT = 30.0  # bound on every wait; never reached when things work
_POLL = 0.02
_PID = re.compile(r"^\d+\n$")


@dataclass(frozen=True)
class Result:
    """What one ``rho`` process did."""

    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        """stdout parsed as exactly one JSON document (json.loads refuses trailing data)."""
        return json.loads(self.stdout)

    @property
    def stdout_lines(self) -> list[str]:
        """stdout split into lines."""
        return self.stdout.splitlines()

    @property
    def stderr_lines(self) -> list[str]:
        """stderr split into lines."""
        return self.stderr.splitlines()


def rho_env() -> dict[str, str]:
    """The test's environment without RHO_* variables, with wide unstyled rich output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RHO_")}
    env.update(COLUMNS="200", NO_COLOR="1")
    return env


def run_rho(*args: str, cwd: Path, env: dict[str, str] | None = None) -> Result:
    """Run ``rho ARGS`` in *cwd* and wait for it (a minute is a hang: the timeout fails);
    *env* adds variables to the hermetic environment."""
    done = subprocess.run(
        [str(RHO), *args],
        cwd=cwd,
        env={**rho_env(), **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return Result(done.returncode, done.stdout, done.stderr)


class RhoRuns:
    """``rho`` processes started in the background; ``close`` kills what is left of them.

    Their output goes to files under *folder* (not pipes), so that a process that outlives a
    killed ``rho`` can never keep a test waiting for end-of-file.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._runs: list[tuple[subprocess.Popen[bytes], Path, Path]] = []

    def start(
        self,
        *args: str,
        cwd: Path,
        env: dict[str, str] | None = None,
        before: Sequence[str] = (),
        own_group: bool = False,
    ) -> subprocess.Popen[bytes]:
        """Start ``rho ARGS`` in *cwd* and return its process; *env* adds variables to the
        hermetic environment, *before* runs rho under a command (``timeout 5``), *own_group*
        in a process group of its own (as ``timeout`` or a CI runner starts it)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        out = self.folder / f"rho-{len(self._runs)}.out"
        err = self.folder / f"rho-{len(self._runs)}.err"
        with out.open("wb") as stdout, err.open("wb") as stderr:
            process = subprocess.Popen(
                [*before, str(RHO), *args],
                cwd=cwd,
                env={**rho_env(), **(env or {})},
                stdout=stdout,
                stderr=stderr,
                process_group=0 if own_group else None,
            )
        self._runs.append((process, out, err))
        return process

    def wait(self, process: subprocess.Popen[bytes]) -> Result:
        """Wait (bounded) for *process* to end and return what it did."""
        code = process.wait(timeout=WAIT)
        _, out, err = next(run for run in self._runs if run[0] is process)
        return Result(code, out.read_text(encoding="utf-8"), err.read_text(encoding="utf-8"))

    def close(self) -> bool:
        """SIGKILL every run still going and reap it; return True if there was one."""
        killed = False
        for process, _, _ in self._runs:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=WAIT)
                killed = True
        return killed


def dry_run_waves(text: str) -> list[str]:
    """The waves part of ``rho mission --dry-run``'s text: the lines after its title, up to
    the first of the held tasks, the stages or the settings."""
    lines = text.splitlines()[1:]
    end = next((n for n, line in enumerate(lines) if not line.startswith(("wave ", "  "))), None)
    return lines[:end]


def wait_until(check: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    """Poll *check* until it holds; fail the test naming *what* after *timeout* seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(_POLL)


def read_pid(path: Path) -> int:
    """Wait until *path* holds a whole pid line (the writer may be mid-write) and return it."""

    def complete() -> bool:
        return path.is_file() and _PID.match(path.read_text(encoding="ascii")) is not None

    wait_until(complete, f"a pid in {path}")
    return int(path.read_text(encoding="ascii"))


def wait_file_cmd(path: Path, limit: float = WAIT, *, written: bool = False) -> str:
    """A shell snippet that waits until *path* exists (*written*: and is not empty); after
    *limit* seconds it exits 9.

    The bound keeps a task command from outliving a broken test for long. *written* is for a
    file that a shell redirection creates empty before its writer has written anything.
    """
    rounds = int(limit / 0.05)
    quoted = shlex.quote(str(path))
    test = "-s" if written else "-e"
    return (
        f"i=0; while [ ! {test} {quoted} ]; do i=$((i+1)); "
        f"[ $i -ge {rounds} ] && exit 9; sleep 0.05; done"
    )


# -- task store ------------------------------------------------------------------------------


def spec(task_id: str, command: str | None, *blockers: str) -> dict[str, Any]:
    """One task for ``rho task import``: pending, subject ``do <id>``, blocked by *blockers*."""
    task: dict[str, Any] = {
        "id": task_id,
        "subject": f"do {task_id}",
        "status": "pending",
        "dependencies": [{"targetId": blocker, "type": "blocks"} for blocker in blockers],
    }
    if command is not None:
        task["metadata"] = {"command": command}
    return task


def import_tasks(repo: Path, tasks: list[dict[str, Any]], *store_args: str) -> None:
    """Load *tasks* into the repository's store (or ``--store ...``) with ``rho task import``."""
    source = repo.parent / f"{repo.name}-import.json"
    source.write_text(json.dumps({"tasks": tasks}), encoding="utf-8")
    result = run_rho("task", "import", str(source), *store_args, cwd=repo)
    assert result.code == 0, result.stderr


def exclude_rho(repo: Path) -> Path:
    """Add ``.rho/`` to *repo*'s ``.git/info/exclude``, as rho's first mission does: a snapshot
    of the user's checkout taken before a mission then differs only in what the mission did."""
    with (repo / ".git" / "info" / "exclude").open("a", encoding="utf-8") as exclude:
        exclude.write(".rho/\n")
    return repo


def store_path(repo: Path) -> Path:
    """The default store of *repo*."""
    return repo / ".rho" / "tasks.json"


def store_bytes(repo: Path) -> bytes:
    """The store file's bytes."""
    return store_path(repo).read_bytes()


def store_tasks(repo: Path, path: Path | None = None) -> dict[str, dict[str, Any]]:
    """The store's tasks by id, read straight from the file."""
    document = json.loads((path or store_path(repo)).read_text(encoding="utf-8"))
    return {task["id"]: task for task in document["tasks"]}


# -- mission folder and git ------------------------------------------------------------------


def mission_dir(repo: Path) -> Path:
    """The one mission folder of *repo*."""
    (folder,) = (repo / ".rho" / "missions").iterdir()
    return folder


def journal_events(folder: Path, event: str) -> list[dict[str, Any]]:
    """The journal entries of kind *event* of the mission in *folder*."""
    journal = folder / "journal.jsonl"
    if not journal.is_file():
        return []
    entries = [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines()]
    return [entry for entry in entries if entry["event"] == event]


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)
    return done.stdout


def branches(repo: Path) -> set[str]:
    """Every local branch name."""
    return set(_git(repo, "branch", "--format=%(refname:short)").split())


def worktree_paths(repo: Path, *, pooled: bool = False) -> list[str]:
    """The paths of the worktrees git has registered, the main one first: those in use or left
    behind; the ones given back to the shared pool (locked ``rho-pool idle``) only if *pooled*."""
    blocks = _git(repo, "worktree", "list", "--porcelain").split("\n\n")
    return [
        block.splitlines()[0].removeprefix("worktree ")
        for block in blocks
        if block.startswith("worktree ") and (pooled or "locked rho-pool idle" not in block)
    ]


def integration_branch(repo: Path) -> str:
    """The integration branch of the newest mission of *repo*: by its start (to the
    millisecond: two missions often start within one second, a commit's date), else, with no
    mission folder left, by its branch's creation."""
    records = [
        json.loads(p.read_text()) for p in (repo / ".rho" / "missions").glob("*/mission.json")
    ]
    started = [record for record in records if record.get("started_at")]
    if started:
        newest = max(started, key=lambda record: record["started_at"])
        return str(newest["integration_branch"])
    listed = _git(repo, "for-each-ref", "--sort=-creatordate", "--format=%(refname:short)")
    return next(ref for ref in listed.splitlines() if ref.endswith("/integration"))


def tree_files(repo: Path, ref: str) -> dict[str, str]:
    """The files of commit *ref*, each with its content."""
    names = _git(repo, "ls-tree", "-r", "--name-only", ref).split()
    return {name: _git(repo, "show", f"{ref}:{name}") for name in names}


# -- processes -------------------------------------------------------------------------------


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, process group) of *pid*, or None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()
    return fields[0], int(fields[2])


def pid_gone(pid: int) -> bool:
    """True when *pid* no longer runs: absent, or a zombie nobody reaped (init may not reap)."""
    stat = _stat(pid)
    return stat is None or stat[0] in ("Z", "X")


def pgid_of(pid: int) -> int:
    """The process group of the running *pid*."""
    stat = _stat(pid)
    assert stat is not None, f"process {pid} is gone"
    return stat[1]


def _live_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None and stat[1] == pgid and stat[0] not in ("Z", "X"):
                members.append(int(entry.name))
    return members


def group_alive(pgid: int) -> bool:
    """True while some member of process group *pgid* runs (zombies do not count)."""
    return bool(_live_members(pgid))


def _runs_for(pid: int, mission_id: str) -> bool:
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return f"RHO_MISSION_ID={mission_id}".encode() in environ.split(b"\0")


def kill_leftover_groups(folder: Path) -> list[int]:
    """SIGKILL every task process group that a mission under *folder* left running.

    The groups are the ones the missions' journals recorded; a group is touched only while a
    member still runs with that mission's id in its environment (process ids get reused).
    """
    killed = []
    for journal in folder.rglob("journal.jsonl"):
        mission_id = journal.parent.name
        for entry in journal_events(journal.parent, "process"):
            pgid = entry["pgid"]
            if any(_runs_for(pid, mission_id) for pid in _live_members(pgid)):
                os.killpg(pgid, signal.SIGKILL)
                killed.append(pgid)
    return killed
