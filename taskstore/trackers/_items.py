"""The neutral record a tracker's item becomes, and the errors of reading one.

Decision: docs/decisions/0104-trackers.md
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .._errors import InvalidTaskError

__all__ = ["Item", "TrackerFormatError"]


class TrackerFormatError(InvalidTaskError):
    """The file is not what its format says (a field of the wrong shape, no id...)."""


@dataclass
class Item:
    """One task of a tracker, in the store's words (``status`` is a store status)."""

    id: str
    subject: str
    status: str
    tool_status: str
    description: str = ""
    priority: int | None = None
    labels: list[str] = field(default_factory=list)
    blockers: list[str] = field(default_factory=list)
    related: list[str] = field(default_factory=list)
    parent: str | None = None
    # Who holds it (beads' assignee), and when the tool made it, as the tool wrote it.
    owner: str | None = None
    created_at: str | None = None
    # A parent that is no work of its own (a beads epic, a Task Master task with subtasks).
    group: bool = False
