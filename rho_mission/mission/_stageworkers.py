"""The workers a run is given: the tasks' and the five stages', as one value.

A library caller names each worker by keyword (``run_staged(worker, verify=..., fix=...,
plan=..., resolve=..., setup=...)``); from there on they travel together as `StageWorkers`,
and each None stands for the default the mission's config names (the shell running its
``*_command``). `StageWorkers` turns them into what the engine takes.

Decision: docs/decisions/0514-wave-state.md
"""

from __future__ import annotations

from dataclasses import dataclass

from .._errors import InvalidMissionError
from ..engine._resolve import resolve_shell_worker
from ..engine._stage_workers import Stages, stages_for
from ..executors._contract import Executor, SetupStep, Worker
from ..executors._setup import shell_setup
from ..executors._shell import shell_worker
from ..planning import Planner
from ..records._document import MissionConfig

__all__ = ["StageWorkers", "setup_step"]


@dataclass(frozen=True)
class StageWorkers:
    """A run's workers; None: the default (the shell, running the config's command)."""

    worker: Worker | None = None
    verify: Worker | None = None
    fix: Worker | None = None
    plan: Planner | None = None
    resolve: Worker | None = None
    setup: Worker | None = None

    def task_worker(self) -> Worker:
        """What runs each feature's attempt."""
        return self.worker or shell_worker

    def stages(self, config: MissionConfig) -> Stages | None:
        """The verified joins' workers (``engine._stage_workers.stages_for``).

        Raises:
            InvalidMissionError: a fix stage without a verify stage.
        """
        return stages_for(config, self.verify, self.fix)

    def resolver(self, config: MissionConfig) -> Worker | None:
        """The resolve stage's worker, or None when conflicts are not resolved."""
        if self.resolve is not None:
            return self.resolve
        return resolve_shell_worker if config.resolve_command else None


def setup_step(config: MissionConfig, setup: Worker | None, executor: Executor) -> SetupStep | None:
    """The mission's worktree setup: the library's *setup* worker, else ``config.setup_command``.

    Raises:
        InvalidMissionError: a setup or ``--copy`` files for an executor that cannot run them.
    """
    step = None
    if setup is not None:
        name = getattr(setup, "__qualname__", type(setup).__qualname__)
        step = SetupStep(setup, f"python:{getattr(setup, '__module__', '')}.{name}")
    elif config.setup_command:
        step = shell_setup(config.setup_command)
    wanted = step is not None or bool(config.copy_paths)
    if wanted and not getattr(executor, "supports_setup", False):
        raise InvalidMissionError(
            f"a worktree setup (--setup, --copy) runs in this machine's worktrees: "
            f"{type(executor).__name__} does not run one; make it part of the tasks' command"
        )
    return step
