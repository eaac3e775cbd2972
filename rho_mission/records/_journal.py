"""journal.jsonl: an append-only log of what the engine observed, metadata and digests only.

Each line is one JSON object: ``seq``, ``at``, ``event`` (``mission``, ``dispatch``, ``finish``,
``join``) and counts, statuses, ids and ``*_sha256`` digests. Prompts, descriptions, commands,
branch names, paths, errors and output never appear in clear. Lines are flushed as they are
written and fsynced at every join, when mission.json becomes durable too. Between two joins the
journal alone knows what ended: a resume reads it back (``git._refs``, ``engine._adopt``).

Decision: docs/decisions/0510-mission-records.md
"""

from __future__ import annotations

import json
import os
import weakref
from pathlib import Path
from typing import Any

from ..containment._folders import open_private
from ._logs import open_log

__all__ = ["Journal", "journal_entries"]


class Journal:
    """Appends observations to ``journal.jsonl`` (created with mode 0600)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._seq = _count_lines(path)
        self._fd: int | None = None

    def record(self, event: str, at: str, *, durable: bool = False, **fields: Any) -> None:
        """Append one observation; with *durable*, fsync before returning."""
        self._seq += 1
        line = json.dumps({"seq": self._seq, "at": at, "event": event, **fields}, sort_keys=True)
        os.write(self._descriptor(), (line + "\n").encode())
        if durable:
            os.fsync(self._descriptor())

    def _descriptor(self) -> int:
        # Opened once, following no link (open_private), and held: every later append goes to
        # the file rho made, whatever a task plants at its path since. A mission appends some
        # five lines a feature, and each open walked the folders from the repository down.
        if self._fd is None:
            self._fd = open_private(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            weakref.finalize(self, os.close, self._fd)
        return self._fd


def _count_lines(path: Path) -> int:
    try:
        with path.open("rb") as handle:
            return sum(1 for _ in handle)
    except FileNotFoundError:
        return 0


def journal_entries(path: Path) -> list[dict[str, Any]]:
    """The observations of the journal at *path*, in order, read following no link; a line
    torn by a crash (or not rho's: not one JSON object) is skipped, and a missing journal has
    none.

    Raises:
        UnsafePathError: the journal or the mission folder is a symbolic link.
    """
    fd = open_log(path)
    if fd is None:
        return []
    with os.fdopen(fd, "rb") as handle:
        lines = handle.read().decode("utf-8", "replace").splitlines()
    entries = []
    for line in lines:
        try:
            entry = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries
