"""The agents' own verdicts, read from an attempt's output (``agents._verdicts``).

The shapes are those the real CLIs printed against the scripted model server
(tests/agent_cli_tests/test_real_clis.py); the hostile ones are a task's writing.
"""

from __future__ import annotations

import json

import pytest

from rho_mission.agents._verdicts import (
    WORDS_LIMIT,
    Verdict,
    read_aider,
    read_claude,
    read_codex,
    read_gemini,
)


def _claude(**fields: object) -> str:
    result = {"type": "result", "subtype": "success", "is_error": False, "result": "Done."}
    return json.dumps(result | fields)


def test_claude_is_error_is_a_failure_named_by_its_terminal_reason() -> None:
    said = "API Error: 500 scripted 500. This is a server-side issue"
    text = _claude(is_error=True, terminal_reason="api_error", result=said)
    assert read_claude(f"rho: started\n{text}\n") == Verdict(
        f"claude reported an error (api_error): {said}"
    )


def test_claudes_budget_stop_is_named_by_its_subtype() -> None:
    text = _claude(
        is_error=True, subtype="error_max_budget_usd", terminal_reason="budget_exhausted"
    )
    assert read_claude(text).failure == "claude reported an error (error_max_budget_usd): Done."


def test_claudes_permission_denials_alone_are_a_warning_not_a_failure() -> None:
    # Denied its own check (python3 ...) under acceptEdits, it still did the task.
    denials = [
        {"tool_name": "Bash", "tool_input": {"command": "python3 -m pytest -q"}},
        {"tool_name": "Write", "tool_input": {"file_path": "/elsewhere/x.txt"}},
    ]
    verdict = read_claude(_claude(permission_denials=denials))
    assert verdict == Verdict(
        None,
        ("claude was denied 2 tool call(s): Bash python3 -m pytest -q; Write /elsewhere/x.txt",),
    )


def test_codex_failed_turn_and_a_recovered_error() -> None:
    failed = [
        {"type": "turn.started"},
        {"type": "error", "message": "Reconnecting... 1/5"},
        {"type": "turn.failed", "error": {"message": "exceeded retry limit, last status: 429"}},
    ]
    text = "\n".join(json.dumps(line) for line in failed)
    assert read_codex(text).failure == (
        "codex reported a failed turn: exceeded retry limit, last status: 429"
    )
    recovered = [*failed[:2], {"type": "turn.completed", "usage": {"input_tokens": 1}}]
    assert read_codex("\n".join(json.dumps(line) for line in recovered)) == Verdict()


def test_gemini_error_object_on_stderr() -> None:
    error = {"session_id": "s", "error": {"type": "Error", "message": "INTERNAL", "code": 500}}
    text = "    at stack (file.js:1:2)\n" + json.dumps(error, indent=2) + "\n"
    assert read_gemini(text).failure == "gemini reported an error (500): INTERNAL"
    assert read_gemini(json.dumps({"response": "ok", "stats": {"models": {}}})) == Verdict()


def test_aider_model_error_it_gave_up_on_and_one_it_got_past() -> None:
    gave_up = (
        "litellm.InternalServerError: InternalServerError: OpenAIException - scripted 500\n"
        "The API provider's servers are down or overloaded.\n"
        "Retrying in 0.2 seconds...\n"
        "litellm.InternalServerError: InternalServerError: OpenAIException - scripted 500\n"
        "The API provider's servers are down or overloaded.\n"
    )
    assert read_aider(gave_up).failure == (
        "aider reported a model error: litellm.InternalServerError: InternalServerError: "
        "OpenAIException - scripted 500 (The API provider's servers are down or overloaded.)"
    )
    got_past = gave_up + "Applied edit to hello.txt\nTokens: 900 sent, 40 received.\n"
    assert read_aider(got_past) == Verdict()
    # A side call (its commit message) it retried says nothing when the retry got its answer.
    retried = "Tokens: 900 sent, 40 received.\n" + gave_up + "Retrying in 0.2 seconds...\n"
    assert read_aider(retried) == Verdict()


@pytest.mark.parametrize("reader", [read_claude, read_codex, read_gemini, read_aider])
@pytest.mark.parametrize(
    "text",
    ["", "{", "[" * 100_000, '{"type": "result", "is_error": true, "result": 7}', "\x00" * 1000],
)
def test_a_reader_never_raises_on_a_tasks_output(reader: object, text: str) -> None:
    assert callable(reader)
    assert isinstance(reader(text), Verdict)


def test_the_agents_words_are_one_line_and_bounded() -> None:
    text = _claude(is_error=True, terminal_reason="x\ny", result="word\n" * 10_000)
    failure = read_claude(text).failure
    assert failure is not None
    assert "\n" not in failure
    assert len(failure) < WORDS_LIMIT * 2 + 100


def test_the_agents_words_carry_no_terminal_escape() -> None:
    text = _claude(
        is_error=True, terminal_reason="api_error", result="\x1b[2Jgone\x07 \x1b]0;t\x07"
    )
    assert read_claude(text).failure == "claude reported an error (api_error): [2Jgone ]0;t"
