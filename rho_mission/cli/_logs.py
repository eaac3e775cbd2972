"""A feature's log for people: its last lines after a failure, and ``rho mission log``.

What reads a log or the journal safely (no link followed) is the library's ``records._logs``; this
module prints and follows what it reads.

Decision: docs/decisions/0805-logs-and-output.md
"""

from __future__ import annotations

import codecs
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rho_mission._errors import UnsafePathError

from ..records._logs import (
    TAIL_BYTES,
    TAIL_LINES,
    log_path,
    open_log,
    read_at_most,
    read_tail,
    stage_wave,
)
from ._plain import shown, terminal_text

if TYPE_CHECKING:
    from ..mission._mission import Mission
    from ..records._document import MissionDocument

_POLL = 0.1  # seconds between two looks at a followed log and the journal

__all__ = [
    "TAIL_LINES",
    "conflict_advice",
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


def conflict_advice(mission: MissionDocument, feature_id: str) -> str | None:
    """What to do about a feature whose merge conflicted and failed (None for any other)."""
    try:
        feature = mission.feature(feature_id)
    except KeyError:  # a stage (verify-2, fix-2), not a feature
        return None
    if feature.conflict is None or feature.conflict.outcome != "failed":
        return None
    return (
        f"  its work is on its branch; 'rho mission resume {mission.id}' runs it again from the "
        "joined head (with the work it met), or resolve such conflicts at the join with "
        "--resolve CMD (or --replay-conflicts N)"
    )


def failure_lines(mission: MissionDocument, feature_id: str) -> list[str]:
    """Where a failed feature's log is, and its last lines, indented under the failure's line;
    for a merge conflict, what to do about it.

    Never raises: a log that cannot be read is said so on the path's line.
    """
    advice = conflict_advice(mission, feature_id)
    return _log_lines(mission, feature_id) + ([advice] if advice else [])


def _log_lines(mission: MissionDocument, feature_id: str) -> list[str]:
    path = log_path(mission, feature_id)
    where = shown(str(path))
    try:
        tail = read_tail(path, output_only=True)
    except UnsafePathError as exc:
        return [f"  log: {where} ({shown(str(exc))})"]
    except OSError as exc:
        return [f"  log: {where} (unreadable: {shown(str(exc.strerror or exc))})"]
    if tail is None:
        return []
    if not tail:
        return [f"  log: {where} (the task printed nothing)"]
    return [f"  log: {where} (last {len(tail)} line(s)):", *(f"  | {row}" for row in tail)]


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
    from ..git._repo import GitRepo
    from ..git._runlock import is_running

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
    from ..containment._process import LOG_NOTE_PREFIX

    head = read_at_most(path, TAIL_BYTES)
    if head is None:
        return True
    if len(head) > TAIL_BYTES:
        return False
    lines = head.decode("utf-8", "replace").splitlines()
    return all(line.startswith(LOG_NOTE_PREFIX) for line in lines if line.strip())


def _print_from(path: Path, offset: int, decoder: codecs.IncrementalDecoder) -> int:
    fd = open_log(path)
    if fd is None:
        return offset
    with os.fdopen(fd, "rb") as handle:
        if os.fstat(handle.fileno()).st_size < offset:
            offset = 0
        handle.seek(offset)
        # To a terminal, a task's escape sequences are shown, not obeyed (a pipe gets the bytes).
        safe = terminal_text if sys.stdout.isatty() else str
        while chunk := handle.read(TAIL_BYTES):
            offset += len(chunk)
            sys.stdout.write(safe(decoder.decode(chunk)))
    sys.stdout.flush()
    return offset


def print_stage_log(mission: Mission, name: str, follow: bool) -> None:
    """``rho mission log MISSION verify-<wave>`` (``fix-<wave>``, a bisection's check run
    ``verify-<wave>-<n>``): print, or follow, its log.

    Raises:
        CliError: the mission has no such wave, or the stage wrote no log.
        UnsafePathError: the log is a symbolic link.
    """
    from ..mission._mission import mission_is_running
    from ._errors import CliError

    wave = stage_wave(name)
    assert wave is not None  # the caller checked the name
    if wave > len(mission.waves):
        raise CliError(f"mission {mission.id} has no wave {wave}: it has {len(mission.waves)}")
    if follow and mission_is_running(mission):
        follow_log(mission, name)
    elif not print_log(log_path(mission, name)):
        why = "no fix ran" if name.startswith("fix") else "its wave's checks have not run"
        if name.count("-") == 2:
            why = f"wave {wave}'s checks were not run that many times (a bisection's runs)"
        raise CliError(f"{name} of mission {mission.id} has no log: {why}")
