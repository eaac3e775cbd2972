"""Trust on every path: inherited git variables, ref moves, a task's own branch.

Real repositories and real processes: the library runs in a child Python process where the
environment matters (a pipeline called from a git hook), in-process elsewhere.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from rho_mission import Feature, InvalidMissionError, Mission, WorkerContext
from rho_mission._errors import RefMovedError
from support.library import ScriptedWorker, fails, git_out, journal, plan, tracked_files

# A pipeline script: plan two waves whose shell commands edit, stage and commit with git.
_PIPELINE = """
import sys
from rho_mission import Feature, Mission, MissionConfig

command = (
    'echo "$RHO_TASK_ID" > "$RHO_TASK_ID.txt" && git add -A && '
    'git commit -qm "task $RHO_TASK_ID" && git status --porcelain >/dev/null'
)
mission = Mission.new(
    sys.argv[1],
    "pipeline from a hook",
    [Feature("a", "write a"), Feature("b", "write b")],
    MissionConfig(run_command=command),
)
mission.run_staged_sync(waves=[["a"], ["b"]])
print(mission.status, mission.integration_branch)
"""


def _dirty_checkout(repo: Path) -> None:
    (repo / "file0000.txt").write_text("uncommitted edit\n", encoding="utf-8")
    (repo / "staged.txt").write_text("staged, never committed\n", encoding="utf-8")
    git_out(repo, "add", "staged.txt")


def _work_tree_bytes(repo: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(repo)): p.read_bytes()
        for p in repo.rglob("*")
        if p.is_file() and ".git" not in p.parts and ".rho" not in p.parts
    }


@pytest.mark.parametrize(
    "variables",
    [("GIT_DIR", "GIT_WORK_TREE"), ("GIT_INDEX_FILE",), ("GIT_DIR", "GIT_INDEX_FILE")],
)
def test_a_pipeline_called_from_a_git_hook_never_touches_the_users_checkout(
    repo_path: Path, snapshot: Callable[[Path], str], variables: tuple[str, ...]
) -> None:
    _dirty_checkout(repo_path)
    before = snapshot(repo_path)
    files, index = _work_tree_bytes(repo_path), (repo_path / ".git" / "index").read_bytes()
    hook_env = {
        "GIT_DIR": str(repo_path / ".git"),
        "GIT_WORK_TREE": str(repo_path),
        "GIT_INDEX_FILE": str(repo_path / ".git" / "index"),
    }
    env = {**os.environ, **{name: hook_env[name] for name in variables}}
    done = subprocess.run(
        [sys.executable, "-c", _PIPELINE, str(repo_path)],
        cwd=repo_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    status, branch = done.stdout.split()
    assert status == "completed"
    assert (repo_path / ".git" / "index").read_bytes() == index
    assert _work_tree_bytes(repo_path) == files
    assert snapshot(repo_path) == before
    assert {"a.txt", "b.txt"} <= set(tracked_files(repo_path, branch))


# -- refs: only the mission's, only by compare-and-swap ------------------------------------------


def _failed_once(repo: Path) -> Mission:
    mission = plan(repo, ["a", "b"])
    mission.run_staged_sync(ScriptedWorker({"b": fails("not yet")}), waves=[["a"], ["b"]])
    assert mission.status == "partial"
    return mission


def _resume(folder: str, worker: ScriptedWorker) -> Mission:
    mission = Mission.load(folder)
    anyio.run(mission.resume, worker)
    return mission


def test_resume_adopts_a_hand_fix_on_top_of_the_integration_branch(repo_path: Path) -> None:
    mission = _failed_once(repo_path)
    branch = mission.integration_branch
    fix = _commit_on(repo_path, branch, "hand-fix.txt")

    seen: list[bool] = []

    async def sees_fix(ctx: WorkerContext) -> None:
        seen.append((ctx.worktree / "hand-fix.txt").is_file())

    _resume(mission.dir, ScriptedWorker({"b": sees_fix}))

    resumed = Mission.load(mission.dir)
    assert resumed.status == "completed"
    assert seen == [True]
    assert fix in git_out(repo_path, "rev-list", branch).split()
    assert [e["why"] for e in journal(resumed) if e["event"] == "ref"].count("adopt") == 1


def test_resume_refuses_an_integration_branch_that_was_rewritten(repo_path: Path) -> None:
    mission = _failed_once(repo_path)
    branch = mission.integration_branch
    git_out(repo_path, "branch", "--force", branch, mission.base_commit)
    rewritten = _commit_on(repo_path, branch, "other.txt")
    record = Path(mission.dir, "mission.json").read_bytes()

    with pytest.raises(RefMovedError, match=r"was rewritten .* refusing to reset it"):
        _resume(mission.dir, ScriptedWorker())

    assert git_out(repo_path, "rev-parse", branch) == rewritten
    assert Path(mission.dir, "mission.json").read_bytes() == record


def test_resume_refuses_to_discard_a_users_commit_on_a_failed_features_branch(
    repo_path: Path,
) -> None:
    mission = _failed_once(repo_path)
    branch = mission.feature("b").branch
    assert branch is not None
    mine = _commit_on(repo_path, branch, "my-fix.txt")

    with pytest.raises(RefMovedError, match=r"holds commits rho did not make"):
        _resume(mission.dir, ScriptedWorker())

    assert git_out(repo_path, "rev-parse", branch) == mine


def test_an_integration_branch_edited_to_main_is_refused_on_load(repo_path: Path) -> None:
    mission = _failed_once(repo_path)
    record = Path(mission.dir, "mission.json")
    record.write_text(
        record.read_text().replace(mission.integration_branch, "main"), encoding="utf-8"
    )
    main = git_out(repo_path, "rev-parse", "main")

    with pytest.raises(InvalidMissionError, match=r"integration_branch must be rho-mission/"):
        Mission.load(mission.dir)

    assert git_out(repo_path, "rev-parse", "main") == main


def test_a_mission_id_in_use_is_refused(repo_path: Path) -> None:
    first = Mission.new(repo_path, "first", [Feature("a")], mission_id="0badcafe")
    first.run_staged_sync(ScriptedWorker(), waves=[["a"]])
    head = git_out(repo_path, "rev-parse", first.integration_branch)
    record = Path(first.dir, "mission.json").read_bytes()

    with pytest.raises(InvalidMissionError, match=r"^mission id 0badcafe is taken: "):
        Mission.new(repo_path, "second", [Feature("a")], mission_id="0badcafe")
    # The folder gone, its branches still say the id is in use.
    Path(first.dir, "mission.json").rename(repo_path.parent / "kept.json")
    Path(first.dir).rename(repo_path.parent / "kept")
    again = Mission.new(repo_path, "second", [Feature("a")], mission_id="0badcafe")
    with pytest.raises(InvalidMissionError, match=r"^mission id 0badcafe is taken: branches "):
        again.run_staged_sync(ScriptedWorker(), waves=[["a"]])

    assert git_out(repo_path, "rev-parse", first.integration_branch) == head
    assert (repo_path.parent / "kept.json").read_bytes() == record


@pytest.mark.parametrize("name", ["integration", "Integration", "fix-2"])
def test_a_feature_may_not_take_the_name_of_a_mission_ref(repo_path: Path, name: str) -> None:
    with pytest.raises(InvalidMissionError, match=r"is reserved: it names a ref of the mission"):
        Mission.new(repo_path, "m", [Feature(name)])


# -- a task's result is what its worktree holds ----------------------------------------------------


def test_a_tasks_commits_on_a_branch_of_its_own_reach_its_dependent(repo_path: Path) -> None:
    own_branch = (
        "git checkout -q -b agent-work && echo from-agent > agent.txt && git add agent.txt && "
        "git commit -qm agent && echo uncommitted > loose.txt"
    )
    mission = Mission.new(
        repo_path,
        "own branch",
        [
            Feature("a", "agent", command=own_branch),
            Feature("b", "uses a", command="test -f agent.txt && test -f loose.txt"),
        ],
    )
    mission.run_staged_sync(waves=[["a"], ["b"]])

    assert mission.status == "completed", [f.error for f in mission.features]
    files = tracked_files(repo_path, mission.integration_branch)
    assert {"agent.txt", "loose.txt"} <= set(files)
    # rho moved no branch outside its prefix: the agent's branch holds the agent's commit only.
    agent_head = git_out(repo_path, "rev-parse", "agent-work")
    assert git_out(repo_path, "log", "-1", "--format=%s", agent_head) == "agent"
    assert mission.feature("a").handoff is not None
    assert mission.feature("a").handoff.commit_id != agent_head  # type: ignore[union-attr]


def test_a_task_that_checks_out_unrelated_history_fails_clearly(repo_path: Path) -> None:
    orphan = "git checkout -q --orphan elsewhere && git rm -rqf . && echo x > x.txt"
    mission = Mission.new(repo_path, "orphan", [Feature("a", "lost", command=orphan)])
    mission.run_staged_sync(waves=[["a"]])

    feature = mission.feature("a")
    assert (mission.status, feature.status) == ("failed", "failed")
    assert feature.error == (
        "the worktree's HEAD does not descend from the feature's start commit; "
        "its work cannot be merged"
    )
    assert git_out(repo_path, "rev-parse", mission.integration_branch) == mission.base_commit


def test_every_completed_feature_is_in_the_integration_branch(repo_path: Path) -> None:
    # Commits on the feature branch itself, then moves it away: the result is by commit.
    tricky = (
        "echo one > one.txt && git add one.txt && git commit -qm one && git checkout -q --detach "
        '&& git branch -f "rho-mission/$RHO_MISSION_ID/c" HEAD~1 && echo two > two.txt'
    )
    mission = plan(repo_path, ["c"], run_command=tricky)
    mission.run_staged_sync(waves=[["c"]])

    assert mission.status == "completed"
    head = git_out(repo_path, "rev-parse", mission.integration_branch)
    for feature in mission.features:
        assert feature.handoff is not None
        assert feature.handoff.commit_id is not None
        merged = subprocess.run(
            ["git", "merge-base", "--is-ancestor", feature.handoff.commit_id, head],
            cwd=repo_path,
            check=False,
        )
        assert merged.returncode == 0
    assert {"one.txt", "two.txt"} <= set(tracked_files(repo_path, head))


def _commit_on(repo: Path, branch: str, name: str) -> str:
    """A commit adding *name* on top of *branch*, made without any checkout; its sha."""
    parent = git_out(repo, "rev-parse", branch)
    blob = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"],
        cwd=repo,
        input=f"{name}\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    index = repo.parent / f"{name}.index"
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    subprocess.run(["git", "read-tree", parent], cwd=repo, env=env, check=True)
    subprocess.run(
        ["git", "update-index", "--add", "--cacheinfo", f"100644,{blob},{name}"],
        cwd=repo,
        env=env,
        check=True,
    )
    tree = subprocess.run(
        ["git", "write-tree"], cwd=repo, env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    commit = git_out(repo, "commit-tree", tree, "-p", parent, "-m", f"add {name}")
    git_out(repo, "update-ref", f"refs/heads/{branch}", commit, parent)
    return commit
