"""Import the trackers people already keep (beads, Task Master, GitHub issues), and export back.

Each format module turns its file into ``Item`` records (``_items``): id, subject, description,
status in the store's words, priority, labels, blockers, related links and parent. The tool's own
status is kept in ``metadata["<tool>.status"]`` so that an export writes it back as it was.
``to_tasks`` then makes store tasks of them, checking that every link names an item of the file
(or dropping such links, with ``drop_missing``, and saying which).

The mapping of each tool's statuses and link types is written in
``docs/decisions/0104-trackers.md``: a link blocks only where the tool itself says it blocks.

Direction: uses ``taskstore`` alone (its model and limits); ``rho_mission``'s CLI calls it.

Decision: docs/decisions/0104-trackers.md
"""

from __future__ import annotations

from ._convert import (
    EXPORT_FORMATS,
    FORMATS,
    Imported,
    export_tasks,
    parse_tracker,
    status_key,
)
from ._items import TrackerFormatError

__all__ = [
    "EXPORT_FORMATS",
    "FORMATS",
    "Imported",
    "TrackerFormatError",
    "export_tasks",
    "parse_tracker",
    "status_key",
]
