"""``rho mission show`` and ``rho mission list``: rich views of mission folders."""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table
from rich.text import Text

from rho_mission._joins import stopped_ids

from ._logs import log_path
from ._render import console, natural_key, naturally, status_text

if TYPE_CHECKING:
    from rho_mission._mission import Mission
    from rho_mission._models import Feature, WaveJoin

__all__ = ["print_mission", "print_mission_list"]


def _seconds(start: str | None, end: str | None) -> str:
    if not start or not end:
        return ""
    delta = datetime.fromisoformat(end) - datetime.fromisoformat(start)
    return f"{delta.total_seconds():.1f}s"


def print_mission(mission: Mission, state: str) -> None:
    """Header, one table of features by wave, then the joins.

    *state* is the mission's status, or ``interrupted`` (see ``mission_state``).
    """
    out = console()
    out.print(Text.assemble(("mission " + mission.id, "bold"), "  ", status_text(state)))
    if state == "interrupted":
        out.print(  # soft_wrap: a command to copy must not be cut into lines
            "no process runs this mission any more (it was killed or crashed): "
            f"resume it with 'rho mission resume {escape(mission.dir)}'",
            soft_wrap=True,
        )
    out.print(f"prompt: {escape(mission.prompt)}")
    out.print(f"base {mission.base_commit[:12]}  integration {escape(mission.integration_branch)}")
    out.print(
        f"started {mission.started_at or '-'}  completed {mission.completed_at or '-'}  "
        f"took {_seconds(mission.started_at, mission.completed_at) or '-'}"
    )
    out.print(_feature_table(mission))
    for line in _feature_details(mission):
        out.print(line, soft_wrap=True)
    for join in mission.wave_joins:
        out.print(f"{join.summary}  ({_seconds(join.started_at, join.completed_at)})")
        for line in _verification_lines(mission, join):
            out.print(line, soft_wrap=True)
    if mission.held:
        out.print(f"not run: {len(mission.held)} task(s) held by the task store's statuses")
        for held in sorted(mission.held, key=lambda h: natural_key(h.id)):
            out.print(f"  {escape(held.id)}: {escape(held.reason)}", soft_wrap=True)


def _feature_table(mission: Mission) -> Table:
    table = Table(title="features", title_justify="left")
    for column in ("wave", "task", "status", "tries", "took", "files", "branch", "note"):
        table.add_column(column, overflow="fold")
    stopped = stopped_ids(mission.wave_joins)
    for number, wave in enumerate(mission.waves, start=1):
        for feature_id in naturally(wave):
            feature = mission.feature(feature_id)
            table.add_row(str(number), *_feature_row(feature, stopped.get(feature_id)))
    return table


def _feature_row(feature: Feature, stopped: str | None) -> list[str | Text]:
    files = str(len(feature.handoff.files_changed)) if feature.handoff else ""
    note = feature.error or (feature.handoff.summary if feature.handoff else feature.description)
    shown = stopped if feature.status == "pending" and stopped else feature.status
    return [
        escape(feature.id),
        status_text(shown),
        str(feature.attempts),
        _seconds(feature.started_at, feature.completed_at),
        files,
        escape(feature.branch or "") if _ran(feature) else "",  # only then has it a branch
        escape(note),
    ]


def _ran(feature: Feature) -> bool:
    return feature.attempts > 0 or feature.status != "pending"


def _feature_details(mission: Mission) -> list[Text]:
    """Per feature that ran: status, attempts, duration and error, then where its log is."""
    lines: list[Text] = []
    for feature_id in (i for wave in mission.waves for i in naturally(wave)):
        feature = mission.feature(feature_id)
        if not _ran(feature):
            continue
        took = _seconds(feature.started_at, feature.completed_at)
        head = f"{feature.id}: {feature.status}, {feature.attempts} attempt(s)"
        head += f", {took}" if took else ""
        head += f": {feature.error}" if feature.error else ""
        lines.append(Text(head))
        path = log_path(mission, feature.id)
        lines.append(Text(f"  log: {path}" + ("" if os.path.lexists(path) else " (none written)")))
    return lines


def _verification_lines(mission: Mission, join: WaveJoin) -> list[Text]:
    """What the checks of a verified join said (``--verify``), and where their logs are."""
    checked = join.verification
    if checked.status == "skipped":
        return []
    head = f"  verification: {checked.status}, {checked.attempts} check(s)"
    if checked.fix_attempts:
        head += f", {checked.fix_attempts} fix attempt(s)"
    if checked.status != "running":
        head += f", {checked.duration_ms / 1000:.1f}s"
    head += f": {checked.error}" if checked.error and checked.status == "failed" else ""
    lines = [Text(head)]
    if checked.fix_error:
        lines.append(Text(f"  last fix: {checked.fix_error}"))
    names = [f"verify-{join.wave}"] + ([f"fix-{join.wave}"] if checked.fix_attempts else [])
    for name in names:
        path = log_path(mission, name)
        lines.append(Text(f"  log: {path}" + ("" if os.path.lexists(path) else " (none written)")))
    return lines


def print_mission_list(missions: Sequence[tuple[Mission, str]]) -> None:
    """One row per (mission, state): id, state, counts, start, folder."""
    table = Table(title=f"{len(missions)} mission(s)", title_justify="left")
    for column in ("id", "status", "features", "completed", "started", "dir"):
        table.add_column(column, overflow="fold")
    for mission, state in missions:
        done = sum(1 for f in mission.features if f.status == "completed")
        table.add_row(
            mission.id,
            status_text(state),
            str(len(mission.features)),
            str(done),
            mission.started_at or "",
            escape(mission.dir),
        )
    console().print(table)
    if any(state == "interrupted" for _, state in missions):
        console().print("interrupted: killed or crashed; resume with 'rho mission resume DIR'")
