"""Progress of a running mission: a live rich table on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, TextIO

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from ._render import status_text

if TYPE_CHECKING:
    from rho_mission._mission import Mission
    from rho_mission._models import Feature, WaveJoin

__all__ = ["LiveProgress", "PlainProgress", "progress_for"]


class PlainProgress:
    """One line per feature transition and per join, for logs and pipes."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def feature_changed(self, mission: Mission, feature: Feature) -> None:
        """Print ``<task> <status>`` (with the error when it failed)."""
        line = f"{feature.id} {feature.status}"
        if feature.status in ("failed", "cancelled") and feature.error:
            line += f": {feature.error}"
        print(line, file=self.stream, flush=True)

    def wave_joined(self, mission: Mission, join: WaveJoin) -> None:
        """Print the join's summary."""
        print(join.summary, file=self.stream, flush=True)


class LiveProgress:
    """A rich table of waves and features, redrawn as they change."""

    def __init__(self, mission: Mission, console: Console) -> None:
        self.mission = mission
        self.started = time.monotonic()
        self.live = Live(self._table(), console=console, refresh_per_second=8, transient=False)

    def __enter__(self) -> LiveProgress:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.update(self._table())
        self.live.__exit__(None, None, None)

    def feature_changed(self, mission: Mission, feature: Feature) -> None:
        """Redraw the table."""
        self.live.update(self._table())

    def wave_joined(self, mission: Mission, join: WaveJoin) -> None:
        """Redraw the table and print the join summary above it."""
        self.live.console.print(join.summary)
        self.live.update(self._table())

    def _table(self) -> Table:
        mission = self.mission
        elapsed = time.monotonic() - self.started
        table = Table(title=f"mission {mission.id}  {elapsed:5.1f}s", title_justify="left")
        for column in ("wave", "task", "status", "attempts", "subject"):
            table.add_column(column, overflow="ellipsis", no_wrap=True)
        for number, wave in enumerate(mission.waves, start=1):
            for feature_id in wave:
                feature = mission.feature(feature_id)
                table.add_row(
                    str(number),
                    escape(feature.id),
                    status_text(feature.status),
                    str(feature.attempts),
                    escape(feature.description),
                )
        return table


def progress_for(mission: Mission, as_json: bool) -> LiveProgress | PlainProgress:
    """Live on a terminal (and not --json); plain lines otherwise, on stderr with --json."""
    if not as_json and sys.stdout.isatty():
        return LiveProgress(mission, Console())
    return PlainProgress(sys.stderr if as_json else sys.stdout)
