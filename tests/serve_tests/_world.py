"""Helpers of the ``rho serve`` tests: real repositories, real ``rho`` processes, a real server.

Every process gets an explicit environment: a home of its own, no git config of the machine, a
fixed identity, no ``RHO_*`` variable. Waits are bounded polls, never fixed sleeps.
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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

__all__ = [
    "RHO",
    "SAVED",
    "WAIT",
    "Result",
    "Server",
    "World",
    "gate_cmd",
    "git",
    "make_repo",
    "make_world",
    "rho",
    "rho_env",
    "save_artefact",
    "start_mission",
    "start_server",
    "task",
    "wait_until",
]

RHO = Path(sys.executable).parent / "rho"
WAIT = 30.0  # bound on every wait; never reached when things work
_POLL = 0.02
#: The artefacts (screenshots) this run saved, listed at its end by conftest.
SAVED: list[Path] = []
_URL_LINE = re.compile(r"^rho serve: (http://[^/]+/)(?:#token=(\S+)| \(token from .*\))$")


@dataclass(frozen=True)
class Result:
    """What one ``rho`` process did."""

    code: int
    stdout: str
    stderr: str

    @property
    def stderr_lines(self) -> list[str]:
        """stderr split into lines."""
        return self.stderr.splitlines()


def rho_env(home: Path) -> dict[str, str]:
    """A clean environment for ``rho`` and git: own home, no machine git config, no RHO_*."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("RHO_", "GIT_")) and k not in ("EMAIL",)
    }
    env.update(
        HOME=str(home),
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="rho tests",
        GIT_AUTHOR_EMAIL="tests@example.invalid",
        GIT_COMMITTER_NAME="rho tests",
        GIT_COMMITTER_EMAIL="tests@example.invalid",
        COLUMNS="200",
        NO_COLOR="1",
    )
    return env


def rho(*args: str, cwd: Path, home: Path) -> Result:
    """Run ``rho ARGS`` in *cwd* and wait for it (a minute is a hang: the timeout fails)."""
    done = subprocess.run(
        [str(RHO), *args], cwd=cwd, env=rho_env(home), capture_output=True, text=True, timeout=60
    )
    return Result(done.returncode, done.stdout, done.stderr)


def git(cwd: Path, home: Path, *args: str) -> str:
    """Run the real git CLI in *cwd* and return its output."""
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=rho_env(home), check=True, capture_output=True, text=True
    )
    return done.stdout


def make_repo(root: Path, home: Path) -> Path:
    """A git repository at *root* on ``main`` with one commit."""
    root.mkdir(parents=True)
    git(root, home, "init", "--quiet", "--initial-branch=main")
    (root / "README.txt").write_text("a project\n", encoding="utf-8")
    git(root, home, "add", "--all")
    git(root, home, "commit", "--quiet", "--message=initial")
    return root


def task(task_id: str, command: str, *blockers: str, **extra: Any) -> dict[str, Any]:
    """One task for ``rho task import``: pending, blocked by *blockers*."""
    return {
        "id": task_id,
        "subject": extra.pop("subject", f"do {task_id}"),
        "status": "pending",
        "dependencies": [{"targetId": blocker, "type": "blocks"} for blocker in blockers],
        "metadata": {"command": command},
        **extra,
    }


def import_tasks(repo: Path, home: Path, tasks: list[dict[str, Any]]) -> None:
    """Load *tasks* into the repository's store with ``rho task import``."""
    source = repo.parent / f"{repo.name}-tasks.json"
    source.write_text(json.dumps({"tasks": tasks}), encoding="utf-8")
    result = rho("task", "import", str(source), cwd=repo, home=home)
    assert result.code == 0, result.stderr


def gate_cmd(path: Path, then: str, limit: float = WAIT) -> str:
    """A command that waits until *path* exists (at most *limit* s, else exit 9), then *then*."""
    rounds = int(limit / 0.05)
    quoted = shlex.quote(str(path))
    wait = (
        f"i=0; while [ ! -e {quoted} ]; do i=$((i+1)); "
        f"[ $i -ge {rounds} ] && exit 9; sleep 0.05; done"
    )
    return f"{wait}; {then}"


def save_artefact(path: Path) -> Path:
    """Note *path* as a saved artefact (listed at the end of the run) and return it."""
    SAVED.append(path)
    print(f"artefact: {path}")
    return path


def wait_until(check: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    """Poll *check* until it holds; fail naming *what* after *timeout* seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(_POLL)


def mission_ids(repo: Path) -> list[str]:
    """The ids of the missions of *repo* that have written their mission.json."""
    folder = repo / ".rho" / "missions"
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if (p / "mission.json").is_file())


@dataclass
class Server:
    """A running ``rho serve`` process, its page URL and its token."""

    process: subprocess.Popen[str]
    url: str
    token: str | None
    output: list[str] = field(default_factory=list)
    # One client for every request: a new one per request costs an SSL context each time.
    http: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=10))

    @property
    def base(self) -> str:
        """The URL without its trailing slash, to append paths to."""
        return self.url.rstrip("/")

    def get(self, path: str, **headers: str) -> httpx.Response:
        """``GET path`` with *headers* (by default none: no token)."""
        return self.http.get(self.base + path, headers=headers)

    def auth(self) -> dict[str, str]:
        """The header that carries the token."""
        assert self.token is not None
        return {"Authorization": f"Bearer {self.token}"}

    def stop(self) -> int:
        """SIGTERM, then wait (bounded); the exit code."""
        self.http.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=WAIT)


def start_server(repo: Path, home: Path, *args: str, token: str | None = None) -> Server:
    """Start ``rho serve --port 0 ARGS`` in *repo* and wait for the line with its URL.

    *token* is the one of ``--token-file`` (the printed URL then carries none).

    Raises:
        AssertionError: the server exited or printed no URL in time.
    """
    process = subprocess.Popen(
        [str(RHO), "serve", "--port", "0", *args],
        cwd=repo,
        env=rho_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()  # the socket is bound before this line is printed
    match = _URL_LINE.match(line.rstrip("\n"))
    if match is None:
        process.kill()
        rest = process.communicate(timeout=WAIT)[0]
        raise AssertionError(f"rho serve printed no URL: {line!r}{rest!r}")
    return Server(process, match.group(1), match.group(2) or token, [line])


@contextmanager
def running_server(
    repo: Path, home: Path, *args: str, token: str | None = None
) -> Iterator[Server]:
    """A server for the duration of the block, stopped (and reaped) after it."""
    server = start_server(repo, home, *args, token=token)
    try:
        yield server
    finally:
        server.http.close()
        if server.process.poll() is None:
            server.process.kill()
        server.process.communicate(timeout=WAIT)


def start_mission(repo: Path, home: Path, *args: str) -> subprocess.Popen[bytes]:
    """Start ``rho mission --from-tasks ARGS`` in *repo*, output to a file beside it."""
    log = repo.parent / f"{repo.name}-mission.out"
    with log.open("ab") as out:
        return subprocess.Popen(
            [str(RHO), "mission", "--from-tasks", *args],
            cwd=repo,
            env=rho_env(home),
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def end_mission(process: subprocess.Popen[bytes]) -> None:
    """Stop a mission still running (SIGTERM: it ends its tasks), and reap it."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=WAIT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=WAIT)


@dataclass(frozen=True)
class World:
    """A repository holding one finished mission (task_1 completed, task_2 failed, task_3
    blocked), and a server on it started without ``--token-file``."""

    repo: Path
    home: Path
    server: Server
    mission_id: str

    @property
    def mission_dir(self) -> Path:
        """The mission's folder."""
        return self.repo / ".rho" / "missions" / self.mission_id


# What the failing task prints: it must reach the log tail, and no report without text.
FAILURE_OUTPUT = "tests said: marker-output-7f3a"
WORLD_TASKS = [
    task("task_1", "echo made > made.txt", subject="marker-subject-1c2d"),
    task("task_2", f"echo '{FAILURE_OUTPUT}'; exit 3", description="marker-description-99ab"),
    task("task_3", "echo never", "task_2"),
]


def make_world(folder: Path) -> tuple[Path, Path, str]:
    """Make the repository of a ``World`` under *folder*, run its mission; (repo, home, id)."""
    home = folder / "home"
    home.mkdir()
    repo = make_repo(folder / "repo", home)
    import_tasks(repo, home, WORLD_TASKS)
    result = rho("mission", "--from-tasks", cwd=repo, home=home)
    assert result.code == 1, result.stdout + result.stderr
    (mission_id,) = mission_ids(repo)
    return repo, home, mission_id
