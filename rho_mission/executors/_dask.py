"""The Dask executor: each attempt runs on a worker of a Dask (``distributed``) cluster.

The coordinator (this process) keeps the waves, joins and persistence. Before a wave it pushes
the wave's start (the integration head) to a git remote every worker reaches; each attempt is a
Dask task (``_remote.run_remote_attempt``) that fetches that start into the worker's cache clone,
runs the feature in a worktree there, commits and pushes the feature branch back; the
coordinator fetches the commit, moves its own feature branch to it (compare-and-swap) and merges
it at the join as usual. At most ``max_workers`` attempts are in flight (the engine's limiter).

Failure semantics are the local executor's: a worker that dies, a lost connection, a push that
fails or a timeout fails the attempt (never a silent success); a cancellation cancels the Dask
task and kills the task's processes on every worker.

Decision: docs/decisions/0503-executors.md
"""

from __future__ import annotations

import logging
import os
import secrets
from pathlib import Path
from typing import Any

import anyio

from .._errors import DaskUnavailableError, InvalidMissionError, MissionError
from ..containment._process import open_log
from ..git._repo import GitRepo
from ..records._document import Handoff, MissionDocument
from ..records._places import dask_log
from ..records._usage import AttemptUsage
from ._contract import Attempt, AttemptResult
from ._dasklog import DaskLog
from ._remote import (
    RemoteAttempt,
    RemoteOutcome,
    attempt_marker,
    integration_ref,
    kill_remote_mission,
    kill_remote_task,
    run_remote_attempt,
    verify_log_of,
)

__all__ = ["DaskExecutor", "DaskUnavailableError"]

# The coordinator's bound on an attempt beyond its own task timeout: fetch, push, scheduling.
_SLACK_SECONDS = 120.0


class DaskExecutor:
    """Runs features on a Dask cluster: an existing scheduler (``scheduler="tcp://host:port"``)
    or a ``LocalCluster`` of *local_cluster* worker processes on this machine.

    *remote* is the git remote every worker can reach (a URL or a path), by default the
    repository's ``origin``.
    """

    def __init__(
        self,
        *,
        scheduler: str | None = None,
        local_cluster: int | None = None,
        remote: str | None = None,
    ) -> None:
        if (scheduler is None) == (local_cluster is None):
            raise InvalidMissionError("the Dask executor needs a scheduler or a local cluster size")
        if local_cluster is not None and local_cluster < 1:
            raise InvalidMissionError("a local Dask cluster needs at least one worker")
        _require_distributed()
        self.scheduler = scheduler
        self.local_cluster = local_cluster
        self.remote = remote
        self._client: Any = None  # a distributed.Client once open
        self._cluster: Any = None  # the LocalCluster this executor started, if it did
        self._log: DaskLog | None = None  # Dask's logging, kept in its log while open
        self._repo: GitRepo | None = None
        self._mission_id = ""
        self._url = ""

    async def open(self, mission: MissionDocument) -> None:
        """Resolve and check the remote, then connect to (or start) the cluster.

        Raises:
            InvalidMissionError: no remote to use, or the remote cannot be reached.
            MissionError: the scheduler cannot be reached.
        """
        self._repo = GitRepo.open(Path(mission.repo))
        self._mission_id = mission.id
        self._url = _remote_url(self._repo, self.remote)
        await anyio.to_thread.run_sync(_check_reachable, self._repo, self._url)
        # Recorded with the mission (saved before any push): clean deletes its branches there.
        mission.config = mission.config.model_copy(update={"remote": self._url})
        self._log = DaskLog(dask_log(mission.dir))
        self._log.open()
        self._client = await self._connect()

    async def _connect(self) -> Any:
        from distributed import Client, LocalCluster

        try:
            if self.local_cluster is not None:
                self._cluster = await LocalCluster(
                    n_workers=self.local_cluster,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                    asynchronous=True,
                    # Their failures come back as results; their logs would tear the progress.
                    silence_logs=logging.CRITICAL,
                )
                return await Client(self._cluster, asynchronous=True)
            return await Client(self.scheduler, asynchronous=True, timeout="10s")
        except (OSError, TimeoutError) as exc:
            await self.close()
            raise MissionError(f"cannot reach the Dask scheduler {self.scheduler}: {exc}") from exc

    async def prepare_wave(self, head: str) -> None:
        """Push *head* to the remote's integration branch of the mission.

        Raises:
            GitOperationError: the push failed.
        """
        repo = self._opened_repo()
        ref = integration_ref(self._mission_id)
        await anyio.to_thread.run_sync(
            lambda: repo.run("push", "--quiet", self._url, f"+{head}:{ref}")
        )

    async def run_attempt(self, attempt: Attempt) -> AttemptResult:
        """Run *attempt* as a Dask task; adopt its pushed commit on success."""
        client = self._opened_client()
        feature = attempt.feature
        token = secrets.token_hex(16)
        spec = RemoteAttempt(
            remote=self._url,
            mission=attempt.mission.model_dump(mode="json"),
            feature_id=feature.id,
            base_commit=attempt.base_commit,
            number=attempt.number,
            worker=attempt.worker,
            token=token,
            replay=attempt.replay,
            budget_left_usd=attempt.budget_left_usd,
            verify_log=await anyio.to_thread.run_sync(verify_log_of, attempt.verify_log),
        )
        key = f"rho-mission-{self._mission_id}-{feature.id}-{attempt.number}-{token[:8]}"
        await attempt.ready()  # the worker runs as soon as the task is submitted
        future = client.submit(run_remote_attempt, spec, key=key, pure=False, retries=0)
        try:
            outcome = await self._outcome(future, attempt)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._stop(future, feature.id)
            raise
        finally:
            with anyio.CancelScope(shield=True):
                await self._forget(token)
        if isinstance(outcome, str):
            return AttemptResult(error=outcome, branch_head=attempt.branch_head)
        return await self._adopt(attempt, outcome)

    async def _outcome(self, future: Any, attempt: Attempt) -> RemoteOutcome | str:
        timeout = attempt.mission.config.task_timeout
        bound = None if timeout is None else timeout + attempt.mission.config.grace_period
        try:
            with anyio.fail_after(None if bound is None else bound + _SLACK_SECONDS):
                outcome: RemoteOutcome = await future
        except TimeoutError:
            await self._stop(future, attempt.feature.id)
            return f"timed out after {timeout:g}s (no answer from the dask worker)"
        except Exception as exc:  # the cluster's failures: a lost worker, a closed connection
            return f"dask: {type(exc).__name__}: {exc}".rstrip(": ")
        _write_log(attempt.log_path, outcome.log)
        if outcome.usage is not None:  # read there, from the worker's copy of the log
            attempt.note_usage(AttemptUsage.model_validate(outcome.usage))
        return outcome.error if outcome.error is not None else outcome

    async def _adopt(self, attempt: Attempt, outcome: RemoteOutcome) -> AttemptResult:
        """Fetch the attempt's commit and move the local feature branch to it."""
        handoff = Handoff.model_validate(outcome.handoff)
        branch = attempt.feature.branch
        assert branch is not None  # given by Mission.add_feature
        new = handoff.commit_id or attempt.base_commit
        repo = self._opened_repo()
        attempt.note_ref(branch, new, "end")
        try:
            if handoff.commit_id is not None:
                await anyio.to_thread.run_sync(self._fetch, repo, branch, new)
            await anyio.to_thread.run_sync(
                lambda: repo.move_branch(branch, new, attempt.branch_head, "adopt dask result")
            )
        except MissionError as exc:
            return AttemptResult(error=str(exc), branch_head=attempt.branch_head)
        return AttemptResult(handoff=handoff, branch_head=new)

    def _fetch(self, repo: GitRepo, branch: str, commit: str) -> None:
        fetched = f"refs/rho-mission-fetch/{branch}"
        repo.run("fetch", "--quiet", "--no-tags", self._url, f"+refs/heads/{branch}:{fetched}")
        try:
            found = repo.resolve_commit(fetched)
        finally:
            repo.run("update-ref", "-d", fetched)
        if found != commit:
            raise MissionError(f"the remote's {branch} holds {found[:12]}, not {commit[:12]}")

    async def _stop(self, future: Any, feature_id: str) -> None:
        """Cancel the task and kill what it started, on every worker."""
        client = self._opened_client()
        try:
            await client.cancel(future, force=True)
            await client.run(kill_remote_task, self._mission_id, feature_id)
        except Exception:
            return

    async def _forget(self, token: str) -> None:
        from distributed import Event

        try:  # clearing an event nobody waits for removes it from the scheduler
            await Event(attempt_marker(token), client=self._client).clear()
        except Exception:
            return

    async def close(self) -> list[str]:
        """Kill what is left of the mission on every worker, then disconnect (and stop a local
        cluster); a failure is a warning."""
        problems: list[str] = []
        client, self._client = self._client, None
        cluster, self._cluster = self._cluster, None
        if client is not None:
            try:
                await client.run(kill_remote_mission, self._mission_id)
            except Exception as exc:
                problems.append(f"dask workers not swept: {type(exc).__name__}: {exc}")
            await client.close()
        if cluster is not None:
            await cluster.close()
        if self._log is not None:
            self._log.close()
            self._log = None
        return problems

    def _opened_client(self) -> Any:
        if self._client is None:
            raise RuntimeError("DaskExecutor used before open()")
        return self._client

    def _opened_repo(self) -> GitRepo:
        if self._repo is None:
            raise RuntimeError("DaskExecutor used before open()")
        return self._repo


def _require_distributed() -> None:
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise DaskUnavailableError(
            "the Dask executor needs the optional 'dask' extra (distributed is not installed)"
        ) from None


def _remote_url(repo: GitRepo, remote: str | None) -> str:
    """*remote*, else the repository's ``origin``; a local path made absolute.

    Raises:
        InvalidMissionError: no remote given and no ``origin``.
    """
    if remote is None:
        status, out, _ = repo.run_status("remote", "get-url", "origin")
        if status != 0:
            raise InvalidMissionError(
                "the Dask executor needs a git remote every worker can reach: pass --remote URL"
                " or add an 'origin'"
            )
        remote = out.strip()
    if "://" in remote or _scp_like(remote):
        return remote
    path = Path(remote)
    return str(path if path.is_absolute() else (repo.root / path).resolve())


def _scp_like(remote: str) -> bool:
    head = remote.split("/", 1)[0]
    return ":" in head and not os.path.exists(remote)


def _check_reachable(repo: GitRepo, url: str) -> None:
    status, _, err = repo.run_status("ls-remote", "--heads", url)
    if status != 0:
        reason = (err.strip().splitlines() or ["no answer"])[-1]
        raise InvalidMissionError(f"cannot reach the git remote {url}: {reason}")


def _write_log(path: Path, data: bytes) -> None:
    """Write the worker's log where the coordinator keeps logs (0600, never through a link)."""
    with os.fdopen(open_log(path), "wb") as handle:
        handle.write(data)
