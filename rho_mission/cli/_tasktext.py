"""What ``rho task list``, ``show``, ``ready``, ``waves``, ``add`` and ``update`` print for
people, built from tasks as the store dumps them (JSON objects).

Both lanes of the command line print through here (the full click CLI dumps its ``Task``
models first; the quick lane has the file's objects already), so they print the same text.
Standard library only.

Decision: docs/decisions/0804-quick-lane.md
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from taskstore import read_labels, read_priority

from ._plain import Cell, clip, columns, natural_key, naturally, painted, shown

__all__ = [
    "changed_line",
    "ready_text",
    "task_detail",
    "task_table",
    "waves_text",
]

JsonTask = Mapping[str, Any]
# A table cell shows the start of a long text (a 5 MB subject is one row); --json prints it whole.
_TABLE_CELL_CHARS = 200
_DETAIL_VALUE_CHARS = 2_000
# A dependency stored on task X with target Y, read from X's side: "blocks" means Y blocks X.
_RELATION_LABEL = {"blocks": "blocked by", "related": "related to", "parent-child": "child of"}


def _cell(text: str, status: str | None = None) -> Cell:
    return shown(clip(text, _TABLE_CELL_CHARS)), status


def _blocker_ids(task: JsonTask) -> list[str]:
    return [d["targetId"].strip() for d in task["dependencies"] if d["type"] == "blocks"]


def _command(task: JsonTask) -> str:
    command = task["metadata"].get("command")
    return command if isinstance(command, str) and command.strip() else ""


def priority_text(priority: int) -> str:
    """A priority as beads writes it: ``P0`` (highest) to ``P4``."""
    return f"P{priority}"


def task_table(tasks: Sequence[JsonTask], title: str, *, wide: bool = False) -> str:
    """One row per task: id, status, priority, subject, blockers; *wide* adds labels and command."""
    headers = ["id", "status", "pri", "subject", "blocked by"]
    headers += ["labels", "command"] if wide else []
    rows = []
    for task in sorted(tasks, key=lambda task: natural_key(task["id"])):
        row = [
            _cell(task["id"]),
            _cell(task["status"], task["status"]),
            _cell(priority_text(read_priority(task["metadata"]))),
            _cell(task["subject"]),
            _cell(", ".join(naturally(set(_blocker_ids(task))))),
        ]
        if wide:
            row += [_cell(", ".join(read_labels(task["metadata"]))), _cell(_command(task))]
        rows.append(row)
    return "\n".join([title, *columns(headers, rows)]) + "\n"


# The fields of a task that are texts of lines (the others are one line each).
_MULTILINE = frozenset({"description", "command", "last error"})


def task_detail(task: JsonTask) -> str:
    """Every field of one task, a line each; a text of several lines keeps them, indented."""
    metadata = task["metadata"]
    stored_priority = priority_text(read_priority(metadata)) if "priority" in metadata else None
    rows: list[tuple[str, Any]] = [
        ("id", task["id"]),
        ("subject", task["subject"]),
        ("status", task["status"]),
        ("description", task["description"]),
        ("parent", task.get("parentId")),
        ("owner", task.get("owner")),
        ("priority", stored_priority),
        ("labels", ", ".join(read_labels(metadata))),
        ("command", _command(task)),
        ("attempts", task["attempts"]),
        ("last error", task.get("lastError")),
        ("created", task.get("createdAt")),
        ("updated", task.get("updatedAt")),
        *_relation_rows(task),
    ]
    shown_rows = [(name, str(value)) for name, value in rows if value not in (None, "")]
    width = max(len(name) for name, _ in shown_rows)
    lines = []
    for name, value in shown_rows:
        text = value
        if len(text) > _DETAIL_VALUE_CHARS:
            text = f"{text[:_DETAIL_VALUE_CHARS]}… ({len(text)} characters; --json shows them all)"
        # Texts of several lines keep them; a line break in any other field is an escape.
        parts = text.split("\n") if name in _MULTILINE else [text]
        first, *more = [shown(line) for line in parts]
        if name == "status":
            first = painted(first, value)
        lines.append(f"{name:<{width}}  {first}".rstrip())
        lines += [f"{'':<{width}}  {line}".rstrip() for line in more]
    return "\n".join(lines) + "\n"


def _relation_rows(task: JsonTask) -> list[tuple[str, str]]:
    """One row per kind of dependency: its targets in declared order, each once.

    The parent already has its own row, so "child of" names only other targets.
    """
    rows = []
    for kind, label in _RELATION_LABEL.items():
        targets = dict.fromkeys(
            d["targetId"].strip() for d in task["dependencies"] if d["type"] == kind
        )
        if kind == "parent-child":
            targets.pop(task.get("parentId") or "", None)
        if targets:
            rows.append((label, ", ".join(targets)))
    return rows


def ready_text(
    ready: Sequence[JsonTask], waves: list[list[str]], priorities: Sequence[int] | None = None
) -> str:
    """The ready tasks (``{id, subject}`` at least), then the waves.

    With *priorities* (one per ready task) a priority column is added and the given order kept;
    without, the tasks are listed by id, as people count.
    """
    headers = ["id", *(["pri"] if priorities is not None else []), "subject"]
    if priorities is None:
        order = sorted(ready, key=lambda task: natural_key(task["id"]))
        rows = [[_cell(task["id"]), _cell(task["subject"])] for task in order]
    else:
        rows = [
            [_cell(task["id"]), _cell(priority_text(priority)), _cell(task["subject"])]
            for task, priority in zip(ready, priorities, strict=True)
        ]
    title = f"{len(ready)} ready task(s)"
    return "\n".join([title, *columns(headers, rows)]) + "\n" + waves_text(waves)


def waves_text(waves: list[list[str]]) -> str:
    """``wave N: ids`` per wave, ids in natural order."""
    return "".join(
        f"wave {number}: {shown(' '.join(naturally(wave)))}\n"
        for number, wave in enumerate(waves, start=1)
    )


def waves_to_run_text(to_run: list[list[str]], tasks: int) -> str:
    """The waves still to run, and how many completed tasks they leave out."""
    done = tasks - sum(map(len, to_run))
    text = waves_text(to_run) if to_run else "nothing to run: every task is completed\n"
    return text + (f"{done} completed task(s) not shown\n" if done and to_run else "")


def changed_line(verb: str, task: JsonTask) -> str:
    """``added task_3: Parse input``: what a write did, on one line."""
    return f"{verb} {shown(task['id'])}: {shown(task['subject'])}\n"
