"""The usage readers of the agent profiles over each agent's documented output, and the
reading of one attempt's part of a log."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from rho_mission.agents._readers import (
    TAIL_BYTES,
    read_aider,
    read_claude,
    read_codex,
    read_gemini,
)
from rho_mission.agents._reading import UsageAsk, read_attempt_usage
from rho_mission.records._document import Feature
from rho_mission.records._usage import AttemptUsage, sum_usage

# claude -p --output-format json: one result object (its fields as documented).
CLAUDE = json.dumps(
    {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "duration_ms": 2400,
        "num_turns": 4,
        "result": "Added the flag.\n{not json}",
        "session_id": "s",
        "total_cost_usd": 0.0342,
        "usage": {
            "input_tokens": 12,
            "cache_creation_input_tokens": 2000,
            "cache_read_input_tokens": 18000,
            "output_tokens": 640,
            "service_tier": "standard",
        },
        # Every call by model, as claude 2.1 writes it: the haiku side call is here only.
        "modelUsage": {
            "claude-haiku-4-5": {
                "inputTokens": 300,
                "outputTokens": 20,
                "cacheReadInputTokens": 0,
                "cacheCreationInputTokens": 0,
                "costUSD": 0.0011,
            },
            "claude-sonnet-4-5": {
                "inputTokens": 12,
                "outputTokens": 640,
                "cacheReadInputTokens": 18000,
                "cacheCreationInputTokens": 2000,
                "costUSD": 0.0331,
            },
        },
    }
)
# codex exec --json: JSON lines, a turn.completed per turn.
CODEX = "\n".join(
    json.dumps(line)
    for line in (
        {"type": "thread.started", "thread_id": "t"},
        {"type": "turn.started"},
        {"type": "item.completed", "item": {"id": "i", "type": "agent_message", "text": "x"}},
        {
            "type": "turn.completed",
            "usage": {"input_tokens": 26549, "cached_input_tokens": 22272, "output_tokens": 1590},
        },
        {"type": "turn.started"},
        {
            "type": "turn.completed",
            "usage": {"input_tokens": 100, "cached_input_tokens": 0, "output_tokens": 10},
        },
    )
)
# gemini -p --output-format json: one indented object, stats per model.
GEMINI = json.dumps(
    {
        "response": "done",
        "stats": {
            "models": {
                "gemini-2.5-pro": {
                    "api": {"totalRequests": 2, "totalErrors": 0, "totalLatencyMs": 5053},
                    "tokens": {
                        "prompt": 24939,
                        "candidates": 20,
                        "total": 25113,
                        "cached": 21263,
                        "thoughts": 154,
                        "tool": 0,
                    },
                },
                "gemini-2.5-flash": {"tokens": {"prompt": 100, "candidates": 5, "cached": 0}},
            },
            "tools": {"totalCalls": 1},
        },
    },
    indent=2,
)
# aider: a line per message; the session cost is its own running total.
AIDER = """Aider v0.86.1
Model: claude-sonnet-4-5 with diff edit format
Tokens: 2.1k sent, 1.2k cache hit, 150 received. Cost: $0.01 message, $0.01 session.
Applied edit to a.py
Tokens: 12k sent, 300 received. Cost: $0.04 message, $0.05 session.
"""


def test_claude_cost_tokens_and_the_costliest_model() -> None:
    reading = read_claude(f"rho: attempt 1 started\n{CLAUDE}\nrho: attempt 1 passed\n")
    assert reading is not None
    assert (reading.cost_usd, reading.input_tokens, reading.cached_input_tokens) == (
        0.0342,
        20312,  # every model's fresh, cache-written and cache-read input: the side call too
        18000,
    )
    assert (reading.output_tokens, reading.model, reading.stopped_by_budget) == (
        660,
        "claude-sonnet-4-5",
        False,
    )


def test_claude_tokens_fall_back_to_usage_without_model_usage() -> None:
    document = json.loads(CLAUDE)
    del document["modelUsage"]
    reading = read_claude(json.dumps(document))
    assert reading is not None
    assert (reading.input_tokens, reading.output_tokens, reading.model) == (20012, 640, None)


def test_claudes_budget_stop_is_read_as_such() -> None:
    stopped = json.loads(CLAUDE) | {"subtype": "error_max_budget_usd", "is_error": True}
    reading = read_claude(json.dumps(stopped))
    assert reading is not None
    assert reading.stopped_by_budget


def test_codex_turns_are_summed() -> None:
    reading = read_codex(CODEX)
    assert reading is not None
    assert (reading.input_tokens, reading.cached_input_tokens, reading.output_tokens) == (
        26649,
        22272,
        1600,
    )
    assert (reading.cost_usd, reading.model) == (None, None)


def test_gemini_models_are_summed_thoughts_as_output() -> None:
    reading = read_gemini(f"{GEMINI}\nrho: attempt 1 passed\n")
    assert reading is not None
    assert (reading.input_tokens, reading.output_tokens, reading.cached_input_tokens) == (
        25039,
        179,
        21263,
    )
    assert reading.model is None  # two models: no one name


def test_aider_lines_are_summed_and_its_session_cost_taken() -> None:
    reading = read_aider(AIDER)
    assert reading is not None
    assert (reading.input_tokens, reading.cached_input_tokens, reading.output_tokens) == (
        15300,
        1200,
        450,
    )
    assert reading.cost_usd == 0.05


@pytest.mark.parametrize("reader", [read_claude, read_codex, read_gemini, read_aider])
@pytest.mark.parametrize(
    "text",
    ["", "{", "plain output\n", '{"type": "result", "usage": "many"}', "Tokens: lots"],
)
def test_output_without_a_report_reads_as_none_or_unknown_fields(reader: object, text: str) -> None:
    reading = reader(text)  # type: ignore[operator]
    if reading is not None:  # a result object of nonsense: nothing in it is a count
        assert (reading.input_tokens, reading.output_tokens, reading.cost_usd) == (None,) * 3


def test_only_the_attempts_own_output_is_read(tmp_path: Path) -> None:
    log = tmp_path / "t.log"
    log.write_text(f"{CODEX}\n")
    start = log.stat().st_size
    with log.open("a") as handle:  # the second attempt's output after the first's
        handle.write('{"type":"turn.completed","usage":{"input_tokens":5,"output_tokens":1}}\n')
    record = read_attempt_usage(UsageAsk("task", 2, "codex"), None, log, start)
    assert record is not None
    assert (record.attempt, record.input_tokens, record.output_tokens) == (2, 5, 1)


def test_a_long_log_is_read_from_its_end(tmp_path: Path) -> None:
    log = tmp_path / "t.log"
    with log.open("w") as handle:
        handle.write(("x" * 1023 + "\n") * (16 * 1024))  # 16 MiB of an agent's chatter
        handle.write(CLAUDE + "\n")
    record = read_attempt_usage(UsageAsk("task", 1, "claude"), None, log, 0)
    assert record is not None
    assert record.cost_usd == 0.0342
    assert log.stat().st_size > 16 * TAIL_BYTES


def test_where_the_usage_file_and_the_agent_both_say_each_figure_is_the_larger(
    tmp_path: Path,
) -> None:
    log = tmp_path / "t.log"
    log.write_text(CLAUDE)
    folder = tmp_path / "usage" / "t.task.1"
    folder.mkdir(parents=True)
    (folder / "usage.json").write_text('{"cost_usd": 1, "input_tokens": 3}')
    record = read_attempt_usage(UsageAsk("task", 1, "claude"), folder / "usage.json", log, 0)
    assert record is not None
    agent = read_attempt_usage(UsageAsk("task", 1, "claude"), None, log, 0)
    assert agent is not None
    assert agent.input_tokens is not None
    assert agent.input_tokens > 3
    # The file's larger cost, the agent's larger token count.
    assert (record.source, record.cost_usd, record.input_tokens) == (
        "usage_file_and_agent",
        1.0,
        agent.input_tokens,
    )
    assert not folder.exists()


@pytest.mark.parametrize(
    ("written", "problem"),
    [
        ('{"cost": 1}', "not a rho.usage/v1 object"),
        ('{"input_tokens": -1}', "not a rho.usage/v1 object"),
        ('{"input_tokens": true}', "not a rho.usage/v1 object"),
        ('{"schema_version": "rho.usage/v2"}', "not a rho.usage/v1 object"),
        ("[1]", "not a rho.usage/v1 object"),
        ("x" * 70000, "over 65536 bytes"),
    ],
)
def test_a_bad_usage_file_is_unknown_never_zero(tmp_path: Path, written: str, problem: str) -> None:
    folder = tmp_path / "usage"
    folder.mkdir()
    (folder / "usage.json").write_text(written)
    record = read_attempt_usage(UsageAsk("task", 1), folder / "usage.json", None, 0)
    assert record is not None
    assert not record.known
    assert record.problem is not None
    assert problem in record.problem
    assert sum_usage([record]).input_tokens is None


def test_a_link_planted_as_the_usage_file_is_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text('{"cost_usd": 99}')
    folder = tmp_path / "usage"
    folder.mkdir()
    (folder / "usage.json").symlink_to(secret)
    record = read_attempt_usage(UsageAsk("task", 1), folder / "usage.json", None, 0)
    assert record is not None
    assert record.cost_usd is None
    assert secret.read_text() == '{"cost_usd": 99}'  # and the link's target is left alone


def test_an_attempt_recorded_twice_counts_once() -> None:
    feature = Feature("a")
    first = AttemptUsage(attempt=1, source="agent", cost_usd=0.5, input_tokens=10)
    feature.record_usage(first)
    feature.record_usage(first)  # a resume that read the same log again
    feature.record_usage(AttemptUsage(attempt=2, problem="no report"))
    assert feature.usage is not None
    assert (feature.usage.cost_usd, feature.usage.attempts, feature.usage.unknown) == (0.5, 2, 1)


def test_sums_are_the_same_whatever_the_order() -> None:
    records = [
        AttemptUsage(attempt=n, source="agent", cost_usd=0.1 * n, output_tokens=n)
        for n in range(1, 30)
    ]
    expected = sum_usage(records)
    for seed in range(5):
        shuffled = records[:]
        random.Random(seed).shuffle(shuffled)
        assert sum_usage(shuffled).model_dump_json() == expected.model_dump_json()


def test_a_link_planted_as_the_usage_folder_is_not_read_through_nor_emptied(
    tmp_path: Path,
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "usage.json").write_text('{"cost_usd": 99}')
    folder = tmp_path / "usage" / "t.task.1"
    folder.parent.mkdir()
    folder.symlink_to(elsewhere)  # what a task may leave: its folder swapped for a link
    record = read_attempt_usage(UsageAsk("task", 1), folder / "usage.json", None, 0)
    assert record is not None
    assert record.problem == "$RHO_USAGE_FILE's folder was replaced by a link"
    assert not folder.is_symlink()  # the link is gone, what it pointed at is not
    assert (elsewhere / "usage.json").read_text() == '{"cost_usd": 99}'


def test_aiders_analytics_log_counts_exactly_and_a_planted_one_is_not_followed(
    tmp_path: Path,
) -> None:
    printed = "Tokens: 1.2k sent, 56 received. Cost: $0.01 message, $0.01 session.\n"
    log = tmp_path / "a.log"
    log.write_text(printed, encoding="utf-8")
    line = {"event": "message_send", "properties": {"prompt_tokens": 1234, "completion_tokens": 56}}
    folder = tmp_path / "usage" / "a.task.1"
    folder.mkdir(parents=True)
    (folder / "aider-analytics.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    record = read_attempt_usage(UsageAsk("task", 1, "aider"), folder / "usage.json", log, 0)
    assert record is not None
    # Exact tokens from the log; the cost aider printed (its log says $0 for an unpriced model).
    assert (record.input_tokens, record.output_tokens, record.cost_usd) == (1234, 56, 0.01)
    # A link where the log goes is not followed: the printed counts count.
    folder.mkdir()
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_text(json.dumps(line) + "\n", encoding="utf-8")
    (folder / "aider-analytics.jsonl").symlink_to(elsewhere)
    record = read_attempt_usage(UsageAsk("task", 1, "aider"), folder / "usage.json", log, 0)
    assert record is not None
    assert (record.input_tokens, record.output_tokens) == (1200, 56)


@pytest.mark.parametrize("planted", ["fifo", "folder", "too long"])
def test_a_planted_aider_analytics_log_never_hangs_nor_counts(tmp_path: Path, planted: str) -> None:
    log = tmp_path / "a.log"
    log.write_text("Tokens: 900 sent, 40 received.\n", encoding="utf-8")
    folder = tmp_path / "usage" / "a.task.1"
    folder.mkdir(parents=True)
    where = folder / "aider-analytics.jsonl"
    if planted == "fifo":
        os.mkfifo(where)  # opened without blocking, and not a regular file: not read
    elif planted == "folder":
        where.mkdir()
    else:
        line = {"event": "message_send", "properties": {"prompt_tokens": 1, "completion_tokens": 1}}
        where.write_text((json.dumps(line) + "\n") * 20_000, encoding="utf-8")  # over 1 MiB
    record = read_attempt_usage(UsageAsk("task", 1, "aider"), folder / "usage.json", log, 0)
    assert record is not None
    assert (record.input_tokens, record.output_tokens) == (900, 40)
    assert not folder.exists()
