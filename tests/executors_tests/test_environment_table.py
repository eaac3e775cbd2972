"""The README's table of what a command is given, held against what real stages get.

Two real missions of the real ``rho``: one whose task, resolver, checks, fix and setup each
write the names of their ``RHO_*`` variables to a file (two tasks write one file: a conflict;
the checks fail once: a fix), and one made from a prompt whose planner does the same. Each
stage's names must be exactly the README's ``yes`` and ``budget`` cells of its column (both
missions run under ``--budget-usd``); a ``replay`` cell may be there or not.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from support.rho import run_rho
from support.stores import import_tasks, mission_dir, spec

README = Path(__file__).resolve().parents[2] / "README.md"
_MARKER = "<!-- rho-environment-table:"
_STAGES = ("task", "resolver", "verify", "fix", "setup", "planner")
PLANNER = Path(__file__).resolve().parents[2] / "examples" / "agents" / "stand-in-planner.py"

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")


def _table() -> dict[str, dict[str, str]]:
    """The README's table: each variable's cell in each stage's column."""
    lines = README.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(_MARKER)) + 1
    header = [cell.strip() for cell in lines[start].strip("|").split("|")]
    assert header[2:] == list(_STAGES)
    table: dict[str, dict[str, str]] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        name = re.fullmatch(r"`(RHO_[A-Z_]+)`", cells[0])
        assert name is not None, line
        table[name.group(1)] = dict(zip(_STAGES, cells[2:], strict=True))
    return table


def _dump(folder: Path, stage: str) -> str:
    # The names of the command's RHO_* variables, one file per stage and attempt.
    target = shlex.quote(str(folder))
    return f'env | grep -o "^RHO_[A-Z_]*" | sort > {target}/{stage}-"$RHO_ATTEMPT"'


def _names(path: Path) -> set[str]:
    return set(path.read_text().split())


def _check(seen: dict[str, set[str]], table: dict[str, dict[str, str]]) -> None:
    for stage, names in seen.items():
        must = {v for v, cells in table.items() if cells[stage] in ("yes", "budget")}
        may = {v for v, cells in table.items() if cells[stage] == "replay"}
        assert must <= names, (stage, must - names)
        assert names <= must | may, (stage, names - must - may)


def test_every_stage_gets_the_variables_the_readme_names(project: Path, tmp_path: Path) -> None:
    table = _table()
    out = tmp_path / "seen"
    out.mkdir()
    fixed = tmp_path / "fixed"
    tasks = [
        spec("a", f"{_dump(out, 'task')}; echo a > shared.txt"),
        spec("b", "echo b > shared.txt"),
    ]
    import_tasks(project, tasks)
    done = run_rho(
        "mission", "--from-tasks", "--budget-usd", "100",
        "--setup", _dump(out, "setup"),
        "--resolve", f"{_dump(out, 'resolver')}; echo ab > shared.txt; git add shared.txt",
        "--verify", f"{_dump(out, 'verify')}; test -f {shlex.quote(str(fixed))}",
        "--fix", f"{_dump(out, 'fix')}; touch {shlex.quote(str(fixed))}",
        cwd=project,
    )  # fmt: skip
    assert done.code == 0, done.stdout + done.stderr
    stages = ("task", "resolver", "verify", "fix", "setup")
    _check({stage: _names(out / f"{stage}-1") for stage in stages}, table)
    # The prompt file's shape, as the README draws it.
    prompt = (mission_dir(project) / "prompts" / "a.md").read_text()
    # (The task has no description: its subject stands for it.)
    assert prompt == (
        "# do a\n\nMission: run 2 task(s) of the task store\n\nExpected behaviour:\n\ndo a\n"
    )


def test_the_planner_gets_the_variables_the_readme_names(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "seen"
    out.mkdir()
    planner = f"{_dump(out, 'planner')}; python3 {shlex.quote(str(PLANNER))}"
    done = run_rho(
        "mission", "add a greeting", "--planner", planner, "--run", "true",
        "--budget-usd", "100", cwd=project,
    )  # fmt: skip
    assert (out / "planner-1").exists(), done.stdout + done.stderr
    _check({"planner": _names(out / "planner-1")}, _table())


def test_the_readmes_usage_example_is_what_a_task_may_write(project: Path) -> None:
    text = README.read_text(encoding="utf-8")
    example = re.search(r'such as `(\{"schema_version": "rho\.usage/v1".*?\})`', text, re.S)
    assert example is not None, "the README shows one rho.usage/v1 object"
    written = " ".join(example.group(1).split())
    usage = json.loads(written)
    import_tasks(project, [spec("a", f"printf '%s' {shlex.quote(written)} > \"$RHO_USAGE_FILE\"")])
    done = run_rho("mission", "--from-tasks", "--budget-usd", "1", cwd=project)
    assert done.code == 0, done.stdout + done.stderr
    (feature,) = json.loads((mission_dir(project) / "mission.json").read_text())["features"]
    (record,) = feature["attempt_usage"]
    assert (record["source"], record["cost_usd"], record["input_tokens"]) == (
        "usage_file",
        usage["cost_usd"],
        usage["input_tokens"],
    )
