"""The text of ``rho mission --dry-run``: the waves, and every setting the run would use.

A view: it takes the planned mission and returns text; the command prints it (and, before it,
the warnings a real run would print: uncommitted changes, a budget that counts little).

Decision: docs/decisions/0502-the-users-loop.md
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._plain import naturally, shown

if TYPE_CHECKING:
    from ..mission._mission import Mission
    from ..records._document import MissionConfig

__all__ = ["plan_text", "settings_lines", "stage_lines"]


def plan_text(planned: Mission) -> list[str]:
    """The lines of a dry run of *planned*: its waves and commands, then its settings."""
    lines = [f"mission {planned.id} (dry run: nothing runs, nothing is written)"]
    for number, wave in enumerate(planned.waves, start=1):
        lines.append(f"wave {number}:")
        for feature_id in naturally(wave):
            feature = planned.feature(feature_id)
            lines.append(f"  {feature.id}: {shown(feature.subject)}")
            # What will run, as /bin/sh will get it: the task's own command, else --run.
            command = feature.command or planned.config.run_command or "(no command)"
            lines.append(f"    $ {shown(command)}")
    return lines


def stage_lines(config: MissionConfig) -> list[str]:
    """The stages around the tasks: checks, fix, resolver, replays, setup, copies."""
    lines = []
    if config.verify_command:
        lines.append(f"after each wave: {config.verify_command}")
        if config.verify_retries:
            lines.append(f"  failing checks run again up to {config.verify_retries} time(s)")
    if config.fix_command:
        fixes = config.max_fix_attempts
        lines.append(f"when it fails: {config.fix_command} (at most {fixes} time(s))")
    if config.resolve_command:
        lines.append(f"when a merge conflicts: {config.resolve_command}")
    if config.replay_conflicts:
        lines.append(f"conflicted tasks run again: at most {config.replay_conflicts} time(s)")
    if config.setup_command:
        keys = ", ".join(config.setup_key) or "the command alone"
        lines.append(f"each worktree is set up once with: {config.setup_command}")
        lines.append(f"  again when this changes: {keys}")
    if config.copy_paths:
        lines.append(f"copied into every worktree: {', '.join(config.copy_paths)}")
    return lines


def settings_lines(config: MissionConfig) -> list[str]:
    """How the run would go: workers, retries, time limits, budget, sandbox, agent."""
    lines = [
        f"workers: {config.max_workers}; retries: {config.retries}; "
        f"keep going after a failure: {'yes' if config.keep_going else 'no'}",
        f"time limits: {_seconds(config.task_timeout)} a task, {_seconds(config.timeout)} the "
        f"mission; grace {config.grace_period:g}s",
        f"budget: {_budget(config)}",
        f"sandbox: {_sandbox(config)}",
    ]
    if config.agent:
        lines.append(f"agent: {config.agent}")
    if config.require_changes:
        lines.append("an attempt that changes no file fails (--require-changes)")
    return lines


def _seconds(value: float | None) -> str:
    return "no limit" if value is None else f"{value:g}s"


def _budget(config: MissionConfig) -> str:
    said = []
    if config.budget_usd is not None:
        said.append(f"${config.budget_usd:g}")
    if config.budget_tokens is not None:
        said.append(f"{config.budget_tokens:,} tokens")
    if not said:
        return "none"
    return " and ".join(said) + (
        " (hard: running attempts are stopped)" if config.budget_hard else ""
    )


def _sandbox(config: MissionConfig) -> str:
    if not config.sandbox:
        return "no"
    said = ["yes", "network kept" if config.sandbox_network else "no network"]
    if config.sandbox_allow:
        said.append("shown: " + ", ".join(config.sandbox_allow))
    if config.sandbox_allow_write:
        said.append("writable: " + ", ".join(config.sandbox_allow_write))
    if config.sandbox_env is not None:
        said.append("environment: " + (", ".join(config.sandbox_env) or "rho's only"))
    return "; ".join(said)
