"""The library API of missions, with real repositories: planning, refusals, durability, privacy,
resume, missions from a task store, and the shell worker."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import anyio
import pytest

import graph
from rho_mission import (
    Feature,
    Handoff,
    InvalidMissionError,
    Mission,
    MissionConfig,
    MissionError,
    NotAGitRepositoryError,
    UnknownRefError,
    WorkerContext,
    list_missions,
    mission_from_tasks,
    mission_graph,
    shell_worker,
)
from rho_mission.containment._process import group_alive
from support.library import (
    WAIT,
    JoinLog,
    ScriptedWorker,
    branches,
    fails,
    file_contents,
    git_out,
    journal,
    modes,
    plan,
    sha256,
    tracked_files,
    wait_for,
)
from taskstore import ScheduleError, TaskStore

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    """Run the async tests on asyncio, the backend the engine uses."""
    return "asyncio"


@pytest.fixture
def usual_umask() -> Iterator[None]:
    """A umask of 022, so that private modes come from the engine, not from the environment."""
    old = os.umask(0o022)
    yield
    os.umask(old)


# -- planning and refusals -----------------------------------------------------------------------


def test_a_new_mission_writes_nothing(repo_path: Path) -> None:
    before = file_contents(repo_path)
    mission = Mission.new(repo_path / ".", "a prompt", [Feature("a")], mission_id="0badc0de")

    assert file_contents(repo_path) == before
    assert not (repo_path / ".rho").exists()
    assert (mission.id, mission.status, mission.base_commit) == (
        "0badc0de",
        "planning",
        git_out(repo_path, "rev-parse", "HEAD"),
    )
    assert mission.dir == str(repo_path.resolve() / ".rho" / "missions" / "0badc0de")
    assert mission.integration_branch == "rho-mission/0badc0de/integration"
    assert mission.feature("a").branch == "rho-mission/0badc0de/a"


def test_a_new_mission_gets_a_fresh_hex_id(repo_path: Path) -> None:
    ids = {Mission.new(repo_path, "p").id for _ in range(3)}
    assert len(ids) == 3
    assert all(re.fullmatch(r"[0-9a-f]{8}", ident) for ident in ids)


def test_a_mission_outside_git_is_refused(tmp_path: Path) -> None:
    with pytest.raises(
        NotAGitRepositoryError, match=f"^not a git repository: {re.escape(str(tmp_path))}$"
    ):
        Mission.new(tmp_path, "p")


@pytest.mark.parametrize("base", ["no-such-ref", "HEAD~5"])
def test_an_unknown_base_is_refused(repo_path: Path, base: str) -> None:
    with pytest.raises(UnknownRefError, match=f'^unknown git ref "{re.escape(base)}"$'):
        Mission.new(repo_path, "p", base=base)


def test_a_feature_takes_id_subject_and_description_positionally() -> None:
    short = Feature("a", "write the parser")
    full = Feature("b", "write the lexer", "tokens come out")
    assert (short.id, short.subject, short.description) == (
        "a",
        "write the parser",
        "write the parser",
    )
    assert (full.subject, full.description) == ("write the lexer", "tokens come out")
    assert (short.status, short.attempts, short.handoff) == ("pending", 0, None)


def test_a_feature_speaks_the_task_stores_words_and_mission_json_keeps_the_specs_keys() -> None:
    named = Feature("b", subject="write the lexer", description="tokens come out")
    # mission.json's keys (the spec's): "description" holds the subject.
    stored = json.loads(named.model_dump_json())
    assert (stored["description"], stored["expected_behavior"]) == (
        "write the lexer",
        "tokens come out",
    )
    assert Feature.model_validate_json(named.model_dump_json()) == named
    # A caller speaking mission.json's keys gets the same feature.
    assert Feature("b", description="write the lexer", expected_behavior="tokens come out") == named
    # Described only: the first line names it.
    described = Feature("c", description="make it fast\nand keep the bytes")
    assert (described.subject, described.description) == (
        "make it fast",
        "make it fast\nand keep the bytes",
    )


def test_a_repeated_or_unsafe_feature_id_is_refused(repo_path: Path) -> None:
    mission = Mission.new(repo_path, "p", [Feature("a")])
    with pytest.raises(InvalidMissionError, match=r'^feature "a" already exists$'):
        mission.add_feature(Feature("a"))
    for bad in ("a b", "../up", "x.lock", ".hidden", "a..b", "dot.", "sl/ash", "-dash", ""):
        message = f"feature id {json.dumps(bad)} cannot name a git branch; "
        with pytest.raises(InvalidMissionError, match=f"^{re.escape(message)}"):
            mission.add_feature(Feature(bad))
    assert [f.id for f in mission.features] == ["a"]


@pytest.mark.parametrize("waves", [[], [[]], [[], []]])
async def test_empty_waves_are_refused(repo_path: Path, waves: list[list[str]]) -> None:
    mission = plan(repo_path, ["a"])
    with pytest.raises(InvalidMissionError, match=r"^staged execution waves are empty$"):
        await mission.run_staged(ScriptedWorker(), waves=waves)
    assert not (repo_path / ".rho").exists()


@pytest.mark.parametrize(
    ("ids", "waves", "message"),
    [
        (["a", "b"], [["a"], ["b", "zz"]], 'staged execution wave 2 names unknown feature "zz"'),
        (["a", "b"], [["a", "b"], ["a"]], 'feature "a" appears more than once in staged waves'),
        ([], [["a", "b"], ["a"]], 'feature "a" appears more than once in staged waves'),
    ],
    ids=["unknown", "repeated", "repeated-without-features"],
)
async def test_bad_waves_are_refused_before_any_work(
    repo_path: Path, ids: list[str], waves: list[list[str]], message: str
) -> None:
    mission = plan(repo_path, ids)
    worker = ScriptedWorker()
    with pytest.raises(InvalidMissionError, match=f"^{re.escape(message)}$"):
        await mission.run_staged(worker, waves=waves)
    assert worker.calls == []
    assert not (repo_path / ".rho").exists()
    assert branches(repo_path, "*") == ["main"]


async def test_a_mission_without_features_gets_one_per_wave_id(repo_path: Path) -> None:
    mission = Mission.new(repo_path, "p")
    await mission.run_staged(ScriptedWorker(), waves=[["y", "x"], ["z"]])

    assert [(f.id, f.status, f.branch) for f in mission.features] == [
        (i, "completed", f"rho-mission/{mission.id}/{i}") for i in ("y", "x", "z")
    ]
    assert mission.waves == [["y", "x"], ["z"]]


async def test_the_shell_worker_refuses_a_feature_without_a_command(repo_path: Path) -> None:
    mission = Mission.new(repo_path, "p", [Feature("a", command="true"), Feature("b")])
    message = 'task "b" has no command; pass --run CMD (the command every task without one runs)'
    with pytest.raises(InvalidMissionError, match=f"^{re.escape(message)}$"):
        await mission.run_staged(waves=[["a", "b"]])
    assert not (repo_path / ".rho").exists()


def test_run_staged_sync_runs_without_an_event_loop(repo_path: Path) -> None:
    mission = plan(repo_path, ["a", "b"])
    result = mission.run_staged_sync(ScriptedWorker(), waves=[["a"], ["b"]])
    assert result is mission
    assert mission.status == "completed"
    assert [join.wave for join in Mission.load(mission.dir).wave_joins] == [1, 2]


async def test_a_second_run_of_a_running_mission_is_refused(repo_path: Path) -> None:
    started, release = anyio.Event(), anyio.Event()

    async def hold(ctx: WorkerContext) -> Handoff | None:
        started.set()
        await wait_for(release)
        return None

    mission = plan(repo_path, ["a"])
    second = ScriptedWorker()
    run = partial(mission.run_staged, ScriptedWorker({"a": hold}), waves=[["a"]])
    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await wait_for(started)
        again = Mission.load(mission.dir)
        with pytest.raises(MissionError, match=f"^mission {mission.id} is already running$"):
            await again.run_staged(second, waves=[["a"]])
        release.set()

    assert second.calls == []
    assert mission.status == "completed"


def test_loading_a_folder_without_a_mission_is_refused(tmp_path: Path) -> None:
    message = f"no mission at {tmp_path}: mission.json missing"
    with pytest.raises(InvalidMissionError, match=f"^{re.escape(message)}$"):
        Mission.load(tmp_path)


def test_missions_of_a_repository_are_listed_newest_first(repo_path: Path) -> None:
    older = plan(repo_path, ["a"]).run_staged_sync(ScriptedWorker(), waves=[["a"]])
    newer = plan(repo_path, ["b"])
    newer.started_at = "2999-01-01T00:00:00Z"  # kept by the run: "newer" whatever the clock says
    newer.run_staged_sync(ScriptedWorker(), waves=[["b"]])
    Path(repo_path, ".rho", "missions", "junk").mkdir()

    assert [m.id for m in list_missions(repo_path)] == [newer.id, older.id]


# -- durability ----------------------------------------------------------------------------------


async def test_each_join_is_on_disk_before_the_next_wave_starts(repo_path: Path) -> None:
    read: dict[str, tuple[str, list[str], int]] = {}

    async def read_back(ctx: WorkerContext) -> Handoff | None:
        text = await anyio.Path(ctx.mission.dir, "mission.json").read_text()
        on_disk = Mission.model_validate_json(text)
        doc = graph.load_mission_graph(ctx.mission.dir)
        waves = sum(node.id.startswith("rho/mission-wave/") for node in doc.nodes)
        read[ctx.feature.id] = (on_disk.status, [j.summary for j in on_disk.wave_joins], waves)
        return None

    mission = plan(repo_path, ["a", "b", "c"])
    await mission.run_staged(ScriptedWorker(dict.fromkeys("abc", read_back)), waves=[*"abc"])

    first = "wave 1 joined 1 feature(s), 1 completed, 0 failed"
    second = "wave 2 joined 1 feature(s), 1 completed, 0 failed"
    assert read == {
        "a": ("executing", [], 0),
        "b": ("executing", [first], 1),
        "c": ("executing", [first, second], 2),
    }
    assert [event["wave"] for event in journal(mission) if event["event"] == "join"] == [1, 2, 3]


@pytest.mark.usefixtures("usual_umask")
async def test_mission_files_are_private(repo_path: Path) -> None:
    mission = plan(repo_path, ["a"], run_command="echo hello")
    await mission.run_staged(waves=[["a"]])

    assert modes(Path(mission.dir)) == {
        ".": 0o700,
        "logs": 0o700,
        "prompts": 0o700,
        "journal.jsonl": 0o600,
        "logs/a.log": 0o600,
        "mission-graph.json": 0o600,
        "mission.json": 0o600,
        "prompts/a.md": 0o600,
        "usage": 0o700,  # each attempt's usage folder, removed once read
    }
    for folder in (".rho", ".rho/missions", ".rho/worktrees"):
        assert modes(repo_path / folder)["."] == 0o700, folder
    locks = modes(repo_path / ".git")
    assert locks[f"rho-mission-{mission.id}.lock"] == locks["rho-mission.lock"] == 0o600


async def test_the_mission_graph_is_valid_and_reproducible(repo_path: Path) -> None:
    mission = plan(repo_path, ["a", "b", "c"])
    mission.feature("c").blocked_by = ["a", "b"]
    await mission.run_staged(ScriptedWorker({"b": fails("no")}), waves=[["a", "b"], ["c"]])

    on_disk = await anyio.Path(mission.dir, "mission-graph.json").read_bytes()
    loaded = graph.load_mission_graph(mission.dir)
    assert graph.dump_graph(loaded) == on_disk
    assert graph.dump_graph(mission_graph(mission)) == on_disk
    assert graph.dump_graph(mission_graph(Mission.load(mission.dir))) == on_disk
    depends = {(e.source.id, e.target.id) for e in loaded.edges if e.kind == "depends_on"}
    prefix = f"rho/mission-feature/{mission.id}"
    assert depends == {(f"{prefix}/c", f"{prefix}/a"), (f"{prefix}/c", f"{prefix}/b")}


# -- privacy -------------------------------------------------------------------------------------


async def _mixed(ctx: WorkerContext) -> Handoff | None:
    if ctx.feature.id == "py":
        raise RuntimeError("ErrorMarker7 went wrong")
    return await shell_worker(ctx)


async def test_graph_and_journal_hold_only_metadata_and_digests(
    repo_path: Path, git: Callable[..., str]
) -> None:
    git(repo_path, "branch", "base-BranchMarker5")
    features = [
        Feature("ok", "DescMarker1 ok", "ExpectMarker2", command="echo OutMarker3 > made.txt"),
        Feature("shell", "DescMarker1 sh", command="echo OutMarker4; echo ErrMarker6 >&2; exit 3"),
        Feature("py", "DescMarker1 py"),
    ]
    config = MissionConfig(run_command="true # CmdMarker8")
    mission = Mission.new(repo_path, "PromptMarker0", features, config, base="base-BranchMarker5")
    await mission.run_staged(_mixed, waves=[["ok", "shell", "py"]])

    ok, shell, py = mission.features
    assert (shell.error, py.error) == (
        "command failed: exit code 3",
        "RuntimeError: ErrorMarker7 went wrong",
    )
    assert "OutMarker4" in await anyio.Path(mission.dir, "logs", "shell.log").read_text()
    assert ok.handoff is not None
    assert ok.handoff.commit_id is not None
    secrets = [
        *(f"{word}Marker" for word in ("Prompt", "Desc", "Expect", "Out", "Branch", "Err")),
        *("ErrorMarker", "CmdMarker", "echo", "exit 3", mission.repo, mission.dir),
        *(f.branch or "" for f in features),
        *(mission.integration_branch, mission.base_commit, ok.handoff.commit_id),
    ]
    for name in ("mission-graph.json", "journal.jsonl"):
        data = await anyio.Path(mission.dir, name).read_text()
        assert [secret for secret in secrets if secret in data] == [], name

    nodes = {node.id: node.attributes for node in graph.load_mission_graph(mission.dir).nodes}
    root = nodes[f"rho/mission/{mission.id}"]
    assert root["prompt_sha256"] == sha256("PromptMarker0")
    assert root["integration_branch_sha256"] == sha256(mission.integration_branch)
    failed = nodes[f"rho/mission-feature/{mission.id}/shell"]
    assert failed["description_sha256"] == sha256("DescMarker1 sh")
    assert failed["command_sha256"] == sha256(features[1].command or "")
    assert failed["branch_sha256"] == sha256(f"rho-mission/{mission.id}/shell")
    assert failed["error_sha256"] == sha256("command failed: exit code 3")
    done = nodes[f"rho/mission-feature/{mission.id}/ok"]
    assert done["expected_behavior_sha256"] == sha256("ExpectMarker2")
    assert done["commit_sha256"] == sha256(ok.handoff.commit_id)
    events = journal(mission)
    started = next(e for e in events if e["event"] == "mission")
    assert started["prompt_sha256"] == sha256("PromptMarker0")
    finish = [e for e in events if e["event"] == "finish" and e["feature_id"] == "py"]
    assert [e["error_sha256"] for e in finish] == [sha256("RuntimeError: ErrorMarker7 went wrong")]


# -- resume --------------------------------------------------------------------------------------


async def test_resume_reruns_only_what_did_not_complete(repo_path: Path) -> None:
    mission = plan(repo_path, ["a", "b", "c", "d"])
    waves = [["a", "b"], ["c"], ["d"]]
    await mission.run_staged(ScriptedWorker({"c": fails("c broke")}), waves=waves)
    assert (mission.status, len(mission.wave_joins)) == ("partial", 2)

    integration = f"rho-mission/{mission.id}/integration"
    head = git_out(repo_path, "rev-parse", integration)
    again = Mission.load(mission.dir)
    fixed = ScriptedWorker()
    log = JoinLog(repo_path)
    await again.resume(fixed, observer=log)

    assert fixed.ran == ["c", "d"]
    assert fixed.calls[0].base_commit == head
    assert again.status == "completed"
    assert again.wave_joins[0] == mission.wave_joins[0]
    assert [join.summary for join in again.wave_joins] == [
        "wave 1 joined 2 feature(s), 2 completed, 0 failed",
        "wave 2 joined 1 feature(s), 1 completed, 0 failed",
        "wave 3 joined 1 feature(s), 1 completed, 0 failed",
    ]
    assert [join.wave for join in log.joins] == [2, 3]
    assert (again.feature("c").attempts, again.feature("c").error) == (2, None)
    assert [again.feature(i).handoff for i in "ab"] == [mission.feature(i).handoff for i in "ab"]
    assert {"a.txt", "b.txt", "c.txt", "d.txt"} <= set(tracked_files(repo_path, integration))
    assert Mission.load(mission.dir) == again


async def test_resume_after_a_cancellation_runs_the_rest(repo_path: Path) -> None:
    never = anyio.Event()

    async def hang(ctx: WorkerContext) -> Handoff | None:
        await never.wait()
        return None

    mission = plan(repo_path, ["a", "b", "c"], timeout=0.5)
    with anyio.fail_after(WAIT):
        await mission.run_staged(ScriptedWorker({"b": hang}), waves=[["a", "b"], ["c"]])
    assert (mission.status, mission.feature("b").status) == ("cancelled", "cancelled")
    unfinished = {f.id for f in mission.features if f.status != "completed"}

    again = Mission.load(mission.dir)
    again.config.timeout = None
    fixed = ScriptedWorker()
    await again.resume(fixed)

    assert sorted(fixed.ran) == sorted(unfinished)
    assert again.status == "completed"
    assert [join.summary for join in again.wave_joins] == [
        "wave 1 joined 2 feature(s), 2 completed, 0 failed",
        "wave 2 joined 1 feature(s), 1 completed, 0 failed",
    ]


# -- missions from the task store ----------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> TaskStore:
    """A store of four tasks, the first done: waves [task_1, task_3], [task_2], [task_4]."""
    tasks = TaskStore(tmp_path / "store" / "tasks.json")
    one = tasks.add("one", command="true")
    two = tasks.add("two", description="the second", blocked_by=[one.id])
    three = tasks.add("three")
    tasks.add("four", blocked_by=[two.id, three.id])
    tasks.update(one.id, status="completed")
    return tasks


def test_a_mission_from_tasks_has_features_in_wave_order(repo_path: Path, store: TaskStore) -> None:
    mission = mission_from_tasks(store.path, repo_path, MissionConfig(max_workers=2))

    # task_1 is done: not a feature, and task_2, which it blocked, starts in the first wave.
    assert mission.waves == [["task_2", "task_3"], ["task_4"]]
    assert [(f.id, f.status, f.blocked_by) for f in mission.features] == [
        ("task_2", "pending", []),
        ("task_3", "pending", []),
        ("task_4", "pending", ["task_2", "task_3"]),
    ]
    two = mission.feature("task_2")
    assert (two.subject, two.description) == ("two", "the second")
    assert (mission.config.max_workers, mission.config.task_store) == (2, str(store.path))
    assert not (repo_path / ".rho").exists()


async def test_the_task_store_follows_the_run(repo_path: Path, store: TaskStore) -> None:
    during: dict[str, tuple[str, int]] = {}

    async def peek(ctx: WorkerContext) -> Handoff | None:
        task = await anyio.to_thread.run_sync(store.get, ctx.feature.id)
        during[ctx.feature.id] = (task.status, task.attempts)
        return None

    mission = mission_from_tasks(store.path, repo_path, MissionConfig())
    worker = ScriptedWorker(dict.fromkeys(("task_2", "task_3", "task_4"), peek))
    await mission.run_staged(worker, waves=mission.waves)

    assert sorted(worker.ran) == ["task_2", "task_3", "task_4"]
    assert during == dict.fromkeys(("task_2", "task_3", "task_4"), ("in_progress", 1))
    assert mission.status == "completed"
    assert [(t.id, t.status, t.attempts, t.last_error) for t in store.tasks()] == [
        ("task_1", "completed", 0, None),
        ("task_2", "completed", 1, None),
        ("task_3", "completed", 1, None),
        ("task_4", "completed", 1, None),
    ]


async def test_the_task_store_records_a_failure(repo_path: Path, store: TaskStore) -> None:
    mission = mission_from_tasks(store.path, repo_path, MissionConfig(retries=1))
    await mission.run_staged(ScriptedWorker({"task_2": fails("kaput")}), waves=mission.waves)

    assert mission.status == "partial"
    assert [(t.id, t.status, t.attempts, t.last_error) for t in store.tasks()] == [
        ("task_1", "completed", 0, None),
        ("task_2", "failed", 2, "RuntimeError: kaput"),
        ("task_3", "completed", 1, None),
        ("task_4", "pending", 0, None),
    ]


def test_an_invalid_task_graph_is_refused(repo_path: Path, tmp_path: Path) -> None:
    path = tmp_path / "tasks.json"
    dependency = {"targetId": "ghost", "type": "blocks"}
    task = {"id": "t2", "subject": "two", "status": "pending", "dependencies": [dependency]}
    path.write_text(json.dumps({"schema_version": "rho.tasks/v1", "tasks": [task]}))

    with pytest.raises(ScheduleError, match=r'^task "t2" depends on missing blocker "ghost"$'):
        mission_from_tasks(path, repo_path, MissionConfig())
    assert not (repo_path / ".rho").exists()


# -- the shell worker ----------------------------------------------------------------------------


async def test_the_shell_worker_gives_the_command_its_environment(
    repo_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [name for name in os.environ if name.startswith("RHO_")]:
        monkeypatch.delenv(name)
    command = (
        'env | grep ^RHO_ > env.txt; cp "$RHO_TASK_PROMPT_FILE" prompt.md; echo "hi $RHO_TASK_ID"'
    )
    planned = Feature("a", "the subject", "it works", command=command)
    mission = Mission.new(repo_path, "the prompt", [planned])
    await mission.run_staged(waves=[["a"]])
    feature = mission.feature("a")

    assert (feature.status, feature.log) == ("completed", "logs/a.log")
    assert feature.handoff is not None
    assert feature.handoff.files_changed == ["env.txt", "prompt.md"]
    lines = git_out(repo_path, "show", f"{feature.branch}:env.txt").splitlines()
    env = dict(line.split("=", 1) for line in lines)
    worktree = Path(env.pop("RHO_WORKTREE"))
    assert worktree.parent == Path(mission.repo, ".rho", "worktrees", "pool")  # shared
    prompt_file = Path(mission.dir, "prompts", "a.md")
    assert env == {
        "RHO_ATTEMPT": "1",
        "RHO_BASE_COMMIT": mission.base_commit,
        "RHO_MISSION_DIR": mission.dir,
        "RHO_MISSION_ID": mission.id,
        "RHO_TASK_ID": "a",
        "RHO_TASK_PROMPT_FILE": str(prompt_file),
        "RHO_TASK_SUBJECT": "the subject",
        # Where it may write what it spent (rho.usage/v1); gone once its usage was read.
        "RHO_USAGE_FILE": str(Path(mission.dir, "usage", "a.task.1", "usage.json")),
    }
    assert not await anyio.Path(mission.dir, "usage", "a.task.1").exists()
    prompt = "# the subject\n\nMission: the prompt\n\nExpected behaviour:\n\nit works\n"
    assert await anyio.Path(prompt_file).read_text() == prompt
    assert git_out(repo_path, "show", f"{feature.branch}:prompt.md") == prompt.strip()
    first, output, last = (await anyio.Path(mission.dir, "logs", "a.log").read_text()).splitlines()
    # The attempt between two lines of rho's own: what ran (as a digest), when, how it ended.
    assert re.fullmatch(
        r"== rho: a attempt 1: command sha256 [0-9a-f]{16}, started \S+Z ==", first
    ), first
    assert (output, last) == ("hi a", "== rho: a attempt 1 passed: exit code 0 ==")


async def test_a_failing_command_fails_its_feature(repo_path: Path) -> None:
    planned = Feature("a", command="echo before; exit 3")
    mission = Mission.new(repo_path, "p", [planned])
    await mission.run_staged(waves=[["a"]])
    feature = mission.feature("a")

    assert (feature.status, feature.error) == ("failed", "command failed: exit code 3")
    log = (await anyio.Path(mission.dir, "logs", "a.log").read_text()).splitlines()
    assert log[1:] == ["before", "== rho: a attempt 1 failed: command failed: exit code 3 =="]
    assert mission.status == "failed"


async def test_the_run_command_serves_features_without_their_own(repo_path: Path) -> None:
    # Different files: two features of one wave writing the same file would conflict.
    features = [Feature("a", command="echo own > a.out"), Feature("b")]
    config = MissionConfig(run_command='echo "shared $RHO_TASK_ID" > "$RHO_TASK_ID.out"')
    mission = Mission.new(repo_path, "p", features, config)
    await mission.run_staged(waves=[["a", "b"]])

    a, b = mission.features
    assert [a.status, b.status] == ["completed", "completed"]
    assert git_out(repo_path, "show", f"{a.branch}:a.out") == "own"
    assert git_out(repo_path, "show", f"{b.branch}:b.out") == "shared b"


async def test_a_command_past_the_task_timeout_is_stopped_with_its_group(repo_path: Path) -> None:
    planned = Feature("a", command="sleep 30 & sleep 30")
    mission = Mission.new(repo_path, "p", [planned], MissionConfig(task_timeout=0.3))
    with anyio.fail_after(WAIT):
        await mission.run_staged(waves=[["a"]])
    feature = mission.feature("a")

    assert (feature.status, feature.error) == ("failed", "timed out after 0.3s")
    [pgid] = [e["pgid"] for e in journal(mission) if e["event"] == "process"]
    assert not group_alive(pgid)


async def test_a_python_worker_gets_the_prompt_file_a_shell_task_gets(repo_path: Path) -> None:
    # One vocabulary for both: the prompt file is every worker's, not only a shell command's.
    seen: dict[str, str] = {}

    def worker(ctx: WorkerContext) -> None:
        assert ctx.prompt_file is not None
        seen[ctx.feature.id] = ctx.prompt_file.read_text(encoding="utf-8")

    features = [Feature("a", "add a", "a is added")]
    mission = Mission.new(repo_path, "grow the project", features)
    await mission.run_staged(worker)
    assert seen == {
        "a": "# add a\n\nMission: grow the project\n\nExpected behaviour:\n\na is added\n"
    }
