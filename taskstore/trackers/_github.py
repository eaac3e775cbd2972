"""GitHub issues: the JSON of ``gh issue list --json number,title,body,state,labels``.

An issue becomes the task of id ``<number>``. A line of its body saying ``blocked by #N`` or
``depends on #N`` (``#1, #2 and #3`` too) makes those issues its blockers, as people write it
on GitHub; sub-issues, where the JSON holds them (``subIssues: [{number}]`` or ``parent:
{number}``), become children. Labels keep their names, with each character a label cannot hold
made ``-``.

Decision: docs/decisions/0104-trackers.md
"""

from __future__ import annotations

import re
from typing import Any

from .._errors import quote
from ._items import Item, TrackerFormatError

__all__ = ["github_items"]

_BLOCKED = re.compile(
    r"(?i)\b(?:blocked\s+by|depends\s+on)\b[:\s]*((?:#\d+(?:\s*(?:,|&|\band\b)\s*)?)+)"
)
_NUMBER = re.compile(r"#(\d+)")
_NOT_A_LABEL = re.compile(r"[^A-Za-z0-9._:/-]")


def github_items(data: Any) -> list[Item]:
    """The items of *data*, a list of issues."""
    if not isinstance(data, list) or not all(isinstance(issue, dict) for issue in data):
        raise TrackerFormatError("github: expected the array 'gh issue list --json' prints")
    items = {str(issue.get("number")): _item(issue) for issue in data}
    for issue in data:
        for sub in issue.get("subIssues") or []:
            child = items.get(str(sub.get("number"))) if isinstance(sub, dict) else None
            if child is not None:
                child.parent = str(issue.get("number"))
    return list(items.values())


def _item(issue: dict[str, Any]) -> Item:
    number = issue.get("number")
    if not isinstance(number, int) or isinstance(number, bool):
        raise TrackerFormatError("github: an issue without a number")
    state = str(issue.get("state", "OPEN")).upper()
    reason = str(issue.get("stateReason") or "").upper()
    status = "pending" if state == "OPEN" else "completed"
    if state == "CLOSED" and reason == "NOT_PLANNED":
        status = "cancelled"
    body = str(issue.get("body") or "")
    blockers = [n for match in _BLOCKED.finditer(body) for n in _NUMBER.findall(match[1])]
    parent = issue.get("parent")
    item = Item(
        id=str(number),
        subject=str(issue.get("title") or f"issue {number}"),
        status=status,
        tool_status=state if not reason else f"{state}:{reason}",
        description=body,
        labels=[_label(label) for label in issue.get("labels") or [] if _label(label)],
        blockers=list(dict.fromkeys(b for b in blockers if b != str(number))),
        parent=str(parent["number"]) if isinstance(parent, dict) and "number" in parent else None,
    )
    return item


def _label(label: Any) -> str:
    name = label.get("name") if isinstance(label, dict) else label
    if not isinstance(name, str):
        raise TrackerFormatError(f"github: a label of an unknown shape: {quote(str(label))}")
    return _NOT_A_LABEL.sub("-", name.strip()).lstrip("-._:/")[:50]
