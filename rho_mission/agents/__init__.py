"""Agents by name and what they spend: the profiles (``--agent``, one table), their usage
readers, and the reading of an attempt's usage (``_reading``: ``$RHO_USAGE_FILE``, else its
agent's output). The package's names are the profiles' (no pydantic: ``rho agents`` stays
light); the reading is imported from ``_reading`` by the stages that run attempts.

Decision: docs/decisions/0511-agent-profiles.md,
          docs/decisions/0512-agent-verdicts.md,
          docs/decisions/0509-usage-and-budgets.md
"""

from ._profiles import (
    COVERED,
    PROFILES,
    AgentHome,
    AgentProfile,
    AgentStatus,
    agent_status,
    left_by,
    profile,
)

__all__ = [
    "COVERED",
    "PROFILES",
    "AgentHome",
    "AgentProfile",
    "AgentStatus",
    "agent_status",
    "left_by",
    "profile",
]
