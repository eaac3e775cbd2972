"""Numbers a task or an agent reports that rho cannot count, and budgets
nothing could reach (item 7).

A usage file or an agent's output line holding ``'[' * 5000``, ``Infinity``, ``1e308`` dollars
or a count of 400 digits: the mission completes, the attempt's usage is unknown with a
one-line reason, and every later command on the mission folder answers (before: a
RecursionError killed the mission and left its task ``in_progress``; an OverflowError; a
mission that completed and then broke ``show`` and ``list`` for ever). A corrupt guarantees
record is one ``error:`` line. ``--budget-usd nan`` (``inf``, ``1e999``, negative) and
``--budget-tokens`` beyond the bounds are bad input: exit 2, nothing written.

Real ``rho`` processes in real repositories; a task's own command writes the bad record, or
prints the agent's output line (``--agent`` then names the reader).
"""

from __future__ import annotations

import json
import math
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from rho_mission.records._document import MissionConfig
from support.repos import branches, run_git
from support.rho import Result, run_rho
from support.stores import import_tasks, mission_dir, spec, store_bytes, store_tasks

_DIGITS = "9" * 400
_TOKENS_WORDS = "a whole number from 0 below 10**15"
_DOLLARS_WORDS = "a finite number of dollars from 0 below 10**9"
_FILE = "$RHO_USAGE_FILE is not a rho.usage/v1 object"
_USAGE_HINT = "hint: run 'rho mission --help' for usage"


def _mission(project: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((mission_dir(project) / "mission.json").read_text())
    return document


def _no_traceback(result: Result) -> None:
    assert "Traceback" not in result.stderr
    assert "this is a bug in rho" not in result.stderr


def _every_view_answers(project: Path, problem: str) -> None:
    """show, list, list --json and report answer, and show gives the reason."""
    shown = run_rho("mission", "show", "latest", cwd=project)
    assert (shown.code, shown.stderr) == (0, "")
    assert f"  unknown: the task's attempt 1: {problem}" in shown.stdout_lines
    listed = run_rho("mission", "list", cwd=project)
    assert (listed.code, listed.stderr) == (0, "")
    assert listed.stdout_lines[0] == "1 mission(s)"
    rows = run_rho("mission", "list", "--json", cwd=project)
    assert rows.code == 0, rows.stderr
    assert rows.json()["missions"][0]["usage"]["unknown"] == 1
    page = project.parent / "report.html"
    reported = run_rho("mission", "report", "latest", "--html", str(page), cwd=project)
    assert reported.code == 0, reported.stderr


def _run_writing(project: Path, content: str, *args: str) -> Result:
    """A mission of one task whose command puts *content* where its --agent's output (with
    *args*) or else its usage file is read."""
    source = project.parent / "said.txt"
    source.write_text(content, encoding="utf-8")
    where = "" if args else ' > "$RHO_USAGE_FILE"'
    import_tasks(project, [spec("a", f"cat {shlex.quote(str(source))}{where}")])
    # The task only prints: a change is not what it is for (--agent requires one by default).
    changes = ("--no-require-changes",) if args else ()
    return run_rho("mission", "--from-tasks", *args, *changes, cwd=project)


def _the_record(project: Path) -> dict[str, Any]:
    [feature] = _mission(project)["features"]
    assert feature["status"] == "completed"
    [record] = feature["attempt_usage"]
    assert (record["source"], record["cost_usd"], record["input_tokens"]) == (None, None, None)
    assert feature["usage"]["unknown"] == 1
    return dict(record)


@pytest.mark.parametrize(
    ("written", "problem"),
    [
        pytest.param("[" * 5000, f"{_FILE}: nested too deeply", id="nested"),
        pytest.param(
            '{"cost_usd": Infinity}',
            f"{_FILE}: cost_usd: input should be a finite number",
            id="inf",
        ),
        pytest.param(
            '{"cost_usd": 1e308}',
            f"{_FILE}: cost_usd: input should be less than 1000000000",
            id="1e308",
        ),
        pytest.param(
            f'{{"input_tokens": {_DIGITS}}}',
            f"{_FILE}: input_tokens: input should be less than 1000000000000000",
            id="400-digits",
        ),
        pytest.param(
            '{"output_tokens": 12, "cost_usd": NaN}',
            f"{_FILE}: cost_usd: input should be a finite number",
            id="nan",
        ),
    ],
)
def test_a_usage_file_of_impossible_figures_is_unknown_with_the_reason(
    project: Path, written: str, problem: str
) -> None:
    done = _run_writing(project, written)
    assert done.code == 0, done.stderr
    _no_traceback(done)
    assert _the_record(project)["problem"] == problem
    assert store_tasks(project)["a"]["status"] == "completed"
    _every_view_answers(project, problem)


def _claude(**fields: object) -> str:
    return json.dumps({"type": "result", "subtype": "success", **fields}) + "\n"


@pytest.mark.parametrize(
    ("agent", "output", "problem"),
    [
        pytest.param(
            "claude",
            '{"type": "result", "usage": ' + "[" * 5000 + "\n",
            "no usage report of claude in its output",
            id="claude-nested",
        ),
        pytest.param(
            "claude",
            _claude(total_cost_usd=math.inf),
            f"claude reported out of bounds: cost_usd ({_DOLLARS_WORDS})",
            id="claude-inf",
        ),
        pytest.param(
            "claude",
            _claude(total_cost_usd=1e308, usage={"output_tokens": 5}),
            f"claude reported out of bounds: cost_usd ({_DOLLARS_WORDS})",
            id="claude-1e308",
        ),
        pytest.param(
            "codex",
            f'{{"type": "turn.completed", "usage": {{"input_tokens": {_DIGITS}}}}}\n',
            f"codex reported out of bounds: input_tokens ({_TOKENS_WORDS})",
            id="codex-400-digits",
        ),
        pytest.param(
            "gemini",
            f'{{"stats": {{"models": {{"m": {{"tokens": {{"candidates": {_DIGITS}}}}}}}}}}}\n',
            f"gemini reported out of bounds: output_tokens ({_TOKENS_WORDS})",
            id="gemini-400-digits",
        ),
        pytest.param(
            "aider",
            f"Tokens: {_DIGITS}k sent, 3 received. Cost: ${_DIGITS} message, ${_DIGITS} session.\n",
            f"aider reported out of bounds: input_tokens ({_TOKENS_WORDS}), "
            f"cost_usd ({_DOLLARS_WORDS})",
            id="aider-400-digits",
        ),
        pytest.param(
            "aider",
            "Tokens: 1.2.3k sent, 3 received. Cost: $0.01 message, $0.01 session.\n",
            "no usage report of aider in its output",
            id="aider-not-a-number",
        ),
    ],
)
def test_an_agents_impossible_report_is_unknown_with_the_reason(
    project: Path, agent: str, output: str, problem: str
) -> None:
    done = _run_writing(project, output, "--agent", agent)
    assert done.code == 0, done.stderr
    _no_traceback(done)
    assert _the_record(project)["problem"] == problem
    _every_view_answers(project, problem)


def _edit_figures(project: Path, tokens: str, dollars: str) -> None:
    """Put *tokens* and *dollars* (JSON numbers) in every usage figure of mission.json."""
    path = mission_dir(project) / "mission.json"
    text = path.read_text(encoding="utf-8")
    for name, figure in (("input_tokens", tokens), ("cost_usd", dollars)):
        text = text.replace(f'"{name}": 10', f'"{name}": {figure}')
        text = text.replace(f'"{name}": 0.5', f'"{name}": {figure}')
    # The record, and the feature's, the join's and the mission's sums.
    assert text.count(f'"input_tokens": {tokens}') == text.count(f'"cost_usd": {dollars}') == 4
    path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize(("tokens", "dollars"), [(_DIGITS, "0.5"), ("10", "1e308")])
def test_a_mission_json_holding_impossible_figures_reads_them_as_unknown(
    project: Path, tokens: str, dollars: str
) -> None:
    done = _run_writing(project, '{"input_tokens": 10, "cost_usd": 0.5}')
    assert done.code == 0, done.stderr
    _edit_figures(project, tokens, dollars)
    # As rho before the bounds wrote it (a 400-digit count, 1e308 dollars), or a hand's edit.
    wrong = (
        f"input_tokens ({_TOKENS_WORDS})" if tokens == _DIGITS else f"cost_usd ({_DOLLARS_WORDS})"
    )
    _every_view_answers(project, f"$RHO_USAGE_FILE reported out of bounds: {wrong}")
    resumed = run_rho("mission", "resume", "latest", cwd=project)
    assert resumed.code == 0, resumed.stderr
    # A resume reads the journal back (engine/_adopt): its record of the attempt, made when
    # the usage was read and the larger spend, replaces the unknown one the edit left.
    [feature] = _mission(project)["features"]
    [record] = feature["attempt_usage"]
    assert (record["source"], record["cost_usd"], record["input_tokens"]) == ("usage_file", 0.5, 10)


def test_a_mission_json_holding_a_count_no_parser_reads_is_one_error_line(project: Path) -> None:
    done = _run_writing(project, '{"input_tokens": 10, "cost_usd": 0.5}')
    assert done.code == 0, done.stderr
    folder = mission_dir(project)
    _edit_figures(project, "9" * 5000, "0.5")
    shown = run_rho("mission", "show", str(folder), cwd=project)
    assert (shown.code, shown.stdout) == (2, "")
    [line] = shown.stderr_lines
    expected = f"error: invalid {folder}/mission.json: document: invalid json: number out of range"
    assert re.fullmatch(re.escape(expected) + r" at line \d+ column \d+", line), line
    listed = run_rho("mission", "list", cwd=project)
    assert (listed.code, listed.stdout_lines[0], listed.stderr) == (0, "0 mission(s)", "")


def _guarantees(project: Path) -> Path:
    common_dir = run_git(project, "rev-parse", "--path-format=absolute", "--git-common-dir")
    common = Path(common_dir.strip())
    return common.resolve() / f"rho-mission-{mission_dir(project).name}.guarantees.json"


@pytest.mark.parametrize("written", ["[" * 5000, "{not json", "[]", "\xff"])
def test_a_corrupt_guarantees_record_is_one_error_line_at_resume(
    project: Path, written: str
) -> None:
    import_tasks(project, [spec("a", "exit 3")])
    assert run_rho("mission", "--from-tasks", cwd=project).code == 1
    record = _guarantees(project)
    record.write_text(written, encoding="utf-8")
    before = (store_bytes(project), (mission_dir(project) / "mission.json").read_bytes())
    resumed = run_rho("mission", "resume", "latest", cwd=project)
    assert (resumed.code, resumed.stdout) == (2, "")
    assert resumed.stderr_lines == [
        f"error: {record} holds no mission guarantees (it is not the JSON object rho wrote); "
        "refusing to run the mission"
    ]
    after = (store_bytes(project), (mission_dir(project) / "mission.json").read_bytes())
    assert after == before


# -- budgets: bad input, exit 2, nothing written -----------------------------------------------

_USD = "0<x<=1000000000"
_TOKENS = "1<=x<=1000000000000000"
_BAD_BUDGETS = [
    ("--budget-usd", "nan", f"nan is not a number in the range {_USD}."),
    ("--budget-usd", "inf", f"inf is not in the range {_USD}."),
    ("--budget-usd", "-inf", f"-inf is not in the range {_USD}."),
    ("--budget-usd", "1e999", f"inf is not in the range {_USD}."),
    ("--budget-usd", "-1", f"-1.0 is not in the range {_USD}."),
    ("--budget-usd", "2e9", f"2000000000.0 is not in the range {_USD}."),
    ("--budget-tokens", "nan", "'nan' is not a valid integer range."),
    ("--budget-tokens", "inf", "'inf' is not a valid integer range."),
    ("--budget-tokens", "-inf", "'-inf' is not a valid integer range."),
    ("--budget-tokens", "1e999", "'1e999' is not a valid integer range."),
    ("--budget-tokens", "-1", f"-1 is not in the range {_TOKENS}."),
    ("--budget-tokens", "1" + "0" * 20, f"1{'0' * 20} is not in the range {_TOKENS}."),
]


def _refused(result: Result, option: str, words: str, hint: str) -> None:
    assert (result.code, result.stdout) == (2, "")
    assert result.stderr_lines == [f"error: Invalid value for '{option}': {words}", hint]


def test_a_budget_nothing_could_reach_is_refused_before_a_mission_starts(
    project: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    import_tasks(project, [spec("a", f"touch {shlex.quote(str(marker))}")])
    before = store_bytes(project)
    for option, value, words in _BAD_BUDGETS:
        result = run_rho("mission", "--from-tasks", f"{option}={value}", cwd=project)
        _refused(result, option, words, _USAGE_HINT)
        assert store_bytes(project) == before
        assert not (project / ".rho" / "missions").exists()
        assert not marker.exists()
        assert branches(project) == {"main"}


def _folder_bytes(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_a_budget_nothing_could_reach_is_refused_at_resume(project: Path, tmp_path: Path) -> None:
    flag = tmp_path / "fail"
    flag.touch()
    import_tasks(project, [spec("a", f"test ! -e {shlex.quote(str(flag))}")])
    assert run_rho("mission", "--from-tasks", cwd=project).code == 1
    flag.unlink()  # a resume would now complete it
    folder = mission_dir(project)
    before = (store_bytes(project), _folder_bytes(folder), branches(project))
    hint = "hint: run 'rho mission resume --help' for usage"
    for option, value, words in _BAD_BUDGETS:
        result = run_rho("mission", "resume", "latest", f"{option}={value}", cwd=project)
        _refused(result, option, words, hint)
        assert (store_bytes(project), _folder_bytes(folder), branches(project)) == before


@pytest.mark.parametrize(
    "fields",
    [
        {"budget_usd": math.nan},
        {"budget_usd": math.inf},
        {"budget_usd": -1.0},
        {"budget_usd": 2e9},
        {"budget_tokens": 10**20},
        {"budget_tokens": -1},
    ],
)
def test_the_library_config_refuses_the_same_budgets(fields: dict[str, float]) -> None:
    with pytest.raises(ValidationError):
        MissionConfig(**fields)


def test_a_mission_json_with_times_edited_by_hand_is_shown_never_a_crash(project: Path) -> None:
    import_tasks(project, [spec("a", "true")])
    assert run_rho("mission", "--from-tasks", "--verify", "true", cwd=project).code == 0
    path = mission_dir(project) / "mission.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    document["features"][0]["completed_at"] = "yesterday"
    document["wave_joins"][0]["verification"]["duration_ms"] = int(_DIGITS)
    path.write_text(json.dumps(document), encoding="utf-8")
    shown = run_rho("mission", "show", "latest", cwd=project)
    assert (shown.code, shown.stderr) == (0, "")
    assert "a: completed, 1 attempt(s), ?" in shown.stdout_lines
    assert "  verification: passed, 1 check(s), ?" in shown.stdout_lines


def test_a_budget_no_option_takes_in_a_mission_json_is_one_error_line(project: Path) -> None:
    import_tasks(project, [spec("a", "true")])
    assert run_rho("mission", "--from-tasks", "--budget-usd", "5", cwd=project).code == 0
    folder = mission_dir(project)
    path = folder / "mission.json"
    # What --budget-usd 1e300 wrote before the bounds (or a hand's edit): never reached.
    path.write_text(path.read_text().replace('"budget_usd": 5.0', '"budget_usd": 1e300'))
    shown = run_rho("mission", "show", str(folder), cwd=project)
    assert (shown.code, shown.stdout) == (2, "")
    assert shown.stderr_lines == [
        f"error: invalid {path}: config.budget_usd: input should be less than or equal to "
        "1000000000"
    ]
    listed = run_rho("mission", "list", cwd=project)
    assert (listed.code, listed.stdout_lines[0], listed.stderr) == (0, "0 mission(s)", "")
