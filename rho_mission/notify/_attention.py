"""A run with attention: the notifier told of culprits as joins find them, and of the end.

``attention(mission, observer, warnings)`` wraps a run (``mission._mission``): the observer it
yields passes everything on to *observer* and, at a join whose verification names culprits
(``Verification.culprit_ids``), starts sending a ``culprit_found`` event beside the run (a
join recorded twice with the same culprits sends once). When the run ends, however it ends
(a cancellation included: shielded, within the notifier's time limit), a mission whose status
is an end sends its end event. The culprit events still being sent are awaited first.

Decision: docs/decisions/0806-notifications.md
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable

import anyio

from ..executors._contract import Observer
from ..records._document import Feature, MissionDocument, WaveJoin
from ._event import culprit_event, end_event
from ._send import Notifier

__all__ = ["CulpritWatch", "attention"]

# The statuses a run ends with (``planning`` or ``executing``: it crashed, nothing to say).
_ENDED = frozenset({"completed", "failed", "partial", "cancelled"})


class CulpritWatch:
    """An observer passing progress on to *inner*, calling *found* once per join's culprits.

    An *inner* that raises is dropped as the engine drops an observer (its first error one
    line of *warnings*), and the watch goes on: a closed stdout never silences the notifier.
    """

    def __init__(
        self,
        inner: Observer | None,
        found: Callable[[MissionDocument, WaveJoin], None],
        warnings: list[str],
    ) -> None:
        self.inner = inner
        self.found = found
        self.warnings = warnings
        self.seen: set[tuple[int, tuple[str, ...]]] = set()

    def feature_changed(self, mission: MissionDocument, feature: Feature) -> None:
        """Pass it on."""
        self._pass_on(lambda inner: inner.feature_changed(mission, feature))

    def wave_joined(self, mission: MissionDocument, join: WaveJoin) -> None:
        """Note its culprits, then pass it on."""
        key = (join.wave, tuple(join.verification.culprit_ids))
        if join.verification.culprit_ids and key not in self.seen:
            self.seen.add(key)
            self.found(mission, join)
        self._pass_on(lambda inner: inner.wave_joined(mission, join))

    def stage_changed(self, mission: MissionDocument, run: object) -> None:
        """Pass it on to an observer that takes it (``engine._stage_workers.StageObserver``)."""
        method = getattr(self.inner, "stage_changed", None)
        if method is not None:
            self._pass_on(lambda _: method(mission, run))

    def _pass_on(self, call: Callable[[Observer], None]) -> None:
        if self.inner is None:
            return
        try:
            call(self.inner)
        except Exception as exc:  # the caller's observer, like a worker: its error is a warning
            self.inner = None
            self.warnings.append(
                f"progress display stopped: {type(exc).__name__}: {exc}".rstrip(": ")
            )


@contextlib.asynccontextmanager
async def attention(
    mission: MissionDocument, observer: Observer | None, warnings: list[str]
) -> AsyncIterator[Observer | None]:
    """Yield the observer the run should use: *observer* itself when *mission* has no
    notifier, else one that notifies (see the module)."""
    notifier = Notifier.for_mission(mission, warnings)
    if notifier is None:
        yield observer
        return
    try:
        async with anyio.create_task_group() as group:

            def found(document: MissionDocument, join: WaveJoin) -> None:
                group.start_soon(notifier.send, culprit_event(document, join))

            try:
                yield CulpritWatch(observer, found, warnings)
            finally:
                with anyio.CancelScope(shield=True):
                    if mission.status in _ENDED:
                        await notifier.send(end_event(mission))
    except BaseExceptionGroup as group_error:
        # The notifier's sends never raise: a lone error is the run's own, raised as itself
        # (a library caller catches MissionError, not a group of one).
        raise _lone(group_error) from group_error.__cause__


def _lone(group: BaseExceptionGroup[BaseException]) -> BaseException:
    error: BaseException = group
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return group if error is group else error
