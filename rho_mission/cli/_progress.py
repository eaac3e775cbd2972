"""Progress of a running mission: a live rich table on a terminal, plain lines otherwise.

A feature's error, a stage's and the paths of a conflicted merge hold what a task chose (its
files' names, its output): each is printed through ``_plain.shown``, one line with every
control character written as an escape, never obeyed by the terminal.

Decision: docs/decisions/0805-logs-and-output.md
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from typing import TYPE_CHECKING, TextIO

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..records._logs import log_path
from ..records._missionwords import conflict_words
from ._logs import failure_lines
from ._plain import shown
from ._render import status_text

if TYPE_CHECKING:
    from ..engine._stage_workers import StageRun
    from ..records._document import Feature, MissionDocument, WaveJoin

__all__ = ["LiveProgress", "PlainProgress", "conflict_kept", "progress_for", "stage_line"]


class PlainProgress:
    """One line per feature transition and per join, for logs and pipes.

    A closed or failing output never changes what a mission does: after the first ``OSError``
    on *stream* (the reader of ``| head -1`` went away, a full disk) the lines stop and the
    mission runs on. The engine fails a mission whose observer raises, so nothing may.
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.writing = True

    def feature_changed(self, mission: MissionDocument, feature: Feature) -> None:
        """Print ``<task> <status>`` (with the error when it failed, with how its conflicted
        merge was kept when it was).

        A failure is followed by where its log is and the log's last lines.
        """
        line = f"{feature.id} {feature.status}"
        if feature.status in ("failed", "cancelled") and feature.error:
            line += f": {shown(feature.error)}"
        kept = conflict_kept(feature)
        if kept is not None:
            line += f" ({kept})"
        self._print(line)
        if feature.status == "failed":
            for tail_line in failure_lines(mission, feature.id):
                self._print(tail_line)

    def wave_joined(self, mission: MissionDocument, join: WaveJoin) -> None:
        """Print the join's summary."""
        self._print(join.summary)

    def stage_changed(self, mission: MissionDocument, run: StageRun) -> None:
        """Print ``verify-<wave> <status>`` or ``fix-<wave> <status>`` (a failure with its error,
        where its log is and the log's last lines)."""
        self._print(stage_line(run))
        if run.status == "failed":
            for tail_line in stage_failure_lines(mission, run):
                self._print(tail_line)

    def _print(self, line: str) -> None:
        if not self.writing:
            return
        try:
            print(line, file=self.stream, flush=True)
        except OSError:
            # Progress is a courtesy: its loss is no error of the mission's. What became of the
            # stream itself is the CLI's top-level handler's business (``_main.run``).
            self.writing = False


class LiveProgress:
    """A rich table of waves and features, redrawn by rich's own refresh thread (8 per second).

    Missions up to ``FEATURE_ROWS`` features get one row per feature; larger ones one row per
    wave with its counts, so that a redraw stays cheap at 1,000 features.
    """

    FEATURE_ROWS = 40

    def __init__(self, mission: MissionDocument, console: Console) -> None:
        self.mission = mission
        self.started = time.monotonic()
        self.live = Live(
            get_renderable=self._table, console=console, refresh_per_second=8, transient=False
        )

    def __enter__(self) -> LiveProgress:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.refresh()
        self.live.__exit__(None, None, None)

    def feature_changed(self, mission: MissionDocument, feature: Feature) -> None:
        """Print a failure, where its log is and the log's last lines above the table.

        Other changes show at the next refresh.
        """
        kept = conflict_kept(feature)
        if kept is not None:
            self.live.console.print(Text(f"{feature.id} {feature.status} ({kept})"))
        if feature.status != "failed":
            return
        lines = [f"{feature.id} failed: {shown(feature.error or 'no error recorded')}"]
        lines += failure_lines(mission, feature.id)
        self.live.console.print(Text("\n".join(lines)), soft_wrap=True)

    def wave_joined(self, mission: MissionDocument, join: WaveJoin) -> None:
        """Print the join summary above the table."""
        self.live.console.print(join.summary)

    def stage_changed(self, mission: MissionDocument, run: StageRun) -> None:
        """Print each run of a verify or fix stage above the table; a failure with its log."""
        lines = [stage_line(run)]
        if run.status == "failed":
            lines += stage_failure_lines(mission, run)
        self.live.console.print(Text("\n".join(lines)), soft_wrap=True)

    def _table(self) -> Table:
        mission = self.mission
        elapsed = time.monotonic() - self.started
        table = Table(title=f"mission {mission.id}  {elapsed:5.1f}s", title_justify="left")
        by_id = {feature.id: feature for feature in mission.features}
        if len(by_id) <= self.FEATURE_ROWS:
            _feature_rows(table, mission.waves, by_id)
        else:
            _wave_rows(table, mission.waves, by_id)
        return table


def _feature_rows(table: Table, waves: list[list[str]], by_id: dict[str, Feature]) -> None:
    for column in ("wave", "task", "status", "attempts", "subject"):
        table.add_column(column, overflow="ellipsis", no_wrap=True)
    for number, wave in enumerate(waves, start=1):
        for feature in map(by_id.__getitem__, wave):
            table.add_row(
                str(number),
                escape(feature.id),
                status_text(feature.status),
                str(feature.attempts),
                escape(shown(feature.subject)),
            )


def _wave_rows(table: Table, waves: list[list[str]], by_id: dict[str, Feature]) -> None:
    statuses = ("in_progress", "completed", "failed", "cancelled", "pending")
    table.add_column("wave")
    table.add_column("features")
    for status in statuses:
        table.add_column(status_text(status))
    for number, wave in enumerate(waves, start=1):
        counts = Counter[str](by_id[feature_id].status for feature_id in wave)
        table.add_row(str(number), str(len(wave)), *(str(counts[s] or "") for s in statuses))


def conflict_kept(feature: Feature) -> str | None:
    """``merge conflict in a.py with task_1, resolved`` for a completed feature whose
    conflicted merge the resolver or a replay kept; None for any other."""
    conflict = feature.conflict
    if feature.status != "completed" or conflict is None or conflict.outcome == "failed":
        return None
    return shown(f"{conflict_words(conflict.paths, conflict.with_)}, {conflict.outcome}")


def stage_line(run: StageRun) -> str:
    """``verify-2 running (check 1)``, ``fix-2 failed (attempt 1 of 3): <error>``..."""
    if run.stage == "verify":
        count = f"check {run.attempt}"
    else:
        count = f"attempt {run.attempt} of {run.max_attempts}"
    line = f"{run.name} {run.status} ({count})"
    return line + f": {shown(run.error)}" if run.error else line


def progress_for(mission: MissionDocument, as_json: bool) -> LiveProgress | PlainProgress:
    """Live on a terminal (and not --json); plain lines otherwise, on stderr with --json."""
    if not as_json and sys.stdout.isatty():
        return LiveProgress(mission, Console())
    return PlainProgress(sys.stderr if as_json else sys.stdout)


def stage_failure_lines(mission: MissionDocument, run: StageRun) -> list[str]:
    """Where a failed stage's log is and its last lines; a bisection's probe of a failed join
    (``verify-<wave>-<n>``) only names its log: a search prints several, each failing as the
    join's first run did, whose lines are already above."""
    if run.stage == "verify" and run.name != f"verify-{run.wave}":
        return [f"  log: {shown(str(log_path(mission, run.name)))}"]
    return failure_lines(mission, run.name)
