"""A feature's log for people: its last lines after a failure, and ``rho mission log``.

Logs are ``<mission dir>/logs/<task>.log``, appended to by every attempt; the verify and fix
stages of a verified join write ``logs/verify-<wave>.log`` and ``logs/fix-<wave>.log``. They
are read with ``O_NOFOLLOW`` below a ``logs/`` folder that is checked not to be a link, like rho
writes them: a link planted there is refused, never followed. The path comes from the feature's
id (a safe file name) or the stage's name, never from the ``log`` field of mission.json, which
a hand edit could point anywhere.
"""

from __future__ import annotations

import codecs
import errno
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rho_mission._errors import UnsafePathError
from rho_mission._folders import check_own_folder

if TYPE_CHECKING:
    from rho_mission._mission import Mission
    from rho_mission._models import MissionDocument

__all__ = [
    "TAIL_LINES",
    "failure_lines",
    "follow_log",
    "log_path",
    "open_log",
    "print_log",
    "print_stage_log",
    "printed_nothing",
    "read_at_most",
    "read_tail",
    "stage_wave",
]

TAIL_LINES = 10
_TAIL_BYTES = 64 * 1024
_LINE_CHARS = 500
_POLL = 0.1  # seconds between two looks at a followed log and the journal
# Terminal escapes and control characters (tab kept) of a task's output: shown, they could
# repaint or hide the rest of rho's output.
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]|[\x00-\x08\x0b-\x1f\x7f]")
# The log names of a join's stages (feature ids never take them: they are reserved).
_STAGE = re.compile(r"(?:verify|fix)-([1-9][0-9]{0,5})")


def stage_wave(name: str) -> int | None:
    """The wave of a stage's log name (``verify-2``, ``fix-2``), or None for another name."""
    match = _STAGE.fullmatch(name)
    return None if match is None else int(match[1])


def log_path(mission: MissionDocument, feature_id: str) -> Path:
    """Where the log of *feature_id* of *mission* is (it may not exist yet)."""
    return Path(mission.dir) / "logs" / f"{feature_id}.log"


def open_log(path: Path) -> int | None:
    """A read-only descriptor of the file at *path* (a log, the journal), or None when missing.

    Raises:
        UnsafePathError: its folder (below the mission folder) or the file is a symbolic link.
    """
    check_own_folder(path.parent, path.parent.parent)
    try:
        return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
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
        handle.seek(max(0, size - _TAIL_BYTES))
        data = handle.read(_TAIL_BYTES)
    rows = data.decode("utf-8", "replace").split("\n")
    if size > _TAIL_BYTES:
        rows = rows[1:]  # cut by the window
    if rows and rows[-1] == "":
        rows.pop()
    if output_only:
        from rho_mission._process import LOG_NOTE_PREFIX

        rows = [row for row in rows if not row.startswith(LOG_NOTE_PREFIX)]
    return [_printable(row) for row in rows[-lines:]] if lines > 0 else []


def _printable(line: str) -> str:
    # A carriage return redraws the line on a terminal (progress bars): keep what it shows.
    line = line.rstrip("\r").rsplit("\r", 1)[-1]
    line = _CONTROL.sub("", line)
    return line if len(line) <= _LINE_CHARS else line[: _LINE_CHARS - 1] + "…"


def failure_lines(mission: MissionDocument, feature_id: str) -> list[str]:
    """Where a failed feature's log is, and its last lines, indented under the failure's line.

    Never raises: a log that cannot be read is said so on the path's line.
    """
    path = log_path(mission, feature_id)
    try:
        tail = read_tail(path, output_only=True)
    except UnsafePathError as exc:
        return [f"  log: {path} ({exc})"]
    except OSError as exc:
        return [f"  log: {path} (unreadable: {exc.strerror or exc})"]
    if tail is None:
        return []
    if not tail:
        return [f"  log: {path} (the task printed nothing)"]
    return [f"  log: {path} (last {len(tail)} line(s)):", *(f"  | {row}" for row in tail)]


# -- rho mission log --follow -------------------------------------------------------------------


class _FeatureWatch:
    """Whether a feature (or a join's stage) has ended in the mission's current run, read from
    its journal.

    A run starts with a ``mission`` event (status ``executing``) and a feature ends with a
    ``finish`` event naming it; a stage (``verify-<wave>``, ``fix-<wave>``) runs until its
    wave's ``join`` event. The journal is read on from where the last look stopped.
    """

    def __init__(self, journal: Path, feature_id: str) -> None:
        self.journal = journal
        self.feature_id = feature_id
        self.wave = stage_wave(feature_id)
        self.ended = False
        self._offset = 0
        self._partial = b""

    def look(self) -> bool:
        """Read what the journal gained and return whether the feature has ended."""
        fd = open_log(self.journal)  # the same checks as a log: no link followed
        if fd is None:
            return self.ended
        with os.fdopen(fd, "rb") as handle:
            handle.seek(self._offset)
            data = handle.read()
        self._offset += len(data)
        *lines, self._partial = (self._partial + data).split(b"\n")
        for line in lines:
            self._see(line)
        return self.ended

    def _see(self, line: bytes) -> None:
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):
            return  # a line torn by a crash
        if not isinstance(entry, dict):
            return
        if entry.get("event") == "mission" and entry.get("status") == "executing":
            self.ended = False
        elif self.wave is not None:
            self.ended = self.ended or (
                entry.get("event") == "join" and entry.get("wave") == self.wave
            )
        elif entry.get("event") == "finish" and entry.get("feature_id") == self.feature_id:
            self.ended = True


def follow_log(mission: Mission, feature_id: str) -> None:
    """Print the feature's log as it grows, until it ends or the mission stops running.

    Polls the log and the journal every ``_POLL`` seconds (the kernel notifies no one of a
    file's growth portably); a log that shrank (replaced) is printed again from its start.

    Raises:
        UnsafePathError: the log is a symbolic link.
    """
    from rho_mission._git import GitRepo
    from rho_mission._runlock import is_running

    repo = GitRepo.open(Path(mission.dir))  # once: the poll asks only the run lock
    path = log_path(mission, feature_id)
    watch = _FeatureWatch(Path(mission.dir) / "journal.jsonl", feature_id)
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    offset = 0
    if not os.path.lexists(path):
        what = feature_id if stage_wave(feature_id) is not None else f"task {feature_id}"
        print(f"waiting for {what} to start (mission {mission.id} runs)", file=sys.stderr)
    while True:
        done = watch.look() or not is_running(repo, mission.id)
        offset = _print_from(path, offset, decoder)
        if done:
            sys.stdout.write(decoder.decode(b"", final=True))
            sys.stdout.flush()
            return
        time.sleep(_POLL)


def print_log(path: Path) -> bool:
    """Print the whole log at *path*; return False when there is none.

    Raises:
        UnsafePathError: the log is a symbolic link.
    """
    if not os.path.lexists(path):
        return False
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    _print_from(path, 0, decoder)
    sys.stdout.write(decoder.decode(b"", final=True))
    return True


def printed_nothing(path: Path) -> bool:
    """Whether the log at *path* holds rho's own lines only: its task printed nothing.

    Raises:
        UnsafePathError: the log is a symbolic link.
    """
    from rho_mission._process import LOG_NOTE_PREFIX

    head = read_at_most(path, _TAIL_BYTES)
    if head is None:
        return True
    if len(head) > _TAIL_BYTES:
        return False
    lines = head.decode("utf-8", "replace").splitlines()
    return all(line.startswith(LOG_NOTE_PREFIX) for line in lines if line.strip())


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


def _print_from(path: Path, offset: int, decoder: codecs.IncrementalDecoder) -> int:
    fd = open_log(path)
    if fd is None:
        return offset
    with os.fdopen(fd, "rb") as handle:
        if os.fstat(handle.fileno()).st_size < offset:
            offset = 0
        handle.seek(offset)
        while chunk := handle.read(_TAIL_BYTES):
            offset += len(chunk)
            sys.stdout.write(decoder.decode(chunk))
    sys.stdout.flush()
    return offset


def print_stage_log(mission: Mission, name: str, follow: bool) -> None:
    """``rho mission log MISSION verify-<wave>`` (or ``fix-<wave>``): print, or follow, its log.

    Raises:
        CliError: the mission has no such wave, or the stage wrote no log.
        UnsafePathError: the log is a symbolic link.
    """
    from rho_mission._mission import mission_is_running

    from ._errors import CliError

    wave = stage_wave(name)
    assert wave is not None  # the caller checked the name
    if wave > len(mission.waves):
        raise CliError(f"mission {mission.id} has no wave {wave}: it has {len(mission.waves)}")
    if follow and mission_is_running(mission):
        follow_log(mission, name)
    elif not print_log(log_path(mission, name)):
        why = "its wave's checks have not run" if name.startswith("verify") else "no fix ran"
        raise CliError(f"{name} of mission {mission.id} has no log: {why}")
