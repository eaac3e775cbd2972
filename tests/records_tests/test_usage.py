"""What a mission costs: agents by name, each attempt's usage, budgets.

Real ``rho`` processes in real repositories; the agents are ``examples/agents/stand-in-agent.sh``
answering to the names ``claude`` and ``codex`` on PATH, printing each agent's documented
output shape (no test calls a real model).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from graph import load_mission_graph
from graph.cloud import prepare_for_cloud
from support.repos import tree_files
from support.rho import RHO, rho_env, run_rho
from support.stores import import_tasks, journal_events, mission_dir, spec, store_tasks


def _chain(count: int) -> list[dict[str, Any]]:
    # Tasks without a command of their own: the agent's profile line runs them.
    return [spec(f"t{i}", None, *([f"t{i - 1}"] if i > 1 else [])) for i in range(1, count + 1)]


def _mission(project: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((mission_dir(project) / "mission.json").read_text())
    return document


def test_a_mission_with_agent_claude_records_each_tasks_usage(
    project: Path, agents_path: dict[str, str]
) -> None:
    import_tasks(project, _chain(2))
    done = run_rho("mission", "--from-tasks", "--agent", "claude", cwd=project, env=agents_path)
    assert done.code == 0, done.stderr
    mission = _mission(project)
    assert mission["config"]["agent"] == "claude"
    for feature in mission["features"]:
        assert feature["usage"] == {
            "cost_usd": 0.25,
            "input_tokens": 1200,  # 400 fresh + 800 read from the cache
            "output_tokens": 300,
            "cached_input_tokens": 800,
            "attempts": 1,
            "unknown": 0,
        }
        [record] = feature["attempt_usage"]
        assert (record["source"], record["agent"], record["model"]) == (
            "agent",
            "claude",
            "claude-sonnet-4-5",
        )
    assert mission["usage"]["cost_usd"] == 0.5
    assert [join["usage"]["cost_usd"] for join in mission["wave_joins"]] == [0.25, 0.25]
    # The work is the stand-in's, made through the profile's command line.
    assert tree_files(project, mission["integration_branch"])["tasks/t2.txt"].startswith("do t2")
    shown = run_rho("mission", "show", "latest", cwd=project).stdout
    assert "usage: $0.50, 2.4k in / 600 out" in shown
    assert "cost" in shown.splitlines()[6]  # the table's column
    listed = json.loads(run_rho("mission", "list", "--json", cwd=project).stdout)
    assert listed["missions"][0]["usage"]["cost_usd"] == 0.5
    assert "$0.50" in run_rho("mission", "list", cwd=project).stdout
    # The report (metadata only) carries the numbers, for its header and cards.
    page = project.parent / "report.html"
    assert run_rho("mission", "report", "latest", "--html", str(page), cwd=project).code == 0
    html = page.read_text()
    assert '"usage":{"attempts":2,"cached_input_tokens":1600,"cost_usd":0.5,' in html
    assert "claude-sonnet-4-5" not in html  # the model's name is not a number


def test_a_mission_with_agent_codex_records_tokens_and_no_cost(
    project: Path, agents_path: dict[str, str]
) -> None:
    import_tasks(project, _chain(1))
    done = run_rho("mission", "--from-tasks", "--agent", "codex", cwd=project, env=agents_path)
    assert done.code == 0, done.stderr
    [feature] = _mission(project)["features"]
    assert feature["usage"] == {
        "cost_usd": None,  # codex reports tokens only: unknown, not zero
        "input_tokens": 1200,
        "output_tokens": 300,
        "cached_input_tokens": 800,
        "attempts": 1,
        "unknown": 0,
    }
    assert "1.5k tok" in run_rho("mission", "show", "latest", cwd=project).stdout


def test_a_budget_stops_a_mission_after_the_task_that_reached_it_and_resume_finishes_it(
    project: Path, agents_path: dict[str, str]
) -> None:
    import_tasks(project, _chain(10))
    args = ("mission", "--from-tasks", "--agent", "claude", "--workers", "1")
    done = run_rho(*args, "--budget-usd", "1", cwd=project, env=agents_path)
    assert done.code == 1
    assert "stopped: budget reached: $1.00 of $1.00" in done.stdout
    mission_id = _mission(project)["id"]
    assert f"rho mission resume {mission_id} --budget-usd 2" in done.stdout
    mission = _mission(project)
    statuses = {f["id"]: f["status"] for f in mission["features"]}
    # 0.25 a task: the fourth reached the budget, no later wave started.
    assert [statuses[f"t{i}"] for i in range(1, 11)] == ["completed"] * 4 + ["pending"] * 6
    assert mission["status"] == "partial"
    assert mission["budget_stop"] == "budget reached: $1.00 of $1.00"
    assert mission["wave_joins"][-1]["not_run_ids"] == [f"t{i}" for i in (10, 5, 6, 7, 8, 9)]
    assert store_tasks(project)["t5"]["status"] == "pending"
    assert "stopped: budget reached" in run_rho("mission", "show", "latest", cwd=project).stdout
    [decision] = journal_events(mission_dir(project), "budget")
    assert (decision["decision"], decision["spent_usd"], decision["budget_usd"]) == (
        "stop",
        1.0,
        1.0,
    )
    # A resume without a higher budget stops at once; with one, it finishes, nothing run twice.
    again = run_rho("mission", "resume", "latest", cwd=project, env=agents_path)
    assert again.code == 1
    assert "budget reached" in again.stdout
    finished = run_rho(
        "mission", "resume", "latest", "--budget-usd", "5", cwd=project, env=agents_path
    )
    assert finished.code == 0, finished.stderr
    mission = _mission(project)
    assert mission["status"] == "completed"
    assert mission["budget_stop"] is None
    assert [f["attempts"] for f in mission["features"]] == [1] * 10
    assert mission["usage"]["cost_usd"] == 2.5
    assert mission["config"]["budget_usd"] == 5


def test_claudes_own_budget_stop_is_recorded_as_stopped_by_budget_not_a_crash(
    project: Path, agents_path: dict[str, str]
) -> None:
    import_tasks(project, _chain(3))
    args = ("mission", "--from-tasks", "--agent", "claude", "--workers", "1")
    done = run_rho(*args, "--budget-usd", "0.6", cwd=project, env=agents_path)
    assert done.code == 1
    third = _mission(project)["features"][2]
    # It started with $0.10 left, got --max-budget-usd 0.1000, and stopped there.
    assert third["status"] == "cancelled"
    assert third["error"].startswith("stopped by budget: the agent reached its --max-budget-usd")
    [record] = third["attempt_usage"]
    assert (record["stopped_by_budget"], record["cost_usd"]) == (True, 0.1)
    assert _mission(project)["status"] == "partial"
    log = (mission_dir(project) / "logs" / "t3.log").read_text()
    assert '"subtype":"error_max_budget_usd"' in log


def test_the_usage_file_is_read_for_an_agent_rho_does_not_know(project: Path) -> None:
    wrote = (
        'printf \'{"schema_version": "rho.usage/v1", "input_tokens": 10, "output_tokens": 4, '
        '"cost_usd": 0.01, "model": "my-model"}\' > "$RHO_USAGE_FILE"; echo ok > a.txt'
    )
    bad = 'echo "{not json" > "$RHO_USAGE_FILE"; echo ok > b.txt'
    silent = "echo ok > c.txt"
    import_tasks(project, [spec("a", wrote), spec("b", bad), spec("c", silent)])
    done = run_rho("mission", "--from-tasks", cwd=project)
    assert done.code == 0, done.stderr
    by_id = {f["id"]: f for f in _mission(project)["features"]}
    assert by_id["a"]["usage"]["cost_usd"] == 0.01
    assert by_id["a"]["attempt_usage"][0]["source"] == "usage_file"
    assert by_id["a"]["attempt_usage"][0]["model"] == "my-model"
    # A bad file is unknown, with why; the task still completed.
    assert by_id["b"]["status"] == "completed"
    assert by_id["b"]["usage"]["unknown"] == 1
    assert "not a rho.usage/v1 object" in by_id["b"]["attempt_usage"][0]["problem"]
    # No agent, no budget, no file: nothing is recorded (a plain shell task spends nothing rho
    # could know of).
    assert by_id["c"]["usage"] is None
    # The usage folders are gone once read.
    assert list((mission_dir(project) / "usage").iterdir()) == []


def test_with_a_budget_an_unread_usage_counts_as_unknown_and_the_start_warns(
    project: Path,
) -> None:
    import_tasks(project, [spec("a", "echo ok > a.txt")])
    args = ("mission", "--from-tasks", "--budget-tokens", "1000")
    # One stream (stderr into stdout): the warning comes before the run's first line, once.
    done = subprocess.run(
        [str(RHO), *args], cwd=project, env=rho_env(), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout
    lines = done.stdout.splitlines()
    warned = [n for n, line in enumerate(lines) if "counts only attempts that write" in line]
    assert warned == [0], lines
    assert lines[0].startswith(
        "warning: the budget counts only attempts that write $RHO_USAGE_FILE"
    )
    [feature] = _mission(project)["features"]
    assert feature["usage"]["unknown"] == 1
    assert feature["usage"]["input_tokens"] is None  # unknown is never zero
    shown = run_rho("mission", "show", "latest", cwd=project).stdout
    assert "1 attempt(s) whose usage could not be read" in shown


def test_the_graph_and_the_cloud_upload_carry_usage_as_numbers_only(
    project: Path, agents_path: dict[str, str]
) -> None:
    import_tasks(project, _chain(3))
    args = ("mission", "--from-tasks", "--agent", "claude", "--workers", "1")
    assert run_rho(*args, "--budget-usd", "0.5", cwd=project, env=agents_path).code == 1
    graph = load_mission_graph(mission_dir(project))
    nodes = {node.id: node for node in graph.nodes}
    mission_id = _mission(project)["id"]
    feature = nodes[f"rho/mission-feature/{mission_id}/t1"].attributes
    assert feature["usage_cost_microusd"] == "250000"  # a graph's attributes are strings
    assert feature["usage_input_tokens"] == "1200"
    assert len(str(feature["usage_model_sha256"])) == 64
    budget = nodes[f"rho/budget/{mission_id}"].attributes
    assert budget["entity_type"] == "budget_decision"
    assert (budget["budget_microusd"], budget["spent_microusd"]) == ("500000", "500000")
    text = prepare_for_cloud(graph).body.decode()
    for clear in ("claude-sonnet-4-5", "budget reached", "usage.json"):
        assert clear not in text
    # The numbers go up as they are (rho's own keys, in the allow-list), not as digests.
    assert '"usage_cost_microusd":"250000"' in text or '"usage_cost_microusd":250000' in text
    assert '"spent_microusd"' in text
    journal = (mission_dir(project) / "journal.jsonl").read_text()
    assert "claude-sonnet-4-5" not in journal


@pytest.mark.usefixtures("bwrap")
def test_a_sandboxed_task_writes_its_usage_file(project: Path) -> None:
    wrote = 'printf \'{"output_tokens": 7}\' > "$RHO_USAGE_FILE"; echo ok > a.txt'
    import_tasks(project, [spec("a", wrote)])
    done = run_rho("mission", "--from-tasks", "--sandbox", cwd=project)
    assert done.code == 0, done.stderr
    [feature] = _mission(project)["features"]
    assert feature["usage"]["output_tokens"] == 7


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--agent", "claude", "--run", "x"), "error: --agent and --run both name a command"),
        (("--budget-hard",), "error: --budget-hard needs --budget-usd or --budget-tokens"),
        (("--agent", "nobody"), "error: Invalid value for '--agent'"),
        (("--budget-usd", "0"), "error: Invalid value for '--budget-usd'"),
    ],
)
def test_bad_cost_options_are_one_line_errors_that_change_nothing(
    project: Path, args: tuple[str, ...], said: str
) -> None:
    import_tasks(project, [spec("a", "true")])
    before = (project / ".rho" / "tasks.json").read_bytes()
    done = run_rho("mission", "--from-tasks", *args, cwd=project)
    assert done.code == 2
    assert said in done.stderr
    assert "Traceback" not in done.stderr
    assert (project / ".rho" / "tasks.json").read_bytes() == before
    assert not (project / ".rho" / "missions").exists()


def test_rho_agents_lists_every_profile_with_its_command_and_whether_it_is_here(
    project: Path, agents_path: dict[str, str], tmp_path: Path
) -> None:
    done = run_rho("agents", "--json", cwd=project, env=agents_path)
    assert done.code == 0, done.stderr
    rows = {row["name"]: row for row in json.loads(done.stdout)["agents"]}
    assert sorted(rows) == ["aider", "claude", "codex", "gemini"]
    assert rows["claude"]["path"].endswith("claude")
    assert "--output-format json" in rows["claude"]["command"]
    # What a mission runs: the profile's request timeout first, unless the user set one.
    assert rows["claude"]["command"].startswith('export API_TIMEOUT_MS="${API_TIMEOUT_MS:-')
    assert {row["task_timeout"] for row in rows.values()} == {1800.0}
    assert rows["claude"]["reports"] == "cost and tokens"
    assert rows["codex"]["reports"] == "tokens"
    # A PATH of an empty folder of the test's own: whatever this machine has installed (a real
    # claude in /usr/bin), none of the agents is found.
    nothing = tmp_path / "empty-bin"
    nothing.mkdir()
    text = run_rho("agents", cwd=project, env={"PATH": str(nothing)}).stdout
    missing = sorted(line for line in text.splitlines() if line.endswith(": not on PATH"))
    assert missing == [f"{name}: not on PATH" for name in ("aider", "claude", "codex", "gemini")]


def test_a_hard_budget_stops_the_attempts_running_when_it_is_reached(project: Path) -> None:
    spend = 'printf \'{"cost_usd": 2}\' > "$RHO_USAGE_FILE"; echo a > a.txt'
    import_tasks(project, [spec("a", spend), spec("b", "sleep 30; echo b > b.txt")])
    args = ("mission", "--from-tasks", "--workers", "2", "--budget-usd", "1")
    started = time.monotonic()
    done = run_rho(*args, "--budget-hard", "--grace", "1s", cwd=project)
    assert time.monotonic() - started < 25  # b was stopped, not waited for
    assert done.code == 1
    by_id = {f["id"]: f for f in _mission(project)["features"]}
    assert by_id["a"]["status"] == "completed"
    assert (by_id["b"]["status"], by_id["b"]["error"]) == (
        "cancelled",
        "budget reached: $2.00 of $1.00",
    )
    assert _mission(project)["status"] == "partial"
    [decision] = journal_events(mission_dir(project), "budget")
    assert decision["hard"] is True


def test_the_budgets_stop_line_says_the_spend_recorded_at_the_end(project: Path) -> None:
    # a reaches the budget; b, already running, spends after the stop: both count, and the
    # line says so (as mission.json's usage does), not the spend at the moment of the stop.
    spend = 'printf \'{"cost_usd": 0.5}\' > "$RHO_USAGE_FILE"; echo a > a.txt'
    journal = '"$RHO_MISSION_DIR/journal.jsonl"'
    after_stop = (
        f'i=0; until grep -q \'"event": "budget"\' {journal}; do i=$((i+1)); '
        "[ $i -ge 600 ] && exit 9; sleep 0.05; done; "
        'printf \'{"cost_usd": 0.25}\' > "$RHO_USAGE_FILE"; echo b > b.txt'
    )
    later = spec("c", "echo c > c.txt", "a")  # the wave the budget keeps from starting
    import_tasks(project, [spec("a", spend), spec("b", after_stop), later])
    args = ("mission", "--from-tasks", "--workers", "2", "--budget-usd", "0.3")
    done = run_rho(*args, cwd=project)
    assert done.code == 1, done.stdout + done.stderr
    mission = _mission(project)
    statuses = {f["id"]: f["status"] for f in mission["features"]}
    assert statuses == {"a": "completed", "b": "completed", "c": "pending"}
    assert mission["usage"]["cost_usd"] == 0.75
    assert mission["budget_stop"] == "budget reached: $0.75 of $0.30"
    assert "stopped: budget reached: $0.75 of $0.30" in done.stdout
    [decision] = journal_events(mission_dir(project), "budget")
    assert decision["spent_usd"] == 0.5  # the journal keeps the moment of the decision


def test_agent_requires_changes_unless_told_otherwise(project: Path) -> None:
    import_tasks(project, _chain(1))
    line = "an attempt that changes no file fails (--require-changes)"
    args = ("mission", "--from-tasks", "--dry-run")
    assert line in run_rho(*args, "--agent", "claude", cwd=project).stdout.splitlines()
    allowed = run_rho(*args, "--agent", "claude", "--no-require-changes", cwd=project)
    assert line not in allowed.stdout
    assert line not in run_rho(*args, "--run", "true", cwd=project).stdout
    assert line in run_rho(*args, "--run", "true", "--require-changes", cwd=project).stdout
