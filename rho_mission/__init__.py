"""rho-mission: run a task graph as waves of isolated git worktrees, with durable joins."""

from __future__ import annotations

__all__: list[str] = []
