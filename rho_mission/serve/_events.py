"""``GET /v1/missions/{id}/events``: a mission as Server-Sent Events, until it ends.

The stream is made of three kinds of events:

- ``mission``: the whole mission.json (compact JSON), first on connection, then each time the
  file is replaced (the engine rewrites it when a run starts, at every join and at the end);
  one that says the run ended comes after every journal record of the run (causal order:
  a client that stops there has seen every feature end);
- ``journal``: one journal.jsonl record, with ``id:`` its line number (its ``seq``), from the
  first line (or after the ``Last-Event-ID`` a reconnecting client sends) and then as they are
  appended: ``dispatch`` and ``finish`` say when a feature starts and ends between joins;
- ``end``: ``{"status": ...}`` once the mission reached a final status and every journal
  record of the run was sent (or its folder was removed); the stream then closes;
- ``error``: ``{"error": ...}`` when the mission's files cannot be read safely (a link planted
  at mission.json, say), followed by ``end``: the stream closes, the server goes on.

A client that reconnects by itself (a browser's ``EventSource``) should close on ``end``.

Both files are polled (``stat``, then a read of what changed), since no portable notification
of a file's growth exists; comments (``: keepalive``) keep an idle connection open. A mission
left ``executing`` by a crash never ends: its stream stays open until the client leaves.

Decision: docs/decisions/0801-serve.md
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio

from .._errors import MissionError
from ._source import FINAL_STATUSES, read_file

__all__ = ["MissionFollower", "event_stream", "sse_frame"]

_POLL = 0.1  # seconds between two looks at the mission's files
_KEEPALIVE = 15.0  # seconds of silence before a comment line
# A final mission.json with a journal that never records the end (a copy, an old folder): after
# this many quiet looks, the record is taken as final.
_QUIET_LOOKS = 5
# ... and only once mission.json is this many seconds old.
_SETTLED = 5.0
_CHUNK = 1024 * 1024


def sse_frame(event: str, data: str, event_id: int | None = None) -> str:
    """One Server-Sent Event; *data* must be one line (compact JSON is)."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {data}\n\n"


class MissionFollower:
    """Reads what a mission's folder gained since the last look, as SSE frames."""

    def __init__(self, folder: Path, after: int = 0) -> None:
        self.folder = folder
        self.after = after
        self.status: str | None = None  # of the last mission.json sent
        self.gone = False  # the folder was removed (``rho mission clean --purge``)
        self.journal_final = False  # whether the journal's last ``mission`` record is final
        self._signature: tuple[int, int, int] | None = None
        self._offset = 0
        self._lines = 0
        self._partial = b""
        self._quiet = 0

    def look(self) -> list[str]:
        """The frames of what changed since the last look, in causal order.

        A mission.json that says the run ended comes after the whole journal: the engine
        appends every record of a run (each feature's ``finish``) before it writes that file,
        and only the journal's own ``mission`` end after it; so a client that stops on a
        final status has seen every feature's end (under load the journal's last records and
        the file could otherwise arrive in one look, the file first). Any other mission.json
        comes first: the journal records after it (a ``dispatch`` between two joins) are newer
        than it, and a client applies them on top of it.

        Raises:
            UnsafePathError: a link where the mission's folder or files should be.
            OSError: a file cannot be read.
        """
        frames = self._ordered()
        self._quiet = 0 if frames else self._quiet + 1
        self.gone = not os.path.lexists(self.folder)
        return frames

    @property
    def ended(self) -> bool:
        """Whether the mission reached a final status and the journal says so too (or, for a
        record no run is writing any more, is quiet), or its folder is gone."""
        final = self.status in FINAL_STATUSES
        quiet = self._quiet >= _QUIET_LOOKS and self._settled()
        return self.gone or (final and (self.journal_final or quiet))

    def _settled(self) -> bool:
        # A final mission.json written a while ago: no run is about to add the journal's end
        # (a live run writes it right after mission.json, but a loaded machine may lag).
        try:
            written = os.stat(self.folder / "mission.json", follow_symlinks=False).st_mtime
        except OSError:
            return True
        return time.time() - written >= _SETTLED

    def final_frames(self) -> list[str]:
        """What mission.json and the journal gained once more, and the ``end`` event: every
        record the run wrote is sent before the stream says it ended.

        Raises:
            UnsafePathError, OSError: see ``look``.
        """
        return [*self._ordered(), sse_frame("end", json.dumps({"status": self.status}))]

    def _ordered(self) -> list[str]:
        mission = self._mission_frames()
        if mission and self.status in FINAL_STATUSES:
            return self._journal_frames(to_end=True) + mission  # every record before the end
        return mission + self._journal_frames()

    def _mission_frames(self) -> list[str]:
        path = self.folder / "mission.json"
        try:
            info = os.stat(path, follow_symlinks=False)
        except FileNotFoundError:
            return []
        signature = (info.st_ino, info.st_size, info.st_mtime_ns)
        if signature == self._signature:
            return []
        data = read_file(path)
        if data is None:
            return []
        self._signature = signature
        try:
            document = json.loads(data)
        except (ValueError, RecursionError):
            return []  # not a mission document: nothing to show (the GET route says so)
        if not isinstance(document, dict):
            return []
        self.status = document.get("status")
        return [sse_frame("mission", json.dumps(document, separators=(",", ":")))]

    def _journal_frames(self, *, to_end: bool = False) -> list[str]:
        """The frames of the journal's new lines: at most ``_CHUNK`` bytes of them, or, with
        *to_end* (a mission event follows), every one written by now."""
        from ..records._logs import open_log

        fd = open_log(self.folder / "journal.jsonl")
        if fd is None:
            return []
        frames: list[str] = []
        with os.fdopen(fd, "rb") as handle:
            handle.seek(self._offset)
            while data := handle.read(_CHUNK):
                self._offset += len(data)
                *lines, self._partial = (self._partial + data).split(b"\n")
                frames += [f for line in lines if (f := self._journal_frame(line)) is not None]
                if not to_end or len(data) < _CHUNK:
                    break
        return frames

    def _journal_frame(self, line: bytes) -> str | None:
        self._lines += 1
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            return None  # a line torn by a crash
        if not isinstance(record, dict):
            return None
        if record.get("event") == "mission":
            self.journal_final = record.get("status") in FINAL_STATUSES
        if self._lines <= self.after:
            return None
        return sse_frame("journal", json.dumps(record, separators=(",", ":")), self._lines)


async def event_stream(
    folder: Path, after: int = 0, poll: float = _POLL, keepalive: float = _KEEPALIVE
) -> AsyncIterator[str]:
    """The SSE frames of the mission in *folder*, until it reaches a final status.

    A file that cannot be read safely (``MissionFollower.look`` raises) ends the stream with
    an ``error`` event and ``end``; nothing is raised.
    """
    follower = MissionFollower(folder, after)
    silent = 0.0
    while True:
        try:
            frames = await anyio.to_thread.run_sync(follower.look)
            ended = follower.ended
            if ended:
                frames += await anyio.to_thread.run_sync(follower.final_frames)
        except (MissionError, OSError) as exc:
            # A link planted where the mission's files are, a file gone unreadable: the client
            # is told, the stream ends; the server goes on.
            yield sse_frame("error", json.dumps({"error": str(exc)}))
            yield sse_frame("end", json.dumps({"status": follower.status}))
            return
        for frame in frames:
            yield frame
        if ended:
            return
        silent = 0.0 if frames else silent + poll
        if silent >= keepalive:
            silent = 0.0
            yield ": keepalive\n\n"
        await anyio.sleep(poll)
