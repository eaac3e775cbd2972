"""``rho mission "PROMPT" --planner CMD``: the planning stage, from the CLI and the library.

Real ``rho`` processes and real planners (the stand-in of ``examples/agents`` and small shell
planners written here) on real repositories; crashes are real ``kill -9``s of ``rho``.
"""

from __future__ import annotations

import json
import shlex
import signal
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from graph import sha256_hex
from rho_mission import InvalidMissionError, Mission, MissionConfig, WorkerContext
from support.repos import tree_files
from support.rho import RhoRuns, read_pid, run_rho, wait_file_cmd
from support.stores import import_tasks, mission_dir, store_tasks
from taskstore import PlanDocument, ScheduleError, compute_schedule, plan_tasks, validate_plan

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")

STAND_IN = Path(__file__).resolve().parents[2] / "examples" / "agents" / "stand-in-planner.py"
# Each task writes its id and subject to <id>.txt: no two tasks touch one file.
RUN = 'printf "%s\\n" "$RHO_TASK_SUBJECT" > "$RHO_TASK_ID.txt"'
PLAIN = "Greeting files.\n- hello: Say hello\n- bye: Say goodbye\n- extra: One more\n"
STAGED = "Greeting files.\n- hello: Say hello\n- bye: Say goodbye (after hello)\n"


def _planner() -> str:
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(STAND_IN))}"


def _mission(project: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((mission_dir(project) / "mission.json").read_text())
    return loaded


def _graph(project: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((mission_dir(project) / "mission-graph.json").read_text())
    return loaded


def _kinds(graph: dict[str, Any]) -> list[str]:
    return sorted(node["attributes"].get("entity_type", "") for node in graph["nodes"])


def test_a_plain_plan_runs_as_one_batch_without_wave_join_nodes(project: Path) -> None:
    result = run_rho("mission", PLAIN, "--planner", _planner(), "--run", RUN, cwd=project)
    assert result.code == 0, result.stderr
    mission = _mission(project)
    assert mission["status"] == "completed"
    assert mission["waves"] == [["bye", "extra", "hello"]]  # one batch under the worker cap
    planning = mission["planning"]
    folder = mission_dir(project)
    prd = (folder / "prd.md").read_text(encoding="utf-8")
    plan_text = (folder / "plan.json").read_text(encoding="utf-8")
    assert prd == PLAIN.strip()
    assert planning["status"] == "completed"
    assert planning["plain"] is True
    assert planning["prd_sha256"] == sha256_hex(prd)
    assert planning["plan_sha256"] == sha256_hex(plan_text)
    for name in ("prd.md", "plan.json"):
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o600
    files = tree_files(project, mission["integration_branch"])
    assert {name: files[name] for name in ("hello.txt", "bye.txt", "extra.txt")} == {
        "hello.txt": "Say hello\n",
        "bye.txt": "Say goodbye\n",
        "extra.txt": "One more\n",
    }
    graph = _graph(project)
    assert _kinds(graph) == ["mission", "mission_feature", "mission_feature", "mission_feature"]
    (root,) = [n for n in graph["nodes"] if n["attributes"]["entity_type"] == "mission"]
    assert root["attributes"]["prd_sha256"] == planning["prd_sha256"]
    assert root["attributes"]["plan_sha256"] == planning["plan_sha256"]
    text = (folder / "mission-graph.json").read_text(encoding="utf-8")
    assert "Greeting" not in text
    assert "Say hello" not in text  # digests only
    shown = run_rho("mission", "show", "latest", cwd=project).stdout
    assert "planning: completed, 3 task(s), one batch;" in shown


def test_a_plan_with_blockers_runs_in_waves_with_joins(project: Path) -> None:
    result = run_rho("mission", STAGED, "--planner", _planner(), "--run", RUN, cwd=project)
    assert result.code == 0, result.stderr
    mission = _mission(project)
    assert (mission["status"], mission["waves"]) == ("completed", [["hello"], ["bye"]])
    assert mission["planning"]["plain"] is False
    assert [join["wave"] for join in mission["wave_joins"]] == [1, 2]
    assert _kinds(_graph(project)).count("wave_join") == 2
    # What --from-tasks gives for the same tasks: the same waves, the same kinds of node.
    assert {"hello.txt", "bye.txt"} <= set(tree_files(project, mission["integration_branch"]))


def _writing_planner(tmp_path: Path, plan: object) -> str:
    """A planner that writes *plan* (JSON, or raw text) to $RHO_PLAN_FILE."""
    source = tmp_path / "the-plan.json"
    text = plan if isinstance(plan, str) else json.dumps(plan)
    source.write_text(text, encoding="utf-8")
    return f'cp {shlex.quote(str(source))} "$RHO_PLAN_FILE"'


def _feature(ident: str, *blockers: str, command: str | None = "true") -> dict[str, Any]:
    feature: dict[str, Any] = {"id": ident, "subject": f"do {ident}", "blockers": list(blockers)}
    if command is not None:
        feature["command"] = command
    return feature


def _store_words(features: list[dict[str, Any]]) -> str:
    """What the scheduler says of these features as store tasks (the store's own words)."""
    plan = validate_plan({"prd": "x", "features": features}, "test")
    with pytest.raises(ScheduleError) as raised:
        compute_schedule(plan_tasks(plan))
    return str(raised.value)


BAD_PLANS: list[tuple[str, object, str | Callable[[], str]]] = [
    ("not JSON", "{features: [", "is not JSON"),
    ("no features", {"prd": "x", "features": []}, "features: list should have at least 1 item"),
    ("an unknown field", {"prd": "x", "features": [], "extra": 1}, "invalid plan"),
    (
        "a missing blocker",
        {"prd": "x", "features": [_feature("a", "zz")]},
        lambda: _store_words([_feature("a", "zz")]),
    ),
    (
        "a cycle",
        {"prd": "x", "features": [_feature("a", "b"), _feature("b", "a")]},
        lambda: _store_words([_feature("a", "b"), _feature("b", "a")]),
    ),
    (
        "an id used twice",
        {"prd": "x", "features": [_feature("a"), _feature("a")]},
        lambda: _store_words([_feature("a"), _feature("a")]),
    ),
    (
        "a self blocker",
        {"prd": "x", "features": [_feature("a", "a")]},
        lambda: _store_words([_feature("a", "a")]),
    ),
    ("a reserved id", {"prd": "x", "features": [_feature("plan")]}, "is reserved"),
    (
        "a feature without a command",
        {"prd": "x", "features": [_feature("a", command=None)]},
        'feature "a" has no command; give it one in the plan or pass --run CMD',
    ),
]


@pytest.mark.parametrize(("what", "plan", "words"), BAD_PLANS, ids=[b[0] for b in BAD_PLANS])
def test_a_bad_plan_fails_the_mission_in_planning_with_one_clear_error(
    project: Path, tmp_path: Path, what: str, plan: object, words: str | Callable[[], str]
) -> None:
    expected = words if isinstance(words, str) else words()
    planner = _writing_planner(tmp_path, plan)
    result = run_rho("mission", "Do it", "--planner", planner, cwd=project)
    assert result.code == 1, (what, result.stdout, result.stderr)
    (line,) = [line for line in result.stderr_lines if line.startswith("error: ")]
    assert "failed in planning: invalid plan" in line, line
    assert expected in line, line
    assert "Traceback" not in result.stderr
    mission = _mission(project)
    assert mission["status"] == "failed"
    assert mission["features"] == []
    assert mission["planning"]["status"] == "failed"
    assert expected in mission["planning"]["error"]
    assert not (mission_dir(project) / "plan.json").exists()


@pytest.mark.parametrize(
    ("planner", "words"),
    [
        ("echo thinking; exit 3", "command failed: exit code 3"),
        ("true", "the planner wrote no plan"),
        ('ln -s /etc/passwd "$RHO_PLAN_FILE"', "the plan file cannot be read"),
        # Before the fix: "error: Is a directory: 8", and the mission listed as cancelled.
        ('mkdir "$RHO_PLAN_FILE"', "the plan file is not a regular file"),
    ],
)
def test_a_planner_that_fails_fails_the_mission_with_its_log(
    project: Path, planner: str, words: str
) -> None:
    result = run_rho("mission", "Do it", "--planner", planner, cwd=project)
    assert result.code == 1, result.stderr
    assert words in result.stderr
    folder = mission_dir(project)
    assert f"the planner's log: {folder / 'logs' / 'plan.log'}" in result.stderr
    mission = _mission(project)
    assert (mission["status"], mission["planning"]["status"]) == ("failed", "failed")
    assert f"'rho mission resume {folder.name}' plans again" in result.stderr
    if planner.startswith("echo"):
        assert "thinking" in (folder / "logs" / "plan.log").read_text(encoding="utf-8")
    shown = run_rho("mission", "show", "latest", cwd=project)
    assert f"planning: failed: {mission['planning']['error']}" in shown.stdout_lines
    assert f"  log: {folder / 'logs' / 'plan.log'}" in shown.stdout_lines


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("Do it",), "a prompt needs --planner CMD"),
        (("--planner", "true"), "--planner needs the prompt"),
        (("Do it", "--planner", "true", "--from-tasks"), "--from-tasks: not with a prompt"),
        (("Do it", "--planner", "true", "--only", "a"), "--only: not with a prompt"),
        (("Do it", "--planner", "true", "--dry-run"), "--dry-run: not with a prompt"),
    ],
)
def test_usage_mistakes_are_one_line_and_write_nothing(
    project: Path, args: tuple[str, ...], words: str
) -> None:
    result = run_rho("mission", *args, cwd=project)
    assert result.code == 2, result.stderr
    assert words in result.stderr
    assert "Traceback" not in result.stderr
    assert not (project / ".rho" / "missions").exists()


def _counting_planner(tmp_path: Path) -> tuple[str, Path]:
    """The stand-in, counting its runs in a file outside the repository."""
    count = tmp_path / "planner-runs"
    return f"echo run >> {shlex.quote(str(count))}; {_planner()}", count


def test_plan_only_prints_the_plan_and_resume_runs_it_without_planning_again(
    project: Path, tmp_path: Path
) -> None:
    planner, count = _counting_planner(tmp_path)
    result = run_rho(
        "mission", STAGED, "--planner", planner, "--run", RUN, "--plan-only", cwd=project
    )
    assert result.code == 0, result.stderr
    plan = PlanDocument.model_validate_json(result.stdout)
    assert [f.id for f in plan.features] == ["hello", "bye"]
    ident = mission_dir(project).name
    assert f"run it with 'rho mission resume {ident}'" in result.stderr
    assert _mission(project)["status"] == "planning"
    resumed = run_rho("mission", "resume", ident, cwd=project)
    assert resumed.code == 0, resumed.stderr
    assert _mission(project)["status"] == "completed"
    assert count.read_text().count("run") == 1


def test_plan_only_without_run_says_the_resume_needs_one(project: Path) -> None:
    # Before the fix: the printed "run it with 'rho mission resume X'" then failed: the plan's tasks
    # have no command.
    result = run_rho("mission", STAGED, "--planner", _planner(), "--plan-only", cwd=project)
    assert result.code == 0, result.stderr
    ident = mission_dir(project).name
    said = f"run it with 'rho mission resume {ident} --run CMD' (2 of its tasks have no command"
    assert said in result.stderr
    bare = run_rho("mission", "resume", ident, cwd=project)
    assert bare.code == 2
    assert "metadata" not in bare.stderr
    assert "pass --run CMD" in bare.stderr
    resumed = run_rho("mission", "resume", ident, "--run", RUN, cwd=project)
    assert resumed.code == 0, resumed.stdout + resumed.stderr


def test_the_mission_timeout_bounds_the_planning_stage(project: Path) -> None:
    # Before the fix: a planner that sleeps still ran after 60 s of a --timeout 3s mission.
    # run_rho's own 60 s bound fails the test if the planner is not stopped.
    result = run_rho(
        "mission", "Do it", "--planner", "sleep 1000", "--run", "true", "--timeout", "2s",
        cwd=project,
    )  # fmt: skip
    assert result.code == 1, result.stderr
    assert "failed in planning: the planner timed out after 2s" in result.stderr
    assert _mission(project)["status"] == "failed"


def test_a_plan_imported_into_the_store_runs_from_tasks(project: Path, tmp_path: Path) -> None:
    plan = {"prd": "x", "features": [_feature("a"), _feature("b", "a")]}
    source = tmp_path / "plan.json"
    source.write_text(json.dumps(plan), encoding="utf-8")
    imported = run_rho("task", "import", "--from", "plan", str(source), cwd=project)
    assert imported.code == 0, imported.stderr
    tasks = store_tasks(project)
    assert tasks["b"]["dependencies"] == [{"targetId": "a", "type": "blocks"}]
    assert tasks["a"]["metadata"] == {"command": "true"}
    ran = run_rho("mission", "--from-tasks", cwd=project)
    assert ran.code == 0, ran.stderr
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"prd": "x", "features": [_feature("c", "zz")]}), encoding="utf-8")
    refused = run_rho("task", "import", "--from", "plan", str(bad), cwd=project)
    assert refused.code == 2, refused.stderr
    assert "zz" in refused.stderr


def test_the_library_plans_with_a_python_planner_and_verifies_the_waves(project: Path) -> None:
    seen: list[Path] = []

    def planner(ctx: WorkerContext) -> PlanDocument:
        assert ctx.prompt_file is not None
        assert ctx.plan_file is not None
        seen.append(ctx.worktree)
        assert ctx.prompt_file.read_text(encoding="utf-8").startswith("Two files")
        features = [_feature("one", command=None), _feature("two", "one", command=None)]
        return PlanDocument.model_validate({"prd": "Two files.", "features": features})

    def worker(ctx: WorkerContext) -> None:
        (ctx.worktree / f"{ctx.feature.id}.txt").write_text(ctx.feature.id, encoding="utf-8")

    checked: list[int | None] = []

    def verify(ctx: WorkerContext) -> None:
        checked.append(ctx.wave)
        assert (ctx.worktree / "one.txt").is_file()

    mission = Mission.new(project, "Two files, one after the other.")
    mission.run_staged_sync(worker, plan=planner, verify=verify)
    assert mission.status == "completed"
    assert mission.waves == [["one"], ["two"]]
    assert checked == [1, 2]
    assert [j.verification.status for j in mission.wave_joins] == ["passed", "passed"]
    assert not seen[0].exists()  # the planning worktree is gone
    # Planned once: the kept plan comes back, no planner needed.
    again = Mission.load(mission.dir)
    assert again.plan_sync().prd == "Two files."


def test_mission_plan_plans_alone_then_run_staged_runs_the_plan(project: Path) -> None:
    config = MissionConfig(planner_command=_planner(), run_command=RUN)
    mission = Mission.new(project, PLAIN, config=config)
    plan = mission.plan_sync()
    assert plan.plain
    assert mission.status == "planning"
    assert mission.started_at is None
    ran = mission.run_staged_sync()
    assert ran.status == "completed"
    assert ran.wave_joins[0].feature_ids == ["bye", "extra", "hello"]


def _killed_then_resumed(
    runs: RhoRuns, project: Path, args: tuple[str, ...], pid_file: Path, go: Path
) -> dict[str, Any]:
    """Start ``rho ARGS``, kill -9 it once *pid_file* names the waiting process, check the
    mission is interrupted, open the gate *go*, resume; the mission.json the resume left."""
    crashed = runs.start(*args, cwd=project)
    read_pid(pid_file)
    crashed.send_signal(signal.SIGKILL)
    crashed.wait(timeout=30)
    listed = run_rho("mission", "list", "--json", cwd=project).json()
    assert listed["missions"][0]["state"] == "interrupted"
    go.write_text("", encoding="utf-8")
    resumed = run_rho("mission", "resume", mission_dir(project).name, cwd=project)
    assert resumed.code == 0, resumed.stderr
    return _mission(project)


def test_a_kill_9_while_planning_plans_again_on_resume(
    project: Path, tmp_path: Path, runs: RhoRuns
) -> None:
    pid_file, go = tmp_path / "planner.pid", tmp_path / "go"
    count = tmp_path / "planner-runs"
    planner = (
        f"echo run >> {shlex.quote(str(count))}; echo $$ > {shlex.quote(str(pid_file))}; "
        f"[ -e {shlex.quote(str(go))} ] || {{ {wait_file_cmd(tmp_path / 'never')}; }}; "
        f"{_planner()}"
    )
    args = ("mission", STAGED, "--planner", planner, "--run", RUN)
    assert _killed_then_resumed(runs, project, args, pid_file, go)["status"] == "completed"
    assert count.read_text().count("run") == 2  # the first planning never ended


def test_a_kill_9_in_the_waves_resumes_without_planning_again(
    project: Path, tmp_path: Path, runs: RhoRuns
) -> None:
    planner, count = _counting_planner(tmp_path)
    pid_file, go = tmp_path / "task.pid", tmp_path / "go"
    run = (
        f'if [ "$RHO_TASK_ID" = bye ] && [ ! -e {shlex.quote(str(go))} ]; then '
        f"echo $$ > {shlex.quote(str(pid_file))}; {wait_file_cmd(tmp_path / 'never')}; fi; {RUN}"
    )
    args = ("mission", STAGED, "--planner", planner, "--run", run)
    mission = _killed_then_resumed(runs, project, args, pid_file, go)
    assert mission["status"] == "completed"
    assert count.read_text().count("run") == 1
    assert {"hello.txt", "bye.txt"} <= set(tree_files(project, mission["integration_branch"]))


def test_a_store_mission_records_no_planning(project: Path) -> None:
    # A store mission is untouched by the planning stage: no "planning" in its record.
    import_tasks(
        project, [{"id": "t", "subject": "t", "status": "pending", "metadata": {"command": "true"}}]
    )
    assert run_rho("mission", "--from-tasks", cwd=project).code == 0
    assert _mission(project)["planning"] is None


def test_a_kill_9_in_the_verify_stage_resumes_without_planning_again(
    project: Path, tmp_path: Path, runs: RhoRuns
) -> None:
    planner, count = _counting_planner(tmp_path)
    pid_file, go = tmp_path / "verify.pid", tmp_path / "go"
    verify = (
        f"[ -e {shlex.quote(str(go))} ] || {{ echo $$ > {shlex.quote(str(pid_file))}; "
        f"{wait_file_cmd(tmp_path / 'never')}; }}; test -f hello.txt"
    )
    args = ("mission", STAGED, "--planner", planner, "--run", RUN, "--verify", verify)
    mission = _killed_then_resumed(runs, project, args, pid_file, go)
    assert mission["status"] == "completed"
    assert [j["verification"]["status"] for j in mission["wave_joins"]] == ["passed", "passed"]
    assert count.read_text().count("run") == 1


def test_a_prompt_named_like_a_subcommand_goes_after_a_double_dash(project: Path) -> None:
    result = run_rho("mission", "--planner", _planner(), "--run", RUN, "--", "list", cwd=project)
    assert result.code == 1, result.stderr  # the stand-in finds no feature line in "list"
    assert _mission(project)["prompt"] == "list"
    listed = run_rho("mission", "list", cwd=project)  # without "--": the subcommand
    assert listed.code == 0, listed.stderr
    assert "1 mission(s)" in listed.stdout


def test_waves_and_a_planner_together_are_refused_before_anything_runs(project: Path) -> None:
    def planner(ctx: WorkerContext) -> None:
        raise AssertionError("never called")

    mission = Mission.new(project, "Two files.")
    with pytest.raises(InvalidMissionError, match="waves are its plan's"):
        mission.run_staged_sync(waves=[["a"]], plan=planner)
    assert not Path(mission.dir).exists()
