"""``rho mission ...``: run, resume, show and list missions.

Decision: docs/decisions/0508-mission-commands.md
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ._checks import check_options, checked_config
from ._cost import (
    agent_config,
    agent_options,
    agents_task_timeout,
    budget_config,
    budget_options,
    refuse_offline_agents,
)
from ._errors import CliError
from ._executors import executor_from, executor_options
from ._paths import command_store_path, find_repo_root
from ._setup import setup_config, setup_options

if TYPE_CHECKING:
    from rho_mission.executors import Executor

    from ..mission._mission import Mission
    from ..records._document import MissionConfig

__all__ = ["mission"]

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}


def _duration(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    """Parse ``90``, ``90s``, ``500ms``, ``5m``, ``1.5h`` or ``7d`` into seconds."""
    if value is None:
        return None
    match = _DURATION.match(value)
    if match is None or float(match.group(1)) <= 0:
        raise click.BadParameter(f"{value!r} is not a duration like 90, 90s, 5m or 1.5h")
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]


F = TypeVar("F", bound=Callable[..., Any])


def claim_options(command: F) -> F:
    """Add ``--include-claimed`` and ``--claim-ttl D`` to *command* (a mission over the store)."""
    command = click.option(
        "--claim-ttl",
        callback=_duration,
        metavar="D",
        help="Age after which an agent's claim of a task lapses, so that a mission may run it "
        "[default: 24h].",
    )(command)
    return click.option(
        "--include-claimed",
        is_flag=True,
        help="Run tasks that agents have claimed in the task store (in_progress, an owner).",
    )(command)


def claims_config(include: bool, ttl: float | None) -> dict[str, object]:
    """The config fields the claim options give (a resume keeps those not given)."""
    fields: dict[str, object] = {"include_claimed": True} if include else {}
    if ttl is not None:
        fields["claim_ttl"] = ttl
    return fields


_SIZE = re.compile(r"^\s*(\d+)\s*([KMG]i?B?|B)?\s*$", re.IGNORECASE)
_UNIT_BYTES = {"": 1, "B": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


def _http_url(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None and not re.fullmatch(r"https?://\S+", value):
        raise click.BadParameter("give an http:// or https:// URL", ctx=ctx, param=param)
    return value


def _size(ctx: click.Context, param: click.Parameter, value: str) -> int:
    """Parse ``4096``, ``512K``, ``16M`` or ``1G`` (binary units; ``KiB``, ``MB`` too)."""
    match = _SIZE.match(value)
    if match is None:
        raise click.BadParameter(f"{value!r} is not a size like 4096, 512K, 16M or 1G")
    unit = (match.group(2) or "").upper()[:1]
    size = int(match.group(1)) * _UNIT_BYTES[unit]
    if size < 4096:
        raise click.BadParameter(f"{value!r} is below the smallest log limit, 4K")
    return size


class _MissionGroup(click.Group):
    """``rho mission``'s group: a first argument that names no subcommand is a prompt.

    ``rho mission "PROMPT" --planner CMD`` plans a mission from the prompt; the prompt is taken
    out before click reads the options (a group stops reading options at its first argument).
    A prompt that is exactly a subcommand's name (``list``, ``show``...) names that command,
    unless it comes after ``--``.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        prompt, rest = self._split_prompt(ctx, args)
        ctx.meta[_PROMPT_KEY] = prompt
        return super().parse_args(ctx, rest)

    def _split_prompt(self, ctx: click.Context, args: list[str]) -> tuple[str | None, list[str]]:
        valued = {
            name
            for param in self.get_params(ctx)
            if isinstance(param, click.Option) and not param.is_flag and not param.count
            for name in param.opts
        }
        at = 0
        while at < len(args):
            arg = args[at]
            if arg == "--":
                return (
                    (args[at + 1], args[:at] + args[at + 2 :])
                    if at + 1 < len(args)
                    else (
                        None,
                        args,
                    )
                )
            if arg.startswith("-") and arg != "-":
                at += 2 if arg in valued else 1
                continue
            if arg in self.commands:
                return None, args
            return arg, args[:at] + args[at + 1 :]
        return None, args


_PROMPT_KEY = "rho.mission.prompt"


@click.group(cls=_MissionGroup, invoke_without_command=True)
@click.option("--from-tasks", is_flag=True, help="Run the task store's tasks as a mission.")
@click.option(
    "--planner",
    "planner_command",
    metavar="CMD",
    default=None,
    help="With a PROMPT: the agent's command line that writes the plan ($RHO_PROMPT_FILE in, "
    "$RHO_PLAN_FILE out), run once before the tasks.",
)
@click.option(
    "--plan-only", is_flag=True, help="With a PROMPT: plan, print the plan, run nothing else."
)
@click.option("--store", "store_path", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--run", "run_command", default=None, help="Command for tasks without their own.")
@click.option("--workers", type=click.IntRange(1, 64), default=4, show_default=True)
@click.option("--retries", type=click.IntRange(0, 100), default=0, show_default=True)
@click.option("--timeout", callback=_duration, help="Mission time limit (90s, 5m, 1h).")
@click.option("--task-timeout", callback=_duration, help="Per-task time limit (90s, 5m).")
@click.option("--base", default=None, help="Commit the mission starts from [default: HEAD].")
@click.option(
    "--continue",
    "continue_from",
    metavar="MISSION",
    default=None,
    help="Start from that mission's integration branch (an id, a prefix, or 'latest').",
)
@click.option(
    "--grace",
    callback=_duration,
    default="5s",
    show_default=True,
    help="Time a cancelled task gets between SIGTERM and SIGKILL.",
)
@click.option(
    "--keep-going",
    is_flag=True,
    help="After a failure, still run the tasks that do not depend on it (like make -k).",
)
@click.option("--keep-worktrees", is_flag=True, help="Leave the worktrees for inspection.")
@click.option(
    "--takeover", is_flag=True, help="Run tasks leased to an interrupted mission (not resumed)."
)
@claim_options
@click.option(
    "--require-signed-plan",
    "signed_plan",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Run only if the task store is what this signed plan allows ('rho mission plan').",
)
@click.option(
    "--trusted-key",
    "trusted",
    multiple=True,
    metavar="HEX",
    help="Ed25519 public key the signed plan must be signed by (repeatable; default: "
    "$RHO_SWARM_TRUSTED_KEYS, comma-separated).",
)
@click.option(
    "--sandbox",
    is_flag=True,
    help="Run each task under bubblewrap: its worktree writable, the store, mission records, "
    "your checkout and .git out of its reach.",
)
@click.option(
    "--sandbox-no-network",
    "no_network",
    is_flag=True,
    help="--sandbox, and no network for the tasks.",
)
@click.option(
    "--sandbox-allow",
    "sandbox_allow",
    multiple=True,
    type=click.Path(path_type=Path),
    metavar="PATH",
    help="With --sandbox: show PATH (any path) to the tasks read-only although the sandbox "
    "hides it: a script or tool under /tmp (the sandbox's /tmp is private), a secret of the "
    "home folder, a socket, a folder of /run; repeatable.",
)
@click.option(
    "--sandbox-allow-write",
    "sandbox_allow_write",
    multiple=True,
    type=click.Path(path_type=Path),
    metavar="PATH",
    help="With --sandbox: let the tasks write PATH, the real one (changes stay after the "
    "task, and the next task sees them): a cache the tasks share, a tool's state folder. "
    "The agents rho names (--agent...) get a private copy of their own config folders "
    "without it; repeatable.",
)
@click.option(
    "--sandbox-env",
    "sandbox_env",
    multiple=True,
    metavar="NAME,...",
    help="With --sandbox: pass the tasks only these environment variables (and rho's, PATH, "
    "HOME, the locale, the terminal, git's identity); comma-separated, repeatable.",
)
@click.option(
    "--log-limit",
    callback=_size,
    default="16M",
    show_default=True,
    help="Bytes of output a task's log keeps: its first and last half, the cut said in between.",
)
@click.option(
    "--only",
    "only",
    multiple=True,
    metavar="ID",
    help="Run these tasks and their unfinished blockers only (repeatable, or comma-separated).",
)
@click.option(
    "--label",
    "labels",
    multiple=True,
    metavar="LABEL",
    help="Run the tasks with this label and their unfinished blockers (repeatable).",
)
@click.option(
    "--notify",
    "notify_command",
    metavar="CMD",
    help="Run CMD when the mission ends, stops, reaches its budget or a join finds culprits, "
    "with $RHO_EVENT_FILE naming a JSON event (a resume keeps it).",
)
@click.option(
    "--notify-url",
    "notify_url",
    callback=_http_url,
    metavar="URL",
    help="POST the same JSON event to URL.",
)
@click.option(
    "--notify-token-file",
    "notify_token_file",
    type=click.Path(exists=True, dir_okay=False, resolve_path=True),
    metavar="FILE",
    help="With --notify-url: send the token FILE holds as 'Authorization: Bearer TOKEN' (as "
    "rho serve --token-file takes it).",
)
@check_options
@setup_options
@agent_options
@budget_options
@executor_options
@click.option("--dry-run", is_flag=True, help="Show the plan; run and write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the final mission.json on stdout.")
@click.pass_context
def mission(
    ctx: click.Context, /, from_tasks: bool, store_path: Path | None, **options: Any
) -> int:
    """Run the task store as waves of isolated git worktrees, or a PROMPT that a planner turns
    into tasks, or inspect missions.

    With --verify, the project's checks run on the merged result of every wave before the
    next one starts (--fix may repair them).

    Example: rho mission --from-tasks --run "make check" --workers 4 --verify "make test"

    Example: rho mission "Add a --version flag" --planner PLANNER --run AGENT
    """
    if ctx.invoked_subcommand is not None:
        return 0
    prompt = ctx.meta.get(_PROMPT_KEY)
    planning = options["planner_agent"] is not None
    sandbox = bool(options["sandbox"] or options["no_network"])
    planner = options.pop("planner_command")
    agents, planner_command = agent_config(options, planner=planner, sandbox=sandbox)
    options["agents"] = agents
    options["setup"] = setup_config(options)
    plan_only = options.pop("plan_only")
    if prompt is not None or planner_command is not None or plan_only or planning:
        _refuse_with_prompt(from_tasks, store_path, options)
        if prompt is None:
            raise click.UsageError('--planner needs the prompt: rho mission "PROMPT" --planner CMD')
        if planner_command is None:
            raise click.UsageError(
                "a prompt needs --planner CMD (the agent's command line that writes the plan) "
                "or --planner-agent NAME"
            )
        return _run_planned(prompt, planner_command, plan_only, options)
    if not from_tasks:
        raise click.UsageError(
            'nothing to run: pass --from-tasks, or "PROMPT" --planner CMD, or use resume, '
            "show or list"
        )
    return _run_from_tasks(store_path, options)


def _refuse_with_prompt(from_tasks: bool, store_path: Path | None, options: dict[str, Any]) -> None:
    """The options of a store's mission that a planned one has no use for."""
    given = [name for name, value in _STORE_ONLY.items() if options.get(value)]
    if from_tasks:
        given.insert(0, "--from-tasks")
    if store_path is not None:
        given.append("--store")
    if given:
        raise click.UsageError(
            f"{', '.join(given)}: not with a prompt (a planned mission's tasks are its plan's; "
            "'rho task import --from plan FILE' puts a plan in the store)"
        )


_STORE_ONLY = {
    "--only": "only",
    "--label": "labels",
    "--takeover": "takeover",
    "--require-signed-plan": "signed_plan",
    "--dry-run": "dry_run",
}


def _run_planned(
    prompt: str, planner_command: str, plan_only: bool, options: dict[str, Any]
) -> int:
    """``rho mission "PROMPT" --planner CMD``: plan, then run the plan's tasks (see planning)."""
    from rho_mission import Mission

    if options["trusted"]:
        raise click.UsageError("--trusted-key needs --require-signed-plan")
    if not prompt.strip():
        raise CliError("the prompt is empty: say what the mission is to build")
    executor = executor_from(
        options["executor_name"], options["scheduler"], options["local_cluster"], options["remote"]
    )
    repo = _repo_root()
    config = _config(options, planner_command=planner_command)
    start = _start_commit(repo, options["base"], options["continue_from"])
    planned = Mission.new(repo, prompt, config=config, base=start)
    click.echo(f"mission {planned.id}: planning (log: {planned.dir}/logs/plan.log)", err=True)
    if plan_only:
        plan = planned.plan_sync()
        sys.stdout.write(plan.model_dump_json(indent=2) + "\n")
        waves = len(planned.waves)
        bare = [f.id for f in planned.features if not f.command]
        run = " --run CMD" if bare and not planned.config.run_command else ""
        why = f" ({len(bare)} of its tasks have no command: --run names the agent)" if run else ""
        click.echo(
            f"mission {planned.id} planned: {len(planned.features)} task(s) in {waves} wave(s); "
            f"run it with 'rho mission resume {planned.id}{run}'{why}",
            err=True,
        )
        return 0
    _warn_if_records_tracked(repo)
    _warn_if_dirty(repo, start, planned.config.copy_paths)
    return _execute(planned, options["as_json"], executor=executor)


def _config(options: dict[str, Any], **extra: Any) -> MissionConfig:
    """The mission's configuration from the options every run takes, plus *extra* fields.

    Raises:
        click.UsageError: --fix without --verify, or --fix-attempts without --fix.
    """
    from rho_mission import MissionConfig

    if options["notify_token_file"] is not None and options["notify_url"] is None:
        raise click.UsageError("--notify-token-file needs --notify-url URL")
    no_network = options["no_network"]
    refuse_offline_agents(options["agents"], no_network)
    task_timeout = options["task_timeout"]
    if task_timeout is None:
        task_timeout = agents_task_timeout(options["agents"])
    config = MissionConfig(
        max_workers=options["workers"],
        retries=options["retries"],
        timeout=options["timeout"],
        task_timeout=task_timeout,
        grace_period=options["grace"],
        keep_going=options["keep_going"],
        keep_worktrees=options["keep_worktrees"],
        run_command=options["run_command"],
        sandbox=options["sandbox"] or no_network,
        sandbox_network=not no_network,
        **_sandbox_reach(options),
        log_limit=options["log_limit"],
        notify_command=options["notify_command"],
        notify_url=options["notify_url"],
        notify_token_file=options["notify_token_file"],
        **options["agents"],
        **options["setup"],
        **extra,
    )
    config = budget_config(
        config, options["budget_usd"], options["budget_tokens"], options["budget_hard"]
    )
    verify, fix = options["verify_command"], options["fix_command"]
    return checked_config(
        config,
        verify,
        fix,
        options["fix_attempts"],
        options["resolve_command"],
        options["replay_conflicts"],
        options["verify_retries"],
        options["bisect"],
        options["replay_culprits"],
    )


def _sandbox_reach(options: dict[str, Any]) -> dict[str, Any]:
    """``sandbox_allow``, ``sandbox_allow_write`` and ``sandbox_env`` from ``--sandbox-allow``,
    ``--sandbox-allow-write`` and ``--sandbox-env``.

    Raises:
        click.UsageError: one without --sandbox, or a blank or relative name in them.
    """
    allowed, named = options["sandbox_allow"], options["sandbox_env"]
    write = options["sandbox_allow_write"]
    sandbox = options["sandbox"] or options["no_network"]
    if (allowed or named or write) and not sandbox:
        which = (
            "--sandbox-allow" if allowed else "--sandbox-allow-write" if write else "--sandbox-env"
        )
        raise click.UsageError(f"{which} needs --sandbox: it says what the sandbox shows")
    names = [name.strip() for value in named for name in value.split(",")]
    if any(not name or "=" in name for name in names):
        raise click.UsageError("--sandbox-env takes variable names, comma-separated")
    paths = [os.path.abspath(path) for path in allowed]
    writable = sorted({os.path.abspath(path) for path in write})
    if writable:
        _refuse_writing_the_repository(writable, _repo_root())
    return {
        "sandbox_allow": sorted(set(paths)),
        "sandbox_allow_write": writable,
        "sandbox_env": sorted(set(names)) if named else None,
    }


def _refuse_writing_the_repository(paths: list[str], repo: Path) -> None:
    """Refuse a ``--sandbox-allow-write`` path that holds the repository or lies in it: its
    ``.git``, its store and the user's checkout stay out of the tasks' reach.

    Raises:
        click.UsageError: such a path.
    """
    root = Path(os.path.realpath(repo))
    for path in paths:
        real = Path(os.path.realpath(path))
        if root.is_relative_to(real) or real.is_relative_to(root):
            raise click.UsageError(
                f"--sandbox-allow-write {path}: the sandbox keeps the repository ({repo}) out "
                "of the tasks' reach; name a folder outside it"
            )


def _run_from_tasks(store_path: Path | None, options: dict[str, Any]) -> int:
    """``rho mission --from-tasks``: the store's unfinished tasks as a mission."""
    from rho_mission import NothingToRunError, mission_from_tasks
    from taskstore import ScheduleError

    signed_plan: Path | None = options["signed_plan"]
    keys = _plan_keys(signed_plan, options["trusted"])
    executor = executor_from(
        options["executor_name"], options["scheduler"], options["local_cluster"], options["remote"]
    )
    repo = _repo_root()
    config = _config(
        options,
        takeover=options["takeover"],
        **claims_config(options["include_claimed"], options["claim_ttl"]),
        signed_plan=None if signed_plan is None else str(signed_plan),
        trusted_keys=keys,
    )
    store = command_store_path(store_path)
    start = _start_commit(repo, options["base"], options["continue_from"])
    as_json: bool = options["as_json"]
    try:
        planned = mission_from_tasks(
            store,
            repo,
            config,
            base=start,
            only=split_ids(options["only"]),
            labels=options["labels"],
        )
    except ScheduleError as exc:
        raise CliError(f"validate task schedule: {exc}") from exc
    except NothingToRunError as exc:
        # Not a mistake: nothing was created, and nothing needs doing.
        if as_json:  # stdout holds one JSON document, as for every --json
            sys.stdout.write(json.dumps({"mission": None, "nothing_to_run": str(exc)}) + "\n")
        else:
            click.echo(str(exc))
        return 0
    planned.check_runnable()
    # The warnings a run would print, a dry run too: what it shows is what would happen.
    _warn_if_records_tracked(repo)
    _warn_if_dirty(repo, start, planned.config.copy_paths)
    if options["dry_run"]:
        _warn_of_budget(planned)
        return _print_plan(planned, as_json)
    _print_held(planned, err=True)  # before the progress display takes the terminal
    return _execute(planned, as_json, executor=executor)


def _warn_of_budget(target: Mission) -> None:
    """Said before the run, where it can still be acted on (Ctrl-C, name the agent)."""
    from ..engine._budget import budget_warnings

    for problem in budget_warnings(target.config):
        click.echo(f"warning: {problem}", err=True)


def _warn_if_dirty(repo: Path, start: str, copied: Sequence[str] = ()) -> None:
    """One line when the checkout holds changes and the mission starts from its HEAD: the
    tasks' worktrees are made from the commit, without them. The ``--copy`` files are left
    out: they reach the worktrees, and are not to be committed (a secret, as a rule)."""
    from ..git._repo import GitRepo
    from ..mission._merge import uncommitted_paths

    git = GitRepo.open(repo)
    if start != "HEAD" and git.commit_id(start) != git.commit_id("HEAD"):
        return
    paths = [path for path in uncommitted_paths(git) if path not in copied]
    if paths:
        click.echo(
            f"warning: {len(paths)} file(s) of your checkout hold changes no commit has (such as "
            f"{paths[0]}); the mission starts from HEAD without them: commit them first if its "
            "tasks need them",
            err=True,
        )


def _warn_if_records_tracked(repo: Path) -> None:
    from ..git._repo import GitRepo
    from ..mission._merge import tracked_records, tracked_records_message

    tracked = tracked_records(GitRepo.open(repo))
    if tracked:
        click.echo(f"warning: {tracked_records_message(tracked)}", err=True)


def split_ids(values: tuple[str, ...]) -> list[str]:
    """Ids given as repeated options, each possibly a comma-separated list."""
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def _plan_keys(signed_plan: Path | None, trusted: tuple[str, ...]) -> list[str]:
    """The keys a signed plan must verify against (flags, else $RHO_SWARM_TRUSTED_KEYS)."""
    if signed_plan is None:
        if trusted:
            raise click.UsageError("--trusted-key needs --require-signed-plan")
        return []
    from ._swarm import checked_keys, trusted_keys_from

    return checked_keys(trusted_keys_from(trusted))


def _start_commit(repo: Path, base: str | None, continue_from: str | None) -> str:
    """``--base``, or the integration branch of the ``--continue`` mission, or HEAD."""
    if continue_from is None:
        return base or "HEAD"
    if base is not None:
        raise click.UsageError("pass --base or --continue, not both")
    from rho_mission import Mission, resolve_mission

    earlier = Mission.load(resolve_mission(repo, continue_from))
    return earlier.integration_branch


def _repo_root() -> Path:
    root = find_repo_root()
    if root is None:
        raise CliError(f"not a git repository: {Path.cwd()}")
    return root


def _print_plan(planned: Mission, as_json: bool) -> int:
    from ._plan_view import plan_text, settings_lines, stage_lines

    if as_json:
        sys.stdout.write(planned.model_dump_json(indent=2) + "\n")
        return 0
    click.echo("\n".join(plan_text(planned)))
    _print_held(planned)
    for line in (*stage_lines(planned.config), *settings_lines(planned.config)):
        click.echo(line)
    return 0


def _print_held(planned: Mission, *, err: bool = False) -> None:
    from ._plain import natural_key, shown

    if planned.held:
        click.echo(
            f"not run ({len(planned.held)} held by the task store: its statuses, agents' claims):",
            err=err,
        )
        for held in sorted(planned.held, key=lambda h: natural_key(h.id)):
            click.echo(f"  {held.id}: {shown(held.reason)}", err=err)


def _execute(
    target: Mission, as_json: bool, resume: bool = False, executor: Executor | None = None
) -> int:
    import anyio

    from ._plain import shown
    from ._progress import LiveProgress, progress_for

    _warn_of_budget(target)
    progress = progress_for(target, as_json)

    async def main() -> None:
        async with anyio.create_task_group() as group:
            run_scope = anyio.CancelScope()
            await group.start(_handle_signals, run_scope, target)
            with run_scope:
                if resume:
                    # A --from-tasks mission picks up fixed commands and texts from the store.
                    refresh = bool(target.config.task_store)
                    await target.resume(observer=progress, refresh=refresh, executor=executor)
                else:
                    await target.run_staged(
                        waves=target.waves or None, observer=progress, executor=executor
                    )
            group.cancel_scope.cancel()

    if isinstance(progress, LiveProgress):
        with progress:
            _run_event_loop(main)
    else:
        _run_event_loop(main)
    for problem in target.warnings:
        click.echo(f"warning: {shown(problem)}", err=True)  # it may name a task's file
    return _finish(target, as_json)


def _run_event_loop(main: Callable[[], Awaitable[None]]) -> None:
    """Run *main*; a lone error out of its task group is raised as itself.

    The task group wraps even one error (``mission ... is already running``, an empty plan) in
    an exception group, which the CLI would report as an unexpected bug (exit 1) instead of
    that error's own line and exit code.
    """
    import anyio

    try:
        anyio.run(main)
    except BaseExceptionGroup as group:
        error: BaseException = group
        while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
            error = error.exceptions[0]
        if error is group:
            raise
        raise error from error.__cause__


async def _handle_signals(run_scope: Any, target: Mission, *, task_status: Any) -> None:
    """First SIGINT/SIGTERM: cancel the run (SIGTERM, grace, SIGKILL; the record is written).
    Any later one: SIGKILL every process of the mission at once, and keep sweeping until the
    run has recorded its end, so that no process outlives it however many signals come.

    Lives outside the run's cancel scope: the receiver stays installed until the end, so a
    second signal never reaches Python's default handlers (KeyboardInterrupt, or death by
    SIGTERM) in the middle of the shielded clean-up.
    """
    import anyio

    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        task_status.started()
        received = 0
        async with anyio.create_task_group() as sweeper:
            async for _ in signals:
                received += 1
                if received == 1:
                    run_scope.cancel()
                elif received == 2:
                    sweeper.start_soon(_kill_until_done, target)


async def _kill_until_done(target: Mission) -> None:
    import anyio

    # Until the run ends: a task spawned as the first signal arrived is caught too.
    while True:
        target.kill_processes()
        await anyio.sleep(0.1)


def _finish(target: Mission, as_json: bool) -> int:
    if as_json:
        sys.stdout.write(target.model_dump_json(indent=2) + "\n")
    else:
        click.echo(f"mission {target.id} {target.status}: {target.dir}")
    from ._mission_names import next_commands

    for line in next_commands(target):
        click.echo(line, err=as_json)  # with --json, stdout holds the document alone
    return {"completed": 0, "cancelled": 130}.get(target.status, 1)


@mission.command("resume")
@click.argument("name", metavar="MISSION")
@click.option("--run", "run_command", default=None, help="New command for tasks without their own.")
@check_options
@budget_options
@claim_options
@executor_options
@click.option("--json", "as_json", is_flag=True, help="Print the final mission.json on stdout.")
def resume(
    name: str,
    run_command: str | None,
    verify_command: str | None,
    fix_command: str | None,
    fix_attempts: int | None,
    resolve_command: str | None,
    replay_conflicts: int | None,
    verify_retries: int | None,
    bisect: bool | None,
    replay_culprits: int | None,
    budget_usd: float | None,
    budget_tokens: int | None,
    budget_hard: bool | None,
    include_claimed: bool,
    claim_ttl: float | None,
    executor_name: str,
    scheduler: str | None,
    local_cluster: int | None,
    remote: str | None,
    as_json: bool,
) -> int:
    """Continue a failed, cancelled or crashed mission from its first unfinished wave.

    MISSION is a folder, a mission id, a unique prefix of one, or 'latest'. A mission made
    from the task store first takes the fixed commands and texts of its unfinished tasks. A
    wave whose checks failed (--verify) is checked again first, on the integration branch as
    it is now: fix it there by hand, or let --fix try again. --verify, --fix,
    --fix-attempts, --resolve, --replay-conflicts and the budgets replace the mission's own
    (a mission a budget stopped goes on with a higher one: --budget-usd X).

    Example: rho mission resume latest
    """
    from ._mission_names import load_mission

    executor = executor_from(executor_name, scheduler, local_cluster, remote)
    target = load_mission(name)
    config = checked_config(
        target.config,
        verify_command,
        fix_command,
        fix_attempts,
        resolve_command,
        replay_conflicts,
        verify_retries,
        bisect,
        replay_culprits,
    )
    if run_command is not None:
        config = config.model_copy(update={"run_command": run_command})
    config = config.model_copy(update=claims_config(include_claimed, claim_ttl))
    config = budget_config(config, budget_usd, budget_tokens, budget_hard)
    target.config = config
    return _execute(target, as_json, resume=True, executor=executor)
