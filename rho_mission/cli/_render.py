"""Rich rendering of tasks for people; JSON output never comes through here."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from taskstore import Task

__all__ = [
    "console",
    "escape",
    "natural_key",
    "naturally",
    "print_ready",
    "print_task_detail",
    "print_task_table",
    "priority_text",
    "status_text",
]

# Rich folds a cell in time that grows faster than its length (a 5 MB subject took 100 s to list):
# people see the start of long text, --json prints it whole.
_TABLE_CELL_CHARS = 200
_DETAIL_VALUE_CHARS = 2_000

_STATUS_STYLE = {
    "completed": "green",
    "failed": "red",
    "in_progress": "yellow",
    "cancelled": "magenta",
    "skipped": "dim",
    "blocked": "magenta",
    "not run": "dim",
}


_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that reads numbers as numbers: task_2 before task_10 (for people's views;
    files keep the spec's plain order)."""
    return tuple(
        (1, int(part)) if part.isdigit() else (0, part) for part in _DIGITS.split(text) if part
    )


def naturally(ids: Iterable[str]) -> list[str]:
    """*ids* in `natural_key` order."""
    return sorted(ids, key=natural_key)


def console() -> Console:
    """A console on stdout; plain text when stdout is not a terminal."""
    return Console(highlight=False, soft_wrap=False)


def _clip(text: str) -> str:
    # A table cell of at most _TABLE_CELL_CHARS characters, the last one an ellipsis if cut.
    if len(text) <= _TABLE_CELL_CHARS:
        return text
    return text[: _TABLE_CELL_CHARS - 1] + "…"


def _clip_detail(text: str) -> str:
    if len(text) <= _DETAIL_VALUE_CHARS:
        return text
    return f"{text[:_DETAIL_VALUE_CHARS]}… ({len(text)} characters; --json shows them all)"


def status_text(status: str) -> Text:
    """A task or feature status, coloured by what it means."""
    return Text(status, style=_STATUS_STYLE.get(status, ""))


def print_task_table(tasks: Sequence[Task], title: str, *, wide: bool = False) -> None:
    """One row per task: id, status, priority, subject, blockers; *wide* adds labels and command.

    The short form keeps one line per task at 80 columns for usual subjects: commands are long
    shell lines that fold into many.
    """
    table = Table(title=title, title_justify="left")
    for column in ("id", "status", "pri"):
        table.add_column(column, no_wrap=True)
    for column in ("subject", "blocked by", *(("labels", "command") if wide else ())):
        table.add_column(column, overflow="fold")
    for task in sorted(tasks, key=lambda task: natural_key(task.id)):
        # Subjects and commands are the user's text: "[a-z]" must print, not be read as markup.
        cells: list[str | Text] = [
            escape(_clip(task.id)),
            status_text(_clip(task.status)),
            priority_text(task.priority),
            escape(_clip(task.subject)),
            escape(_clip(", ".join(naturally(set(task.blocker_ids))))),
        ]
        if wide:
            cells += [escape(_clip(", ".join(task.labels))), escape(_clip(task.command or ""))]
        table.add_row(*cells)
    console().print(table)


def priority_text(priority: int) -> str:
    """A priority as beads writes it: ``P0`` (highest) to ``P4``."""
    return f"P{priority}"


def print_task_detail(task: Task) -> None:
    """Every field of one task as a two-column table."""
    table = Table(show_header=False, box=None)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    rows: list[tuple[str, Any]] = [
        ("id", task.id),
        ("subject", task.subject),
        ("status", status_text(_clip_detail(task.status))),
        ("description", task.description),
        ("parent", task.parent_id),
        ("owner", task.owner),
        ("priority", _stored_priority(task)),
        ("labels", ", ".join(task.labels)),
        ("command", task.command),
        ("attempts", task.attempts),
        ("last error", task.last_error),
        ("created", task.created_at),
        ("updated", task.updated_at),
    ]
    rows.extend(_relation_rows(task))
    for name, value in rows:
        if value not in (None, ""):
            shown = value if isinstance(value, Text) else escape(_clip_detail(str(value)))
            table.add_row(name, shown)
    console().print(table)


def _stored_priority(task: Task) -> str | None:
    # Shown when the task has one of its own, like the other optional fields (list shows P2).
    return priority_text(task.priority) if "priority" in task.metadata else None


# A dependency stored on task X with target Y, read from X's side: "blocks" means Y blocks X.
_RELATION_LABEL = {"blocks": "blocked by", "related": "related to", "parent-child": "child of"}


def _relation_rows(task: Task) -> list[tuple[str, str]]:
    """One row per kind of dependency: its targets in declared order, each once.

    The parent already has its own row, so "child of" names only other targets.
    """
    rows = []
    for kind, label in _RELATION_LABEL.items():
        targets = dict.fromkeys(d.target_id.strip() for d in task.dependencies if d.type == kind)
        if kind == "parent-child":
            targets.pop(task.parent_id or "", None)
        if targets:
            rows.append((label, ", ".join(targets)))
    return rows


def print_ready(ready: Sequence[Any], waves: list[list[str]], *, priorities: bool = False) -> None:
    """The ready tasks, then the waves; *priorities* adds a priority column (full tasks only)."""
    table = Table(title=f"{len(ready)} ready task(s)", title_justify="left")
    table.add_column("id")
    if priorities:
        table.add_column("pri", no_wrap=True)
    table.add_column("subject", overflow="fold")
    if not priorities:  # by priority, the caller's order; else by id, as people count
        ready = sorted(ready, key=lambda task: natural_key(task.id))
    for task in ready:
        middle = [priority_text(task.priority)] if priorities else []
        table.add_row(escape(_clip(task.id)), *middle, escape(_clip(task.subject)))
    out = console()
    out.print(table)
    for number, wave in enumerate(waves, start=1):
        out.print(f"wave {number}: {escape(' '.join(naturally(wave)))}")
