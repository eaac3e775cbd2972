"""The resolve stage (design §10, rung 2): a merge that conflicts at a join goes to a resolver.

Real repositories, real ``rho`` runs and real shell resolvers (the stand-in of
``examples/agents``). The commonest workload of parallel agents: three tasks of one wave, each
adds a module and appends its import to the package's ``__init__.py``.

- with ``--resolve`` the three land whole in one run, each task run once, the two resolved
  merges commits with both parents, each recorded (``conflict``) in mission.json, counted in
  the join, digested only in the graph, printed by ``show`` and ``log``;
- a resolver that leaves markers, deletes a conflicted path both sides hold, or fails fails
  its feature with that reason; the brief and the prompt say what met what;
- a library resolver (``run_staged(resolve=...)``) gets the same worktree and brief;
- ``resume`` keeps the resolver and ``resume --resolve`` replaces it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from rho_mission import Feature, Mission, MissionConfig, WorkerContext
from support.overlap import (
    NAMES,
    REGISTRY,
    STAND_IN,
    features,
    mission_json,
    package,
    registering_tasks,
    runs_of,
)
from support.repos import integration_branch, run_git, tree_files
from support.rho import run_rho
from support.stores import journal_events, mission_dir, store_tasks

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")


@pytest.fixture
def overlapping(project: Path, marks: Path) -> Path:
    package(project)
    registering_tasks(project, marks)
    return project


def test_three_appends_to_one_file_land_whole_in_one_run(overlapping: Path, marks: Path) -> None:
    result = run_rho("mission", "--from-tasks", "--resolve", str(STAND_IN), cwd=overlapping)

    assert result.code == 0, result.stdout + result.stderr
    branch = integration_branch(overlapping)
    files = tree_files(overlapping, branch)
    assert files["pkg/__init__.py"] == REGISTRY
    assert {f"pkg/{n}.py" for n in NAMES} <= set(files)
    assert [runs_of(marks, f"add_{n}") for n in NAMES] == [1, 1, 1]  # no task ran twice
    by_id = features(overlapping)
    assert [by_id[f"add_{n}"]["attempts"] for n in NAMES] == [1, 1, 1]
    assert by_id["add_a"]["conflict"] is None
    assert by_id["add_b"]["conflict"] == {
        "paths": ["pkg/__init__.py"],
        "with": ["add_a"],
        "outcome": "resolved",
        "resolve_attempts": 1,
        "replays": 0,
        "reason": None,
    }
    assert by_id["add_c"]["conflict"]["with"] == ["add_a", "add_b"]
    (join,) = mission_json(overlapping)["wave_joins"]
    assert join["conflicted_ids"] == ["add_b", "add_c"]
    assert join["summary"].endswith(", 2 conflicted")
    # The resolved merges are merges: both parents, the feature's commit the second.
    parents = run_git(overlapping, "rev-list", "--parents", "-n", "1", branch).split()
    assert parents[2] == by_id["add_c"]["handoff"]["commit_id"]
    assert "add_b completed (merge conflict in pkg/__init__.py with add_a, resolved)" in (
        result.stdout_lines
    )
    assert {e["feature_id"] for e in journal_events(mission_dir(overlapping), "resolve")} == {
        "add_b",
        "add_c",
    }
    assert all(task["status"] == "completed" for task in store_tasks(overlapping).values())


def test_the_graph_holds_counts_and_digests_of_a_conflict_never_its_paths(
    overlapping: Path,
) -> None:
    assert run_rho("mission", "--from-tasks", "--resolve", str(STAND_IN), cwd=overlapping).code == 0
    text = (mission_dir(overlapping) / "mission-graph.json").read_text()
    assert "__init__" not in text
    assert "add b" not in text
    nodes = {node["id"]: node for node in json.loads(text)["nodes"]}
    feature = next(n for i, n in nodes.items() if i.endswith("/add_c"))
    attributes = feature["attributes"]
    assert attributes["conflict_outcome"] == "resolved"
    counts = (attributes["conflict_path_count"], attributes["conflict_with_count"])
    assert tuple(map(int, counts)) == (1, 2)
    assert len(attributes["conflict_paths_sha256"]) == 64
    join = next(n for i, n in nodes.items() if "/mission-wave/" in i)
    assert int(join["attributes"]["conflicted_count"]) == 2


def test_show_and_log_say_what_the_resolver_did(overlapping: Path) -> None:
    assert run_rho("mission", "--from-tasks", "--resolve", str(STAND_IN), cwd=overlapping).code == 0

    shown = run_rho("mission", "show", "latest", cwd=overlapping)
    assert shown.code == 0, shown.stderr
    line = "merge conflict in pkg/__init__.py with add_a, add_b: resolved (1 resolve attempt(s)"
    assert any(line in row for row in shown.stdout_lines), shown.stdout
    assert any(row.strip().endswith("logs/resolve/add_c.log") for row in shown.stdout_lines)

    log = run_rho("mission", "log", "latest", "add_c", cwd=overlapping)
    assert log.code == 0, log.stderr
    assert "== the resolve stage of add_c:" in log.stdout
    assert "stand-in-resolver: add_c: kept both sides in: pkg/__init__.py" in log.stdout


GONE = "conflicted paths deleted that both sides hold: pkg/__init__.py"
MARKED = "conflict markers left in pkg/__init__.py"


@pytest.mark.parametrize(
    ("resolver", "reason"),
    [
        # rho stages what a resolver left: with or without its "git add", a marker is a marker
        # (before, "true" failed as "unmerged paths left ... (mark each resolved with git add)").
        ("git add --all", MARKED),
        ("true", MARKED),
        ("sed -i '/^<<<<<<< /d; /^>>>>>>> /d' pkg/__init__.py", MARKED),
        # Both sides hold the file: deleting it (or putting a folder there) drops their work.
        ("rm pkg/__init__.py", GONE),
        ("git rm -q pkg/__init__.py", GONE),
        (f"{STAND_IN} && cd pkg && rm __init__.py && mkdir __init__.py && : > __init__.py/x", GONE),
        (f"{STAND_IN}; echo giving up; exit 3", "command failed: exit code 3"),
    ],
    ids=["markers", "markers-unstaged", "separator-left", "deleted", "git-rm", "folder", "exit-3"],
)
def test_a_resolution_rho_cannot_take_fails_the_feature_saying_why(
    overlapping: Path, marks: Path, resolver: str, reason: str
) -> None:
    result = run_rho("mission", "--from-tasks", "--resolve", resolver, cwd=overlapping)

    assert result.code == 1, result.stdout + result.stderr
    conflict = "merge conflict in pkg/__init__.py with add_a (add a)"
    expected = f"{conflict}; the resolver failed: {reason}"
    tasks = store_tasks(overlapping)
    assert tasks["add_b"]["lastError"] == expected
    by_id = features(overlapping)
    assert by_id["add_b"]["status"] == "failed"
    assert by_id["add_b"]["conflict"]["outcome"] == "failed"
    assert by_id["add_b"]["conflict"]["reason"] == f"the resolver failed: {reason}"
    assert by_id["add_b"]["conflict"]["resolve_attempts"] == 1
    # Nothing of a refused resolution reached the integration branch.
    files = tree_files(overlapping, integration_branch(overlapping))
    assert files["pkg/__init__.py"] == "from .a import a\n"
    assert "pkg/b.py" not in files


def test_the_resolver_is_told_what_met_what(overlapping: Path, tmp_path: Path) -> None:
    seen = tmp_path / "seen"
    seen.mkdir()
    # Keeps copies of what it was given, then resolves like the stand-in.
    keep = (
        f'cp "$RHO_CONFLICT_FILE" "$RHO_TASK_PROMPT_FILE" {seen}/ && env > {seen}/$RHO_TASK_ID.env'
    )
    result = run_rho(
        "mission", "--from-tasks", "--resolve", f"{keep} && {STAND_IN}", cwd=overlapping
    )

    assert result.code == 0, result.stdout + result.stderr
    brief = json.loads((seen / "add_c.conflict.json").read_text())
    by_id = features(overlapping)
    head_before = run_git(overlapping, "rev-parse", f"{integration_branch(overlapping)}^1").strip()
    assert brief == {
        "feature": "add_c",
        "subject": "add c",
        "description": "add c",
        "paths": ["pkg/__init__.py"],
        "merged": [{"id": "add_a", "subject": "add a"}, {"id": "add_b", "subject": "add b"}],
        "base": mission_json(overlapping)["base_commit"],
        "ours": head_before,
        "theirs": by_id["add_c"]["handoff"]["commit_id"],
    }
    prompt = (seen / "add_c.md").read_text()  # prompts/resolve/add_c.md
    assert prompt.startswith("# Resolve a merge conflict: add c\n")
    assert "- pkg/__init__.py\n" in prompt
    assert "- add_a: add a\n- add_b: add b\n" in prompt
    assert "Keep both intents" in prompt
    assert "rho stages what you leave (there is no need to run `git add`)" in prompt
    env = dict(
        line.split("=", 1) for line in (seen / "add_c.env").read_text().splitlines() if "=" in line
    )
    assert (env["RHO_STAGE"], env["RHO_TASK_ID"], env["RHO_ATTEMPT"]) == ("resolve", "add_c", "1")


def test_resume_keeps_the_resolver_and_resume_resolve_replaces_it(
    overlapping: Path, marks: Path
) -> None:
    first = run_rho("mission", "--from-tasks", "--resolve", "exit 1", cwd=overlapping)
    assert first.code == 1, first.stdout + first.stderr
    assert mission_json(overlapping)["config"]["resolve_command"] == "exit 1"

    again = run_rho("mission", "resume", "latest", cwd=overlapping)  # the same resolver fails
    assert again.code == 1
    assert "the resolver failed: command failed: exit code 1" in again.stdout

    fixed = run_rho("mission", "resume", "latest", "--resolve", str(STAND_IN), cwd=overlapping)
    assert fixed.code == 0, fixed.stdout + fixed.stderr
    files = tree_files(overlapping, integration_branch(overlapping))
    assert files["pkg/__init__.py"] == REGISTRY
    assert mission_json(overlapping)["config"]["resolve_command"] == str(STAND_IN)
    # Failed features run again at a resume (their work was not kept), from the head joined
    # so far: at the first resume add_b's work merges without a conflict, add_c's meets it.
    assert [runs_of(marks, f"add_{n}") for n in NAMES] == [1, 2, 3]


def test_a_blank_resolve_command_is_refused_before_anything_runs(overlapping: Path) -> None:
    before = (overlapping / ".rho" / "tasks.json").read_bytes()
    result = run_rho("mission", "--from-tasks", "--resolve", " ", cwd=overlapping)
    assert result.code == 2
    assert result.stderr_lines[0].startswith("error: --resolve needs a command")
    assert (overlapping / ".rho" / "tasks.json").read_bytes() == before
    assert not (overlapping / ".rho" / "missions").exists()


def _resolve_in_python(ctx: WorkerContext) -> None:
    """A library resolver: keeps both sides of every conflicted path, as the stand-in does."""
    assert ctx.conflict_file is not None
    brief = json.loads(ctx.conflict_file.read_text())
    for path in brief["paths"]:
        target = ctx.worktree / path
        kept = [
            line
            for line in target.read_text().splitlines(keepends=True)
            if not line.startswith(("<<<<<<<", "=======", ">>>>>>>"))
        ]
        target.write_text("".join(kept))
        subprocess.run(["git", "add", "--", path], cwd=ctx.worktree, check=True)


def test_a_library_resolver_gets_the_conflict_in_its_worktree(project: Path) -> None:
    package(project)
    mission = Mission.new(project, "register three modules", config=MissionConfig(max_workers=3))
    for name in NAMES:
        mission.add_feature(
            Feature(
                f"add_{name}",
                f"add {name}",
                command=f"echo 'from .{name} import {name}' >> pkg/__init__.py",
            )
        )

    mission.run_staged_sync(waves=[[f"add_{n}" for n in NAMES]], resolve=_resolve_in_python)

    assert mission.status == "completed", [f.error for f in mission.features]
    assert tree_files(project, mission.integration_branch)["pkg/__init__.py"] == REGISTRY
    outcomes = [f.conflict.outcome if f.conflict else None for f in mission.features]
    assert outcomes == [None, "resolved", "resolved"]
    assert mission.wave_joins[0].conflicted_ids == ["add_b", "add_c"]


def test_a_resolution_that_breaks_the_build_is_caught_by_the_checks(overlapping: Path) -> None:
    breaking = f"{STAND_IN} && echo 'broken(' >> pkg/__init__.py && git add pkg/__init__.py"
    check = "python3 -c \"import ast; ast.parse(open('pkg/__init__.py').read())\""
    args = ("--resolve", breaking, "--verify", check)

    result = run_rho("mission", "--from-tasks", *args, cwd=overlapping)

    assert result.code == 1, result.stdout + result.stderr
    record = mission_json(overlapping)
    (join,) = record["wave_joins"]
    assert join["conflicted_ids"] == ["add_b", "add_c"]
    assert join["verification"]["status"] == "failed"
    assert record["status"] == "partial"


def test_a_resolver_that_tampers_with_its_worktree_fails_and_rho_runs_no_git_there(
    overlapping: Path, tmp_path: Path
) -> None:
    decoy = tmp_path / "decoy"
    run_git(tmp_path, "init", "--quiet", str(decoy))
    # Resolves like the stand-in, then points its .git file at another repository.
    tamper = f"{STAND_IN} && echo 'gitdir: {decoy}/.git' > .git"

    result = run_rho("mission", "--from-tasks", "--resolve", tamper, cwd=overlapping)

    assert result.code == 1, result.stdout + result.stderr
    reason = features(overlapping)["add_b"]["conflict"]["reason"]
    assert reason.startswith("the resolver failed: worktree ")
    assert "was tampered with" in reason
    assert run_git(decoy, "status", "--porcelain") == ""  # rho's git never ran there
    assert tree_files(overlapping, integration_branch(overlapping))["pkg/__init__.py"] == (
        "from .a import a\n"
    )


def test_a_dry_run_says_what_a_conflict_will_meet(overlapping: Path) -> None:
    args = ("--resolve", "my-resolver", "--replay-conflicts", "2", "--dry-run")
    result = run_rho("mission", "--from-tasks", *args, cwd=overlapping)
    assert result.code == 0, result.stderr
    assert "when a merge conflicts: my-resolver" in result.stdout_lines
    assert "conflicted tasks run again: at most 2 time(s)" in result.stdout_lines
