"""The order people read ids in, and the order a wave's tasks start in.

``natural_key`` reads numbers as numbers (``task_2`` before ``task_10``): the views list ids
so, and a wave starts its tasks so, after their priority (0 first: ``rho task update
--priority``). Only the start follows priority: a join merges in its own fixed order (sorted
ids), whatever order tasks started or finished in, so the same tasks give the same tree.

Decision: docs/decisions/0502-the-users-loop.md
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

__all__ = ["DEFAULT_PRIORITY", "natural_key", "naturally", "start_order"]

# As the task store's (``taskstore.DEFAULT_PRIORITY``), which a feature made elsewhere (a
# library caller's, a planned one) is taken to have.
DEFAULT_PRIORITY = 2
_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that reads numbers as numbers: task_2 before task_10 (for people's views;
    files keep the spec's plain order)."""
    return tuple(
        (1, int(part)) if part.isdigit() else (0, part) for part in _DIGITS.split(text) if part
    )


def naturally(ids: Iterable[str]) -> list[str]:
    """*ids* in `natural_key` order."""
    return sorted(ids, key=natural_key)


def start_order(ids: Iterable[str], priorities: Mapping[str, int | None]) -> list[str]:
    """*ids* in the order a wave starts them: by priority (0 first; None: the default), then
    in natural order."""

    def key(feature_id: str) -> tuple[int, tuple[tuple[int, int | str], ...]]:
        priority = priorities.get(feature_id)
        return (DEFAULT_PRIORITY if priority is None else priority, natural_key(feature_id))

    return sorted(ids, key=key)
