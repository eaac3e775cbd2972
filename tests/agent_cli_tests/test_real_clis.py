"""Each real agent CLI, run directly (not through rho), lands a scripted edit and reports usage.

The programs are the ones ``.ci/install-agents`` puts in ``/opt/rho-agents/bin`` (or
``$RHO_TESTS_AGENTS_BIN``): claude 2.1.332, codex 0.171.0, gemini 0.61.0, aider 0.86.2. Each
runs with an environment built from nothing (``_agents.base_env``: a fresh HOME and TMPDIR, no
key of the machine's), no input, in a fresh git repository, against ``_model_server``. What
follows was seen with those versions, as root, on this machine; timings are wall clock.

claude (Anthropic Messages; follows ``ANTHROPIC_BASE_URL``, any ``ANTHROPIC_API_KEY``)
  Line: ``claude -p PROMPT --output-format json --permission-mode acceptEdits``, with
  ``DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1``; no config file.
  Streams ``POST /v1/messages?beta=true``; offers Agent, Bash, Edit, Read, Write, Skill, ...
  It sent ``HEAD /`` in some runs; no side (title) request was seen in ``-p`` mode.
  Permissions: ``acceptEdits`` writes files but denies every Bash command (``git add``,
  ``python3 ...``: "This command requires approval") and still exits 0 with ``is_error``
  false, ``subtype`` success and the commands in ``permission_denials``. ``acceptEdits`` with
  ``--allowedTools "Bash(git add:*) Bash(python3:*)"`` (or ``Bash``) runs them, no denials.
  ``bypassPermissions`` is refused as root ("--dangerously-skip-permissions cannot be used
  with root/sudo privileges for security reasons", exit 1, no request) unless ``IS_SANDBOX=1``.
  Usage: ``modelUsage`` per model (inputTokens uncached, cacheReadInputTokens, outputTokens)
  equals what the server sent; a ``--max-budget-usd`` stop exits 1 (``is_error``,
  ``subtype`` error_max_budget_usd) with the result's ``usage`` all zeros, ``modelUsage``
  full, and the crossing answer's tool call run or not, by chance.
  Writes: ``~/.claude.json``, ``~/.claude/backups/.claude.json.backup.<ms>``,
  ``~/.claude/plugins/store/*.json``, ``~/.claude/projects/<cwd, / as ->/<session>.jsonl``
  and ``.../memory/``, ``~/.claude/session-env/<session>/``, ``~/.claude/sessions/``,
  ``~/.claude/shell-snapshots/``; and ``$TMPDIR/claude-<uid>/<cwd>/<session>/``,
  ``$TMPDIR/cc-socks``.
  Failures: 500 and 429 are retried (11 requests), then exit 1 after ~175 s with
  ``is_error`` true, ``terminal_reason`` api_error, ``api_error_status`` 500/429, ``result``
  "API Error: 500 scripted 500. This is a server-side issue, ..." / "API Error: Request
  rejected (429) · scripted 429", ``modelUsage`` {}. ``CLAUDE_CODE_MAX_RETRIES=0``: the same
  in ~1 s. A model that never answers: no exit in 300 s; ``API_TIMEOUT_MS=5000`` (retries 0):
  exit 1 after ~5.5 s, "Request timed out. If the API is slow to answer, ...".

codex (OpenAI Responses; ignores ``OPENAI_BASE_URL``)
  Config: ``$CODEX_HOME/config.toml`` with ``model = "gpt-5.5"``, ``model_provider =
  "scripted"`` and ``[model_providers.scripted]`` (``base_url = "<server>/v1"``, ``env_key =
  "OPENAI_API_KEY"``, ``wire_api = "responses"``, ``supports_websockets = false``). A model
  codex does not know (gpt-5-codex) works but warns "Model metadata ... not found" and offers
  no ``apply_patch`` tool. ``CODEX_HOME`` under the temporary folder (``$TMPDIR``, else /tmp)
  makes it refuse its helper binaries ("Refusing to create helper binaries under temporary
  dir"); a TMPDIR beside it lifts that. It says "Reading additional input from stdin..."
  unless stdin is closed (/dev/null).
  Line: ``codex exec --json --sandbox workspace-write PROMPT``. 0.171 has no ``--full-auto``
  (exit 2, "unexpected argument"). Tools: exec_command, write_stdin, apply_patch (a custom,
  freeform tool), view_image, request_user_input, *_goal, tool_search, web_search.
  Permissions: ``--sandbox workspace-write`` applies patches and runs commands, but ``.git``
  is read-only (``git add``: "Unable to create '.git/index.lock': Read-only file system",
  exit 128 to the model, and that command is missing from the --json items); ``read-only``
  rejects the patch (stderr "patch rejected: writing is blocked by read-only sandbox") and
  exits 0 having written nothing; ``--dangerously-bypass-approvals-and-sandbox`` runs all,
  ``git add`` included.
  Usage: the ``turn.completed`` lines (input_tokens with cached included,
  cached_input_tokens, output_tokens) equal what the server sent.
  Writes (all under CODEX_HOME): config.toml (ours), .sandbox_migration, .tmp/, installation_id,
  goals_1.sqlite, logs_2.sqlite, memories_1.sqlite, queue_1.sqlite, state_5.sqlite(-shm,
  -wal), thread_history_1.sqlite, thread-writer-locks/, sessions/YYYY/MM/DD/rollout-*.jsonl,
  shell_snapshots/, skills/.system/ (53 files), tmp/arg0-linux/ (emptied at exit).
  Failures: 500: "Reconnecting... 1/5 (We're currently experiencing high demand, ...)" events,
  then ``turn.failed`` with that message, exit 1 after ~25 s (30 requests); 429: "exceeded
  retry limit, last status: 429 Too Many Requests", exit 1 after ~6 s. With
  ``request_max_retries = 0`` and ``stream_max_retries = 0`` in the provider table: under 1 s.
  A model that sends no headers: no exit in 300 s (nor in 120 s with the idle timeout and no
  retries); one that stalls
  after a stream's headers: ``stream_idle_timeout_ms = 3000`` ends it in ~3.7 s, exit 1,
  "stream disconnected before completion: idle timeout waiting for SSE" (default: no exit in
  100 s).

gemini (Gemini API; follows ``GOOGLE_GEMINI_BASE_URL`` once ``~/.gemini/settings.json`` holds
``{"security": {"auth": {"selectedType": "gemini-api-key"}}}``, with ``GEMINI_API_KEY``)
  Line: ``gemini -p PROMPT --output-format json --yolo --skip-trust``. Without
  ``--skip-trust`` (or ``GEMINI_CLI_TRUST_WORKSPACE=true``): exit 55, "Gemini CLI is not
  running in a trusted directory ...", no request. First a router side request
  (``gemini-3.5-flash-lite:generateContent``, JSON schema, complexity_score >= 1; none with
  ``--model``), then ``gemini-3.1-pro-preview:streamGenerateContent?alt=sse`` with tools
  write_file, replace, read_file, run_shell_command, glob, grep_search, web_fetch, ...
  Permissions: ``--yolo`` writes and runs commands (``git add`` included). ``--approval-mode
  auto_edit`` writes, but run_shell_command is "not found" (not offered) and it exits 0;
  ``default`` writes nothing and exits 0.
  Usage: ``stats.models.<model>.tokens`` (prompt, candidates, cached), every model and role
  (router included), equals what the server sent.
  Writes: ``~/.gemini/installation_id``, ``projects.json``, ``history/<repo name>/.project_root``,
  ``tmp/<repo name>/.project_root``, ``tmp/<repo name>/chats/session-*.jsonl``,
  ``tmp/<repo name>/logs/``; nothing in TMPDIR.
  Failures: exit status = HTTP status mod 256 (500 -> 244, 429 -> 173), stdout empty, stderr
  a stack trace then ``{"session_id": ..., "error": {"type": "Error", "message": ...,
  "code": 500}}``; after ~260 s (15 requests). Settings ``{"general": {"maxAttempts": 1}}``
  with ``--model``: ~6 s. A model that never answers: no exit in 300 s (4 requests).

aider (OpenAI Chat Completions through litellm; ``OPENAI_API_BASE=<server>/v1``,
``OPENAI_API_KEY``, a model named ``openai/...``)
  Line: ``aider --model openai/scripted --edit-format diff --no-stream --yes-always
  --no-auto-commits --no-gitignore --no-check-update --no-analytics --analytics-log FILE
  --no-show-model-warnings --message PROMPT``. An unknown model defaults to the ``whole``
  edit format (the server answers SEARCH/REPLACE blocks, so ``diff`` here). No tools: it
  asks once and applies the edit from the text. At start and at each cost it tries to fetch
  litellm's price list from GitHub (fails at once here: no DNS).
  Permissions: ``--yes-always`` applies edits unasked; shell commands are not run. It
  ``git add``s a file it creates even with ``--no-auto-commits``; without ``--no-gitignore``
  it appends ``.aider*`` to ``.gitignore`` (creating it). In the work tree it leaves
  ``.aider.chat.history.md``, ``.aider.input.history``, ``.aider.tags.cache.v4/``.
  Usage: with ``--no-stream``, "Tokens: 900 sent, 40 received." is the provider's count, but
  rounded from 1,000 on ("1.2k sent"); streaming prints its own estimate (766 sent, 18
  received for 1200/40 sent). ``--analytics-log FILE`` (with ``--no-analytics``, nothing
  leaves the machine) has one ``message_send`` line per call with exact ``prompt_tokens``,
  ``completion_tokens`` and ``cost``.
  Writes: ``~/.aider/analytics.json``, ``~/.aider/installs.json``,
  ``~/.aider/caches/model_prices_and_context_window.json``.
  Failures: 500, 429 and a silent model all end in exit 0: 9 tries with backoff 0.2 s to
  32 s, each 3 requests; 500 after ~82 s ("litellm.InternalServerError: ... The API
  provider's servers are down or overloaded."), 429 after ~93 s ("litellm.RateLimitError:
  ... The API provider has rate limited you."); a silent model: no exit in 300 s, with
  ``--timeout 2`` exit 0 after ~147 s ("The API provider timed out without returning a
  response."). Nothing tells the caller the task failed but those lines.
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
