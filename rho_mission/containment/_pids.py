"""Processes by pid: whether one exists, what /proc says of it, a signal to each of several.

For the light readers too: standard library only, no anyio.

Decision: docs/decisions/0704-supervisor.md
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["pid_alive", "signal_each", "stat_fields"]


def pid_alive(pid: int) -> bool:
    """Whether a process *pid* exists (anyone's: one of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def stat_fields(proc_dir: str | Path) -> list[str] | None:
    """The fields of ``<proc_dir>/stat`` after the command name (``state`` first, then
    ``ppid``, ``pgrp``, ``session``...), or None if the process vanished."""
    try:
        text = Path(proc_dir, "stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    # The command name is in parentheses and may itself contain ")" or spaces.
    return text.rpartition(")")[2].split()


def signal_each(pids: Iterable[int], signum: int) -> None:
    """Send *signum* to each of *pids*; one that is gone, or not ours to signal, is skipped."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)
