"""The observer as the wave runner calls it: optional methods, and never a reason to stop.

A failing observer (a closed stdout) never changes what the mission does: its first error
becomes a warning, then it is dropped. ``stage_changed`` is optional for observers
(``_stage_workers.StageObserver``): one written before verified joins existed is told of
features and joins only.

Decision: docs/decisions/0501-missions.md
"""

from __future__ import annotations

from collections.abc import Callable

from ..executors._contract import Observer
from ..records._document import Feature, MissionDocument, WaveJoin
from ._stage_workers import StageRun

__all__ = ["GuardedObserver", "Silent"]


class Silent:
    """The observer of a run given none."""

    def feature_changed(self, mission: MissionDocument, feature: Feature) -> None:
        pass

    def wave_joined(self, mission: MissionDocument, join: WaveJoin) -> None:
        pass


class GuardedObserver:
    """Passes progress on to an observer until it raises (see the module)."""

    def __init__(self, warnings: list[str], observer: Observer) -> None:
        self.warnings = warnings
        self.observer: Observer | None = observer

    def feature_changed(self, mission: MissionDocument, feature: Feature) -> None:
        self._call(lambda observer: observer.feature_changed(mission, feature))

    def wave_joined(self, mission: MissionDocument, join: WaveJoin) -> None:
        self._call(lambda observer: observer.wave_joined(mission, join))

    def stage_changed(self, mission: MissionDocument, run: StageRun) -> None:
        def notify(observer: Observer) -> None:
            method = getattr(observer, "stage_changed", None)
            if method is not None:
                method(mission, run)

        self._call(notify)

    def _call(self, notify: Callable[[Observer], None]) -> None:
        if self.observer is None:
            return
        try:
            notify(self.observer)
        except Exception as exc:  # the observer is the caller's code, like a worker
            self.observer = None
            self.warnings.append(
                f"progress display stopped: {type(exc).__name__}: {exc}".rstrip(": ")
            )
