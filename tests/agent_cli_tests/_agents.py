"""How the tests run each real agent CLI: a fresh home, a git repository, a bounded run.

Each CLI runs in an environment built from nothing (never the test's own, which may hold a real
API key): a fresh ``HOME`` and ``TMPDIR`` under the test's folder, git kept from the machine's
config, and the variables and config files that point the CLI at the scripted model server.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._turns import NO_USAGE, Usage

__all__ = [
    "LIMIT",
    "Place",
    "Run",
    "aider_printed_usage",
    "aider_usage",
    "base_env",
    "claude_usage",
    "codex_usage",
    "gemini_usage",
    "make_place",
    "run_agent",
]

LIMIT = 60.0  # bound on one CLI run; each takes 1 to 12 s here
_GIT = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.com",
}


@dataclass(frozen=True)
class Place:
    """Where one CLI runs: its home, its temporary folder and a git repository to work in."""

    home: Path
    tmp: Path
    repo: Path


@dataclass(frozen=True)
class Run:
    """What one CLI run did."""

    code: int
    stdout: str
    stderr: str


def make_place(root: Path) -> Place:
    """A fresh home, temporary folder and git repository (one commit) under *root*."""
    place = Place(root / "home", root / "tmp", root / "repo")
    for folder in (place.home, place.tmp, place.repo):
        folder.mkdir(parents=True)
    (place.repo / "README.md").write_text("A project.\n", encoding="utf-8")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "initial"]):
        subprocess.run(["git", *args], cwd=place.repo, env=base_env(place), check=True)
    return place


def base_env(place: Place) -> dict[str, str]:
    """The environment every CLI starts from: nothing of the test's own."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(place.home),
        "TMPDIR": str(place.tmp),
        "LANG": "C.UTF-8",
        **_GIT,
    }


def scripted_model_env(
    name: str, home: Path, url: str, *, fail_fast: bool = False
) -> dict[str, str]:
    """What points the real CLI *name* at the scripted model server at *url*: its variables,
    and the settings it reads from its *home* (written there). With *fail_fast*, each gives up
    on a failing model at once (no retries: a test of failures stays short)."""
    if name == "claude":
        env = {
            "ANTHROPIC_BASE_URL": url,
            "ANTHROPIC_API_KEY": "sk-ant-scripted",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
        }
        return {**env, "CLAUDE_CODE_MAX_RETRIES": "0"} if fail_fast else env
    if name == "codex":
        # codex ignores OPENAI_BASE_URL: its provider table names the server.
        retries = "request_max_retries = 0\nstream_max_retries = 0\n" if fail_fast else ""
        (home / ".codex").mkdir()
        (home / ".codex" / "config.toml").write_text(
            'model = "gpt-5.5"\nmodel_provider = "scripted"\n[model_providers.scripted]\n'
            f'name = "scripted"\nbase_url = "{url}/v1"\nenv_key = "OPENAI_API_KEY"\n'
            f'wire_api = "responses"\nsupports_websockets = false\n{retries}',
            encoding="utf-8",
        )
        return {"CODEX_HOME": str(home / ".codex"), "OPENAI_API_KEY": "sk-scripted"}
    if name == "gemini":
        # gemini follows its base URL once its settings pick the API-key sign-in.
        settings: dict[str, Any] = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
        if fail_fast:
            settings["general"] = {"maxAttempts": 1}
        (home / ".gemini").mkdir()
        (home / ".gemini" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
        return {"GEMINI_API_KEY": "scripted", "GOOGLE_GEMINI_BASE_URL": url}
    # aider: the model as its own variable (a profile's line names none, as a user's setup).
    return {
        "OPENAI_API_KEY": "sk-scripted",
        "OPENAI_API_BASE": f"{url}/v1",
        "AIDER_MODEL": "openai/scripted",
        "AIDER_SHOW_MODEL_WARNINGS": "false",
    }


def run_agent(argv: list[str], env: dict[str, str], cwd: Path) -> Run:
    """Run a CLI to its end, no input, at most ``LIMIT`` seconds (then its whole group is killed
    and the run fails the test)."""
    with subprocess.Popen(
        argv,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=LIMIT)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
            raise AssertionError(f"{argv[0]} ran over {LIMIT}s:\n{stdout}\n{stderr}") from None
    return Run(process.returncode, stdout, stderr)


def claude_usage(result: dict[str, Any]) -> Usage:
    """The usage of claude's JSON result, from ``modelUsage`` (every model, side calls too)."""
    total = NO_USAGE
    for counts in result["modelUsage"].values():
        cached = counts["cacheReadInputTokens"]
        uncached = counts["inputTokens"] + counts["cacheCreationInputTokens"]
        total = total + Usage(uncached + cached, counts["outputTokens"], cached)
    return total


def codex_usage(jsonl: str) -> Usage:
    """The usage of ``codex exec --json``: the sum of its ``turn.completed`` lines."""
    total = NO_USAGE
    for line in jsonl.splitlines():
        event = json.loads(line)
        if event.get("type") == "turn.completed":
            counts = event["usage"]
            used = Usage(
                counts["input_tokens"], counts["output_tokens"], counts["cached_input_tokens"]
            )
            total = total + used
    return total


def gemini_usage(result: dict[str, Any]) -> Usage:
    """The usage of gemini's JSON result: ``stats.models``, every model and role."""
    total = NO_USAGE
    for model in result["stats"]["models"].values():
        tokens = model["tokens"]
        total = total + Usage(tokens["prompt"], tokens["candidates"], tokens["cached"])
    return total


def aider_usage(analytics_log: Path) -> Usage:
    """The provider's counts as aider logged them (``--analytics-log``: one ``message_send``
    event per model call, exact, where its printed line rounds to ``1.2k``)."""
    total = NO_USAGE
    for line in analytics_log.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event["event"] == "message_send":
            counts = event["properties"]
            total = total + Usage(counts["prompt_tokens"], counts["completion_tokens"])
    return total


_AIDER_TOKENS = re.compile(r"^Tokens: (\d+) sent, (\d+) received\.", re.MULTILINE)


def aider_printed_usage(stdout: str) -> Usage:
    """The sum of aider's ``Tokens: N sent, M received.`` lines (exact below 1,000 only)."""
    total = NO_USAGE
    for sent, received in _AIDER_TOKENS.findall(stdout):
        total = total + Usage(int(sent), int(received))
    return total
