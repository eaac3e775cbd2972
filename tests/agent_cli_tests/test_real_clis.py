"""Each real agent CLI, run directly (not through rho), lands a scripted edit and reports usage.

FACTS
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ._agents import (
    Place,
    Run,
    aider_printed_usage,
    aider_usage,
    base_env,
    claude_usage,
    codex_usage,
    gemini_usage,
    make_place,
    run_agent,
)
from ._model_server import ModelServer, serve
from ._turns import Fail, Hang, Reply, Usage, WriteFile

PROMPT = "Create hello.txt saying hello."
AgentCli = Callable[[str], Path]


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    """The scripted model server on a free loopback port, stopped (hanging answers too) after."""
    yield from serve()


@pytest.fixture
def place(tmp_path: Path) -> Place:
    """A fresh home, temporary folder and git repository for one CLI."""
    return make_place(tmp_path)


def _run_claude(
    agent_cli: AgentCli, server: ModelServer, place: Place, *more_args: str, **more_env: str
) -> tuple[Run, dict[str, Any]]:
    """claude in print mode, JSON result, edits accepted, pointed at *server*."""
    env = {
        **base_env(place),
        "ANTHROPIC_BASE_URL": server.url,
        "ANTHROPIC_API_KEY": "sk-ant-scripted",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        **more_env,
    }
    argv = [str(agent_cli("claude")), "-p", PROMPT, "--output-format", "json"]
    run = run_agent([*argv, "--permission-mode", "acceptEdits", *more_args], env, place.repo)
    return run, json.loads(run.stdout)


def test_claude_writes_the_file_and_reports_the_usage_sent(
    agent_cli: AgentCli, model_server: ModelServer, place: Place
) -> None:
    target = place.repo / "hello.txt"
    model_server.script(
        WriteFile(str(target), "hello from claude\n", Usage(1200, 40, 100)),
        Reply("Created hello.txt.", Usage(1300, 10)),
    )
    run, result = _run_claude(agent_cli, model_server, place)
    assert run.code == 0, run.stderr
    verdict = (result["is_error"], result["subtype"], result["permission_denials"])
    assert verdict == (False, "success", [])
    assert target.read_text(encoding="utf-8") == "hello from claude\n"
    assert claude_usage(result) == model_server.usage_sent()
    assert len(model_server.main_requests()) == 2


@pytest.mark.parametrize(
    ("status", "said"),
    [
        (500, "API Error: 500 scripted 500. This is a server-side issue"),
        (429, "API Error: Request rejected (429) · scripted 429"),
    ],
)
def test_claude_exits_1_with_is_error_when_the_model_fails(
    agent_cli: AgentCli, model_server: ModelServer, place: Place, status: int, said: str
) -> None:
    # Without CLAUDE_CODE_MAX_RETRIES=0 claude tries 11 times over about 175 s.
    model_server.script(Fail(status))
    run, result = _run_claude(agent_cli, model_server, place, CLAUDE_CODE_MAX_RETRIES="0")
    assert run.code == 1
    verdict = (result["is_error"], result["terminal_reason"], result["api_error_status"])
    assert verdict == (True, "api_error", status)
    assert result["result"].startswith(said)
    assert result["modelUsage"] == {}


def test_claude_gives_up_on_a_hanging_model_after_api_timeout_ms(
    agent_cli: AgentCli, model_server: ModelServer, place: Place
) -> None:
    # Without API_TIMEOUT_MS claude waited on a silent model for over 300 s.
    model_server.script(Hang())
    more = {"CLAUDE_CODE_MAX_RETRIES": "0", "API_TIMEOUT_MS": "3000"}
    run, result = _run_claude(agent_cli, model_server, place, **more)
    assert run.code == 1
    assert (result["is_error"], result["api_error_status"]) == (True, None)
    assert result["result"].startswith("Request timed out.")


NO_RETRIES = "request_max_retries = 0\nstream_max_retries = 0\n"


def test_claude_budget_stop_zeroes_usage_but_model_usage_keeps_the_counts(
    agent_cli: AgentCli, model_server: ModelServer, place: Place
) -> None:
    # $0.84 at claude's list price for its default model: over the $0.50 budget at once.
    model_server.script(
        WriteFile(str(place.repo / "a.txt"), "a\n", Usage(200_000, 2000)),
        Reply("done", Usage(1000, 10)),
    )
    run, result = _run_claude(agent_cli, model_server, place, "--max-budget-usd", "0.5")
    assert run.code == 1
    verdict = (result["is_error"], result["subtype"], result["terminal_reason"])
    assert verdict == (True, "error_max_budget_usd", "budget_exhausted")
    assert (result["usage"]["input_tokens"], result["usage"]["output_tokens"]) == (0, 0)
    assert claude_usage(result) == model_server.usage_sent() == Usage(200_000, 2000)
    # Whether the tool call of the answer that crossed the budget still ran (a.txt) varies
    # from run to run: a budget stop is no proof that nothing changed.


def _codex_config(place: Place, url: str, provider: str) -> Path:
    """``$CODEX_HOME/config.toml`` naming the server as the model provider (codex ignores
    ``OPENAI_BASE_URL``), with the lines *provider* added to its table; gpt-5.5 is a model
    codex knows, so it offers ``apply_patch``."""
    codex_home = place.home / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(
        'model = "gpt-5.5"\n'
        'model_provider = "scripted"\n'
        "[model_providers.scripted]\n"
        'name = "scripted"\n'
        f'base_url = "{url}/v1"\n'
        'env_key = "OPENAI_API_KEY"\n'
        'wire_api = "responses"\n'
        "supports_websockets = false\n" + provider,
        encoding="utf-8",
    )
    return codex_home


def _run_codex(agent_cli: AgentCli, server: ModelServer, place: Place, provider: str = "") -> Run:
    """``codex exec`` with JSON events and its own sandbox (workspace-write), at *server*."""
    codex_home = _codex_config(place, server.url, provider)
    env = {**base_env(place), "CODEX_HOME": str(codex_home), "OPENAI_API_KEY": "sk-scripted"}
    argv = [str(agent_cli("codex")), "exec", "--json", "--sandbox", "workspace-write", PROMPT]
    return run_agent(argv, env, place.repo)


def test_codex_writes_the_file_and_reports_the_usage_sent(
    agent_cli: AgentCli, model_server: ModelServer, place: Place
) -> None:
    model_server.script(
        WriteFile("hello.txt", "hello from codex\n", Usage(1200, 40, 200)),
        Reply("Created hello.txt.", Usage(1300, 10)),
    )
    run = _run_codex(agent_cli, model_server, place)
    assert run.code == 0, run.stderr
    assert "Refusing to create helper binaries" not in run.stderr
    assert (place.repo / "hello.txt").read_text(encoding="utf-8") == "hello from codex\n"
    assert codex_usage(run.stdout) == model_server.usage_sent()
    assert len(model_server.main_requests()) == 2


@pytest.mark.parametrize(
    ("status", "said"),
    [
        (500, "We\u2019re currently experiencing high demand, which may cause temporary errors."),
        (429, "exceeded retry limit, last status: 429 Too Many Requests"),
    ],
)
def test_codex_exits_1_with_a_failed_turn_when_the_model_fails(
    agent_cli: AgentCli, model_server: ModelServer, place: Place, status: int, said: str
) -> None:
    # With its default retries codex gives up on a 500 after about 25 s (30 requests).
    model_server.script(Fail(status))
    run = _run_codex(agent_cli, model_server, place, NO_RETRIES)
    assert run.code == 1
    last = json.loads(run.stdout.splitlines()[-1])
    assert last == {"type": "turn.failed", "error": {"message": said}}


def test_codex_gives_up_on_a_stalled_stream_after_its_idle_timeout(
    agent_cli: AgentCli, model_server: ModelServer, place: Place
) -> None:
    # A model that answers no headers at all held codex past 300 s whatever this timeout.
    model_server.script(Hang(streaming=True))
    run = _run_codex(agent_cli, model_server, place, NO_RETRIES + "stream_idle_timeout_ms = 2000\n")
    assert run.code == 1
    said = "stream disconnected before completion: idle timeout waiting for SSE"
    assert json.loads(run.stdout.splitlines()[-1]) == {
        "type": "turn.failed",
        "error": {"message": said},
    }


def _run_gemini(
    agent_cli: AgentCli, server: ModelServer, place: Place, *more_args: str, **settings: Any
) -> Run:
    """gemini in headless mode, JSON output, every tool allowed, at *server* (gemini ignores
    its base URL until the settings pick the API-key sign-in)."""
    settings_file = place.home / ".gemini" / "settings.json"
    settings_file.parent.mkdir()
    auth = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    settings_file.write_text(json.dumps({**auth, **settings}), encoding="utf-8")
    env = {**base_env(place), "GEMINI_API_KEY": "scripted", "GOOGLE_GEMINI_BASE_URL": server.url}
    argv = [str(agent_cli("gemini")), "-p", PROMPT, "--output-format", "json"]
    return run_agent([*argv, "--yolo", "--skip-trust", *more_args], env, place.repo)


def test_gemini_writes_the_file_and_reports_the_usage_sent(
    agent_cli: AgentCli, model_server: ModelServer, place: Place
) -> None:
    target = place.repo / "hello.txt"
    model_server.script(
        WriteFile(str(target), "hello from gemini\n", Usage(1200, 40, 200)),
        Reply("Created hello.txt.", Usage(1300, 10)),
    )
    run = _run_gemini(agent_cli, model_server, place)
    assert run.code == 0, run.stderr
    assert target.read_text(encoding="utf-8") == "hello from gemini\n"
    # The usage includes gemini's side request (its model router), as it should.
    assert [e.answer for e in model_server.exchanges] == ["side", "turn 1", "turn 2"]
    assert gemini_usage(json.loads(run.stdout)) == model_server.usage_sent()


@pytest.mark.parametrize(("status", "said"), [(500, "INTERNAL"), (429, "scripted 429")])
def test_gemini_exits_with_the_http_status_when_the_model_fails(
    agent_cli: AgentCli, model_server: ModelServer, place: Place, status: int, said: str
) -> None:
    # By default gemini tries for about 260 s; one attempt, and a named model (no router
    # request, which retries on its own), bring that to seconds.
    model_server.script(Fail(status))
    no_retries = {"general": {"maxAttempts": 1}}
    run = _run_gemini(agent_cli, model_server, place, "--model", "gemini-2.5-flash", **no_retries)
    assert (run.code, run.stdout) == (status % 256, "")
    error = json.loads(run.stderr[run.stderr.rindex("\n{\n") :])["error"]
    assert error["code"] == status
    assert said in error["message"]


def test_aider_writes_the_file_and_reports_the_usage_sent(
    agent_cli: AgentCli, model_server: ModelServer, place: Place
) -> None:
    # Under 1,000 tokens aider prints exact counts; above, "1.2k".
    model_server.script(WriteFile("hello.txt", "hello from aider\n", Usage(900, 40)))
    log = place.tmp / "aider-analytics.jsonl"
    env = {
        **base_env(place),
        "OPENAI_API_KEY": "sk-scripted",
        "OPENAI_API_BASE": f"{model_server.url}/v1",
    }
    argv = [str(agent_cli("aider")), "--model", "openai/scripted", "--edit-format", "diff"]
    argv += ["--no-stream", "--yes-always", "--no-auto-commits", "--no-gitignore"]
    argv += ["--no-check-update", "--no-analytics", "--analytics-log", str(log)]
    argv += ["--no-show-model-warnings", "--message", PROMPT]
    run = run_agent(argv, env, place.repo)
    assert run.code == 0, run.stderr
    assert (place.repo / "hello.txt").read_text(encoding="utf-8") == "hello from aider\n"
    assert aider_printed_usage(run.stdout) == model_server.usage_sent()
    assert aider_usage(log) == model_server.usage_sent()
