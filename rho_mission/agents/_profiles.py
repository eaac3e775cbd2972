"""The agent profiles: one table, one row per agent rho knows by name (``--agent NAME``).

A row is data: the non-interactive command line (run by ``/bin/sh -c`` in the task's worktree,
the prompt read from ``$RHO_TASK_PROMPT_FILE``, which the planner and the resolver get too),
the flag that makes its output machine-readable, and the reader of its usage
(``_readers``). claude's line also passes on what is left of the mission's budget
(``$RHO_BUDGET_LEFT_USD``, set only under ``--budget-usd``) as its own ``--max-budget-usd``;
aider's has it log each model call's exact counts beside ``$RHO_USAGE_FILE``
(``--analytics-log``, read by ``_readers.read_aider_analytics``).
The flags are the agents' documented ones; examples/agents/README.md says what could not be
checked here.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

from ._readers import READERS, Reader

__all__ = ["PROFILES", "AgentProfile", "AgentStatus", "agent_status", "profile"]


@dataclass(frozen=True)
class AgentProfile:
    """One agent rho knows by name."""

    name: str
    program: str
    command: str
    output_flag: str
    # What its output reports: "cost and tokens", or "tokens" only.
    reports: str = "tokens"
    # What tells it the budget left, when it has such a flag (None: nothing).
    budget_flag: str | None = None

    @property
    def reader(self) -> Reader:
        """The reader of its usage report."""
        return READERS[self.name]


PROFILES: dict[str, AgentProfile] = {
    p.name: p
    for p in (
        AgentProfile(
            "claude",
            "claude",
            'claude -p "$(cat "$RHO_TASK_PROMPT_FILE")" --output-format json '
            "--permission-mode acceptEdits "
            '${RHO_BUDGET_LEFT_USD:+--max-budget-usd "$RHO_BUDGET_LEFT_USD"}',
            "--output-format json",
            "cost and tokens",
            "--max-budget-usd",
        ),
        AgentProfile(
            "codex",
            "codex",
            'codex exec --json --sandbox workspace-write "$(cat "$RHO_TASK_PROMPT_FILE")"',
            "--json",
        ),
        AgentProfile(
            "gemini",
            "gemini",
            'gemini -p "$(cat "$RHO_TASK_PROMPT_FILE")" --output-format json '
            "--approval-mode auto_edit",
            "--output-format json",
        ),
        AgentProfile(
            "aider",
            "aider",
            'aider --yes-always --message-file "$RHO_TASK_PROMPT_FILE" '
            # The provider's exact counts, one line per call, beside $RHO_USAGE_FILE.
            '${RHO_USAGE_FILE:+--analytics-log "${RHO_USAGE_FILE%/*}/aider-analytics.jsonl"}',
            "(none: its token and cost lines are read)",
            "cost and tokens",
        ),
    )
}


def profile(name: str) -> AgentProfile:
    """The profile named *name*.

    Raises:
        KeyError: no such profile (the CLI names the known ones).
    """
    return PROFILES[name]


@dataclass(frozen=True)
class AgentStatus:
    """Whether a profile's program is here, and what it says of its version."""

    profile: AgentProfile
    path: str | None
    version: str | None


def agent_status(agent: AgentProfile, timeout: float = 10.0) -> AgentStatus:
    """Where *agent*'s program is on PATH, and the first line of its ``--version`` (None when
    it is missing, or its ``--version`` failed or said nothing)."""
    path = shutil.which(agent.program)
    if path is None:
        return AgentStatus(agent, None, None)
    try:
        done = subprocess.run(
            [path, "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return AgentStatus(agent, path, None)
    said = (done.stdout or done.stderr).strip().splitlines()
    version = said[0][:200] if done.returncode == 0 and said else None
    return AgentStatus(agent, path, version)
