"""Helpers of the ``rho serve`` tests: one finished mission behind a real server.

Every process gets the environment of ``support.environ.rho_env`` with a home of its own: no
git config of the machine, a fixed identity, no ``RHO_*`` variable. Waits are bounded polls,
never fixed sleeps.
"""

from __future__ import annotations

import re
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from support.environ import rho_env
from support.repos import init_home_repo
from support.rho import RHO, WAIT, run_rho
from support.stores import import_tasks, mission_ids, spec

__all__ = [
    "FAILURE_OUTPUT",
    "SAVED",
    "Server",
    "World",
    "end_mission",
    "make_world",
    "running_server",
    "save_artefact",
    "start_mission",
    "start_server",
]

#: The artefacts (screenshots) this run saved, listed at its end by conftest.
SAVED: list[Path] = []
_URL_LINE = re.compile(r"^rho serve: (http://[^/]+/)(?:#token=(\S+)| \(token from .*\))$")


def save_artefact(path: Path) -> Path:
    """Note *path* as a saved artefact (listed at the end of the run) and return it."""
    SAVED.append(path)
    print(f"artefact: {path}")
    return path


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
    spec("task_1", "echo made > made.txt", subject="marker-subject-1c2d"),
    spec("task_2", f"echo '{FAILURE_OUTPUT}'; exit 3", description="marker-description-99ab"),
    spec("task_3", "echo never", "task_2"),
]


def make_world(folder: Path) -> tuple[Path, Path, str]:
    """Make the repository of a ``World`` under *folder*, run its mission; (repo, home, id)."""
    home = folder / "home"
    home.mkdir()
    repo = init_home_repo(folder / "repo", home)
    import_tasks(repo, WORLD_TASKS, home=home)
    result = run_rho("mission", "--from-tasks", cwd=repo, home=home)
    assert result.code == 1, result.stdout + result.stderr
    (mission_id,) = mission_ids(repo)
    return repo, home, mission_id
