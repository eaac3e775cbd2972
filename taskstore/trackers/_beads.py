"""beads: the JSON of ``bd list --json`` (an array of issues) or ``bd export`` (JSON lines).

An issue: ``id``, ``title``, ``description``, ``status``, ``priority`` (0-4), ``labels``,
``assignee`` (kept as the task's owner: an ``in_progress`` issue is someone's work under way),
``created_at`` (kept as the task's) and
``dependencies`` (each ``{issue_id, depends_on_id, type}``, held by the dependent issue), and
sometimes a ``parent`` field beside its ``parent-child`` link. Only ``blocks`` blocks ``bd
ready``; ``parent-child`` is the hierarchy; every other type (``related``, ``discovered-from``,
``tracks``...) is a plain link. A ``tombstone`` (a deleted issue) is not imported, and links to
one are dropped: it blocks nothing.

Decision: docs/decisions/0104-trackers.md
"""

from __future__ import annotations

import json
from typing import Any

from .._errors import quote
from ._items import Item, TrackerFormatError

__all__ = ["FROM_BEADS", "TO_BEADS", "beads_items", "parse_beads_text"]

# beads status -> store status. `blocked` is beads' flag for "waiting" without a link: `bd
# ready` leaves it out, so it is held (as `skipped`) until set back to pending; `deferred` and
# `pinned` (a reference item, not work) are held too; `hooked` (Gas Town) is work an agent holds.
FROM_BEADS = {
    "open": "pending",
    "in_progress": "in_progress",
    "hooked": "in_progress",
    "blocked": "skipped",
    "deferred": "skipped",
    "pinned": "skipped",
    "closed": "completed",
}
TO_BEADS = {
    "pending": "open",
    "in_progress": "in_progress",
    "reviewing": "in_progress",
    "completed": "closed",
    "failed": "open",
    "skipped": "deferred",
    "cancelled": "closed",
}
DELETED = "tombstone"


def parse_beads_text(text: str) -> list[dict[str, Any]]:
    """The issues of a JSON array, an ``{"issues": [...]}`` object, or JSON lines."""
    stripped = text.strip()
    try:
        try:
            data = json.loads(stripped) if stripped else []
        except json.JSONDecodeError:
            data = [json.loads(line) for line in stripped.splitlines() if line.strip()]
    except json.JSONDecodeError as exc:
        raise TrackerFormatError(f"beads: invalid JSON: {exc}") from exc
    except RecursionError as exc:  # the parser recurses once per level of brackets
        raise TrackerFormatError("beads: invalid JSON: nested too deeply") from exc
    if isinstance(data, dict):
        data = data.get("issues", [data])
    if not isinstance(data, list) or not all(isinstance(issue, dict) for issue in data):
        raise TrackerFormatError("beads: expected an array of issues, or JSON lines of them")
    return data


def beads_items(issues: list[dict[str, Any]]) -> tuple[list[Item], set[str]]:
    """The items of *issues*, and the ids of the deleted ones (links to them are dropped)."""
    deleted = {str(i.get("id")) for i in issues if i.get("status") == DELETED}
    items = [_item(issue) for issue in issues if issue.get("status") != DELETED]
    return items, deleted


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _item(issue: dict[str, Any]) -> Item:
    ident = issue.get("id")
    if not isinstance(ident, str) or not ident:
        raise TrackerFormatError(f"beads: an issue without an id: {json.dumps(issue)[:80]}")
    status = str(issue.get("status", "open"))
    if status not in FROM_BEADS:
        raise TrackerFormatError(
            f"beads: issue {quote(ident)} has an unknown status {quote(status)}"
        )
    item = Item(
        id=ident,
        subject=str(issue.get("title") or ident),
        status=FROM_BEADS[status],
        tool_status=status,
        description=str(issue.get("description") or ""),
        priority=issue["priority"] if isinstance(issue.get("priority"), int) else None,
        labels=[str(label) for label in issue.get("labels") or []],
        owner=_text(issue.get("assignee")),
        created_at=_text(issue.get("created_at")),
        group=issue.get("issue_type") == "epic",
    )
    for link in issue.get("dependencies") or []:
        target = link.get("depends_on_id") if isinstance(link, dict) else None
        if not isinstance(target, str):
            continue
        kind = link.get("type", "blocks")
        if kind == "blocks":
            item.blockers.append(target)
        elif kind == "parent-child":
            item.parent = target
        else:
            item.related.append(target)
    parent = issue.get("parent")
    if isinstance(parent, str) and parent:
        item.parent = item.parent or parent
    return item
