"""Views of the task commands' JSON: the documents and titles both lanes print, built by one
function each so that the two lanes print the same bytes. They take data and return text.

Decision: docs/decisions/0804-quick-lane.md
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from taskstore import Schedule

__all__ = ["json_text", "list_title", "ready_document", "waves_document"]


def ready_document(schedule: Schedule[Any]) -> dict[str, Any]:
    """``{"tasks": [{id, subject, status, owner, dependencies}], "waves": [[...]]}``."""
    return {"tasks": [task.summary() for task in schedule.ready], "waves": schedule.waves}


def waves_document(schedule: Schedule[Any], to_run: list[list[str]]) -> dict[str, Any]:
    """``{"waves": [[...]], "to_run": [[...]]}``: every task's waves, and those of the tasks
    not completed."""
    return {"waves": schedule.waves, "to_run": to_run}


def json_text(document: Any) -> str:
    """*document* as one indented JSON document and a newline."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def list_title(shown: Sequence[Any], every: Sequence[Any]) -> str:
    """``4 task(s)``, or ``2 of 4 task(s)`` when a filter left some out."""
    count = f"{len(shown)} of {len(every)}" if len(shown) < len(every) else str(len(shown))
    return f"{count} task(s)"
