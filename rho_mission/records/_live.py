"""What a running mission's features are doing now: mission.json, and the journal after it.

mission.json is written when a run starts, at each join and at the end; between two joins
only the journal says that a feature started (``dispatch``) or ended (``finish``). The views
(``rho mission show`` and ``list``, the API's list) read both, as the live page does: the
journal's records after the last one that follows a write of mission.json (``mission``,
``join``, ``verify``) are newer than the file, and each is applied to a feature the file
does not show ended. A record older than the file (read between its write and its journal
mark) could only repeat what the file says of an ended feature: those are never changed.

Only a mission the file says is ``executing`` is read so: any other is as its file says.

Decision: docs/decisions/0801-serve.md
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .._errors import MissionError
from ._journal import journal_entries

__all__ = ["live_changes", "with_live_features"]

# The journal records written right after mission.json: what precedes the last one is in it.
_SAVED = frozenset({"mission", "join", "verify"})
_ENDED = frozenset({"completed", "failed", "cancelled", "skipped"})
_JOURNAL = "journal.jsonl"


def live_changes(folder: Path, statuses: Mapping[str, str | None]) -> dict[str, dict[str, Any]]:
    """For each feature of *statuses* (id: its status in mission.json) not ended, what the
    journal of the mission in *folder* says of it since mission.json was last written:
    ``status``, and ``started_at``, ``completed_at``, ``attempts`` as it says them. Nothing
    when the journal cannot be read safely (a link where it should be)."""
    try:
        entries = journal_entries(folder / _JOURNAL)
    except (MissionError, OSError):
        return {}
    since = _after_last_save(entries)
    changes: dict[str, dict[str, Any]] = {}
    for entry in since:
        feature_id = entry.get("feature_id")
        if not isinstance(feature_id, str) or statuses.get(feature_id, "completed") in _ENDED:
            continue
        change = _change(entry)
        if change is not None:
            changes[feature_id] = change
    return changes


def with_live_features(mission: Mapping[str, Any]) -> Mapping[str, Any]:
    """*mission* (mission.json's data) with its features as the journal says they are now,
    when it is executing; else *mission* itself."""
    features = mission.get("features")
    folder = mission.get("dir")
    if mission.get("status") != "executing" or type(features) is not list or not folder:
        return mission
    statuses = {f["id"]: f.get("status") for f in features if type(f) is dict and "id" in f}
    changes = live_changes(Path(folder), statuses)
    if not changes:
        return mission
    updated = [
        {**f, **changes[f["id"]]} if type(f) is dict and f.get("id") in changes else f
        for f in features
    ]
    return {**mission, "features": updated}


def _after_last_save(entries: list[dict[str, Any]]) -> Iterable[dict[str, Any]]:
    last = max((n for n, e in enumerate(entries) if e.get("event") in _SAVED), default=-1)
    return entries[last + 1 :]


def _change(entry: Mapping[str, Any]) -> dict[str, Any] | None:
    event, at = entry.get("event"), entry.get("at")
    if event == "dispatch":
        return {"status": "in_progress", "started_at": at, "completed_at": None}
    status = entry.get("status")
    if event == "finish" and isinstance(status, str) and status in _ENDED:
        change: dict[str, Any] = {"status": status, "completed_at": at}
        if type(entry.get("attempts")) is int:
            change["attempts"] = entry["attempts"]
        return change
    return None
