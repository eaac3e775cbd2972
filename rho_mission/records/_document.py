"""The mission.json document: Mission, Feature, Handoff, WaveJoin, MissionConfig.

Keys are snake_case, as in mission.json (docs/architecture.md). ``Mission`` is both the
persisted document and the object a library caller drives (``Mission.new(...)``,
``await mission.run_staged(...)``); the behaviour lives in ``engine._loop`` and is attached in
``mission._mission``.

Decision: docs/decisions/0501-missions.md
"""

from __future__ import annotations

import functools
import json
import re
from typing import TYPE_CHECKING, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ._places import mission_ref_prefix
from ._usage import AttemptUsage, UsageTotal, add_usage, sum_usage
from ._usagelimits import MAX_COST_USD, MAX_TOKENS

if TYPE_CHECKING:
    from taskstore import Task

__all__ = [
    "FEATURE_STATUSES",
    "MISSION_SCHEMA",
    "Conflict",
    "ConflictOutcome",
    "Feature",
    "FeatureSetup",
    "FeatureStatus",
    "Handoff",
    "HeldTask",
    "MergeRecord",
    "MissionConfig",
    "MissionDocument",
    "MissionStatus",
    "Planning",
    "PlanningStatus",
    "SetupOutcome",
    "Verification",
    "VerificationStatus",
    "WaveJoin",
    "feature_from_task",
    "feature_id_problem",
]

# A feature id becomes the last component of its branch name, so it must be a safe ref part,
# and short enough for a file name (its log, its branch's file under .git/refs).
_BRANCH_SAFE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*(?<![.])(?<!\.lock)")
MAX_FEATURE_ID = 100
# Names of the mission's own refs and logs (rho-mission/<id>/integration; the verify and fix
# stages' verify-<wave> and fix-<wave>, a bisection's verify-<wave>-<n>; the planning stage's
# plan; the resolve stage's resolve): a feature named so would share its branch or its log.
# Case-insensitive file systems too.
_RESERVED = re.compile(r"(?i)integration|plan|resolve|fix-\d+|verify-\d+(?:-\d+)?")


@functools.lru_cache(maxsize=4096)
def feature_id_problem(feature_id: str) -> str | None:
    """Why *feature_id* cannot name a feature's branch, or None when it can.

    Cached: a mission document checks every feature's id again on each assignment to one of
    its fields (``validate_assignment``), several times per wave.
    """
    shown = json.dumps(feature_id, ensure_ascii=False)
    if len(feature_id) > MAX_FEATURE_ID:
        return f"feature id is {len(feature_id)} characters; the limit is {MAX_FEATURE_ID}"
    if not _BRANCH_SAFE.fullmatch(feature_id) or ".." in feature_id:
        return f"feature id {shown} cannot name a git branch; use letters, digits, '.', '_' and '-'"
    if _RESERVED.fullmatch(feature_id):
        return f"feature id {shown} is reserved: it names a ref of the mission itself"
    return None


MISSION_SCHEMA: Literal["rho.mission/v1"] = "rho.mission/v1"
MissionStatus = Literal["planning", "executing", "completed", "failed", "partial", "cancelled"]
FeatureStatus = Literal["pending", "in_progress", "completed", "failed", "cancelled"]
FEATURE_STATUSES: tuple[FeatureStatus, ...] = (
    "pending",
    "in_progress",
    "completed",
    "failed",
    "cancelled",
)


class Handoff(BaseModel):
    """What a completed feature hands to the features after it."""

    model_config = ConfigDict(extra="forbid")

    commit_id: str | None = None
    files_changed: list[str] = Field(default_factory=list)
    summary: str = ""
    tests_passed: bool | None = None

    @classmethod
    def of_work(cls, commit_id: str | None, files_changed: list[str]) -> Handoff:
        """What rho's commit step hands on: the commit (None: nothing changed), the files it
        changed, and their count as the summary."""
        count = len(files_changed)
        summary = f"{count} file(s) changed" if count else "no changes"
        return cls(commit_id=commit_id, files_changed=files_changed, summary=summary)


ConflictOutcome = Literal["resolved", "replayed", "failed"]


class Conflict(BaseModel):
    """What happened when a feature's work met other work at its join (``engine._overlap``).

    ``paths`` are the paths git found in conflict (as git names them), ``with`` the features
    merged before it in that join whose work changed one of them (empty: the work already on
    the integration branch). ``outcome``: ``resolved`` by the resolve stage (``--resolve``),
    ``replayed`` (its task ran again from the joined head, ``--replay-conflicts``), or
    ``failed``, with ``reason`` in one line. ``resolve_attempts`` and ``replays`` count the
    rungs climbed.
    """

    model_config = ConfigDict(
        extra="forbid", validate_by_name=True, validate_by_alias=True, serialize_by_alias=True
    )

    paths: list[str]
    with_: list[str] = Field(default_factory=list, alias="with")
    outcome: ConflictOutcome = "failed"
    resolve_attempts: int = Field(default=0, ge=0)
    replays: int = Field(default=0, ge=0)
    reason: str | None = None


SetupOutcome = Literal["ran", "reused", "failed"]


class FeatureSetup(BaseModel):
    """The worktree setup of a feature's last attempt (``--setup``): the pooled worktree's
    name, whether the setup ``ran`` there for it, was ``reused`` (its key held and its kept
    outputs were as the setup left them) or ``failed``, and the setup key's first 16 hex
    digits."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    worktree: str
    outcome: SetupOutcome
    key: str


class Feature(BaseModel):
    """One unit of work of a mission (one task of the store, with ``--from-tasks``).

    It speaks the task store's words: ``Feature("task_1", "Write the parser", "It reads ...")``
    is (id, subject, description), as ``rho task add SUBJECT --description TEXT`` is; a feature
    without a description is described by its subject, one without a subject is named by its
    description's first line. mission.json keeps the spec's keys:
    ``description`` holds the subject and ``expected_behavior`` the description (the aliases
    below). A call that passes ``expected_behavior=`` speaks those keys, so its ``description``
    is the subject (mission.json's own dicts validate that way).
    Decision: docs/decisions/0513-feature-vocabulary.md
    """

    model_config = ConfigDict(
        extra="forbid",
        validate_assignment=True,
        validate_by_name=False,
        validate_by_alias=True,
        serialize_by_alias=True,
    )

    id: str
    # The task's subject: one line (mission.json: "description").
    subject: str = Field(default="", alias="description")
    # The task's description: what is expected (mission.json: "expected_behavior").
    description: str = Field(default="", alias="expected_behavior")
    command: str | None = None
    blocked_by: list[str] = Field(default_factory=list)
    # Its task's priority (0 first): a wave starts its tasks by it (``records._order``); None:
    # not a store's task (the default priority).
    priority: int | None = Field(default=None, ge=0, le=4)
    branch: str | None = None
    status: FeatureStatus = "pending"
    attempts: int = 0
    error: str | None = None
    handoff: Handoff | None = None
    started_at: str | None = None
    completed_at: str | None = None
    log: str | None = None
    # Set when its merge at a join conflicted (see ``Conflict``).
    conflict: Conflict | None = None
    # What its attempts spent (``records._usage``): their sum, and each attempt's record (its
    # task attempts and its resolver's), one per attempt; None and empty until one is read.
    usage: UsageTotal | None = None
    attempt_usage: list[AttemptUsage] = Field(default_factory=list)
    # The worktree setup of its last attempt (``--setup``); None without one.
    setup: FeatureSetup | None = None
    # Times it was sent back after a bisection found it broke the checks (``replay_culprits``).
    culprit_replays: int = Field(default=0, ge=0)

    def __init__(self, id: str, subject: str = "", description: str = "", **data: Any) -> None:
        if "expected_behavior" in data:  # mission.json's keys: its "description" is the subject
            subject, description = subject or description, data.pop("expected_behavior")
        elif not subject:  # described only: its first line is what lists show
            subject = description.strip().partition("\n")[0]
        super().__init__(
            id=id,
            description=subject,
            expected_behavior=description or subject,
            **data,
        )

    @property
    def work_commit(self) -> str | None:
        """The commit of its own work, when it completed with one (a join merges it), else
        None: not completed, completed before the mission, or it changed nothing."""
        if self.status != "completed" or self.handoff is None:
            return None
        return self.handoff.commit_id

    def record_usage(self, record: AttemptUsage) -> None:
        """Keep *record* as the usage of its attempt (replacing one read before), and the sum."""
        kept = [r for r in self.attempt_usage if r.key != record.key]
        self.attempt_usage = sorted([*kept, record], key=_usage_order)
        self.usage = sum_usage(self.attempt_usage)

    def next_usage_attempt(self, stage: str) -> int:
        """The number of the next attempt of *stage* to record (its resolver's: counted over
        every run, as its task attempts are)."""
        return 1 + sum(1 for record in self.attempt_usage if record.stage == stage)


def _usage_order(record: AttemptUsage) -> tuple[str, int, int]:
    return record.key


VerificationStatus = Literal["skipped", "running", "passed", "failed", "cancelled"]


class Verification(BaseModel):
    """What the verify stage (``--verify``) said of the integration head after a wave's merges.

    ``skipped``: no verify stage, or the wave stopped the mission anyway (a failed feature
    without ``keep_going``, a cancellation), so its head is verified when the wave is resumed.
    ``running`` is what mission.json holds while the checks run: a crash leaves it, and the
    resume verifies that wave again. ``attempts`` counts runs of the checks, ``fix_attempts``
    runs of the fix stage; ``error`` is the last check's failure, ``fix_error`` the last fix's
    when it failed. ``head`` is the commit last checked. The commands appear only as digests,
    so that the wave's graph fragment depends on its join alone (None: a library worker ran).
    """

    model_config = ConfigDict(extra="forbid")

    status: VerificationStatus = "skipped"
    attempts: int = Field(default=0, ge=0)
    # Of the attempts, the runs whose checks failed (a bisection's failing probes included);
    # None: recorded before rho counted them.
    failed_runs: int | None = Field(default=None, ge=0)
    fix_attempts: int = Field(default=0, ge=0)
    # Checks that failed, then passed on the same tree (``verify_retries``): flaky.
    flaky: int = Field(default=0, ge=0)
    # Bisection of a failed join (``bisect``): runs of the checks spent finding culprits (the
    # base's run included), whether the checks failed on the wave's base already (then nobody
    # is blamed), and the features found to break them (sorted), each failed by its merge.
    bisect_runs: int = Field(default=0, ge=0)
    base_failed: bool = False
    culprit_ids: list[str] = Field(default_factory=list)
    # Each culprit's log of the check run that blamed it (``logs/verify-<wave>-<n>.log``).
    culprit_logs: dict[str, str] = Field(default_factory=dict)
    log: str | None = None
    duration_ms: int = Field(default=0, ge=0)
    error: str | None = None
    fix_error: str | None = None
    head: str | None = None
    command_sha256: str | None = None
    fix_command_sha256: str | None = None


class WaveJoin(BaseModel):
    """The record of one wave's end; every id list sorted.

    ``cancelled_ids`` is an addition to the seed's join: a cancelled feature is neither
    completed nor failed, and the join says so. ``blocked_ids`` are the features of later waves
    downstream of a failure (or of a wave whose checks failed), transitively; ``not_run_ids``
    those that did not run only because the mission stopped after this wave (a cancellation,
    another failure, a failed verification, a budget), so that nothing is called blocked by
    work it does not depend on, nor by work that was only cut short.
    """

    model_config = ConfigDict(extra="forbid")

    wave: int = Field(ge=1)
    feature_ids: list[str]
    completed_ids: list[str]
    failed_ids: list[str]
    cancelled_ids: list[str] = Field(default_factory=list)
    blocked_ids: list[str]
    not_run_ids: list[str] = Field(default_factory=list)
    # The features whose merge conflicted at this join, whatever came of it (``Feature.conflict``).
    conflicted_ids: list[str] = Field(default_factory=list)
    started_at: str
    completed_at: str
    summary: str
    verification: Verification = Field(default_factory=Verification)
    # What its features' attempts (every run of them) and its checks spent.
    usage: UsageTotal | None = None


class HeldTask(BaseModel):
    """A task of the store a mission does not run because of the store's own statuses.

    ``held_by`` is the task whose ``cancelled``, ``skipped`` or ``reviewing`` status holds it:
    itself, or a blocker (transitively). ``status`` is the task's own status in the store;
    ``reason`` says it in words, for the views (``cancelled in the task store``, ``blocked by
    "c" (cancelled)``).
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    status: str
    held_by: str
    reason: str


class MergeRecord(BaseModel):
    """One ``rho mission merge`` that changed the user's branch (``mission._merge``).

    ``into`` is the branch, ``commit`` what it holds after the merge, ``integration_head`` the
    integration branch's head the merge was made from; ``squash`` and ``only`` (the task ids
    named) say what it chose to leave out: the history, the other tasks' work. ``clean`` counts
    a mission merged so as merged while its integration branch is still that head.
    """

    model_config = ConfigDict(extra="forbid")

    into: str
    kind: str
    commit: str
    integration_head: str
    squash: bool = False
    only: list[str] = Field(default_factory=list)
    tasks: list[str] = Field(default_factory=list)
    merged_at: str


# 16 MiB: far beyond what a person reads, small enough that a runaway task fills no disk.
DEFAULT_LOG_LIMIT = 16 * 1024 * 1024
MIN_LOG_LIMIT = 4096


PlanningStatus = Literal["running", "completed", "failed"]


class Planning(BaseModel):
    """The planning stage of a mission made from a prompt (``rho mission "PROMPT" --planner``).

    The PRD and the plan are kept in the mission folder (``prd.md``, ``plan.json``, 0600); here
    only their digests. ``plain``: the plan has no blocker, so its features ran as one batch and
    the mission's graph has no wave-join nodes. ``log`` is the planner's log, relative to the
    mission folder; ``error`` why planning failed (the planner's exit, or the plan's problem).
    """

    model_config = ConfigDict(extra="forbid")

    status: PlanningStatus = "running"
    started_at: str
    completed_at: str | None = None
    log: str = "logs/plan.log"
    prd_sha256: str | None = None
    plan_sha256: str | None = None
    plain: bool = False
    error: str | None = None


class MissionConfig(BaseModel):
    """How a mission runs. Durations are seconds; ``None`` means no limit."""

    model_config = ConfigDict(extra="forbid")

    max_workers: int = Field(default=4, ge=1, le=64)
    retries: int = Field(default=0, ge=0, le=100)
    task_timeout: float | None = Field(default=None, gt=0)
    timeout: float | None = Field(default=None, gt=0)
    keep_worktrees: bool = False
    grace_period: float = Field(default=5.0, gt=0)
    run_command: str | None = None
    task_store: str | None = None
    # After a failure, run what does not depend on it (like make -k); see ``engine._joins``.
    keep_going: bool = False
    # Run tasks leased to an interrupted mission (see ``engine._leases``); a running one still
    # refuses.
    takeover: bool = False
    # Agents' claims (``mission._claims``): run claimed tasks anyway, and the age in seconds
    # after which a claim lapses.
    include_claimed: bool = False
    claim_ttl: float = Field(default=24 * 3600.0, gt=0)
    # A --from-tasks mission bound to a signed plan (``mission._signedplan``): the plan file and the
    # issuer keys it must verify against, checked before any worker starts and at every resume;
    # ``signed_plan_sha256`` records the graphSha256 of the plan last verified.
    signed_plan: str | None = None
    trusted_keys: list[str] = Field(default_factory=list)
    signed_plan_sha256: str | None = None
    # Verified joins (``engine._verify``): the project's checks on the integration head after each
    # wave, and the command that may repair them, run at most ``max_fix_attempts`` times.
    verify_command: str | None = None
    fix_command: str | None = None
    max_fix_attempts: int = Field(default=3, ge=1, le=100)
    # Failing checks run again on the same tree up to this many times before anyone is blamed.
    verify_retries: int = Field(default=0, ge=0, le=10)
    # Checks that fail on a join's merged head are run on its base, then on prefixes of its
    # merge order, to find and fail the features that broke them (``engine._bisect``); the
    # join lands the head without them.
    bisect: bool = True
    # Times a culprit's task may run again on the head without it, its checks' output at hand;
    # work that merges and passes the checks lands in the same join.
    replay_culprits: int = Field(default=0, ge=0, le=100)
    # Each task's command under bubblewrap (``containment._sandbox``); its network kept unless
    # ``sandbox_network`` is False.
    sandbox: bool = False
    sandbox_network: bool = True
    # What the sandbox shows besides (absolute paths, read-only: ``containment._hostmask``),
    # and, when set, the only variables of the caller's environment it passes on.
    sandbox_allow: list[str] = Field(default_factory=list)
    # What it binds writable besides (absolute paths, the real ones: ``--sandbox-allow-write``).
    sandbox_allow_write: list[str] = Field(default_factory=list)
    sandbox_env: list[str] | None = None
    # Bytes of a task's output its log keeps: the first and the last half of them, with a line
    # saying how much was cut in between (``containment._reaper``).
    log_limit: int = Field(default=DEFAULT_LOG_LIMIT, ge=MIN_LOG_LIMIT)
    # The agent's command line that writes the plan of a mission made from a prompt
    # (``planning``): run once, in a worktree of the base, before the first wave.
    planner_command: str | None = None
    # Overlapping work at a join (``engine._overlap``): the command that resolves a conflicted
    # merge in a worktree holding it, and how many times a conflicted feature's task may run
    # again from the joined head (0: a conflict fails the feature).
    resolve_command: str | None = None
    replay_conflicts: int = Field(default=0, ge=0, le=100)
    # Agents by name (``agents``): the profiles whose usage readers read the output of the
    # tasks (and fixes), the planner and the resolver.
    agent: str | None = None
    planner_agent: str | None = None
    resolve_agent: str | None = None
    # A task's attempt that changed nothing fails (on by default with ``--agent``: an agent
    # that exits 0 having written nothing has not done its task).
    require_changes: bool = False
    # Budgets (``engine._budget``): no attempt starts once the recorded spend reaches one;
    # with ``budget_hard`` running attempts are stopped too. Bounded as what one attempt may
    # report (``records._usagelimits``): nan or inf would never be reached.
    budget_usd: float | None = Field(default=None, gt=0, le=MAX_COST_USD, allow_inf_nan=False)
    budget_tokens: int | None = Field(default=None, gt=0, le=MAX_TOKENS)
    budget_hard: bool = False
    # A worktree ready to work in (``setup``): the command run once per pooled worktree before
    # the first attempt that uses it, again only when its key changes (the command and the
    # files of ``setup_key`` at the feature's start commit); ``copy_paths``: untracked files of
    # the checkout copied into every worktree, never committed (repository-relative).
    setup_command: str | None = None
    setup_key: list[str] = Field(default_factory=list)
    copy_paths: list[str] = Field(default_factory=list)
    # Attention (``notify``): the command run, and the URL posted to, with a JSON event when
    # the mission ends, stops, reaches its budget or a join finds culprits; the file holding
    # the bearer token the URL needs (the file's path only: mission.json holds no secret).
    notify_command: str | None = None
    notify_url: str | None = Field(default=None, pattern=r"^https?://[^\s]+$")
    notify_token_file: str | None = None
    # The git remote a run on a Dask cluster pushed the mission's branches to (set by the
    # executor): ``rho mission clean`` deletes them there too.
    remote: str | None = None


class MissionDocument(BaseModel):
    """The fields of mission.json, in the order they are written."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    schema_version: Literal["rho.mission/v1"] = MISSION_SCHEMA
    id: str = Field(pattern=r"^[0-9a-f]{8}$")
    prompt: str
    dir: str
    repo: str
    base_commit: str
    integration_branch: str
    integration_head: str | None = None
    features: list[Feature] = Field(default_factory=list)
    waves: list[list[str]] = Field(default_factory=list)
    # Tasks of the store this mission does not run, and why (``mission._selection``).
    held: list[HeldTask] = Field(default_factory=list)
    wave_joins: list[WaveJoin] = Field(default_factory=list)
    status: MissionStatus = "planning"
    started_at: str | None = None
    completed_at: str | None = None
    # The seconds rho ran it, summed over its runs (a resume adds its own; the idle time
    # between runs is not in it, and a killed run's is lost). None: written before it existed.
    run_seconds: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    config: MissionConfig = Field(default_factory=MissionConfig)
    # Set once a planning stage starts (a mission made from a prompt), else None.
    planning: Planning | None = None
    # What ``rho mission merge`` brought into the user's branches, oldest first, and when
    # ``rho mission clean`` took the mission's branches and worktrees back.
    merges: list[MergeRecord] = Field(default_factory=list)
    cleaned_at: str | None = None
    # What every attempt of the mission spent (``records._usage``), and why the last run
    # stopped before its work was done when a budget stopped it (``budget reached: ...``).
    usage: UsageTotal | None = None
    budget_stop: str | None = None
    # The usage of the attempts of no feature: the planner's, the joins' checks and fixes
    # (each with its wave), every run's (a check records one only when it wrote
    # ``$RHO_USAGE_FILE``).
    stage_usage: list[AttemptUsage] = Field(default_factory=list)

    @model_validator(mode="after")
    def _refs_inside_the_mission(self) -> Self:
        # mission.json is read back by resume: a branch edited to "main" must never be moved.
        prefix = mission_ref_prefix(self.id)
        if self.integration_branch != f"{prefix}integration":
            raise ValueError(f"integration_branch must be {prefix}integration")
        for feature in self.features:
            problem = feature_id_problem(feature.id)
            if problem is not None:
                raise ValueError(problem)
            if feature.branch is not None and feature.branch != prefix + feature.id:
                raise ValueError(f"the branch of feature {feature.id} must be {prefix}{feature.id}")
        return self

    def total_usage(self) -> UsageTotal | None:
        """What every recorded attempt spent: the features', the planner's, the joins' checks
        and fixes (None: nothing recorded)."""
        totals = [feature.usage for feature in self.features if feature.usage is not None]
        if self.stage_usage:
            totals.append(sum_usage(self.stage_usage))
        return add_usage(*totals) if totals else None

    def budget_left_usd(self) -> float | None:
        """What is left of ``--budget-usd`` after what was recorded (None: no dollar budget),
        never below zero: what an agent's own cap may spend (``$RHO_BUDGET_LEFT_USD``)."""
        if self.config.budget_usd is None:
            return None
        total = self.total_usage()
        spent = total.cost_usd if total is not None and total.cost_usd is not None else 0.0
        return max(0.0, round(self.config.budget_usd - spent, 4))

    def record_stage_usage(self, record: AttemptUsage) -> None:
        """Keep *record* as the usage of its stage attempt (replacing one read before)."""
        kept = [r for r in self.stage_usage if r.key != record.key]
        self.stage_usage = sorted([*kept, record], key=_usage_order)

    def next_stage_attempt(self, stage: str, wave: int | None) -> int:
        """The number of the next attempt of *stage* (of *wave*) to record, over every run."""
        return 1 + sum(1 for r in self.stage_usage if r.stage == stage and r.wave == wave)

    def feature(self, feature_id: str) -> Feature:
        """The feature with id *feature_id*.

        Raises:
            KeyError: no such feature.
        """
        for feature in self.features:
            if feature.id == feature_id:
                return feature
        raise KeyError(feature_id)


def feature_from_task(task: Task) -> Feature:
    """The feature that runs *task*: its id, subject, description, command, blockers and
    priority."""
    from taskstore import read_priority

    feature = Feature(
        task.id,
        task.subject,
        task.description or task.subject,
        command=task.command,
        blocked_by=sorted(set(task.blocker_ids)),
        priority=read_priority(task.metadata),
    )
    if task.status == "completed":
        feature.status = "completed"
    return feature
