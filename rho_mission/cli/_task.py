"""``rho task ...``: the task store from the command line.

The ``ready`` and ``waves`` commands read through ``taskstore.read_task_views`` and print JSON
with the stdlib, so that agents polling ``rho task ready --json`` pay for neither pydantic nor
rich (their plain spellings do not even load click: see ``_quick``, which builds the JSON
documents for both lanes). People's views are plain text built by ``_tasktext`` for both lanes;
``add`` and ``update`` take the quick lane too when the store is one rho wrote. Everything else,
and ``ready --sort priority`` (priorities live in ``metadata``), loads the full model.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from taskstore import DEPENDENCY_TYPES, PRIORITIES, STATUSES

from ._errors import CliError
from ._paths import command_store_path
from ._quick import list_title, print_json, ready_document, waves_document
from ._tasktext import changed_line, ready_text, task_detail, task_table, waves_to_run_text

if TYPE_CHECKING:
    from taskstore import Schedule, Task, TaskInUseError, TaskStore

__all__ = ["task"]

F = TypeVar("F", bound=Callable[..., Any])


def _store_option(command: F) -> F:
    return click.option(
        "--store",
        "store_path",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Task store file (overrides rho --store and $RHO_TASK_STORE).",
    )(command)


def _json_option(command: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")(command)


_PRIORITY = click.IntRange(min(PRIORITIES), max(PRIORITIES))
_LINK_TYPE = click.Choice(DEPENDENCY_TYPES)
# How a dependency reads from the side of the task that holds it.
_READS_AS = {"blocks": "blocked by", "related": "related to", "parent-child": "subtask of"}


def _triage_options(command: F) -> F:
    command = click.option(
        "--label", "labels", multiple=True, metavar="NAME", help="Add a label (repeatable)."
    )(command)
    return click.option(
        "--priority", type=_PRIORITY, default=None, help="0 (highest) to 4; a new task gets 2."
    )(command)


def _open_store(store_path: Path | None) -> TaskStore:
    """The store to read: one named by ``--store`` or the environment must exist."""
    from taskstore import TaskStore

    return TaskStore(command_store_path(store_path, reading=True))


def _store_to_write(store_path: Path | None) -> TaskStore:
    """The store to change (created when missing); the repository's ``.rho/`` kept out of git
    from rho's first write there."""
    from taskstore import TaskStore

    from ..git._exclude import exclude_rho_of_store

    path = command_store_path(store_path)
    exclude_rho_of_store(path)
    return TaskStore(path)


def _schedule(tasks: Sequence[Any]) -> Schedule[Any]:
    from taskstore import ScheduleError, compute_schedule

    try:
        return compute_schedule(tasks)
    except ScheduleError as exc:
        raise CliError(f"validate task schedule: {exc}") from exc


@click.group()
def task() -> None:
    """Read and change the task store.

    Example: rho task add "Parse input" --command "make parser"
    """


@task.command("add")
@click.argument("subject")
@click.option("--description", default="", help="Longer text: what done looks like.")
@click.option("--blocked-by", multiple=True, metavar="ID", help="A task that must finish first.")
@click.option("--related", multiple=True, metavar="ID", help="A related task (no scheduling).")
@click.option("--parent", default=None, metavar="ID", help="Make this a subtask of ID.")
@click.option("--command", "command", default=None, help="Shell command a mission runs.")
@_triage_options
@_store_option
@_json_option
def add(
    subject: str,
    description: str,
    blocked_by: tuple[str, ...],
    related: tuple[str, ...],
    parent: str | None,
    command: str | None,
    priority: int | None,
    labels: tuple[str, ...],
    store_path: Path | None,
    as_json: bool,
) -> None:
    """Add a pending task and print its id.

    Example: rho task add "Write tests" --blocked-by task_1 --priority 1 --label tests
    """
    created = _store_to_write(store_path).add(
        subject,
        description=description,
        blocked_by=blocked_by,
        related=related,
        parent=parent,
        command=command,
        priority=priority,
        labels=labels,
    )
    _emit_task(created, as_json, "added")


@task.command("list")
@click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice(sorted(STATUSES)),
    help="Only tasks with this status (repeat for any of several).",
)
@click.option(
    "--label",
    "labels",
    multiple=True,
    metavar="NAME",
    help="Only tasks with this label (repeated: tasks with all of them).",
)
@click.option("--priority", type=_PRIORITY, default=None, help="Only tasks of this priority.")
@click.option("--wide", is_flag=True, help="Add the labels and command columns.")
@_store_option
@_json_option
def list_(
    statuses: tuple[str, ...],
    labels: tuple[str, ...],
    priority: int | None,
    wide: bool,
    store_path: Path | None,
    as_json: bool,
) -> None:
    """List tasks: id, status, priority, subject and blockers.

    Example: rho task list --status pending --label backend --priority 1
    """
    every = _open_store(store_path).tasks()
    tasks = [
        t
        for t in every
        if (not statuses or t.status in statuses)
        and set(labels) <= set(t.labels)
        and priority in (None, t.priority)
    ]
    if as_json:
        print_json({"tasks": [_dump(t) for t in tasks]})
        return
    sys.stdout.write(task_table([_dump(t) for t in tasks], list_title(tasks, every), wide=wide))


@task.command("show")
@click.argument("task_id", metavar="ID")
@_store_option
@_json_option
def show(task_id: str, store_path: Path | None, as_json: bool) -> None:
    """Show one task.

    Example: rho task show task_3
    """
    found = _open_store(store_path).get(task_id)
    if as_json:
        print_json(_dump(found))
        return
    sys.stdout.write(task_detail(_dump(found)))


@task.command("update")
@click.argument("task_id", metavar="ID")
@click.option("--status", default=None, help="pending, in_progress, completed, failed, ...")
@click.option("--subject", default=None)
@click.option("--description", default=None)
@click.option("--add-blocker", multiple=True, metavar="ID")
@click.option("--remove-blocker", multiple=True, metavar="ID")
@click.option("--add-related", multiple=True, metavar="ID")
@click.option("--command", "command", default=None, help="Shell command a mission runs.")
@_triage_options
@click.option("--remove-label", multiple=True, metavar="NAME", help="Remove a label (repeatable).")
@_store_option
@_json_option
def update(
    task_id: str,
    status: str | None,
    subject: str | None,
    description: str | None,
    add_blocker: tuple[str, ...],
    remove_blocker: tuple[str, ...],
    add_related: tuple[str, ...],
    command: str | None,
    priority: int | None,
    labels: tuple[str, ...],
    remove_label: tuple[str, ...],
    store_path: Path | None,
    as_json: bool,
) -> None:
    """Change a task; new blockers that are missing or close a cycle are refused.

    Example: rho task update task_2 --status completed --priority 0 --remove-label later
    """
    changed = _store_to_write(store_path).update(
        task_id,
        status=status,
        subject=subject,
        description=description,
        add_blockers=add_blocker,
        remove_blockers=remove_blocker,
        add_related=add_related,
        command=command,
        priority=priority,
        add_labels=labels,
        remove_labels=remove_label,
    )
    _emit_task(changed, as_json, "updated")


@task.command("delete")
@click.argument("task_id", metavar="ID")
@click.option("--force", is_flag=True, help="Also remove the other tasks' links to it.")
@_store_option
@_json_option
def delete(task_id: str, force: bool, store_path: Path | None, as_json: bool) -> None:
    """Delete a task; refused while another task links to it, unless --force.

    --force removes those links (blocks, related, parent-child) in the same write. A task with
    subtasks is refused even with --force: delete or detach the subtasks first.

    Example: rho task delete task_4 --force
    """
    from taskstore import TaskInUseError

    try:
        done = _store_to_write(store_path).delete(task_id, force=force)
    except TaskInUseError as exc:
        raise CliError(f"{exc}; {_in_use_fix(exc)}") from exc
    if as_json:
        print_json({"deleted": _dump(done.task), "unlinked": done.unlinked})
        return
    unlinked = f" (removed links from {', '.join(done.unlinked)})" if done.unlinked else ""
    click.echo(f"deleted {done.task.id}: {done.task.subject}{unlinked}")


def _in_use_fix(exc: TaskInUseError) -> str:
    if exc.subtasks:
        return (
            "delete those first, or detach each with"
            f" 'rho task dep rm SUBTASK {exc.task_id} --type parent-child'"
        )
    return "--force removes those links"


@task.group("dep")
def dep() -> None:
    """Add or remove a dependency of TASK on TARGET (blocks: TARGET must finish first).

    Example: rho task dep add task_3 task_1
    """


@dep.command("add")
@click.argument("task_id", metavar="TASK")
@click.argument("target", metavar="TARGET")
@click.option("--type", "kind", type=_LINK_TYPE, default="blocks", show_default=True)
@_store_option
@_json_option
def dep_add(task_id: str, target: str, kind: str, store_path: Path | None, as_json: bool) -> None:
    """Make TARGET block TASK (or relate them, or make TASK a subtask of TARGET).

    A blocker that is missing, TASK itself, or closes a cycle is refused, as with --blocked-by.

    Example: rho task dep add task_3 task_1 --type blocks
    """
    changed = _store_to_write(store_path).add_dependency(task_id, target, kind)
    _emit_link(changed, as_json, f"added: {changed.id} {_READS_AS[kind]} {target.strip()}")


@dep.command("rm")
@click.argument("task_id", metavar="TASK")
@click.argument("target", metavar="TARGET")
@click.option("--type", "kind", type=_LINK_TYPE, default="blocks", show_default=True)
@_store_option
@_json_option
def dep_rm(task_id: str, target: str, kind: str, store_path: Path | None, as_json: bool) -> None:
    """Remove TASK's dependency of that type on TARGET (TARGET may no longer exist).

    Example: rho task dep rm task_3 task_1
    """
    changed = _store_to_write(store_path).remove_dependency(task_id, target, kind)
    _emit_link(changed, as_json, f"removed: {changed.id} {_READS_AS[kind]} {target.strip()}")


def _emit_link(changed: Task, as_json: bool, line: str) -> None:
    if as_json:
        print_json(_dump(changed))
    else:
        click.echo(line)


@task.command("ready")
@click.option(
    "--sort",
    type=click.Choice(["id", "priority"]),
    default="id",
    show_default=True,
    help="Order of the ready tasks: by id, or by priority then id.",
)
@_store_option
@_json_option
def ready(sort: str, store_path: Path | None, as_json: bool) -> None:
    """List pending tasks whose every blocker is completed, with the waves.

    Example: rho task ready --json --sort priority
    """
    from taskstore import read_task_views

    if sort == "priority":  # priorities live in metadata: read the full model
        schedule = _schedule(_open_store(store_path).tasks())
        by_priority = sorted(schedule.ready, key=lambda t: (t.priority, t.id))
        schedule = schedule._replace(ready=by_priority)
    else:
        schedule = _schedule(read_task_views(command_store_path(store_path, reading=True)))
    if as_json:
        print_json(ready_document(schedule))
        return
    ready_tasks = [task.summary() for task in schedule.ready]
    if sort == "priority":
        priorities = [task.priority for task in schedule.ready]
        sys.stdout.write(ready_text(ready_tasks, schedule.waves, priorities))
    else:
        sys.stdout.write(ready_text(ready_tasks, schedule.waves))


@task.command("waves")
@_store_option
@_json_option
def waves(store_path: Path | None, as_json: bool) -> None:
    """Show the waves still to run: the tasks not completed, in the topological waves a
    mission would run them (the JSON's "waves" hold every task, "to_run" those).

    Example: rho task waves --json
    """
    from taskstore import read_task_views, waves_to_run

    views = read_task_views(command_store_path(store_path, reading=True))
    schedule = _schedule(views)
    to_run = waves_to_run(views)
    if as_json:
        print_json(waves_document(schedule, to_run))
        return
    sys.stdout.write(waves_to_run_text(to_run, len(views)))


@task.command("graph")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["mermaid", "dot"]),
    default="mermaid",
    show_default=True,
    help="Mermaid (for Markdown) or Graphviz dot.",
)
@_store_option
def graph(fmt: str, store_path: Path | None) -> None:
    """Draw the tasks for people: subjects, status colours, dependencies, subtasks as groups.

    Blocking links are solid arrows from blocker to blocked task, related links dotted lines.
    (`rho graph export` is the privacy-safe portable graph: no subjects there.)

    Example: rho task graph --format dot | dot -Tsvg > tasks.svg
    """
    from ._diagram import task_diagram

    sys.stdout.write(task_diagram(_open_store(store_path).tasks(), fmt))


@task.command("validate")
@_store_option
@_json_option
def validate(store_path: Path | None, as_json: bool) -> None:
    """Check the blocking graph; exit 2 with the validator's message if it is invalid.

    Example: rho task validate
    """
    tasks = _open_store(store_path).tasks()
    schedule = _schedule(tasks)
    edges = sum(len(set(t.blocker_ids)) for t in tasks)
    if as_json:
        print_json({"valid": True, "tasks": len(tasks), "edges": edges, "waves": schedule.waves})
        return
    click.echo(
        f"valid: {len(tasks)} task(s), {edges} blocking edge(s), {len(schedule.waves)} wave(s)"
    )


@task.command("import")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path))
@click.option(
    "--from",
    "tracker",
    type=click.Choice(["beads", "github", "taskmaster", "plan"]),
    default=None,
    help="FILE is another tracker's: bd list --json / bd export, Task Master's tasks.json, or "
    "gh issue list --json number,title,body,state,labels (importing it again updates); or a "
    "planning stage's plan (rho.plan/v1: rho mission PROMPT --planner CMD --plan-only).",
)
@click.option("--tag", default=None, help="The Task Master tag to import [default: master].")
@click.option(
    "--drop-missing", is_flag=True, help="Drop (and list) links to ids the file does not hold."
)
@_store_option
@_json_option
def import_(
    file: Path,
    tracker: str | None,
    tag: str | None,
    drop_missing: bool,
    store_path: Path | None,
    as_json: bool,
) -> None:
    """Add the tasks of FILE (a store document, {"tasks": [...]} or a list), ids kept; with
    --from, the tasks of another tracker's file (- reads standard input), ids kept too.

    Example: bd list --json | rho task import --from beads -
    """
    from taskstore import StoreReadError, validate_document

    if tracker == "plan":
        _import_plan(file, tag, drop_missing, store_path, as_json)
        return
    if tracker is not None:
        _import_tracker(file, tracker, tag, drop_missing, store_path, as_json)
        return
    if tag is not None or drop_missing or str(file) == "-":
        raise click.UsageError("--tag, --drop-missing and - (standard input) go with --from")
    data = _read_json(file)
    if isinstance(data, list):
        data = {"tasks": data}
    if isinstance(data, dict):
        data = {k: v for k, v in data.items() if k in ("schema_version", "tasks")}
    try:
        document = validate_document(data, str(file))
    except StoreReadError as exc:  # FILE is not the store: word it as its other read faults
        raise CliError(f"read {file}: {exc.reason}") from exc
    imported = _store_to_write(store_path).import_tasks(document.tasks)
    if as_json:
        print_json({"tasks": [_dump(t) for t in imported]})
        return
    click.echo(f"imported {len(imported)} task(s)")


def _import_plan(
    file: Path, tag: str | None, drop_missing: bool, store_path: Path | None, as_json: bool
) -> None:
    """A plan's features as pending tasks, ids kept, checked as the store checks any import."""
    from taskstore import plan_tasks, read_plan

    if tag is not None or drop_missing:
        raise click.UsageError("--tag and --drop-missing are for the trackers, not a plan")
    text = sys.stdin.read() if str(file) == "-" else _read_text(file)
    tasks = plan_tasks(read_plan(text, "-" if str(file) == "-" else str(file)))
    imported = _store_to_write(store_path).import_tasks(tasks)
    if as_json:
        print_json({"tasks": [_dump(t) for t in imported]})
        return
    click.echo(f"imported {len(imported)} task(s) from the plan")


def _import_tracker(
    file: Path,
    tracker: str,
    tag: str | None,
    drop_missing: bool,
    store_path: Path | None,
    as_json: bool,
) -> None:
    from taskstore.trackers import parse_tracker, status_key

    text = sys.stdin.read() if str(file) == "-" else _read_text(file)
    imported = parse_tracker(tracker, text, tag=tag, drop_missing=drop_missing)
    added, updated = _store_to_write(store_path).merge_tasks(imported.tasks, status_key(tracker))
    dropped = [{"task": source, "target": target} for source, target in imported.dropped]
    for warning in imported.warnings:
        click.echo(f"warning: {warning}", err=True)
    if as_json:
        print_json({"added": added, "updated": updated, "dropped": dropped})
        return
    click.echo(
        f"imported {len(imported.tasks)} task(s) from {tracker}: {len(added)} added, "
        f"{len(updated)} updated"
    )
    for link in dropped:
        click.echo(f"dropped the link of {link['task']} to {link['target']}: not in the file")


@task.command("export")
@click.option(
    "--to",
    "tracker",
    type=click.Choice(["beads", "taskmaster"]),
    default=None,
    help="Write the tasks in that tracker's shape (statuses written back in its words).",
)
@_store_option
def export(tracker: str | None, store_path: Path | None) -> None:
    """Print the whole store document as JSON (--to: as beads' issues or Task Master's file).

    Example: rho task export > backup.json
    """
    from taskstore import dump_document

    if tracker is not None:
        from taskstore.trackers import export_tasks

        sys.stdout.write(export_tasks(tracker, _open_store(store_path).tasks()) + "\n")
        return
    sys.stdout.write(dump_document(_open_store(store_path).load()).decode())


@task.command("compact")
@_store_option
@_json_option
def compact(store_path: Path | None, as_json: bool) -> None:
    """Counts per status and one line per unfinished task, for an agent's context.

    Example: rho task compact
    """
    from taskstore import TaskList

    answer = TaskList(_open_store(store_path)).run({"action": "compact"})
    if as_json:
        print_json(answer)
        return
    counts = ", ".join(f"{n} {status}" for status, n in answer["counts"].items())
    click.echo(counts or "no tasks")
    for line in answer["open"]:
        click.echo(line)


def _read_json(file: Path) -> Any:
    from taskstore import loads_strict

    try:
        return loads_strict(_read_text(file))
    except ValueError as exc:  # name the file: the bare decoder message does not
        raise CliError(f"read {file}: invalid JSON: {exc}") from exc
    except RecursionError as exc:  # the stdlib parser recurses once per level of nesting
        raise CliError(f"read {file}: invalid JSON: nested too deeply") from exc


def _read_text(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"read {file}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise CliError(f"read {file}: not UTF-8 text") from exc


def _dump(found: Task) -> dict[str, Any]:
    return found.model_dump(by_alias=True, exclude_none=True)


def _emit_task(found: Task, as_json: bool, verb: str) -> None:
    if as_json:
        print_json(_dump(found))
    else:
        sys.stdout.write(changed_line(verb, _dump(found)))
