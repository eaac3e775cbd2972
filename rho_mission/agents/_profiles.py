"""The agent profiles: one table, one row per agent rho knows by name (``--agent NAME``).

A row is data: the non-interactive command line (run by ``/bin/sh -c`` in the task's worktree,
the prompt read from ``$RHO_TASK_PROMPT_FILE``, which the planner and the resolver get too),
the flag that makes its output machine-readable, and the reader of its usage
(``_readers``). claude's line also passes on what is left of the mission's budget
(``$RHO_BUDGET_LEFT_USD``, set only under ``--budget-usd``) as its own ``--max-budget-usd``;
aider's has it log each model call's exact counts beside ``$RHO_USAGE_FILE``
(``--analytics-log``, read by ``_readers.read_aider_analytics``).

Each line is meant for an unattended run: the agent edits files, runs the project's commands
and ``git add`` without asking anyone. Where rho's sandbox holds it (``--sandbox``) the agent's
own guard is off (``sandboxed``: claude's ``bypassPermissions``, codex's own sandbox, whose
bubblewrap cannot start inside rho's, gemini's ``--yolo``); outside, the line keeps what the
agent's own guard allows (``command``). A row also names the folders below the home its
program writes (``home``, a private copy per task inside the sandbox: ``containment
._agenthomes``), what of them is copied from the user's (its settings and sign-in: the only
secrets of them the task can read), and what it leaves in the worktree that is never the
task's work (``leaves``: git excludes). The comments on each row say why a flag is there;
``tests/agent_cli_tests/test_real_clis.py`` records what each flag was seen to do, with the
versions the tests ran: ``COVERED``, the ones ``.ci/install-agents`` installs.

A row also sets a mission's default ``--task-timeout`` (``task_timeout``) and, where its
program has one, that program's own request timeout (``environment``: claude's
``API_TIMEOUT_MS``, aider's ``AIDER_TIMEOUT``; codex's stream idle timeout, 5 minutes, is a
key of its provider table and set already; gemini has none), each left as the user's
environment sets it: the one place for such settings, put before either line by ``line``.

Decision: docs/decisions/0511-agent-profiles.md, docs/decisions/0509-usage-and-budgets.md
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass

from ._readers import READERS, Reader

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


@dataclass(frozen=True)
class AgentHome:
    """A path below the home folder an agent's program writes: a folder, or one file.

    ``variable`` moves it (codex's ``$CODEX_HOME``): when the task's environment sets it, the
    path is its value. ``copied`` are the files in the folder that a task's private copy
    starts with (a file path is copied whole): the rest (other projects' sessions, logs,
    caches) the task never sees. A path is always a folder.
    """

    path: str
    variable: str | None = None
    copied: tuple[str, ...] = ()
    # Files beside the folder, in the home, copied into it (when ``variable`` is not set): what
    # the program reads there once ``variable`` points it at the folder.
    beside: tuple[str, ...] = ()


@dataclass(frozen=True)
class AgentProfile:
    """One agent rho knows by name."""

    name: str
    program: str
    # Its line outside --sandbox; ``sandboxed``: its line inside (None: the same).
    command: str
    output_flag: str
    # What its output reports: "cost and tokens", or "tokens" only.
    reports: str = "tokens"
    # What tells it the budget left, when it has such a flag (None: nothing).
    budget_flag: str | None = None
    sandboxed: str | None = None
    # What its program writes below the home folder (see AgentHome).
    home: tuple[AgentHome, ...] = ()
    # git exclude patterns of what it leaves in the worktree that is never the task's work.
    leaves: tuple[str, ...] = ()
    # A mission's --task-timeout when it names this agent and no --task-timeout (seconds):
    # a model that hangs outlasts every program's own retries (claude's alone: 11 tries).
    task_timeout: float = 30 * 60.0
    # Variables its program gets unless rho's environment sets them: its request timeout.
    environment: tuple[tuple[str, str], ...] = ()

    @property
    def reader(self) -> Reader:
        """The reader of its usage report."""
        return READERS[self.name]

    def line(self, sandbox: bool) -> str:
        """Its command line inside rho's sandbox (*sandbox*) or outside, after the exports of
        its ``environment`` (each keeps a value the environment has)."""
        exports = "".join(
            f'export {name}="${{{name}:-{value}}}"; ' for name, value in self.environment
        )
        return exports + (
            self.sandboxed if sandbox and self.sandboxed is not None else self.command
        )


_PROMPT = '"$(cat "$RHO_TASK_PROMPT_FILE")"'
_CLAUDE_BUDGET = '${RHO_BUDGET_LEFT_USD:+--max-budget-usd "$RHO_BUDGET_LEFT_USD"}'

PROFILES: dict[str, AgentProfile] = {
    p.name: p
    for p in (
        AgentProfile(
            name="claude",
            program="claude",
            # acceptEdits denies every Bash command (git add, the tests) unless allowed.
            command=f"claude -p {_PROMPT} --output-format json "
            f"--permission-mode acceptEdits --allowedTools Bash {_CLAUDE_BUDGET}",
            output_flag="--output-format json",
            reports="cost and tokens",
            budget_flag="--max-budget-usd",
            # claude refuses bypassPermissions as root unless told it is in a sandbox; its
            # config folder holds its .claude.json too (one private folder, no file to mount).
            sandboxed='IS_SANDBOX=1 CLAUDE_CONFIG_DIR="${CLAUDE_CONFIG_DIR:-$HOME/.claude}" '
            f"claude -p {_PROMPT} --output-format json "
            f"--permission-mode bypassPermissions {_CLAUDE_BUDGET}",
            home=(
                AgentHome(
                    ".claude",
                    "CLAUDE_CONFIG_DIR",
                    ("settings.json", ".credentials.json", "CLAUDE.md", ".claude.json"),
                    beside=(".claude.json",),
                ),
            ),
            # Time to an answer's headers (its SDK's); by default 10 minutes a try, 11 tries.
            environment=(("API_TIMEOUT_MS", "300000"),),
        ),
        AgentProfile(
            name="codex",
            program="codex",
            command=f"codex exec --json --sandbox workspace-write {_PROMPT}",
            output_flag="--json",
            # Its own bubblewrap cannot start inside rho's ("setting up uid map"), and codex
            # then exits 0 having written nothing: rho's sandbox replaces it.
            sandboxed=f"codex exec --json --dangerously-bypass-approvals-and-sandbox {_PROMPT}",
            home=(AgentHome(".codex", "CODEX_HOME", ("config.toml", "auth.json", "AGENTS.md")),),
        ),
        AgentProfile(
            name="gemini",
            program="gemini",
            # Every worktree is new to gemini: untrusted, it exits 55 without --skip-trust.
            command=f"gemini -p {_PROMPT} --output-format json "
            "--approval-mode auto_edit --skip-trust",
            output_flag="--output-format json",
            # auto_edit offers no shell tool; --yolo does, where rho's sandbox holds it.
            sandboxed=f"gemini -p {_PROMPT} --output-format json --yolo --skip-trust",
            home=(
                AgentHome(
                    ".gemini",
                    copied=(
                        "settings.json",
                        "oauth_creds.json",
                        "google_accounts.json",
                        "GEMINI.md",
                    ),
                ),
            ),
        ),
        AgentProfile(
            name="aider",
            program="aider",
            # --no-stream: the provider's token counts, not aider's estimate. The task's work
            # is rho's to commit: no commits of aider's, no .gitignore edits.
            command="aider --no-stream --yes-always --no-auto-commits --no-gitignore "
            '--no-check-update --no-analytics --message-file "$RHO_TASK_PROMPT_FILE" '
            # The provider's exact counts, one line per call, beside $RHO_USAGE_FILE.
            '${RHO_USAGE_FILE:+--analytics-log "${RHO_USAGE_FILE%/*}/aider-analytics.jsonl"}',
            output_flag="(none: its token and cost lines are read)",
            reports="cost and tokens",
            home=(AgentHome(".aider", copied=("oauth-keys.env",)),),
            # Its chat and input histories and its tags cache.
            leaves=(".aider*",),
            # Its --timeout (litellm's, seconds a request); by default none.
            environment=(("AIDER_TIMEOUT", "300"),),
        ),
    )
}

# The versions of each program the tests ran (``.ci/install-agents`` installs them).
COVERED: dict[str, tuple[str, ...]] = {
    "claude": ("2.1.332",),
    "codex": ("0.171.0",),
    "gemini": ("0.61.0",),
    "aider": ("0.86.2",),
}
_VERSION = re.compile(r"\b(\d+\.\d+\.\d+)\b")


def profile(name: str) -> AgentProfile:
    """The profile named *name*.

    Raises:
        KeyError: no such profile (the CLI names the known ones).
    """
    return PROFILES[name]


def left_by(*names: str | None) -> tuple[str, ...]:
    """The ``leaves`` patterns of the profiles named (None and unknown names: none)."""
    return tuple(pattern for name in names if name in PROFILES for pattern in PROFILES[name].leaves)


@dataclass(frozen=True)
class AgentStatus:
    """Whether a profile's program is here, and what it says of its version."""

    profile: AgentProfile
    path: str | None
    version: str | None

    @property
    def covered(self) -> bool | None:
        """Whether its version is one the tests ran (None: no version to tell)."""
        found = _VERSION.search(self.version or "")
        if found is None:
            return None
        return found.group(1) in COVERED.get(self.profile.name, ())


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
