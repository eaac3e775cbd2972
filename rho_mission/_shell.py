"""The default worker: run the task's shell command in its worktree.

The command is the task's ``metadata.command``, else the mission's ``--run``. It runs in its own
process group with the RHO_* environment of DESIGN §3; its output goes to ``logs/<task>.log``.
Exit 0 is success; the engine then commits whatever the command changed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ._environ import child_environ
from ._errors import FeatureFailedError
from ._process import run_command

if TYPE_CHECKING:
    from ._models import Handoff
    from ._seam import WorkerContext

__all__ = ["SUBJECT_ENV_LIMIT", "run_in_worktree", "shell_worker", "worker_environment"]

# Far below Linux's 128 KiB cap on one environment string; subjects are bounded at 500 on entry.
SUBJECT_ENV_LIMIT = 1000


async def shell_worker(ctx: WorkerContext) -> Handoff | None:
    """Run the feature's command; raise ``FeatureFailedError`` unless it exits 0.

    Raises:
        FeatureFailedError: no command, a non-zero exit, or death by a signal.
    """
    command = ctx.feature.command or ctx.mission.config.run_command
    if not command:
        raise FeatureFailedError(f"task {ctx.feature.id} has no command")
    await run_in_worktree(ctx, command, worker_environment(ctx, _write_prompt(ctx)))
    return None


async def run_in_worktree(ctx: WorkerContext, command: str, env: dict[str, str]) -> None:
    """Run *command* in the worktree of *ctx*, in its own process group, logging to its log.

    Raises:
        FeatureFailedError: a non-zero exit, or death by a signal.
    """
    result = await run_command(
        command,
        cwd=ctx.worktree,
        env=env,
        log_path=ctx.log_path,
        grace=ctx.mission.config.grace_period,
        on_start=ctx.on_process_start,
    )
    if not result.ok():
        raise FeatureFailedError(f"command failed: {result.describe()}")


def worker_environment(ctx: WorkerContext, prompt_file: Path) -> dict[str, str]:
    """The process environment: the caller's, plus the RHO_* variables of DESIGN §3.

    Git's repository variables are dropped (see ``_environ``). The subject is cut to
    ``SUBJECT_ENV_LIMIT`` characters: a hand-written store may hold one too long for ``execve``;
    the whole text is in the prompt file.
    """
    return child_environ(
        {
            "RHO_MISSION_ID": ctx.mission.id,
            "RHO_MISSION_DIR": ctx.mission.dir,
            "RHO_TASK_ID": ctx.feature.id,
            "RHO_TASK_SUBJECT": _env_text(ctx.feature.description),
            "RHO_TASK_PROMPT_FILE": str(prompt_file),
            "RHO_WORKTREE": str(ctx.worktree),
            "RHO_BASE_COMMIT": ctx.base_commit,
            "RHO_ATTEMPT": str(ctx.attempt),
        }
    )


def _env_text(text: str) -> str:
    text = text.replace("\0", "")
    return text if len(text) <= SUBJECT_ENV_LIMIT else text[: SUBJECT_ENV_LIMIT - 1] + "…"


def _write_prompt(ctx: WorkerContext) -> Path:
    """Write the feature's subject, description and expected behaviour for an agent to read."""
    folder = Path(ctx.mission.dir) / "prompts"
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / f"{ctx.feature.id}.md"
    text = (
        f"# {ctx.feature.description}\n\n"
        f"Mission: {ctx.mission.prompt}\n\n"
        f"Expected behaviour:\n\n{ctx.feature.expected_behavior}\n"
    )
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path
