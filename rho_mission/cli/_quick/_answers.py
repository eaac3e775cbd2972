"""What the quick lane prints for a parsed command line, or None to leave it to click.

A command runs its body (``_hotbodies``, the one the full CLI runs too) over the files' own
JSON: ``FileSource`` (the task store, which answers only for a store rho wrote) or
``_missions.FileMissionSource`` (the mission folders' mission.json).

Decision: docs/decisions/0804-quick-lane.md
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._hotbodies import JsonTask
from ._argv import Call, body_values

__all__ = ["FileSource", "answer"]


def answer(call: Call) -> str | None:
    """The text *call* prints, or None (the store is not one rho wrote, a task is missing).

    Raises:
        Exception: any failure; the caller leaves the command to the full CLI, which reports it.
    """
    assert call.command is not None, "a command the quick lane answers is in the table"
    if call.store is None:  # ``rho mission show|list``
        from ._missions import FileMissionSource

        return call.command.body(FileMissionSource(), body_values(call))
    return call.command.body(FileSource(call.store), body_values(call))


class FileSource:
    """The store file's own JSON objects, without pydantic; None for a store rho did not write
    (``read_task_dicts``, ``fast_add``, ``fast_update``) and where it would load the model."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def task_dicts(self) -> list[JsonTask] | None:
        from taskstore import read_task_dicts

        return read_task_dicts(self.path)

    def task_dict(self, task_id: str) -> JsonTask | None:
        # No such task: None, so that the full CLI says so in its words.
        return next((t for t in self.task_dicts() or () if t["id"] == task_id), None)

    def models(self) -> None:
        return None

    def add(self, subject: str, **options: Any) -> JsonTask | None:
        from taskstore import fast_add

        return fast_add(self.path, subject, **options)

    def update(self, task_id: str, **options: Any) -> JsonTask | None:
        from taskstore import fast_update

        return fast_update(self.path, task_id, **options)
