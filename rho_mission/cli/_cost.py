"""What a mission may spend and who spends it, shared by ``rho mission`` and ``resume``:
``--agent``, ``--planner-agent``, ``--resolve-agent`` (agents by name, ``rho_mission.agents``),
``--require-changes``
and ``--budget-usd``, ``--budget-tokens``, ``--budget-hard`` (``engine._budget``).

Decision: docs/decisions/0509-usage-and-budgets.md
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..agents import PROFILES
from ..records._usagelimits import MAX_COST_USD, MAX_TOKENS
from ._errors import CliError

if TYPE_CHECKING:
    from ..records._document import MissionConfig

__all__ = [
    "agent_config",
    "agent_options",
    "agents_task_timeout",
    "budget_config",
    "budget_options",
    "refuse_offline_agents",
]

F = TypeVar("F", bound=Callable[..., Any])
_NAMES = click.Choice(sorted(PROFILES))


def agent_options(command: F) -> F:
    """Add ``--agent``, ``--planner-agent``, ``--resolve-agent`` and ``--require-changes``
    to *command*."""
    options = [
        click.option(
            "--agent",
            type=_NAMES,
            help="The tasks' agent by name: its command line (instead of --run), its "
            "machine-readable output and the reader of what it spent ('rho agents' lists them).",
        ),
        click.option(
            "--planner-agent",
            type=_NAMES,
            help="The planner by name (instead of --planner CMD).",
        ),
        click.option(
            "--resolve-agent",
            type=_NAMES,
            help="The resolver of conflicted merges by name (instead of --resolve CMD).",
        ),
        click.option(
            "--require-changes/--no-require-changes",
            default=None,
            help="Fail a task's attempt that changed no file (default: on with --agent, whose "
            "agent may exit 0 having done nothing; off otherwise).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


class _Dollars(click.FloatRange):
    """A dollar budget: a number above 0 and at most ``MAX_COST_USD``. click's range lets
    ``nan`` through (it compares false with both ends): a budget nothing ever reaches."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """*value* as a float in the range, or the usage error that says why not."""
        number = super().convert(value, param, ctx)
        if math.isnan(number):
            self.fail(f"{value} is not a number in the range 0<x<={MAX_COST_USD}.", param, ctx)
        return number


def budget_options(command: F) -> F:
    """Add ``--budget-usd``, ``--budget-tokens`` and ``--budget-hard`` to *command*."""
    options = [
        click.option(
            "--budget-usd",
            type=_Dollars(min=0, min_open=True, max=MAX_COST_USD),
            metavar="X",
            help="Start no attempt once the recorded spend reaches X dollars; the mission ends "
            "partial, resumable with a higher budget.",
        ),
        click.option(
            "--budget-tokens",
            type=click.IntRange(min=1, max=MAX_TOKENS),
            metavar="N",
            help="The same for N tokens (read and written).",
        ),
        click.option(
            "--budget-hard",
            is_flag=True,
            default=None,
            help="With a budget: stop running attempts too once it is reached (as a timeout).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def agent_config(
    options: dict[str, Any], *, planner: str | None = None, sandbox: bool = False
) -> tuple[dict[str, object], str | None]:
    """The config fields of the agent options in *options* (their command lines among them:
    each profile's line inside rho's sandbox when *sandbox*, else outside), and the
    planner's command line (*planner*, or the planner profile's).

    Raises:
        click.UsageError: an agent and the command it stands for both given.
    """
    fields: dict[str, object] = {}
    agent, planner_agent = options.pop("agent"), options.pop("planner_agent")
    resolve_agent, require_changes = options.pop("resolve_agent"), options.pop("require_changes")
    for option, name, command, flag in (
        ("--agent", agent, options.get("run_command"), "--run"),
        ("--planner-agent", planner_agent, planner, "--planner"),
        ("--resolve-agent", resolve_agent, options.get("resolve_command"), "--resolve"),
    ):
        if name is not None and command is not None:
            raise click.UsageError(f"{option} and {flag} both name a command: pass one")
    if agent is not None:
        options["run_command"] = PROFILES[agent].line(sandbox)
        fields["agent"] = agent
    if resolve_agent is not None:
        options["resolve_command"] = PROFILES[resolve_agent].line(sandbox)
        fields["resolve_agent"] = resolve_agent
    if planner_agent is not None:
        planner = PROFILES[planner_agent].line(sandbox)
        fields["planner_agent"] = planner_agent
    fields["require_changes"] = agent is not None if require_changes is None else require_changes
    return fields, planner


_AGENT_FIELDS = {
    "agent": "--agent",
    "resolve_agent": "--resolve-agent",
    "planner_agent": "--planner-agent",
}


def agents_task_timeout(fields: dict[str, object]) -> float | None:
    """The --task-timeout of a mission whose agent fields (``agent_config``) are *fields*
    and that gave none: the longest of its agents' profiles (it bounds each attempt, a
    stage's too); None when it names no agent."""
    names = [fields[key] for key in _AGENT_FIELDS if key in fields]
    return max((PROFILES[str(name)].task_timeout for name in names), default=None)


def refuse_offline_agents(fields: dict[str, object], no_network: bool) -> None:
    """Refuse an agent by name under --sandbox-no-network: every profile reaches its model
    over the network, which the sandbox then takes away (the agent would retry until its
    time limit, and fail saying only that it timed out).

    Raises:
        CliError: an agent named with --sandbox-no-network.
    """
    named = [(option, fields[key]) for key, option in _AGENT_FIELDS.items() if key in fields]
    if no_network and named:
        option, name = named[0]
        raise CliError(
            f"{option} {name} reaches its model over the network, and --sandbox-no-network "
            "takes the network from the tasks",
            hint="use --sandbox (the network stays, the rest is kept out); a sandbox that "
            "lets a task reach only its model's host would need a proxy into the sandbox's "
            "network namespace, which rho does not have",
        )


def budget_config(
    config: MissionConfig,
    budget_usd: float | None,
    budget_tokens: int | None,
    budget_hard: bool | None,
) -> MissionConfig:
    """*config* with the budgets given (each replaces the mission's own: a resume may raise
    them).

    Raises:
        click.UsageError: --budget-hard with no budget.
    """
    changes = {"budget_usd": budget_usd, "budget_tokens": budget_tokens, "budget_hard": budget_hard}
    merged = config.model_copy(update={k: v for k, v in changes.items() if v is not None})
    if merged.budget_hard and merged.budget_usd is None and merged.budget_tokens is None:
        raise click.UsageError("--budget-hard needs --budget-usd or --budget-tokens")
    return merged
