"""Run a mission's worktree setup before an attempt, where the worktree needs it.

The setup runs like a task (``_shell.run_in_worktree``): ``/bin/sh -c CMD`` in the worktree,
under its supervisor, with the task timeout, the log cap and ``--sandbox``, its output in
``logs/setup/<worktree>.log`` (a stage's folder: ``records._places``); a library's setup is a
worker (``run_staged(setup=...)``). What it leaves git ignores becomes the worktree's kept
outputs (``rho_mission.setup``). A failed setup fails the attempt, with its log's last lines;
the next attempt sets up again.

Decision: docs/decisions/0604-setup-and-copy.md
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio

from .._errors import FeatureFailedError, MissionError
from ..containment._environ import child_environ
from ..containment._process import note_in_log
from ..git._pool import KeptOutputs
from ..records._clock import now_rfc3339_millis
from ..records._document import Feature, FeatureSetup, MissionDocument
from ..records._logs import read_tail
from ..records._places import setup_log as setup_log_of
from ..setup import WorktreeSetup
from ._contract import Attempt, SetupStep, WorkerContext
from ._shell import context_variables, run_in_worktree
from ._worker_call import call_worker, failure_text

__all__ = [
    "SETUP_FEATURE",
    "SetupFor",
    "for_attempt",
    "kept_for",
    "prepare_worktree",
    "setup_log",
    "setup_shell_worker",
    "shell_setup",
]

SETUP_FEATURE = "setup"
_TAIL = 3  # lines of the setup's output in the feature's error (one line, " | " between)


def shell_setup(command: str) -> SetupStep:
    """The setup step of ``--setup CMD``."""
    return SetupStep(worker=setup_shell_worker, identity=f"sh:{command}")


async def setup_shell_worker(ctx: WorkerContext) -> None:
    """Run the setup command (``ctx.feature.command``) in the worktree.

    Raises:
        FeatureFailedError: a non-zero exit, or death by a signal.
    """
    command = ctx.feature.command or ctx.mission.config.setup_command
    if not command:
        raise FeatureFailedError("no setup command")
    # RHO_TASK_ID is "setup": the context's feature (see _run_setup).
    await run_in_worktree(ctx, command, child_environ(context_variables(ctx)))


@dataclass(frozen=True)
class SetupFor:
    """Who asks for a worktree's setup: a feature's attempt (``for_attempt``) or a join's
    stage. ``step`` is the mission's setup (None: the ``--copy`` files only), ``asked_by`` the
    feature or stage named in the log, ``note`` gets what the setup came to."""

    mission: MissionDocument
    step: SetupStep | None
    asked_by: str
    base_commit: str
    attempt: int
    on_process_start: Callable[[int], None]
    note: Callable[[FeatureSetup], None]


def for_attempt(attempt: Attempt) -> SetupFor:
    """The setup *attempt* asks for."""
    return SetupFor(
        mission=attempt.mission,
        step=attempt.setup,
        asked_by=attempt.feature.id,
        base_commit=attempt.base_commit,
        attempt=attempt.number,
        on_process_start=attempt.on_process_start,
        note=attempt.note_setup,
    )


async def kept_for(
    setup: WorktreeSetup | None, step: SetupStep | None, start: str
) -> tuple[str | None, KeptOutputs | None]:
    """The setup key of *step* at commit *start*, and the ``keep`` that ``WorktreePool.acquire``
    checks a reused worktree's kept outputs with; (None, None) without a setup to run.

    Raises:
        GitOperationError: git could not read the commit's tree.
    """
    if setup is None or step is None:
        return None, None
    key = await anyio.to_thread.run_sync(setup.key_for, start, step.identity)
    return key, setup.check(key)


def setup_log(mission: MissionDocument, worktree: Path) -> Path:
    """``logs/setup/<worktree>.log`` of *mission*."""
    return setup_log_of(mission.dir, worktree.name)


async def prepare_worktree(
    asked: SetupFor, worktree: Path, setup: WorktreeSetup, key: str | None
) -> str | None:
    """Copy the ``--copy`` files into *worktree*, then (with a setup *key*) run the setup
    unless that key holds there, noting what it came to: None, or the error text of the
    feature (or stage) that asked."""
    name = worktree.name
    try:
        await anyio.to_thread.run_sync(setup.write_copies, worktree)
    except (OSError, MissionError) as exc:
        return f"the --copy files could not be written into worktree {name}: {exc}"
    if key is None or asked.step is None:
        return None
    if await anyio.to_thread.run_sync(setup.kept, worktree, key) is not None:
        asked.note(FeatureSetup(worktree=name, outcome="reused", key=key[:16]))
        return None
    log = setup_log(asked.mission, worktree)
    error = await _run_setup(asked, asked.step, worktree, log)
    if error is None:
        try:
            state = await anyio.to_thread.run_sync(setup.record, worktree, key, asked.base_commit)
        except (OSError, MissionError) as exc:
            error = str(exc)
            note_in_log(log, f"setup in {name} failed: {error}")
        else:
            note_in_log(log, f"setup in {name} passed: {_kept_for(state.mission_only)}")
            asked.note(FeatureSetup(worktree=name, outcome="ran", key=key[:16]))
            return None
    await anyio.to_thread.run_sync(setup.forget, worktree)
    asked.note(FeatureSetup(worktree=name, outcome="failed", key=key[:16]))
    return _failure(name, error, log, asked.mission.dir)


async def _run_setup(asked: SetupFor, step: SetupStep, worktree: Path, log: Path) -> str | None:
    """Run *step* in *worktree*; None when it passed, else why it failed."""
    config = asked.mission.config
    feature = Feature(SETUP_FEATURE, "worktree setup", command=config.setup_command)
    context = WorkerContext(
        mission=asked.mission,
        feature=feature,
        worktree=worktree,
        base_commit=asked.base_commit,
        attempt=asked.attempt,
        log_path=log,
        on_process_start=asked.on_process_start,
    )
    stamp = now_rfc3339_millis()
    note_in_log(log, f"setup in {worktree.name} for {asked.asked_by}: started {stamp}")
    timeout = config.task_timeout
    try:
        with anyio.move_on_after(timeout) as scope:  # None: no limit
            await call_worker(step.worker, context)
    except Exception as exc:  # the setup is the user's code: it fails the attempt
        error = failure_text(exc, log)
        note_in_log(log, f"setup in {worktree.name} failed: {error}")
        return error
    if scope.cancelled_caught:
        note_in_log(log, f"setup in {worktree.name} timed out after {timeout:g}s")
        return f"timed out after {timeout:g}s"
    return None


def _kept_for(mission_only: str | None) -> str:
    if mission_only is None:
        return "its outputs are kept for the next tasks"
    return (
        f"its outputs are kept for the next tasks of mission {mission_only} only (it ran on "
        "a commit that holds tasks' work)"
    )


def _failure(name: str, error: str, log: Path, mission_dir: str) -> str:
    """Why the setup in worktree *name* failed: where its log is in the mission folder, and the
    last lines of its output."""
    try:
        tail = read_tail(log, _TAIL, output_only=True) or []
    except (OSError, MissionError):
        tail = []
    last = [line.strip() for line in tail if line.strip()]
    shown = f"; its output ends: {' | '.join(last)}" if last else ""
    where = log.relative_to(mission_dir)
    return f"setup failed in worktree {name} ({where}): {error}{shown}"
