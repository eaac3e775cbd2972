"""The seam between the wave engine and what runs a feature: workers, observers, executors.

The engine (``engine._loop``) is the coordinator: it keeps the waves, retries, statuses, joins,
integration merges and persistence. An `Executor` does one thing for it: run one attempt of one
feature and hand back its result (get a worktree at the wave's start, run the worker, commit
what it left, give the worktree back). The local executor does that with a worktree pool on this
machine; the Dask executor on a cluster's worker, through a git remote.

This module imports nothing else of the package at run time (the models are named for the type
checker only), so that every other module may import it without an import circle.

Decision: docs/decisions/0503-executors.md
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeAlias

if TYPE_CHECKING:
    from ..records._document import Feature, FeatureSetup, Handoff, MissionDocument, WaveJoin
    from ..records._usage import AttemptUsage

__all__ = [
    "Attempt",
    "AttemptResult",
    "Executor",
    "Observer",
    "SetupStep",
    "Worker",
    "WorkerContext",
]


@dataclass
class WorkerContext:
    """What a worker gets: the mission, its feature, its worktree and where it started.

    The verify and fix stages of a join (``engine._verify``) get one too: their ``feature`` is the
    stage (``verify-<wave>``, ``fix-<wave>``, its ``command`` the mission's verify or fix
    command), ``wave`` its wave, and a fix's ``verify_log`` the log of the failed checks (a
    culprit's replay gets it too: the checks that failed after its merge). So
    does the planning stage (``planning``): its ``feature`` is ``plan``, ``prompt_file`` the
    prompt, ``plan_file`` where the plan is to be written. The resolve stage of a conflicted
    merge (``engine._resolve``) gets the conflicted feature, ``conflict_file`` its brief (JSON)
    and ``prompt_file`` the same for an agent (Markdown). ``replay`` is True for an attempt
    that runs a conflicted feature's task again from the joined head (``--replay-conflicts``).
    ``usage_file`` is where the attempt may write what it spent (``$RHO_USAGE_FILE``,
    ``rho.usage/v1``; None: nowhere), ``budget_left_usd`` what is left of the mission's dollar
    budget when it started (None: no dollar budget).
    """

    mission: MissionDocument
    feature: Feature
    worktree: Path
    base_commit: str
    attempt: int
    log_path: Path
    on_process_start: Callable[[int], None] = field(default=lambda pgid: None)
    wave: int | None = None
    verify_log: Path | None = None
    # What to do, for an agent (Markdown): every feature attempt's (its subject, the mission,
    # its description; a Python worker's too), the planning stage's prompt to plan, a
    # resolver's or a fix's brief. Then where the plan goes (``rho.plan/v1``).
    prompt_file: Path | None = None
    plan_file: Path | None = None
    conflict_file: Path | None = None
    replay: bool = False
    usage_file: Path | None = None
    budget_left_usd: float | None = None


# Strings for the interpreter (Handoff is named for the type checker only), unions for mypy.
AsyncWorker: TypeAlias = "Callable[[WorkerContext], Awaitable[Handoff | None]]"
PlainWorker: TypeAlias = "Callable[[WorkerContext], Handoff | None]"
Worker: TypeAlias = "AsyncWorker | PlainWorker"


class Observer(Protocol):
    """Receives progress: a feature changed status, or a wave joined."""

    def feature_changed(self, mission: MissionDocument, feature: Feature) -> None: ...

    def wave_joined(self, mission: MissionDocument, join: WaveJoin) -> None: ...


async def _nothing_to_wait_for() -> None:
    """The ``ready`` of an attempt made without one: the worker may run at once."""


def _usage_unwanted(record: AttemptUsage) -> None:
    """The ``note_usage`` of an attempt made without one: its usage is not kept."""


def _setup_unwanted(record: FeatureSetup) -> None:
    """The ``note_setup`` of an attempt made without one: its setup is not recorded."""


@dataclass(frozen=True)
class SetupStep:
    """A mission's worktree setup (``--setup CMD``, ``run_staged(setup=...)``): the worker that
    runs it in a worktree (its ``WorkerContext`` has the feature ``setup``, whose ``command``
    is the shell's), and what identifies it in the setup key (``sh:<command>``, or
    ``python:<module>.<name>`` for a library's)."""

    worker: Worker
    identity: str


@dataclass(frozen=True)
class Attempt:
    """One try of one feature, as the coordinator asks an executor for it.

    ``branch_head`` is what the coordinator last recorded on the feature's branch (None: no
    such branch), the value the branch's next move must find (a compare-and-swap).
    ``note_ref(branch, commit, why)`` journals a value a branch may take, before it is moved.
    ``ready()`` is awaited before the worker runs: the feature's start is then in the task
    store, so an agent that asks the store sees its task in progress; an executor gets the
    worktree ready first, while the store is written. ``replay``: the attempt runs the task
    again after its merge conflicted (its worker sees ``WorkerContext.replay``), or after a
    bisected join found that its merge broke the checks: ``verify_log`` then names their
    output (``WorkerContext.verify_log``; the Dask executor sends its last bytes, written
    beside the attempt's log on the worker).
    ``note_usage(record)`` is called once the attempt ended, with what it spent, even when a
    cancellation ended it; ``budget_left_usd`` is passed on to its worker. ``setup``: the
    mission's worktree setup, run first where the worktree needs it (an executor that cannot
    run one refuses it: ``supports_setup``); ``note_setup(record)`` gets what it came to.
    """

    mission: MissionDocument
    feature: Feature
    worker: Worker
    base_commit: str
    number: int
    branch_head: str | None
    log_path: Path
    on_process_start: Callable[[int], None]
    note_ref: Callable[[str, str, str], None]
    ready: Callable[[], Awaitable[None]] = _nothing_to_wait_for
    replay: bool = False
    verify_log: Path | None = None
    note_usage: Callable[[AttemptUsage], None] = _usage_unwanted
    budget_left_usd: float | None = None
    setup: SetupStep | None = None
    note_setup: Callable[[FeatureSetup], None] = _setup_unwanted


@dataclass(frozen=True)
class AttemptResult:
    """What one attempt came to: a handoff (success) or an error text (failure).

    ``branch_head`` is what the feature's branch holds now, or None when it is unknown or
    absent; ``branch_known`` says whether ``branch_head`` may be trusted for the next move.
    """

    handoff: Handoff | None = None
    error: str | None = None
    branch_head: str | None = None
    branch_known: bool = True


class Executor(Protocol):
    """Runs the attempts of a mission's features; the engine calls it in this order:
    ``open`` once the mission's refs are settled, ``prepare_wave`` before each wave with the
    integration head its features start from, ``run_attempt`` for each try (at most
    ``max_workers`` at once), and ``close`` at the end of the run, whatever happened."""

    async def open(self, mission: MissionDocument) -> None:
        """Get ready to run *mission*'s features (worktree folders, a cluster connection)."""
        ...

    async def prepare_wave(self, head: str) -> None:
        """Make the commit *head* available where the wave's features will start from it."""
        ...

    async def run_attempt(self, attempt: Attempt) -> AttemptResult:
        """Run *attempt*: a failure of the worker or of git is a result, never an exception;
        a cancellation ends the attempt's processes and propagates."""
        ...

    async def close(self) -> list[str]:
        """Release what ``open`` took; return problems worth a warning (never raise)."""
        ...
