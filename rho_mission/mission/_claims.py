"""Agents' claims in the task store: a task someone else holds is not a mission's to run.

An agent claims a task through the store (``rho mcp``'s ``TaskUpdate`` with ``claim``, or
``TaskStore.claim``): ``in_progress``, with its ``owner``, the claim's time in ``updatedAt``. A
tracker's import can bring such tasks too (beads' ``in_progress``). A task ``in_progress``
that no mission leases (``engine._leases``) is someone else's work under way: a mission holds
it back like a ``reviewing`` task, with what it blocks, and says who holds it.

A claim is a lease too: after ``claim_ttl`` seconds (``--claim-ttl``, default 24 hours) since
its last update the claimant is taken to have gone, and a mission may run the task. A claim of
unknown age (no ``updatedAt``) never expires. ``include_claimed`` (``--include-claimed``) takes
every claimed task anyway.

Decision: docs/decisions/0105-claims-and-leases.md
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from taskstore import Task

from .._errors import quote
from ..engine._leases import LEASE_KEY

__all__ = ["DEFAULT_CLAIM_TTL", "ClaimRule", "claim_reason"]

DEFAULT_CLAIM_TTL = 24 * 3600.0


@dataclass(frozen=True)
class ClaimRule:
    """Which claims a mission honours: none (``include``), or those younger than ``ttl``."""

    include: bool = False
    ttl: float = DEFAULT_CLAIM_TTL
    now: datetime | None = None  # None: the clock, read once per selection

    def at(self) -> datetime:
        return self.now or datetime.now(UTC)


def claim_reason(task: Task, rule: ClaimRule, now: datetime) -> str | None:
    """Why *task* is held as a claim (``claimed by "agent-1" 12m ago``), or None: no claim,
    one a mission holds, one expired, or *rule* takes claimed tasks anyway."""
    if rule.include or task.status != "in_progress" or task.metadata.get(LEASE_KEY):
        return None
    age = _age(task.updated_at, now)
    if age is not None and age > rule.ttl:
        return None  # the claimant went away: the claim lapsed
    who = f"claimed by {quote(task.owner)}" if task.owner else "in progress (no owner)"
    when = f" {_spoken(age)} ago" if age is not None else ""
    return f"{who}{when} in the task store"


def _age(stamp: str | None, now: datetime) -> float | None:
    if not stamp:
        return None
    try:
        then = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    return max(0.0, (now - then).total_seconds())


def _spoken(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"
