"""The default worker: run the task's shell command in its worktree.

The command is the task's ``metadata.command``, else the mission's ``--run``. It runs in its own
process group with the RHO_* environment (docs/architecture.md); its output goes to
``logs/<task>.log``.
Exit 0 is success; the engine then commits whatever the command changed.

Decision: docs/decisions/0503-executors.md
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from graph import sha256_hex

from .._errors import FeatureFailedError
from ..agents import PROFILES
from ..containment import require_pinned
from ..containment._agenthomes import HomeCopy, copy_agent_homes, remove_agent_homes
from ..containment._cgroup import end_cgroup, new_cgroup
from ..containment._environ import child_environ, sandbox_environ
from ..containment._folders import open_private, private_folder
from ..containment._process import ProcessResult, note_in_log, run_command
from ..containment._quarantine import Quarantine, admit, discard, open_quarantine
from ..containment._wrapper import TaskPlace, task_wrapper
from ..git._repo import GitRepo
from ..records._clock import now_rfc3339_millis
from ..records._places import feature_prompt, rho_folder

if TYPE_CHECKING:
    from ..records._document import Handoff
    from ._contract import WorkerContext

__all__ = [
    "SUBJECT_ENV_LIMIT",
    "context_variables",
    "run_in_worktree",
    "shell_worker",
    "usage_variables",
    "worker_environment",
    "write_prompt",
    "write_task_prompt",
]

# The shell's exit code for a command it did not find.
_NOT_FOUND = 127
# Far below Linux's 128 KiB cap on one environment string; subjects are bounded at 500 on entry.
SUBJECT_ENV_LIMIT = 1000
# The files a sandboxed command is shown although they lie in the hidden mission folder.
_READABLE = ("RHO_TASK_PROMPT_FILE", "RHO_VERIFY_LOG", "RHO_PROMPT_FILE", "RHO_CONFLICT_FILE")
# Where sandboxed attempts' quarantines are made, in the repository's git dir.
QUARANTINE_FOLDER = "rho-quarantine"
# Where sandboxed attempts' private agent folders are made, in the mission folder.
AGENT_HOMES = "agent-homes"


async def shell_worker(ctx: WorkerContext) -> Handoff | None:
    """Run the feature's command; raise ``FeatureFailedError`` unless it exits 0.

    Raises:
        FeatureFailedError: no command, a non-zero exit, or death by a signal.
    """
    command = ctx.feature.command or ctx.mission.config.run_command
    if not command:
        raise FeatureFailedError(f"task {ctx.feature.id} has no command")
    # Each attempt between two lines of rho's own: a log of several attempts reads apart, and
    # one whose command printed nothing still says what ran and how it ended.
    attempt = f"{ctx.feature.id} attempt {ctx.attempt}"
    started = f"command sha256 {sha256_hex(command)[:16]}, started {now_rfc3339_millis()}"
    note_in_log(ctx.log_path, f"{attempt}: {started}")
    try:
        prompt = ctx.prompt_file or write_task_prompt(ctx)  # written by the attempt, as a rule
        await run_in_worktree(ctx, command, worker_environment(ctx, prompt))
    except FeatureFailedError as exc:
        note_in_log(ctx.log_path, f"{attempt} failed: {exc}")
        raise
    note_in_log(ctx.log_path, f"{attempt} passed: exit code 0")
    return None


async def run_in_worktree(ctx: WorkerContext, command: str, env: dict[str, str]) -> None:
    """Run *command* in the worktree of *ctx*, in its own process group, logging to its log.

    Under its supervisor (nothing it starts outlives it; its log is kept within
    ``config.log_limit``), and with ``config.sandbox`` under bubblewrap: the files that *env*
    names (``RHO_TASK_PROMPT_FILE``, ``RHO_VERIFY_LOG``) stay
    readable there, and HEAD is detached first (the sandbox's refs are read-only).

    Raises:
        FeatureFailedError: a non-zero exit, or death by a signal.
        UnsafePathError, WorktreeTamperedError: the worktree is not the one rho made.
    """
    config = ctx.mission.config
    quarantine = None
    homes: tuple[HomeCopy, ...] = ()
    if config.sandbox:
        await anyio.to_thread.run_sync(_detach_head, ctx.worktree)
        env = sandbox_environ({**env, "TMPDIR": "/tmp"}, config.sandbox_env)
        quarantine = await anyio.to_thread.run_sync(_quarantine_for, ctx.worktree)
        homes = await anyio.to_thread.run_sync(_agent_homes, ctx, env)
    env = {**env, **usage_variables(ctx)}
    cgroup = new_cgroup()
    try:
        supervisor, wrapper = task_wrapper(
            _place(ctx, env, homes),
            grace=config.grace_period,
            log_limit=config.log_limit,
            sandbox=config.sandbox,
            network=config.sandbox_network,
            quarantine=quarantine.folder if quarantine is not None else None,
            cgroup=cgroup,
        )
        result = await run_command(
            command,
            cwd=ctx.worktree,
            env=env,
            log_path=ctx.log_path,
            grace=config.grace_period,
            on_start=ctx.on_process_start,
            wrapper=wrapper,
            supervisor=supervisor,
        )
        if not result.ok():
            raise FeatureFailedError(_failure(result, config.sandbox))
        if quarantine is not None:
            await anyio.to_thread.run_sync(admit, quarantine, quarantine.store.parent)
    finally:
        with anyio.CancelScope(shield=True):
            if cgroup is not None:  # what outlived a killed supervisor ends here
                await end_cgroup(cgroup, config.grace_period)
            if quarantine is not None:
                await anyio.to_thread.run_sync(discard, quarantine)
            if homes:
                await anyio.to_thread.run_sync(remove_agent_homes, _homes_folder(ctx))


def _failure(result: ProcessResult, sandbox: bool) -> str:
    """Why a command failed; under the sandbox, a command the shell did not find (127) names
    the likely cause and the fix: the sandbox's /tmp is private, and a path outside the
    worktree, the checkout and the system is hidden until shown."""
    said = f"command failed: {result.describe()}"
    if sandbox and result.exit_code == _NOT_FOUND and not result.timed_out:
        said += (
            " (not found inside the sandbox: its /tmp is private and a path outside the "
            "worktree, the checkout and the system is hidden; --sandbox-allow PATH shows it)"
        )
    return said


def usage_variables(ctx: WorkerContext) -> dict[str, str]:
    """``RHO_USAGE_FILE`` (where the attempt may write what it spent) and, under a dollar
    budget, ``RHO_BUDGET_LEFT_USD`` (claude's profile passes it on as ``--max-budget-usd``)."""
    variables = {}
    if ctx.usage_file is not None:
        variables["RHO_USAGE_FILE"] = str(ctx.usage_file)
    if ctx.budget_left_usd is not None:
        variables["RHO_BUDGET_LEFT_USD"] = f"{ctx.budget_left_usd:.4f}"
    return variables


def _quarantine_for(worktree: Path) -> Quarantine:
    # In the repository's git dir (read-only to tasks): per repository, so that a Dask
    # worker's cache clone has its own.
    common_dir = require_pinned(worktree).common_dir
    return open_quarantine(common_dir / QUARANTINE_FOLDER, common_dir, common_dir / "objects")


def _agent_homes(ctx: WorkerContext, env: dict[str, str]) -> tuple[HomeCopy, ...]:
    """Private copies of the config folders of the agents the mission names (its tasks',
    its resolver's, its planner's): ``containment._agenthomes``."""
    config = ctx.mission.config
    names = {config.agent, config.resolve_agent, config.planner_agent}
    declared = [home for name in sorted(n for n in names if n) for home in PROFILES[name].home]
    if not declared:
        return ()
    folder = _homes_folder(ctx)
    private_folder(folder.parent, Path(ctx.mission.dir))
    return tuple(copy_agent_homes(declared, env, folder))


def _homes_folder(ctx: WorkerContext) -> Path:
    # In the mission folder (hidden in the sandbox), one per feature or stage at a time.
    return Path(ctx.mission.dir, AGENT_HOMES, ctx.feature.id)


def _place(ctx: WorkerContext, env: dict[str, str], homes: tuple[HomeCopy, ...]) -> TaskPlace:
    repo = Path(ctx.mission.repo)
    hidden = [rho_folder(repo), Path(ctx.mission.dir)]
    shown = [Path(path) for path in (env.get(name) for name in _READABLE) if path]
    home = Path(env["HOME"]) if env.get("HOME") else None
    config = ctx.mission.config
    allowed = tuple(Path(path) for path in config.sandbox_allow)
    allowed_write = tuple(Path(path) for path in config.sandbox_allow_write)
    # The attempt's usage folder, in the hidden mission folder, is its to write.
    writable = () if ctx.usage_file is None else (ctx.usage_file.parent,)
    return TaskPlace(
        ctx.worktree, repo, hidden, shown, home, allowed, writable, allowed_write, homes
    )


def _detach_head(worktree: Path) -> None:
    # A sandboxed task commits on a detached HEAD (it cannot write refs/); rho moves the
    # feature branch to its result afterwards, as for a worker that left the branch.
    pin = require_pinned(worktree)
    repo = GitRepo(pin.path, pin.common_dir)
    repo.run("update-ref", "--no-deref", "HEAD", "HEAD", cwd=worktree)


def worker_environment(ctx: WorkerContext, prompt_file: Path) -> dict[str, str]:
    """The process environment: the caller's, plus the RHO_* variables (docs/architecture.md).

    Git's repository variables are dropped (see ``containment._environ``). The subject is cut to
    ``SUBJECT_ENV_LIMIT`` characters: a hand-written store may hold one too long for ``execve``;
    the whole text is in the prompt file. ``RHO_REPLAY`` is ``1`` when the attempt runs the
    task again after its merge conflicted or broke the checks; ``RHO_VERIFY_LOG`` then names
    the output of the checks that failed after its merge.
    """
    replay = {"RHO_REPLAY": "1"} if ctx.replay else {}
    if ctx.verify_log is not None:
        replay["RHO_VERIFY_LOG"] = str(ctx.verify_log)
    return child_environ(
        {
            **replay,
            **context_variables(ctx),
            "RHO_TASK_SUBJECT": _env_text(ctx.feature.subject),
            "RHO_TASK_PROMPT_FILE": str(prompt_file),
        }
    )


def context_variables(ctx: WorkerContext) -> dict[str, str]:
    """The ``RHO_*`` variables every command of a mission gets (a task's, a stage's, a
    setup's): ``RHO_MISSION_ID`` (which also marks its processes, for recovery),
    ``RHO_MISSION_DIR``, ``RHO_TASK_ID`` (the feature, or the stage's name), ``RHO_WORKTREE``,
    ``RHO_BASE_COMMIT`` and ``RHO_ATTEMPT``."""
    return {
        "RHO_MISSION_ID": ctx.mission.id,
        "RHO_MISSION_DIR": ctx.mission.dir,
        "RHO_TASK_ID": ctx.feature.id,
        "RHO_WORKTREE": str(ctx.worktree),
        "RHO_BASE_COMMIT": ctx.base_commit,
        "RHO_ATTEMPT": str(ctx.attempt),
    }


def _env_text(text: str) -> str:
    text = text.replace("\0", "")
    return text if len(text) <= SUBJECT_ENV_LIMIT else text[: SUBJECT_ENV_LIMIT - 1] + "…"


def write_task_prompt(ctx: WorkerContext) -> Path:
    """Write the feature's subject, description and expected behaviour for an agent to read
    (``prompts/<feature>.md``): every attempt of a feature gets it, a Python worker's too."""
    text = (
        f"# {ctx.feature.subject}\n\n"
        f"Mission: {ctx.mission.prompt}\n\n"
        f"Expected behaviour:\n\n{ctx.feature.description}\n"
    )
    if ctx.verify_log is not None:
        text += (
            "\nThis task's work was done before, and the project's checks failed after it was "
            f"merged: their output is in {ctx.verify_log}. Do the task again, on the head "
            "without that work, so that the checks pass.\n"
        )
    return write_prompt(ctx, text)


def write_prompt(ctx: WorkerContext, text: str) -> Path:
    """Write *text* as ``prompts/<feature>.md`` of the mission folder (0600), following no link."""
    path = feature_prompt(ctx.mission.dir, ctx.feature.id)
    fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path
