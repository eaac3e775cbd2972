"""From a tracker's file to store tasks, and from the store back to a tracker's shape.

Decision: docs/decisions/0104-trackers.md
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .._errors import quote
from .._model import GROUP_KEY, Dependency, Task
from .._triage import read_labels, read_priority
from ._beads import FROM_BEADS, TO_BEADS, beads_items, parse_beads_text
from ._finished_cycles import settle_finished_cycles
from ._github import github_items
from ._items import Item, TrackerFormatError
from ._taskmaster import FROM_TASKMASTER, TO_TASKMASTER, taskmaster_items

__all__ = ["EXPORT_FORMATS", "FORMATS", "Imported", "export_tasks", "parse_tracker", "status_key"]

FORMATS = ("beads", "github", "taskmaster")
EXPORT_FORMATS = ("beads", "taskmaster")


def status_key(fmt: str) -> str:
    """Where a task keeps its tool's own status: ``metadata["<fmt>.status"]``."""
    return f"{fmt}.status"


@dataclass
class Imported:
    """The tasks of a tracker's file, and the links it dropped (``drop_missing``)."""

    tasks: list[Task]
    dropped: list[tuple[str, str]] = field(default_factory=list)
    # What the reading changed and said so (Task Master subtasks numbered by position, a
    # cycle among completed tasks imported as related links).
    warnings: list[str] = field(default_factory=list)


def parse_tracker(
    fmt: str, text: str, *, tag: str | None = None, drop_missing: bool = False
) -> Imported:
    """The store tasks of *text*, a file of tracker *fmt*.

    Raises:
        TrackerFormatError: the file is not of that format, or (without *drop_missing*) an
            item links to an id the file does not hold.
    """
    deleted: set[str] = set()
    warnings: list[str] = []
    if fmt == "beads":
        items, deleted = beads_items(parse_beads_text(text))
    elif fmt == "taskmaster":
        items = taskmaster_items(_json(fmt, text), tag, warnings)
    elif fmt == "github":
        items = github_items(_json(fmt, text))
    else:
        raise TrackerFormatError(f"unknown format {quote(fmt)}; expected {', '.join(FORMATS)}")
    if tag is not None and fmt != "taskmaster":
        raise TrackerFormatError("--tag is Task Master's: the other formats have no tags")
    warnings += settle_finished_cycles(fmt, items)
    warnings += _childless_groups_are_work(fmt, items)
    imported = _to_tasks(fmt, items, deleted, drop_missing)
    imported.warnings = warnings
    return imported


def _childless_groups_are_work(fmt: str, items: list[Item]) -> list[str]:
    """A parent the file gives no child (a beads epic, nothing under it yet) is work, not a
    group: a group is done when its children are, so one without children could never be
    done, nor run. Its own status says when it is done. One warning for each that will run."""
    parents = {item.parent for item in items if item.parent is not None}
    warnings = []
    for item in items:
        if item.group and item.id not in parents:
            item.group = False
            if item.status != "completed":
                warnings.append(f"{fmt}: {item.id} has no children in the file: imported as work")
    return warnings


def _json(fmt: str, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TrackerFormatError(f"{fmt}: invalid JSON: {exc}") from exc
    except RecursionError as exc:  # the parser recurses once per level of brackets
        raise TrackerFormatError(f"{fmt}: invalid JSON: nested too deeply") from exc


def _to_tasks(fmt: str, items: list[Item], deleted: set[str], drop_missing: bool) -> Imported:
    known = {item.id for item in items}
    seen: set[str] = set()
    imported = Imported([])
    for item in items:
        if item.id in seen:
            raise TrackerFormatError(f"{fmt}: the id {quote(item.id)} is used twice")
        seen.add(item.id)

    def kept(source: str, target: str) -> bool:
        if target in known:
            return True
        if target in deleted:  # a deleted item blocks nothing
            return False
        if not drop_missing:
            raise TrackerFormatError(
                f"{fmt}: task {quote(source)} links to {quote(target)}, which the file does "
                "not hold (--drop-missing drops such links)"
            )
        imported.dropped.append((source, target))
        return False

    for item in items:
        links = [Dependency(target_id=b, type="blocks") for b in item.blockers if kept(item.id, b)]
        links += [Dependency(target_id=r, type="related") for r in item.related if kept(item.id, r)]
        parent = item.parent if item.parent is not None and kept(item.id, item.parent) else None
        if parent is not None:
            links.append(Dependency(target_id=parent, type="parent-child"))
        metadata: dict[str, Any] = {status_key(fmt): item.tool_status}
        if item.priority is not None:
            metadata["priority"] = item.priority
        if item.labels:
            metadata["labels"] = sorted(set(item.labels))
        if item.group:
            metadata[GROUP_KEY] = True
        imported.tasks.append(
            Task(
                id=item.id,
                subject=item.subject,
                description=item.description,
                status=item.status,
                parent_id=parent,
                dependencies=list(dict.fromkeys(links)),
                metadata=metadata,
                owner=item.owner,
                created_at=item.created_at,
            )
        )
    return imported


def export_tasks(fmt: str, tasks: Sequence[Task]) -> str:
    """The store's tasks in the shape of tracker *fmt* (``beads``: an array of issues;
    ``taskmaster``: a tasks.json of one ``master`` tag), statuses written back."""
    if fmt == "beads":
        return json.dumps([_beads_issue(task) for task in tasks], indent=2, ensure_ascii=False)
    if fmt == "taskmaster":
        return json.dumps({"master": {"tasks": _taskmaster(tasks)}}, indent=2, ensure_ascii=False)
    raise TrackerFormatError(f"unknown format {quote(fmt)}; expected {', '.join(EXPORT_FORMATS)}")


def _tool_status(task: Task, fmt: str, mapping: dict[str, str]) -> str:
    """The tool's own word when it still says what the store says, else the mapped one."""
    kept = task.metadata.get(status_key(fmt))
    if isinstance(kept, str) and _BACK[fmt](kept) == task.status:
        return kept
    return mapping.get(task.status, next(iter(mapping.values())))


def _beads_issue(task: Task) -> dict[str, Any]:
    links = [
        {"issue_id": task.id, "depends_on_id": d.target_id, "type": d.type}
        for d in task.dependencies
    ]
    return {
        "id": task.id,
        "title": task.subject,
        "description": task.description,
        "status": _tool_status(task, "beads", TO_BEADS),
        "priority": read_priority(task.metadata),
        "labels": read_labels(task.metadata),
        "dependencies": links,
    }


def _taskmaster(tasks: Sequence[Task]) -> list[dict[str, Any]]:
    by_parent: dict[str | None, list[Task]] = {}
    for task in tasks:
        by_parent.setdefault(task.parent_id, []).append(task)
    return [_tm_task(task, by_parent, None) for task in by_parent.get(None, [])]


def _tm_task(
    task: Task, by_parent: dict[str | None, list[Task]], parent: str | None
) -> dict[str, Any]:
    own = task.id.removeprefix(f"{parent}.") if parent is not None else task.id
    blockers = task.blocker_ids
    if parent is not None:  # a sibling by its number, as Task Master writes it
        blockers = [
            b.removeprefix(f"{parent}.") if b.startswith(f"{parent}.") else b for b in blockers
        ]
    entry: dict[str, Any] = {
        "id": int(own) if own.isdigit() else own,
        "title": task.subject,
        "description": task.description,
        "status": _tool_status(task, "taskmaster", TO_TASKMASTER),
        "priority": _TM_PRIORITY.get(read_priority(task.metadata), "medium"),
        "dependencies": [int(b) if b.isdigit() else b for b in blockers],
    }
    children = by_parent.get(task.id, [])
    if parent is None:
        entry["subtasks"] = [_tm_task(child, by_parent, task.id) for child in children]
    return entry


_TM_PRIORITY = {0: "critical", 1: "high", 2: "medium", 3: "low", 4: "low"}


# What each tool's own status reads as in the store: an export keeps the tool's word while
# the store still agrees with it (``open`` and ``blocked`` both read ``pending``).
_BACK = {"beads": FROM_BEADS.get, "taskmaster": FROM_TASKMASTER.get}
