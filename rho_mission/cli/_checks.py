"""What a join does besides merging, shared by ``rho mission`` and ``resume``: ``--verify``,
``--fix``, ``--fix-attempts``, ``--verify-retries`` and ``--no-bisect`` (the checks of its
head), ``--resolve`` and ``--replay-conflicts`` (its conflicted merges).

Decision: docs/decisions/0504-verified-joins.md, docs/decisions/0515-bisect-a-failed-join.md
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from ..records._document import MissionConfig

__all__ = ["check_options", "checked_config"]

F = TypeVar("F", bound=Callable[..., Any])


def check_options(command: F) -> F:
    """Add ``--verify CMD``, ``--fix CMD``, ``--fix-attempts N``, ``--verify-retries K``,
    ``--bisect/--no-bisect``, ``--replay-culprits N``,
    ``--resolve CMD`` and ``--replay-conflicts N`` to *command*."""
    options = [
        click.option(
            "--verify",
            "verify_command",
            metavar="CMD",
            help="The project's checks, run on the integration head after every wave's "
            "merges; a later wave starts only once they pass.",
        ),
        click.option(
            "--fix",
            "fix_command",
            metavar="CMD",
            help="Run when the checks fail, in a worktree of the integration head "
            "($RHO_VERIFY_LOG: their output); its changes are merged and the checks run again.",
        ),
        click.option(
            "--fix-attempts",
            type=click.IntRange(1, 100),
            metavar="N",
            help="Times the fix may run for one wave [default: 3].",
        ),
        click.option(
            "--verify-retries",
            type=click.IntRange(0, 10),
            metavar="K",
            help="Run failing checks again on the same tree, up to K times, before anyone is "
            "blamed or a fix runs; a pass then is counted flaky [default: 0].",
        ),
        click.option(
            "--bisect/--no-bisect",
            "bisect",
            default=None,
            help="When the checks fail on a join's merged head, run them on the wave's base and "
            "on prefixes of its merge order to find the tasks that broke them: those fail, the "
            "rest lands [default: --bisect]. --no-bisect stops the mission at that wave.",
        ),
        click.option(
            "--replay-culprits",
            type=click.IntRange(0, 100),
            metavar="N",
            help="Run a task the bisection blamed again on the head without it "
            "($RHO_VERIFY_LOG: the failed checks' output), at most N times; work that passes "
            "the checks lands in the same join [default: 0].",
        ),
        click.option(
            "--resolve",
            "resolve_command",
            metavar="CMD",
            help="Run when a task's merge conflicts at a join, in a worktree holding the "
            "conflict ($RHO_CONFLICT_FILE: what met what); what it leaves, with no conflict "
            "marker, is merged and the task is not run again.",
        ),
        click.option(
            "--replay-conflicts",
            type=click.IntRange(0, 100),
            metavar="N",
            help="Run a task whose merge conflicts again from the joined head "
            "($RHO_REPLAY=1), at most N times, in the same run [default: 0].",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def checked_config(
    config: MissionConfig,
    verify_command: str | None,
    fix_command: str | None,
    fix_attempts: int | None,
    resolve_command: str | None = None,
    replay_conflicts: int | None = None,
    verify_retries: int | None = None,
    bisect: bool | None = None,
    replay_culprits: int | None = None,
) -> MissionConfig:
    """*config* with the options given (each replaces the mission's own, as at resume).

    Raises:
        click.UsageError: a fix with nothing to verify, or fix attempts with no fix.
    """
    changes: dict[str, object] = {
        "verify_command": verify_command,
        "fix_command": fix_command,
        "max_fix_attempts": fix_attempts,
        "resolve_command": resolve_command,
        "replay_conflicts": replay_conflicts,
        "verify_retries": verify_retries,
        "bisect": bisect,
        "replay_culprits": replay_culprits,
    }
    merged = config.model_copy(update={k: v for k, v in changes.items() if v is not None})
    if fix_command is not None and not merged.verify_command:
        raise click.UsageError("--fix needs --verify: the fix repairs what the checks found")
    if fix_attempts is not None and not merged.fix_command:
        raise click.UsageError("--fix-attempts needs --fix")
    if replay_culprits and not (merged.verify_command and merged.bisect):
        raise click.UsageError(
            "--replay-culprits needs --verify and bisection: it replays the tasks it blamed"
        )
    if verify_retries and not merged.verify_command:
        raise click.UsageError("--verify-retries needs --verify: it runs failing checks again")
    if resolve_command is not None and not resolve_command.strip():
        raise click.UsageError("--resolve needs a command: the resolver's command line")
    return merged
