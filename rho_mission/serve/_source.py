"""What ``rho serve`` and ``rho mission report`` read: mission folders and the task store.

Runs write these files atomically (mission.json, mission-graph.json: a temporary file renamed
over the old one) or append to them (journal.jsonl, logs), so a reader sees a whole old or a
whole new document without any lock: the server never takes a mission's run lock nor the
store's lock. Inputs from a request are checked before anything is opened: a mission id must be
8 lowercase hex digits and name a folder found by listing ``.rho/missions``; a feature id must
be one of the mission's features. Every path opened is built from those listings, never from
the request's text, and files are opened with ``O_NOFOLLOW`` below folders checked not to be
links.

Decision: docs/decisions/0801-serve.md
"""

from __future__ import annotations

import os
import re
import stat
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..containment._folders import check_own_folder
from ..records._document import FEATURE_STATUSES
from ..records._live import live_changes
from ..records._missionwords import merged_words, what_words
from ..records._places import feature_log, missions_folder
from ..records._stats import integration_words, mission_stats
from ._errors import BadRequestError, NotFoundError, ServeError

if TYPE_CHECKING:
    from ..records._document import MissionDocument

__all__ = [
    "FINAL_STATUSES",
    "MISSION_ID",
    "Repository",
    "check_mission_id",
    "mission_summary",
    "parse_mission",
    "read_file",
]

#: A mission id: what ``Mission.new`` makes (``secrets.token_hex(4)``).
MISSION_ID = re.compile(r"[0-9a-f]{8}")
#: Statuses after which a mission's record changes no more (until a resume).
FINAL_STATUSES = frozenset({"completed", "failed", "partial", "cancelled"})
MISSION_FILE = "mission.json"
#: The name the CLI and the server both take for the mission started last.
LATEST = "latest"
# mission.json of 1,000 features with long descriptions is a few MiB; far beyond is no mission.
_MAX_MISSION_BYTES = 64 * 1024 * 1024


def check_mission_id(mission_id: str) -> str:
    """Return *mission_id* when it has the shape of a mission id.

    Raises:
        BadRequestError: it is not 8 lowercase hex digits (the text is not repeated).
    """
    if not MISSION_ID.fullmatch(mission_id):
        raise BadRequestError("invalid mission id: a mission id is 8 lowercase hex digits")
    return mission_id


def read_file(path: Path, limit: int = _MAX_MISSION_BYTES) -> bytes | None:
    """The bytes of the file at *path*, or None when it is missing; links are never followed.

    Raises:
        UnsafePathError: its folder (below its parent) or the file is a symbolic link.
        ServeError: the file is larger than *limit* bytes.
        OSError: it cannot be read.
    """
    from ..records._logs import read_at_most  # the checked opener of logs and the journal

    data = read_at_most(path, limit)
    if data is None:
        return None
    if len(data) > limit:
        raise ServeError(f"{path.name} is larger than {limit} bytes")
    return data


def parse_mission(data: bytes) -> MissionDocument:
    """The mission document of mission.json's *data*.

    Raises:
        pydantic.ValidationError: *data* is not a mission document.
    """
    from ..records._document import MissionDocument

    return MissionDocument.model_validate_json(data)


def mission_summary(mission: MissionDocument) -> dict[str, Any]:
    """One row of ``GET /v1/missions``: id, status, counts per feature status (of a running
    mission, as its journal says them now: ``records._live``), start and end, what it is about
    and where it was merged (``records._missionwords``)."""
    statuses = {feature.id: feature.status for feature in mission.features}
    if mission.status == "executing":  # between two joins, the journal says what ended
        changes = live_changes(Path(mission.dir), statuses)
        statuses.update({i: change["status"] for i, change in changes.items()})
    counts = Counter(statuses.values())
    return {
        "id": mission.id,
        "status": mission.status,
        "started_at": mission.started_at,
        "completed_at": mission.completed_at,
        "features": len(mission.features),
        "counts": {status: counts.get(status, 0) for status in FEATURE_STATUSES},
        "waves": len(mission.waves),
        "joined_waves": len(mission.wave_joins),
        "what": what_words(
            mission.prompt,
            bool(mission.config.task_store),
            [f.subject or f.id for f in mission.features[:2]],
            len(mission.features),
        ),
        "merged": merged_words(
            mission.merges[-1].model_dump(mode="json") if mission.merges else None,
            mission.cleaned_at is not None,
        )
        or None,
        # How integration went, in words (``records._stats``; None: nothing integrated yet).
        "integration": integration_words(mission_stats(mission.model_dump(mode="json"))),
    }


@dataclass(frozen=True)
class Repository:
    """The mission folders (``<root>/.rho/missions/<id>``) and the task store of one repository."""

    root: Path
    store: Path

    @property
    def missions_folder(self) -> Path:
        """``<root>/.rho/missions``."""
        return missions_folder(self.root)

    def mission_ids(self) -> list[str]:
        """The ids of the mission folders, sorted: real folders named by an id, with mission.json.

        Raises:
            UnsafePathError: ``.rho`` or ``.rho/missions`` is a symbolic link.
        """
        folder = self.missions_folder
        if not check_own_folder(folder, self.root):
            return []
        with os.scandir(folder) as entries:
            names = [
                entry.name
                for entry in entries
                if MISSION_ID.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False)
            ]
        return sorted(name for name in names if _is_regular(folder / name / MISSION_FILE))

    def mission_folder(self, mission_id: str) -> Path:
        """The folder of mission *mission_id* (or ``latest``: the one started last, as the CLI
        has it), as found by listing the missions folder.

        Raises:
            BadRequestError: *mission_id* is not a mission id.
            NotFoundError: no mission folder has that id.
            UnsafePathError: ``.rho`` or ``.rho/missions`` is a symbolic link.
        """
        if mission_id == LATEST:
            newest = self.summaries()
            if not newest:
                raise NotFoundError("no mission in this repository yet")
            return self.missions_folder / str(newest[0]["id"])
        check_mission_id(mission_id)
        for found in self.mission_ids():
            if found == mission_id:
                return self.missions_folder / found
        raise NotFoundError(f"no mission {mission_id} in this repository")

    def mission_bytes(self, mission_id: str) -> bytes:
        """mission.json of mission *mission_id*, as stored.

        Raises:
            BadRequestError, NotFoundError: see ``mission_folder``; NotFoundError also when
                mission.json went away since the listing.
            UnsafePathError: a link where the folder or the file should be.
        """
        data = read_file(self.mission_folder(mission_id) / MISSION_FILE)
        if data is None:
            raise NotFoundError(f"no mission {mission_id} in this repository")
        return data

    def mission(self, mission_id: str) -> MissionDocument:
        """The document of mission *mission_id*.

        Raises:
            BadRequestError, NotFoundError, UnsafePathError: see ``mission_bytes``.
            ServeError: its mission.json is not a mission document.
        """
        from pydantic import ValidationError

        try:
            return parse_mission(self.mission_bytes(mission_id))
        except ValidationError as exc:
            raise ServeError(f"mission {mission_id}: mission.json is not valid") from exc

    def summaries(self) -> list[dict[str, Any]]:
        """A summary of every readable mission, newest first (unreadable ones are left out).

        Raises:
            UnsafePathError: ``.rho`` or ``.rho/missions`` is a symbolic link.
        """
        rows = []
        for mission_id in self.mission_ids():
            try:
                rows.append(mission_summary(self.mission(mission_id)))
            except (ServeError, OSError):
                continue  # removed or torn by hand since the listing: as `rho mission list`
        return sorted(rows, key=lambda row: (row["started_at"] or "", row["id"]), reverse=True)

    def log_tail(self, mission_id: str, feature_id: str, lines: int) -> list[str] | None:
        """The last *lines* lines of a feature's log, made printable; None when it has none.

        Raises:
            BadRequestError, NotFoundError: a bad or unknown mission id, or a feature id that
                is not one of the mission's features.
            UnsafePathError: a link where the logs folder or the log should be.
        """
        from ..records._logs import read_tail

        mission = self.mission(mission_id)
        features = {feature.id: feature.id for feature in mission.features}
        known = dict(features)
        # The checks of a wave (--verify, --fix) log as verify-<wave> and fix-<wave>.
        for join in mission.wave_joins:
            if join.verification.status != "skipped":
                known.update({f"{stage}-{join.wave}": f"{stage}-{join.wave}" for stage in _STAGES})
        name = known.get(feature_id)
        if name is None:
            raise NotFoundError(f"mission {mission_id} has no such feature")
        # name comes from the document (a checked feature id, or a stage and a wave number);
        # the request's text is only compared with it.
        path = feature_log(self.mission_folder(mission_id), name)
        # A feature's tail is its task's output; rho's lines around each attempt are left out
        # (a stage's lines, which say why its checks failed, are kept).
        return read_tail(path, lines, output_only=name in features)


_STAGES = ("verify", "fix")


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False
