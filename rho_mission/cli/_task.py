"""``rho task ...``: the task store from the command line.

The hot commands (``add``, ``list``, ``show``, ``update``, ``ready``, ``waves``) are made from
the one table both lanes read (``_hottable``, ``_hotclick``) and ``_main`` adds them to this
group; their plain spellings on a store rho wrote do not even load click (``_quick``). The
other commands are defined here, over ``TaskStore``, sharing the table's ``--store`` and
``--json``.

Decision: docs/decisions/0103-task-commands.md, docs/decisions/0804-quick-lane.md
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from taskstore import DEPENDENCY_TYPES

from ._errors import CliError
from ._hotbodies import checked_schedule
from ._hotclick import option_decorator
from ._hottable import JSON, STORE
from ._paths import command_store_path
from ._taskdocs import json_text

if TYPE_CHECKING:
    from taskstore import Task, TaskInUseError, TaskStore

__all__ = ["task"]

_store_option = option_decorator(STORE)
_json_option = option_decorator(JSON)
_LINK_TYPE = click.Choice(DEPENDENCY_TYPES)
# How a dependency reads from the side of the task that holds it.
_READS_AS = {"blocks": "blocked by", "related": "related to", "parent-child": "subtask of"}


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


@click.group()
def task() -> None:
    """Read and change the task store.

    Example: rho task add "Parse input" --command "make parser"
    """


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
        _print_json({"deleted": _dump(done.task), "unlinked": done.unlinked})
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
        _print_json(_dump(changed))
    else:
        click.echo(line)


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
    schedule = checked_schedule(tasks)
    edges = sum(len(set(t.blocker_ids)) for t in tasks)
    if as_json:
        _print_json({"valid": True, "tasks": len(tasks), "edges": edges, "waves": schedule.waves})
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
        _print_json({"tasks": [_dump(t) for t in imported]})
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
        _print_json({"tasks": [_dump(t) for t in imported]})
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
        _print_json({"added": added, "updated": updated, "dropped": dropped})
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
        _print_json(answer)
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


def _print_json(document: Any) -> None:
    sys.stdout.write(json_text(document))
