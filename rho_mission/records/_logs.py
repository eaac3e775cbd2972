"""Reading rho's logs and a mission's journal without following a link: the library's side.

Logs are ``<mission dir>/logs/<task>.log``, appended to by every attempt; the verify and fix
stages of a verified join write ``logs/verify-<wave>.log`` and ``logs/fix-<wave>.log``, the
planning stage ``logs/plan.log``; the other stages one folder down (``logs/resolve/<task>.log``,
``logs/setup/<worktree>.log``: the rule is ``records._places``'s). They are read with
``O_NOFOLLOW`` below folders that are checked not to be links from the mission folder down,
like rho writes them: a link planted there is refused, never followed. The path comes from the
feature's id (a safe file name) or the stage's name, never from the ``log`` field of
mission.json, which a hand edit could point anywhere.

The CLI (``cli._logs``: printing, following), the server and the MCP tools all read through
here, so none of them imports another's module.

Decision: docs/decisions/0805-logs-and-output.md
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from .._errors import UnsafePathError
from ..containment._folders import check_own_folder, open_unfollowed
from ._places import LOGS, feature_log

if TYPE_CHECKING:
    from ._document import MissionDocument

__all__ = [
    "TAIL_BYTES",
    "TAIL_LINES",
    "log_path",
    "open_log",
    "printable",
    "read_at_most",
    "read_tail",
    "stage_wave",
]

TAIL_LINES = 10
TAIL_BYTES = 64 * 1024
_LINE_CHARS = 500
# Terminal escapes and control characters (tab kept) of a task's output: shown, they could
# repaint or hide the rest of rho's output. The C1 controls too (U+009B is a CSI of its own to
# a terminal that takes 8-bit controls).
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]|[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# The log names of a join's stages (feature ids never take them: they are reserved).
# verify-<wave>, fix-<wave>, and a bisection's check runs verify-<wave>-<n> (decision 0515).
_STAGE = re.compile(r"(?:verify|fix)-([1-9][0-9]{0,5})|verify-([1-9][0-9]{0,5})-[1-9][0-9]{0,5}")


def stage_wave(name: str) -> int | None:
    """The wave of a stage's log name (``verify-2``, ``fix-2``, a bisection's ``verify-2-3``),
    or None for another name."""
    match = _STAGE.fullmatch(name)
    return None if match is None else int(match[1] or match[2])


def log_path(mission: MissionDocument, feature_id: str) -> Path:
    """Where the log of *feature_id* of *mission* is (it may not exist yet)."""
    return feature_log(mission.dir, feature_id)


def open_log(path: Path) -> int | None:
    """A read-only descriptor of the file at *path* (a log, the journal), or None when missing.

    Raises:
        UnsafePathError: its folders (below the mission folder) or the file is a symbolic link.
    """
    top = path.parent.parent
    if top.name == LOGS:  # a stage's log, one folder below logs/: checked from the mission's
        top = top.parent
    check_own_folder(path.parent, top)
    try:
        return open_unfollowed(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePathError(path, "is a symbolic link") from exc
        raise


def read_tail(
    path: Path, lines: int = TAIL_LINES, *, output_only: bool = False
) -> list[str] | None:
    """The last *lines* lines of the log at *path*, made printable; None when it is missing.

    With *output_only*, rho's own lines (each attempt's start and end) are left out.

    Raises:
        UnsafePathError: the log is a symbolic link.
        OSError: it cannot be read.
    """
    fd = open_log(path)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        handle.seek(max(0, size - TAIL_BYTES))
        data = handle.read(TAIL_BYTES)
    rows = data.decode("utf-8", "replace").split("\n")
    if size > TAIL_BYTES:
        rows = rows[1:]  # cut by the window
    if rows and rows[-1] == "":
        rows.pop()
    if output_only:
        from ..containment._process import LOG_NOTE_PREFIX

        rows = [row for row in rows if not row.startswith(LOG_NOTE_PREFIX)]
    return [printable(row) for row in rows[-lines:]] if lines > 0 else []


def printable(line: str) -> str:
    """*line* as a terminal may show it: control characters out, at most 500 characters."""
    # A carriage return redraws the line on a terminal (progress bars): keep what it shows.
    line = line.rstrip("\r").rsplit("\r", 1)[-1]
    line = _CONTROL.sub("", line)
    return line if len(line) <= _LINE_CHARS else line[: _LINE_CHARS - 1] + "…"


def read_at_most(path: Path, limit: int) -> bytes | None:
    """The first *limit* + 1 bytes of the file at *path* (a longer file shows it by the extra
    byte), read like a log (`open_log`); None when it is missing.

    Raises:
        UnsafePathError: its folder or the file is a symbolic link.
        OSError: it cannot be read.
    """
    fd = open_log(path)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as handle:
        return handle.read(limit + 1)
