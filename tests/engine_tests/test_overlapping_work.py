"""Parallel work that overlaps (design §10): what a join does when two features of one wave
change the same file. Real repositories and real ``rho`` runs.

- git's own merge drivers apply to rho's merges: ``merge=union`` in ``.gitattributes`` lands
  three tasks that each append a line to one ``__init__.py``;
- without one, the features whose merge conflicts fail, each naming the paths and the
  features of the join whose work they met;
- ``rho mission conflicts`` lists which work overlaps (each pair of tasks, each task against
  the user's branch) and changes nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rho_mission import Feature, Handoff
from rho_mission._errors import MergeConflictError
from rho_mission.engine._joins import conflict_text
from support.repos import branches, integration_branch, run_git, tree_files, worktree_paths
from support.rho import run_rho
from support.stores import import_tasks, mission_dir, spec, store_tasks

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")

NAMES = ("a", "b", "c")


def _package(project: Path, attributes: str | None) -> None:
    (project / "pkg").mkdir()
    (project / "pkg" / "__init__.py").write_text("")
    if attributes is not None:
        (project / ".gitattributes").write_text(attributes)
    run_git(project, "add", "--all")
    run_git(project, "commit", "--quiet", "--message=package")


def _registering_tasks(project: Path) -> None:
    # What agents do all day: a module of one's own, and one line in the package's registry.
    tasks = []
    for name in NAMES:
        register = f"echo 'from .{name} import {name}' >> pkg/__init__.py"
        task = spec(f"add_{name}", f"{register} && echo '{name} = 1' > pkg/{name}.py")
        task["subject"] = f"add {name}"
        tasks.append(task)
    import_tasks(project, tasks)


def test_a_union_merge_driver_lands_three_appends_to_one_file(project: Path) -> None:
    _package(project, "pkg/__init__.py merge=union\n")
    _registering_tasks(project)
    result = run_rho("mission", "--from-tasks", cwd=project)
    assert result.code == 0, result.stderr
    files = tree_files(project, integration_branch(project))
    assert files["pkg/__init__.py"] == "".join(f"from .{n} import {n}\n" for n in NAMES)
    assert {f"pkg/{n}.py" for n in NAMES} <= set(files)


def test_a_conflicted_merge_names_the_paths_and_the_features_it_met(project: Path) -> None:
    _package(project, None)
    _registering_tasks(project)
    result = run_rho("mission", "--from-tasks", cwd=project)
    assert result.code == 1, result.stderr
    tasks = store_tasks(project)
    assert tasks["add_a"]["status"] == "completed"
    expected = "merge conflict in pkg/__init__.py with add_a (add a)"
    assert [tasks[f"add_{n}"]["lastError"] for n in ("b", "c")] == [expected, expected]
    assert f"add_b failed: {expected}" in result.stdout_lines
    advice = "its work is on its branch; 'rho mission resume "
    assert any(line.strip().startswith(advice) for line in result.stdout_lines), result.stdout
    log = run_rho("mission", "log", "latest", "add_b", cwd=project)
    assert f"(task add_b printed nothing: {expected})" in log.stdout_lines
    assert any(line.startswith(advice) for line in log.stdout_lines)


def test_conflicts_lists_which_work_overlaps_and_changes_nothing(project: Path) -> None:
    _package(project, None)
    _registering_tasks(project)
    import_tasks(project, [spec("elsewhere", "echo x > other.txt")])
    assert run_rho("mission", "--from-tasks", cwd=project).code == 1
    (project / "pkg" / "__init__.py").write_text("mine\n")  # the user's own change, committed
    run_git(project, "commit", "--quiet", "--all", "--message=mine")
    before = (branches(project), worktree_paths(project), run_git(project, "status", "--short"))

    listed = run_rho("mission", "conflicts", "latest", cwd=project)
    as_json = run_rho("mission", "conflicts", "latest", "--json", cwd=project)

    assert listed.code == 0, listed.stderr
    # Each pair with what its join made of it: add_b's and add_c's merges met add_a's work and
    # failed (no resolver); add_b's failed merge never met add_c's; main's work no join met.
    said = {
        "add_a and add_b": " (failed at its join)",
        "add_a and add_c": " (failed at its join)",
        "add_a and main": "",
        "add_b and add_c": "",
        "add_b and main": "",
        "add_c and main": "",
    }
    assert listed.stdout_lines[1:] == [
        f"{pair}: pkg/__init__.py{end}" for pair, end in said.items()
    ]
    assert listed.stdout_lines[0].endswith(
        "6 overlap(s) between 4 task(s) and main: 2 failed at their joins; 3 with main"
    )
    document = as_json.json()
    assert document["branch"] == "main"
    assert document["conflicts"][0] == {
        "feature": "add_a",
        "with": "add_b",
        "branch": None,
        "paths": ["pkg/__init__.py"],
        "at_join": "failed",
    }
    assert document["conflicts"][2]["branch"] == "main"
    after = (branches(project), worktree_paths(project), run_git(project, "status", "--short"))
    assert after == before


def test_conflicts_with_a_branch_that_does_not_exist_is_one_error_line(project: Path) -> None:
    import_tasks(project, [spec("one", "echo x > one.txt")])
    assert run_rho("mission", "--from-tasks", cwd=project).code == 0
    result = run_rho("mission", "conflicts", "latest", "--into", "nosuch", cwd=project)
    assert result.code == 2
    assert len(result.stderr_lines) == 1
    assert result.stderr_lines[0].startswith("error: ")
    assert "nosuch" in result.stderr_lines[0]
    clean = run_rho("mission", "conflicts", "latest", cwd=project)
    assert clean.stdout_lines[-1].endswith("no overlapping work between 1 task(s) and main")


def _merged(feature_id: str, files: list[str]) -> Feature:
    feature = Feature(feature_id, f"do {feature_id}")
    feature.handoff = Handoff(commit_id="0" * 40, files_changed=files)
    return feature


@pytest.mark.parametrize(
    ("merged", "expected"),
    [
        ([_merged("t1", ["a.py"]), _merged("t2", ["b.py"])], "with t1 (do t1)"),
        ([_merged("t1", ["a.py"]), _merged("t2", ["a.py", "c"])], "with t1 (do t1), t2 (do t2)"),
        ([_merged("t1", ["b.py"])], "with the work already on the integration branch"),
        ([], "with the work already on the integration branch"),
    ],
)
def test_a_conflict_says_with_whom(merged: list[Feature], expected: str) -> None:
    text = conflict_text(MergeConflictError(["a.py"]), merged)
    assert text == f"merge conflict in a.py {expected}"


def test_conflicts_after_a_night_of_resolved_joins_says_so_and_none_with_main(
    project: Path,
) -> None:
    # Every overlap was resolved at its join, and none meets main: the list says both (it said
    # only "N overlap(s)", as if work were still in conflict).
    import_tasks(
        project,
        [spec("a", "echo a > shared.txt"), spec("b", "echo b > shared.txt")],
    )
    resolver = "echo ab > shared.txt; git add shared.txt"
    assert run_rho("mission", "--from-tasks", "--resolve", resolver, cwd=project).code == 0
    listed = run_rho("mission", "conflicts", "latest", cwd=project)
    assert listed.stdout_lines == [
        f"mission {mission_dir(project).name}: 1 overlap(s) between 2 task(s) and main: "
        "1 resolved at their joins; none with main",
        "a and b: shared.txt (resolved at its join)",
    ]
