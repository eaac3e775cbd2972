"""A click-free lane for the reads agents poll in loops: ``rho task ready|waves|list --json``
and ``rho task show ID --json``.

On a store at the caps, importing click costs about a third of the whole ``rho task ready
--json`` process, and pydantic most of a ``task show``. This lane recognises only the plain
spellings of those commands::

    rho [--store PATH] [--debug] task (ready|waves|list) --json [--store PATH]
    rho [--store PATH] [--debug] task show ID --json [--store PATH]

``list`` and ``show`` answer only when every task in the file is exactly what the model's dump
of it would be (``taskstore.read_task_dicts``): then the file's objects are the answer.

(options in any order within their level, each at most once) and answers them without click.
Anything else (``--store=PATH``, ``--help``, a repeated option, ``ready --sort priority``, which
needs the priorities only the full model reads) and every failure returns None, and the full
click CLI then runs the same command line: so both lanes print the same documents
(built here, and used by ``_task.py`` too) and the same errors (the full CLI's).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._errors import CliError
from ._paths import resolve_store_path

if TYPE_CHECKING:
    from taskstore import Schedule

__all__ = ["print_json", "quick_run", "ready_document", "waves_document"]

_READS = ("ready", "waves", "list", "show")


def ready_document(schedule: Schedule[Any]) -> dict[str, Any]:
    """``{"tasks": [{id, subject, status, owner, dependencies}], "waves": [[...]]}``."""
    return {"tasks": [task.summary() for task in schedule.ready], "waves": schedule.waves}


def waves_document(schedule: Schedule[Any]) -> dict[str, Any]:
    """``{"waves": [[...]]}``."""
    return {"waves": schedule.waves}


def print_json(document: Any) -> None:
    """Print *document* as one indented JSON document on stdout."""
    sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")


def quick_run(args: list[str]) -> int | None:
    """Answer *args* if they are a plain ``task ready|waves|list --json`` or ``task show ID
    --json``; None to use the full CLI.

    Never raises for bad input: any failure returns None before anything is printed, so that
    the full CLI reports it in its own words. Only a failure to write the output is reported here.
    """
    parsed = _parse(args)
    if parsed is None:
        return None
    name, store, task_id = parsed
    try:
        document = _document(name, store, task_id)
    except Exception:  # the full CLI runs the same read again and reports the failure
        return None
    try:
        print_json(document)
        sys.stdout.flush()
    except OSError as exc:  # e.g. a closed pipe; the full CLI would say the same
        sys.stderr.write(f"error: {exc.strerror or exc}\n")
        return 2
    return 0


class _FullRead(Exception):
    """This store needs the full model's read (its answer, or its words for a problem)."""


def _document(name: str, store: Path, task_id: str | None) -> dict[str, Any]:
    if name in ("list", "show"):
        from taskstore import read_task_dicts

        tasks = read_task_dicts(store)
        if tasks is None:
            raise _FullRead(store)
        if name == "list":
            return {"tasks": tasks}
        found: dict[str, Any] | None = next((t for t in tasks if t["id"] == task_id), None)
        if found is None:  # the full CLI's "not found"
            raise _FullRead(task_id)
        return found
    from taskstore import compute_schedule, read_task_views

    schedule = compute_schedule(read_task_views(store))
    return ready_document(schedule) if name == "ready" else waves_document(schedule)


def _parse(args: list[str]) -> tuple[str, Path, str | None] | None:
    """(command, store path, task id of ``show``) for the accepted spellings, else None."""
    if "task" not in args:
        return None
    split = args.index("task")
    root = _options(args[:split], flags={"--debug"})
    if root is None or len(args) < split + 2 or args[split + 1] not in _READS:
        return None
    name, rest, task_id = args[split + 1], args[split + 2 :], None
    if name == "show":  # its ID first, as people write it; any other spelling goes to click
        if not rest or rest[0].startswith("-"):
            return None
        task_id, rest = rest[0], rest[1:]
    sub = _options(rest, flags={"--json"})
    if sub is None or "--json" not in sub:
        return None
    try:
        store = resolve_store_path(sub.get("--store"), root.get("--store"), reading=True)
    except CliError:  # no store named and no repository: the full CLI says so
        return None
    return name, store, task_id


def _options(tokens: list[str], flags: set[str]) -> dict[str, Path | None] | None:
    """The flags and ``--store PATH`` among *tokens*, or None for anything else."""
    found: dict[str, Path | None] = {}
    position = 0
    while position < len(tokens):
        token = tokens[position]
        if token in found:
            return None
        if token in flags:
            found[token] = None
            position += 1
        elif token == "--store" and position + 1 < len(tokens):
            value = tokens[position + 1]
            if not _plain_path(value):
                return None
            found[token] = Path(value)
            position += 2
        else:
            return None
    return found


def _plain_path(value: str) -> bool:
    # What click.Path(dir_okay=False) accepts without a word: anything else goes to click.
    if not value or value.startswith("-") or os.path.isdir(value):
        return False
    return not os.path.exists(value) or os.access(value, os.R_OK)
