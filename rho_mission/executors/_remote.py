"""What runs on a Dask worker: one attempt of one feature, in a cache clone of the remote.

Each worker thread keeps one clone per remote
(``<worker dir>/rho-mission/cache/<digest>-<thread>``), fetches the mission's integration
branch (pushed by the coordinator before the wave), runs the attempt in a worktree of that
clone exactly as the local executor would (``attempt_in_pool``: worktree, worker, commit), and
pushes the feature branch back. Its log, handoff and timing travel back in the result.
Nothing here writes to the coordinator's repository or mission folder.

Decision: docs/decisions/0503-executors.md
"""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from filelock import FileLock

from graph import sha256_hex

from .._errors import GitOperationError, MissionError
from ..containment._environ import child_environ
from ..containment._folders import remove_tree
from ..containment._mission_processes import kill_mission_processes, kill_task_processes
from ..git._pool import WorktreePool
from ..git._repo import GitRepo
from ..records._document import MissionDocument
from ..records._places import integration_branch
from ..records._usage import AttemptUsage
from ._attempt import attempt_in_pool
from ._contract import Attempt, Worker

__all__ = [
    "RemoteAttempt",
    "RemoteOutcome",
    "WorkerLostError",
    "attempt_marker",
    "kill_remote_mission",
    "kill_remote_task",
    "run_remote_attempt",
]

# A log larger than this comes back as its last bytes: the result crosses the network.
_LOG_LIMIT = 4 * 1024 * 1024


class WorkerLostError(RuntimeError):
    """Raised when Dask runs an attempt a second time: the worker that ran it first died."""


@dataclass(frozen=True)
class RemoteAttempt:
    """What a Dask worker needs for one attempt; everything in it is picklable."""

    remote: str
    mission: dict[str, Any]
    feature_id: str
    base_commit: str
    number: int
    worker: Worker
    token: str
    replay: bool = False
    budget_left_usd: float | None = None
    # A culprit's replay: the file name and (the last bytes of) the output of the checks that
    # failed after its merge; the worker writes it beside the attempt's log (RHO_VERIFY_LOG).
    verify_log: tuple[str, bytes] | None = None


@dataclass(frozen=True)
class RemoteOutcome:
    """What comes back: the handoff as data (None on failure), the error, the log, the host,
    and what the attempt spent (an ``AttemptUsage`` as data; None: nothing recorded)."""

    handoff: dict[str, Any] | None
    error: str | None
    log: bytes
    host: str
    seconds: float
    usage: dict[str, Any] | None = None


def integration_ref(mission_id: str) -> str:
    """The remote ref the coordinator pushes a wave's start to."""
    return f"refs/heads/{integration_branch(mission_id)}"


def run_remote_attempt(spec: RemoteAttempt) -> RemoteOutcome:
    """Run *spec* on this Dask worker and push its commit (the function Dask calls).

    Raises:
        WorkerLostError: this attempt ran before, on a worker that died.
    """
    _refuse_second_run(spec.token)
    started = time.monotonic()
    root = _worker_folder()
    mission = MissionDocument.model_validate(spec.mission)
    scratch = root / "missions" / f"{mission.id}-{spec.token[:12]}"
    spent: list[AttemptUsage] = []  # what the attempt's usage was read as, once it ended
    try:
        repo = GitRepo.open(_cache_clone(root, spec.remote))
        _fetch_start(repo, spec.remote, mission.id, spec.base_commit)
        mission.dir = str(scratch / "mission")
        handoff, error = anyio.run(_attempt, spec, mission, repo, scratch, spent)
    except MissionError as exc:
        handoff, error = None, f"on dask worker {socket.gethostname()}: {exc}"
    log = _read_log(scratch / "mission" / "logs" / f"{spec.feature_id}.log")
    _remove(scratch)
    usage = spent[-1].model_dump(mode="json") if spent else None
    host, seconds = socket.gethostname(), time.monotonic() - started
    return RemoteOutcome(handoff, error, log, host, seconds, usage)


def verify_log_of(path: Path | None) -> tuple[str, bytes] | None:
    """What a remote attempt gets of the coordinator's check log *path*: its name and its last
    bytes (None: no log to pass on)."""
    return None if path is None else (path.name, _read_log(path))


def attempt_marker(token: str) -> str:
    """The name of the Dask event that says an attempt has started somewhere."""
    return f"rho-mission-attempt-{token}"


def _refuse_second_run(token: str) -> None:
    # Dask runs a task again when the worker running it dies; an attempt must not: its first
    # run may have half-done its work, and a re-run would turn a lost worker into a success.
    from distributed import Event

    started = Event(attempt_marker(token))
    if started.is_set():
        raise WorkerLostError("the dask worker running this attempt died (lost, killed or crashed)")
    started.set()


def _worker_folder() -> Path:
    try:
        from distributed import get_worker

        base = Path(get_worker().local_directory)
    except ValueError:  # not inside a Dask worker (a direct call)
        base = Path(tempfile.gettempdir())
    folder = base / "rho-mission"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


def _clone(remote: str, cache: Path) -> None:
    # The one git call without a repository yet; every other goes through GitRepo.
    import subprocess

    argv = ["git", "clone", "--quiet", "--no-checkout", remote, str(cache)]
    done = subprocess.run(argv, env=child_environ({}), capture_output=True, text=True)
    if done.returncode != 0:
        raise GitOperationError(argv, done.returncode, done.stderr)


def _cache_clone(root: Path, remote: str) -> Path:
    """This worker thread's clone of *remote*, made once.

    One clone per thread: a Dask worker may run several attempts at once, and git's fetch into
    a repository where another attempt adds worktrees and commits was seen to fail ("did not
    send all necessary objects"). The lock guards a clone against another process on the same
    folder.
    """
    cache = root / "cache" / f"{sha256_hex(remote)[:16]}-{threading.get_ident()}"
    cache.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with FileLock(str(cache) + ".lock"):
        if not (cache / ".git").is_dir():
            _remove(cache)
            _clone(remote, cache)
    return cache


def _fetch_start(repo: GitRepo, remote: str, mission_id: str, base: str) -> None:
    """Fetch the wave's start unless this clone has it (a commit id names its content); the
    integration branch fetched must hold *base* exactly."""
    if repo.run_status("cat-file", "-e", f"{base}^{{commit}}")[0] == 0:
        return
    ref = integration_ref(mission_id)
    local = f"refs/rho-mission-start/{mission_id}"
    with FileLock(str(repo.root) + ".lock"):
        repo.run("fetch", "--quiet", "--no-tags", remote, f"+{ref}:{local}")
    found = repo.resolve_commit(local)
    if found != base:
        raise MissionError(f"the remote's {ref} holds {found[:12]}, not the wave's start")


async def _attempt(
    spec: RemoteAttempt,
    mission: MissionDocument,
    repo: GitRepo,
    scratch: Path,
    spent: list[AttemptUsage],
) -> tuple[dict[str, Any] | None, str | None]:
    feature = mission.feature(spec.feature_id)
    assert feature.branch is not None  # given by Mission.add_feature
    (scratch / "mission" / "logs").mkdir(mode=0o700, parents=True)
    pool = WorktreePool(repo, scratch / "worktrees", mission.id, keep=False)
    try:
        attempt = _local_attempt(spec, mission, repo, scratch, spent.append)
        result = await attempt_in_pool(repo, pool, attempt)
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(pool.close)
    if result.handoff is None:
        return None, result.error
    commit = result.handoff.commit_id
    if commit is not None:
        await anyio.to_thread.run_sync(_push, repo, spec.remote, commit, feature.branch)
    return result.handoff.model_dump(mode="json"), None


def _local_attempt(
    spec: RemoteAttempt,
    mission: MissionDocument,
    repo: GitRepo,
    scratch: Path,
    note_usage: Callable[[AttemptUsage], None],
) -> Attempt:
    feature = mission.feature(spec.feature_id)
    assert feature.branch is not None
    return Attempt(
        mission=mission,
        feature=feature,
        worker=spec.worker,
        base_commit=spec.base_commit,
        number=spec.number,
        branch_head=repo.branch_commit(feature.branch),  # this clone's own: moved freely
        log_path=scratch / "mission" / "logs" / f"{feature.id}.log",
        on_process_start=lambda pgid: None,
        note_ref=lambda ref, commit, why: None,
        replay=spec.replay,
        verify_log=_written_verify_log(spec, scratch / "mission" / "logs"),
        note_usage=note_usage,
        budget_left_usd=spec.budget_left_usd,
    )


def _written_verify_log(spec: RemoteAttempt, folder: Path) -> Path | None:
    """The checks' output the coordinator sent, written into this attempt's own *folder*
    (private, a new file, its name never a path): the path the worker is told of."""
    if spec.verify_log is None:
        return None
    name, data = spec.verify_log
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = folder / Path(name).name
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    with os.fdopen(os.open(path, flags, 0o600), "wb") as handle:
        handle.write(data)
    return path


def _push(repo: GitRepo, remote: str, commit: str, branch: str) -> None:
    try:
        repo.run("push", "--quiet", remote, f"+{commit}:refs/heads/{branch}")
    except GitOperationError as exc:
        raise MissionError(f"push of {branch} failed: {exc}") from None


def _read_log(path: Path) -> bytes:
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            handle.seek(max(0, size - _LOG_LIMIT))
            return handle.read()
    except FileNotFoundError:
        return b""


def _remove(path: Path) -> None:
    remove_tree(path)


def kill_remote_task(mission_id: str, task_id: str) -> list[int]:
    """On a Dask worker: SIGKILL the processes of one task of a mission (Dask ``client.run``)."""
    return kill_task_processes(mission_id, task_id)


def kill_remote_mission(mission_id: str) -> list[int]:
    """On a Dask worker: SIGKILL every process of a mission (Dask ``client.run``)."""
    return kill_mission_processes(mission_id)
