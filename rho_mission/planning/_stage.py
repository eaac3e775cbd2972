"""Run the planner once, read and check its plan, and make the mission's features of it.

What is written, in order: mission.json with ``planning`` ``running`` (a crash then leaves a
mission that a resume plans again); the prompt at ``prompts/plan.md``; the planner's output in
``logs/plan.log``; then either ``prd.md``, ``plan.json`` and mission.json with the features,
waves and the plan's digests, or mission.json ``failed`` with the reason. The journal gets the
digests only.

Decision: docs/decisions/0507-planning.md
"""

from __future__ import annotations

import os
import stat
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any, TypeAlias

import anyio

from graph import sha256_hex as digest
from taskstore import (
    PlanDocument,
    Schedule,
    ScheduleError,
    Task,
    TaskStoreError,
    check_plan,
    read_plan,
    validate_plan,
    write_atomic,
)
from taskstore._plan import MAX_PLAN_BYTES

from .._errors import FeatureFailedError, MissionError, PlanningFailedError, quote
from ..agents._reading import log_size, read_attempt_usage, usage_ask, usage_place
from ..containment._environ import child_environ
from ..containment._folders import open_unfollowed, private_folder
from ..containment._mission_processes import end_mission_processes
from ..containment._process import note_in_log
from ..executors._contract import WorkerContext
from ..executors._shell import run_in_worktree, write_prompt
from ..executors._worker_call import call_worker, failure_text
from ..git._leftovers import prune_stale
from ..git._pool import WorktreePool
from ..git._repo import GitRepo
from ..records._clock import now_rfc3339_millis
from ..records._document import (
    Feature,
    MissionDocument,
    Planning,
    feature_from_task,
    feature_id_problem,
)
from ..records._journal import Journal
from ..records._persist import save_mission
from ..records._places import RHO_PATTERN, feature_log, mission_ref_prefix, mission_worktrees

__all__ = ["PLAN_FILE_NAME", "PLAN_ID", "Planner", "run_planning", "shell_planner"]

PLAN_ID = "plan"  # the stage's name: its log (logs/plan.log) and prompt (prompts/plan.md)
# Where the planner writes its plan, in its worktree (writable in the sandbox too); never
# committed: the planning worktree is removed after the stage.
PLAN_FILE_NAME = ".rho-plan.json"

# A planner: like a stage worker, it gets a WorkerContext (prompt_file, plan_file set). It may
# return the plan (a PlanDocument or its JSON data), or None after writing ctx.plan_file.
PlanResult: TypeAlias = "PlanDocument | Mapping[str, Any] | None"
Planner: TypeAlias = (
    "Callable[[WorkerContext], Awaitable[PlanResult]] | Callable[[WorkerContext], PlanResult]"
)

_PLAN_INSTRUCTIONS = """

---

## The plan rho needs

Write a JSON document (schema `rho.plan/v1`) to the file named by `$RHO_PLAN_FILE`:

    {{
      "schema_version": "rho.plan/v1",
      "prd": "the product requirements, as Markdown",
      "features": [
        {{"id": "api", "subject": "one line", "description": "what to build and how to check it",
         "command": "optional: the shell command that does it", "blockers": []}},
        {{"id": "docs", "subject": "...", "blockers": ["api"]}}
      ]
    }}

Ids use letters, digits, '.', '_' and '-'. A feature starts once its blockers are done. At most
1,000 features and 10,000 blockers. The repository at the mission's base is your working
directory ({worktree}); what you change there is not kept.
"""


async def shell_planner(ctx: WorkerContext) -> None:
    """Run the mission's ``planner_command`` in the planning worktree; it writes the plan.

    Raises:
        FeatureFailedError: no command, a non-zero exit, or death by a signal.
    """
    command = ctx.feature.command
    if not command:
        raise FeatureFailedError("the mission has no planner command")
    assert ctx.prompt_file is not None  # both set by run_planning
    assert ctx.plan_file is not None
    env = child_environ(
        {
            "RHO_MISSION_ID": ctx.mission.id,
            "RHO_MISSION_DIR": ctx.mission.dir,
            "RHO_TASK_ID": PLAN_ID,
            "RHO_WORKTREE": str(ctx.worktree),
            "RHO_BASE_COMMIT": ctx.base_commit,
            "RHO_ATTEMPT": str(ctx.attempt),
            "RHO_PROMPT_FILE": str(ctx.prompt_file),
            # The same file under the tasks' name: an agent profile's line reads it there.
            "RHO_TASK_PROMPT_FILE": str(ctx.prompt_file),
            "RHO_PLAN_FILE": str(ctx.plan_file),
        }
    )
    note_in_log(ctx.log_path, f"planner: command sha256 {digest(command)[:16]}")
    try:
        await run_in_worktree(ctx, command, env)
    except FeatureFailedError as exc:
        note_in_log(ctx.log_path, f"planner failed: {exc}")
        raise
    note_in_log(ctx.log_path, "planner passed: exit code 0")


async def run_planning(
    mission: MissionDocument, planner: Planner | None, *, need_commands: bool
) -> PlanDocument:
    """Plan *mission*: run *planner* (default: ``shell_planner``), check the plan, adopt it.

    The caller holds the mission's run lock and has prepared its folder. *need_commands*: the
    shell worker will run the features, so each needs a command (or ``config.run_command``).

    Raises:
        PlanningFailedError: the planner failed, timed out or wrote no valid plan; the mission
            is recorded ``failed`` with the reason.
        BaseException: a cancellation, recorded as ``cancelled`` first.
    """
    folder = Path(mission.dir)
    journal = Journal(folder / "journal.jsonl")
    command = mission.config.planner_command
    mission.planning = Planning(started_at=now_rfc3339_millis())
    mission.status = "planning"
    save_mission(mission)
    journal.record(
        "planning",
        mission.planning.started_at,
        durable=True,
        status="running",
        planner_sha256=digest(command) if command and planner is None else None,
    )
    # Orphans of a planner a crash interrupted must not write into this run's worktree.
    await end_mission_processes(mission.id, mission.config.grace_period)
    try:
        data = await _run_planner(mission, planner or shell_planner, journal)
        plan, features, waves = _checked(data, mission, need_commands)
    except PlanningFailedError as exc:
        _end(mission, journal, "failed", str(exc))
        log = Path(mission.dir) / mission.planning.log
        raise PlanningFailedError(
            f"mission {mission.id} failed in planning: {exc} (the planner's log: {log}); "
            f"'rho mission resume {mission.id}' plans again"
        ) from exc
    except BaseException:  # a cancellation (Ctrl-C): no await before the record
        _end(mission, journal, "cancelled", "cancelled")
        raise
    _adopt(mission, journal, plan, features, waves)
    return plan


async def _run_planner(
    mission: MissionDocument, planner: Planner, journal: Journal
) -> PlanDocument | Mapping[str, Any] | bytes:
    """Run the planner in a fresh detached worktree of the base: what it returned or wrote."""
    repo = GitRepo.open(Path(mission.repo))
    pool = await anyio.to_thread.run_sync(_planning_pool, repo, mission)
    try:
        try:
            worktree = await anyio.to_thread.run_sync(pool.acquire_detached, mission.base_commit)
        except MissionError as exc:
            raise PlanningFailedError(f"no worktree for the planner: {exc}") from exc
        try:
            return await _call(mission, planner, journal, worktree)
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(pool.release, worktree)
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(pool.close)


def _planning_pool(repo: GitRepo, mission: MissionDocument) -> WorktreePool:
    folder = mission_worktrees(repo.root, mission.id, "planner")
    repo.exclude(RHO_PATTERN)
    private_folder(folder.parent, repo.root)
    prune_stale(repo, folder)  # what a crashed planning left
    return WorktreePool(repo, folder, mission.id)


async def _call(
    mission: MissionDocument, planner: Planner, journal: Journal, worktree: Path
) -> PlanDocument | Mapping[str, Any] | bytes:
    folder = Path(mission.dir)
    stage = Feature(PLAN_ID, "plan the mission", command=mission.config.planner_command)
    context = WorkerContext(
        mission=mission,
        feature=stage,
        worktree=worktree,
        base_commit=mission.base_commit,
        attempt=1,
        log_path=feature_log(folder, PLAN_ID),
        on_process_start=lambda pgid: journal.record(
            "process", now_rfc3339_millis(), feature_id=PLAN_ID, pgid=pgid
        ),
        plan_file=worktree / PLAN_FILE_NAME,
        budget_left_usd=mission.budget_left_usd(),
    )
    text = mission.prompt + _PLAN_INSTRUCTIONS.format(worktree=worktree)
    context.prompt_file = write_prompt(context, text)
    config = mission.config
    ask = usage_ask(config, "plan", mission.next_stage_attempt("plan", None), config.planner_agent)
    context.usage_file = await anyio.to_thread.run_sync(usage_place, folder, PLAN_ID, ask)
    log_start = log_size(context.log_path)
    try:
        return await _planned(mission, planner, context, worktree)
    finally:
        with anyio.CancelScope(shield=True):
            read = partial(read_attempt_usage, ask, context.usage_file, context.log_path, log_start)
            record = await anyio.to_thread.run_sync(read)
            if record is not None:  # saved with the planning's end
                mission.record_stage_usage(record)
                mission.usage = mission.total_usage()


async def _planned(
    mission: MissionDocument, planner: Planner, context: WorkerContext, worktree: Path
) -> PlanDocument | Mapping[str, Any] | bytes:
    """Run *planner* under the mission's limits: what it returned or wrote."""
    # A task's time limit, and the mission's: planning is part of the mission.
    limits = [t for t in (mission.config.task_timeout, mission.config.timeout) if t is not None]
    timeout = min(limits) if limits else None
    try:
        with anyio.move_on_after(timeout) as scope:
            returned = await call_worker(planner, context)  # type: ignore[arg-type]
    except Exception as exc:  # the planner is the caller's code (or an agent): planning fails
        raise PlanningFailedError(failure_text(exc, context.log_path)) from exc
    if scope.cancelled_caught:
        raise PlanningFailedError(f"the planner timed out after {timeout:g}s")
    if isinstance(returned, PlanDocument | Mapping):
        return returned
    if returned is not None:
        raise PlanningFailedError(
            f"the planner returned a {type(returned).__name__}; return a PlanDocument, its JSON "
            "data, or None after writing the plan file"
        )
    return await anyio.to_thread.run_sync(_read_plan_file, worktree)


def _read_plan_file(worktree: Path) -> bytes:
    """The planner's file, read without following a link (a planner may plant one).

    Raises:
        PlanningFailedError: no such file, not a regular file, or too large.
    """
    try:
        folder = open_unfollowed(worktree, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise PlanningFailedError(f"the planning worktree is gone: {exc.strerror}") from exc
    try:
        fd = open_unfollowed(PLAN_FILE_NAME, os.O_RDONLY | os.O_NONBLOCK, dir_fd=folder)
    except FileNotFoundError:
        raise PlanningFailedError(
            f"the planner wrote no plan: {PLAN_FILE_NAME} ($RHO_PLAN_FILE) is missing"
        ) from None
    except OSError as exc:  # ELOOP: a link
        raise PlanningFailedError(f"the plan file cannot be read: {exc.strerror}") from exc
    finally:
        os.close(folder)
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # before fdopen, which refuses a folder itself
        os.close(fd)
        raise PlanningFailedError(
            f"the plan file is not a regular file: {PLAN_FILE_NAME} ($RHO_PLAN_FILE) is a folder "
            "or a device; write the plan there as a file"
        )
    with os.fdopen(fd, "rb") as handle:
        return handle.read(MAX_PLAN_BYTES + 1)


def _checked(
    data: PlanDocument | Mapping[str, Any] | bytes, mission: MissionDocument, need_commands: bool
) -> tuple[PlanDocument, list[Feature], list[list[str]]]:
    """The plan, its features in wave order and its waves (one batch for a plain plan).

    Raises:
        PlanningFailedError: "invalid plan: ..." with the store's or the validator's words.
    """
    try:
        if isinstance(data, bytes):
            plan = read_plan(data, PLAN_FILE_NAME)
        elif isinstance(data, PlanDocument):
            plan = validate_plan(data.model_dump(), "returned by the planner")
        else:
            plan = validate_plan(dict(data), "returned by the planner")
        tasks, schedule = check_plan(plan)
    except (TaskStoreError, ScheduleError) as exc:
        raise PlanningFailedError(f"invalid plan: {exc}") from exc
    features = _features(tasks, schedule)
    if need_commands and not mission.config.run_command:
        for feature in features:
            if not feature.command:
                raise PlanningFailedError(
                    f"invalid plan: feature {quote(feature.id)} has no command; give it one "
                    "in the plan or pass --run CMD"
                )
    waves = [sorted(task.id for task in tasks)] if plan.plain else schedule.waves
    return plan, features, waves


def _features(tasks: list[Task], schedule: Schedule[Task]) -> list[Feature]:
    by_id = {task.id: task for task in tasks}
    features = []
    for task_id in (i for wave in schedule.waves for i in wave):
        problem = feature_id_problem(task_id)
        if problem is not None:
            raise PlanningFailedError(f"invalid plan: {problem}")
        features.append(feature_from_task(by_id[task_id]))
    return features


def _adopt(
    mission: MissionDocument,
    journal: Journal,
    plan: PlanDocument,
    features: list[Feature],
    waves: list[list[str]],
) -> None:
    """Keep the PRD and the plan (0600), make the features and waves, record the digests."""
    folder = Path(mission.dir)
    plan_bytes = (plan.model_dump_json(indent=2) + "\n").encode()
    write_atomic(folder / "prd.md", plan.prd.encode())
    write_atomic(folder / "plan.json", plan_bytes)
    prefix = mission_ref_prefix(mission.id)
    for feature in features:
        feature.branch = prefix + feature.id
    mission.features = features
    mission.waves = waves
    assert mission.planning is not None
    mission.planning = mission.planning.model_copy(
        update={
            "status": "completed",
            "completed_at": now_rfc3339_millis(),
            "prd_sha256": digest(plan.prd),
            "plan_sha256": digest(plan_bytes.decode()),
            "plain": plan.plain,
        }
    )
    save_mission(mission)
    journal.record(
        "planned",
        mission.planning.completed_at or "",
        durable=True,
        features=len(features),
        waves=len(waves),
        plain=plan.plain,
        prd_sha256=mission.planning.prd_sha256,
        plan_sha256=mission.planning.plan_sha256,
    )


def _end(mission: MissionDocument, journal: Journal, status: str, error: str) -> None:
    """Record the planning stage's end without a plan: the mission failed (or was cancelled)."""
    assert mission.planning is not None
    ended = now_rfc3339_millis()
    mission.planning = mission.planning.model_copy(
        update={"status": "failed", "completed_at": ended, "error": error}
    )
    mission.status = "cancelled" if status == "cancelled" else "failed"
    mission.completed_at = ended
    save_mission(mission)
    journal.record("planning", ended, durable=True, status=status, error_sha256=digest(error))
