"""A task against the reading of its usage: a link at the usage folder, a file that hides spend.

Real ``rho`` missions in real repositories, each task a real shell command:

- the task swaps the mission's ``usage`` folder (the one holding every attempt's
  ``$RHO_USAGE_FILE`` folder) for a link to a folder outside the repository: rho reads nothing
  there and removes nothing there (it reaches its folders from the anchor of ``.rho`` without
  following a link on any component);
- the task runs its agent (which reports what it spent) and then writes a usage file that
  says less: the larger figure counts, so a budget still stops, and ``show`` says both were read;
- the task leaves a tree thousands of folders deep where rho removes (its usage folder):
  rho's remover walks by descriptor, without recursion.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

import pytest

from rho_mission.containment._folders import remove_tree
from support.repos import tree_files
from support.rho import run_rho
from support.stores import import_tasks, mission_dir, spec

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")


def _mission(project: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((mission_dir(project) / "mission.json").read_text())
    return document


def _victim(tmp_path: Path) -> Path:
    """A folder outside the repository that looks like an attempt's usage folder."""
    victim = tmp_path / "victim"
    (victim / "a.task.1").mkdir(parents=True)
    (victim / "a.task.1" / "usage.json").write_text('{"cost_usd": 42}')
    (victim / "a.task.1" / "precious.txt").write_text("the user's\n")
    return victim


def test_a_link_at_the_usage_folder_is_neither_read_through_nor_emptied(
    project: Path, tmp_path: Path
) -> None:
    victim = _victim(tmp_path)
    swap = (
        'usage=$(dirname "$(dirname "$RHO_USAGE_FILE")"); '
        f'mv "$usage" "$usage.moved" && ln -s {shlex.quote(str(victim))} "$usage"; '
        "echo ok > a.txt"
    )
    import_tasks(project, [spec("a", swap)])
    done = run_rho("mission", "--from-tasks", "--budget-usd", "5", cwd=project)
    assert done.code == 0, done.stderr
    # Nothing outside the repository was read as the attempt's usage, nor removed.
    assert (victim / "a.task.1" / "precious.txt").read_text() == "the user's\n"
    assert (victim / "a.task.1" / "usage.json").read_text() == '{"cost_usd": 42}'
    [feature] = _mission(project)["features"]
    [record] = feature["attempt_usage"]
    assert record["source"] is None
    assert record["problem"] == "$RHO_USAGE_FILE's folder was replaced by a link"
    assert _mission(project)["usage"]["cost_usd"] is None
    assert tree_files(project, _mission(project)["integration_branch"])["a.txt"] == "ok\n"


def test_a_link_at_the_usage_folder_before_the_attempt_gives_it_no_usage_file(
    project: Path, tmp_path: Path
) -> None:
    victim = _victim(tmp_path)
    # Task a (wave 1) plants the link; b (wave 2) is the attempt whose folder rho would make
    # (and first empty) through it: rho makes none, and b runs without $RHO_USAGE_FILE.
    plant = (
        'usage=$(dirname "$(dirname "$RHO_USAGE_FILE")"); '
        f'mv "$usage" "$usage.moved" && ln -s {shlex.quote(str(victim))} "$usage"; '
        "echo a > a.txt"
    )
    victim_b = victim / "b.task.1"
    victim_b.mkdir()
    (victim_b / "precious.txt").write_text("keep\n")
    seen = tmp_path / "b-usage.txt"
    check = f'printf "%s" "${{RHO_USAGE_FILE-unset}}" > {shlex.quote(str(seen))}; echo b > b.txt'
    import_tasks(project, [spec("a", plant), spec("b", check, "a")])
    done = run_rho("mission", "--from-tasks", cwd=project)
    assert done.code == 0, done.stderr
    assert (victim_b / "precious.txt").read_text() == "keep\n"
    # b ran without a usage file: its folder could not be made where rho's should be.
    assert seen.read_text() == "unset"


def test_a_usage_file_that_says_less_than_the_agent_hides_nothing(
    project: Path, agents_path: dict[str, str]
) -> None:
    hide = 'claude "$RHO_TASK_PROMPT_FILE"; echo "{}" > "$RHO_USAGE_FILE"'
    import_tasks(project, [spec("a", hide), spec("b", hide, "a")])
    env = {**agents_path, "STAND_IN_COST_USD": "3.00"}
    args = ("mission", "--from-tasks", "--agent", "claude", "--budget-usd", "1")
    done = run_rho(*args, cwd=project, env=env)
    # The agent's $3.00 counts: the budget stops the mission after a, before b starts.
    assert done.code == 1, done.stderr
    assert "stopped: budget reached: $3.00 of $1.00" in done.stdout
    by_id = {f["id"]: f for f in _mission(project)["features"]}
    [record] = by_id["a"]["attempt_usage"]
    assert (record["source"], record["cost_usd"], record["input_tokens"]) == (
        "usage_file_and_agent",
        3.0,
        1200,
    )
    assert by_id["b"]["status"] == "pending"
    shown = run_rho("mission", "show", "latest", cwd=project).stdout
    assert "read from both $RHO_USAGE_FILE and the agent's report: each figure the larger" in (
        shown
    )


def test_a_usage_file_can_add_to_what_the_agent_reported(
    project: Path, agents_path: dict[str, str]
) -> None:
    more = (
        'claude "$RHO_TASK_PROMPT_FILE"; '
        'printf \'{"cost_usd": 7.5, "output_tokens": 9}\' > "$RHO_USAGE_FILE"'
    )
    import_tasks(project, [spec("a", more)])
    done = run_rho("mission", "--from-tasks", "--agent", "claude", cwd=project, env=agents_path)
    assert done.code == 0, done.stderr
    [feature] = _mission(project)["features"]
    # Each figure the larger: the file's cost, the agent's tokens.
    assert feature["usage"]["cost_usd"] == 7.5
    assert (feature["usage"]["input_tokens"], feature["usage"]["output_tokens"]) == (1200, 300)


def test_a_tree_thousands_of_folders_deep_in_the_usage_folder_is_removed(
    project: Path,
) -> None:
    deep = (
        'cd "$(dirname "$RHO_USAGE_FILE")" && python3 -c "'
        "import os\nfor _ in range(3000): os.mkdir('d'); os.chdir('d')\n"
        "os.symlink('/', 'root')\"; "
        'cd "$RHO_WORKTREE" && echo ok > a.txt'
    )
    import_tasks(project, [spec("a", deep)])
    done = run_rho("mission", "--from-tasks", cwd=project)
    assert done.code == 0, done.stderr  # was: unexpected RecursionError
    assert list((mission_dir(project) / "usage").iterdir()) == []
    assert tree_files(project, _mission(project)["integration_branch"])["a.txt"] == "ok\n"


def test_remove_tree_follows_no_link_and_needs_no_recursion(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    folder = tmp_path / "tree"
    folder.mkdir()
    here = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(4000):  # deeper than PATH_MAX allows a path to name: made by descriptor
        os.mkdir("d", dir_fd=here)
        below = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=here)
        os.close(here)
        here = below
    os.symlink(outside, "up", dir_fd=here)
    os.close(here)
    (folder / "link").symlink_to(outside)
    (folder / "d" / "file").write_text("x")
    remove_tree(folder)
    assert not os.path.lexists(folder)
    assert (outside / "keep.txt").read_text() == "keep"
    remove_tree(folder)  # nothing there: nothing to do


def test_each_unknown_usage_says_whose_attempt_it_was(project: Path) -> None:
    # b's task writes no usage; its merge conflicts and its resolver writes a bad file: show
    # names each, the task's and the resolver's (it said only the last reason, of no one).
    import_tasks(
        project,
        [spec("a", "echo a > shared.txt"), spec("b", "echo b > shared.txt")],
    )
    resolver = 'echo "{not json" > "$RHO_USAGE_FILE"; echo ab > shared.txt; git add shared.txt'
    args = ("--budget-tokens", "1000", "--resolve", resolver)
    done = run_rho("mission", "--from-tasks", *args, cwd=project)
    assert done.code == 0, done.stdout + done.stderr
    shown = run_rho("mission", "show", "latest", cwd=project).stdout_lines
    unknown = [line for line in shown if line.startswith("  unknown: ")]
    assert unknown == [
        "  unknown: the task's attempt 1: no $RHO_USAGE_FILE was written and no agent profile "
        "reads its output",
        "  unknown: the task's attempt 1: no $RHO_USAGE_FILE was written and no agent profile "
        "reads its output",
        "  unknown: the resolver's attempt 1: $RHO_USAGE_FILE is not a rho.usage/v1 object: "
        "not JSON",
    ]
