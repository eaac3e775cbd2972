"""The verify and fix stages of a verified join: which workers run, what they are told.

A stage is run by a worker, like a feature (``executors._contract.Worker``): a library caller
passes its own
(``run_staged(..., verify=..., fix=...)``); by default `stage_shell_worker` runs the mission's
``verify_command`` or ``fix_command``. A worker that returns passes; one that raises fails
(``FeatureFailedError`` keeps its message, as for a feature). What runs them, and when, is
``_verify``'s business.

The shell stage's environment is the mission's ``RHO_*`` variables (``RHO_MISSION_ID`` marks
its processes, so that recovery finds them), ``RHO_TASK_ID`` the stage's name
(``verify-<wave>``, ``fix-<wave>``), ``RHO_WAVE``, and for a fix ``RHO_VERIFY_LOG`` (the failed
checks' output) and ``RHO_TASK_PROMPT_FILE`` (a prompt for an agent that fixes).

Decision: docs/decisions/0504-verified-joins.md
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from .._errors import FeatureFailedError, InvalidMissionError
from ..containment._environ import child_environ
from ..executors._shell import context_variables, run_in_worktree, write_prompt

if TYPE_CHECKING:
    from ..executors._contract import Worker, WorkerContext
    from ..records._document import Handoff, MissionConfig, MissionDocument

__all__ = [
    "StageName",
    "StageObserver",
    "StageRun",
    "StageStatus",
    "Stages",
    "stage_environment",
    "stage_shell_worker",
    "stages_for",
]

StageName = Literal["verify", "fix"]
StageStatus = Literal["running", "passed", "failed", "completed"]


@dataclass(frozen=True)
class Stages:
    """The workers of a run's verified joins; ``fix`` None: failed checks are not repaired.

    ``verify_command`` and ``fix_command`` are what the shell worker runs (None when a library
    worker runs that stage); their digests go into each join's record.
    """

    verify: Worker
    fix: Worker | None
    verify_command: str | None
    fix_command: str | None
    max_fix_attempts: int


@dataclass(frozen=True)
class StageRun:
    """One run of a join's verify or fix stage, as an observer sees it.

    ``name`` (``verify-<wave>``, ``fix-<wave>``) also names its log, ``logs/<name>.log``. A
    check ends ``passed`` or ``failed``; a fix ``completed`` (its work merged) or ``failed``.
    """

    name: str
    stage: StageName
    wave: int
    attempt: int
    status: StageStatus
    error: str | None = None
    max_attempts: int | None = None


class StageObserver(Protocol):
    """An observer that also follows the verify and fix stages (optional for observers)."""

    def stage_changed(self, mission: MissionDocument, run: StageRun) -> None: ...


def stages_for(config: MissionConfig, verify: Worker | None, fix: Worker | None) -> Stages | None:
    """The stages a run has: the given workers, else the shell worker for each configured
    command; None when nothing verifies.

    Raises:
        InvalidMissionError: a fix stage without a verify stage.
    """
    verify_command = config.verify_command if verify is None else None
    fix_command = config.fix_command if fix is None else None
    verify = verify or (stage_shell_worker if verify_command else None)
    fix = fix or (stage_shell_worker if fix_command else None)
    if verify is None:
        if fix is not None:
            raise InvalidMissionError(
                "a fix stage needs a verify stage: set verify_command (--verify CMD) or pass "
                "verify="
            )
        return None
    return Stages(verify, fix, verify_command, fix_command, config.max_fix_attempts)


async def stage_shell_worker(ctx: WorkerContext) -> Handoff | None:
    """Run the stage's command (``ctx.feature.command``) in its worktree.

    Raises:
        FeatureFailedError: no command, a non-zero exit, or death by a signal.
    """
    command = ctx.feature.command
    if not command:
        raise FeatureFailedError(f"{ctx.feature.id} has no command")
    await run_in_worktree(ctx, command, stage_environment(ctx))
    return None


def stage_environment(ctx: WorkerContext) -> dict[str, str]:
    """The caller's environment (without git's repository paths) plus the stage's ``RHO_*``."""
    variables = {**context_variables(ctx), "RHO_WAVE": str(ctx.wave)}
    if ctx.verify_log is not None:
        variables["RHO_VERIFY_LOG"] = str(ctx.verify_log)
        variables["RHO_TASK_PROMPT_FILE"] = str(_write_fix_prompt(ctx, ctx.verify_log))
    return child_environ(variables)


def _write_fix_prompt(ctx: WorkerContext, verify_log: Path) -> Path:
    """Tell an agent that fixes what to do: the checks of the wave, where their output is."""
    text = (
        f"# Make the checks of wave {ctx.wave} pass\n\n"
        f"Mission: {ctx.mission.prompt}\n\n"
        "The work of the wave's tasks was merged into this worktree, and the project's checks "
        f"fail on it. Their output is in {verify_log} (the last run is at its end). Change the "
        "code so that they pass; keep what the tasks built.\n"
    )
    return write_prompt(ctx, text)
