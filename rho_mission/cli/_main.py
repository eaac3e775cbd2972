"""The ``rho`` root group and the one place where errors become exit codes.

Subcommand groups load lazily: ``rho task ready --json`` must not import git, anyio or rich.
Every command joins its group explicitly (``_NOUNS`` here; a group's own module defines its
own commands on it), never by the side effect of importing another module.

Decision: docs/decisions/0804-quick-lane.md
"""

from __future__ import annotations

import importlib
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from ._errors import describe
from ._plain import shown

__all__ = ["cli", "main"]

# click >= 8.2 raises this for a group called without a subcommand; older click printed help.
_BARE_GROUP: Any = getattr(click.exceptions, "NoArgsIsHelpError", ())

# Each noun: the group, then the commands of other modules that are added to it here (and the
# hot commands of the noun, made from their table: ``_hotclick``). Such a module neither imports
# the group nor adds itself to it: no command joins a group by the side effect of an import,
# and no module of the CLI imports in a circle.
_NOUNS = {
    "agents": ("rho_mission.cli._agents:agents",),
    "cloud": ("rho_mission.cli._graph:cloud",),
    "doctor": ("rho_mission.cli._doctor:doctor",),
    "graph": (
        "rho_mission.cli._graph:graph",
        "rho_mission.cli._swarm:verify_swarm",
        "rho_mission.cli._swarm:sign_swarm",
    ),
    "mcp": ("rho_mission.cli._mcp:mcp",),
    "mission": (
        "rho_mission.cli._mission:mission",
        "rho_mission.cli._mission_tools:log",
        "rho_mission.cli._mission_tools:conflicts",
        "rho_mission.cli._mission_tools:merge",
        "rho_mission.cli._mission_tools:diff",
        "rho_mission.cli._mission_tools:clean",
        "rho_mission.cli._plan:plan",
        "rho_mission.cli._report:report",
        "rho_mission.cli._mission_stats:stats",
    ),
    "serve": ("rho_mission.cli._serve:serve",),
    "task": ("rho_mission.cli._task:task",),
    "worktrees": ("rho_mission.cli._worktrees:worktrees",),
}


class _LazyGroup(click.Group):
    """A group whose subcommands are imported only when invoked (or listed by --help)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *_NOUNS])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = _NOUNS.get(cmd_name)
        if found is None:
            return super().get_command(ctx, cmd_name)
        target, *adding = found
        command = _imported(target)
        if isinstance(command, click.Group):
            from ._hotclick import hot_click_commands

            for extra in [*map(_imported, adding), *hot_click_commands(cmd_name)]:
                command.add_command(extra)
        return command


def _imported(location: str) -> click.Command:
    """The command at ``module:attribute``."""
    module, _, attribute = location.partition(":")
    command: click.Command = getattr(importlib.import_module(module), attribute)
    return command


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--store",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Task store file (default: <repo>/.rho/tasks.json, or $RHO_TASK_STORE).",
)
@click.option("--debug", is_flag=True, help="Show the traceback of an error.")
@click.version_option(package_name="rho-mission", prog_name="rho")
@click.pass_context
def cli(ctx: click.Context, store: Path | None, debug: bool) -> None:
    """rho: run a task graph as waves of isolated git worktrees.

    Example: rho task add "Write the parser" && rho task ready --json
    """
    ctx.obj = {"store": store, "debug": debug}


def main(argv: Sequence[str] | None = None) -> None:
    """Run ``rho`` and exit with its code: 0 ok, 1 failed work, 2 bad input, 130 cancelled."""
    args = list(sys.argv[1:] if argv is None else argv)
    sys.exit(run(args))


def run(args: list[str]) -> int:
    """Run ``rho`` with *args* and return the exit code instead of exiting."""
    debug = "--debug" in args
    try:
        result = cli.main(args=args, prog_name="rho", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("error: cancelled", err=True)
        return 130
    except click.UsageError as exc:
        if isinstance(exc, _BARE_GROUP) and exc.ctx is not None:
            # `rho` or `rho task` alone: show the help, as click < 8.2 did, rather than an
            # "error:" line made of the help's first line.
            click.echo(exc.ctx.get_help())
            return 0
        _report(exc, debug, f"error: {exc.format_message()}", _usage_hint(exc))
        return 2
    except Exception as exc:
        message, code, is_bug = describe(exc)
        hint = "this is a bug in rho; rerun with --debug for the traceback" if is_bug else None
        hint = getattr(exc, "hint", None) or hint  # an error may say what to do about it
        _report(exc, debug, f"error: {message}", hint)
        return code
    return result if isinstance(result, int) else 0


def _usage_hint(exc: click.UsageError) -> str | None:
    if exc.ctx is None:
        return None
    return f"run '{exc.ctx.command_path} --help' for usage"


def _report(exc: BaseException, debug: bool, line: str, hint: str | None) -> None:
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    # One line, nothing obeyed: a message may quote what a task chose (a file's name).
    click.echo(shown(line.rstrip("\n")) if line else "error", err=True)
    if hint:
        click.echo(f"hint: {hint}", err=True)
