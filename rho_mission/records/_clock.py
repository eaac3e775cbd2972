"""Timestamps: RFC 3339 UTC with millisecond precision (``2026-11-29T21:30:00.123Z``).

Decision: docs/decisions/0501-missions.md
"""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["now_rfc3339_millis"]


def now_rfc3339_millis() -> str:
    """The current UTC time as RFC 3339 with millisecond precision."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
