"""The usage of the stages that are not tasks: the resolver's and the planner's,
read with their own agent profile (``--resolve-agent``, ``--planner-agent``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from support.fixtures import AGENT_STAND_IN
from support.rho import run_rho
from support.stores import import_tasks, mission_dir, spec


def _mission(project: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((mission_dir(project) / "mission.json").read_text())
    return document


def test_the_resolvers_usage_is_its_features_with_the_resolve_stage(
    project: Path, agents_path: dict[str, str]
) -> None:
    tasks = [spec(n, f"echo {n} >> registry.txt") for n in ("a", "b")]
    import_tasks(project, tasks)
    done = run_rho(
        "mission", "--from-tasks", "--resolve-agent", "codex", cwd=project, env=agents_path
    )
    assert done.code == 0, done.stderr
    by_id = {f["id"]: f for f in _mission(project)["features"]}
    assert by_id["b"]["conflict"]["outcome"] == "resolved"
    [record] = by_id["b"]["attempt_usage"]
    assert (record["stage"], record["attempt"], record["agent"]) == ("resolve", 1, "codex")
    assert by_id["b"]["usage"]["output_tokens"] == 300
    # The tasks named no agent and there is no budget: their own attempts record nothing.
    assert by_id["a"]["usage"] is None
    assert _mission(project)["usage"]["input_tokens"] == 1200


def test_the_planners_usage_is_recorded_with_the_mission(
    project: Path, agents_path: dict[str, str]
) -> None:
    prompt = "Two steps\n- one: the first\n- two: the second (after one)\n"
    done = run_rho(
        "mission",
        prompt,
        "--planner-agent",
        "claude",
        "--plan-only",
        cwd=project,
        env=agents_path,
    )
    assert done.code == 0, done.stderr
    mission = _mission(project)
    [record] = mission["stage_usage"]
    assert (record["stage"], record["source"], record["cost_usd"]) == ("plan", "agent", 0.25)
    assert mission["usage"]["cost_usd"] == 0.25
    assert mission["config"]["planner_agent"] == "claude"
    assert "usage: $0.25" in run_rho("mission", "show", "latest", cwd=project).stdout


def test_a_resolver_whose_agent_reported_a_failure_has_failed_though_it_exited_0(
    project: Path, tmp_path: Path
) -> None:
    # codex resolves the file (the stand-in), then reports its turn failed, and exits 0.
    folder = tmp_path / "failing-bin"
    folder.mkdir()
    codex = folder / "codex"
    codex.write_text(
        "#!/bin/sh\n"
        f'RHO_TASK_ID=x "{AGENT_STAND_IN.parent / "stand-in-resolver.sh"}" "$@" >/dev/null\n'
        'echo \'{"type":"turn.failed","error":{"message":"scripted failure"}}\'\n',
        encoding="utf-8",
    )
    codex.chmod(0o755)
    tasks = [spec(n, f"echo {n} >> registry.txt") for n in ("a", "b")]
    import_tasks(project, tasks)
    env = {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}
    done = run_rho("mission", "--from-tasks", "--resolve-agent", "codex", cwd=project, env=env)
    assert done.code == 1, done.stdout + done.stderr
    by_id = {f["id"]: f for f in _mission(project)["features"]}
    assert by_id["b"]["status"] == "failed"
    assert "codex reported a failed turn: scripted failure" in by_id["b"]["error"]
