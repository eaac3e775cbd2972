"""A real agent's own verdict and usage, through a real ``rho mission --agent NAME``.

Each test runs ``rho`` (the console script) in a fresh repository whose one task runs the
profile's line with the real CLI (``agent_cli``) against the scripted model server, each CLI's
retries cut as test_real_clis.py found them (claude ``CLAUDE_CODE_MAX_RETRIES=0``, codex
``request_max_retries = 0``, gemini ``maxAttempts`` 1 and a named model; aider cannot be cut
below ~80 s on a 500, so its test sends a 400, which it does not retry and also survives
with exit 0). What the profile's line lacks for the scripted server (aider's model, gemini's
trust) is given through the agents' own environment variables.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from support.rho import RHO

from ._agents import Place, Run, base_env, make_place, scripted_model_env
from ._model_server import ModelServer, serve
from ._turns import Fail, Reply, RunCommand, Usage, WriteFile

AgentCli = Callable[[str], Path]
RHO_LIMIT = 60.0
_PLAIN = {"COLUMNS": "200", "NO_COLOR": "1"}


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    """The scripted model server on a free loopback port, stopped (hanging answers too) after."""
    yield from serve()


@pytest.fixture
def place(tmp_path: Path) -> Place:
    """A fresh home, temporary folder and git repository (``.rho/`` kept out of git's eye)."""
    made = make_place(tmp_path)
    (made.repo / ".git" / "info" / "exclude").write_text(".rho/\n", encoding="utf-8")
    return made


def _identity(place: Place) -> dict[str, str]:
    """A git identity in a global config, as a user has: without one aider writes its own
    into the repository's config (which rho then refuses as a task's change of git's)."""
    config = place.home / ".gitconfig"
    config.write_text("[user]\n\tname = A User\n\temail = user@example.com\n", encoding="utf-8")
    return {"GIT_CONFIG_GLOBAL": str(config)}


def _rho(place: Place, env: dict[str, str], *args: str) -> Run:
    """``rho ARGS`` in the repository, with *env* over the CLIs' base environment."""
    done = subprocess.run(
        [str(RHO), *args],
        cwd=place.repo,
        env={**base_env(place), **_identity(place), **_python(), **_PLAIN, **env},
        capture_output=True,
        text=True,
        timeout=RHO_LIMIT,
        check=False,
    )
    return Run(done.returncode, done.stdout, done.stderr)


def _python() -> dict[str, str]:
    # The code under test: a worktree's, when the suite runs with PYTHONPATH set.
    path = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": path} if path else {}


def _mission(place: Place) -> dict[str, Any]:
    [folder] = (place.repo / ".rho" / "missions").iterdir()
    document: dict[str, Any] = json.loads((folder / "mission.json").read_text(encoding="utf-8"))
    return document


def _log(place: Place, task: str = "t1") -> str:
    [folder] = (place.repo / ".rho" / "missions").iterdir()
    return (folder / "logs" / f"{task}.log").read_text(encoding="utf-8", errors="replace")


def _one_task(
    place: Place, env: dict[str, str], subject: str = "Create hello.txt", command: str | None = None
) -> None:
    # No command of its own (unless given): the profile's line runs it.
    task: dict[str, object] = {"id": "t1", "subject": subject, "status": "pending"}
    if command is not None:
        task["metadata"] = {"command": command}
    source = place.tmp / "tasks.json"
    source.write_text(json.dumps({"tasks": [task]}), encoding="utf-8")
    done = _rho(place, env, "task", "import", str(source))
    assert done.code == 0, done.stderr


def _on_path(agent_cli: AgentCli, name: str, place: Place) -> str:
    """The CLIs' PATH with the folder of the real *name* first (its profile calls it by name)."""
    return f"{agent_cli(name).parent}{os.pathsep}{base_env(place)['PATH']}"


def _claude_env(agent_cli: AgentCli, server: ModelServer, place: Place) -> dict[str, str]:
    return {
        "PATH": _on_path(agent_cli, "claude", place),
        **scripted_model_env("claude", place.home, server.url, fail_fast=True),
    }


def _codex_env(agent_cli: AgentCli, server: ModelServer, place: Place) -> dict[str, str]:
    return {
        "PATH": _on_path(agent_cli, "codex", place),
        **scripted_model_env("codex", place.home, server.url, fail_fast=True),
    }


def _gemini_env(agent_cli: AgentCli, server: ModelServer, place: Place) -> dict[str, str]:
    return {
        "PATH": _on_path(agent_cli, "gemini", place),
        **scripted_model_env("gemini", place.home, server.url, fail_fast=True),
        # A named model: no router request (which retries on its own); and every worktree
        # trusted (the profile's own line may say so: this keeps the test to its point).
        "GEMINI_MODEL": "gemini-2.5-flash",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
    }


def _aider_env(agent_cli: AgentCli, server: ModelServer, place: Place) -> dict[str, str]:
    # aider takes each option from AIDER_<NAME> too: its edit format, and nothing that would
    # reach the network or commit.
    return {
        "PATH": _on_path(agent_cli, "aider", place),
        **scripted_model_env("aider", place.home, server.url),
        "AIDER_EDIT_FORMAT": "diff",
        "AIDER_STREAM": "false",
        "AIDER_AUTO_COMMITS": "false",
        "AIDER_GITIGNORE": "false",
        "AIDER_CHECK_UPDATE": "false",
        "AIDER_ANALYTICS": "false",
    }


def _env_of(name: str, agent_cli: AgentCli, server: ModelServer, place: Place) -> dict[str, str]:
    if name == "claude":
        return _claude_env(agent_cli, server, place)
    if name == "codex":
        return _codex_env(agent_cli, server, place)
    if name == "gemini":
        return _gemini_env(agent_cli, server, place)
    return _aider_env(agent_cli, server, place)


# What each agent says when its model answers the error: its words must reach the task's error.
FAILURES = [
    ("claude", 500, "claude reported an error (api_error): API Error: 500 scripted 500."),
    ("codex", 500, "codex reported a failed turn: We\u2019re currently experiencing high demand"),
    ("gemini", 500, "gemini reported an error (500): "),
    ("aider", 400, "aider reported a model error: litellm.BadRequestError: OpenAIException"),
]


def _usage_of(record: dict[str, Any]) -> Usage:
    cached = record["cached_input_tokens"] or 0  # aider's log says none: unknown
    return Usage(record["input_tokens"], record["output_tokens"], cached)


@pytest.mark.parametrize(("name", "status", "said"), FAILURES)
def test_a_model_error_fails_the_attempt_in_the_agents_words_and_resume_reruns_it(
    agent_cli: AgentCli,
    model_server: ModelServer,
    place: Place,
    name: str,
    status: int,
    said: str,
) -> None:
    env = _env_of(name, agent_cli, model_server, place)
    _one_task(place, env)
    model_server.script(Fail(status))
    done = _rho(place, env, "mission", "--from-tasks", "--agent", name)
    assert done.code == 1, done.stdout + done.stderr
    [feature] = _mission(place)["features"]
    assert feature["status"] == "failed"
    assert said in feature["error"], feature["error"]
    assert said in _log(place)  # the log's tail says it too, in rho's own line
    # The model is back: the resume runs the task again, and its work lands.
    # Relative: the worktree is rho's, not the repository (an absolute path there is denied).
    model_server.script(WriteFile("hello.txt", f"hello from {name}\n"), Reply("Created hello.txt."))
    again = _rho(place, env, "mission", "resume", "latest")
    assert again.code == 0, again.stdout + again.stderr + _log(place)
    mission = _mission(place)
    assert mission["features"][0]["status"] == "completed"
    # Its usage is what the server sent (the failed answers sent none).
    last = mission["features"][0]["attempt_usage"][-1]
    assert (last["attempt"], _usage_of(last)) == (2, model_server.usage_sent())
    shown = subprocess.run(
        ["git", "show", f"{mission['integration_branch']}:hello.txt"],
        cwd=place.repo,
        capture_output=True,
        text=True,
        check=True,
    )
    assert shown.stdout == f"hello from {name}\n"


def _attempt_usage(place: Place) -> Usage:
    [feature] = _mission(place)["features"]
    [record] = feature["attempt_usage"]
    return _usage_of(record)


def test_an_agent_that_exits_0_having_changed_nothing_fails_under_agent(
    agent_cli: AgentCli, model_server: ModelServer, place: Place
) -> None:
    # codex answers, calls no tool, exits 0: nothing was done.
    env = _codex_env(agent_cli, model_server, place)
    _one_task(place, env)
    model_server.script(Reply("I would create hello.txt."))
    done = _rho(place, env, "mission", "--from-tasks", "--agent", "codex")
    assert done.code == 1, done.stdout + done.stderr
    [feature] = _mission(place)["features"]
    changed_nothing = (
        "the agent changed nothing (--require-changes; --no-require-changes allows it)"
    )
    assert (feature["status"], feature["error"]) == ("failed", changed_nothing)
    # What it spent is recorded all the same; --no-require-changes takes "nothing" as done.
    assert _attempt_usage(place) == model_server.usage_sent()
    again = _rho(place, env, "mission", "--from-tasks", "--agent", "codex", "--no-require-changes")
    assert again.code == 0, again.stdout + again.stderr


def test_claudes_usage_at_its_own_budget_stop_is_what_the_server_sent(
    agent_cli: AgentCli, model_server: ModelServer, place: Place
) -> None:
    # $0.84 at claude's list price: over the $0.50 passed on as its --max-budget-usd at once;
    # its result's usage is all zeros then, its modelUsage whole.
    env = _claude_env(agent_cli, model_server, place)
    _one_task(place, env)
    model_server.script(WriteFile("a.txt", "a\n", Usage(200_000, 2000)), Reply("done"))
    done = _rho(place, env, "mission", "--from-tasks", "--agent", "claude", "--budget-usd", "0.5")
    assert done.code == 1, done.stdout + done.stderr
    assert _attempt_usage(place) == model_server.usage_sent() == Usage(200_000, 2000)
    mission = _mission(place)
    [feature] = mission["features"]
    assert feature["error"].startswith("stopped by budget: the agent reached its --max-budget-usd")
    assert "claude reported an error (error_max_budget_usd)" in feature["error"]
    # The stop line says what mission.json records as spent.
    spent = mission["usage"]["cost_usd"]
    assert mission["budget_stop"] == f"budget reached: ${spent:.2f} of $0.50"
    assert f"stopped: budget reached: ${spent:.2f} of $0.50" in done.stdout


def test_aiders_usage_is_the_providers_exact_count(
    agent_cli: AgentCli, model_server: ModelServer, place: Place
) -> None:
    # Over 1,000 tokens aider prints "1.2k sent": its analytics log, which its profile line
    # writes beside $RHO_USAGE_FILE, has the provider's exact counts.
    env = _aider_env(agent_cli, model_server, place)
    _one_task(place, env)
    model_server.script(WriteFile("hello.txt", "hello from aider\n", Usage(1234, 56)))
    done = _rho(place, env, "mission", "--from-tasks", "--agent", "aider")
    assert done.code == 0, done.stdout + done.stderr + _log(place)
    assert "Tokens: 1.2k sent, 56 received." in _log(place)
    assert _attempt_usage(place) == model_server.usage_sent() == Usage(1234, 56)


def test_claudes_permission_denial_is_a_warning_when_it_did_the_task(
    agent_cli: AgentCli, model_server: ModelServer, place: Place
) -> None:
    # Under acceptEdits alone (a line of the user's, without the profile's --allowedTools Bash)
    # claude is denied its own check (python3 ...), then writes the file: exit 0, is_error
    # false, the command in permission_denials. The work is done.
    env = _claude_env(agent_cli, model_server, place)
    line = 'claude -p "$(cat "$RHO_TASK_PROMPT_FILE")" --output-format json '
    line += "--permission-mode acceptEdits"
    _one_task(place, env, command=line)
    model_server.script(
        RunCommand("python3 -c 'print(1)'"),
        WriteFile("hello.txt", "hello from claude\n"),
        Reply("Created hello.txt."),
    )
    done = _rho(place, env, "mission", "--from-tasks", "--agent", "claude")
    assert done.code == 0, done.stdout + done.stderr + _log(place)
    [feature] = _mission(place)["features"]
    assert (feature["status"], feature["error"]) == ("completed", None)
    warning = "t1 attempt 1: warning: claude was denied 1 tool call(s): Bash python3 -c 'print(1)'"
    assert warning in _log(place)
